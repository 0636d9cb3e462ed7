"""Batched PUCT Monte Carlo tree search (AlphaZero's search, AVI paper A.2) over B trees.

The B trees live in preallocated arrays, in the manner of mctx: per node ``[B, N]`` and
per edge ``[B, N, A]`` with ``N = simulations + 1`` (a simulation adds at most one node),
and the game states of the nodes in one flat state batch of ``B * N`` rows (node ``n`` of
tree ``b`` at row ``b * N + n``). One simulation is, for all B trees at once:

1. a compiled kernel walks each tree from its root by the selection rules (PUCT unless
   told otherwise) down to an edge whose child is not in the tree yet, or to a terminal
   node already in it;
2. ONE batched ``game.step`` of the selected (parent state, action) pairs makes the new
   leaves, and ONE evaluator call over the new leaves whose game is not over gives their
   priors and values (a finished game's leaf is worth exactly its ``reward``);
3. a compiled kernel adds the new nodes and backs the values up with a sign flip per ply.

Conventions:
- ``value_sum[b, n] / visits[b, n]`` is the mean value of node ``n`` for the player to
  move there; a terminal node is worth 0 to its (non-)mover, and an edge's action value
  is ``Q(s, a) = reward(child) - value(child)`` (negamax: ``reward`` is for the player
  who made the move; no discount). A terminal child's Q is therefore its exact reward.
- Selection maximises ``Q(s, a) + c(s) P(s, a) sqrt(N(s)) / (1 + N(s, a))`` (eq. 12)
  over legal actions, where ``N(s)`` counts the visits of node ``s`` including the one
  that expanded it (as mctx counts ``node_visits``), so the first selection below a new
  node already follows the prior instead of taking the lowest legal action.
  ``c(s) = c_puct``, or with ``c_base > 0`` AlphaZero's schedule
  ``c_init + log((N(s) + c_base + 1) / c_base)``. An unvisited child has
  ``Q = 0`` (the value of an even game; AlphaZero's and the notes' convention) rather
  than a first-play urgency from the parent's value: simple, and with values in
  [-1, 1] it keeps trying unvisited moves of a losing position, which is what a search
  that must find a defence wants. Ties go to the lowest action index.
- The root is evaluated first (one evaluator call for the B roots) and counts as the
  root's first visit: ``root_value`` is the mean over that evaluation and the
  ``simulations`` backed-up values, for the player to move at the root.

The trees are one record, ``Tree`` (a NamedTuple of arrays, which numba takes as one
argument), and the selection is a parameter of the walk, as in mctx: a *root rule* picks
the action at the roots and an *interior rule* below them, each a jitted function
``rule(tree, params, b, node, depth) -> action`` (``puct`` for both by default, with
``params = puct_params(config)``). Another rule (a Gumbel root, another exploration
term) is a function passed to ``MCTS``, with parameters of any type numba takes; the
walk, the expansion and the backup stay as they are. The walk (``_walk``) is inlined into
kernels that call their rules directly, as fast as a rule written into the walk: the PUCT
kernels are compiled once and cached on disk, another pair of rules gets its kernels
compiled once per process (``walk_kernels``). One kernel call per simulation backs up
the previous walk and walks again (``_backup_select_puct``): numba takes about a
microsecond to read a record argument, a few percent of a simulation.

Randomness (Dirichlet noise at the root, the draw of the move to play) comes from
``rng``: one Generator, or a sequence of B Generators, one per tree. With per-tree
generators tree ``b`` draws only from ``rng[b]`` (first A gamma variates for its noise
when noise is on, then one uniform for its move), so a batched search equals B single
searches given the same generators (``rng.spawn(B)`` makes them). With one Generator the
draws are vectorised: gammas ``[B, A]`` then uniforms ``[B]`` from the one stream; for
``B = 1`` that is the same as passing ``[rng]``. The tree walk itself is deterministic.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher

from games import Game, take
from games.base import batch_size
from search.evaluators import Evaluator, check_evaluation
from search.reuse import copy_subtree


@dataclass(frozen=True)
class MCTSConfig:
    """Search parameters; the defaults are the AVI paper's training values (Table 4)."""

    simulations: int = 64
    """Simulations per search, >= 1 (the paper: 32 to 512)."""
    c_puct: float = 3.0
    """Exploration constant of eq. (12), used when ``c_base == 0`` (Table 4: 3.0)."""
    c_init: float = 1.25
    """With ``c_base > 0``: c(s) = c_init + log((N(s) + c_base + 1) / c_base) (Table 6: 1.25)."""
    c_base: float = 0.0
    """0 selects the constant ``c_puct``; Table 6 (F-Games) uses 19652."""
    dirichlet_alpha: float = 1.0
    """Concentration of the root noise (Tables 4 and 6: 1.0)."""
    noise_fraction: float = 0.25
    """Root prior = (1 - f) prior + f Dirichlet(alpha) over the legal moves; 0 disables
    noise (train 0.25, evaluation 0.05)."""
    temperature: float = 1.0
    """Temperature of the visit-count distribution the move is drawn from (train 1.0,
    evaluation 0.2); 0 plays the most visited move, ties broken at random."""

    def __post_init__(self):
        def bad(name, want):
            raise ValueError(f"MCTSConfig.{name} must be {want}, got {getattr(self, name)!r}")

        if isinstance(self.simulations, bool) or not isinstance(self.simulations, (int, np.integer)) \
                or self.simulations < 1:
            bad("simulations", "an integer >= 1")
        for name in ("c_puct", "c_init", "c_base", "dirichlet_alpha", "noise_fraction", "temperature"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
                    or not math.isfinite(value):
                bad(name, "a finite number")
        if self.c_puct <= 0:
            bad("c_puct", "> 0")
        if self.c_base < 0:
            bad("c_base", ">= 0 (0 selects the constant c_puct)")
        if self.c_base > 0 and self.c_init < 0:
            bad("c_init", ">= 0")
        if self.dirichlet_alpha <= 0:
            bad("dirichlet_alpha", "> 0")
        if not 0.0 <= self.noise_fraction <= 1.0:
            bad("noise_fraction", "in [0, 1]")
        if self.temperature < 0:
            bad("temperature", ">= 0 (0 plays the most visited move)")


class SearchResult(NamedTuple):
    visits: np.ndarray  # int32[B, A], root child visit counts (0 for illegal)
    policy: np.ndarray  # float32[B, A], visits / visits.sum(): the training target
    action: np.ndarray  # int64[B], the move to play, drawn from visits ** (1 / T)
    root_value: np.ndarray  # float32[B], mean backed-up value at the root, for its mover
    evaluations: int  # states sent to the evaluator in this search (roots included)


# -------------------------------------------------------------------- the tree


class Tree(NamedTuple):
    """B search trees of at most N nodes over A actions: the arrays the kernels share.
    Node 0 of each tree is its root; a tree's nodes are numbered in the order they are
    added. Built by ``new_tree``; numba takes the record as one argument."""

    children: np.ndarray  # int32[B, N, A]: node index of each edge's child, -1 until expanded
    prior: np.ndarray  # float32[B, N, A]: P(s, a) of each node's edges, 0 where illegal
    legal: np.ndarray  # bool[B, N, A]: the legal actions of each node (none at a terminal node)
    visits: np.ndarray  # int32[B, N]: N(s), the visit that expanded the node included
    value_sum: np.ndarray  # float64[B, N]: sum of the values backed up, for the player to move at the node
    raw_value: np.ndarray  # float32[B, N]: the evaluator's value of the node when it was added (0 if terminal)
    reward: np.ndarray  # float32[B, N]: reward of the move into the node, for the player who made it
    terminal: np.ndarray  # bool[B, N]: the game is over at the node
    parent_of: np.ndarray  # int32[B, N]: each node's parent, -1 at the root and in unused slots
    count: np.ndarray  # int64[B]: nodes in use per tree (the root from the start)
    # Where the current simulation's walk ended, from the walk (``_walk``) to the backup:
    walk_parent: np.ndarray  # int64[B]: the node whose edge it took last
    walk_action: np.ndarray  # int64[B]: that edge's action
    walk_leaf: np.ndarray  # int64[B]: the terminal node it reached, -1: the edge is new (a node is added)


def new_tree(batch: int, nodes: int, actions: int) -> Tree:
    """``batch`` empty trees (only their roots, unexpanded and unvisited) with room for
    ``nodes`` nodes each over ``actions`` actions."""
    B, N, A = batch, nodes, actions
    return Tree(children=np.full((B, N, A), -1, np.int32), prior=np.zeros((B, N, A), np.float32),
                legal=np.zeros((B, N, A), np.bool_), visits=np.zeros((B, N), np.int32),
                value_sum=np.zeros((B, N), np.float64), raw_value=np.zeros((B, N), np.float32),
                reward=np.zeros((B, N), np.float32),
                terminal=np.zeros((B, N), np.bool_), parent_of=np.full((B, N), -1, np.int32),
                count=np.ones(B, np.int64), walk_parent=np.zeros(B, np.int64), walk_action=np.zeros(B, np.int64),
                walk_leaf=np.zeros(B, np.int64))


def puct_params(config: MCTSConfig) -> tuple[float, float, float]:
    """The parameters ``puct`` reads: (c_puct, c_init, c_base) of ``config``."""
    return float(config.c_puct), float(config.c_init), float(config.c_base)


@njit(cache=True)
def puct(tree, params, b, node, depth):
    """AlphaZero's PUCT (eq. 12, see the module docstring; ``params``: ``puct_params``):
    the legal action of ``node`` in tree ``b`` with the highest score, the lowest such
    action on ties. The same at every depth."""
    c_puct, c_init, c_base = params
    children, prior, legal, visits = tree.children, tree.prior, tree.legal, tree.visits
    n_s = visits[b, node]
    c = c_puct if c_base == 0.0 else c_init + math.log((n_s + c_base + 1.0) / c_base)
    scale = c * math.sqrt(n_s)
    best, best_score = -1, -np.inf
    for a in range(prior.shape[2]):
        if not legal[b, node, a]:
            continue
        child = children[b, node, a]
        q, n_a = 0.0, 0
        if child >= 0:
            n_a = visits[b, child]
            q = tree.reward[b, child] - tree.value_sum[b, child] / n_a
        score = q + scale * prior[b, node, a] / (1.0 + n_a)
        if score > best_score:
            best, best_score = a, score
    return best


class Leaves(NamedTuple):
    """The nodes one simulation adds, for the G trees that grow (row k: the k-th of them
    in tree order) and the L of those whose game is not over (their evaluations, in the
    same order)."""

    legal: np.ndarray  # bool[G, A]: the new node's legal actions (none where done)
    reward: np.ndarray  # float32[G]: reward of the move into it, for the player who made it
    done: np.ndarray  # bool[G]: the game is over there
    logits: np.ndarray  # float32[L, A]: the evaluator's logits of the live new nodes
    values: np.ndarray  # float32[L]: their values, for the player to move there


def no_leaves(actions: int) -> Leaves:
    """The empty ``Leaves``: no tree grows this simulation (every walk ended at a
    terminal node already in its tree)."""
    return Leaves(np.zeros((0, actions), np.bool_), np.zeros(0, np.float32), np.zeros(0, np.bool_),
                  np.zeros((0, actions), np.float32), np.zeros(0, np.float32))


# ----------------------------------------------------------------------- kernels


@njit(inline="always")
def _walk(tree, params, root_rule, interior_rule):
    """Per tree, the walk from the root by ``root_rule`` there and ``interior_rule`` below
    (selection rules, see ``MCTS``) to an unexpanded edge or a terminal node, recorded in
    ``tree.walk_*``; returns for the G trees that grow the store rows of the parent and
    of the new node, and the action (each [G]). Inlined into each kernel, whose rules it
    calls directly."""
    children, terminal, count = tree.children, tree.terminal, tree.count
    parent, action, leaf = tree.walk_parent, tree.walk_action, tree.walk_leaf
    B, N, A = children.shape
    for b in range(B):
        node, depth = 0, 0
        best = root_rule(tree, params, b, 0, 0)
        while True:
            child = children[b, node, best]
            if child < 0 or terminal[b, child]:
                parent[b], action[b], leaf[b] = node, best, child if child >= 0 else -1
                break
            node, depth = child, depth + 1
            best = interior_rule(tree, params, b, node, depth)
    grow = np.flatnonzero(leaf < 0)
    return grow * N + parent[grow], grow * N + count[grow], action[grow]


@njit(cache=True)
def _select_puct(tree, params):
    """``_walk`` with ``puct`` at every node: the default walk, compiled once and cached."""
    return _walk(tree, params, puct, puct)


@njit(cache=True)
def _backup_select_puct(tree, new, params):
    """``_expand_and_backup`` of the simulation under way, then the next simulation's
    walk: one kernel call per simulation, as numba takes a microsecond or two to read
    the arguments of each call."""
    _expand_and_backup(tree, new)
    return _walk(tree, params, puct, puct)


@functools.lru_cache(maxsize=None)
def walk_kernels(root_rule, interior_rule) -> tuple:
    """The compiled walks with these rules: ``select(tree, params)`` and
    ``backup_select(tree, new, params)`` (as ``_select_puct`` and
    ``_backup_select_puct``). Another pair of rules compiles its kernels at its first
    search in each process (about a second): numba caches a kernel by its source, not by
    the functions a closure holds. A pair used in many processes can have kernels of its
    own cached on disk, written as ``_select_puct`` and ``_backup_select_puct`` are
    (``_walk`` inlines into any module's kernels)."""
    if root_rule is puct and interior_rule is puct:
        return _select_puct, _backup_select_puct

    @njit
    def select(tree, params):
        return _walk(tree, params, root_rule, interior_rule)

    @njit
    def backup_select(tree, new, params):
        _expand_and_backup(tree, new)
        return _walk(tree, params, root_rule, interior_rule)
    return select, backup_select


@njit(cache=True)
def _expand_and_backup(tree, new):
    """Add the new leaves of the walks ``tree.walk_*`` (``new``: ``Leaves``, row k for
    the k-th tree whose walk found no leaf) and back each walk's value up to its root. A
    leaf's prior is the softmax of its logits over its legal moves."""
    # The fields as locals: read through the records inside the loops, or with the softmax
    # in an inlined helper, the kernel takes ~15% longer.
    children, prior, legal, visits, value_sum = tree.children, tree.prior, tree.legal, tree.visits, tree.value_sum
    reward, terminal, parent_of, count = tree.reward, tree.terminal, tree.parent_of, tree.count
    raw_value = tree.raw_value
    parent, action, leaf = tree.walk_parent, tree.walk_action, tree.walk_leaf
    new_legal, new_reward, new_done, logits, values = new.legal, new.reward, new.done, new.logits, new.values
    A = prior.shape[2]
    k = 0
    j = 0
    for b in range(parent.shape[0]):
        node = leaf[b]
        v = 0.0  # a terminal node is worth 0 to the player "to move" there
        if node < 0:
            node = count[b]
            count[b] += 1
            p = parent[b]
            children[b, p, action[b]] = node
            parent_of[b, node] = p
            reward[b, node] = new_reward[k]
            terminal[b, node] = new_done[k]
            if not new_done[k]:  # its legal moves, and as prior the softmax of its logits over them
                top = -np.inf
                for a in range(A):
                    legal[b, node, a] = new_legal[k, a]
                    if new_legal[k, a] and logits[j, a] > top:
                        top = logits[j, a]
                total = 0.0
                for a in range(A):
                    if new_legal[k, a]:
                        e = math.exp(logits[j, a] - top)
                        prior[b, node, a] = e
                        total += e
                for a in range(A):
                    prior[b, node, a] /= total
                v = values[j]
                raw_value[b, node] = v
                j += 1
            k += 1
        while node >= 0:
            visits[b, node] += 1
            value_sum[b, node] += v
            v = reward[b, node] - v  # for the player to move at the parent
            node = parent_of[b, node]


def root_edge_visits(tree: Tree) -> np.ndarray:
    """int32[B, A]: the visit count of each root edge's child node (0 where unexpanded)."""
    root_children = tree.children[:, 0].astype(np.int64)  # [B, A]
    return np.where(root_children >= 0, np.take_along_axis(tree.visits, np.maximum(root_children, 0), axis=1),
                    0).astype(np.int32)


def _masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """float32[N, A] priors: softmax of ``logits`` over the legal actions, 0 elsewhere."""
    z = np.where(legal, logits.astype(np.float64), -np.inf)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return p.astype(np.float32)


def _sample_rows(weights: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """int64[B]: per row an index drawn with probability proportional to ``weights[B, A]``
    (non-negative, a positive entry per row) from one uniform in [0, 1) per row."""
    cdf = np.cumsum(weights, axis=1)
    # `<=` skips leading zero-weight entries even when the uniform is exactly 0.
    return np.sum(cdf <= (uniform * cdf[:, -1])[:, None], axis=1).astype(np.int64)


# ------------------------------------------------------------------------ search


class MCTS:
    """Batched search for ``game`` with ``config``; holds no state between searches.

    ``root_rule`` and ``interior_rule`` pick the actions of the walk at the roots (depth
    0) and below them: ``numba.njit`` functions ``rule(tree, params, b, node, depth) ->
    action`` that return a legal action of the (non-terminal) ``node`` of tree ``b``, and
    may read the whole ``Tree`` but write none of it. None (the default) is ``puct``.
    ``params`` is ``puct_params(config)`` for now: the kernels take any value numba can
    type (compiling for each type), so a pair of rules with data of its own per search (a
    Gumbel root's noise [B, A] and Sequential Halving table) gets a record of its own,
    which the search would draw."""

    def __init__(self, game: Game, config: MCTSConfig, *, root_rule: Dispatcher | None = None,
                 interior_rule: Dispatcher | None = None):
        if not isinstance(config, MCTSConfig):
            raise TypeError(f"MCTS: config must be an MCTSConfig, got {type(config).__name__}")
        for name, rule in (("root_rule", root_rule), ("interior_rule", interior_rule)):
            if rule is not None and not isinstance(rule, Dispatcher):
                raise TypeError(f"MCTS: {name} must be a numba.njit function "
                                f"rule(tree, params, b, node, depth) -> action, got {rule!r}")
        self.game, self.config = game, config
        self.root_rule, self.interior_rule = root_rule, interior_rule

    def search(self, state, evaluate: Evaluator, rng, *, reuse=None) -> SearchResult:
        """One search from each of the B root states (none may be terminal).

        ``rng`` is a ``np.random.Generator`` or a sequence of B of them, one per tree
        (see the module docstring). ``reuse``: a ``search.reuse.TreeReuse``, whose kept
        subtree of a root state (from the previous moves' searches) the search starts
        from, and which keeps this search's trees for the next moves; None searches
        every root from scratch."""
        B = batch_size(state)
        tree_rngs = None
        if not isinstance(rng, np.random.Generator):
            tree_rngs = list(rng)
            if len(tree_rngs) != B or not all(isinstance(g, np.random.Generator) for g in tree_rngs):
                raise ValueError(f"MCTS.search: rng must be a numpy Generator or a sequence of {B} "
                                 f"Generators (one per tree), got {len(tree_rngs)} items")

        tree, store, evaluations = self._planted(state, evaluate, rng, tree_rngs, reuse)
        evaluations += self._simulate(tree, store, evaluate, puct_params(self.config))
        result = self._result(tree, evaluations, rng, tree_rngs)
        if reuse is not None:
            reuse.keep(tree, store, result.action)
        return result

    def _planted(self, state, evaluate: Evaluator, rng, tree_rngs, reuse=None) -> tuple[Tree, object, int]:
        """(B trees holding their evaluated roots, or the subtrees ``reuse`` kept of their
        states, the store of the nodes' game states, the states evaluated). No root may be
        terminal. The trees have room for the largest reused subtree and the simulations."""
        B, A = batch_size(state), self.game.num_actions
        over = np.asarray(self.game.terminal(state))
        if over.any():
            raise ValueError(f"MCTS.search: root state {int(np.flatnonzero(over)[0])} (of {B}) is terminal; "
                             f"there is no move to search for")
        found = reuse.find(state) if reuse is not None else [None] * B
        N = self.config.simulations + max((len(f.nodes) for f in found if f is not None), default=1)
        tree = new_tree(B, N, A)
        # the game states of the nodes: node n of tree b at row b * N + n
        store = type(state)(*(np.empty((B * N,) + np.shape(f)[1:], np.asarray(f).dtype) for f in state))
        roots = np.arange(B) * N  # [B] store row of each root
        for f, r in zip(store, state):
            f[roots] = r
        for b, hit in enumerate(found):
            if hit is not None:
                k, old_n = len(hit.nodes), hit.tree.children.shape[1]
                copy_subtree(hit.tree, hit.b, hit.nodes, k, tree, b)
                for f, old in zip(store, hit.store):
                    f[b * N:b * N + k] = old[hit.b * old_n + hit.nodes]
        fresh = np.array([f is None for f in found])
        return tree, store, self._init_roots(tree, state, evaluate, rng, tree_rngs, fresh)

    def _simulate(self, tree: Tree, store, evaluate: Evaluator, params) -> int:
        """The config's simulations in every tree, walking by this search's rules (which
        read ``params``); returns the states evaluated."""
        simulations, evaluations = self.config.simulations, 0
        select, backup_select = walk_kernels(self.root_rule or puct, self.interior_rule or puct)
        none = no_leaves(self.game.num_actions)
        grow = select(tree, params)
        for i in range(simulations):
            new = self._new_leaves(store, grow, evaluate, none)
            evaluations += len(new.values)
            if i + 1 < simulations:
                grow = backup_select(tree, new, params)
            else:
                _expand_and_backup(tree, new)
        return evaluations

    def _init_roots(self, tree: Tree, state, evaluate: Evaluator, rng, tree_rngs, fresh: np.ndarray) -> int:
        """The ``fresh`` roots [B] (those not reused): one evaluator call, their first
        visit; then noise on every root's prior. Returns the states evaluated."""
        cfg, B, A = self.config, batch_size(state), self.game.num_actions
        root_legal = self.game.legal(state)  # [B, A]
        live = int(fresh.sum())
        if live:
            logits, values = check_evaluation(evaluate(state if live == B else take(state, fresh)), live, A)
            tree.prior[fresh, 0], tree.legal[fresh, 0] = _masked_softmax(logits, root_legal[fresh]), root_legal[fresh]
            tree.visits[fresh, 0], tree.value_sum[fresh, 0], tree.raw_value[fresh, 0] = 1, values, values
        root_prior = tree.prior[:, 0]  # a reused root's is its evaluation's, without noise
        if cfg.noise_fraction > 0:
            gammas = self._draw(tree_rngs, rng, B, lambda g, n: g.standard_gamma(cfg.dirichlet_alpha, size=(n, A)))
            gammas = np.where(root_legal, gammas, 0.0)  # Dirichlet over the legal moves
            noise = gammas / np.maximum(gammas.sum(axis=1, keepdims=True), np.finfo(np.float64).tiny)
            tree.prior[:, 0] = ((1 - cfg.noise_fraction) * root_prior + cfg.noise_fraction * noise).astype(np.float32)
        return live

    def _new_leaves(self, store, grow: tuple, evaluate: Evaluator, none: Leaves) -> Leaves:
        """The nodes the walks add (``grow``: ``_walk``'s answer): one ``game.step`` of
        the trees that grow, their states written to ``store``, and one evaluator call for
        those whose game goes on; ``none`` where no tree grows."""
        game, A = self.game, self.game.num_actions
        src, dst, grow_action = grow
        G = src.size
        if not G:
            return none
        new_state, new_reward, new_done = game.step(take(store, src), grow_action, check=False)
        for f, r in zip(store, new_state):
            f[dst] = r
        new_legal = game.legal(new_state)  # [G, A], all False where done
        new_done = np.asarray(new_done, bool)
        live = G - np.count_nonzero(new_done)
        logits, values = none.logits, none.values  # none evaluated when every new leaf is over
        if live == G:
            logits, values = check_evaluation(evaluate(new_state), live, A)
        elif live:
            logits, values = check_evaluation(evaluate(take(new_state, ~new_done)), live, A)
        return Leaves(new_legal, np.asarray(new_reward, np.float32), new_done, logits, values)

    def _result(self, tree: Tree, evaluations: int, rng, tree_rngs) -> SearchResult:
        """The root's visit counts and the move drawn from them."""
        cfg, B = self.config, tree.count.shape[0]
        root_visits = root_edge_visits(tree)
        policy = (root_visits / root_visits.sum(axis=1, keepdims=True)).astype(np.float32)
        uniform = self._draw(tree_rngs, rng, B, lambda g, n: g.random(n))
        if cfg.temperature == 0:
            weights = (root_visits == root_visits.max(axis=1, keepdims=True)).astype(np.float64)
        else:
            # Scaled by the row maximum first so that a small temperature cannot overflow.
            weights = (root_visits / root_visits.max(axis=1, keepdims=True)) ** (1.0 / cfg.temperature)
        action = _sample_rows(weights, uniform)
        root_value = (tree.value_sum[:, 0] / tree.visits[:, 0]).astype(np.float32)
        return SearchResult(root_visits, policy, action, root_value, evaluations)

    @staticmethod
    def _draw(tree_rngs, rng, batch, draw):
        """``draw(generator, n)`` -> array with leading axis n, for all ``batch`` trees:
        one call on each tree's generator (n = 1), or one vectorised call on the shared one."""
        if tree_rngs is None:
            return draw(rng, batch)
        return np.concatenate([draw(g, 1) for g in tree_rngs], axis=0)
