"""``python -m launch --resume DIR`` lengthens a run: ``--updates`` (the run's new total) and
``--minutes`` (a wall clock for this start) continue it from its newest pair, with the
bounds of its waits reset by ``--set`` and its config otherwise kept."""

from __future__ import annotations

import json

from launch.cli import main
from launch.config import resolve
from launch.metrics import read_metrics
from launch.run_dir import read_run_config
from launch.train import train

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=1", "learner.batch_size=64", "evaluation.suites=none",
        "checkpoint_every=1", "actors.num_actors=1"]


def _resume(args: list[str], capsys) -> dict:
    code = main(["--resume", *args, "--wandb", "disabled", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out.strip().splitlines()[-1])


def test_resume_lengthens_by_updates_and_by_minutes(ray_session, tmp_path, capsys):
    config = resolve("tictactoe", "small", TINY)
    per = config.updates_per_iteration
    run_dir, first = train(config, run_dir=tmp_path / "lengthened", updates=2 * per, wandb_mode="disabled")
    assert first["updates"] == 2 * per
    # Longer by updates, with a new bound for the learner's wait (a new cluster's).
    longer = _resume([str(run_dir), "--updates", str(4 * per), "--set", "learner.restart_wait_s=300"], capsys)
    assert longer["updates"] == 4 * per and longer["end"] == f"{4 * per} updates"
    assert [r["iteration"] for r in read_metrics(run_dir) if "end" not in r and r["iteration"]] == [1, 2, 3, 4]
    saved = read_run_config(run_dir)
    assert saved.learner.restart_wait_s == 300.0 and saved.learner.lr == config.learner.lr
    # Longer by a wall clock: it goes on from the 4 * per updates and ends at its clock.
    timed = _resume([str(run_dir), "--minutes", "0.5"], capsys)
    assert timed["end"] == "0.5 minutes" and timed["updates"] >= 4 * per
