"""One prepared measurement of a GPU node (docs/benchmarks.md, One GPU node): the device,
the learner alone, the inference path alone, batched MCTS with the network on the device,
and Connect Four AVI trained end to end on an embedded Ray.

    python -m benchmarks.gpu_node --minutes M --out DIR [--size auto|full|small]

Writes ``DIR/summary.json`` (every number below, with the device and versions) and the
training run's directory ``DIR/run`` (``config.json``, ``metrics.jsonl``, ``checkpoints/``),
whose newest checkpoint ``launch evaluate`` scores on any machine. Each phase is
isolated: one that fails is recorded under ``errors`` and the others still run, so a
scarce device lease never comes back empty.

- ``learner``: updates/s of ``Learner.step`` at batch 256 (the paper's), AVI loss, for
  every preset network (Connect Four and Hex MLPs, symmetrized; Othello and Go towers,
  with symmetry augmentation) and precision (fp32, tf32, bf16), CUDA graphs on; Connect
  Four fp32 also with graphs off. Blocks of 64 batches are moved to the device as
  ``LearnerWorker.train`` moves them, and the metrics are read once per block.
- ``inference``: positions/s of the Connect Four network (``ValueFunction``) from uint8
  encodings on the host to values on the host, per batch size; and of an inference server
  (``InferenceWorker``, no Ray: its batching on an asyncio loop) answering 6 concurrent
  requests of 6,144 children, the size one AVI actor step of ``for_node`` sends, without and
  with its evaluation cache (fresh positions: the cache's cost, none of its hits).
- ``mcts``: simulations/s of ``search.MCTS`` (64 simulations, Connect Four, the preset
  network with a policy head on the device), in one process per batch of trees, then in
  several processes at once sharing the device.
- ``train``: ``launch.train`` on the Connect Four ``node`` preset (the paper's, sized by
  ``launch.config.for_node`` from what Ray reports), for ``--minutes``; rows/s, updates/s, the learner's waiting, the
  inference servers' batches, the exact metrics of the final weights, and the projected
  time of the AVI paper's 2.4M updates at the measured rate.

``--size small`` (the default without CUDA; CI runs it) does the same with small sizes
and a CPU: a check that the command works, not a measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import multiprocessing
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import algorithms

BATCH = 256  # the AVI paper's batch (Table 3)
PAPER_UPDATES = 2_400_000  # Connect Four AVI's updates in the AVI paper (about 2 hours on its GPU)
SERVER_REQUESTS, SERVER_ROWS = 6, 6144  # actors per server and children per actor step under for_node


def environment() -> dict:
    import numba
    import torch

    out = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
           "numba": numba.__version__, "cpus": os.cpu_count(), "cuda": torch.version.cuda,
           "device": "cpu"}
    try:
        import ray
        out["ray"] = ray.__version__
    except ImportError as err:
        out["ray"] = f"missing: {err}"
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out.update(device=torch.cuda.get_device_name(0), gpu_memory_gb=round(props.total_memory / 2**30, 1),
                   multiprocessors=props.multi_processor_count, capability=f"{props.major}.{props.minor}")
    return out


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def time_learner(game_name: str, *, precision: str, graphs: str, device: str, seconds: float,
                 block_batches: int = 64) -> dict:
    """Updates/s of ``Learner.step`` on the preset network of ``game_name``, AVI loss."""
    import games
    from launch.config import preset_config
    from learner.learner import Learner

    preset = preset_config(game_name)
    game = games.make(game_name)
    learner = Learner(game, preset.network, lr=preset.learner.lr, device=device, seed=0, precision=precision,
                      graphs=graphs, augment=preset.learner.augment_symmetries)
    rng = np.random.default_rng(0)
    rows = block_batches * BATCH
    block = {"obs": rng.integers(0, 2, size=(rows, *game.obs_shape), dtype=np.uint8),
             "target": rng.uniform(-1, 1, size=rows).astype(np.float32)}

    def one_block() -> list[float]:
        on_device = learner.to_device(block)
        sums = None
        for i in range(block_batches):
            stats = learner.step(on_device.rows(i * BATCH, (i + 1) * BATCH))
            sums = stats if sums is None else sums + stats
        return (sums / block_batches).tolist()  # one read per block, as LearnerWorker.train

    one_block()  # warm-up: the graph is captured here
    _sync(device)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        loss = one_block()[0]
        done += block_batches
    elapsed = time.perf_counter() - start
    return {"game": game_name, "precision": precision, "graphs": learner.graphs, "updates_per_s": done / elapsed,
            "updates": done, "seconds": elapsed, "loss": loss, "augment": preset.learner.augment_symmetries,
            "params": sum(p.numel() for p in learner.net.parameters())}


def learner_phase(device: str, small: bool) -> list[dict]:
    seconds = 0.3 if small else 1.5
    if small:
        runs = [("connect4", "fp32", "auto"), ("othello", "fp32", "auto")]
    else:
        runs = [(g, p, "on") for g in ("connect4", "hex", "othello", "go") for p in ("fp32", "tf32", "bf16")]
        runs.append(("connect4", "fp32", "off"))
    out = []
    for game_name, precision, graphs in runs:
        result = time_learner(game_name, precision=precision, graphs=graphs, device=device, seconds=seconds,
                              block_batches=8 if small else 64)
        print(f"learner {game_name:8s} {precision} graphs={result['graphs']}: {result['updates_per_s']:,.0f} updates/s",
              flush=True)
        out.append(result)
    return out


def inference_phase(device: str, small: bool) -> dict:
    import games
    from actors.config import SelfPlayConfig
    from actors.inference_server import InferenceWorker
    from launch.config import preset_config
    from learner.learner import Learner
    from inference.network import ValueFunction

    game = games.make("connect4")
    preset = preset_config("connect4")
    network = preset.network
    weights = Learner(game, network, device="cpu", seed=0).get_weights()
    rng = np.random.default_rng(1)
    seconds = 0.3 if small else 1.5
    out = {"network": [], "server": []}
    fn = ValueFunction(game, network, device=device)
    fn.set_weights(weights, 0)
    for batch in ([256, 2048] if small else [2048, 8192, 32768, 131072]):
        obs = rng.integers(0, 2, size=(batch, *game.obs_shape), dtype=np.uint8)
        fn(obs)
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            fn(obs)  # host uint8 in, host float32 values out: the whole round trip
            done += batch
        rate = done / (time.perf_counter() - start)
        out["network"].append({"batch": batch, "positions_per_s": rate, "network_evaluations_per_s": 2 * rate})
        print(f"inference network batch {batch}: {rate:,.0f} positions/s", flush=True)
    requests, rows = (2, 128) if small else (SERVER_REQUESTS, SERVER_ROWS)
    pool = [rng.integers(0, 2, size=(rows, *game.obs_shape), dtype=np.uint8) for _ in range(8 * requests)]
    for cache in ("off", "cache"):
        worker = InferenceWorker(game_network=preset.game_network, algo=algorithms.descriptor("avi"),
                                 config=SelfPlayConfig(inference_device=device, eval_cache=cache, threads=1))
        worker.set_weights(weights, 0)

        async def rounds() -> tuple[int, int, float]:
            done = rounds_run = 0
            start = time.perf_counter()
            while time.perf_counter() - start < seconds or rounds_run < 2:
                batch = [pool[(rounds_run * requests + i) % len(pool)] for i in range(requests)]
                await asyncio.gather(*(worker.evaluate_counted(obs, 0) for obs in batch))
                done += requests * rows
                rounds_run += 1
            return done, rounds_run, time.perf_counter() - start

        done, rounds_run, elapsed = asyncio.run(rounds())
        stats = worker.stats()
        out["server"].append({"eval_cache": cache, "requests": requests, "rows_per_request": rows,
                              "positions_per_s": done / elapsed, "mean_rows_per_batch": stats["mean_rows_per_batch"],
                              "batches": stats["batches"]})
        print(f"inference server cache={cache}: {done / elapsed:,.0f} positions/s, "
              f"{stats['mean_rows_per_batch']:,.0f} rows per batch", flush=True)
    return out


def _search_rate(device: str, trees: int, simulations: int, seconds: float, seed: int = 0,
                 barrier=None) -> tuple[int, float]:
    """(simulations, seconds) of repeated searches from ``trees`` mid-game Connect Four roots."""
    import games
    from games.testing import random_move_lists
    from launch.config import preset_config
    from learner.learner import Learner
    from search import MCTS, MCTSConfig
    from inference.network import NetworkEvaluator

    game = games.make("connect4")
    network = dataclasses.replace(preset_config("connect4").network, policy_head=True)
    evaluate = NetworkEvaluator(game, network, device=device)
    learner = Learner(game, network, device="cpu", seed=seed, loss=algorithms.descriptor("alphazero"))
    evaluate.set_weights(learner.get_weights(), 0)
    rng = np.random.default_rng(seed)
    roots = game.from_moves(random_move_lists(game, trees, rng, max_plies=14))
    mcts = MCTS(game, MCTSConfig(simulations=simulations))
    mcts.search(roots, evaluate, rng)  # warm-up: numba compiled, CUDA kernels loaded
    if barrier is not None:
        barrier.wait()  # every process times the same window
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        mcts.search(roots, evaluate, rng)
        done += trees * simulations
    return done, time.perf_counter() - start


def _search_worker(device, trees, simulations, seconds, seed, barrier, results):
    import torch

    torch.set_num_threads(1)
    results.put(_search_rate(device, trees, simulations, seconds, seed, barrier))


def mcts_phase(device: str, small: bool) -> dict:
    simulations = 64
    seconds = 0.5 if small else 3.0
    out = {"simulations": simulations, "one_process": [], "processes": None}
    for trees in ([32] if small else [1024, 8192]):
        done, elapsed = _search_rate(device, trees, simulations, seconds)
        out["one_process"].append({"trees": trees, "simulations_per_s": done / elapsed})
        print(f"mcts one process, {trees} trees: {done / elapsed:,.0f} simulations/s", flush=True)
    processes, trees = (2, 32) if small else (max(1, (os.cpu_count() or 2) - 2), 4096)
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(processes), ctx.Queue()
    workers = [ctx.Process(target=_search_worker, args=(device, trees, simulations, seconds, i, barrier, results))
               for i in range(processes)]
    for w in workers:
        w.start()
    rates = [results.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    total = sum(done / elapsed for done, elapsed in rates)
    out["processes"] = {"processes": processes, "trees_each": trees, "simulations_per_s": total}
    print(f"mcts {processes} processes x {trees} trees: {total:,.0f} simulations/s", flush=True)
    return out


def train_phase(out_dir: Path, minutes: float, small: bool) -> dict:
    import ray

    from launch.config import resolve
    from launch.run_dir import read_run_config
    from launch.train import train
    from lifecycle.ray_start import start_ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an embedded, single-node Ray
    started = start_ray(num_cpus=2 if small else None)  # (a test's session may have started one)
    if small:
        config = resolve("connect4", "small", ["actors.num_actors=1", "actors.num_envs=64",
                                                "evaluation.play_every=1000", "evaluation.suites=connect4-uniform",
                                                "learner.batches_per_request=8"])
    else:  # the run sizes itself for the node from what Ray reports (launch.config.resolved)
        config = resolve("connect4", "node", ["evaluation.suites=connect4-uniform,connect4-eps-optimal"])
    run_dir = out_dir / "run"
    start = time.time()
    try:
        run_dir, last = train(config, run_dir=run_dir, train_minutes=minutes, wandb_mode="disabled")
    finally:
        if started:
            ray.shutdown()
    config = read_run_config(run_dir)  # as the run resolved it
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in records if "updates_per_s" in r or "learner_wait_fraction" in r]
    elapsed = last.get("elapsed") or (time.time() - start)
    updates, rows = last.get("updates", 0), last.get("rows", 0)
    rate = updates / elapsed if elapsed else 0.0
    summary = {
        "config": {k: v for k, v in dataclasses.asdict(config).items() if k != "network"},
        "network": dataclasses.asdict(config.network), "run_dir": str(run_dir), "wall_seconds": time.time() - start,
        "elapsed": elapsed, "updates": updates, "rows": rows, "positions": last.get("positions"),
        "games": last.get("games"), "rows_per_s": rows / elapsed if elapsed else 0.0, "updates_per_s": rate,
        "rows_per_update": rows / updates if updates else None,
        "paper_updates_projected_hours": PAPER_UPDATES / rate / 3600 if rate else None,
        "learner_wait_fraction_mean": (float(np.mean([r["learner_wait_fraction"] for r in trained]))
                                       if trained else None),
        "records": len(records),
        "last": {k: v for k, v in last.items() if isinstance(v, (int, float, str)) and not k.startswith("actor_time")},
    }
    print(f"train: {updates:,} updates, {rows:,} rows in {elapsed:.0f} s: {summary['rows_per_s']:,.0f} rows/s, "
          f"{rate:,.0f} updates/s", flush=True)
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_node", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, required=True, help="the end-to-end AVI run's training time")
    p.add_argument("--out", required=True, help="directory for summary.json and the run")
    p.add_argument("--size", choices=("auto", "full", "small"), default="auto",
                   help="full on a GPU node, small (a check that it runs) elsewhere; auto: by CUDA")
    p.add_argument("--phases", default="learner,inference,mcts,train",
                   help="comma list of the phases to run (default: all)")
    args = p.parse_args(argv)
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    small = args.size == "small" or (args.size == "auto" and device == "cpu")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {"command": " ".join(["python -m benchmarks.gpu_node", *(argv if argv is not None else sys.argv[1:])]),
               "size": "small" if small else "full", "environment": environment(), "errors": {}}
    print(json.dumps(summary["environment"]), flush=True)
    phases = {"learner": lambda: learner_phase(device, small), "inference": lambda: inference_phase(device, small),
              "mcts": lambda: mcts_phase(device, small), "train": lambda: train_phase(out_dir, args.minutes, small)}
    for name in [n.strip() for n in args.phases.split(",") if n.strip()]:
        if name not in phases:
            p.error(f"unknown phase {name!r}; phases: {', '.join(phases)}")
        start = time.perf_counter()
        try:
            summary[name] = phases[name]()
        except Exception as err:  # the other phases' numbers still come back
            summary["errors"][name] = f"{type(err).__name__}: {err}\n{traceback.format_exc()[-3000:]}"
            print(f"phase {name} failed: {err}", file=sys.stderr, flush=True)
        summary.setdefault("phase_seconds", {})[name] = time.perf_counter() - start
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"summary: {out_dir / 'summary.json'}", flush=True)
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
