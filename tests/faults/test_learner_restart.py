"""A learner process killed mid-run (on the session's Ray): Ray restarts it, it reloads
the newest good checkpoint by itself, and the run goes on from that checkpoint's update
counter to the end of its budget. With the newest checkpoint truncated, the restarted
learner falls back to the one before and the updates since are redone. Killed inside
its ``train`` call, the call is made again on the restarted learner."""

from __future__ import annotations

import threading

import pytest
import ray

from launch.config import resolve
from launch.metrics import read_metrics
from launch.restarts import LearnerLink
from launch.train import train
from learner.checkpoint import checkpoint_path, load_run_checkpoint

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64", "evaluation.every=1", "checkpoint_every=1"]


@pytest.mark.parametrize("corrupt_newest", [False, True])
def test_killed_learner_restarts_from_its_checkpoint(ray_session, tmp_path, capsys, corrupt_newest):
    config = resolve("tictactoe", "small", TINY + ["actors.num_actors=1"])
    per = config.updates_per_iteration
    run_dir = tmp_path / "run"
    killed = []

    def kill_after_second_iteration(record):
        if record["iteration"] == 2 and not killed:  # its checkpoint (2 * per updates) is written
            if corrupt_newest:  # as if the machine had died while writing it
                newest = checkpoint_path(run_dir / "checkpoints", 2 * per)
                newest.write_bytes(newest.read_bytes()[:200])
            ray.kill(ray.get_actor(f"{run_dir.name}-learner"), no_restart=False)
            killed.append(record["updates"])
        return False

    _, last = train(config, run_dir=run_dir, updates=5 * per, wandb_mode="disabled",
                    stop=kill_after_second_iteration)
    assert killed == [2 * per]
    restored = per if corrupt_newest else 2 * per
    lost = 2 * per - restored
    records = [r for r in read_metrics(run_dir) if r["iteration"] >= 1 and "loss" in r and "end" not in r]
    # The counter goes on from the checkpoint's: iteration 3 trains on from `restored`.
    expected = [per, 2 * per] + list(range(restored + per, 5 * per + 1, per))
    assert [r["updates"] for r in records] == expected
    assert last["updates"] == 5 * per
    assert last["faults/learner_restarts_total"] == 1 and last["faults/learner_updates_lost_total"] == lost
    assert sum(r["faults/learner_restarts"] for r in records) == 1
    assert last["faults/actor_restarts_total"] == 0 and last["faults/replay_restarts_total"] == 0
    out = capsys.readouterr().out
    assert (f"learner restarted from {checkpoint_path(run_dir / 'checkpoints', restored)} with {restored} updates "
            f"({lost} updates lost") in out
    # Independent of the counters: Adam's step count in the last checkpoint is the number
    # of gradient steps the optimizer state has seen. A learner that came back fresh would
    # have seen only those after the kill.
    checkpoint = load_run_checkpoint(checkpoint_path(run_dir / "checkpoints", 5 * per))
    steps = {int(s["step"]) for s in checkpoint.learner.learner["optimizer"]["state"].values()}
    assert steps == {5 * per}
    if not corrupt_newest:
        # The fault totals are the run's: a resumed run goes on counting from them.
        _, resumed = train(config, resume=run_dir, updates=6 * per, wandb_mode="disabled")
        assert resumed["updates"] == 6 * per and resumed["faults/learner_restarts"] == 0
        assert resumed["faults/learner_restarts_total"] == 1
        assert resumed["faults/seconds_lost_total"] == last["faults/seconds_lost_total"] > 0


def test_killed_learner_restarts_in_the_async_schedule(ray_session, tmp_path, capsys):
    """Asynchronous: actors keep collecting while the learner restarts; the chunk trained
    after the restart goes on from the checkpoint written right before the kill."""
    config = resolve("tictactoe", "small", TINY + ["actors.num_actors=1", "schedule=async", "samples_per_insert=2",
                                                    "max_policy_lag=2", "actors.collect_steps=8", "learner.epochs_per_iteration=4"])
    budget = 4 * config.updates_per_iteration
    run_dir = tmp_path / "run"
    killed = []

    def kill_after_second_chunk(record):
        if record["iteration"] == 2 and not killed:
            ray.kill(ray.get_actor(f"{run_dir.name}-learner"), no_restart=False)
            killed.append(record["updates"])
        return False

    _, last = train(config, run_dir=run_dir, updates=budget, wandb_mode="disabled", stop=kill_after_second_chunk)
    records = [r for r in read_metrics(run_dir) if r["iteration"] >= 1 and "loss" in r and "end" not in r]
    updates = [r["updates"] for r in records]
    assert updates == sorted(set(updates)) and updates[1] == killed[0]  # never back, never repeated
    assert last["updates"] == budget
    assert last["faults/learner_restarts_total"] == 1 and last["faults/learner_updates_lost_total"] == 0
    assert (f"learner restarted from {checkpoint_path(run_dir / 'checkpoints', killed[0])} with {killed[0]} "
            f"updates (0 updates lost") in capsys.readouterr().out
    checkpoint = load_run_checkpoint(checkpoint_path(run_dir / "checkpoints", budget))
    assert {int(s["step"]) for s in checkpoint.learner.learner["optimizer"]["state"].values()} == {budget}


def test_learner_killed_inside_its_train_call(ray_session, tmp_path, monkeypatch):
    """The kill lands while the driver waits on ``train`` (200 updates, about a second
    here; the kill comes 0.2 s in): the restarted learner reloads the checkpoint of the
    iteration before, the interrupted call is made again, and no update is lost or
    counted twice."""
    config = resolve("tictactoe", "small", TINY + ["actors.num_actors=1", "learner.epochs_per_iteration=100"])
    per = config.updates_per_iteration
    seen = {"train_calls": 0, "in_train": False, "waits_in_train": 0}
    call, wait = LearnerLink.call, LearnerLink.await_restart

    def learner_call(self, method, *args):
        if method != "train":
            return call(self, method, *args)
        seen["train_calls"] += 1
        if seen["train_calls"] == 3:  # iteration 3's training
            threading.Timer(0.2, ray.kill, args=(self.learner,), kwargs={"no_restart": False}).start()
        seen["in_train"] = True
        try:
            return call(self, method, *args)
        finally:
            seen["in_train"] = False

    def await_learner(self, error):
        seen["waits_in_train"] += seen["in_train"]
        return wait(self, error)

    monkeypatch.setattr(LearnerLink, "call", learner_call)
    monkeypatch.setattr(LearnerLink, "await_restart", await_learner)
    run_dir = tmp_path / "run"
    _, last = train(config, run_dir=run_dir, updates=5 * per, wandb_mode="disabled")
    assert seen["waits_in_train"] == 1  # the kill interrupted a train call
    records = [r for r in read_metrics(run_dir) if r["iteration"] >= 1 and "loss" in r and "end" not in r]
    assert [r["updates"] for r in records] == [i * per for i in range(1, 6)]
    assert last["faults/learner_restarts_total"] == 1 and last["faults/learner_updates_lost_total"] == 0
    assert records[2]["faults/learner_restarts"] == 1 and records[2]["faults/seconds_lost"] > 0
    checkpoint = load_run_checkpoint(checkpoint_path(run_dir / "checkpoints", 5 * per))
    assert {int(s["step"]) for s in checkpoint.learner.learner["optimizer"]["state"].values()} == {5 * per}
