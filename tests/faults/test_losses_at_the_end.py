"""A self-play actor or a replay shard lost after the run's last iteration record (here:
killed as the run stops, before the final checkpoint) is counted all the same: the
checkpoint asks each actor whether its process is a restart, and the replay service for
its shards' recoveries. Before, an actor's restart was reported only by the next collect
and a shard's at the next iteration's record, which a run that ends never makes (the
local cluster check's race, and the 3-host soak's uncounted 512 rows)."""

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


def kill_and_wait(actor_name: str) -> int:
    """Kill the actor hard and return once its process is gone (ray.kill does not wait)."""
    actor = ray.get_actor(actor_name)
    pid = ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))
    ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid


def train_and_kill_at_the_end(config, run_dir, iteration: int, actor: str) -> dict:
    """Train ``config`` until ``iteration``'s record, then kill the actor ``<run>-<actor>``
    hard and stop the run (its final checkpoint comes next): the run's end row."""
    killed: list[int] = []

    def kill_and_stop(record):
        if record["iteration"] == iteration:
            killed.append(kill_and_wait(f"{run_dir.name}-{actor}"))
            return True
        return False

    _, last = train(config, run_dir=run_dir, updates=10 * config.updates_per_iteration, wandb_mode="disabled",
                    stop=kill_and_stop)
    assert killed, f"the run never reached iteration {iteration}"
    assert last["end"] == "stopped"
    return last


def test_an_actor_lost_after_its_last_collect_is_counted(ray_session, tmp_path):
    run_dir = tmp_path / "run"
    last = train_and_kill_at_the_end(resolve("tictactoe", "small", TINY), run_dir, 2, "selfplay-0")
    assert last["faults/actor_restarts_total"] == 1 and last["faults/actor_restarts"] == 1, last
    records = [r for r in read_metrics(run_dir) if "end" not in r]
    assert all(r.get("faults/actor_restarts_total", 0) == 0 for r in records)
    # The final checkpoint's totals hold it: a resumed run goes on counting from 1.
    checkpoint = load_run_checkpoint(list_checkpoints(run_dir / "checkpoints")[0])
    assert checkpoint.faults["actor_restarts"] == 1


def test_a_shard_lost_after_the_last_record_is_counted_with_its_rows(ray_session, tmp_path):
    """Checkpoints at iterations 2 and 4; shard 0 is killed after iteration 3's record:
    it comes back from iteration 2's snapshot, losing the rows it took in iteration 3."""
    run_dir = tmp_path / "run"
    last = train_and_kill_at_the_end(resolve("tictactoe", "small", [*TINY, "checkpoint_every=2"]), run_dir, 3,
                                     "replay-shard-0")
    assert last["faults/replay_restarts_total"] == 1 and last["faults/replay_restarts"] == 1, last
    records = [r for r in read_metrics(run_dir) if "end" not in r and "replay/shard0_total_added" in r]
    by_iteration = {r["iteration"]: r["replay/shard0_total_added"] for r in records}
    # Independent of the ledger: what shard 0 had taken at iteration 3, less what it had
    # at the snapshot of iteration 2 (the records' own counters).
    lost = by_iteration[3] - by_iteration[2]
    assert lost > 0 and last["faults/replay_rows_lost_total"] == lost, (by_iteration, last)
    checkpoint = load_run_checkpoint(list_checkpoints(run_dir / "checkpoints")[0])
    assert checkpoint.faults["replay_restarts"] == 1 and checkpoint.faults["replay_rows_lost"] == lost
