"""Throughput of the solved-position stores: pipelined Redis and the embedded SQLite store.

    python -m benchmarks.oracle_store_speed [--positions 200000] [--batch 10000] [--repeats 3]

Writes ``--positions`` records (score and per-column analysis) in batches, then reads
them back in batches, and reports records/s as medians of ``--repeats`` passes. Redis
runs as a real ``redis-server`` started here on 127.0.0.1 (a free port, a password,
no persistence) and stopped at the end; it is skipped if redis-server is not installed.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import numpy as np

from oracle_service.store import EmbeddedStore, RedisStore, Solved


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def records(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    keys = rng.choice(2**48, size=n, replace=False).tolist()
    scores = rng.integers(-18, 19, size=n).tolist()
    return [(k, Solved(s, (s,) * 6 + (None,))) for k, s in zip(keys, scores)]


def measure(store, items, batch: int, repeats: int) -> dict:
    writes, reads = [], []
    keys = [k for k, _ in items]
    for _ in range(repeats):
        start = time.perf_counter()
        for lo in range(0, len(items), batch):
            store.put_many(items[lo:lo + batch])
        writes.append(len(items) / (time.perf_counter() - start))
        start = time.perf_counter()
        found = 0
        for lo in range(0, len(keys), batch):
            found += sum(v is not None for v in store.get_many(keys[lo:lo + batch]))
        reads.append(len(keys) / (time.perf_counter() - start))
        assert found == len(keys), f"{found} of {len(keys)} records read back"
    return {"writes_per_s": statistics.median(writes), "reads_per_s": statistics.median(reads)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--positions", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    items = records(args.positions)
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = EmbeddedStore(f"{tmp}/store.sqlite")
        print("sqlite:", measure(sqlite, items, args.batch, args.repeats), flush=True)
        sqlite.close()
    if shutil.which("redis-server") is None:
        print("redis: skipped, redis-server is not installed")
        return
    port, password = free_port(), "bench-password"
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--requirepass",
                               password, "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        redis = RedisStore(f"redis://:{password}@127.0.0.1:{port}/0")
        print("redis:", measure(redis, items, args.batch, args.repeats), flush=True)
        redis.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
