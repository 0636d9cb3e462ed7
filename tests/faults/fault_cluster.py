"""A training run on a multi-node Ray cluster on this machine, with one node killed
mid-run, for tests/faults/test_node_faults.py: run as a script (its own process, its own
Ray), ``python fault_cluster.py SCENARIO RUN_DIR``; the run writes ``RUN_DIR``, and a
stdout line ``RESULT {json}`` names the nodes involved.

Scenarios (``launch/placement.py`` puts each role on the nodes declaring its resource):

- ``actor``: the head (1 CPU, ``learner``, ``replay``) and two actor nodes (1 CPU,
  ``actor`` each). One self-play actor; after iteration 2 its node is killed, and it
  must come back on the other actor node, the spare CPU.
- ``replay``: the head (2 CPUs, ``learner``, ``actor``) and two replay nodes
  (``replay`` each). Checkpoints (and replay snapshots) every 2 iterations; after
  iteration 3, the node holding shard 0 is killed, losing the rows stored since the
  snapshot of iteration 2.

Nodes are killed hard (``remove_node(allow_graceful=False)``); Ray notices through its
health checks, shortened here so that a restart takes seconds, not the default ~16 s.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from benchmarks.soak import HEALTH, wait_until_dead
from launch.config import resolve
from launch.run_dir import prepare_run_dir
from launch.train import Run

STORE = 100 * 1024 * 1024  # object store per node
TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2", "replay.capacity=4096",
        "replay.shards=2", "learner.batch_size=64", "evaluation.every=1", "actors.num_actors=1"]
ITERATIONS = 5


def main(scenario: str, run_dir: Path) -> None:
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-faults-"))
    os.environ["RAY_AUTH_MODE"] = "disabled"
    head = {"actor": {"num_cpus": 1, "resources": {"learner": 1, "replay": 1}},
            "replay": {"num_cpus": 2, "resources": {"learner": 1, "actor": 1}}}[scenario]
    cluster = Cluster(initialize_head=True, head_node_args={
        **head, "object_store_memory": STORE, "include_dashboard": False, "_system_config": HEALTH})
    role = "actor" if scenario == "actor" else "replay"
    workers = [cluster.add_node(num_cpus=1, resources={role: 1}, object_store_memory=STORE) for _ in range(2)]
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        every = 1 if scenario == "actor" else 2
        config, run_dir = prepare_run_dir(resolve("tictactoe", "small", TINY + [f"checkpoint_every={every}"]),
                                          run_dir, None)
        run = Run(config, run_dir, wandb_mode="disabled", fixed_cluster=False)
        names = {cluster.head_node.node_id: "head", workers[0].node_id: "worker0", workers[1].node_id: "worker1"}
        where = {}

        def locate() -> str:
            if scenario == "actor":
                return names[ray.get(run.actors[0].node_id.remote(), timeout=120)]
            return names[run.replay.recoveries()[0].node_id]

        def kill(record) -> bool:
            if record["iteration"] == (2 if scenario == "actor" else 3) and "before" not in where:
                where["before"] = locate()
                where["shards_before"] = [names[r.node_id] for r in run.replay.recoveries()]
                node = next(n for n in workers if names[n.node_id] == where["before"])
                cluster.remove_node(node, allow_graceful=False)
                wait_until_dead(node.node_id)
            return False

        try:
            run.run(updates=ITERATIONS * config.updates_per_iteration, stop=kill)
            where["after"] = locate()
            where["shards_after"] = [names[r.node_id] for r in run.replay.recoveries()]
        finally:
            run.close()
        print("RESULT " + json.dumps(where), flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
