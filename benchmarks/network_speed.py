"""Speed of the preset networks on the CPU: actor inference and learner updates.

    python -m benchmarks.network_speed [--games connect4 hex ...] [--batch 4096]
                                       [--train-batch 256] [--threads 1 2] [--seconds 1]

For each game's preset network (``learner.networks.PRESET_NETWORKS``):
- forward throughput through ``ValueFunction`` (the actors' path: eval mode,
  inference mode, numpy in and out) at batch ``--batch``, with 1 and 2 torch threads
  (``torch.set_num_threads``), in input samples/s and in network evaluations/s (a
  symmetrized network evaluates 2 images per sample; for AVI an input sample is one
  child position);
- training updates/s of ``Learner.train_step`` at batch ``--train-batch``, same threads.
Every figure is the median of ``--repeats`` timed runs of ``--seconds`` each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import numpy as np
import torch

import games
from learner.learner import Learner, ValueFunction
from learner.networks import PRESET_NETWORKS, count_parameters, forward_cost


def median_rate(run, repeats):
    """Median over ``repeats`` of run() -> (count, seconds), as count per second."""
    return statistics.median(count / seconds for count, seconds in (run() for _ in range(repeats)))


def timed(call, per_call, seconds):
    """A run() for median_rate: ``call()`` repeated for at least ``seconds`` (and twice)."""

    def run():
        calls, start = 0, time.perf_counter()
        while calls < 2 or time.perf_counter() - start < seconds:
            call()
            calls += 1
        return calls * per_call, time.perf_counter() - start

    return run


def bench_game(name, batch, train_batch, threads, seconds, repeats):
    game = games.make(name)
    config = PRESET_NETWORKS[name]
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, size=(batch, *game.obs_shape)).astype(np.float32)
    train = {"obs": rng.integers(0, 2, size=(train_batch, *game.obs_shape), dtype=np.uint8),
             "target": rng.uniform(-1, 1, train_batch).astype(np.float32)}
    learner = Learner(game, config, device="cpu")
    values = ValueFunction(game, config)
    values.set_weights(learner.get_weights(), 0)
    row = {"game": name, "config": dataclasses.asdict(config), "parameters": count_parameters(learner.net),
           "images_per_sample": forward_cost(learner.net), "batch": batch, "train_batch": train_batch}
    for t in threads:
        torch.set_num_threads(t)
        values(obs)  # warm up (allocator, oneDNN primitives)
        learner.train_step(train)
        samples = median_rate(timed(lambda: values(obs), batch, seconds), repeats)
        row[f"threads{t}"] = {
            "samples_per_s": samples,
            "evaluations_per_s": samples * row["images_per_sample"],
            "updates_per_s": median_rate(timed(lambda: learner.train_step(train), 1, seconds), repeats),
        }
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", default=list(PRESET_NETWORKS), choices=list(PRESET_NETWORKS))
    p.add_argument("--batch", type=int, default=4096, help="inference batch")
    p.add_argument("--train-batch", type=int, default=256)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--seconds", type=float, default=1.0, help="length of one timed run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = []
    for name in args.games:
        row = bench_game(name, args.batch, args.train_batch, args.threads, args.seconds, args.repeats)
        rows.append(row)
        if not args.json:
            print_row(row, args.threads)
    if args.json:
        print(json.dumps(rows, indent=1))


def print_row(row, threads):
    c = row["config"]
    shape = (f"mlp {c['blocks']}x{c['layers_per_block']} w{c['width']}" if c["kind"] == "mlp"
             else f"conv {c['blocks']} blocks c{c['channels']}") + (" sym" if c["symmetrize"] else "")
    parts = [f"{row['game']:10s} {shape:22s} {row['parameters']:>9,d} params"]
    for t in threads:
        r = row[f"threads{t}"]
        parts.append(f"{t} thr: {r['samples_per_s']:>9,.0f} samples/s ({r['evaluations_per_s']:>9,.0f} evals/s) "
                     f"{r['updates_per_s']:>6,.1f} updates/s")
    print(" | ".join(parts), flush=True)


if __name__ == "__main__":
    main()
