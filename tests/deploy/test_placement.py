"""launch/placement.py: the Ray options of each role, by hand-written cases, and on a
real three-node Ray cluster (a script in its own process: it must not meet the session's
Ray), where each role's actor must land on the node declaring its resource."""

from __future__ import annotations

import pytest

from launch.placement import MARKER, ROLES, offered_resources, role_options, run_options
from own_ray import run_own_ray

ALL = {"actor", "learner", "replay"}


@pytest.mark.parametrize("offered", [set(), ALL])
def test_embedded_ray_places_by_cpus_only(offered):
    # Embedded: the deploy resources, even if some node declared them, are ignored.
    assert role_options("actor", embedded=True, offered=offered) == {"num_cpus": 1, "num_gpus": 0}
    assert role_options("actor", embedded=True, offered=offered, cpus=2) == {"num_cpus": 2, "num_gpus": 0}
    assert role_options("replay", embedded=True, offered=offered) == {"num_cpus": 0, "num_gpus": 0}
    assert role_options("learner", embedded=True, offered=offered) == {"num_cpus": 1, "num_gpus": 0}
    assert role_options("learner", embedded=True, offered=offered, device="cuda") == {"num_cpus": 0, "num_gpus": 1}
    assert role_options("oracle", embedded=True, offered=offered) == {"num_cpus": 1, "num_gpus": 0}
    assert role_options("evaluator", embedded=True, offered=offered) == {"num_cpus": 0, "num_gpus": 0}


def test_cluster_without_custom_resources_falls_back_to_cpus():
    for role in ROLES:
        assert role_options(role, embedded=False, offered=set()) == role_options(role, embedded=True, offered=set())
    # Resources of no role change nothing either.
    assert role_options("actor", embedded=False, offered={"tpu_pod"}) == {"num_cpus": 1, "num_gpus": 0}


def test_cluster_with_deploy_resources_confines_each_role():
    assert role_options("actor", embedded=False, offered=ALL, cpus=2) == {
        "num_cpus": 2, "num_gpus": 0, "resources": {"actor": 0.001}}
    assert role_options("replay", embedded=False, offered=ALL) == {
        "num_cpus": 0, "num_gpus": 0, "resources": {"replay": 0.001}}
    assert role_options("learner", embedded=False, offered=ALL) == {
        "num_cpus": 1, "num_gpus": 0, "resources": {"learner": 1}}
    assert role_options("learner", embedded=False, offered=ALL, device="cuda") == {
        "num_cpus": 0, "num_gpus": 1, "resources": {"learner": 1}}
    # Oracle replicas: their own nodes if the cluster has some, else the CPU workers.
    assert role_options("oracle", embedded=False, offered=ALL) == {
        "num_cpus": 1, "num_gpus": 0, "resources": {"actor": 0.001}}
    assert role_options("oracle", embedded=False, offered=ALL | {"oracle"}) == {
        "num_cpus": 1, "num_gpus": 0, "resources": {"oracle": 0.001}}
    # The evaluator on the head, with the shards: never lost with a worker host.
    assert role_options("evaluator", embedded=False, offered=ALL) == {
        "num_cpus": 0, "num_gpus": 0, "resources": {"replay": 0.001}}
    # Each role by itself: a cluster with learners only keeps the actors on plain CPUs.
    assert role_options("actor", embedded=False, offered={"learner"}) == {"num_cpus": 1, "num_gpus": 0}
    assert MARKER == 0.001


def test_run_options_gives_every_role():
    options = run_options(embedded=False, offered=["actor", "learner"], device="cuda", actor_cpus=3)
    assert options == {
        "actor": {"num_cpus": 3, "num_gpus": 0, "resources": {"actor": 0.001}},
        "replay": {"num_cpus": 0, "num_gpus": 0},
        "learner": {"num_cpus": 0, "num_gpus": 1, "resources": {"learner": 1}},
        "oracle": {"num_cpus": 3, "num_gpus": 0, "resources": {"actor": 0.001}},
        "inference": {"num_cpus": 3, "num_gpus": 0, "resources": {"actor": 0.001}},
        "evaluator": {"num_cpus": 0, "num_gpus": 0},
    }
    # An inference server on a GPU asks for one GPU, and not for a learner slot.
    assert run_options(embedded=False, offered=ALL, inference_device="cuda")["inference"] == {
        "num_cpus": 0, "num_gpus": 1}


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown role 'shard'"):
        role_options("shard", embedded=False, offered=ALL)
    with pytest.raises(ValueError, match="device 'gpu'"):
        role_options("learner", embedded=False, offered=ALL, device="gpu")
    with pytest.raises(ValueError, match="negative"):
        role_options("actor", embedded=False, offered=ALL, cpus=-1)


def test_offered_resources_reads_nodes_and_environment():
    live = {"CPU": 64.0, "GPU": 1.0, "memory": 1e11, "object_store_memory": 1e10, "node:10.0.0.1": 1.0,
            "node:__internal_head__": 1.0, "accelerator_type:A10G": 1.0, "actor": 2.0, "replay": 1.0,
            "learner": 0.0}
    assert offered_resources(live, env={}) == {"actor", "replay"}
    # Node types an autoscaler has not started yet are named in the environment.
    assert offered_resources(live, env={"SELFPLAY_PLACEMENT_RESOURCES": "learner, oracle,"}) == {
        "actor", "replay", "learner", "oracle"}


@pytest.mark.slow
def test_roles_land_on_their_nodes_of_a_real_cluster():
    result = run_own_ray("placement_cluster.py", timeout=240)
    assert result["offered"] == ["actor", "learner", "replay"]
    assert result["landed"] == {"actor": "actor", "replay": "head", "learner": "learner", "oracle": "actor",
                                "evaluator": "head"}
    # The actor node's one CPU taken, a self-play actor waits rather than use the head's.
    assert result["second_waited"] is True
    assert result["second_node"] == "actor"


def test_devices_of_the_learner_and_the_inference_servers():
    from launch.placement import inference_device, learner_device

    assert learner_device("auto", 0) == "cpu" and learner_device("auto", 1) == "cuda"
    assert learner_device("auto", 0.5) == "cpu"  # a fractional cluster GPU count below 1
    assert learner_device("cpu", 4) == "cpu"
    # Servers go to a GPU wherever the cluster has one: a whole one each where the GPUs
    # beside the learner's hold them all, else sharing the learner's (test_gpu_share.py).
    # (Before GPU sharing, 2 servers beside a learner on 2 GPUs fell back to the CPU.)
    assert inference_device("auto", 2, gpus=3, learner="cuda") == "cuda"
    assert inference_device("auto", 2, gpus=2, learner="cuda") == "cuda"
    assert inference_device("auto", 2, gpus=1, learner="cuda") == "cuda"
    assert inference_device("cuda", 2, gpus=1, learner="cuda") == "cuda"
    assert inference_device("auto", 1, gpus=1, learner="cpu") == "cuda"
    assert inference_device("auto", 2, gpus=0, learner="cpu") == "cpu"
    assert inference_device("auto", 2, gpus=0.5, learner="cpu") == "cpu"  # a fraction of a GPU is none
    assert inference_device("cpu", 1, gpus=8, learner="cuda") == "cpu"
    assert inference_device("auto", 0, gpus=8, learner="cuda") == "cpu"


def test_a_trial_reserves_its_inference_servers():
    from launch.config import resolve
    from launch.experiments.spec import trial_bundles

    config = resolve("connect4", overrides=["actors.num_actors=4", "actors.num_envs=128", "actors.inference_servers=2",
                                            "evaluation.suites=none"])  # no oracle replicas
    on_gpus = trial_bundles(config, embedded=False, offered=(), gpus=3)
    assert on_gpus.count({"GPU": 1.0}) == 3  # the learner and the two servers
    # One GPU: the learner and the two servers share it (launch/placement.py gpu_shares).
    on_one_gpu = trial_bundles(config, embedded=False, offered=(), gpus=1)
    assert [b for b in on_one_gpu if "GPU" in b] == [{"GPU": 0.5}, {"GPU": 0.25}, {"GPU": 0.25}]
    on_cpus = trial_bundles(config, embedded=False, offered=(), gpus=0)
    assert on_cpus.count({"CPU": 1.0}) == 1 + 4 + 2
    # On the embedded Ray a CPU server takes no CPU (the waiting actors leave theirs): no bundle.
    assert trial_bundles(config, embedded=True, gpus=0).count({"CPU": 1.0}) == 1 + 4
    # On a cluster the shards and the evaluator ask for the head's marker: a bundle each.
    on_head = trial_bundles(config, embedded=False, offered=ALL, gpus=0)
    assert on_head.count({"replay": 0.001}) == config.replay.shards
    with_evaluator = resolve("connect4", overrides=["actors.num_actors=4", "evaluation.suites=default"])
    assert trial_bundles(with_evaluator, embedded=False, offered=ALL, gpus=0).count(
        {"replay": 0.001}) == with_evaluator.replay.shards + 1
