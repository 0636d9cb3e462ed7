"""The pieces of Gumbel AlphaZero's search (Danihelka, Guez, Schrittwieser and Silver,
"Policy improvement by planning with Gumbel", ICLR 2022), batched over B trees: the
Sequential Halving schedule of the root, the completed Q-values and their transform, the
root's and the interior's selection scores, and the improved policy that is the training
target. ``search.mcts`` runs the search with them (``MCTS(..., rule="gumbel")``).

Conventions are the PUCT search's (``search.mcts``): values are for the player to move at
a node; an edge's action value is ``Q(s, a) = reward(child) - value(child)`` (two players,
zero sum: mctx's discount of -1). Arrays have a leading batch axis ``B`` (trees) and an
action axis ``A``; illegal actions carry ``legal == False``.

The paper's defaults (its Appendix, and mctx's ``qtransform_completed_by_mix_value``):
``value_scale`` (c_scale) 0.1, ``maxvisit_init`` (c_visit) 50, Q-values rescaled to [0, 1]
by the min and max over the node's actions, unvisited actions completed by the mixed
value (eq. 33 of the paper). mctx's implementation is the reference of the tests.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numba import njit

from search.mcts import MCTS, MCTSConfig, SearchResult, root_edge_visits

LOW_LOGIT = -1e9  # a floor under the root's scores, so that -inf logits still rank (as mctx)


@dataclass(frozen=True)
class GumbelConfig:
    """Parameters of the Gumbel search, keyword-only, with the paper's defaults."""

    max_considered: int = 16
    """m: actions sampled without replacement at the root (Gumbel-top-m), then halved
    (the paper: 16 on Go and chess, mctx's default 16)."""
    value_scale: float = 0.1
    """c_scale of the monotone transform sigma(q) = (c_visit + max_b N(b)) c_scale q."""
    maxvisit_init: float = 50.0
    """c_visit of that transform."""
    gumbel_scale: float = 1.0
    """Scale of the root's Gumbel noise: 1 when training, 0 for deterministic play."""
    mixed_value: bool = True
    """Complete unvisited actions with the mixed value (the paper's eq. 33, mctx's default)
    rather than the network's value of the node alone (its Theorem's v_pi)."""

    def __post_init__(self):
        if self.max_considered < 1:
            raise ValueError(f"GumbelConfig.max_considered must be >= 1, got {self.max_considered}")
        for name in ("value_scale", "maxvisit_init", "gumbel_scale"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"GumbelConfig.{name} must be a finite number >= 0, got {value!r}")


@functools.lru_cache(maxsize=256)
def considered_visits(max_considered: int, simulations: int) -> tuple[int, ...]:
    """Sequential Halving's schedule for ``max_considered`` root actions and ``simulations``
    simulations: entry ``k`` is the visit count that the action chosen at simulation ``k``
    has before it (only actions with exactly that many visits compete). Each round gives
    every action still considered the same number of visits, about
    ``simulations / (log2(m) * considered)``, then keeps the better half (never fewer
    than 2)."""
    if max_considered <= 1:
        return tuple(range(simulations))
    rounds = math.ceil(math.log2(max_considered))
    schedule: list[int] = []
    visits = [0] * max_considered
    considered = max_considered
    while len(schedule) < simulations:
        extra = max(1, int(simulations / (rounds * considered)))
        for _ in range(extra):
            schedule.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return tuple(schedule[:simulations])


def considered_visit_table(max_considered: int, simulations: int) -> np.ndarray:
    """int32[max_considered + 1, simulations]: row ``m`` is the schedule for ``m``
    considered actions (a tree with fewer legal moves than ``max_considered`` uses its own
    row)."""
    return np.array([considered_visits(m, simulations) for m in range(max_considered + 1)], np.int32)


@njit(cache=True)
def completed_q_row(q, visits, prior, raw_value, value_scale, maxvisit_init, out, mixed_value=True):
    """One node's transformed completed Q-values into ``out`` [A]: ``q`` [A] the edges'
    action values (read where visited), ``visits`` [A], ``prior`` [A] its policy
    (probabilities), ``raw_value`` the network's value of the node. Unvisited edges take
    the mixed value: the raw value and the visited edges' Q averaged, weighted by prior
    among the visited and by visit count overall (the paper's eq. 33); then all are
    rescaled to [0, 1] by their min and max and multiplied by ``(maxvisit_init + max N)
    value_scale``. Illegal actions (prior 0, never visited) take part like mctx's: their
    completed value is the mixed value."""
    A = q.shape[0]
    total = 0
    weight = 0.0
    for a in range(A):
        if visits[a] > 0:
            total += visits[a]
            weight += max(prior[a], 1.1754944e-38)  # float32's smallest normal: as mctx, no 0/0
    weighted_q = 0.0
    for a in range(A):
        if visits[a] > 0:
            weighted_q += max(prior[a], 1.1754944e-38) * q[a] / weight
    mixed = (raw_value + total * weighted_q) / (total + 1) if mixed_value else raw_value
    low, high = np.inf, -np.inf
    most = 0
    for a in range(A):
        out[a] = q[a] if visits[a] > 0 else mixed
        low, high = min(low, out[a]), max(high, out[a])
        most = max(most, visits[a])
    span = max(high - low, 1e-8)
    scale = (maxvisit_init + most) * value_scale
    for a in range(A):
        out[a] = scale * (out[a] - low) / span


def completed_q(q: np.ndarray, visits: np.ndarray, prior: np.ndarray, raw_value: np.ndarray,
                config: GumbelConfig) -> np.ndarray:
    """float64[B, A]: :func:`completed_q_row` of one node of every tree (``raw_value`` [B])."""
    out = np.empty(q.shape, np.float64)
    for b in range(q.shape[0]):
        completed_q_row(np.asarray(q[b], np.float64), np.asarray(visits[b]), np.asarray(prior[b], np.float64),
                        float(raw_value[b]), config.value_scale, config.maxvisit_init, out[b], config.mixed_value)
    return out


def masked_logits(prior: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """log ``prior`` [B, A] with illegal actions at -inf and each row's maximum at 0."""
    with np.errstate(divide="ignore"):
        logits = np.where(legal, np.log(np.asarray(prior, np.float64)), -np.inf)
    return logits - logits.max(axis=1, keepdims=True)


def root_scores(gumbel: np.ndarray, logits: np.ndarray, completed: np.ndarray, visits: np.ndarray,
                considered_visit: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The root's argmax input [B, A]: ``g(a) + logits(a) + sigma(completed Q(a))`` among
    the legal actions that have exactly ``considered_visit`` [B] visits (Sequential
    Halving), -inf elsewhere. With the schedule's visit counts the top-m actions by
    ``g + logits`` are the ones sampled without replacement by the Gumbel-top-k trick."""
    score = np.maximum(LOW_LOGIT, gumbel + logits + completed)
    allowed = legal & (visits == considered_visit[:, None])
    return np.where(allowed, score, -np.inf)


def improved_policy(logits: np.ndarray, completed: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """float32[B, A]: softmax(logits + sigma(completed Q)) over the legal actions, the
    policy target of Gumbel AlphaZero (0 on illegal actions)."""
    z = np.where(legal, logits + completed, -np.inf)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


@njit(cache=True)
def interior_choice(prior, completed, visits, legal) -> int:
    """The paper's deterministic selection below the root (its eq. 14): the legal action
    maximising ``pi'(a) - N(a) / (1 + sum_b N(b))``, where ``pi' = softmax(log prior +
    sigma(completed Q))`` is the node's improved policy: visits follow pi' as they grow.
    Ties go to the lowest action. ``prior`` [A] probabilities, ``completed`` [A] as
    :func:`completed_q_row` gives them, ``visits`` [A], ``legal`` [A]. (pi' is computed
    as prior * exp(sigma - max sigma), normalised: the same softmax, without logarithms.)"""
    A = prior.shape[0]
    top = -np.inf
    total = 0
    for a in range(A):
        total += visits[a]
        if legal[a] and prior[a] > 0 and completed[a] > top:
            top = completed[a]
    norm = 0.0
    for a in range(A):
        if legal[a] and prior[a] > 0:
            norm += prior[a] * math.exp(completed[a] - top)
    best, best_score = -1, -np.inf
    for a in range(A):
        if legal[a]:
            p = prior[a] * math.exp(completed[a] - top) / norm if prior[a] > 0 else 0.0
            score = p - visits[a] / (1.0 + total)
            if score > best_score:
                best, best_score = a, score
    return best


# ----------------------------------------------------------------- the search


class GumbelParams(NamedTuple):
    """What the Gumbel rules read besides the tree."""

    value_scale: float  # c_scale
    maxvisit_init: float  # c_visit
    mixed_value: bool
    # Per tree: the root's Gumbel noise [A], its masked logits [A], its edges' visits
    # before this search [A] (a reused tree's; Sequential Halving shares out the new
    # ones), the root's visits before it [1], and the visit count Sequential Halving
    # considers at each simulation [S].
    per_tree: np.ndarray  # float64[B, 3 A + 1 + S]
    # Scratch rows the rules fill for one node at a time (the walk visits trees in turn):
    # without them each step of a walk would allocate three arrays.
    q: np.ndarray  # float64[A]: the node's edge values
    visits: np.ndarray  # int64[A]: its edge visit counts
    completed: np.ndarray  # float64[A]: its transformed completed Q-values


@njit(cache=True)
def _completed(tree, params, b, node):
    """(completed and transformed Q [A], visits [A]) of ``node`` of tree ``b``, in the
    scratch rows of ``params`` (valid until the next call)."""
    A = tree.prior.shape[2]
    q, visits, out = params.q, params.visits, params.completed
    for a in range(A):
        child = tree.children[b, node, a]
        if child >= 0:
            visits[a] = tree.visits[b, child]
            q[a] = tree.reward[b, child] - tree.value_sum[b, child] / visits[a]
        else:
            visits[a], q[a] = 0, 0.0
    completed_q_row(q, visits, tree.prior[b, node], tree.raw_value[b, node], params.value_scale,
                    params.maxvisit_init, out, params.mixed_value)
    return out, visits


@njit(cache=True)
def gumbel_root(tree, params, b, node, depth):
    """The root's rule: among the legal actions with the visit count Sequential Halving
    considers now (counting this search's visits only), the one maximising ``g(a) +
    logits(a) + sigma(completed Q(a))`` (Q completed from all the visits, reused ones too)."""
    A = tree.prior.shape[2]
    completed, visits = _completed(tree, params, b, 0)
    row = params.per_tree[b]
    k = tree.visits[b, 0] - int(row[3 * A])  # simulation k of this search
    considered = row[3 * A + 1 + k]
    best, best_score = -1, -np.inf
    for a in range(A):
        if tree.legal[b, 0, a] and visits[a] - row[2 * A + a] == considered:
            score = max(LOW_LOGIT, row[a] + row[A + a] + completed[a])
            if score > best_score:
                best, best_score = a, score
    return best


@njit(cache=True)
def gumbel_interior(tree, params, b, node, depth):
    """The interior rule: :func:`interior_choice` on the node's completed Q-values. A node
    visited once has no visited edge: its completed values are all equal (the transform
    makes them 0), so the choice is its most probable legal action, found directly."""
    if tree.visits[b, node] == 1:
        best, best_p = -1, -1.0
        for a in range(tree.prior.shape[2]):
            if tree.legal[b, node, a] and tree.prior[b, node, a] > best_p:
                best, best_p = a, tree.prior[b, node, a]
        return best
    completed, visits = _completed(tree, params, b, node)
    return interior_choice(tree.prior[b, node], completed, visits, tree.legal[b, node])


class GumbelMCTS:
    """Gumbel AlphaZero's search over B trees (the paper's Algorithm 2 with its
    deterministic interior selection, as mctx's ``gumbel_muzero_policy``): Gumbel-top-m
    sampling at the root, Sequential Halving over the ``simulations`` budget, and the PUCT
    search's tree, expansion and backup (``search.mcts``, with these two rules). The
    result's ``policy`` is the improved policy softmax(logits + sigma(completed Q)), the
    training target; its ``action`` is the Sequential Halving winner (among the most
    visited root actions, the best score). No Dirichlet noise and no temperature: the
    Gumbel noise explores (``GumbelConfig.gumbel_scale=0`` for deterministic play)."""

    def __init__(self, game, config: MCTSConfig, gumbel: GumbelConfig = GumbelConfig()):
        if config.noise_fraction:
            config = replace(config, noise_fraction=0.0)  # the Gumbel noise explores instead
        self.game, self.config, self.gumbel = game, config, gumbel
        self._mcts = MCTS(game, config, root_rule=gumbel_root, interior_rule=gumbel_interior)

    def search(self, state, evaluate, rng, *, reuse=None, gumbel=None) -> SearchResult:
        """One search from each of the B root states (none terminal), with one Generator.
        ``reuse``: a ``search.reuse.TreeReuse`` (as ``MCTS.search``'s): a root found there
        starts from its kept subtree, the Sequential Halving of this search's simulations
        running over the visits it adds (the paper has no tree reuse; this keeps its
        schedule for the new budget while the completed Q-values use every visit).
        ``gumbel``: the roots' standard Gumbel draws [B, A] to use (scaled by
        ``gumbel_scale`` as drawn ones are) instead of drawing them from ``rng``: given
        noise, as the tests against mctx feed it its own."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError("GumbelMCTS.search: rng must be one numpy Generator")
        mcts, A, simulations = self._mcts, self.game.num_actions, self.config.simulations
        tree, store, evaluations = mcts._planted(state, evaluate, rng, None, reuse)
        B = tree.count.shape[0]
        before = root_edge_visits(tree)  # [B, A]: a reused root's, 0 for a fresh one
        legal = tree.legal[:, 0].copy()
        logits = masked_logits(tree.prior[:, 0], legal)
        if gumbel is None:
            gumbel = rng.gumbel(size=(B, A))
        elif np.shape(gumbel) != (B, A):
            raise ValueError(f"GumbelMCTS.search: gumbel must have shape ({B}, {A}), got {np.shape(gumbel)}")
        gumbel = self.gumbel.gumbel_scale * np.asarray(gumbel, np.float64)
        considered = np.minimum(self.gumbel.max_considered, legal.sum(axis=1))  # [B]
        schedule = considered_visit_table(self.gumbel.max_considered, simulations)[considered]  # [B, S]
        params = GumbelParams(float(self.gumbel.value_scale), float(self.gumbel.maxvisit_init),
                              bool(self.gumbel.mixed_value),
                              np.concatenate([gumbel, logits, before, tree.visits[:, :1], schedule], axis=1),
                              np.zeros(A), np.zeros(A, np.int64), np.zeros(A))
        evaluations += mcts._simulate(tree, store, evaluate, params)
        visits = root_edge_visits(tree)
        new = visits - before
        completed = np.stack([_completed(tree, params, b, 0)[0].copy() for b in range(B)])
        action = root_scores(gumbel, logits, completed, new, new.max(axis=1), legal).argmax(axis=1).astype(np.int64)
        policy = improved_policy(logits, completed, legal)
        root_value = (tree.value_sum[:, 0] / tree.visits[:, 0]).astype(np.float32)
        if reuse is not None:
            reuse.keep(tree, store, action)
        return SearchResult(visits, policy, action, root_value, evaluations)
