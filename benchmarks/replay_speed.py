"""Speed of the replay service under load: inserts from remote tasks while a sampler draws.

    python -m benchmarks.replay_speed [--seconds 5] [--repeats 3] [--shards 2] [--batch 256]
        [--batches-per-request 1 64]

Starts a local Ray with 2 CPUs and, per run, a fresh ``ReplayService``. ``--producers``
remote tasks (default 2, one CPU each, like self-play actors) push Connect Four shaped
rows (``obs`` uint8[2, 6, 7], ``target``, ``version``) in adds of ``--rows-per-add`` rows,
each to its own shard, with at most 4 adds in flight; the rows are made once, so what is
timed is transport and insertion. Meanwhile the driver, like a learner, draws batches of
``--batch`` rows through a ``ReplaySampler`` with ``--prefetch`` requests in flight and
does nothing else with them, or sleeps ``--learner-ms`` after each, standing in for a
training step on an accelerator (which leaves the CPUs free). Reported, as medians over
``--repeats`` runs: inserted rows/s (acknowledged by the shards), sampled batches/s, and
the fraction of the sampler's time spent blocked waiting on Ray.

``--batches-per-request`` with several values runs each in turn (the runs of one repeat
side by side): a GPU learner needs thousands of batches a second, and one round trip to
the shards per batch caps what the sampler can draw (``ReplaySampler.next_block``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import ray

from lifecycle.ray_start import start_ray
from replay.rows import avi_schema
from replay.service import ReplaySampler, ReplayService

OBS = (2, 6, 7)  # Connect Four


@ray.remote(num_cpus=1)
def producer(service: ReplayService, index: int, rows_per_add: int, seconds: float, in_flight: int = 4):
    """Add rows to shard ``index`` for ``seconds``; returns (rows acknowledged, seconds)."""
    rng = np.random.default_rng(index)
    rows = {
        "obs": rng.integers(0, 2, (rows_per_add, *OBS)).astype(np.uint8),
        "target": rng.uniform(-1, 1, rows_per_add).astype(np.float32),
        "version": np.zeros(rows_per_add, np.int64),
    }
    pending, added = [], 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pending.append(service.add(rows, shard=index))
        if len(pending) >= in_flight:
            done, pending = ray.wait(pending, num_returns=1)
            added += sum(r.written for r in ray.get(done))
    added += sum(r.written for r in ray.get(pending))
    return added, time.perf_counter() - start


def run_once(args, run: int, batches_per_request: int) -> dict:
    service = ReplayService.create(avi_schema(OBS), args.capacity, args.shards, seed=run, name=f"bench{run}")
    try:
        # Seed every shard so the sampler's first requests find rows, as in a running system.
        first = {k: v[: args.batch] for k, v in _seed_rows(args.batch).items()}
        ray.get([service.add(first, shard=i) for i in range(args.shards)])
        producers = [
            producer.remote(service, i, args.rows_per_add, args.seconds) for i in range(args.producers)
        ]
        sampler = ReplaySampler(service, args.batch, prefetch=args.prefetch, seed=run,
                                batches_per_request=batches_per_request)
        start = time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            sampler.next()
            if args.learner_ms:
                time.sleep(args.learner_ms / 1000)  # a learner step on an accelerator: no CPU here
        sampling = time.perf_counter() - start
        sampler.close()
        results = ray.get(producers)
        return {
            "insert_rows_per_s": sum(n for n, _ in results) / max(s for _, s in results) if results else 0.0,
            "batches_per_s": sampler.batches / sampling,
            "wait_fraction": sampler.wait_seconds / sampling,
        }
    finally:
        service.close()


def _seed_rows(n: int) -> dict:
    return {
        "obs": np.zeros((n, *OBS), np.uint8),
        "target": np.zeros(n, np.float32),
        "version": np.zeros(n, np.int64),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--capacity", type=int, default=1_000_000, help="rows over all shards")
    parser.add_argument("--rows-per-add", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--batches-per-request", type=int, nargs="+", default=[1],
                        help="batches per sample request (ReplaySampler); several: compared side by side")
    parser.add_argument("--producers", type=int, default=2, help="producer tasks (one CPU each)")
    parser.add_argument("--learner-ms", type=float, default=0.0,
                        help="sleep after each batch, standing in for a learner step off the CPUs")  # fmt: skip
    args = parser.parse_args(argv)

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private local instance
    started = start_ray(num_cpus=2, log_to_driver=False)
    try:
        runs = {k: [] for k in args.batches_per_request}
        for run in range(args.repeats):
            for k in args.batches_per_request:
                runs[k].append(run_once(args, run, k))
    finally:
        if started:
            ray.shutdown()
    results = {k: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for k, rs in runs.items()}
    print(f"replay, {args.shards} shards, {args.producers} producer tasks x {args.rows_per_add} rows/add, "
          f"batch {args.batch}, prefetch {args.prefetch}, learner step {args.learner_ms:g} ms, "
          f"medians of {args.repeats} x {args.seconds:g} s")  # fmt: skip
    for k, result in results.items():
        print(f" {k} batch(es) per request")
        print(f"  inserts          {result['insert_rows_per_s']:>12,.0f} rows/s")
        print(f"  sampled batches  {result['batches_per_s']:>12,.0f} batches/s "
              f"({result['batches_per_s'] * args.batch:,.0f} rows/s)")  # fmt: skip
        print(f"  sampler waiting  {result['wait_fraction']:>12.0%} of its time")
    print(json.dumps({"runs": runs, "median": results}))
    return results


if __name__ == "__main__":
    main()
