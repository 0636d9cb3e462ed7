"""End-to-end hybrid training on a real Ray: AVI's collection with the one-step values'
policy as a second target, both heads trained by AlphaZero's loss, both evaluated."""

from __future__ import annotations

import numpy as np

from launch.config import resolve
from launch.metrics import read_metrics
from launch.train import train

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64", "evaluation.every=1", "checkpoint_every=1"]


def test_hybrid_trains_both_heads_and_reports_both(ray_session, tmp_path):
    config = resolve("tictactoe", "small", TINY, algo="hybrid")
    avi = resolve("tictactoe", "small", TINY, algo="avi")
    # Its preset: AVI's with a policy head.
    assert config.network.policy_head and not avi.network.policy_head
    assert config.actors == avi.actors and config.learner == avi.learner and config.replay == avi.replay
    updates = 2 * config.updates_per_iteration
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=updates, wandb_mode="disabled")
    assert last["updates"] == updates
    assert last["rows"] == 2 * config.rows_per_iteration  # a row at every step, as AVI's
    assert np.isfinite(last["policy_loss"]) and last["policy_loss"] > 0
    assert np.isclose(last["loss"], last["value_loss"] + last["policy_loss"], rtol=1e-4)  # AlphaZero's loss
    record = read_metrics(run_dir)[-1]
    for head in ("eval/", "eval/policy_head/"):  # the values' greedy move, and the policy head's
        assert 0.0 <= record[f"{head}policy_regret"] <= 2.0 and 0.0 <= record[f"{head}optimal_move_rate"] <= 1.0
    assert 0.0 <= record["eval/value_mae"] <= 2.0
