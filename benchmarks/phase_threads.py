"""The two phases of the synchronous schedule in one process, per precision and thread
count: an AVI actor's collection and the learner's updates.

    GOMP_SPINCOUNT=10000 python -m benchmarks.phase_threads [--game connect4] [--threads 1 2]
                                                             [--steps 16] [--seconds 1] [--repeats 3]

For the game's preset network (initialised as the learner initialises it, seed 0), each
case (precision fp32 or bf16, torch threads) in turn, ``--repeats`` rounds, medians:

- collection: ``--steps`` steps of 128 environments (``AviCollector``, epsilon 0.3, the
  evaluation cache of the actors, ``CachedValueFn``), the network evaluated in fp32 or
  forced bf16 (``inference_dtype``; ``inference`` says which path answered: the guard
  may answer a version in fp32), in positions/s;
- learner: ``Learner.train_step`` at batch 256 for ``--seconds``, in updates/s.

libgomp reads its wait policy when torch loads it: set ``GOMP_SPINCOUNT`` or
``OMP_WAIT_POLICY`` in the command's environment to compare them
(``inference.machine.THREADED_RUNTIME_ENV`` is the runs' setting).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch

import games
from actors.avi import AviCollector
from learner.learner import Learner
from inference.network import ValueFunction
from inference.networks import PRESET_NETWORKS
from search.cache import CachedValueFn

ENVS = 128


def collect_rate(game, config, weights, version: int, dtype: str, steps: int, seed: int) -> tuple[float, str]:
    """Positions/s of ``steps`` collection steps (after one step of warm-up), and the path that answered."""
    values = ValueFunction(game, config, inference_dtype=dtype)
    values.set_weights(weights, version)
    images = [s.obs for s in game.symmetries()] if config.symmetrize else None
    cached = CachedValueFn(values, persist=True, symmetries=images)
    collector = AviCollector(game, ENVS, epsilon=0.3, gamma=1.0, seed=seed)
    collector.collect(cached, 1)  # the version's first call: conversion and guard
    start = time.perf_counter()
    collector.collect(cached, steps)
    return steps * ENVS / (time.perf_counter() - start), values.fast.dtype


def update_rate(learner: Learner, batch: dict, seconds: float) -> float:
    learner.train_step(batch)
    calls, start = 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - start < seconds:
        learner.train_step(batch)
        calls += 1
    return calls / (time.perf_counter() - start)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="connect4", choices=list(PRESET_NETWORKS))
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    game, config = games.make(args.game), PRESET_NETWORKS[args.game]
    learners = {p: Learner(game, config, device="cpu", seed=0, precision=p) for p in ("fp32", "bf16")}
    weights = learners["fp32"].get_weights()
    rng = np.random.default_rng(0)
    batch = {"obs": rng.integers(0, 2, size=(256, *game.obs_shape), dtype=np.uint8),
             "target": rng.uniform(-1, 1, 256).astype(np.float32)}
    cases = [(p, t) for t in args.threads for p in ("fp32", "bf16")]
    collect, updates, paths = ({c: [] for c in cases} for _ in range(3))
    for round_ in range(args.repeats):
        for precision, threads in cases:
            torch.set_num_threads(threads)
            rate, path = collect_rate(game, config, weights, round_, precision, args.steps, seed=round_)
            collect[(precision, threads)].append(rate)
            paths[(precision, threads)].append(path)
            updates[(precision, threads)].append(update_rate(learners[precision], batch, args.seconds))
    rows = [{"precision": p, "threads": t, "positions_per_s": statistics.median(collect[(p, t)]),
             "inference": "/".join(sorted(set(paths[(p, t)]))), "updates_per_s": statistics.median(updates[(p, t)])}
            for p, t in cases]
    wait = {k: os.environ[k] for k in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY") if k in os.environ} or "libgomp default"
    if args.json:
        print(json.dumps({"game": args.game, "wait": wait, "rows": rows}, indent=1))
        return
    print(f"{args.game}, OpenMP wait: {wait}")
    print("| precision | threads | collection positions/s (inference path) | learner updates/s |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['precision']} | {r['threads']} | {r['positions_per_s']:,.0f} ({r['inference']}) "
              f"| {r['updates_per_s']:.1f} |")


if __name__ == "__main__":
    main()
