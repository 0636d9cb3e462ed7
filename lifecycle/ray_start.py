"""Ray start-up, the one place of the system that calls ``ray.init`` (every entry point:
training, ``launch experiment``, ``launch evaluate``, the dataset builders, the oracle's
book command, the benchmarks).

:func:`start_ray` leaves a Ray this process already has alone: a test session's, the
experiment runner's (its trials train in it), or ``benchmarks/gpu_node.py``'s (started
with its own CPU count before it calls ``launch.train.train``, which starts Ray too).
Else it joins the cluster at ``address`` when one is given, or starts an embedded,
single-node Ray. It returns whether it started (or joined) Ray here, so that the caller
shuts down only a Ray it owns.

The embedded Ray's options, and why:

- ``include_dashboard=False``, always: no one looks at an embedded Ray's dashboard, and
  its processes cost seconds of start-up and memory, and a port that two runs on one
  machine would both want. A cluster's head has its own (``deploy/``).
- ``log_to_driver=True`` by default: what actors print, and the tracebacks of their
  crashes, reach the console of the run that owns them (``lifecycle.watched`` also writes
  the crashes to ``logs/``). ``launch evaluate`` (whose ``--json`` is one object a program
  reads), the dataset builders and the replay and AVI speed benchmarks pass False, so
  that workers' lines do not mix with their own output.
- ``num_cpus=None`` by default: Ray counts the machine's CPUs, and a run sizes its roles
  to what Ray reports. The speed benchmarks (and ``gpu_node.py``'s small check) pass 2,
  so that their numbers compare across machines and fit a laptop.

Joining a cluster (``address``: ``auto``, ``host:port`` or ``ray://host:port``) passes no
start-up option: the cluster was started with its own (its CPUs, its dashboard), and Ray
refuses ``num_cpus`` from a driver that joins. ``log_to_driver=False`` is passed on, since
it is the driver's. Without ``address``, ``RAY_ADDRESS``, when set, is the cluster Ray
joins (Ray's own rule).
"""

from __future__ import annotations

import ray


def start_ray(address: str | None = None, *, num_cpus: int | None = None, log_to_driver: bool = True) -> bool:
    """Start an embedded Ray, or join the cluster at ``address``, unless this process
    already has Ray; returns whether Ray was started here (the caller's to shut down)."""
    if ray.is_initialized():
        return False
    if address:
        if num_cpus is not None:
            raise ValueError(f"num_cpus={num_cpus}: a driver joining the cluster at {address} takes the "
                             "cluster's CPUs; num_cpus sizes an embedded Ray only")
        ray.init(address=address, **({} if log_to_driver else {"log_to_driver": False}))
    else:
        ray.init(include_dashboard=False, log_to_driver=log_to_driver, num_cpus=num_cpus)
    return True
