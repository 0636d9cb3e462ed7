"""Depth-limited negamax over a value function, full width and batched.

``minimax(game, state, value_fn, depth)`` expands every root ``depth`` plies deep with
``game.expand``, one call per level over all the live positions of that level, then
evaluates every position that is still live at the last level with ONE ``value_fn``
call, and backs up level by level:

    q(s, a) = r(s, a) - gamma * V(s')      (0 instead of V(s') when s' ends the game)
    V(s)    = max over legal a of q(s, a)  (at depth: V(s) = value_fn(encode(s)))

with ``r`` for the player who moved and every value for the player to move (negamax).
Alpha-beta pruning to the same depth returns exactly the same root value (pruning only
skips moves that cannot change it), and the same q of each root move when each is
searched with a full window; this search visits all ``A ** depth`` leaves per root
instead, which is what one large batched value call wants. Memory grows as
``B * A ** depth`` states: fine for Connect Four to depth 3 or 4, not for Go beyond 2.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from games import Game, take

ValueFn = Callable[[np.ndarray], np.ndarray]  # float32[N, *obs_shape] -> float32[N], for the mover


def minimax(game: Game, state, value_fn: ValueFn, depth: int, gamma: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(q float32[B, A] with -inf for illegal actions, value float32[B])`` of each root
    of ``state`` (none may be over) by negamax to ``depth`` plies over ``value_fn``."""
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"minimax: depth must be an integer >= 1, got {depth!r}")
    if not 0.0 < gamma <= 1.0:
        raise ValueError(f"minimax: gamma must be in (0, 1], got {gamma}")
    over = np.asarray(game.terminal(state), bool)
    if over.any():
        raise ValueError(f"minimax: root state {int(np.flatnonzero(over)[0])} (of {len(over)}) is over; "
                         f"it has no moves to score")
    A = game.num_actions
    levels = []  # per ply: (expansion of that level's positions, live children mask [n * A])
    frontier = state
    for _ in range(depth):
        exp = game.expand(frontier)  # children of n positions: n * A rows
        live = (exp.legal & ~exp.done).reshape(-1)  # children whose game goes on
        levels.append((exp, live))
        frontier = take(exp.children, live)
    # ONE value call for every live position at the depth limit.
    n_leaves = int(levels[-1][1].sum())
    values = np.zeros(0, np.float32)
    if n_leaves:
        values = np.asarray(value_fn(game.encode(frontier)), np.float32)
        if values.shape != (n_leaves,):
            raise ValueError(f"minimax: value_fn returned shape {values.shape} for {n_leaves} positions; "
                             f"expected ({n_leaves},)")
    for exp, live in reversed(levels):
        child_v = np.zeros(live.shape[0], np.float32)  # [n * A], V of each live child
        child_v[live] = values
        child_v = child_v.reshape(-1, A)
        q = np.where(exp.legal, exp.reward - gamma * np.where(exp.done, 0.0, child_v), -np.inf)
        values = q.max(axis=1).astype(np.float32)  # [n], V of this level's positions
    return q.astype(np.float32), values


def minimax_actions(game: Game, state, value_fn: ValueFn, depth: int, rng: np.random.Generator,
                    gamma: float = 1.0) -> np.ndarray:
    """int64[B]: per root a move of maximal ``minimax`` q, ties broken uniformly at random."""
    q, _ = minimax(game, state, value_fn, depth, gamma)
    best = q == q.max(axis=1, keepdims=True)  # [B, A]
    cdf = np.cumsum(best, axis=1)
    k = (rng.random(len(q)) * cdf[:, -1]).astype(np.int64)  # which of the tied moves
    return np.argmax(cdf > k[:, None], axis=1).astype(np.int64)
