"""Where each role of a run goes on Ray: the ``.options(...)`` of self-play actors,
replay shards, the learner, oracle replicas, inference servers and the evaluator.

A run is the same config on one machine and on a cluster; only the counts
(``actors.num_actors``, ``replay.shards``, ``oracle.replicas``) change. What differs is where Ray
may put each actor, and that is decided here, from what the cluster declares.

The rule:

- **Embedded Ray** (no ``--address``), or a cluster that declares none of a role's
  resources: plain placement. A self-play actor or an oracle replica takes ``cpus``
  CPUs, a replay shard none (it holds memory and copies rows, no compute), the
  evaluator none (it works only at the evaluation cadence), the
  learner its GPU share (``device="cuda"``) or one CPU, an inference server on a GPU
  its GPU share. Ray puts them wherever those fit.
- **A cluster** (``--address``) whose nodes declare the custom resources of
  ``deploy/`` confines each role to the nodes that declare its resource, on top of
  its CPUs and GPUs:

  =========  ==========================================  ==============================
  role       custom resource requested                    nodes (``deploy/``)
  =========  ==========================================  ==============================
  actor      ``{"actor": 0.001}``                         CPU workers
  replay     ``{"replay": 0.001}``                        the head
  learner    ``{"learner": 1}`` (+ its GPU share, cuda)   GPU workers
  oracle     ``{"oracle": 0.001}``, else ``actor``'s      oracle or CPU workers
  inference  ``actor``'s; on a GPU its GPU share only      CPU workers, or GPU workers
  evaluator  ``replay``'s                                 the head
  =========  ==========================================  ==============================

  ``actor``, ``replay`` and ``oracle`` are markers: the request is a sliver
  (:data:`MARKER`), so a node takes as many actors as it has CPUs, whatever number
  it declares. ``learner`` counts learners: one per learner slot. A role whose
  resource the cluster does not declare falls back to plain placement.

An autoscaler reads the same requests: an actor waiting for ``actor`` starts a CPU
worker, a learner waiting for ``learner`` a GPU worker. Replay shards go to the head
because it is never scaled down and its disk is where the driver (``ray job
submit`` runs it there) writes the run directory, so shard snapshots and
checkpoints land side by side. The evaluator goes there too: the head is the one node
whose loss ends the run anyway, so an evaluator on it is never lost with a worker host
(asking for no resource, Ray would put it on any node, a CPU worker that an autoscaler
removes or a fault takes included).

The resources a cluster declares are those of its live nodes
(``ray.cluster_resources()``) and, so that a cluster whose workers are scaled to
zero still places by resources, the names in ``$SELFPLAY_PLACEMENT_RESOURCES``
(comma-separated; the ``deploy/`` configs set it on every node): see
:func:`offered_resources`.

GPU shares (:func:`gpu_shares`): where the cluster has a whole GPU for the learner and
one for each inference server (the ``deploy/`` clusters), each takes a whole GPU
(``num_gpus=1``). Where it has fewer, say one GPU node, they share: the learner asks
:data:`LEARNER_GPU_SHARE` of a GPU and the servers split the rest, so inference runs on
the GPU rather than falling back to the CPU.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping

ROLES = ("actor", "replay", "learner", "oracle", "inference", "evaluator")
MARKER = 0.001  # the share of a marker resource one actor requests (Ray's unit is 1e-4)
PLACEMENT_ENV = "SELFPLAY_PLACEMENT_RESOURCES"
_BUILTIN = ("CPU", "GPU", "memory", "object_store_memory")  # Ray's own, never custom
_BUILTIN_PREFIXES = ("node:", "accelerator_type:")
UNITS_PER_GPU = 10_000  # Ray counts a fractional resource in units of 1e-4: a share is a whole number of them
# The learner's share of a GPU it shares with the inference servers. Its update loop and
# the servers' forward passes interleave on the one device, so neither owns it; half is
# a scheduling token that lets Ray place them all on one GPU, not a memory limit (Ray
# does not enforce GPU memory: each process takes what it allocates).
LEARNER_GPU_SHARE = 0.5

# Per role: the custom resources it may be confined to, in order of preference.
# An inference server on a GPU asks for the GPU alone: ``learner`` counts learner slots.
ROLE_RESOURCES = {"actor": ("actor",), "replay": ("replay",), "learner": ("learner",), "oracle": ("oracle", "actor"),
                  "inference": ("actor",), "evaluator": ("replay",)}


def offered_resources(cluster_resources: Mapping[str, float] | None = None,
                      env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names of the custom resources the cluster declares: those of its live nodes
    (``cluster_resources``, default ``ray.cluster_resources()``; needs Ray connected)
    and those listed in ``$SELFPLAY_PLACEMENT_RESOURCES`` (node types an autoscaler
    has not started yet)."""
    if cluster_resources is None:
        import ray

        cluster_resources = ray.cluster_resources()
    env = os.environ if env is None else env
    listed = {name.strip() for name in env.get(PLACEMENT_ENV, "").split(",") if name.strip()}
    declared = {k for k, v in cluster_resources.items()
                if v > 0 and k not in _BUILTIN and not k.startswith(_BUILTIN_PREFIXES)}
    return frozenset(declared | listed)


def learner_device(device: str, gpus: float) -> str:
    """The learner's device for its config's ``device`` (auto, cpu, cuda) on a cluster
    with ``gpus`` GPUs: cuda when asked, or auto with a GPU (a missing one is the run's error)."""
    return "cuda" if device in ("auto", "cuda") and gpus >= 1 else "cpu"


def inference_device(device: str, servers: int, gpus: float, learner: str) -> str:
    """The device of ``servers`` inference servers (config ``inference_device``: auto,
    cpu, cuda): under auto or cuda, cuda wherever the cluster's ``gpus`` hold one GPU,
    the servers sharing the learner's (``learner``: its device) when there are not a
    whole one each (:func:`gpu_shares` says how much each takes); else, and under cpu,
    the CPU (a missing GPU under ``cuda`` is the run's error)."""
    return "cuda" if servers and device != "cpu" and gpus >= 1 else "cpu"


def gpu_shares(learner: str, inference: str, servers: int, gpus: float) -> tuple[float, float]:
    """The GPU shares ``(learner's, each inference server's)`` (the ``num_gpus`` of
    their options; 0 for a role not on a GPU) of a learner on ``learner`` and ``servers``
    inference servers on ``inference`` (devices: cpu, cuda) on a cluster of ``gpus`` GPUs.

    A whole GPU each where the cluster has one for each, or where no server is on a
    GPU: the options of the ``deploy/`` clusters, unchanged. Otherwise they share one
    GPU: the learner takes :data:`LEARNER_GPU_SHARE` and the servers split the rest
    (all of it without a learner on the GPU). A server's share is rounded down to Ray's
    unit (1e-4, :data:`UNITS_PER_GPU`), so the shares sum to at most one GPU: a
    fractional request must fit on one device.
    """
    learner_whole = 1 if learner == "cuda" else 0
    servers_on_gpu = servers if inference == "cuda" else 0
    if not servers_on_gpu or gpus >= learner_whole + servers_on_gpu:
        return learner_whole, (1 if servers_on_gpu else 0)
    learner_share = LEARNER_GPU_SHARE if learner == "cuda" else 0
    # Rounded down to whole units (the epsilon keeps a product such as 999.9999999 at 1000).
    units = math.floor((1 - learner_share) / servers_on_gpu * UNITS_PER_GPU + 1e-9)
    if units < 1:
        raise ValueError(f"placement: {servers} inference servers cannot share a GPU: "
                         f"each would get less than Ray's unit, 1/{UNITS_PER_GPU} GPU")
    return learner_share, units / UNITS_PER_GPU


def role_options(role: str, *, embedded: bool, offered: Iterable[str], device: str = "cpu",
                 cpus: float = 1, gpu_share: float = 1) -> dict:
    """The Ray actor options (``num_cpus``, ``num_gpus``, ``resources``) placing one
    actor of ``role`` (one of :data:`ROLES`), by the rule of the module doc.

    ``embedded``: Ray was started by the run itself (custom resources are ignored).
    ``offered``: the custom resources the cluster declares (:func:`offered_resources`,
    or the keys of ``ray.cluster_resources()``). ``device``: the learner's or the
    inference server's, ``"cpu"`` or ``"cuda"`` (other roles ignore it). ``cpus``: CPUs
    of one self-play actor, oracle replica or CPU inference server. ``gpu_share``: the
    ``num_gpus`` of the learner or inference server on cuda (:func:`gpu_shares`), a
    fraction in (0, 1] or a whole number of GPUs. Merge the result into the role's other
    options (name, restarts).
    """
    if role not in ROLE_RESOURCES:
        raise ValueError(f"placement: unknown role {role!r}; the roles are {', '.join(ROLES)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"placement: learner device {device!r} is neither 'cpu' nor 'cuda'")
    if cpus < 0:
        raise ValueError(f"placement: cpus={cpus} is negative")
    on_gpu = role in ("learner", "inference") and device == "cuda"
    if on_gpu and not (0 < gpu_share <= 1 or (gpu_share > 1 and float(gpu_share).is_integer())):
        # Ray places a fraction on one GPU and a larger request on whole GPUs only.
        raise ValueError(f"placement: gpu_share={gpu_share} of the {role} is neither in (0, 1] "
                         f"nor a whole number of GPUs")
    if role == "learner":
        options = {"num_cpus": 0, "num_gpus": gpu_share} if on_gpu else {"num_cpus": 1, "num_gpus": 0}
    elif on_gpu:
        return {"num_cpus": 0, "num_gpus": gpu_share}  # the GPU places it: no marker (see ROLE_RESOURCES)
    else:
        options = {"num_cpus": 0 if role in ("replay", "evaluator") else cpus, "num_gpus": 0}
    if embedded:
        return options
    offered = set(offered)
    for resource in ROLE_RESOURCES[role]:
        if resource in offered:
            options["resources"] = {resource: 1 if role == "learner" else MARKER}
            break
    return options


def run_options(*, embedded: bool, offered: Iterable[str], device: str = "cpu", actor_cpus: float = 1,
                inference_device: str = "cpu", learner_gpus: float = 1, inference_gpus: float = 1) -> dict:
    """``{role: role_options(role, ...)}`` for every role of a run (``device``: the
    learner's, ``inference_device``: the inference servers'; ``learner_gpus`` and
    ``inference_gpus``: their GPU shares on cuda, :func:`gpu_shares`)."""
    offered = frozenset(offered)
    return {role: role_options(role, embedded=embedded, offered=offered,
                               device=inference_device if role == "inference" else device, cpus=actor_cpus,
                               gpu_share=inference_gpus if role == "inference" else learner_gpus)
            for role in ROLES}
