"""Policies and value functions for evaluation, behind two plain callables:

    choose(states) -> int64[B]      a move for each live state (a policy)
    value(states)  -> float32[B]    a value for the player to move

so the metrics take any of: the greedy one-step policy of a value network (AVI's
G(V)), the argmax of a policy head, MCTS (``search.mcts``) or minimax over a value
network (``search.minimax``). MCTS may take its prior from a second network and its
leaf values from the first: the AVI paper's cross-inference (section 4.3, Figure 2), a
diagnostic that keeps AlphaZero's policy and search fixed and swaps the value. The
network itself is ``evaluation.network.NetworkModel``; this module needs no torch, so
that a configuration check can read ``POLICIES``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from evaluation.exact import greedy_q
from games import Game
from search.gumbel import GumbelConfig, GumbelMCTS
from search.mcts import MCTS, MCTSConfig
from search.minimax import minimax_actions
from search.reuse import TreeReuse

# The evaluation policies by name; "auto" is greedy for a value network, the policy
# head's argmax for a policy-value one.
POLICIES = ("auto", "greedy", "policy-head", "mcts", "gumbel", "minimax")

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


def _search_policy(search, evaluate, seed: int, reuse: bool) -> Choose:
    """``choose`` playing ``search``'s move; with ``reuse`` each search starts from the
    subtree the previous moves' searches kept of its position (``search.reuse``), and the
    ``TreeReuse`` is ``choose.reuse`` (None without)."""
    rng = np.random.default_rng(seed)
    trees = TreeReuse() if reuse else None

    def choose(states):
        return np.asarray(search.search(states, evaluate, rng, reuse=trees).action, np.int64)

    choose.reuse = trees
    return choose


def mcts_policy(game: Game, evaluate, *, simulations: int = 64, c_puct: float = 3.0, seed: int = 0,
                reuse: bool = False) -> Choose:
    """``search.mcts.MCTS`` without root noise, playing the most visited move;
    ``evaluate(states) -> (logits, values)`` is e.g. ``NetworkModel.evaluate``. ``reuse``:
    tree reuse between moves (``search.reuse``); off by default, so that the move is a
    function of the position alone and a suite's results do not depend on its batching."""
    mcts = MCTS(game, MCTSConfig(simulations=simulations, c_puct=c_puct, noise_fraction=0.0, temperature=0.0))
    return _search_policy(mcts, evaluate, seed, reuse)


def gumbel_policy(game: Game, evaluate, *, simulations: int = 64, seed: int = 0, reuse: bool = False) -> Choose:
    """Gumbel AlphaZero's search (``search.gumbel``) without Gumbel noise (the paper's
    setting for evaluation), playing its Sequential Halving winner; ``reuse`` as
    :func:`mcts_policy`'s."""
    search = GumbelMCTS(game, MCTSConfig(simulations=simulations), GumbelConfig(gumbel_scale=0.0))
    return _search_policy(search, evaluate, seed, reuse)


def cross_evaluator(value_model, prior_model):
    """The search's evaluator with the prior of ``prior_model`` (its policy head's
    logits) and the leaf values of ``value_model`` (clipped to [-1, 1]): two backbone
    evaluations per position, both counted by their models."""
    if not prior_model.has_policy:
        raise ValueError("cross-inference: the prior network has no policy head (an AlphaZero or AZAL "
                         "checkpoint gives the prior; the value may come from any network)")

    def evaluate(states):
        return prior_model.logits(states), np.clip(value_model.value(states), -1.0, 1.0)

    return evaluate


def minimax_policy(game: Game, value_obs, *, depth: int = 2, gamma: float = 1.0, seed: int = 0) -> Choose:
    """``search.minimax.minimax_actions`` to ``depth`` plies over a value of encodings."""
    rng = np.random.default_rng(seed)
    return lambda states: minimax_actions(game, states, value_obs, depth, rng, gamma)


class PolicySpec(NamedTuple):
    """An evaluation policy by name and settings (the choice of ``SuiteRunner``), built on
    a model with :meth:`build`; plain data, so that it travels to Ray tasks."""

    policy: str  # one of POLICIES but auto (resolved by the caller)
    gamma: float = 1.0
    simulations: int = 64
    depth: int = 2
    seed: int = 0
    reuse: bool = False  # tree reuse between moves for mcts and gumbel (search.reuse); off: reproducible suites

    def build(self, game: Game, model, prior=None) -> Choose:
        """The policy on ``model`` (an ``evaluation.network.NetworkModel``); ``prior``, a
        second one, gives MCTS its prior while ``model`` gives the leaf values."""
        if prior is not None and self.policy != "mcts":
            raise ValueError(f"a prior network is used by MCTS only, not by the {self.policy!r} policy")
        if self.policy == "greedy":
            return greedy_policy(game, model.value_obs, self.gamma)
        if self.policy == "policy-head":
            return policy_head_policy(game, model)
        if self.policy == "mcts":
            evaluate = model.evaluate if prior is None else cross_evaluator(model, prior)
            return mcts_policy(game, evaluate, simulations=self.simulations, seed=self.seed, reuse=self.reuse)
        if self.policy == "gumbel":
            return gumbel_policy(game, model.evaluate, simulations=self.simulations, seed=self.seed,
                                 reuse=self.reuse)
        if self.policy == "minimax":
            return minimax_policy(game, model.value_obs, depth=self.depth, gamma=self.gamma, seed=self.seed)
        raise ValueError(f"PolicySpec: unknown policy {self.policy!r}; known: {', '.join(POLICIES[1:])}")


class NetworkPolicy(NamedTuple):
    """``()`` -> the policy ``spec`` of a network (``net_config``, ``weights``) on the game
    ``game_name(**game_params)``, built where it is called: a Ray task's own copy of an
    agent (``evaluation.engine_suites``), since the network is not shipped, its weights are."""

    game_name: str
    game_params: dict
    net_config: object
    weights: dict
    spec: PolicySpec
    inference_dtype: str = "fp32"

    def __call__(self) -> Choose:
        import games
        from evaluation.network import NetworkModel  # torch: only where the policy runs

        game = games.make(self.game_name, **self.game_params)
        model = NetworkModel(game, self.net_config, self.weights, inference_dtype=self.inference_dtype)
        return self.spec.build(game, model)
