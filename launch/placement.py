"""Where each role of a run goes on Ray: the ``.options(...)`` of self-play actors,
replay shards, the learner and oracle replicas.

A run is the same config on one machine and on a cluster; only the counts
(``num_actors``, ``replay_shards``, oracle replicas) change. What differs is where Ray
may put each actor, and that is decided here, from what the cluster declares.

The rule:

- **Embedded Ray** (no ``--address``), or a cluster that declares none of a role's
  resources: plain placement. A self-play actor or an oracle replica takes ``cpus``
  CPUs, a replay shard none (it holds memory and copies rows, no compute), the
  learner one GPU (``device="cuda"``) or one CPU. Ray puts them wherever those fit.
- **A cluster** (``--address``) whose nodes declare the custom resources of
  ``deploy/`` confines each role to the nodes that declare its resource, on top of
  its CPUs and GPUs:

  =========  ==========================================  ==============================
  role       custom resource requested                    nodes (``deploy/``)
  =========  ==========================================  ==============================
  actor      ``{"actor": 0.001}``                         CPU workers
  replay     ``{"replay": 0.001}``                        the head
  learner    ``{"learner": 1}`` (+ ``num_gpus=1``, cuda)  GPU workers
  oracle     ``{"oracle": 0.001}``, else ``actor``'s      oracle or CPU workers
  inference  ``actor``'s; on a GPU ``num_gpus=1`` only     CPU workers, or GPU workers
  =========  ==========================================  ==============================

  ``actor``, ``replay`` and ``oracle`` are markers: the request is a sliver
  (:data:`MARKER`), so a node takes as many actors as it has CPUs, whatever number
  it declares. ``learner`` counts learners: one per learner slot. A role whose
  resource the cluster does not declare falls back to plain placement.

An autoscaler reads the same requests: an actor waiting for ``actor`` starts a CPU
worker, a learner waiting for ``learner`` a GPU worker. Replay shards go to the head
because it is never scaled down and its disk is where the driver (``ray job
submit`` runs it there) writes the run directory, so shard snapshots and
checkpoints land side by side.

The resources a cluster declares are those of its live nodes
(``ray.cluster_resources()``) and, so that a cluster whose workers are scaled to
zero still places by resources, the names in ``$SELFPLAY_PLACEMENT_RESOURCES``
(comma-separated; the ``deploy/`` configs set it on every node): see
:func:`offered_resources`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

ROLES = ("actor", "replay", "learner", "oracle", "inference")
MARKER = 0.001  # the share of a marker resource one actor requests (Ray's unit is 1e-4)
PLACEMENT_ENV = "SELFPLAY_PLACEMENT_RESOURCES"
_BUILTIN = ("CPU", "GPU", "memory", "object_store_memory")  # Ray's own, never custom
_BUILTIN_PREFIXES = ("node:", "accelerator_type:")

# Per role: the custom resources it may be confined to, in order of preference.
# An inference server on a GPU asks for the GPU alone: ``learner`` counts learner slots.
ROLE_RESOURCES = {"actor": ("actor",), "replay": ("replay",), "learner": ("learner",), "oracle": ("oracle", "actor"),
                  "inference": ("actor",)}


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
    cpu, cuda): a GPU each where the cluster's ``gpus`` hold them beside the learner's
    (``learner``: its device), else the CPU (a missing GPU under ``cuda`` is the run's error)."""
    spare = gpus - (1 if learner == "cuda" else 0)
    return "cuda" if servers and device != "cpu" and spare >= servers else "cpu"


def role_options(role: str, *, embedded: bool, offered: Iterable[str], device: str = "cpu",
                 cpus: float = 1) -> dict:
    """The Ray actor options (``num_cpus``, ``num_gpus``, ``resources``) placing one
    actor of ``role`` (one of :data:`ROLES`), by the rule of the module doc.

    ``embedded``: Ray was started by the run itself (custom resources are ignored).
    ``offered``: the custom resources the cluster declares (:func:`offered_resources`,
    or the keys of ``ray.cluster_resources()``). ``device``: the learner's or the
    inference server's, ``"cpu"`` or ``"cuda"`` (other roles ignore it). ``cpus``: CPUs
    of one self-play actor, oracle replica or CPU inference server. Merge the result
    into the role's other options (name, restarts).
    """
    if role not in ROLE_RESOURCES:
        raise ValueError(f"placement: unknown role {role!r}; the roles are {', '.join(ROLES)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"placement: learner device {device!r} is neither 'cpu' nor 'cuda'")
    if cpus < 0:
        raise ValueError(f"placement: cpus={cpus} is negative")
    if role == "learner":
        options = {"num_cpus": 0, "num_gpus": 1} if device == "cuda" else {"num_cpus": 1, "num_gpus": 0}
    elif role == "inference" and device == "cuda":
        return {"num_cpus": 0, "num_gpus": 1}  # the GPU places it: no marker (see ROLE_RESOURCES)
    else:
        options = {"num_cpus": 0 if role == "replay" else cpus, "num_gpus": 0}
    if embedded:
        return options
    offered = set(offered)
    for resource in ROLE_RESOURCES[role]:
        if resource in offered:
            options["resources"] = {resource: 1 if role == "learner" else MARKER}
            break
    return options


def run_options(*, embedded: bool, offered: Iterable[str], device: str = "cpu", actor_cpus: float = 1,
                inference_device: str = "cpu") -> dict:
    """``{role: role_options(role, ...)}`` for every role of a run (``device``: the
    learner's, ``inference_device``: the inference servers')."""
    offered = frozenset(offered)
    return {role: role_options(role, embedded=embedded, offered=offered,
                               device=inference_device if role == "inference" else device, cpus=actor_cpus)
            for role in ROLES}
