"""Reading a ``launch`` training checkpoint for evaluation: its game, network config,
numpy weights and run config, checked against the game (and algorithm) asked for.

:func:`read_checkpoint` is what ``python -m launch evaluate``
(``evaluation.runner.evaluate_checkpoint``), the board's players (``board/agents.py``)
and the GTP engine (``launch/gtp_serve.py``) build their networks from; a checkpoint of
another game, algorithm or network than asked for is a :class:`CheckpointMismatchError`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import NamedTuple

import games
from evaluation.run_config import TrainedWith
from games import Game
from learner.checkpoint import load_run_checkpoint


class CheckpointMismatchError(ValueError):
    """A checkpoint of another game, algorithm or network than asked for."""


class TrainedNetwork(NamedTuple):
    """What evaluation reads of a ``launch`` training checkpoint."""

    game: Game  # made with the run's game parameters
    net_config: dict  # the NetworkConfig's fields
    weights: dict  # parameter name -> numpy array
    config: TrainedWith  # what evaluation uses of the run's config (its copy of config.json)


def read_checkpoint(path, game: str | None, algo: str | None = None) -> TrainedNetwork:
    """The network of a ``launch`` checkpoint, checked against ``game`` (a name; None:
    any) and ``algo`` when given."""
    checkpoint = load_run_checkpoint(path)  # CorruptCheckpointError names the file and what it lacks
    learner = checkpoint.learner.learner  # the Learner's own state dict
    if "net" not in learner or "net_config" not in learner:
        raise CheckpointMismatchError(f"checkpoint {path}: holds no learner state (its learner has keys "
                                      f"{sorted(learner)[:6]}); is it a `python -m launch` training checkpoint?")
    raw = json.loads(checkpoint.config)
    saved_game, params = learner.get("game"), dict(learner.get("game_params") or {})
    if game is not None and saved_game != game:
        raise CheckpointMismatchError(f"checkpoint {path} is of game {saved_game!r} {params or ''}, "
                                      f"not {game!r}; pass --game {saved_game}")
    config = TrainedWith.from_dict(raw, source=f"checkpoint {path}")
    if "algo" not in raw and learner.get("loss") is not None:  # a config written by hand: the learner's loss names it
        config = dataclasses.replace(config, algo=str(learner["loss"]))
    saved_algo = config.algo
    if algo is not None and saved_algo != algo:
        raise CheckpointMismatchError(f"checkpoint {path} was trained with algorithm {saved_algo!r}, "
                                      f"not {algo!r}")
    weights = {k: v.detach().cpu().numpy() for k, v in learner["net"].items()}
    return TrainedNetwork(games.make(saved_game, **params), dict(learner["net_config"]), weights, config)
