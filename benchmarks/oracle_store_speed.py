"""Throughput of the solved-position stores (pipelined Redis, the embedded SQLite store),
and what the store consulted during search saves.

    python -m benchmarks.oracle_store_speed [--positions 200000] [--batch 10000] [--repeats 3]
    python -m benchmarks.oracle_store_speed --seeding [--roots 8 9 10] [--book-depth 2]

Throughput: writes ``--positions`` records (score and per-column analysis) in batches,
then reads them back in batches, and reports records/s as medians of ``--repeats``
passes. Redis runs as a real ``redis-server`` started here on 127.0.0.1 (a free port, a
password, no persistence) and stopped at the end; it is skipped if redis-server is not
installed.

``--seeding``: for one random position per ``--roots`` entry (that many plies from the
start, seeded, not won at once), the time and nodes of a fresh ``OracleWorker`` solving
it with an empty store, then with a store holding the book of the positions 1 to
``--book-depth`` plies below it (filled first, deepest first, by ``fill_book``'s order,
and timed too), each worker with a fresh transposition table. All in this process.
"""

from __future__ import annotations

import argparse
import random
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


def random_root(plies: int, rng: random.Random) -> str:
    """A move string of ``plies`` random moves after which nobody has won and the mover
    cannot win at once (such a root takes no search)."""
    # The solver and the service load only for --seeding: the solver compiles its search
    # when imported, and the store-only measurement needs neither.
    from oracle_service.connect4_solver import parse_moves

    def over(moves: str) -> bool:
        try:
            parse_moves(moves)
        except ValueError:  # a four on the board, or a full column
            return True
        return False

    while True:
        moves = "".join(str(rng.randrange(7) + 1) for _ in range(plies))
        if max(moves.count(c) for c in moves) <= 6 and not over(moves) and \
                not any(over(moves + str(c + 1)) for c in range(7)):
            return moves


def seeding(roots: list[int], book_depth: int, seed: int) -> None:
    from oracle_service.book import book_positions
    from oracle_service.service import OracleWorker

    rng = random.Random(seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, plies in enumerate(roots):
            root = random_root(plies, rng)
            empty = OracleWorker(f"{tmp}/empty{i}.sqlite")
            t = time.perf_counter()
            score = empty.connect4_solve([root])[0].value
            t_empty = time.perf_counter() - t
            book = sorted(book_positions(book_depth, root)[1:], key=len, reverse=True)
            filler = OracleWorker(f"{tmp}/book{i}.sqlite")
            t = time.perf_counter()
            for depth in sorted({len(p) for p in book}, reverse=True):
                filler.connect4_analyze([p for p in book if len(p) == depth])
            t_book = time.perf_counter() - t
            seeded = OracleWorker(f"{tmp}/book{i}.sqlite")
            t = time.perf_counter()
            seeded_score = seeded.connect4_solve([root])[0].value
            t_seeded = time.perf_counter() - t
            assert seeded_score == score, (root, score, seeded_score)
            row = {"root": root, "plies": plies, "score": score, "empty_s": round(t_empty, 3),
                   "empty_nodes": empty.solver.nodes, "book_positions": len(book),
                   "book_fill_s": round(t_book, 3), "seeded_s": round(t_seeded, 4),
                   "seeded_nodes": seeded.solver.nodes, "seeded_entries": seeded.stats()["seeded"],
                   "speedup": round(t_empty / t_seeded, 1)}
            rows.append(row)
            print(row, flush=True)
    print("median speedup:", statistics.median(r["speedup"] for r in rows),
          "median empty_s:", statistics.median(r["empty_s"] for r in rows),
          "median seeded_s:", statistics.median(r["seeded_s"] for r in rows),
          "median book_fill_s:", statistics.median(r["book_fill_s"] for r in rows))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--positions", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seeding", action="store_true", help="measure the store consulted during search")
    p.add_argument("--roots", type=int, nargs="+", default=[8, 9, 10], help="plies of each root")
    p.add_argument("--book-depth", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.seeding:
        seeding(args.roots, args.book_depth, args.seed)
        return
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
