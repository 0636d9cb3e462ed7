"""Policies and value functions for evaluation, behind two plain callables:

    choose(states) -> int64[B]      a move for each live state (a policy)
    value(states)  -> float32[B]    a value for the player to move

so the metrics take any of: the greedy one-step policy of a value network (AVI's
G(V)), the argmax of a policy head, MCTS (``search.mcts``) or minimax over a value
network (``search.minimax``). The network itself is ``evaluation.network.NetworkModel``;
this module needs no torch, so that a configuration check can read ``POLICIES``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evaluation.exact import greedy_q
from games import Game
from search.mcts import MCTS, MCTSConfig
from search.minimax import minimax_actions

# The evaluation policies by name; "auto" is greedy for a value network, the policy
# head's argmax for a policy-value one.
POLICIES = ("auto", "greedy", "policy-head", "mcts", "minimax")

Choose = Callable[[object], np.ndarray]  # state batch B -> int64[B]
Value = Callable[[object], np.ndarray]  # state batch B -> float32[B]


def state_value(game: Game, value_obs: Callable[[np.ndarray], np.ndarray]) -> Value:
    """A value of states from a value of encodings (``learner.learner.ValueFunction``,
    ``evaluation.network.NetworkModel.value_obs``)."""
    return lambda states: np.asarray(value_obs(game.encode(states)), np.float32)


def greedy_policy(game: Game, value_obs: Callable[[np.ndarray], np.ndarray], gamma: float = 1.0) -> Choose:
    """AVI's G(V): argmax_a r(s, a) - gamma V(f(s, a)), one batched network call over
    every live child; ties go to the lowest action."""
    return lambda states: greedy_q(game, states, value_obs, gamma).argmax(axis=1).astype(np.int64)


def policy_head_policy(game: Game, model) -> Choose:
    """argmax of the policy head's logits over the legal moves (``model``: an
    ``evaluation.network.NetworkModel``)."""
    if not model.has_policy:
        raise ValueError(f"{game.name}: the network has no policy head; the policy-head policy needs one")

    def choose(states):
        logits = np.where(game.legal(states), model.logits(states), -np.inf)
        return logits.argmax(axis=1).astype(np.int64)

    return choose


def mcts_policy(game: Game, evaluate, *, simulations: int = 64, c_puct: float = 3.0, seed: int = 0) -> Choose:
    """``search.mcts.MCTS`` without root noise, playing the most visited move;
    ``evaluate(states) -> (logits, values)`` is e.g. ``NetworkModel.evaluate``."""
    mcts = MCTS(game, MCTSConfig(simulations=simulations, c_puct=c_puct, noise_fraction=0.0, temperature=0.0))
    rng = np.random.default_rng(seed)
    return lambda states: np.asarray(mcts.search(states, evaluate, rng).action, np.int64)


def minimax_policy(game: Game, value_obs, *, depth: int = 2, gamma: float = 1.0, seed: int = 0) -> Choose:
    """``search.minimax.minimax_actions`` to ``depth`` plies over a value of encodings."""
    rng = np.random.default_rng(seed)
    return lambda states: minimax_actions(game, states, value_obs, depth, rng, gamma)
