"""A run's ``config.json`` read back typed: the launcher's whole ``TrainConfig``
(``launch.run_dir.read_run_config``) and the part evaluation uses
(``evaluation.run_config``, also what a checkpoint's copy becomes), from a path or an
object store, and from a directory written before the roles owned their settings."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest

import games
import storage
from evaluation.checkpoints import read_checkpoint
from evaluation.run_config import TrainedWith, read_trained_with
from launch.config import ConfigError, TrainConfig
from launch.run_dir import read_run_config
from learner.checkpoint import LearnerState, RunCheckpoint, save_run_checkpoint
from learner.learner import Learner
from inference.networks import NetworkConfig

# A config.json of a run written before the roles owned their settings: flat keys.
FLAT = {"algo": "alphazero", "game": "tictactoe", "game_params": {}, "gamma": 0.9, "seed": 3, "lr": 0.0125,
        "batch_size": 96, "num_envs": 24, "eval_policy": "mcts", "eval_simulations": 48}


def _nested() -> TrainConfig:
    base = TrainConfig(algo="azal", game="hex", game_params={"size": 3}, gamma=0.95, seed=5)
    return dataclasses.replace(base, learner=dataclasses.replace(base.learner, lr=0.004),
                               evaluation=dataclasses.replace(base.evaluation, simulations=12))


def test_evaluations_defaults_are_the_launchers():
    # A key missing from a hand-written config must mean the same to both readers.
    ours, theirs = TrainedWith(), TrainConfig()
    for f in dataclasses.fields(TrainedWith):
        assert getattr(ours, f.name) == getattr(theirs, f.name), f.name


def test_an_old_flat_config_json_reads_typed_with_each_key_at_its_new_place(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(FLAT))
    config = read_run_config(tmp_path)
    assert (config.algo, config.game, config.gamma, config.seed) == ("alphazero", "tictactoe", 0.9, 3)
    assert (config.learner.lr, config.learner.batch_size, config.actors.num_envs) == (0.0125, 96, 24)
    assert (config.evaluation.policy, config.evaluation.simulations) == ("mcts", 48)
    assert read_trained_with(tmp_path) == TrainedWith("alphazero", "tictactoe", {}, 0.9)


@pytest.mark.parametrize("where", ["path", "s3"])
def test_a_config_json_reads_back_as_written_from_a_path_and_an_object_store(where, tmp_path, request):
    if where == "s3":
        request.getfixturevalue("s3_server")
        run_dir = f"s3://runs/{uuid.uuid4().hex[:8]}"
    else:
        run_dir = tmp_path
    config = _nested()
    storage.write_atomic(storage.join(run_dir, "config.json"), config.to_json().encode())
    assert read_run_config(run_dir) == config
    assert read_trained_with(run_dir) == TrainedWith("azal", "hex", {"size": 3}, 0.95)
    assert read_trained_with(run_dir).label() == "azal hex(size=3)"


def test_a_directory_without_config_json_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no config.json there"):
        read_run_config(tmp_path)
    assert read_trained_with(tmp_path) is None
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="config.json: not JSON"):
        read_run_config(tmp_path)


def test_a_checkpoints_copy_of_an_old_flat_config_gives_its_discount(tmp_path):
    game = games.make("tictactoe")
    learner = Learner(game, NetworkConfig("mlp", width=8, blocks=1, layers_per_block=1, head_width=8), device="cpu")
    path = tmp_path / "ckpt-000000001.pt"
    save_run_checkpoint(path, RunCheckpoint(counters={"updates": 1}, learner=LearnerState(learner.state_dict(), {}),
                                            actors=[], config=json.dumps(FLAT), faults={}))
    trained = read_checkpoint(path, "tictactoe", "alphazero")
    assert trained.config == TrainedWith("alphazero", "tictactoe", {}, 0.9)


def test_a_bad_field_in_config_json_names_the_file_and_the_field(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**FLAT, "lr": "fast"}))
    with pytest.raises(ConfigError, match=r"config.json: .*lr"):
        read_run_config(tmp_path)
