"""The replay snapshot and the learner checkpoint of one moment are one pair
(``launch/run_store.py``). A real training process is SIGKILLed between the two writes
(or between the checkpoint and its manifest); ``--resume`` then takes the previous
complete pair, and the learner's counters match the replay it comes back with: the
rows the run counted as inserted are exactly the rows the restored shards say they
were ever given. Run directories from before pairs (no manifest) still resume."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from launch.config import resolve
from launch.run_dir import resumed_config
from launch.run_store import latest_pair, list_pairs, pair_replay_dir
from launch.train import Run, train
from learner.checkpoint import checkpoint_path

ROOT = Path(__file__).resolve().parents[2]
TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "actors.num_actors=1", "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64",
        "evaluation.every=100", "checkpoint_every=1"]
KILL_AT = 3  # the third checkpoint: two pairs are committed before it

# Runs in its own process: wraps the checkpoint write so that the process SIGKILLs itself
# right before it ("before": the snapshot of that moment is written, the checkpoint not)
# or right after it ("after": both written, the manifest not). Nothing is cleaned up.
CHILD = """
import os, signal, sys
import launch.run_store as S
import launch.train as T
from launch.config import resolve
run_dir, where, kill_at, settings = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
real, calls = S.save_run_checkpoint, []
def save(path, checkpoint):
    calls.append(path)
    if len(calls) == kill_at and where == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    out = real(path, checkpoint)
    if len(calls) == kill_at and where == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return out
S.save_run_checkpoint = save
config = resolve("tictactoe", "small", settings)
T.train(config, run_dir=run_dir, updates=10 * config.updates_per_iteration, wandb_mode="disabled")
print("the run ended without being killed", flush=True)
"""


def _killed_run(tmp_path: Path, where: str) -> Path:
    run_dir = tmp_path / "run"
    # The training process joins the session's Ray, as a driver joins its cluster (no Ray
    # start of its own): killed, its job ends and Ray ends the roles it had started.
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": address, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run_dir), where, str(KILL_AT), *TINY], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:  # a timeout: the training is still running
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"the training was not killed (rc {proc.returncode}):\n{out[-3000:]}"
    return run_dir


def _counts(run: Run) -> tuple[int, int, int]:
    """(updates, rows counted, rows the restored shards were given) of a resumed Run."""
    return run.counters.updates, run.counters.rows, sum(s.total_added for s in run.replay.stats())


def _resume_and_compare(run_dir: Path) -> tuple[int, int, int]:
    """:func:`_counts` of a Run resumed from ``run_dir``, closed again."""
    run = Run(resumed_config(run_dir), run_dir, wandb_mode="disabled", resume=True)
    try:
        return _counts(run)
    finally:
        run.close()


@pytest.mark.parametrize("where", ["before", "after"])
def test_killed_between_writes_resumes_the_previous_pair(ray_session, tmp_path, capsys, where):
    run_dir = _killed_run(tmp_path, where)
    per = resolve("tictactoe", "small", TINY).updates_per_iteration
    # The killed moment's snapshot is on disk (and its checkpoint too, "after"), but no
    # manifest names them: the newest complete pair is the one before.
    assert pair_replay_dir(run_dir, KILL_AT * per).is_dir()
    assert checkpoint_path(run_dir / "checkpoints", KILL_AT * per).exists() == (where == "after")
    assert [p.name for p in list_pairs(run_dir)][0] == f"pair-{(KILL_AT - 1) * per:09d}.json"
    pair = latest_pair(run_dir)
    assert pair is not None and pair.updates == (KILL_AT - 1) * per
    run = Run(resumed_config(run_dir), run_dir, wandb_mode="disabled", resume=True)
    try:
        updates, counted, given = _counts(run)
        assert updates == (KILL_AT - 1) * per
        assert counted == given > 0, f"learner counters say {counted} rows, the restored replay holds {given}"
        assert f"from {pair.checkpoint.name}" in capsys.readouterr().out
        # The resumed run goes on (as ``train(..., resume=run_dir)`` runs it, without
        # starting its roles a second time) and commits pairs again, the stale snapshot pruned.
        last = run.run(updates=(KILL_AT + 1) * per)
    finally:
        run.close()
    assert last["updates"] == (KILL_AT + 1) * per
    assert latest_pair(run_dir).updates == (KILL_AT + 1) * per
    _, counted, given = _resume_and_compare(run_dir)
    assert counted == given


def test_a_run_directory_without_pairs_still_resumes(ray_session, tmp_path):
    config = resolve("tictactoe", "small", TINY)
    per = config.updates_per_iteration
    run_dir = tmp_path / "old"
    train(config, run_dir=run_dir, updates=2 * per, wandb_mode="disabled")
    # As written before pairs: checkpoints and live snapshots only.
    for manifest in list_pairs(run_dir):
        manifest.unlink()
    for directory in (run_dir / "replay").glob("pair-*"):
        shutil.rmtree(directory)
    assert latest_pair(run_dir) is None
    updates, counted, given = _resume_and_compare(run_dir)
    assert updates == 2 * per and counted == given > 0
