"""Tree reuse between moves: the subtree under the move played, and under the opponent's
reply, becomes the root of the next search of that position, its statistics kept.

A :class:`TreeReuse` remembers the last searches' trees (``history`` of them) and, for
every tree, the nodes a later search may start from: the child of the move played (the
next position when the same player answers both sides, as in self-play) and that child's
children (the positions after each reply the tree expanded). They are found again by the
game state itself (its bytes), not by the caller's bookkeeping: a lockstep suite asks a
policy about a different subset of its games at each ply, GTP's ``undo`` and the board's
take-back return to positions searched before, and any subtree of the same state is a
search of that state. A state not found is searched from a fresh root.

A search handed a ``TreeReuse`` (``MCTS.search(..., reuse=...)``, ``GumbelMCTS.search``)
copies each found subtree into its new trees (node 0 its root, the root's visits those
the node had, its evaluation not repeated), then runs its ``simulations`` on top: the
visits at the root are the reused ones plus the new ones. The move to play is therefore a
function of the game's history, not of the position alone: evaluation keeps reuse off
by default, so that a position's move does not depend on how a suite is batched, split
over tasks or ordered (see ``evaluation.policies``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np
from numba import njit


@njit(cache=True)
def subtree_nodes(parent_of, count, b, root, out):
    """The nodes of the subtree of ``root`` in tree ``b`` into ``out`` (ascending: a
    parent before its children, as nodes are numbered in the order they are added);
    returns how many."""
    inside = np.zeros(count[b], np.bool_)
    inside[root] = True
    out[0] = root
    k = 1
    for n in range(root + 1, count[b]):
        p = parent_of[b, n]
        if p >= 0 and inside[p]:
            inside[n] = True
            out[k] = n
            k += 1
    return k


@njit(cache=True)
def copy_subtree(old, ob, nodes, k, new, nb):
    """Copy the ``k`` nodes ``nodes[:k]`` (a subtree, its root first, from
    ``subtree_nodes``) of tree ``ob`` of ``old`` into tree ``nb`` of ``new``, renumbered
    0..k-1 in that order, with every statistic (visits, value sums, priors, evaluated
    values, rewards, terminal flags, the parent and child links)."""
    A = old.prior.shape[2]
    remap = np.full(old.children.shape[1], -1, np.int64)
    for i in range(k):
        remap[nodes[i]] = i
    for i in range(k):
        n = nodes[i]
        for a in range(A):
            c = old.children[ob, n, a]
            new.children[nb, i, a] = remap[c] if c >= 0 else -1
            new.prior[nb, i, a] = old.prior[ob, n, a]
            new.legal[nb, i, a] = old.legal[ob, n, a]
        new.visits[nb, i] = old.visits[ob, n]
        new.value_sum[nb, i] = old.value_sum[ob, n]
        new.raw_value[nb, i] = old.raw_value[ob, n]
        new.reward[nb, i] = old.reward[ob, n]
        new.terminal[nb, i] = old.terminal[ob, n]
        new.parent_of[nb, i] = remap[old.parent_of[ob, n]] if i > 0 else -1
    new.count[nb] = k


def state_keys(state, rows=None) -> list[bytes]:
    """One key per state of the batch (or per ``rows`` of it): the bytes of all its fields."""
    fields = [np.asarray(f) if rows is None else np.asarray(f)[rows] for f in state]
    n = len(fields[0])
    flat = np.concatenate([np.ascontiguousarray(f).reshape(n, -1).view(np.uint8) for f in fields], axis=1)
    return [row.tobytes() for row in flat]


class Found(NamedTuple):
    """A subtree to start a search from: node ``node`` of tree ``b`` of ``tree`` (whose
    game states are ``store``, node n of tree b at row ``b * N + n``), ``nodes`` its
    nodes, root first."""

    tree: object
    store: object
    b: int
    nodes: np.ndarray


class TreeReuse:
    """The searches' trees kept for the next moves (see the module docstring). ``history``:
    how many searches' trees are kept (a lockstep suite alternates between the games where
    the agent moves first and those where it moves second, so a tree is needed again two
    or more calls later). Counts what it saved: ``searches`` (roots searched),
    ``reused`` (roots that started from a kept subtree) and ``reused_visits`` (their
    visits, simulations not spent again)."""

    def __init__(self, *, history: int = 4):
        if history < 1:
            raise ValueError(f"TreeReuse: history must be >= 1, got {history}")
        self.history = history
        self._kept: OrderedDict[int, tuple] = OrderedDict()  # search id -> (tree, store, {key: node})
        self._next_id = 0
        self.searches = self.reused = self.reused_visits = 0

    def clear(self) -> None:
        """Forget every kept tree (a new game, another network)."""
        self._kept.clear()

    def kept_visits(self, state) -> np.ndarray:
        """int64[B]: the visits of the subtree of each state of the batch that a search
        would start from, 0 where none is kept (nothing counted)."""
        out = np.zeros(len(state[0]), np.int64)
        for i, key in enumerate(state_keys(state) if self._kept else []):
            for tree, _, index in reversed(self._kept.values()):
                if key in index:
                    out[i] = tree.visits[index[key]]
                    break
        return out

    def find(self, state) -> list[Found | None]:
        """Per root state of the batch, the kept subtree of that state (the newest), or
        None; counted in ``searches``, ``reused`` and ``reused_visits``."""
        found: list[Found | None] = []
        keys = state_keys(state) if self._kept else []
        for key in keys:
            hit = None
            for tree, store, index in reversed(self._kept.values()):
                where = index.get(key)
                if where is not None:
                    b, node = where
                    nodes = np.empty(int(tree.count[b]), np.int64)
                    k = subtree_nodes(tree.parent_of, tree.count, b, node, nodes)
                    hit = Found(tree, store, b, nodes[:k])
                    break
            found.append(hit)
        found += [None] * (len(state[0]) - len(found))
        self.searches += len(found)
        self.reused += sum(f is not None for f in found)
        self.reused_visits += sum(int(f.tree.visits[f.b, f.nodes[0]]) for f in found if f is not None)
        return found

    def keep(self, tree, store, actions: np.ndarray) -> None:
        """Remember the trees of a search whose moves ``actions`` [B] are played: the child
        of each move played and that child's expanded children, by their states."""
        N = tree.children.shape[1]
        where: list[tuple[int, int]] = []
        for b, a in enumerate(np.asarray(actions, np.int64)):
            child = int(tree.children[b, 0, a])
            if child < 0 or tree.terminal[b, child]:
                continue
            where.append((b, child))
            where.extend((b, int(g)) for g in tree.children[b, child] if g >= 0 and not tree.terminal[b, g])
        if not where:
            return
        rows = np.array([b * N + n for b, n in where], np.int64)
        index = dict(zip(state_keys(store, rows), where))
        self._kept[self._next_id] = (tree, store, index)
        self._next_id += 1
        while len(self._kept) > self.history:
            self._kept.popitem(last=False)
