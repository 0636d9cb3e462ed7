"""Solve time and search nodes per position of the Hex solver on 7x7 (value and every
winning move, as the datasets need them), one core.

    python -m benchmarks.hex_solver_speed [--sets uniform openings two-ply empty first-moves]
        [--limit N] [--time-limit S] [--seed 0] [--cold] [--value-only] [--templates on off]
        [--prune on off] [--ordering resistance paths] [--widen 50 0] [--json]
    python -m benchmarks.hex_solver_speed --hsearch 300

Sets:
  uniform      the 445 ``hex-uniform`` states (the dataset's moves; generated as its
               builder does, ``evaluation.builders.random_ply_move_lists(game, 445, seed=0)``,
               when the dataset is not at hand)
  openings     the 128 ``hex-openings`` positions (the dataset's moves, else the builder's
               seeded sample of the distinct two-ply positions)
  two-ply      the distinct two-ply positions up to the 180-degree rotation (``--limit``
               of them, drawn with ``--seed``)
  empty        the empty board (without --value-only: every first move, compared with the
               published results as for first-moves)
  first-moves  the 49 one-stone positions (White to move); each answer is compared with
               the results of Hayward et al. (2003) for the openings their page lists

Per set: positions measured, solved, unknown (the ``--time-limit`` per position was
reached, default 600 s; their stone counts are listed), and the median, mean and maximum seconds and nodes. One solver
per set, its transposition table kept across the set's positions (as labelling does);
``--cold`` gives each position a fresh table. ``--value-only`` times ``solve_value`` (the
value and one winning move: what a perfect opponent and the first-move check need)
instead of ``solve`` (every winning move: what the labelled datasets need). ``--templates
on off`` measures each set with the 4th-row edge templates (``hex_templates.py``, the
default) and then without them, one after the other in the same run; ``--prune on off``
likewise with and without dropping vulnerable moves (``_drop_vulnerable``); ``--ordering``
and ``--widen`` the move ordering and the DFPN widening (``HexSolver``'s options), every
combination asked for. Compiling is done before timing. The process is pinned to one
core.

``--hsearch N`` times H-search alone (``hex_vc.hsearch``, the solver's cost per new
position), for both colours on N random 7x7 boards of 4-15 stones with no chain yet: the
median of 3 passes, in microseconds a call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numpy as np

from oracle_service.hex_solver import HexPositionError, HexSolver
from oracle_service.hex_vc import SC_CAP, hsearch

SIZE = 7
SETS = ("uniform", "openings", "two-ply", "empty", "first-moves")
# Hayward et al., "Solving 7x7 Hex" (2003), proof-tree page: openings of the player joining
# north and south (letter = column, number = row), with their 180-degree rotations.
PUBLISHED = {**{n: -1 for n in ("a1", "a2", "a3", "a5", "b1", "b2", "g7", "g6", "g5", "g3", "f7", "f6")},
             **{n: 1 for n in ("a4", "a6", "a7", "b3", "g4", "g2", "g1", "f5")}}


def cell_name(p: int) -> str:
    return f"{'abcdefg'[p % SIZE]}{p // SIZE + 1}"


def dataset_moves(name: str, count: int) -> list[list[int]]:
    """The dataset's ``count`` move lists; generated as its builder does when the file is
    not at hand or holds fewer (a labelled file may leave out the states its labelling
    gave up on)."""
    try:
        from evaluation.datasets import load_dataset

        moves = [list(map(int, m)) for m in load_dataset(name).table["moves"].to_pylist()]
        if len(moves) == count:
            return moves
        print(f"{name}: the file holds {len(moves)} states, not {count}; generating its moves", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - any failure to read falls back to the generator
        print(f"{name}: dataset not read ({type(e).__name__}: {e}); generating its moves", file=sys.stderr)
    import games
    from evaluation.builders import distinct_after, random_ply_move_lists

    game = games.make("hex", size=SIZE)
    if name == "hex-uniform":
        return random_ply_move_lists(game, count, seed=0)
    pool = two_ply(game, distinct_after)
    pick = np.random.default_rng(0).choice(len(pool), size=count, replace=False)
    return [pool[i] for i in sorted(pick)]


def two_ply(game, distinct_after) -> list[list[int]]:
    sym = game.symmetries()

    def canonical(state):
        obs = game.encode(state)
        return [min(bytes(o.astype(np.uint8)), bytes(sym[-1].obs(o[None])[0].astype(np.uint8))) for o in obs]

    return distinct_after(game, 2, canonical)


def positions(name: str, limit: int | None, seed: int) -> list[list[int]]:
    if name == "uniform":
        out = dataset_moves("hex-uniform", 445)
    elif name == "openings":
        out = dataset_moves("hex-openings", 128)
    elif name == "two-ply":
        import games
        from evaluation.builders import distinct_after

        pool = two_ply(games.make("hex", size=SIZE), distinct_after)
        order = np.random.default_rng(seed).permutation(len(pool))
        out = [pool[i] for i in order]
    elif name == "empty":
        out = [[]]
    else:
        out = [[p] for p in range(SIZE * SIZE)]
    return out[:limit] if limit else out


def measure(name, moves, time_limit, cold, value_only=False, **options) -> dict:
    """One row: ``options`` are the HexSolver's search options, all four given (templates, prune, ordering,
    widen)."""
    solver = HexSolver(SIZE, **options)
    seconds, nodes, unknown, unknown_stones = [], [], 0, []
    black_results: dict[str, int] = {}  # first move (cell name) -> Black's proved result, +1 wins / -1 loses
    for i, cells in enumerate(moves):
        if cold:
            solver = HexSolver(SIZE, **options)
        t0 = time.perf_counter()
        result = (solver.solve_value if value_only else solver.solve)(cells, time_limit=time_limit)
        seconds.append(time.perf_counter() - t0)
        nodes.append(result.nodes)
        if result.value is None:
            unknown += 1
            unknown_stones.append(len(cells))
        if name == "first-moves":
            opening = cell_name(cells[0])
            black = None if result.value is None else -result.value  # White is to move
            print(f"  {opening}: Black {'wins' if black == 1 else 'loses' if black == -1 else 'unknown'}"
                  f" ({seconds[-1]:.1f} s, {nodes[-1]} nodes)", file=sys.stderr, flush=True)
            if black is not None:
                black_results[opening] = black
        elif name == "empty" and not value_only and result.value is not None:
            black_results.update({cell_name(p): 1 if p in result.winning else -1 for p in range(SIZE * SIZE)})
            print(f"  empty board: Black's winning first moves "
                  f"{' '.join(cell_name(p) for p in result.winning)}", file=sys.stderr, flush=True)
        elif (i + 1) % 50 == 0:
            print(f"  {name}: {i + 1}/{len(moves)}", file=sys.stderr, flush=True)
    row = {"set": name, "mode": "value" if value_only else "every move",
           "templates": "on" if options["templates"] else "off", "prune": "on" if options["prune"] else "off",
           "ordering": options["ordering"], "widen": options["widen"],
           "positions": len(moves), "solved": len(moves) - unknown, "unknown": unknown,
           "unknown_stones": sorted(unknown_stones),
           "total_s": sum(seconds),
           "median_s": statistics.median(seconds), "mean_s": statistics.fmean(seconds), "max_s": max(seconds),
           "median_nodes": statistics.median(nodes), "mean_nodes": statistics.fmean(nodes), "max_nodes": max(nodes)}
    if name == "first-moves" or (name == "empty" and not value_only):
        compared = [opening for opening in black_results if opening in PUBLISHED]
        row["published_mismatches"] = [opening for opening in compared if black_results[opening] != PUBLISHED[opening]]
        row["published_compared"] = len(compared)
    return row


def hsearch_speed(boards: int, seed: int) -> dict:
    """Microseconds per H-search call on ``boards`` random boards (both colours, median of 3 passes)."""
    solver = HexSolver(SIZE)
    rng = np.random.default_rng(seed)
    flat = []
    while len(flat) < boards:
        cells = rng.permutation(SIZE * SIZE)[:rng.integers(4, 16)].tolist()
        try:
            flat.append(solver.board_of(cells)[0])
        except HexPositionError:  # a chain already made
            continue
    tables = (solver._neighbours, solver._edges, solver._templates)
    out_vc, out_sc = np.empty((1, 2), np.uint64), np.empty((SC_CAP, 2), np.uint64)
    passes, found = [], 0
    for _ in range(3):
        t0 = time.perf_counter()
        found = sum(bool(hsearch(b, colour, *tables, out_vc, out_sc)[0]) for b in flat for colour in (1, 2))
        passes.append((time.perf_counter() - t0) / (2 * len(flat)) * 1e6)
    return {"boards": boards, "us_per_call": statistics.median(passes), "edge_to_edge_vcs": found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hex_solver_speed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--limit", type=int, help="at most N positions per set")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per position (then unknown)")
    parser.add_argument("--seed", type=int, default=0, help="draws the two-ply sample")
    parser.add_argument("--cold", action="store_true", help="a fresh transposition table per position")
    parser.add_argument("--value-only", action="store_true", help="the value and one winning move, not every one")
    parser.add_argument("--templates", nargs="+", choices=("on", "off"), default=["on"],
                        help="with the 4th-row edge templates, without them, or both (in this order)")
    parser.add_argument("--prune", nargs="+", choices=("on", "off"), default=["on"],
                        help="dropping vulnerable moves, or not, or both (in this order)")
    parser.add_argument("--ordering", nargs="+", choices=("resistance", "paths"), default=["resistance"],
                        help="the move ordering: shortest paths, the resistance currents, or both")
    parser.add_argument("--widen", nargs="+", type=int, default=[50],
                        help="percent of the live moves a node's proof number looks at (0: all), one or more")
    parser.add_argument("--hsearch", type=int, metavar="N", help="time H-search alone on N random boards, then stop")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.hsearch:
        row = hsearch_speed(args.hsearch, args.seed)
        print(json.dumps(row) if args.json else f"H-search: {row['us_per_call']:.0f} us a call on {row['boards']} "
              f"random boards, both colours ({row['edge_to_edge_vcs']} edge-to-edge connections found)")
        return 0
    HexSolver(SIZE).solve([24, 23], time_limit=1.0)  # compile or load the kernels
    rows = [measure(name, positions(name, args.limit, args.seed), args.time_limit, args.cold, args.value_only,
                    templates=templates == "on", prune=prune == "on", ordering=ordering, widen=widen)
            for name in args.sets for templates in args.templates for prune in args.prune
            for ordering in args.ordering for widen in args.widen]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'set':<12} {'mode':<10} {'tpl':<4} {'prune':<5} {'order':<10} {'widen':>5} {'n':>4} {'solved':>6} {'total s':>9} {'median s':>9} {'mean s':>8} {'max s':>8} "
          f"{'median nodes':>12} {'mean nodes':>10} {'max nodes':>9}")
    for r in rows:
        print(f"{r['set']:<12} {r['mode']:<10} {r['templates']:<4} {r['prune']:<5} {r['ordering']:<10} {r['widen']:>5} {r['positions']:>4} {r['solved']:>6} {r['total_s']:>9.1f} {r['median_s']:>9.4f} "
              f"{r['mean_s']:>8.3f} {r['max_s']:>8.2f} {r['median_nodes']:>12.0f} {r['mean_nodes']:>10.0f} "
              f"{r['max_nodes']:>9}")
        if r["unknown"]:
            print(f"  unknown after the time limit: {r['unknown']}, with these stone counts: {r['unknown_stones']}")
        if "published_mismatches" in r:
            print(f"  first moves against the published results: {r['published_compared']} of the "
                  f"{len(PUBLISHED)} listed solved and compared, mismatches: {r['published_mismatches'] or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
