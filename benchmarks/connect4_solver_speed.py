"""Exactness and speed of every Connect Four engine, measured in one run on the same
positions: ours with its 12-ply book, ours without it, BitBully without and with its
book (the optional extra ``selfplay[bitbully]``), Pascal Pons' C++ solver where it is
built, and the oracle command line (``python -m oracle_service solve``) with each engine.

    python -m benchmarks.connect4_solver_speed [--sets DIR] [--reference PATH] [--random N]
        [--names Test_L3_R1 ...] [--limit N] [--budget S] [--engines ...] [--tt-log2 23]
    python -m benchmarks.connect4_solver_speed --early N [--no-book] [--cold] [--analyze] [--cli]
    python -m benchmarks.connect4_solver_speed --rate N
    python -m benchmarks.connect4_solver_speed --labels N

``DIR`` holds Pons' six published sets (``Test_L3_R1`` ... ``Test_L1_R3``, lines
``<moves> <score>``; they are not in this repository). ``PATH`` is his ``c4solver``
built from github.com/PascalPons/connect4 with its Makefile (a reference for
measurement only, without its opening book): it reads one move string per line on
stdin and prints ``<moves> <score>``. ``--random N`` adds N random positions (seeded,
nobody has won) in each group of plies 1-3, 4-8, 9-16 and 17-30.

Per set and engine: the positions measured, how many scores equal the file's (the
random groups: BitBully's with its book), the median and the mean time per position
and the mean's ratio to the fastest engine's on that set. Each position is timed alone
(for a process, from writing its line to reading its answer, start-up excluded); every
engine keeps its table across positions. An engine stops on a set after ``--budget``
seconds, so that the run stays short, and the engines without a book (Pons' included)
see only the positions of ``--no-book-from`` plies or more (default 14: before, they
cost seconds to minutes each); a row says how many positions it measured, and its
ratio is given where that is the whole set (engines[0], ours with the book, sees all). The process is pinned to one core
(its subprocesses too); compiling and loading books is done before timing.

``--early N`` (no sets needed) times N distinct random positions (seeded) in each of
the groups of plies 0-3, 4-8 and 9-11, which the solver searches down to its 12-ply
book: the median and the mean per position, and the book leaves per position.
``--no-book`` runs without the book (minutes per position before ply 8); ``--cold``
empties the transposition table before each of these positions (untimed); ``--analyze``
times the score of every column instead; ``--cli`` times the oracle command line (a
subprocess, with ``--analyze`` if given) instead of the solver in this process.

``--labels N`` times AZAL's label, the best columns, two ways on N random positions
(seeded) of each ply 10-16: from the full analysis (every column's score) and by the
best-column search (the position's score, then one null-window search per column),
each solver with a table of its own; the columns must agree.

``--rate N`` measures the search alone: our solver without either book solves N random
positions of plies 12-16 (seeded) from an emptied table, 5 times; it prints the median
nodes per second, the nodes of one pass and a digest of the scores (equal across builds
that search the same tree).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

from oracle_service.connect4_engines import make_engine
from oracle_service.connect4_solver import Connect4Solver, parse_moves

SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2", "Test_L1_R1", "Test_L1_R2", "Test_L1_R3")
RANDOM_GROUPS = ((1, 3), (4, 8), (9, 16), (17, 30))
ENGINES = ("ours", "ours-no-book", "bitbully-no-book", "bitbully", "pons", "cli-ours", "cli-bitbully")
# Without a book a position before ply ~10 costs seconds to minutes: --no-book-from.
WITHOUT_BOOK = ("ours-no-book", "bitbully-no-book", "pons")
# A late position (Test_L3_R1's first): quick without a book, unlike an early one.
WARM_UP = "2252576253462244111563365343671351441"
CLI = [sys.executable, "-m", "oracle_service", "solve", "--game", "connect4"]


class LineSolver:
    """A command that answers ``<moves> <score>`` to each move string on stdin (Pons'
    c4solver, our oracle command line), as a subprocess, one position at a time."""

    def __init__(self, command: list[str]):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.answer(WARM_UP)  # started (and compiled, and its book loaded) before timing

    def answer(self, moves: str) -> list[str]:
        """The words of the answer to ``moves`` after its echo."""
        self.proc.stdin.write((moves or "-") + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        got, *words = line.split()
        if got != (moves or "-") or not words:
            raise RuntimeError(f"{self.proc.args[0]} answered {line!r} to {moves!r}")
        return words

    def solve(self, moves: str) -> int:
        return int(self.answer(moves)[0])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def open_engine(name: str, reference: str | None, tt_log2: int):
    """(solve function, close function) of the engine called ``name`` (see ENGINES)."""
    if name == "pons":
        if reference is None:
            raise ValueError("pons needs --reference PATH")
        proc = LineSolver([reference])
        return proc.solve, proc.close
    if name.startswith("cli-"):
        proc = LineSolver(CLI + ["--engine", name.removeprefix("cli-")])
        return proc.solve, proc.close
    base, _, book = name.partition("-")
    engine = make_engine(base, use_book=book != "no-book", tt_log2_size=tt_log2)
    engine.solve(WARM_UP)  # compiled (or the cache loaded) before timing
    return engine.solve, lambda: None


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


def measure_early(n: int, solver: Connect4Solver | None, cold: bool, call) -> list[dict]:
    """Per group of EARLY_GROUPS: times of ``call(moves)``; ``solver`` (None for the
    command line) is reset for ``cold`` and gives the book leaves."""
    rows = []
    for low, high in EARLY_GROUPS:
        positions = random_live_positions(n, low, high, seed=low)
        times, leaves = [], 0
        for moves in positions:
            if cold and solver is not None:
                solver.reset()
            before = solver.book_leaves if solver is not None else 0
            t = time.perf_counter()
            call(moves)
            times.append(time.perf_counter() - t)
            leaves += solver.book_leaves - before if solver is not None else 0
        rows.append({"plies": f"{low}-{high}", "positions": len(positions),
                     "median_ms": 1e3 * statistics.median(times), "mean_ms": 1e3 * statistics.mean(times),
                     "max_ms": 1e3 * max(times),
                     "book_leaves_per_pos": leaves / len(times) if solver is not None else None})
    return rows


def search_rate(n: int, tt_log2: int) -> dict:
    """Nodes per second of our search without books on ``n`` random positions of plies 12-16."""
    positions = random_live_positions(n, 12, 16, seed=3)
    solver = Connect4Solver(tt_log2_size=tt_log2, use_book=False, use_book5=False)
    solver.solve(positions[0])  # compile (or load the cache) before timing
    rates, nodes, scores = [], 0, []
    for _ in range(5):
        solver.reset()
        start = solver.nodes
        t0 = time.perf_counter()
        scores = [solver.solve(m) for m in positions]
        rates.append((solver.nodes - start) / (time.perf_counter() - t0))
        nodes = solver.nodes - start
    digest = sum((i + 1) * (s + 100) for i, s in enumerate(scores))
    return {"positions": n, "nodes_per_s": statistics.median(rates), "nodes": nodes, "scores_digest": digest}


def label_speed(n: int, tt_log2: int) -> list[dict]:
    """Per ply 10-16: ``n`` random positions (seeded) labelled twice, each way by a
    solver with a table of its own: the best columns of the full analysis (the score of
    every column) and of the best-column search (``Connect4Solver.best_columns``), with
    their nodes and seconds and whether the columns agree."""
    rows = []
    for plies in range(10, 17):
        positions = random_live_positions(n, plies, plies, seed=plies)
        full, search = Connect4Solver(tt_log2_size=tt_log2), Connect4Solver(tt_log2_size=tt_log2)
        full.analyze("4"), search.best_columns("4")  # compile (or load the cache) before timing
        t0, n0 = time.perf_counter(), full.nodes
        best = []
        for moves in positions:
            scores = full.analyze(moves)
            top = max(v for v in scores if v is not None)
            best.append([c for c, v in enumerate(scores) if v == top])
        t1, n1 = time.perf_counter(), search.nodes
        found = [search.best_columns(moves)[0] for moves in positions]
        t2 = time.perf_counter()
        rows.append({"plies": plies, "positions": len(positions), "agree": sum(a == b for a, b in zip(best, found)),
                     "analysis_s": t1 - t0, "search_s": t2 - t1, "analysis_nodes": full.nodes - n0,
                     "search_nodes": search.nodes - n1})
    return rows


def measure(solve, positions: list[tuple[str, int]], budget: float) -> dict:
    """Per-position times of ``solve`` over ``positions`` (moves, expected score), until
    ``budget`` seconds are spent."""
    if not positions:
        return {"positions": 0, "equal": 0, "median_ms": None, "mean_ms": None}
    times, equal = [], 0
    for moves, expected in positions:
        t = time.perf_counter()
        score = solve(moves)
        times.append(time.perf_counter() - t)
        equal += score == expected
        if sum(times) > budget:
            break
    return {"positions": len(times), "equal": equal, "median_ms": 1e3 * statistics.median(times),
            "mean_ms": 1e3 * statistics.mean(times)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", help="directory of the Test_L*_R* files")
    p.add_argument("--names", nargs="*", default=list(SETS))
    p.add_argument("--limit", type=int, default=1000, help="positions per set")
    p.add_argument("--random", type=int, default=0, help="random positions per group of plies 1-3, 4-8, 9-16, 17-30")
    p.add_argument("--engines", nargs="*", choices=ENGINES, help="default: all (pons with --reference)")
    p.add_argument("--budget", type=float, default=10.0, help="seconds per engine and set, at most about")
    p.add_argument("--reference", help="path of the built c4solver")
    p.add_argument("--no-book-from", type=int, default=14,
                   help="engines without a book: only positions of at least this many plies")
    p.add_argument("--early", type=int, default=0, help="random positions per group of plies 0-3, 4-8, 9-11")
    p.add_argument("--no-book", action="store_true", help="--early: search without the 12-ply book")
    p.add_argument("--cold", action="store_true", help="--early: an empty table for each position")
    p.add_argument("--analyze", action="store_true", help="--early: time the score of every column")
    p.add_argument("--cli", action="store_true", help="--early: time the oracle command line")
    p.add_argument("--rate", type=int, default=0, help="nodes per second of the search without books on N positions")
    p.add_argument("--labels", type=int, default=0,
                   help="per ply 10-16, N random positions: best columns by full analysis and by the best-column search")
    p.add_argument("--tt-log2", type=int, default=23)
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    args = p.parse_args(argv)
    if args.rate:
        row = search_rate(args.rate, args.tt_log2)
        print(json.dumps(row) if args.json else f"search without books, {row['positions']} positions of plies 12-16: "
              f"{row['nodes_per_s'] / 1e6:.2f}M nodes/s (median of 5), {row['nodes']} nodes a pass, "
              f"scores digest {row['scores_digest']}")
        return
    if args.labels:
        for row in label_speed(args.labels, args.tt_log2):
            print(json.dumps(row) if args.json else
                  f"plies {row['plies']:2d} n={row['positions']:3d} agree {row['agree']:3d}  analysis "
                  f"{row['analysis_s']:7.2f} s {row['analysis_nodes'] / 1e6:8.1f}M nodes  best columns "
                  f"{row['search_s']:7.2f} s {row['search_nodes'] / 1e6:8.1f}M nodes  "
                  f"x{row['analysis_s'] / max(row['search_s'], 1e-9):.2f}", flush=True)
        return
    if not (args.sets or args.early or args.random):
        p.error("give --sets DIR, --random N, --early N, --rate N or --labels N")

    if args.early:
        if args.cli:
            if args.no_book or args.cold:
                p.error("--cli times the command line's default path: no --no-book, --cold")
            proc = LineSolver(CLI + (["--analyze"] if args.analyze else []))
            solver, call = None, proc.answer
        else:
            solver = Connect4Solver(tt_log2_size=args.tt_log2, use_book=not args.no_book)
            solver.solve("112233")  # compile (or load the cache) before timing
            call = solver.analyze if args.analyze else solver.solve
        for row in measure_early(args.early, solver, args.cold, call):
            leaves = row["book_leaves_per_pos"]
            print(json.dumps(row) if args.json else
                  f"plies {row['plies']:5s} n={row['positions']:4d}  median {row['median_ms']:8.3f} ms  "
                  f"mean {row['mean_ms']:8.3f} ms  max {row['max_ms']:8.1f} ms"
                  + (f"  book leaves/pos {leaves:.0f}" if leaves is not None else ""), flush=True)
        if args.cli:
            proc.close()
    jobs = []
    for name in args.names if args.sets else ():
        with open(os.path.join(args.sets, name)) as f:
            lines = [line.split() for line in f if line.strip()][:args.limit]
        jobs.append((name, [(m, int(s)) for m, s in lines]))
    if args.random:
        truth = make_engine("bitbully")  # the scores the random groups are checked against
        for low, high in RANDOM_GROUPS:
            moves = random_live_positions(args.random, low, high, seed=low)
            jobs.append((f"random_{low}_{high}", [(m, truth.solve(m)) for m in moves]))
    if not jobs:
        return
    engines = args.engines or [e for e in ENGINES if e != "pons" or args.reference]
    results = {}  # (set, engine) -> row
    for engine in engines:
        solve, close = open_engine(engine, args.reference, args.tt_log2)
        try:
            for name, positions in jobs:
                if engine in WITHOUT_BOOK:
                    positions = [(m, e) for m, e in positions if len(m) >= args.no_book_from]
                results[name, engine] = measure(solve, positions, args.budget)
                print(f"{name} {engine}: {results[name, engine]}", file=sys.stderr, flush=True)
        finally:
            close()
    for name, _ in jobs:
        # Against the fastest engine that measured the same positions: all of the set's.
        whole = [e for e in engines if results[name, e]["positions"] == results[name, engines[0]]["positions"]]
        fastest = min(results[name, e]["mean_ms"] for e in whole)
        for engine in engines:
            row = {"set": name, "engine": engine, **results[name, engine]}
            row["ratio"] = row["mean_ms"] / fastest if engine in whole else None
            if args.json:
                print(json.dumps(row), flush=True)
            elif row["positions"] == 0:
                print(f"{name:13s} {engine:17s} n=   0  (no position from ply {args.no_book_from})")
            else:
                print(f"{name:13s} {engine:17s} n={row['positions']:4d} equal={row['equal']:4d}  "
                      f"median {row['median_ms']:10.3f} ms  mean {row['mean_ms']:10.3f} ms  "
                      + (f"x{row['ratio']:.2f}" if row["ratio"] is not None else "(fewer positions)"), flush=True)


if __name__ == "__main__":
    main()
