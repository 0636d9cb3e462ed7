"""Exact values for evaluation without an external oracle, and the value metrics of
training.

Two sources of ground truth live here:
- games small enough to enumerate (tic-tac-toe, tiny Chomp boards): every reachable
  position is found with ``expand`` and solved by negamax from the last ply back;
- F-Games, whose values are known by construction, and Chomp, from Grundy tables
  (states sampled by random play).

Metrics follow the AVI paper: value MAE (eq. 6) and the regret of the one-step greedy
policy of a value function (eq. 7), computed by ``evaluation.metrics``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import games
from evaluation.labels import LabelledStates, chomp_values, label_states
from evaluation.metrics import state_metrics
from games import Game, GameTable, one_step_q, state_keys, take

ValueFn = Callable[[np.ndarray], np.ndarray]  # float32[N, *obs_shape] -> float32[N]


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
        for i, key in enumerate(state_keys(children)):
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
        child_v = np.array([value_of.get(k, 0.0) for k in state_keys(exp.children)], np.float32).reshape(-1, A)
        q = one_step_q(exp, child_v, gamma)
        v = q.max(axis=1).astype(np.float32)
        value_of.update(zip(state_keys(level), v.tolist()))
        solved.append((level, v, q))
    solved.reverse()
    return LabelledStates(games.concat([s for s, _, _ in solved]),
                          np.concatenate([v for _, v, _ in solved]),
                          np.concatenate([q for _, _, q in solved]))


def sample_random_play_states(game: Game, count: int = 4096, seed: int = 0):
    """``count`` distinct non-terminal states met by uniform random play (the papers'
    F-Game protocol), in the order they were first met. Finished games restart at once,
    so that the sample is the stream of states random play visits; the datasets'
    ``evaluation.builders.random_ply_move_lists`` instead takes one random ply per game."""
    rng = np.random.default_rng(seed)
    found: set[bytes] = set()
    pool = []
    fresh = game.init(256)
    state = fresh
    for _ in range(1000 * game.max_length):
        live = ~game.terminal(state)
        for i, key in enumerate(state_keys(state)):
            if live[i] and key not in found and len(found) < count:
                found.add(key)
                pool.append(take(state, [i]))
        if len(found) >= count:
            break
        actions = games.random_legal_actions(game.legal(state), rng)
        state, _, done = game.step(state, actions, check=False)
        state = games.where(done, fresh, state)
    return games.concat(pool)


def exact_labels(game: Game, gamma: float = 1.0) -> LabelledStates | None:
    """The built-in ground truth for ``game`` (its entry in EXACT_LABELS), or None where
    it needs an oracle service. Games small enough are enumerated (any gamma); F-Games
    (values by construction) and Chomp (Grundy tables) are labelled on 4096 random-play
    states, undiscounted."""
    build = EXACT_LABELS.get(game)
    return None if build is None else build(game, gamma)


# The games' built-in ground truths (EXACT_LABELS, below): (game, gamma) -> labels or None.

def enumerated_labels(game: Game, gamma: float = 1.0) -> LabelledStates:
    """Every state of a game small enough to enumerate, solved (any gamma)."""
    return enumerate_and_solve(game, gamma)


def fgame_labels(game: Game, gamma: float = 1.0) -> LabelledStates | None:
    """4096 random-play states with their values by construction (undiscounted only)."""
    return label_states(game, sample_random_play_states(game), game.value) if gamma == 1.0 else None


def chomp_labels(game: Game, gamma: float = 1.0) -> LabelledStates | None:
    """A board of at most 20 squares enumerated (any gamma); a larger one: 4096 random-play
    states labelled from the Grundy table (undiscounted only)."""
    if game.num_actions <= 20:
        return enumerate_and_solve(game, gamma)
    return label_states(game, sample_random_play_states(game), chomp_values(game)) if gamma == 1.0 else None


# The games whose ground truth is built in; the others' labels are the oracle's datasets.
EXACT_LABELS: GameTable[Callable[..., LabelledStates | None]] = GameTable("built-in exact labels", {
    "tictactoe": enumerated_labels, "chomp": chomp_labels, "fgame": fgame_labels})


def greedy_q(game: Game, states, value_fn: ValueFn, gamma: float = 1.0) -> np.ndarray:
    """float32[B, A]: q(s, a) = r(s, a) - gamma V(f(s, a)) for every action, V from
    ``value_fn`` on encodings; -inf where illegal."""
    exp = game.expand(states)
    needs_value = (exp.legal & ~exp.done).reshape(-1)
    child_v = np.zeros(needs_value.shape, np.float32)
    if needs_value.any():
        child_v[needs_value] = value_fn(game.encode(take(exp.children, needs_value)))
    return one_step_q(exp, child_v, gamma)


def value_metrics(game: Game, labels: LabelledStates, value_fn: ValueFn, gamma: float = 1.0) -> dict:
    """Value MAE (eq. 6), greedy-policy regret (eq. 7) and optimal-move rate on labelled
    states, through ``evaluation.metrics.state_metrics``; ``value_fn`` takes encodings."""
    m = state_metrics(labels, choose=lambda s: greedy_q(game, s, value_fn, gamma).argmax(axis=1),
                      value=lambda s: value_fn(game.encode(s)), batch=max(1, len(labels.v_star)))
    return {"value_mae": m["value_mae"], "policy_regret": m["policy_regret"],
            "optimal_move_rate": m["optimal_move_rate"], "eval_states": m["states"]}


def policy_head_metrics(game: Game, labels: LabelledStates, forward) -> dict:
    """Regret (eq. 7) and optimal-move rate of the policy head's most likely legal move on
    labelled states; ``forward(obs, logits=True)`` answers (logits float32[N, A], values)
    (``inference.network.ValueFunction.forward`` of a network with a policy head)."""
    def choose(states):
        logits, _ = forward(game.encode(states), logits=True)
        return np.where(game.legal(states), logits, -np.inf).argmax(axis=1)

    m = state_metrics(labels, choose=choose, batch=max(1, len(labels.v_star)))
    return {"policy_regret": m["policy_regret"], "optimal_move_rate": m["optimal_move_rate"]}
