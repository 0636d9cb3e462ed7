"""AZAL's self-play speed beside AlphaZero's on Connect Four, from a cold oracle store.

    python -m benchmarks.azal_speed [--steps 48] [--repeats 2] [--replicas 1 2] [--json]

Both collectors (``actors.alphazero.AlphaZeroCollector``) run in this process, as one
self-play actor does, with the Connect Four AZAL preset's search, environments and
network (fresh weights, the same torch seed) and the same collector seed, one
collection call of ``--steps`` moves each. AZAL's labels come from an
``OracleClient`` with ``--replicas`` replicas on an embedded Ray of 2 CPUs, each
replica taking no CPU of its own (as a run places them: they use the cores the actors
leave), over a fresh, empty store for every AZAL call. Each repeat runs AlphaZero and
AZAL with every replica count, the order rotating between repeats, so that a change in
the machine's load falls on all of them.

Reports positions/s (environment steps / the call's seconds, AZAL's wait for its last
labels included), AZAL/AlphaZero per repeat (median over repeats), the share of AZAL's
call its actor spent on labels (``timings["labels"]``: sending batches, and waiting for
answers not yet come) and the replicas' solving seconds. The same script measures an
older tree of the code: run it from a checkout with ``PYTHONPATH`` pointing there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import ray
import torch

import algorithms
from actors.alphazero import AlphaZeroCollector
from actors.labels import OracleLabeler
from algorithms.azal import AzalCollector
from launch.config import resolve
from inference.tensors import numpy_weights
from inference.networks import build_network
from lifecycle.ray_start import start_ray
from oracle_service.service import OracleClient
from inference.network import NetworkEvaluator


def collect_once(config, network, steps: int, replicas: int | None, seed: int) -> dict:
    """One collection call of ``steps`` moves: AlphaZero (``replicas`` None) or AZAL with
    that many oracle replicas over a fresh store. Its speed and where its time went."""
    game = config.game_network.make_game()
    actors = config.actors
    client, store_dir, labeler = None, None, None
    if replicas is not None:
        store_dir = tempfile.mkdtemp(prefix="azal-store-")
        client = OracleClient(replicas, os.path.join(store_dir, "oracle.sqlite"),
                              replica_options={"num_cpus": 0}, engine=config.oracle.engine)
        settings = algorithms.configured(config.algo, config.algorithm).settings  # AZAL's own
        labeler = OracleLabeler(game, client, min_ply=settings.label_min_ply)
    try:
        options = dict(mcts=actors.mcts, seed=seed, search=actors.search, gumbel=actors.gumbel)
        collector = (AlphaZeroCollector(game, actors.envs_per_actor, **options) if labeler is None
                     else AzalCollector(game, actors.envs_per_actor, labeler=labeler, **options))
        start = time.perf_counter()
        rows = collector.collect(network, steps)
        seconds = time.perf_counter() - start
        out = {"algo": "alphazero" if replicas is None else "azal", "replicas": replicas,
               "positions": collector.positions, "rows": int(len(rows["target"])), "seconds": seconds,
               "positions_per_s": collector.positions / seconds,
               "labels_share": collector.timings["labels"] / seconds}
        if client is not None:
            oracle = client.stats_summary()
            out.update(labelled=int((rows["aux_policy"].sum(axis=1) > 0).sum()),
                       solved=int(oracle["oracle/solved"]), store_hits=int(oracle["oracle/store_hits"]),
                       solve_seconds=oracle["oracle/solve_seconds"])
        return out
    finally:
        if client is not None:
            client.close()
            shutil.rmtree(store_dir, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=48, help="moves of every environment per collection call")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--replicas", type=int, nargs="+", default=[1], help="AZAL's oracle replicas (one run each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    config = resolve("connect4", algo="azal")
    game = config.game_network.make_game()
    network = NetworkEvaluator(game, config.network, inference_dtype=config.actors.inference_dtype)
    torch.manual_seed(args.seed)
    network.set_weights(numpy_weights(build_network(game, config.network)), version=0)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-bench-"))
    started = start_ray(num_cpus=2, log_to_driver=False)
    arms: list[int | None] = [None, *args.replicas]  # None: AlphaZero
    runs = []
    try:
        for r in range(args.repeats):
            order = arms[r % len(arms):] + arms[:r % len(arms)]
            for replicas in order:
                run = {"repeat": r, **collect_once(config, network, args.steps, replicas, args.seed)}
                runs.append(run)
                print(json.dumps(run), flush=True)
    finally:
        if started:
            ray.shutdown()
    if args.json:
        print(json.dumps(runs, indent=1))
    a = config.actors
    print(f"\nConnect Four, AZAL preset: {a.envs_per_actor} envs, {a.mcts.simulations} simulations, "
          f"{args.steps} moves per call, {args.repeats} repeats (medians)")
    print("| collector | oracle replicas | positions/s | x AlphaZero | labels share of the call | solve s |")
    print("|---|---|---|---|---|---|")
    alphazero = {run["repeat"]: run["positions_per_s"] for run in runs if run["replicas"] is None}
    for replicas in arms:
        mine = [run for run in runs if run["replicas"] == replicas]
        speed = statistics.median(run["positions_per_s"] for run in mine)
        if replicas is None:
            print(f"| AlphaZero | - | {speed:.1f} | 1 | - | - |")
            continue
        ratio = statistics.median(run["positions_per_s"] / alphazero[run["repeat"]] for run in mine)
        share = statistics.median(run["labels_share"] for run in mine)
        solve = statistics.median(run["solve_seconds"] for run in mine)
        print(f"| AZAL | {replicas} | {speed:.1f} | {ratio:.2f} | {share:.0%} | {solve:.1f} |")


if __name__ == "__main__":
    main()
