"""A run whose directory is on an object store (a real S3-protocol server, moto's, in its
own process): the learner killed mid-run comes back with its updates and optimizer state
read from the store, not from any local file; and where the store cannot be reached when
it restarts, the run fails with an error that names the store, instead of training on
from fresh weights."""

from __future__ import annotations

import uuid

import pytest
import ray

import storage
from launch.config import resolve
from launch.train import train
from learner.checkpoint import checkpoint_path, load_run_checkpoint

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64", "evaluation.suites=none",
        "checkpoint_every=1", "actors.num_actors=1"]


def killer(name: str, at_iteration: int, before=lambda: None):
    """A ``stop`` callback that kills the learner once the record of ``at_iteration`` (and
    its checkpoint) is written, after ``before()``."""
    killed = []

    def stop(record):
        if record["iteration"] == at_iteration and not killed:
            before()
            ray.kill(ray.get_actor(f"{name}-learner"), no_restart=False)
            killed.append(record["updates"])
        return False

    return stop, killed


def test_a_killed_learner_restores_its_updates_from_the_object_store(ray_session, s3_server, tmp_path, capsys):
    config = resolve("tictactoe", "small", TINY)
    per = config.updates_per_iteration
    name = f"s3run-{uuid.uuid4().hex[:8]}"
    run_dir = f"s3://runs/{name}"
    stop, killed = killer(name, 2)
    _, last = train(config, run_dir=run_dir, updates=4 * per, wandb_mode="disabled", stop=stop)
    assert killed == [2 * per]
    assert last["updates"] == 4 * per
    assert last["faults/learner_restarts_total"] == 1
    assert last["faults/learner_restored_updates_total"] == 2 * per
    assert last["faults/learner_fresh_weights_total"] == 0
    assert f"learner restarted from {checkpoint_path(run_dir + '/checkpoints', 2 * per)}" in capsys.readouterr().out
    # Read back from the store alone: the last checkpoint's optimizer has seen every update
    # (a learner that came back fresh would have seen only those after the kill).
    checkpoint = load_run_checkpoint(checkpoint_path(f"{run_dir}/checkpoints", 4 * per))
    steps = {int(s["step"]) for s in checkpoint.learner.learner["optimizer"]["state"].values()}
    assert steps == {4 * per}
    assert {"config.json", "metrics.jsonl", "checkpoints", "replay"} <= set(storage.listdir(run_dir))
    assert not any(p.name == name for p in tmp_path.rglob("*")), "nothing of the run is written locally"


def test_a_learner_restarted_where_the_store_is_unreachable_fails_naming_it(ray_session, s3_server):
    config = resolve("tictactoe", "small", TINY)
    per = config.updates_per_iteration
    name = f"s3lost-{uuid.uuid4().hex[:8]}"
    run_dir = f"s3://runs/{name}"
    stop, killed = killer(name, 2, before=s3_server.stop)
    with pytest.raises(RuntimeError) as failure:
        train(config, run_dir=run_dir, updates=5 * per, wandb_mode="disabled", stop=stop)
    assert killed == [2 * per]
    message = str(failure.value)
    assert "the learner could not restart" in message
    assert "the restarted learner cannot read its checkpoints" in message
    assert f"{run_dir}/checkpoints" in message
