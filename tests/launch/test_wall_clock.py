"""``--minutes M`` is the wall clock, with the real entry point: from Ray's start to the
process's exit, the evaluations, the final checkpoint and the end included, each of the
three algorithms on Connect Four (the game whose play suite against the solver takes
minutes) returns within M minutes plus 10%, with its checkpoint and its end row, and
says which suites it left out and why."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from learner.checkpoint import latest_checkpoint, load_run_checkpoint

ROOT = Path(__file__).resolve().parents[2]
# Half a minute: the exit's fixed seconds (Ray's shutdown, the process's end) take a
# machine-dependent share of a shorter clock, beyond the 10% asked of the plan.
MINUTES = 0.5
# Ray's own line once it is up, with its time to the millisecond.
RAY_UP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}).*Started a local Ray instance", re.M)


def run_for(tmp_path: Path, algo: str, *args: str) -> tuple[subprocess.CompletedProcess, float, Path]:
    """The run's process, its seconds from Ray's start to its exit, and its run directory."""
    ray_tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"ray-{tmp_path.name[-20:]}"  # short socket paths
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "RAY_AUTH_MODE": "disabled"}
    run_dir = tmp_path / algo
    done = subprocess.run([sys.executable, "-m", "launch", "--algo", algo, "--game", "connect4",
                           "--minutes", str(MINUTES), "--run-dir", str(run_dir), "--wandb", "disabled", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    exited = time.time()
    up = RAY_UP.search(done.stderr)
    assert up is not None, done.stderr[-3000:]
    ray_up = datetime.strptime(up.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return done, exited - ray_up, run_dir


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["avi", "alphazero", "azal"])
def test_a_run_on_the_wall_clock_returns_in_time_with_its_checkpoint(tmp_path, algo):
    done, seconds, run_dir = run_for(tmp_path, algo)
    assert done.returncode == 0, done.stderr[-3000:]
    assert seconds <= 1.1 * MINUTES * 60, (seconds, done.stderr[-3000:])
    end = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert end["end"] == f"{MINUTES:g} minutes"
    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    assert checkpoint is not None and end["checkpoint"] == str(checkpoint)
    assert load_run_checkpoint(checkpoint).counters["updates"] == end["updates"]
    # The final weights' cheap suites are always scored; the play suite against the solver
    # takes minutes on Connect Four, far beyond 30 s: left out, with the reason, in the end
    # row and in the summary.
    assert "eval/connect4-uniform/value_mae" in end
    assert not any(k.startswith("eval/connect4-play/") for k in end)
    assert any(line.startswith("connect4-play: not on the final weights") for line in end["evaluation_skipped"])
    assert "evaluation left out connect4-play: not on the final weights" in done.stdout

