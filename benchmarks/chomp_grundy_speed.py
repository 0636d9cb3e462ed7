"""Chomp Grundy tables: build time per board size and query throughput, on one core.

    python -m benchmarks.chomp_grundy_speed [--boards 5x6 9x10 10x11 12x13] [--queries 1000000] [--json]

Builds are fresh (no disk cache) and timed after a warm-up build of a tiny board, so
the one-time numba compile (or cache load) is reported apart. Throughput, on the
largest board: ``grundy_batch`` profiles/s (check + rank + table lookup) over random
positions, ``winning_actions_batch`` profiles/s, and single ``grundy`` calls/s.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import numpy as np  # noqa: E402

from oracle_service.chomp_grundy import ChompTable  # noqa: E402


def board(text: str) -> tuple[int, int]:
    rows, cols = text.lower().split("x")
    return int(rows), int(cols)


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", nargs="+", type=board, default=[(5, 6), (9, 10), (10, 11), (12, 13)])
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    _, compile_s = timed(ChompTable, 3, 4, use_disk=False)
    results = {"compile_or_cache_load_s": round(compile_s, 3), "builds": []}
    for rows, cols in args.boards:
        table, build_s = timed(ChompTable, rows, cols, use_disk=False)
        results["builds"].append({
            "board": f"{rows}x{cols}", "positions": table.size, "build_s": round(build_s, 3),
            "max_grundy": int(table.table.max()), "table_mb": round(table.table.nbytes / 2**20, 1)})

    rng = np.random.default_rng(0)
    profiles = table.unrank(rng.integers(1, table.size, args.queries))  # [Q, rows], valid positions
    table.grundy_batch(profiles[:10])  # compile outside the timing
    table.winning_actions_batch(profiles[:10])
    _, batch_s = timed(table.grundy_batch, profiles)
    few = profiles[: max(1, args.queries // 20)]
    _, win_s = timed(table.winning_actions_batch, few)
    singles = profiles[:10_000].tolist()
    _, single_s = timed(lambda: [table.grundy(p) for p in singles])
    results["queries"] = {
        "board": f"{rows}x{cols}",
        "grundy_batch_profiles_per_s": round(len(profiles) / batch_s),
        "winning_actions_batch_profiles_per_s": round(len(few) / win_s),
        "single_grundy_calls_per_s": round(len(singles) / single_s),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"numba compile / cache load: {results['compile_or_cache_load_s']:.3f} s")
    print(f"{'board':>7} {'positions':>10} {'build s':>8} {'max g':>6} {'MiB':>6}")
    for b in results["builds"]:
        print(f"{b['board']:>7} {b['positions']:>10} {b['build_s']:>8.3f} {b['max_grundy']:>6} {b['table_mb']:>6}")
    for k, v in results["queries"].items():
        print(f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}")


if __name__ == "__main__":
    main()
