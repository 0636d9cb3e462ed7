"""A Ray cluster on this machine whose GPU node joins late, for tests/deploy/test_gpu_wait.py:
run as a script (its own process, its own Ray), prints one JSON line of what a run's wait
for a GPU node (``launch.run_placement.resources_after_gpu_wait``) found and what
``learner.device=auto`` then became (``launch.config.resolved``).

1. A head with no GPU: a wait bounded at 1.5 s ends with its message and the CPU.
2. The same wait on the embedded Ray, and with the bound 0: no wait at all.
3. A wait bounded at 120 s while a node declaring one GPU (Ray's ``num_gpus``, no device
   needed) joins once the wait has begun: the wait sees it, auto becomes cuda.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import threading

import ray
from ray.cluster_utils import Cluster

from launch.config import resolve, resolved
from launch.run_placement import resources_after_gpu_wait

STORE = 80 * 1024 * 1024  # object store per node: the test moves no data


def _wait(config, *, embedded: bool = False, begun: threading.Event | None = None) -> dict:
    """The wait on the live cluster, its printed lines, and the device it led to;
    ``begun`` is set as the wait starts."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if begun is not None:
            begun.set()
        resources, found = resources_after_gpu_wait(config.learner, embedded=embedded, report_every_s=0.5,
                                                    poll_s=0.1)
    final = resolved(config, cpus=resources.get("CPU", 0), gpus=resources.get("GPU", 0), gpu_wait=found)
    return {"found": found, "printed": printed.getvalue().splitlines(), "gpus": resources.get("GPU", 0),
            "device": final.learner.device, "device_note": final.learner.device_note,
            "recorded": json.loads(final.to_json())["learner"]["device_note"]}


def main() -> None:
    # The test passes its own temp dir; run by hand, a fresh one.
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-gpu-wait-"))
    os.environ["RAY_AUTH_MODE"] = "disabled"
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "num_gpus": 0, "object_store_memory": STORE, "include_dashboard": False})
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        short = resolve("tictactoe", overrides=["learner.wait_for_gpu_s=1.5"])
        out = {"no_gpu": _wait(short),
               "embedded": _wait(short, embedded=True),
               "no_wait": _wait(resolve("tictactoe", overrides=["learner.wait_for_gpu_s=0"]))}
        # The wait in a thread, the node added from this one (Ray's node start wants the
        # main thread) once the wait has begun: the node takes seconds to register, so the
        # wait sees no GPU first, then the node join.
        late, begun = {}, threading.Event()
        waiter = threading.Thread(target=lambda: late.update(
            _wait(resolve("tictactoe", overrides=["learner.wait_for_gpu_s=120"]), begun=begun)))
        waiter.start()
        assert begun.wait(timeout=60), "the wait did not begin"
        cluster.add_node(num_cpus=1, num_gpus=1, object_store_memory=STORE)
        waiter.join()
        out["late_gpu"] = late
        print(json.dumps(out))
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
