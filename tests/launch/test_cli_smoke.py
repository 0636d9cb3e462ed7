"""The real command, end to end, with a tiny budget: ``python -m launch --algo avi --game
tictactoe --updates N`` in its own process, with its own embedded Ray."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from launch.config import resolve
from launch.experiments.report import report_main
from learner.checkpoint import load_checkpoint

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2", "replay.capacity=4096",
        "replay.shards=2", "learner.batch_size=64", "evaluation.every=1", "checkpoint_every=1"]
ITERATIONS = 3
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_python_m_launch_trains_checkpoints_and_logs(tmp_path, tmp_path_factory):
    updates = ITERATIONS * resolve("tictactoe", "small", TINY).updates_per_iteration
    run_dir = tmp_path / "run"
    ray_tmp = tmp_path_factory.mktemp("ray")  # short: Ray's socket paths below it must fit in 107 bytes
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "RAY_AUTH_MODE": "disabled",
           "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    args = [sys.executable, "-m", "launch", "--algo", "avi", "--game", "tictactoe", "--preset", "small",
            "--updates", str(updates), "--run-dir", str(run_dir), "--wandb", "offline"]
    for override in TINY:
        args += ["--set", override]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    # Iteration 0: the untrained network's evaluation; the last row: the run's end.
    trained = [r for r in records[:-1] if r["iteration"] > 0]
    assert [r["iteration"] for r in trained] == list(range(1, ITERATIONS + 1))
    assert trained[-1]["updates"] == updates
    assert records[-1]["end"] == f"{updates} updates" and records[-1]["updates"] == updates
    assert json.loads((run_dir / "config.json").read_text())["game"] == "tictactoe"
    checkpoints = sorted((run_dir / "checkpoints").glob("ckpt-*.pt"))
    assert checkpoints, f"no checkpoint in {run_dir / 'checkpoints'}"
    load_checkpoint(checkpoints[-1])  # its checksum holds and it loads
    assert list((run_dir / "wandb").glob("offline-run-*"))  # W&B logged offline, into the run directory
    # Every actor of the run logged its start and its exit into logs/, and Ray printed no
    # warning about constructor arguments (ray#53727) nor a retried termination task.
    logs = {path.name: path.read_text() for path in (run_dir / "logs").glob("*.log")}
    config = json.loads((run_dir / "config.json").read_text())
    roles = ["learner", *(f"selfplay-{i}" for i in range(config["actors"]["num_actors"])),
             *(f"replay-shard-{i}" for i in range(config["replay"]["shards"]))]
    assert sorted(logs) == sorted(f"run-{role}.log" for role in roles)  # tic-tac-toe has no evaluator actor
    for name, text in logs.items():
        assert "started on node" in text and "exiting" in text, f"{name}: {text!r}"
    assert "constructor arguments" not in done.stderr + done.stdout
    assert "__ray_terminate__" not in done.stderr + done.stdout

    # The run's report gives the checkpoint sensitivity of its exact value error: the last
    # 3 of its 4 evaluations (iterations 0 to 3; the end record repeats the last one at
    # the same update count), their statistics worked out here.
    assert report_main([str(run_dir), "--last", "3"]) == 0
    by_updates = {r["updates"]: r["eval/value_mae"] for r in records if "eval/value_mae" in r}
    assert len(by_updates) == ITERATIONS + 1
    maes = [by_updates[u] for u in sorted(by_updates)][-3:]
    expected = [statistics.mean(maes), min(maes), max(maes), statistics.stdev(maes)]
    row = f"| avi tictactoe `run` | value_mae | 3 | {' | '.join(f'{v:.4f}' for v in expected)} |"
    assert row in (run_dir / "plots" / "summary.md").read_text()
