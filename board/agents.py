"""The players the board seats: a checkpoint's network (greedy over its values, PUCT MCTS
or Gumbel AlphaZero's search), the exact oracle, or a uniformly random player.

Each answers ``think(state) -> (action, info)`` for a one-element state batch, ``info``
being what the page shows of its reasoning: the value of every child (``values``: AVI's
one-step lookahead r(s, a) - gamma V(f(s, a)), which ``evaluation.policies.greedy_policy``
maximises), or a search's ``prior`` and ``visits`` with its root value (and Gumbel's
improved ``policy``). A checkpoint becomes a
network as ``python -m launch evaluate`` makes it (``evaluation.checkpoints.read_checkpoint``,
``evaluation.network.NetworkModel``).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np

import games
from evaluation import policies as P
from evaluation.checkpoints import CheckpointMismatchError, read_checkpoint
from evaluation.exact import greedy_q
from evaluation.network import NetworkModel
from evaluation.oracles import Oracle
from games import Game
from learner.networks import NetworkConfig
from search.gumbel import GumbelConfig, GumbelMCTS
from search.mcts import MCTS, MCTSConfig
from search.reuse import TreeReuse

POLICIES = ("greedy", "mcts", "gumbel")
# The evaluation's MCTS player (evaluation.policies.mcts_policy), its exploration constant.
_C_PUCT = inspect.signature(P.mcts_policy).parameters["c_puct"].default


def _per_action(row: np.ndarray, legal: np.ndarray, digits: int = 4) -> dict:
    return {str(int(a)): round(float(row[a]), digits) for a in np.flatnonzero(legal)}


class NetworkAgent:
    """A checkpoint's network: ``policy`` greedy (one-step lookahead over its value), mcts
    (PUCT, ``simulations`` per move, no root noise, the most visited move) or gumbel
    (Gumbel AlphaZero's search without its noise, the Sequential Halving winner).
    ``reuse``: the searches start from the subtree kept of the position by the previous
    moves' searches (``search.reuse``; one ``TreeReuse`` for every session of the table,
    found by the position, so sessions and take-backs cannot mix them up)."""

    def __init__(self, game: Game, model: NetworkModel, *, gamma: float, policy: str, simulations: int,
                 name: str, seed: int = 0, reuse: bool = True):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if simulations < 1:
            raise ValueError(f"--simulations must be >= 1, got {simulations}")
        self.game, self.model, self.gamma, self.policy = game, model, gamma, policy
        self.name = f"{name} ({policy}{f', {simulations} simulations' if policy != 'greedy' else ''})"
        self.rng = np.random.default_rng(seed)
        self.search = None
        if policy == "mcts":
            self.search = MCTS(game, MCTSConfig(simulations=simulations, c_puct=_C_PUCT, noise_fraction=0.0,
                                                temperature=0.0))
        elif policy == "gumbel":
            self.search = GumbelMCTS(game, MCTSConfig(simulations=simulations), GumbelConfig(gumbel_scale=0.0))
        self.reuse = TreeReuse() if reuse and self.search is not None else None

    def choose(self):
        """Evaluation's player of this network and policy (``evaluation.policies``), as
        ``python -m launch evaluate --policy greedy|mcts|gumbel`` plays it (no tree reuse)."""
        if self.search is None:
            return P.greedy_policy(self.game, self.model.value_obs, self.gamma)
        simulations = self.search.config.simulations
        if self.policy == "gumbel":
            return P.gumbel_policy(self.game, self.model.evaluate, simulations=simulations, seed=0)
        return P.mcts_policy(self.game, self.model.evaluate, simulations=simulations, c_puct=_C_PUCT, seed=0)

    def think(self, state) -> tuple[int, dict]:
        legal = self.game.legal(state)[0]  # [A]
        if self.search is None:
            q = greedy_q(self.game, state, self.model.value_obs, self.gamma)[0]  # [A], -inf where illegal
            action = int(q.argmax())  # ties to the lowest action, as greedy_policy plays
            return action, {"kind": "values", "values": _per_action(q, legal)}
        logits, _ = self.model.evaluate(state)
        logits = np.where(legal, logits[0], -np.inf)
        prior = np.exp(logits - logits.max())
        prior /= prior.sum()
        result = self.search.search(state, self.model.evaluate, self.rng, reuse=self.reuse)
        # The page draws both searches as "mcts" (prior and visits); Gumbel adds its improved policy.
        info = {"kind": "mcts", "search": self.policy, "prior": _per_action(prior, legal),
                "visits": {k: int(v) for k, v in _per_action(result.visits[0], legal).items()},
                "root_value": round(float(result.root_value[0]), 4)}
        if self.policy == "gumbel":
            info["policy"] = _per_action(result.policy[0], legal)
        return int(result.action[0]), info


class OracleAgent:
    """The exact oracle as a player (its own preference among equal moves)."""

    def __init__(self, game: Game, oracle: Oracle):
        self.game, self.oracle, self.name = game, oracle, "the exact oracle"

    def think(self, state) -> tuple[int, dict]:
        a = self.oracle.analyze(state)
        legal = np.isfinite(a.q[0])
        values = a.score[0] if self.oracle.strong else a.q[0]
        return int(self.oracle.choose(state)[0]), {"kind": "oracle", "values": _per_action(values, legal)}


class RandomAgent:
    """Uniformly random legal moves (games without an oracle and no checkpoint)."""

    def __init__(self, game: Game, seed: int = 0):
        self.game, self.rng, self.name = game, np.random.default_rng(seed), "a uniformly random player"

    def think(self, state) -> tuple[int, dict]:
        return int(games.random_legal_actions(self.game.legal(state), self.rng)[0]), {"kind": "random"}


def load_agent(path, game_name: str, *, policy: str = "greedy", simulations: int = 64,
               expect_params: dict | None = None, reuse: bool = True):
    """(the game the checkpoint at ``path`` was trained on, its agent). Raises
    ``CheckpointMismatchError`` for a checkpoint of another game (or, with
    ``expect_params``, of other game parameters) and ``CorruptCheckpointError`` for a
    file that is not a good checkpoint."""
    game, net_config, weights, config = read_checkpoint(path, game_name)
    if expect_params is not None and game.params != expect_params:
        raise CheckpointMismatchError(f"checkpoint {path} is of {game!r}, not of the board's game "
                                      f"games.make({game_name!r}, **{expect_params})")
    model = NetworkModel(game, NetworkConfig(**net_config), weights)
    label = f"{Path(path).name} ({config.algo})"
    return game, NetworkAgent(game, model, gamma=config.gamma, policy=policy, simulations=simulations, name=label,
                              reuse=reuse)
