"""How a run ends, with the real entry point and tiny budgets: impossible budgets
are refused before anything starts; the evaluation of the untrained network does not eat
a short budget; every run ends with a checkpoint of its final weights and a last row in
metrics.jsonl saying why it ended; a run without an update says why; people get a short
summary, scripts the final record with --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch.cli import main
from learner.checkpoint import latest_checkpoint, load_run_checkpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("budget", [["--minutes", "-1"], ["--minutes", "0"], ["--minutes", "nan"],
                                    ["--train-minutes", "0"], ["--updates", "-5"], ["--updates", "0"]])
def test_impossible_budgets_are_refused_before_anything_starts(tmp_path, capsys, budget):
    run_dir = tmp_path / "run"
    status = main(["--algo", "avi", "--game", "connect4", "--run-dir", str(run_dir), *budget])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{budget[0]} must be" in err, err
    assert not run_dir.exists()  # no run directory made, no Ray started


def launch(tmp_path, *args: str) -> subprocess.CompletedProcess:
    ray_tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"ray-{tmp_path.name[-20:]}"  # short socket paths
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "RAY_AUTH_MODE": "disabled"}
    return subprocess.run([sys.executable, "-m", "launch", *args, "--wandb", "disabled"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_short_connect4_run_trains_after_its_first_evaluation_and_ends_with_a_checkpoint(tmp_path):
    # 1.2 s of collecting and training (--train-minutes): less than the untrained network's
    # evaluation (its datasets and play from 2 openings against the solver), which does not count.
    run_dir = tmp_path / "run"
    done = launch(tmp_path, "--algo", "avi", "--game", "connect4", "--preset", "small", "--train-minutes", "0.02",
                  "--run-dir", str(run_dir), "--set", "actors.num_envs=64", "--set", "learner.batch_size=64",
                  "--set", "evaluation.max_openings=2", "--set", "actors.collect_steps=4")
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    first, end = records[0], records[-1]
    assert first["iteration"] == 0 and any(k.startswith("eval/connect4-play/") for k in first)
    assert end["end"] == "0.02 minutes of training" and "no_update" not in end
    assert end["updates"] > 0, end  # the evaluation did not eat the budget
    assert end["eval_seconds"] > 1.2  # it took longer than the whole budget
    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    assert checkpoint is not None and end["checkpoint"] == str(checkpoint)
    # config.json records the values the run used: every auto resolved before it started.
    config = json.loads((run_dir / "config.json").read_text())
    assert (config["learner"]["device"], config["actors"]["inference_device"], config["actors"]["eval_cache"]) == (
        "cpu", "cpu", "cache")
    assert load_run_checkpoint(checkpoint).counters["updates"] == end["updates"]  # the final weights
    # The summary for people: short, with the headline metrics and the next commands.
    out = done.stdout
    assert len(out.splitlines()) < 25, out
    assert "avi on connect4 (preset small)" in out and f"{end['updates']:,} updates" in out
    assert "connect4-play" in out and "error_rate" in out and " -> " in out
    assert f"checkpoint: {checkpoint}" in out
    assert f"python -m launch evaluate --checkpoint {checkpoint} --game connect4" in out
    assert f"python -m launch --resume {run_dir}" in out


@pytest.mark.slow
def test_a_run_without_an_update_says_why_and_still_leaves_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    # 8 environments, a step of 8 rows at a time for 0.6 s: never a batch of 1,024.
    done = launch(tmp_path, "--algo", "avi", "--game", "tictactoe", "--preset", "small", "--minutes", "0.01",
                  "--run-dir", str(run_dir), "--set", "actors.num_envs=8", "--set", "actors.collect_steps=1",
                  "--set", "learner.batch_size=1024", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    final = json.loads(done.stdout.strip().splitlines()[-1])  # --json: the final record, one object
    assert final["updates"] == 0
    assert "fewer than one batch" in final["no_update"] and "learner.batch_size=1024" in final["no_update"]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["no_update"] == final["no_update"] and records[-1]["end"] == "0.01 minutes"
    assert latest_checkpoint(run_dir / "checkpoints") is not None
