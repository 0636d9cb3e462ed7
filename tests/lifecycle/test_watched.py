"""lifecycle.watched on real Ray actors (the session's Ray): the log file of an actor holds
its start, the full traceback of an exception raised in a method, its start again after
its process died, and its exit; a constructor that raises leaves its traceback too. Without
a folder, the lines go to stderr."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
import ray
from ray.exceptions import ActorUnavailableError, RayActorError, RayTaskError

from lifecycle import stop, watched
from oracle_service.service import OracleClient
from replay.rows import avi_schema
from replay.service import ReplayService

# Ray's workers cannot import this test module by name: its classes travel by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Flaky:
    """A worker that fails on request in each way an actor can end."""

    def __init__(self, greeting: str):
        self.greeting = greeting

    def hello(self) -> str:
        return self.greeting

    def fail(self) -> None:
        raise ValueError("deliberate failure in a method")

    def die(self) -> None:
        os._exit(1)  # the process dies as on SIGKILL: no exit hooks, Ray restarts it

    def stop(self) -> None:
        ray.actor.exit_actor()  # a clean exit: the exit hooks run


class Busy:
    def ping(self) -> bool:
        return True

    def work(self, seconds: float) -> None:
        time.sleep(seconds)


class BrokenAtStart:
    def __init__(self):
        raise RuntimeError("deliberate failure in the constructor")

    def hello(self) -> str:
        return "never"


def wait_for_line(path: Path, text: str, timeout: float = 30.0) -> str:
    """The log's text once it holds ``text`` (a dying process writes its last lines late)."""
    deadline = time.monotonic() + timeout
    while True:
        log = path.read_text() if path.exists() else ""
        if text in log:
            return log
        if time.monotonic() > deadline:
            raise AssertionError(f"{path}: no line with {text!r} after {timeout:.0f} s; it holds:\n{log}")
        time.sleep(0.1)


def test_actor_log_holds_start_traceback_restart_and_exit(ray_session, tmp_path):
    actor = ray.remote(num_cpus=0, max_restarts=1, max_task_retries=0)(watched(Flaky)).options(
        name="lifecycle-test-flaky").remote("hi", log_dir=str(tmp_path))
    assert ray.get(actor.hello.remote()) == "hi"  # the watched class keeps the worker's arguments
    log_path = tmp_path / "lifecycle-test-flaky.log"
    wait_for_line(log_path, "started on node")

    with pytest.raises(RayTaskError, match="deliberate failure in a method"):
        ray.get(actor.fail.remote())
    log = wait_for_line(log_path, "ValueError: deliberate failure in a method")
    assert "crashed in fail" in log and "Traceback (most recent call last)" in log
    assert 'in fail\n    raise ValueError("deliberate failure in a method")' in log  # the full traceback

    with pytest.raises(RayActorError):
        ray.get(actor.die.remote())
    assert hello_after_restart(actor) == "hi"  # Ray restarted it
    log = wait_for_line(log_path, "started (restarted by Ray)")
    assert log.count(": started") == 2

    with pytest.raises(RayActorError):
        ray.get(actor.stop.remote())
    log = wait_for_line(log_path, "exiting")
    lines = [line for line in log.splitlines() if "lifecycle." in line]
    assert [line.split(": ", 1)[1].split(" on node")[0] for line in lines] == [
        "started", "crashed in fail", "started (restarted by Ray)", "exiting"]


def hello_after_restart(actor, timeout: float = 60.0) -> str:
    """The restarted actor's greeting: a call made while Ray is still restarting it (slow
    under load) fails as unavailable, since the actor retries no task; call again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ray.get(actor.hello.remote())
        except ActorUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_constructor_traceback_in_the_log(ray_session, tmp_path):
    actor = ray.remote(num_cpus=0)(watched(BrokenAtStart)).options(name="lifecycle-test-broken").remote(
        log_dir=str(tmp_path))
    with pytest.raises(RayActorError, match="deliberate failure in the constructor"):
        ray.get(actor.hello.remote())
    log = wait_for_line(tmp_path / "lifecycle-test-broken.log", "RuntimeError: deliberate failure in the constructor")
    assert "crashed while starting" in log and "Traceback (most recent call last)" in log


def test_unnamed_actor_log_is_named_by_class_and_actor_id(ray_session, tmp_path):
    actor = ray.remote(num_cpus=0)(watched(Flaky)).remote("hi", log_dir=str(tmp_path))
    ray.get(actor.hello.remote())
    actor_id = actor._actor_id.hex()
    wait_for_line(tmp_path / f"Flaky-{actor_id[:12]}.log", "started on node")
    ray.kill(actor)


def test_stop_ends_actors_with_an_exit_line_and_kills_a_busy_one(ray_session, tmp_path):
    Actor = ray.remote(num_cpus=0, max_restarts=-1)(watched(Busy))
    idle = Actor.options(name="lifecycle-test-idle").remote(log_dir=str(tmp_path))
    busy = Actor.options(name="lifecycle-test-busy").remote(log_dir=str(tmp_path))
    ray.get([idle.ping.remote(), busy.ping.remote()])
    busy.work.remote(120)
    start = time.monotonic()
    stop([idle, busy], timeout=3)
    assert time.monotonic() - start < 30
    for actor in (idle, busy):  # gone for good, not restarted
        with pytest.raises(RayActorError):
            ray.get(actor.ping.remote(), timeout=30)
    assert "exiting" in wait_for_line(tmp_path / "lifecycle-test-idle.log", "exiting")
    assert "exiting" not in (tmp_path / "lifecycle-test-busy.log").read_text()  # ray.kill runs no exit hooks
    deadline = time.monotonic() + 30
    for name in ("lifecycle-test-idle", "lifecycle-test-busy"):  # their names are free again
        while name in ray.util.list_named_actors():
            assert time.monotonic() < deadline, f"{name} still held 30 s after stop"
            time.sleep(0.1)


def test_replay_shards_and_oracle_replicas_log_into_the_folder(ray_session, tmp_path):
    replay = ReplayService.create(avi_schema((3, 3, 3)), 8, 2, name="lifecycle-test-replay", log_dir=str(tmp_path))
    oracle = OracleClient(1, str(tmp_path / "store.sqlite"), replica_options={"num_cpus": 0},
                          log_dir=str(tmp_path))  # a keyword of the replicas, as every worker keyword
    logs = [tmp_path / f"lifecycle-test-replay-shard-{i}.log" for i in range(2)]
    logs.append(tmp_path / f"{oracle.replica_names[0]}.log")
    try:
        for log in logs:
            wait_for_line(log, "started on node")
    finally:
        replay.close()
        oracle.close()
    for log in logs:  # their close ends them the way that lets them say so
        wait_for_line(log, "exiting")


def test_without_a_folder_the_lines_go_to_stderr(capsys):
    worker = watched(Flaky)("hi", log_dir=None)  # in this process, not an actor
    with pytest.raises(ValueError, match="deliberate failure in a method"):
        worker.fail()
    err = capsys.readouterr().err
    assert f"lifecycle.Flaky-pid{os.getpid()}: started on node" in err
    assert "crashed in fail" in err and "ValueError: deliberate failure in a method" in err
