"""A one-node Ray declaring one GPU, for tests/deploy/test_gpu_share.py: run as a script
(its own process, its own Ray), prints one JSON line of what each holder got.

No real GPU is needed: Ray only counts the resource it is told the node has. A learner
and two inference servers on cuda, created with the options of
``launch.placement.run_options`` for the shares of ``gpu_shares``, must all be placed
and answer at once. With whole-GPU options (before sharing) the learner holds the one
GPU and a server must wait. Last, the placement group that ``trial_bundles`` reserves
for such a trial (as Tune does, PACK) must be placed, and hold the same three.
"""

from __future__ import annotations

import json
import os
import tempfile

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from launch.placement import gpu_shares, run_options

SERVERS = 2
STORE = 80 * 1024 * 1024  # the object store: the test moves no data


@ray.remote
class Holder:
    def held(self) -> dict:
        return {"gpu": ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0),
                "ids": [str(i) for i in ray.get_gpu_ids()]}


def start(options: dict, **extra) -> list:
    """A holder with the learner's options, then one per inference server."""
    return [Holder.options(**options["learner"], **extra).remote(),
            *(Holder.options(**options["inference"], **extra).remote() for _ in range(SERVERS))]


def main() -> None:
    # The test passes its own temp dir; run by hand, a fresh one.
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-gpushare-"))
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, object_store_memory=STORE)
    try:
        gpus = ray.cluster_resources()["GPU"]
        learner_gpus, inference_gpus = gpu_shares("cuda", "cuda", SERVERS, gpus)
        shared = run_options(embedded=True, offered=(), device="cuda", inference_device="cuda",
                             learner_gpus=learner_gpus, inference_gpus=inference_gpus)
        holders = start(shared)
        # Each answers only once placed: all three hold their share of the one GPU at once.
        held = ray.get([h.held.remote() for h in holders], timeout=60)
        for h in holders:
            ray.kill(h)

        # Whole GPUs, as before sharing: the learner takes the GPU, the first server waits.
        whole = run_options(embedded=True, offered=(), device="cuda", inference_device="cuda")
        learner, server, *_ = holders = start(whole)
        ray.get(learner.held.remote(), timeout=60)
        ready, _ = ray.wait([server.held.remote()], timeout=3)
        whole_server_waited = not ready
        for h in holders:
            ray.kill(h)

        # The trial's placement group (launch/experiments/spec.py), in which Tune starts them.
        from launch.config import resolve
        from launch.experiments.spec import trial_bundles

        config = resolve("connect4", overrides=["actors.num_actors=2", "actors.num_envs=64", f"actors.inference_servers={SERVERS}",
                                                "evaluation.suites=none"])
        bundles = trial_bundles(config, embedded=True, gpus=gpus)
        group = placement_group(list(bundles), strategy="PACK")
        group_ready = group.wait(timeout_seconds=60)
        in_group = start(shared, scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=group))
        held_in_group = ray.get([h.held.remote() for h in in_group], timeout=60)
        print(json.dumps({"shares": [learner_gpus, inference_gpus], "held": [h["gpu"] for h in held],
                          "ids": [h["ids"] for h in held], "whole_server_waited": whole_server_waited,
                          "bundles": [b.get("GPU", 0.0) for b in bundles if "GPU" in b], "group_ready": group_ready,
                          "held_in_group": [h["gpu"] for h in held_in_group]}))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
