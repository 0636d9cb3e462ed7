"""No wait is endless: a learner that does not start (no node offers what it asks) or does
not come back (killed, restarts impossible) ends the run within ``learner.restart_wait_s``
with an error naming that wait and the setting to raise; the run writes its end row and
keeps its newest checkpoint pair. A call to another role's actor (a collection, an
evaluation) is waited for while its actor works on it, and within the same bound while the
actor is away (``RoleWatch``). The waits' ``auto`` is the embedded Ray's or a cluster's, and
a CPU learner does not wait for a ``learner`` node that never joined."""

from __future__ import annotations

import time

import pytest

import algorithms
from launch.config import ConfigError, apply_overrides, resolve
from launch.faults import FaultLedger
from launch.metrics import read_metrics
from launch.placement import MARKER
from launch.records import RunCounters
from launch.restarts import LearnerLink, RoleWatch, WaitExpired
from launch.run_placement import cpu_learner_where_nodes_are
from learner.config import CLUSTER_NODE_WAIT_S, EMBEDDED_RESTART_WAIT_S, LearnerConfig

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=1", "learner.batch_size=64", "evaluation.suites=none",
        "checkpoint_every=1", "actors.num_actors=1"]


def test_the_waits_auto_is_the_embedded_rays_or_a_clusters():
    auto = LearnerConfig()
    embedded = auto.waits_for(embedded=True)
    assert (embedded.wait_for_gpu_s, embedded.restart_wait_s) == (0.0, EMBEDDED_RESTART_WAIT_S)
    # A cluster's covers a GPU node's boot and image pull (learner/config.py says what it
    # assumes), for a restart always, for a first GPU node where one is to come.
    coming = auto.waits_for(embedded=False, gpu_node_to_come=True)
    assert coming.wait_for_gpu_s == coming.restart_wait_s == CLUSTER_NODE_WAIT_S >= 900
    # A cluster that declares no learner node type still to join (one started by hand, or
    # one whose learner nodes are live) waits for no GPU.
    none = auto.waits_for(embedded=False)
    assert (none.wait_for_gpu_s, none.restart_wait_s) == (0.0, CLUSTER_NODE_WAIT_S)
    given = LearnerConfig(wait_for_gpu_s=5, restart_wait_s="7").waits_for(embedded=False)
    assert (given.wait_for_gpu_s, given.restart_wait_s) == (5.0, 7.0)  # a number given is kept


def test_a_wait_bound_is_auto_or_seconds():
    config = resolve("tictactoe", overrides=["learner.restart_wait_s=30"])
    assert config.learner.restart_wait_s == 30.0
    assert apply_overrides(config, ["learner.restart_wait_s=auto"]).learner.restart_wait_s == "auto"
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(ConfigError, match="restart_wait_s must be"):
            apply_overrides(config, [f"learner.restart_wait_s={bad}"])


def test_a_cpu_learner_does_not_wait_for_a_learner_node_that_never_joined(capsys):
    cpu = {"num_cpus": 1, "num_gpus": 0, "resources": {"learner": 1}}
    offered = {"actor", "learner", "replay"}  # `learner` listed by the deploy configs, no such node live
    moved = cpu_learner_where_nodes_are(cpu, offered, live={"CPU": 64, "actor": 2})
    assert moved == {"num_cpus": 1, "num_gpus": 0, "resources": {"actor": MARKER}}
    assert "no node declaring `learner` has joined" in capsys.readouterr().out
    assert cpu_learner_where_nodes_are(cpu, offered, live={"CPU": 72, "learner": 1}) == cpu  # its node is there
    gpu = {"num_cpus": 0, "num_gpus": 1, "resources": {"learner": 1}}
    assert cpu_learner_where_nodes_are(gpu, offered, live={"CPU": 64}) == gpu  # a GPU learner needs its node


def test_a_learner_that_no_node_can_take_ends_the_wait_with_its_setting(ray_session):
    """The real learner actor, asking for a resource no node offers: Ray never places it."""
    import ray

    from learner.actor import LearnerActor

    config = resolve("tictactoe", "small", TINY)
    learner = LearnerActor.options(num_cpus=0, resources={"learner": 1}).remote(
        game_network=config.game_network, config=config.learner, algo=algorithms.descriptor(config.algo),
        replay=None, seed=0)
    link = LearnerLink(learner, RunCounters(), FaultLedger([]), wait_s=2.0)
    began = time.monotonic()
    try:
        with pytest.raises(WaitExpired, match=r"the learner did not start within learner.restart_wait_s=2 s.*"
                                              r"--set learner.restart_wait_s=SECONDS"):
            link.wait_started()
    finally:
        ray.kill(learner, no_restart=True)
    assert 2.0 <= time.monotonic() - began < 15.0


def test_a_learner_that_never_comes_back_ends_the_run_with_its_end_row(ray_session, tmp_path):
    """The learner killed for good after the second iteration's checkpoint: the run ends
    within learner.restart_wait_s with the error, an end row that says so, and that pair.
    The bound also covers the learner's start (a process importing torch on a loaded
    machine: 30 s under a load of 12 on 2 cores), hence 45 s."""
    import ray

    from learner.checkpoint import latest_checkpoint
    from launch.train import train

    config = resolve("tictactoe", "small", TINY + ["learner.restart_wait_s=45"])
    run_dir = tmp_path / "never-back"
    killed = {}

    def stop(record):
        if record["iteration"] == 2:
            ray.kill(ray.get_actor(f"{run_dir.name}-learner"), no_restart=True)
            killed["at"], killed["updates"] = time.monotonic(), record["updates"]
        return False

    with pytest.raises(WaitExpired, match=r"the learner did not come back within learner.restart_wait_s=45 s"):
        train(config, run_dir=run_dir, updates=20 * config.updates_per_iteration, wandb_mode="disabled", stop=stop)
    # Bounded: the wait itself (45 s), then the end row and the roles stopped.
    assert 45.0 <= time.monotonic() - killed["at"] < 45.0 + 60.0
    end = read_metrics(run_dir)[-1]
    assert end["end"] == "error" and "learner.restart_wait_s=45" in end["error"]
    assert end["updates"] == killed["updates"]
    # Its newest pair stays, and is the one --resume would take.
    newest = latest_checkpoint(run_dir / "checkpoints")
    assert newest is not None and str(newest) == end["checkpoint"]


def test_an_evaluator_no_node_takes_ends_the_run_at_its_start_with_its_end_row(ray_session, tmp_path, monkeypatch):
    """The evaluator starts first, and no node offers what it asks: the run ends within
    learner.restart_wait_s with an end row naming the evaluator's start, and no role is
    left behind (the ones after it never started)."""
    import ray

    import launch.train
    from launch.train import train

    placed = launch.train.place_run

    def evaluator_nowhere(config, fixed_cluster):
        placement, device = placed(config, fixed_cluster)
        return {**placement, "evaluator": {"num_cpus": 0, "resources": {"gone": 1}}}, device

    monkeypatch.setattr(launch.train, "place_run", evaluator_nowhere)
    config = resolve("tictactoe", "small", TINY + ["evaluation.suites=default", "learner.restart_wait_s=5"])
    run_dir = tmp_path / "no-evaluator"
    began = time.monotonic()
    with pytest.raises(WaitExpired, match=r"the evaluator's start: an actor .* past learner.restart_wait_s=5 s"):
        train(config, run_dir=run_dir, updates=config.updates_per_iteration, wandb_mode="disabled")
    assert time.monotonic() - began < 5.0 + 60.0
    end = read_metrics(run_dir)[-1]
    assert end["end"] == "error" and "the evaluator's start" in end["error"] and end["updates"] == 0
    alive = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(run_dir.name)]
    assert alive == []


def test_a_call_to_an_actor_no_node_takes_ends_the_wait_with_its_setting(ray_session):
    """A self-play actor, say, whose node is gone and not replaced: Ray keeps it pending."""
    import ray

    @ray.remote(num_cpus=0, resources={"gone": 1})
    class Placeless:
        def collect(self):
            return 1

    actor = Placeless.remote()
    watch = RoleWatch(2.0, ask_every_s=0.5)
    began = time.monotonic()
    try:
        with pytest.raises(WaitExpired, match=r"the collection: an actor \(.*Placeless\) was PENDING_CREATION for \d+ s, "
                                              r"past learner.restart_wait_s=2 s.*--set learner.restart_wait_s=SECONDS"):
            watch.get({actor.collect.remote(): actor}, "the collection")
    finally:
        ray.kill(actor, no_restart=True)
    assert 2.0 <= time.monotonic() - began < 15.0


def test_a_call_its_actor_works_on_is_waited_for_past_the_bound(ray_session):
    """The bound is for an actor away, not for a long call: a collection takes what it takes."""
    import ray

    @ray.remote(num_cpus=0)
    class Slow:
        def collect(self, seconds):
            time.sleep(seconds)
            return seconds

    actor = Slow.remote()
    watch = RoleWatch(1.0, ask_every_s=0.5)
    assert watch.get({actor.collect.remote(3.0): actor}, "the collection") == [3.0]
    ray.kill(actor)
