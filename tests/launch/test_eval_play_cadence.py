"""The evaluator's game suites on their own cadence in a real Connect Four run: play
against the oracle at every ``evaluation.play_every``-th evaluation (the untrained network's
first) and on the final weights, the states suite at every evaluation, under both
schedules."""

from __future__ import annotations

import pytest

from launch.config import ConfigError, resolve
from launch.metrics import read_metrics
from launch.train import train

TINY = ["network.width=16", "network.blocks=1", "network.layers_per_block=1", "network.head_width=16",
        "actors.num_envs=16", "actors.collect_steps=4", "learner.epochs_per_iteration=1", "learner.batch_size=32", "replay.capacity=4096",
        "evaluation.suites=connect4-uniform,connect4-play", "evaluation.max_openings=2", "evaluation.every=1",
        "evaluation.play_every=2", "checkpoint_every=100"]
PLAY = "eval/connect4-play/error_rate"
STATES = "eval/connect4-uniform/value_mae"


@pytest.mark.parametrize("schedule", ["sync", "async"])
def test_play_runs_every_second_evaluation_and_on_the_final_weights(ray_session, tmp_path, schedule):
    config = resolve("connect4", "small", TINY + [f"schedule={schedule}", "samples_per_insert=1"])
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=3 * config.updates_per_iteration,
                          wandb_mode="disabled")
    records = read_metrics(run_dir)
    end, records = records[-1], records[:-1]  # the last row: the run's end
    assert "end" in end and "end" not in records[-1]
    iterations = max(r["iteration"] for r in records)
    assert iterations >= 3
    states_at = [r["iteration"] for r in records if STATES in r]
    played_at = [r["iteration"] for r in records if PLAY in r]
    assert states_at == list(range(iterations + 1))  # every evaluation
    # Every second evaluation from the untrained network's on; the final weights' in the
    # end row (played there when the last iteration did not play).
    assert played_at == list(range(0, iterations + 1, 2))
    assert PLAY in end and STATES in end
    if iterations % 2:
        assert end[PLAY] is not None and end["eval_seconds"] > records[-1]["eval_seconds"]
    for r in records + [end]:
        if PLAY in r:
            assert r["eval/connect4-play/games"] == 4  # 2 openings, both sides
            assert 0 <= r["eval/connect4-play/error_games"] <= 4
            assert r[PLAY] == r["eval/connect4-play/error_games"] / 4
    assert PLAY in last and STATES in last


def test_eval_play_every_must_be_positive():
    with pytest.raises(ConfigError, match="evaluation.play_every=0.: play_every must be >= 1"):
        resolve("connect4", "small", ["evaluation.play_every=0"])
