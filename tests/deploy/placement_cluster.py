"""A three-node Ray cluster on this machine, for tests/deploy/test_placement.py: run as a
script (its own process, its own Ray), prints one JSON line of where each role landed.

Nodes: the head (1 CPU, ``replay``), an actor node (1 CPU, ``actor: 2``) and a learner
node (1 CPU, ``learner: 1``). Each role's actor is created with
``launch.placement.role_options`` and reports its node. Then the actor node's one CPU is
held by one self-play actor: a second one must wait (it may not use the head's free
CPU), and start on the actor node once the first is gone.
"""

from __future__ import annotations

import json
import os
import tempfile

import ray
from ray.cluster_utils import Cluster

from launch.placement import offered_resources, role_options

STORE = 80 * 1024 * 1024  # object store per node: the test moves no data


@ray.remote
class Where:
    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()


def main() -> None:
    # The test passes its own temp dir; run by hand, a fresh one.
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-placement-"))
    os.environ["RAY_AUTH_MODE"] = "disabled"
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"replay": 1}, "object_store_memory": STORE, "include_dashboard": False})
    actor_node = cluster.add_node(num_cpus=1, resources={"actor": 2}, object_store_memory=STORE)
    learner_node = cluster.add_node(num_cpus=1, resources={"learner": 1}, object_store_memory=STORE)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        offered = offered_resources(env={})
        nodes = {cluster.head_node.node_id: "head", actor_node.node_id: "actor", learner_node.node_id: "learner"}
        landed = {}
        for role in ("actor", "replay", "learner", "oracle", "evaluator"):
            a = Where.options(**role_options(role, embedded=False, offered=offered)).remote()
            landed[role] = nodes[ray.get(a.node.remote(), timeout=60)]
            ray.kill(a)
        # The actor node's one CPU taken, a second self-play actor waits for it.
        first = Where.options(**role_options("actor", embedded=False, offered=offered)).remote()
        ray.get(first.node.remote(), timeout=60)
        second = Where.options(**role_options("actor", embedded=False, offered=offered)).remote()
        ready, _ = ray.wait([second.node.remote()], timeout=3)
        waited = not ready
        ray.kill(first)
        second_node = nodes[ray.get(second.node.remote(), timeout=60)]
        print(json.dumps({"offered": sorted(offered), "landed": landed, "second_waited": waited,
                          "second_node": second_node}))
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
