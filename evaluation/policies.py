"""Policies and value functions for evaluation, behind two plain callables:

    choose(states) -> int64[B]      a move for each live state (a policy)
    value(states)  -> float32[B]    a value for the player to move

so the metrics take any of: the greedy one-step policy of a value network (AVI's
G(V)), the argmax of a policy head, MCTS (``search.mcts``) or minimax over a value
network (``search.minimax``). Adapters here; the search package is imported lazily.

Compute: :class:`NetworkModel` counts the network evaluations it performs
(samples x ``learner.networks.forward_cost``, a symmetrized network evaluates every
image), the inference term of the paper's proxy ``N_forward + 3 N_backward``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evaluation.exact import greedy_q
from games import Game
from learner.learner import ValueFunction

Choose = Callable[[object], np.ndarray]  # state batch B -> int64[B]
Value = Callable[[object], np.ndarray]  # state batch B -> float32[B]


class NetworkModel(ValueFunction):
    """A network of ``learner.networks`` built from its config and numpy weights, in
    eval mode without autograd, evaluated in chunks of ``max_batch`` samples: the
    actors' ``ValueFunction``, answering on game states, with its policy head too."""

    def __init__(self, game: Game, net_config, weights: dict[str, np.ndarray] | None = None, *,
                 max_batch: int = 16384, device="cpu"):
        super().__init__(game, net_config, max_batch=max_batch, device=device)
        self.cost = self._cost  # network evaluations per sample (symmetric images counted)
        if weights is not None:
            self.set_weights(weights)

    @property
    def evaluations(self) -> int:
        """Network evaluations (samples x images) since construction."""
        return self.samples_forward

    def set_weights(self, weights: dict[str, np.ndarray], version: int = 0) -> None:
        super().set_weights(weights, version)

    @property
    def has_policy(self) -> bool:
        return bool(self.net_config.policy_head)

    def value_obs(self, obs: np.ndarray) -> np.ndarray:
        """float32[N] values of encodings ``obs`` float32[N, *obs_shape]."""
        return self(obs)

    def value(self, states) -> np.ndarray:
        return self.value_obs(self.game.encode(states))

    def logits(self, states) -> np.ndarray:
        if not self.has_policy:
            raise ValueError(f"{self.game.name}: this network has no policy head "
                             f"(net_config.policy_head is False); use the greedy value policy")
        return self.forward(self.game.encode(states), logits=True)[0]

    def evaluate(self, states) -> tuple[np.ndarray, np.ndarray]:
        """The search's evaluator: (logits [N, A], values [N] clipped to [-1, 1]);
        uniform logits without a policy head."""
        logits, values = self.forward(self.game.encode(states), logits=True)
        if logits is None:
            logits = np.zeros((len(values), self.game.num_actions), np.float32)
        return logits, np.clip(values, -1.0, 1.0)


def state_value(game: Game, value_obs: Callable[[np.ndarray], np.ndarray]) -> Value:
    """A value of states from a value of encodings (``ValueFunction``, ``NetworkModel.value_obs``)."""
    return lambda states: np.asarray(value_obs(game.encode(states)), np.float32)


def greedy_policy(game: Game, value_obs: Callable[[np.ndarray], np.ndarray], gamma: float = 1.0) -> Choose:
    """AVI's G(V): argmax_a r(s, a) - gamma V(f(s, a)), one batched network call over
    every live child; ties go to the lowest action."""
    return lambda states: greedy_q(game, states, value_obs, gamma).argmax(axis=1).astype(np.int64)


def policy_head_policy(game: Game, model: NetworkModel) -> Choose:
    """argmax of the policy head's logits over the legal moves."""
    if not model.has_policy:
        raise ValueError(f"{game.name}: the network has no policy head; the policy-head policy needs one")

    def choose(states):
        logits = np.where(game.legal(states), model.logits(states), -np.inf)
        return logits.argmax(axis=1).astype(np.int64)

    return choose


def mcts_policy(game: Game, evaluate, *, simulations: int = 64, c_puct: float = 3.0, seed: int = 0) -> Choose:
    """``search.mcts.MCTS`` without root noise, playing the most visited move;
    ``evaluate(states) -> (logits, values)`` is e.g. :meth:`NetworkModel.evaluate`."""
    from search.mcts import MCTS, MCTSConfig

    mcts = MCTS(game, MCTSConfig(simulations=simulations, c_puct=c_puct, noise_fraction=0.0, temperature=0.0))
    rng = np.random.default_rng(seed)
    return lambda states: np.asarray(mcts.search(states, evaluate, rng).action, np.int64)


def minimax_policy(game: Game, value_obs, *, depth: int = 2, gamma: float = 1.0, seed: int = 0) -> Choose:
    """``search.minimax.minimax_actions`` to ``depth`` plies over a value of encodings."""
    from search.minimax import minimax_actions

    rng = np.random.default_rng(seed)
    return lambda states: minimax_actions(game, states, value_obs, depth, rng, gamma)


def oracle_policy(oracle) -> Choose:
    return oracle.choose
