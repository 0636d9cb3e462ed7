"""A run's storage out for a while (an object store's or a DNS outage): the checkpoints it
refuses are tried again and the run goes on; only an outage longer than
``storage_outage_s`` ends it, with the storage's error. First the budget's rule, over a run
whose checkpoints fail as a storage would; then a real run on the S3-protocol server,
stopped mid-run and started again."""

from __future__ import annotations

import pytest

import storage
from launch.config import ConfigError, resolve, validate
from launch.records import RunCounters
from launch.run_budget import RunBudget


class FailingCheckpoints:
    """A run whose next ``failures`` checkpoints raise the storage's error."""

    play_suites: list = []

    def __init__(self, failures: int):
        self.counters, self.failures, self.written = RunCounters(), failures, 0

    def checkpoint(self):
        if self.failures:
            self.failures -= 1
            raise storage.StorageError("run storage s3://bucket/run: write failed (ConnectionError)")
        self.written += 1


def test_a_refused_checkpoint_is_tried_again_and_the_run_goes_on(capsys):
    run = FailingCheckpoints(failures=2)
    spend = RunBudget(run, updates=100, storage_outage_s=60.0)
    spend.checkpoint()
    spend.checkpoint()  # two refused: the run goes on
    assert run.written == 0 and spend.checkpoints_failed == 2 and spend.storage_down_since is not None
    assert "trying again at the next checkpoint" in capsys.readouterr().err
    spend.checkpoint()
    assert run.written == 1 and spend.storage_down_since is None  # back: the outage is over


def test_an_outage_longer_than_its_bound_ends_the_run_with_the_storage_error():
    run = FailingCheckpoints(failures=10)
    with pytest.raises(storage.StorageError, match=r"checkpoints have failed for \d+ s \(storage_outage_s=0\)"):
        RunBudget(run, updates=100, storage_outage_s=0.0).checkpoint()


def test_the_final_checkpoint_waits_for_the_storage(monkeypatch):
    slept = []
    monkeypatch.setattr("launch.run_budget.time.sleep", slept.append)
    run = FailingCheckpoints(failures=2)
    RunBudget(run, updates=100, storage_outage_s=600.0).checkpoint(final=True)
    assert run.written == 1 and slept == [10.0, 10.0]


def test_a_negative_bound_is_refused():
    with pytest.raises(ConfigError, match="storage_outage_s must be >= 0"):
        validate(resolve("tictactoe", "small", ["storage_outage_s=-1"], algo="avi"))


def test_a_run_on_an_object_store_trains_through_its_outage(ray_session, s3_server):
    """The S3-protocol server killed after the second iteration's checkpoint and started
    again (empty, as a new endpoint would be) after the third: the third's checkpoint fails,
    the run goes on, and the fourth's is written to the store that is back."""
    import uuid

    from learner.checkpoint import checkpoint_path, latest_checkpoint
    from launch.train import train

    config = resolve("tictactoe", "small", ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4",
                                            "learner.epochs_per_iteration=2", "replay.capacity=4096",
                                            "replay.shards=1", "learner.batch_size=64", "evaluation.suites=none",
                                            "checkpoint_every=1", "actors.num_actors=1"])
    per = config.updates_per_iteration
    run_dir = f"s3://runs/outage-{uuid.uuid4().hex[:8]}"
    events = {2: s3_server.stop, 3: s3_server.start}

    def stop(record):
        events.pop(record["iteration"], lambda: None)()
        return False

    _, last = train(config, run_dir=run_dir, updates=4 * per, wandb_mode="disabled", stop=stop)
    assert not events  # the server went and came back
    assert last["updates"] == 4 * per and last["checkpoints_failed"] >= 1
    assert latest_checkpoint(f"{run_dir}/checkpoints") == checkpoint_path(f"{run_dir}/checkpoints", 4 * per)
