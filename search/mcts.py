"""Batched PUCT Monte Carlo tree search (AlphaZero's search, AVI paper A.2) over B trees.

The B trees live in preallocated arrays, in the manner of mctx: per node ``[B, N]`` and
per edge ``[B, N, A]`` with ``N = simulations + 1`` (a simulation adds at most one node),
and the game states of the nodes in one flat state batch of ``B * N`` rows (node ``n`` of
tree ``b`` at row ``b * N + n``). One simulation is, for all B trees at once:

1. a compiled kernel walks each tree from its root by PUCT down to an edge whose child
   is not in the tree yet, or to a terminal node already in it;
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

Randomness (Dirichlet noise at the root, the draw of the move to play) comes from
``rng``: one Generator, or a sequence of B Generators, one per tree. With per-tree
generators tree ``b`` draws only from ``rng[b]`` (first A gamma variates for its noise
when noise is on, then one uniform for its move), so a batched search equals B single
searches given the same generators (``rng.spawn(B)`` makes them). With one Generator the
draws are vectorised: gammas ``[B, A]`` then uniforms ``[B]`` from the one stream; for
``B = 1`` that is the same as passing ``[rng]``. The tree walk itself is deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from games import Game, take
from games.base import batch_size
from search.evaluators import Evaluator, check_evaluation


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


# ----------------------------------------------------------------------- kernels


@njit(cache=True)
def _select(children, prior, legal, visits, value_sum, reward, terminal, count, c_puct, c_init, c_base):
    """Per tree, the PUCT walk from the root: (parent[B], action[B], leaf[B]) where leaf
    is the terminal node reached, or -1 when the edge (parent, action) is unexpanded;
    and for the G trees that grow: their index, the store rows of the parent and of the
    new node, and the action (each [G])."""
    B, N, A = prior.shape
    parent = np.empty(B, np.int64)
    action = np.empty(B, np.int64)
    leaf = np.full(B, -1, np.int64)
    for b in range(B):
        node = 0
        while True:
            n_s = visits[b, node]
            c = c_puct if c_base == 0.0 else c_init + math.log((n_s + c_base + 1.0) / c_base)
            scale = c * math.sqrt(n_s)
            best, best_score = -1, -np.inf
            for a in range(A):
                if not legal[b, node, a]:
                    continue
                child = children[b, node, a]
                q, n_a = 0.0, 0
                if child >= 0:
                    n_a = visits[b, child]
                    q = reward[b, child] - value_sum[b, child] / n_a
                score = q + scale * prior[b, node, a] / (1.0 + n_a)
                if score > best_score:
                    best, best_score = a, score
            child = children[b, node, best]
            if child < 0:
                parent[b], action[b] = node, best
                break
            if terminal[b, child]:
                parent[b], action[b], leaf[b] = node, best, child
                break
            node = child
    grow = np.flatnonzero(leaf < 0)
    return parent, action, leaf, grow, grow * N + parent[grow], grow * N + count[grow], action[grow]


@njit(cache=True)
def _expand_and_backup(children, prior, legal, visits, value_sum, reward, terminal, parent_of, count,
                       parent, action, leaf, new_legal, new_reward, new_done, logits, values):
    """Add the new leaves and back each simulation's value up to its root.

    Row k of ``new_*`` is the leaf of the k-th tree whose ``leaf`` is -1; rows j of
    ``logits`` and ``values`` are the evaluations of those leaves that are not done, in
    the same order. A leaf's prior is the softmax of its logits over its legal moves."""
    B = parent.shape[0]
    A = prior.shape[2]
    k = 0
    j = 0
    for b in range(B):
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
            if not new_done[k]:
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
                j += 1
            k += 1
        while node >= 0:
            visits[b, node] += 1
            value_sum[b, node] += v
            v = reward[b, node] - v  # for the player to move at the parent
            node = parent_of[b, node]


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
    """Batched PUCT search for ``game`` with ``config``; holds no state between searches."""

    def __init__(self, game: Game, config: MCTSConfig):
        if not isinstance(config, MCTSConfig):
            raise TypeError(f"MCTS: config must be an MCTSConfig, got {type(config).__name__}")
        self.game, self.config = game, config

    def search(self, state, evaluate: Evaluator, rng) -> SearchResult:
        """One search from each of the B root states (none may be terminal).

        ``rng`` is a ``np.random.Generator`` or a sequence of B of them, one per tree
        (see the module docstring)."""
        game, cfg = self.game, self.config
        B, A, N = batch_size(state), game.num_actions, cfg.simulations + 1
        over = np.asarray(game.terminal(state))
        if over.any():
            raise ValueError(f"MCTS.search: root state {int(np.flatnonzero(over)[0])} (of {B}) is terminal; "
                             f"there is no move to search for")
        tree_rngs = None
        if not isinstance(rng, np.random.Generator):
            tree_rngs = list(rng)
            if len(tree_rngs) != B or not all(isinstance(g, np.random.Generator) for g in tree_rngs):
                raise ValueError(f"MCTS.search: rng must be a numpy Generator or a sequence of {B} "
                                 f"Generators (one per tree), got {len(tree_rngs)} items")

        children = np.full((B, N, A), -1, np.int32)  # node index of each edge's child, -1: none yet
        prior = np.zeros((B, N, A), np.float32)  # P(s, a), 0 where illegal
        legal = np.zeros((B, N, A), np.bool_)
        visits = np.zeros((B, N), np.int32)
        value_sum = np.zeros((B, N), np.float64)  # for the player to move at the node
        reward = np.zeros((B, N), np.float32)  # for the player who moved into the node
        terminal = np.zeros((B, N), np.bool_)
        parent_of = np.full((B, N), -1, np.int32)
        count = np.ones(B, np.int64)  # nodes in use per tree; node 0 is the root
        store = type(state)(*(np.empty((B * N,) + np.shape(f)[1:], np.asarray(f).dtype) for f in state))
        roots = np.arange(B) * N  # [B] store row of each root
        for f, r in zip(store, state):
            f[roots] = r

        # The roots: one evaluator call, noise on their priors, their first visit.
        root_legal = game.legal(state)  # [B, A]
        logits, values = check_evaluation(evaluate(state), B, A)
        evaluations = B
        root_prior = _masked_softmax(logits, root_legal)
        if cfg.noise_fraction > 0:
            gammas = self._draw(tree_rngs, rng, B, lambda g, n: g.standard_gamma(cfg.dirichlet_alpha, size=(n, A)))
            gammas = np.where(root_legal, gammas, 0.0)  # Dirichlet over the legal moves
            noise = gammas / np.maximum(gammas.sum(axis=1, keepdims=True), np.finfo(np.float64).tiny)
            root_prior = ((1 - cfg.noise_fraction) * root_prior + cfg.noise_fraction * noise).astype(np.float32)
        prior[:, 0], legal[:, 0] = root_prior, root_legal
        visits[:, 0], value_sum[:, 0] = 1, values

        c = (float(cfg.c_puct), float(cfg.c_init), float(cfg.c_base))
        nothing = (np.zeros((0, A), bool), np.zeros(0, np.float32), np.zeros(0, bool),
                   np.zeros((0, A), np.float32), np.zeros(0, np.float32))  # no tree grows
        for _ in range(cfg.simulations):
            parent, action, leaf, grow, src, dst, grow_action = _select(
                children, prior, legal, visits, value_sum, reward, terminal, count, *c)
            new = nothing
            if grow.size:  # trees that add a node this simulation
                new_state, new_reward, new_done = game.step(take(store, src), grow_action, check=False)
                for f, r in zip(store, new_state):
                    f[dst] = r
                new_legal = game.legal(new_state)  # [G, A], all False where done
                new_done = np.asarray(new_done, bool)
                live = int(grow.size - new_done.sum())
                logits, values = nothing[3:]
                if live == grow.size:
                    logits, values = check_evaluation(evaluate(new_state), live, A)
                elif live:
                    logits, values = check_evaluation(evaluate(take(new_state, ~new_done)), live, A)
                evaluations += live
                new = (new_legal, np.asarray(new_reward, np.float32), new_done, logits, values)
            _expand_and_backup(children, prior, legal, visits, value_sum, reward, terminal, parent_of, count,
                               parent, action, leaf, *new)

        # Root children's visits: the visit count of each root edge's child node.
        root_children = children[:, 0].astype(np.int64)  # [B, A]
        root_visits = np.where(root_children >= 0,
                               np.take_along_axis(visits, np.maximum(root_children, 0), axis=1), 0).astype(np.int32)
        policy = (root_visits / root_visits.sum(axis=1, keepdims=True)).astype(np.float32)
        uniform = self._draw(tree_rngs, rng, B, lambda g, n: g.random(n))
        if cfg.temperature == 0:
            weights = (root_visits == root_visits.max(axis=1, keepdims=True)).astype(np.float64)
        else:
            # Scaled by the row maximum first so that a small temperature cannot overflow.
            weights = (root_visits / root_visits.max(axis=1, keepdims=True)) ** (1.0 / cfg.temperature)
        action = _sample_rows(weights, uniform)
        root_value = (value_sum[:, 0] / visits[:, 0]).astype(np.float32)
        return SearchResult(root_visits, policy, action, root_value, evaluations)

    @staticmethod
    def _draw(tree_rngs, rng, batch, draw):
        """``draw(generator, n)`` -> array with leading axis n, for all ``batch`` trees:
        one call on each tree's generator (n = 1), or one vectorised call on the shared one."""
        if tree_rngs is None:
            return draw(rng, batch)
        return np.concatenate([draw(g, 1) for g in tree_rngs], axis=0)
