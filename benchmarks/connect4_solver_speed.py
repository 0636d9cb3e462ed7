"""Correctness and speed of the Connect Four solver on the published benchmark sets,
beside the reference C++ solver measured in the same run.

    python -m benchmarks.connect4_solver_speed --sets DIR [--reference PATH]
        [--names Test_L3_R1 Test_L2_R1 ...] [--limit N] [--openings N] [--tt-log2 23]
    python -m benchmarks.connect4_solver_speed --early N [--no-book] [--cold]

``DIR`` holds Pascal Pons' six sets (``Test_L3_R1`` ... ``Test_L1_R3``, lines
``<moves> <score>``; they are not in this repository). ``PATH`` is his ``c4solver``
built from github.com/PascalPons/connect4 with its Makefile (a reference for measurement
only): it reads one move string per line on stdin and prints ``<moves> <score>``. It
runs without its opening book, as we do, and keeps its transposition table across
positions, as we do.

For each set (its first ``--limit`` positions): how many of our scores equal the
file's (and the reference's), our mean time per position, the reference's, and the
ratio ours / reference. Each position is timed alone: for the reference, from writing
its line to reading its answer. ``--openings N`` adds N random positions 4 to 8 plies
from the start (seeded), checked against the reference. The process is pinned to one
core; the numba compile is done before timing.

``--early N`` (no sets needed) times N distinct random positions (seeded) in each of
the groups of plies 0-3, 4-8 and 9-11, which the solver searches down to its 12-ply
book: the median and the mean per position, and the book leaves per position.
``--no-book`` runs without the book (minutes per position before ply 8); ``--cold``
empties the transposition table before each of these positions (untimed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import time

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

from oracle_service.connect4_solver import Connect4Solver, parse_moves

SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2", "Test_L1_R1", "Test_L1_R2", "Test_L1_R3")


class Reference:
    """Pons' c4solver as a subprocess, one position at a time."""

    def __init__(self, path: str):
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def solve(self, moves: str) -> tuple[int, float]:
        t = time.perf_counter()
        self.proc.stdin.write(moves + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        dt = time.perf_counter() - t
        got, score = line.split()[:2]
        if got != moves:
            raise RuntimeError(f"reference answered {line!r} to {moves!r}")
        return int(score), dt

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def random_openings(n: int, seed: int = 0) -> list[str]:
    """n distinct random move strings of 4 to 8 plies (nobody can have won that early)."""
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < n:
        plies = rng.randint(4, 8)
        heights = [0] * 7
        s = ""
        for _ in range(plies):
            c = rng.choice([c for c in range(7) if heights[c] < 6])
            heights[c] += 1
            s += str(c + 1)
        out.add(s)
    return sorted(out)


EARLY_GROUPS = ((0, 3), (4, 8), (9, 11))


def random_live_positions(n: int, low: int, high: int, seed: int = 0) -> list[str]:
    """Up to n distinct random move strings of ``low`` to ``high`` plies that nobody has
    won (fewer where the group has fewer positions: plies 0-3 have 400)."""
    rng = random.Random(seed)
    out: set[str] = set()
    for _ in range(100 * n):
        if len(out) == n:
            break
        moves = "".join(str(rng.randint(1, 7)) for _ in range(rng.randint(low, high)))
        try:
            parse_moves(moves)
        except ValueError:  # a full column, or a four
            continue
        out.add(moves)
    positions = sorted(out)
    rng.shuffle(positions)  # not in prefix order, where each position's table would serve the next
    return positions


def measure_early(n: int, solver: Connect4Solver, cold: bool) -> list[dict]:
    rows = []
    for low, high in EARLY_GROUPS:
        positions = random_live_positions(n, low, high, seed=low)
        times, leaves = [], 0
        for moves in positions:
            if cold:
                solver.reset()
            before = solver.book_leaves
            t = time.perf_counter()
            solver.solve(moves)
            times.append(time.perf_counter() - t)
            leaves += solver.book_leaves - before
        rows.append({"plies": f"{low}-{high}", "positions": len(positions),
                     "median_ms": 1e3 * statistics.median(times), "mean_ms": 1e3 * statistics.mean(times),
                     "max_ms": 1e3 * max(times), "book_leaves_per_pos": leaves / len(times)})
    return rows


def measure(name: str, positions: list[tuple[str, int | None]], solver: Connect4Solver,
            ref: Reference | None) -> dict:
    ours_t, ref_t = [], []
    equal_file = equal_ref = 0
    nodes0 = solver.nodes
    for moves, expected in positions:
        t = time.perf_counter()
        score = solver.solve(moves)
        ours_t.append(time.perf_counter() - t)
        equal_file += expected is not None and score == expected
        if ref is not None:
            r, dt = ref.solve(moves)
            ref_t.append(dt)
            equal_ref += r == score
    n = len(positions)
    row = {"set": name, "positions": n,
           "equal_file": equal_file if any(e is not None for _, e in positions) else None,
           "ours_ms": 1e3 * sum(ours_t) / n, "ours_max_ms": 1e3 * max(ours_t),
           "ours_nodes_per_pos": (solver.nodes - nodes0) / n}
    if ref is not None:
        row.update(equal_ref=equal_ref, ref_ms=1e3 * sum(ref_t) / n,
                   ref_max_ms=1e3 * max(ref_t), ratio=sum(ours_t) / sum(ref_t))
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", help="directory of the Test_L*_R* files")
    p.add_argument("--early", type=int, default=0, help="random positions per group of plies 0-3, 4-8, 9-11")
    p.add_argument("--no-book", action="store_true", help="search without the 12-ply book")
    p.add_argument("--cold", action="store_true", help="--early: an empty table for each position")
    p.add_argument("--reference", help="path of the built c4solver")
    p.add_argument("--names", nargs="*", default=list(SETS))
    p.add_argument("--limit", type=int, default=1000, help="positions per set")
    p.add_argument("--openings", type=int, default=0, help="random positions 4-8 plies in")
    p.add_argument("--tt-log2", type=int, default=23)
    p.add_argument("--json", action="store_true", help="one JSON object per set")
    args = p.parse_args(argv)
    if not args.sets and not args.early:
        p.error("give --sets DIR, --early N or both")

    solver = Connect4Solver(tt_log2_size=args.tt_log2, use_book=not args.no_book)
    solver.solve("112233")  # compile (or load the cache) before timing
    if args.early:
        for row in measure_early(args.early, solver, args.cold):
            print(json.dumps(row) if args.json else
                  f"plies {row['plies']:5s} n={row['positions']:4d}  median {row['median_ms']:8.3f} ms  "
                  f"mean {row['mean_ms']:8.3f} ms  max {row['max_ms']:8.1f} ms  "
                  f"book leaves/pos {row['book_leaves_per_pos']:.0f}", flush=True)
        if not args.sets:
            return
    ref = Reference(args.reference) if args.reference else None
    jobs = []
    for name in args.names:
        with open(os.path.join(args.sets, name)) as f:
            lines = [line.split() for line in f if line.strip()][:args.limit]
        jobs.append((name, [(m, int(s)) for m, s in lines]))
    if args.openings:
        jobs.append(("openings_4_8", [(m, None) for m in random_openings(args.openings)]))
    try:
        for name, positions in jobs:
            row = measure(name, positions, solver, ref)
            if args.json:
                print(json.dumps(row), flush=True)
                continue
            line = (f"{name:13s} n={row['positions']:4d}  equal file="
                    f"{row['equal_file'] if row['equal_file'] is not None else '-'}  "
                    f"ours {row['ours_ms']:9.3f} ms/pos")
            if ref is not None:
                line += (f"  reference {row['ref_ms']:9.3f} ms/pos  ratio {row['ratio']:5.2f}"
                         f"  equal reference={row['equal_ref']}")
            print(line, flush=True)
    finally:
        if ref is not None:
            ref.close()


if __name__ == "__main__":
    main()
