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

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

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

    def __post_init__(self):
        if self.max_considered < 1:
            raise ValueError(f"GumbelConfig.max_considered must be >= 1, got {self.max_considered}")
        for name in ("value_scale", "maxvisit_init", "gumbel_scale"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"GumbelConfig.{name} must be a finite number >= 0, got {value!r}")


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
def completed_q_row(q, visits, prior, raw_value, value_scale, maxvisit_init, out):
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
    mixed = (raw_value + total * weighted_q) / (total + 1)
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
                        float(raw_value[b]), config.value_scale, config.maxvisit_init, out[b])
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
    :func:`completed_q_row` gives them, ``visits`` [A], ``legal`` [A]."""
    A = prior.shape[0]
    top = -np.inf
    for a in range(A):
        if legal[a] and prior[a] > 0:
            top = max(top, np.log(prior[a]) + completed[a])
    norm = 0.0
    total = 0
    for a in range(A):
        total += visits[a]
        if legal[a] and prior[a] > 0:
            norm += np.exp(np.log(prior[a]) + completed[a] - top)
    best, best_score = -1, -np.inf
    for a in range(A):
        if not legal[a]:
            continue
        p = np.exp(np.log(prior[a]) + completed[a] - top) / norm if prior[a] > 0 else 0.0
        score = p - visits[a] / (1.0 + total)
        if score > best_score:
            best, best_score = a, score
    return best
