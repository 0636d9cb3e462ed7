"""Exact values for evaluation without an external oracle, and the value metrics.

Two sources of ground truth live here:
- games small enough to enumerate (tic-tac-toe, tiny Chomp boards): every reachable
  position is found with ``expand`` and solved by negamax from the last ply back;
- F-Games, whose values are known by construction (states sampled by random play).

Metrics follow the AVI paper: value MAE (eq. 6) and the regret of the one-step greedy
policy of a value function (eq. 7).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

import games
from games import Game, take

ValueFn = Callable[[np.ndarray], np.ndarray]  # float32[N, *obs_shape] -> float32[N]


class LabelledStates(NamedTuple):
    """Non-terminal states with their exact values and exact action values."""

    states: tuple  # a game state of batch N
    v_star: np.ndarray  # float32[N], value for the player to move
    q_star: np.ndarray  # float32[N, A], r(s,a) - gamma V*(f(s,a)); -inf where illegal


def _keys(state) -> list[bytes]:
    """One bytes key per row: the row's fields, byte for byte (equal states, equal keys)."""
    n = len(state[0])
    if n == 0:
        return []
    rows = np.concatenate([np.ascontiguousarray(f).reshape(n, -1).view(np.uint8) for f in state], axis=1)
    return [r.tobytes() for r in rows]


def enumerate_and_solve(game: Game, gamma: float = 1.0, max_states: int = 2_000_000) -> LabelledStates:
    """Every reachable non-terminal position of a small game, solved exactly."""
    A = game.num_actions
    levels, seen = [], set()
    frontier = game.init(1)
    while len(frontier[0]):
        levels.append(frontier)
        exp = game.expand(frontier)
        live = (exp.legal & ~exp.done).reshape(-1)
        children = take(exp.children, live)
        fresh = []
        for i, key in enumerate(_keys(children)):
            if key not in seen:
                seen.add(key)
                fresh.append(i)
        if len(seen) > max_states:
            raise ValueError(f"{game!r} has more than {max_states} positions: too large to enumerate")
        frontier = take(children, np.array(fresh, dtype=np.int64))
    value_of: dict[bytes, float] = {}
    solved = []
    for level in reversed(levels):
        exp = game.expand(level)
        child_keys = _keys(exp.children)
        child_v = np.array([value_of.get(k, 0.0) for k in child_keys], np.float32).reshape(-1, A)
        q = np.where(exp.legal, exp.reward - gamma * np.where(exp.done, 0.0, child_v), -np.inf)
        v = q.max(axis=1).astype(np.float32)
        value_of.update(zip(_keys(level), v.tolist()))
        solved.append((level, v, q.astype(np.float32)))
    solved.reverse()
    return LabelledStates(games.concat([s for s, _, _ in solved]),
                          np.concatenate([v for _, v, _ in solved]),
                          np.concatenate([q for _, _, q in solved]))


def sample_random_play_states(game: Game, count: int = 4096, seed: int = 0):
    """``count`` distinct non-terminal states met by uniform random play (the papers'
    F-Game protocol), in the order they were first met."""
    rng = np.random.default_rng(seed)
    found: set[bytes] = set()
    pool = []
    fresh = game.init(256)
    state = fresh
    for _ in range(1000 * game.max_length):
        live = ~game.terminal(state)
        for i, key in enumerate(_keys(state)):
            if live[i] and key not in found and len(found) < count:
                found.add(key)
                pool.append(take(state, [i]))
        if len(found) >= count:
            break
        actions = games.random_legal_actions(game.legal(state), rng)
        state, _, done = game.step(state, actions, check=False)
        state = games.where(done, fresh, state)
    return games.concat(pool)


def label_states(game: Game, states, v_star: Callable) -> LabelledStates:
    """Exact labels (undiscounted) from ``v_star(states) -> [N]``, the value of live
    states for the player to move; action values follow through one ``expand``."""
    exp = game.expand(states)
    A = game.num_actions
    live = (exp.legal & ~exp.done).reshape(-1)
    child_v = np.zeros(live.shape, np.float32)
    if live.any():
        child_v[live] = v_star(take(exp.children, live))
    q = np.where(exp.legal, exp.reward - np.where(exp.done, 0.0, child_v.reshape(-1, A)), -np.inf)
    return LabelledStates(states, np.asarray(v_star(states), np.float32), q.astype(np.float32))


def chomp_values(game: Game):
    """V* of Chomp positions from the Grundy table: the mover wins exactly when the
    Grundy number is not 0 (normal play, no draws)."""
    from oracle_service.chomp_grundy import ChompTable

    table = ChompTable(game.params["rows"], game.params["cols"])
    return lambda states: np.where(table.grundy_batch(states.profile) != 0, 1.0, -1.0).astype(np.float32)


def exact_labels(game: Game, gamma: float = 1.0) -> LabelledStates | None:
    """The built-in ground truth for ``game``, or None where it needs an oracle service.
    Games small enough are enumerated (any gamma); F-Games (values by construction) and
    Chomp (Grundy tables) are labelled on 4096 random-play states, undiscounted."""
    if game.name == "tictactoe" or (game.name == "chomp" and game.num_actions <= 20):
        return enumerate_and_solve(game, gamma)
    if gamma != 1.0:
        return None
    if game.name == "fgame":
        return label_states(game, sample_random_play_states(game), game.value)
    if game.name == "chomp":
        return label_states(game, sample_random_play_states(game), chomp_values(game))
    return None


def greedy_q(game: Game, states, value_fn: ValueFn, gamma: float = 1.0) -> np.ndarray:
    """q(s, a) = r(s, a) - gamma V(f(s, a)) for every action; -inf where illegal."""
    exp = game.expand(states)
    A = game.num_actions
    needs_value = (exp.legal & ~exp.done).reshape(-1)
    child_v = np.zeros(needs_value.shape, np.float32)
    if needs_value.any():
        child_v[needs_value] = value_fn(game.encode(take(exp.children, needs_value)))
    q = exp.reward - gamma * child_v.reshape(-1, A)
    return np.where(exp.legal, q, -np.inf).astype(np.float32)


def value_metrics(game: Game, labels: LabelledStates, value_fn: ValueFn, gamma: float = 1.0) -> dict:
    """Value MAE (eq. 6) and greedy-policy regret (eq. 7) on labelled states."""
    v = value_fn(game.encode(labels.states))
    q = greedy_q(game, labels.states, value_fn, gamma)
    chosen = q.argmax(axis=1)
    regret = labels.v_star - labels.q_star[np.arange(len(chosen)), chosen]
    return {
        "value_mae": float(np.abs(v - labels.v_star).mean()),
        "policy_regret": float(regret.mean()),
        "optimal_move_rate": float((regret <= 1e-6).mean()),
        "eval_states": int(len(v)),
    }
