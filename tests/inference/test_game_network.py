"""The record of a run's game and network (inference/game_network.py): built from the run's
config, it makes the game the config names; it is frozen; a bad one fails with the error
that names the problem, in every Ray worker built from it (built here, without Ray)."""

from __future__ import annotations

import dataclasses

import pytest

import algorithms
import games
from actors.config import SelfPlayConfig
from actors.inference_server import InferenceWorker
from actors.pool import SelfPlayWorker
from evaluation.config import EvaluationConfig
from launch.config import TrainConfig
from launch.evaluator import EvaluatorWorker
from learner.actor import LearnerWorker
from learner.config import LearnerConfig
from inference.game_network import GameNetwork
from inference.networks import NetworkConfig

SMALL = NetworkConfig(kind="mlp", width=16, blocks=1, layers_per_block=1, head_width=16)


def test_a_run_s_config_gives_its_game_its_parameters_and_its_network():
    config = TrainConfig(game="hex", game_params={"size": 5}, network=SMALL)
    record = config.game_network
    assert (record.game, record.game_params, record.network) == ("hex", {"size": 5}, SMALL)
    game = record.make_game()
    assert game.name == "hex" and game.num_actions == 25 and game.obs_shape == (2, 5, 5)  # 5x5 cells, 2 planes


def test_the_record_is_frozen_and_keeps_its_own_parameters():
    params = {"rows": 3, "cols": 4}
    record = GameNetwork(game="chomp", game_params=params, network=SMALL)
    params["rows"] = 9
    assert record.game_params == {"rows": 3, "cols": 4}
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.game = "hex"
    assert GameNetwork(game="tictactoe", network=SMALL).make_game().num_actions == 9


def test_a_network_that_is_not_a_network_config_is_refused():
    with pytest.raises(TypeError, match="GameNetwork.network must be a NetworkConfig, got dict"):
        GameNetwork(game="tictactoe", network={"kind": "mlp"})


def _workers(record: GameNetwork) -> dict:
    """Each Ray worker's constructor, called in this process with ``record``."""
    return {
        "self-play": lambda: SelfPlayWorker(game_network=record, config=SelfPlayConfig(num_envs=4),
                                            algo=algorithms.descriptor("avi"),
                                            seed=0, index=0, replay=None),
        "inference": lambda: InferenceWorker(game_network=record, algo=algorithms.descriptor("avi")),
        "learner": lambda: LearnerWorker(game_network=record, config=LearnerConfig(device="cpu", threads=1),
                                         algo=algorithms.descriptor("avi"), replay=None, seed=0),
        "evaluator": lambda: EvaluatorWorker(game_network=record, config=EvaluationConfig(suites="default"),
                                             gamma=1.0, oracle_store=None),
    }


@pytest.mark.parametrize("worker", ["self-play", "inference", "learner", "evaluator"])
def test_an_unknown_game_fails_in_every_worker_with_games_own_error(worker):
    with pytest.raises(ValueError) as direct:
        games.make("chess")
    record = GameNetwork(game="chess", network=SMALL)  # made only where a worker needs it
    with pytest.raises(ValueError) as built:
        _workers(record)[worker]()
    assert str(built.value) == str(direct.value)
    assert "unknown game 'chess'" in str(built.value) and "tictactoe" in str(built.value)


# The learner needs a replay service on Ray to start: the training tests build it from the record.
@pytest.mark.parametrize("worker", ["self-play", "inference", "evaluator"])
def test_the_workers_play_the_record_s_game(worker):
    record = GameNetwork(game="chomp", game_params={"rows": 3, "cols": 4}, network=SMALL)
    built = _workers(record)[worker]()
    game = built.evaluator.game if worker == "evaluator" else built.game
    assert (game.name, game.obs_shape, game.num_actions) == ("chomp", (1, 3, 4), 12)  # an action per cell
