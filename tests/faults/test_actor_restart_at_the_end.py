"""A self-play actor lost after its last collect call (here: killed as the run stops,
before the final checkpoint) is counted all the same: the checkpoint asks each actor
whether it restarted since a call last reported it. Before, such a restart was reported
only by the next collect, which a run that ends never makes (the local cluster check's
race: a host lost in the last seconds of its job went uncounted)."""

from __future__ import annotations

import os
import time

import ray

from launch.config import resolve
from launch.metrics import read_metrics
from launch.train import train
from learner.checkpoint import list_checkpoints, load_run_checkpoint

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64", "evaluation.suites=none",
        "checkpoint_every=10", "actors.num_actors=1"]


def test_an_actor_lost_after_its_last_collect_is_counted(ray_session, tmp_path):
    config = resolve("tictactoe", "small", TINY)
    run_dir = tmp_path / "run"

    def kill_actor_and_stop(record):
        if record["iteration"] == 2:
            actor = ray.get_actor(f"{run_dir.name}-selfplay-0")
            pid = ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))
            ray.kill(actor, no_restart=False)
            deadline = time.monotonic() + 30  # ray.kill does not wait: the process must be gone
            while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.append(pid)
            return True
        return False

    stop: list[int] = []
    _, last = train(config, run_dir=run_dir, updates=10 * config.updates_per_iteration, wandb_mode="disabled",
                    stop=kill_actor_and_stop)
    assert stop, "the run never reached iteration 2"
    assert last["end"] == "stopped"
    assert last["faults/actor_restarts_total"] == 1 and last["faults/actor_restarts"] == 1, last
    records = [r for r in read_metrics(run_dir) if "end" not in r]
    assert all(r.get("faults/actor_restarts_total", 0) == 0 for r in records)
    # The final checkpoint's totals hold it: a resumed run goes on counting from 1.
    checkpoint = load_run_checkpoint(list_checkpoints(run_dir / "checkpoints")[0])
    assert checkpoint.faults["actor_restarts"] == 1
