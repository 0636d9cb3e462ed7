"""Each role owns its settings: the nested config records, the ``--set`` keys that name
them, the errors that name the new key of an old flat one, and the run directories
written before the roles owned their settings, which still load and resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from actors.config import SelfPlayConfig
from evaluation.config import EvaluationConfig
from launch.cli import main as launch_main
from launch.config import ConfigError, TrainConfig, resolve
from learner.config import LearnerConfig
from oracle_service.config import OracleConfig
from replay.config import ReplayConfig

# A run directory written by the code before the roles owned their settings (flat
# config.json keys such as "batch_size" and "eval_every"), 8 updates of AVI on
# tic-tac-toe, from `python -m launch --algo avi --game tictactoe --preset small --updates 8
# --seed 1 --set network.width=16 --set network.head_width=16 --set network.blocks=1
# --set num_envs=16 --set collect_steps=4 --set batch_size=32 --set replay_capacity=1024`.
OLD_RUN = Path(__file__).parent / "data" / "old-avi-run"


@pytest.mark.parametrize("record, changes, message", [
    (SelfPlayConfig, {"num_envs": 0}, "num_envs must be >= 1, got 0"),
    (SelfPlayConfig, {"epsilon": 1.5}, r"epsilon must lie in \[0, 1\], got 1.5"),
    (SelfPlayConfig, {"search": "mcts"}, "search must be one of puct, gumbel, got 'mcts'"),
    (LearnerConfig, {"lr": 0.0}, "lr must be > 0, got 0.0"),
    (LearnerConfig, {"device": "tpu"}, "device must be one of auto, cpu, cuda, got 'tpu'"),
    (ReplayConfig, {"shards": 0}, "shards must be >= 1, got 0"),
    (EvaluationConfig, {"policy": "telepathy"}, "policy must be one of auto, greedy"),
    (EvaluationConfig, {"suites": " "}, "suites must be auto, default, none or a list of suite names"),
    (OracleConfig, {"engine": "pons"}, "engine must be one of ours, bitbully, got 'pons'"),
])
def test_each_role_validates_its_own_record(record, changes, message):
    with pytest.raises(ValueError, match=message):
        record(**changes)


def test_set_takes_nested_keys_and_names_the_new_key_of_an_old_one():
    config = resolve("connect4", overrides=["learner.lr=1e-3", "actors.mcts.simulations=32",
                                            "evaluation.max_openings=4", "oracle.replicas=2"], algo="alphazero")
    assert (config.learner.lr, config.actors.mcts.simulations) == (1e-3, 32)
    assert (config.evaluation.max_openings, config.oracle.replicas) == (4, 2)
    for old, new in [("lr=1e-3", "learner.lr"), ("replay_capacity=10", "replay.capacity"),
                     ("eval_every=2", "evaluation.every"), ("mcts.simulations=8", "actors.mcts.simulations"),
                     ("oracle_store=x", "oracle.store"), ("actor_threads=2", "actors.threads")]:
        with pytest.raises(ConfigError, match=f"is now {new} "):
            resolve("connect4", overrides=[old])
    with pytest.raises(ConfigError, match="is now actors.inference_dtype and evaluation.inference_dtype"):
        resolve("connect4", overrides=["inference_dtype=bf16"])


def test_the_command_line_refuses_an_old_key_naming_the_new_one(capsys):
    code = launch_main(["--algo", "avi", "--game", "tictactoe", "--set", "batch_size=32", "--updates", "1"])
    assert code == 2
    assert "'batch_size' is now learner.batch_size" in capsys.readouterr().err


def test_an_old_flat_config_reads_into_the_roles():
    old = json.loads((OLD_RUN / "config.json").read_text())
    assert "batch_size" in old and "learner" not in old  # the fixture is of the old layout
    config = TrainConfig.from_dict(old)
    assert (config.actors.num_envs, config.actors.collect_steps, config.actors.epsilon) == (16, 4, 0.5)
    assert (config.learner.batch_size, config.learner.device, config.replay.capacity) == (32, "cpu", 1024)
    assert (config.evaluation.every, config.actors.eval_cache, config.network.width) == (5, "cache", 16)
    assert config.actors.inference_dtype == config.evaluation.inference_dtype == "fp32"
    # Written again, it is the new layout, and reads back the same.
    assert TrainConfig.from_dict(json.loads(config.to_json())) == config
    with pytest.raises(ConfigError, match="unknown fields: learner.nope"):
        TrainConfig.from_dict({**json.loads(config.to_json()), "learner": {"nope": 1}})


def test_a_run_directory_written_before_resumes(ray_session, tmp_path):
    from launch.train import train

    run_dir = tmp_path / OLD_RUN.name  # the replay snapshots are named after the directory
    shutil.copytree(OLD_RUN, run_dir)
    config = TrainConfig.from_dict(json.loads((OLD_RUN / "config.json").read_text()))
    _, last = train(config, resume=run_dir, updates=16, wandb_mode="disabled")
    assert last["updates"] == 16 and last["end"] == "16 updates"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["updates"] == 0 and any(r["updates"] == 8 for r in rows)  # the old run's rows are kept
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["learner"]["batch_size"] == 32 and "batch_size" not in saved  # now in the roles' layout


def test_tree_reuse_is_an_evaluation_setting_of_launch_evaluate_and_the_suite_runner():
    import argparse

    from evaluation.config import add_arguments, from_arguments
    from evaluation.runner import SuiteRunner
    from inference.networks import NetworkConfig

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert from_arguments(parser.parse_args([])).reuse is False  # off: reproducible suites
    assert from_arguments(parser.parse_args(["--policy", "mcts", "--reuse"])).reuse is True
    network = NetworkConfig(kind="mlp", width=16, blocks=1, layers_per_block=1, head_width=16, policy_head=True)
    for reuse in (False, True):
        runner = SuiteRunner("tictactoe", network, evaluation=EvaluationConfig(policy="mcts", simulations=4,
                                                                               reuse=reuse))
        assert (runner.choose().reuse is not None) == reuse
