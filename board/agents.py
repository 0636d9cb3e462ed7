"""The players the board seats: a checkpoint's network playing a policy of
``evaluation.policy_registry`` (greedy over its values, PUCT MCTS, Gumbel AlphaZero's
search, ...), the exact oracle, or a uniformly random player.

Each answers ``think(state) -> (action, info)`` for a one-element state batch, ``info``
being what the page shows of its reasoning: the value of every child (``values``: AVI's
one-step lookahead r(s, a) - gamma V(f(s, a)), which ``evaluation.policies.greedy_policy``
maximises), or a search's ``prior`` and ``visits`` with its root value (and Gumbel's
improved ``policy``); a policy without a ``think`` of its own shows its move alone
(``{"kind": "move"}``). A checkpoint becomes a network as ``python -m launch evaluate``
makes it (``evaluation.checkpoints.read_checkpoint``, ``evaluation.network.NetworkModel``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import games
from evaluation import policy_registry
from evaluation.checkpoints import CheckpointMismatchError, read_checkpoint
from evaluation.network import NetworkModel
from evaluation.oracles import Oracle
from evaluation.policies import per_legal_action
from games import Game
from inference.networks import NetworkConfig

# How the agent's name shows the settings its policy reads (the search's budget).
_BUDGET_LABELS = {"simulations": "{} simulations", "depth": "depth {}"}


class NetworkAgent:
    """A checkpoint's network playing ``policy`` (a name of ``evaluation.policy_registry``:
    greedy, mcts, gumbel, ...) as evaluation plays it, with ``simulations`` per move for
    a search and ``depth`` for minimax. ``reuse``: the searches start from the subtree
    kept of the position by the previous moves' searches (``search.reuse``; one
    ``TreeReuse`` for every session of the table, found by the position, so sessions and
    take-backs cannot mix them up); :attr:`reuse` is it (None for a policy without)."""

    def __init__(self, game: Game, model: NetworkModel, *, gamma: float, policy: str, simulations: int,
                 name: str, seed: int = 0, reuse: bool = True, depth: int = 2):
        for setting, value in (("simulations", simulations), ("depth", depth)):
            if value < 1:
                raise ValueError(f"--{setting} must be >= 1, got {value}")
        self.game, self.model = game, model
        self.spec = policy_registry.PolicySpec(policy, gamma=gamma, simulations=simulations, depth=depth,
                                               seed=seed, reuse=reuse)
        self.player = policy_registry.make(self.spec, game, model)  # the unknown name, the missing head named
        budget = [label.format(getattr(self.spec, setting)) for setting, label in _BUDGET_LABELS.items()
                  if setting in policy_registry.entry(policy).parameters]
        self.name = f"{name} ({', '.join([policy, *budget])})"
        self.reuse = getattr(self.player, "reuse", None)

    def choose(self):
        """Evaluation's player of this network and policy, as ``python -m launch evaluate
        --policy P`` plays it (seed 0, no tree reuse)."""
        return policy_registry.make(self.spec._replace(seed=0, reuse=False), self.game, self.model)

    def think(self, state) -> tuple[int, dict]:
        think = getattr(self.player, "think", None)
        if think is not None:
            return think(state)
        return int(self.player(state)[0]), {"kind": "move"}


class OracleAgent:
    """The exact oracle as a player (its own preference among equal moves)."""

    def __init__(self, game: Game, oracle: Oracle):
        self.game, self.oracle, self.name = game, oracle, "the exact oracle"

    def think(self, state) -> tuple[int, dict]:
        a = self.oracle.analyze(state)
        legal = np.isfinite(a.q[0])
        values = a.score[0] if self.oracle.strong else a.q[0]
        return int(self.oracle.choose(state)[0]), {"kind": "oracle", "values": per_legal_action(values, legal)}


class RandomAgent:
    """Uniformly random legal moves (games without an oracle and no checkpoint)."""

    def __init__(self, game: Game, seed: int = 0):
        self.game, self.rng, self.name = game, np.random.default_rng(seed), "a uniformly random player"

    def think(self, state) -> tuple[int, dict]:
        return int(games.random_legal_actions(self.game.legal(state), self.rng)[0]), {"kind": "random"}


def load_agent(path, game_name: str, *, policy: str = "greedy", simulations: int = 64, depth: int = 2,
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
                              reuse=reuse, depth=depth)
