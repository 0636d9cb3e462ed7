"""``--json`` prints one JSON object and nothing else on stdout, with the real entry
points: a training run whose evaluator actor builds Hex 3x3's sets on first use (its
progress lines, forwarded by Ray from the actor, go to stderr), and ``launch evaluate``
of that run's checkpoint building them again in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from learner.checkpoint import latest_checkpoint

ROOT = Path(__file__).resolve().parents[2]
BUILT = "hex-3x3-uniform: 4520 states labelled"  # a progress line of the set's first build


def launch(tmp_path: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    ray_tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"ray-{tmp_path.name[-20:]}"  # short socket paths
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "RAY_AUTH_MODE": "disabled", "SELFPLAY_EVAL_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "launch", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_json_prints_only_the_record_while_sets_are_built_in_an_actor_and_in_the_driver(tmp_path):
    run_dir = tmp_path / "run"
    trained = launch(tmp_path, tmp_path / "cache-train", "--algo", "avi", "--game", "hex", "--preset", "small",
                     "--set", 'game_params={"size": 3}', "--set", "actors.num_envs=8",
                     "--set", "actors.collect_steps=1", "--minutes", "0.1", "--run-dir", str(run_dir),
                     "--wandb", "disabled", "--json")
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert BUILT in trained.stderr and "EvaluatorWorker" in trained.stderr  # built in the evaluator actor
    record = json.loads(trained.stdout)  # the whole of stdout
    assert record["end"] == "0.1 minutes"

    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    evaluated = launch(tmp_path, tmp_path / "cache-evaluate", "evaluate", "--checkpoint", str(checkpoint),
                       "--game", "hex", "--suite", "hex-3x3-uniform", "--json")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert BUILT in evaluated.stderr
    assert "eval/hex-3x3-uniform/value_mae" in json.loads(evaluated.stdout)
