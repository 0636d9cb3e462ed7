"""Leaf evaluators for the search: ``evaluate(states) -> (logits, values)``.

An evaluator takes a game state of batch N (none of them over) and returns
``logits float32[N, A]`` (the search takes a softmax over the legal actions; logits of
illegal actions are ignored) and ``values float32[N]`` in [-1, 1] for the player to
move in each state. The search calls it once per simulation for all its trees.

- ``inference.network.NetworkEvaluator``: a policy-value network (AlphaZero), in the
  inference layer with torch, which the search does not need;
- :class:`UniformEvaluator`: uniform priors, values from any function of the states
  (zero by default): the search's own cost, or a search over exact values in tests;
- :class:`RolloutEvaluator`: uniform priors, values by random playouts (classic MCTS);
- :class:`CrossEvaluator`: priors of one evaluator and values of another, the AVI
  paper's cross-inference (Sections 4.3 and 5.2: MiniZero's prior, AVI's value).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from games import Game, random_legal_actions, repeat, step_live, take
from games.base import State, batch_size

Evaluator = Callable[[State], tuple[np.ndarray, np.ndarray]]


def check_evaluation(out, n: int, num_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """``(logits float32[n, A], values float32[n])`` from an evaluator's answer, or a
    ValueError that says what is wrong with it."""
    if not isinstance(out, tuple) or len(out) != 2:
        raise ValueError(f"evaluator must return a tuple (logits [N, A], values [N]), got {type(out).__name__}")
    logits, values = np.asarray(out[0]), np.asarray(out[1])
    if logits.shape != (n, num_actions):
        raise ValueError(f"evaluator returned logits of shape {logits.shape} for {n} states; "
                         f"expected ({n}, {num_actions})")
    if values.shape != (n,):
        raise ValueError(f"evaluator returned values of shape {values.shape} for {n} states; expected ({n},)")
    values = values.astype(np.float32, copy=False)
    if not np.isfinite(values).all():
        raise ValueError(f"evaluator returned non-finite values (first at row "
                         f"{int(np.flatnonzero(~np.isfinite(values))[0])})")
    return logits.astype(np.float32, copy=False), values


class UniformEvaluator:
    """Zero logits (a uniform prior over the legal moves) and values from
    ``value_of(states) -> float32[N]`` for the player to move, or zeros without it."""

    def __init__(self, game: Game, value_of: Callable[[State], np.ndarray] | None = None):
        self.game, self.value_of = game, value_of

    def __call__(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        n = batch_size(states)
        logits = np.zeros((n, self.game.num_actions), np.float32)
        if self.value_of is None:
            return logits, np.zeros(n, np.float32)
        return logits, np.asarray(self.value_of(states), np.float32)


class RolloutEvaluator:
    """Zero logits, and as value the mean outcome of ``rollouts`` uniformly random
    playouts from each state, for its player to move. All N * rollouts playouts advance
    together, one batched ``step`` per ply; the draws come from ``np.random.default_rng(seed)``."""

    def __init__(self, game: Game, rollouts: int = 1, seed: int = 0):
        if rollouts < 1:
            raise ValueError(f"RolloutEvaluator: rollouts must be >= 1, got {rollouts}")
        self.game, self.rollouts = game, int(rollouts)
        self.rng = np.random.default_rng(seed)

    def __call__(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        game, R = self.game, self.rollouts
        n = batch_size(states)
        play = repeat(states, R)  # rows i*R .. i*R+R-1 play out state i
        outcome = np.zeros(n * R, np.float32)  # for the player to move in the start state
        sign = np.ones(n * R, np.float32)  # +1 while that player is the one to move
        live = ~game.terminal(play)
        while live.any():
            # Draws for the live playouts only, unlike games.random_play: a playout that is
            # over costs no draw, so that a seed's rollouts do not depend on the others.
            actions = np.zeros(n * R, np.int64)
            actions[live] = random_legal_actions(game.legal(take(play, live)), self.rng)
            play, reward, done = step_live(game, play, actions, live, check=False)
            outcome += sign * reward  # reward is 0 where no move was played
            sign[live] = -sign[live]
            live &= ~done
        return (np.zeros((n, game.num_actions), np.float32),
                outcome.reshape(n, R).mean(axis=1).astype(np.float32))


class CrossEvaluator:
    """The logits of ``prior`` with the values of ``value`` (both evaluators, both called
    on every batch). Cross-inference with an AVI value function ``vf`` (a
    ``inference.network.ValueFunction``, which reads encodings):
    ``CrossEvaluator(network, UniformEvaluator(game, lambda s: vf(game.encode(s))))``."""

    def __init__(self, prior: Evaluator, value: Evaluator):
        self.prior, self.value = prior, value

    def __call__(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        logits, _ = self.prior(states)
        _, values = self.value(states)
        return logits, values
