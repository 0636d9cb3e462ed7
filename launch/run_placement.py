"""Where a run's roles go on the Ray cluster it finds: the wait for a GPU node that has
not joined yet, the checks that refuse a run the cluster cannot place, the learner's and
inference servers' devices and GPU shares, and each role's Ray options
(``launch/placement.py``'s rules)."""

from __future__ import annotations

import time
from typing import NamedTuple

import ray

from launch.config import ConfigError, TrainConfig
from launch.placement import (MARKER, gpu_shares, inference_device, learner_device, offered_resources, role_options,
                              run_options)
from learner.config import LearnerConfig

GPU_WAIT_REPORT_S = 30.0  # how often a run waiting for a GPU node says so


def resources_after_gpu_wait(learner: LearnerConfig, *, embedded: bool, report_every_s: float = GPU_WAIT_REPORT_S,
                             poll_s: float = 1.0) -> tuple[dict, str]:
    """``(ray.cluster_resources(), what the wait found)`` for a run about to make
    ``learner.device`` concrete. ``ray up`` and KubeRay report a cluster up before its GPU
    worker has booted and pulled its image (minutes), and ``auto`` decides on the GPUs
    alive at that moment: a run on a cluster it joined (not ``embedded``) whose learner
    may take a GPU (device auto or cuda) first waits, at most ``learner.wait_for_gpu_s``
    seconds, for a node with one, printing every ``report_every_s`` seconds that it waits.
    The second value is the reason that goes into ``learner.device_note``."""
    resources = ray.cluster_resources()
    limit = learner.waits_for(embedded=embedded, gpu_node_to_come=not embedded and learner_node_to_come()).wait_for_gpu_s
    if resources.get("GPU", 0) >= 1 or learner.device == "cpu" or embedded:  # no node will join an embedded Ray
        return resources, ""
    if limit <= 0:
        return resources, "learner.wait_for_gpu_s=0: no wait for a GPU node to join"
    start = time.monotonic()
    next_report = start
    while resources.get("GPU", 0) < 1:
        waited = time.monotonic() - start
        if waited >= limit:
            found = f"no GPU node joined within learner.wait_for_gpu_s={limit:g} s"
            print(f"learner.device={learner.device}: {found}", flush=True)
            return resources, found
        if time.monotonic() >= next_report:
            print(f"learner.device={learner.device}: waiting for a node with a GPU to join the Ray cluster "
                  f"({waited:.0f} of {limit:g} s, learner.wait_for_gpu_s)", flush=True)
            next_report += report_every_s
        time.sleep(min(poll_s, limit - waited))
        resources = ray.cluster_resources()
    found = f"a GPU node joined after {time.monotonic() - start:.0f} s of waiting"
    print(f"learner.device={learner.device}: {found}", flush=True)
    return resources, found


def learner_node_to_come() -> bool:
    """Whether the cluster declares a node type for the learner that no live node is yet:
    ``$SELFPLAY_PLACEMENT_RESOURCES`` lists ``learner`` (the ``deploy/`` clusters' nodes do,
    for GPU nodes their autoscaler starts) and no live node offers it. The one case
    ``learner.wait_for_gpu_s=auto`` waits for: a cluster that declares no learner node type
    (``ray start`` by hand) has no GPU node coming, and one whose learner nodes are live has
    them. Needs Ray connected."""
    return "learner" in offered_resources() and ray.cluster_resources().get("learner", 0) <= 0


class RunPlacement(NamedTuple):
    options: dict  # role -> its Ray actor options (learner, actor, replay, inference, oracle, evaluator)
    inference_device: str  # the inference servers' device: cpu or cuda


def place_run(config: TrainConfig, fixed_cluster: bool) -> RunPlacement:
    """Plain CPU/GPU requests on the embedded Ray (``fixed_cluster``); on a cluster, each
    role confined to the nodes declaring its resource (``deploy/``)."""
    resources = ray.cluster_resources()
    gpus = resources.get("GPU", 0)
    use_gpu = _learner_gets_gpu(config, resources, fixed_cluster)
    device = "cuda" if use_gpu else "cpu"
    serving = _serving_device(config, gpus, use_gpu)
    # The learner's and each inference server's GPU share: a whole GPU each where the
    # cluster has them, else one GPU shared (launch/placement.py), recorded as the
    # num_gpus of their options.
    learner_gpus, inference_gpus = gpu_shares(device, serving, config.actors.inference_servers, gpus)
    offered = () if fixed_cluster else offered_resources()
    options = run_options(embedded=fixed_cluster, offered=offered, device=device, inference_device=serving,
                          learner_gpus=learner_gpus, inference_gpus=inference_gpus)
    if fixed_cluster and serving == "cpu":
        # A CPU inference server on the embedded Ray takes no CPU of its own: the actors
        # waiting for its answers leave theirs to it (as for oracle replicas, below).
        options["inference"] = {**options["inference"], "num_cpus": 0}
    # An oracle replica on the embedded Ray takes no CPU of its own: the actor that
    # waits for its labels leaves its CPU to it.
    options["oracle"] = role_options("oracle", embedded=fixed_cluster, offered=offered,
                                     cpus=0 if fixed_cluster else 1)
    if not fixed_cluster:
        options["learner"] = cpu_learner_where_nodes_are(options["learner"], offered, resources)
    return RunPlacement(options, serving)


def cpu_learner_where_nodes_are(learner: dict, offered, live: dict) -> dict:
    """The Ray options ``learner`` of a learner on a cluster, where it can start: a CPU
    learner (``learner.device`` cpu, or auto after the GPU wait found no GPU) confined to
    the ``learner`` nodes while none is live (``live``: ``ray.cluster_resources()``; the
    name only in ``$SELFPLAY_PLACEMENT_RESOURCES``, ``offered``) would wait for the GPU node
    that did not join. It goes to the CPU workers (``actor``) instead, said on the console;
    a GPU learner keeps its request (it needs that node)."""
    if learner.get("num_gpus") or learner.get("resources", {}).get("learner") is None or live.get("learner", 0) > 0:
        return learner
    moved = {k: v for k, v in learner.items() if k != "resources"}
    if "actor" in offered:
        moved["resources"] = {"actor": MARKER}
    print("learner on the CPU: no node declaring `learner` has joined the cluster, so it trains on "
          f"{'a CPU worker (`actor`)' if 'actor' in offered else 'any node with a free CPU'}", flush=True)
    return moved


def _learner_gets_gpu(config: TrainConfig, resources: dict, fixed_cluster: bool) -> bool:
    """Whether the learner gets a GPU; a pool that cannot be placed is refused here."""
    gpus, cpus = resources.get("GPU", 0), resources.get("CPU", 0)
    if config.learner.device == "cuda" and gpus < 1:
        raise ConfigError("learner.device=cuda but the Ray cluster offers no GPU (one still joining is waited "
                          f"for with learner.wait_for_gpu_s, {config.learner.wait_for_gpu_s:g} s here)")
    use_gpu = learner_device(config.learner.device, gpus) == "cuda"
    needed = config.actors.num_actors + (0 if use_gpu else 1)
    if fixed_cluster and needed > cpus:
        # Ray would wait forever for the missing CPU: refuse now, naming the numbers.
        # (An autoscaling cluster, reached with --address, adds nodes instead.)
        raise ConfigError(f"actors.num_actors={config.actors.num_actors} self-play actors and a "
                          f"{'GPU' if use_gpu else 'CPU'} learner need {needed} CPUs; "
                          f"the Ray cluster has {cpus:g}")
    return use_gpu


def _serving_device(config: TrainConfig, gpus: float, use_gpu: bool) -> str:
    """The inference servers' device: the GPU wherever the cluster has one (``auto``: a
    whole one each, or a share of the learner's, ``gpu_shares``), a named error where
    ``cuda`` is asked and the cluster has no GPU."""
    actors = config.actors
    device = inference_device(actors.inference_device, actors.inference_servers, gpus, "cuda" if use_gpu else "cpu")
    if actors.inference_servers and actors.inference_device == "cuda" and device != "cuda":
        raise ConfigError(f"actors.inference_device=cuda: {actors.inference_servers} inference servers need a GPU "
                          f"(shared with the learner if need be); the Ray cluster has {gpus:g}")
    return device
