"""``python -m oracle_service solve``: exact answers, one input position per line.

    solve --game connect4 [--width W --height H] [--weak] [--analyze] [--engine ours|bitbully]
        in:  move strings of 1-based column digits (``4453``; ``-`` = the empty board)
        out: ``<moves> <score>``, or with --analyze ``<moves> <score col 1> ... <score col W>``
             with ``-`` for a full column (scores as in docs/design.md; --weak: -1, 0, 1);
             --width/--height: the board (default 7x6; width 4..9, height 4..7,
             (height + 1) * width <= 64; the books are of 7x6, other sizes are searched
             to the end); --engine: our solver (the default) or BitBully (7x6 only; the
             optional extra selfplay[bitbully], AGPL-3.0), the same lines either way
    solve --game chomp --rows R --cols C [--cache-dir DIR]
        in:  row-length profiles, row 0 first, non-increasing (``10,10,7,3``)
        out: ``<profile> <grundy> <winning cells>``: the cells whose taking leaves
             Grundy 0, as action indices ``row * cols + col`` (0-based, row 0 holds the
             poisoned square at col 0), ascending, comma separated, or ``-`` if none
    solve --game hex --size N [--analyze | --value-only] [--node-limit K] [--time-limit S]
        in:  the played cells in move order, Black first, as comma-separated indices
             ``r * N + c`` (``8,16,3``; ``-`` = the empty board)
        out: ``<cells> <value> <winning cells>``: 1 if the side to move wins, -1 if it
             loses, and every winning cell, ascending, comma separated, or ``-`` if none;
             ``<cells> unknown -`` when a limit was reached; with --value-only the same
             line with one winning cell only (a single proof: far cheaper early on); with --analyze
             ``<cells> <value of cell 0> ... <value of cell N*N-1>``: 1 / -1 per empty
             cell (``unknown`` under a limit), ``-`` for an occupied one. --node-limit and
             --time-limit (seconds) bound each line; the solver's table is kept across lines
    solve --game fgame [--depth H] [--branching B] [--beta P] [--seed S]
        in:  action paths from the root (``0,3,1``; ``-`` = the root)
        out: ``<path> <value> <optimal actions>``: the exact value for the player to
             move in {-1, 0, 1} and the actions achieving it, comma separated

    book --game connect4 --depth D [--from MOVES] [--store URL] [--replicas N] [--address ADDR]
         [--seed-depth K]
        solves every position within D plies of MOVES (default: the start), one per
        mirror class, deepest first, on oracle replicas on Ray (embedded, or the cluster
        at ADDR), into the store (default the embedded SQLite store; ``redis://...`` for
        Redis); shallower positions are solved with their stored descendants (those
        within K plies, default 2, seed the solver's table)

Whitespace-only lines are skipped. A bad line (illegal move, full column, malformed
profile, wrong board size, position already over; for Hex a cell off the board, a
repeated cell, a position already won) gets one line
``error: line N: '<input>': <problem>`` on stderr and no answer; the other lines are
answered, and the exit status is 1 if any line was bad. Answers are flushed line by
line, so the command can serve as a co-process.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, TextIO

from games import IllegalMoveError
from oracle_service.chomp_grundy import ChompTable
from oracle_service.connect4_engines import BITBULLY_EXTRA, DEFAULT_ENGINE, ENGINES, MissingEngineError
from oracle_service.fgame_oracle import FGamePathOracle

EMPTY = "-"  # the empty move sequence / the root, which a blank line cannot say


class InputError(ValueError):
    """A bad input line: its message is the problem, for the error line."""


# ------------------------------------------------------------------- answerers


def _connect4(args) -> Callable[[str], str]:
    from oracle_service.connect4_engines import make_engine  # compiles or loads an engine: only when asked

    size = {k: v for k, v in (("width", args.width), ("height", args.height)) if v is not None}
    solver = make_engine(args.engine or DEFAULT_ENGINE, **size)

    def answer(line: str) -> str:
        moves = "" if line == EMPTY else line
        if args.analyze:
            scores = solver.analyze(moves, weak=args.weak)
            return " ".join([line] + [EMPTY if s is None else str(s) for s in scores])
        return f"{line} {solver.solve(moves, weak=args.weak)}"

    return answer


def _parse_ints(line: str, what: str) -> list[int]:
    values = []
    for token in line.split(","):
        token = token.strip()
        if not token.isdigit() or not token.isascii():
            raise InputError(f"malformed {what}: {token!r} is not a non-negative integer "
                             f"(expected comma-separated integers)")
        values.append(int(token))
    return values


def _chomp(args) -> Callable[[str], str]:
    rows, cols = args.rows, args.cols
    table = ChompTable(rows, cols, cache_dir=args.cache_dir)

    def answer(line: str) -> str:
        p = _parse_ints(line, "profile")
        if len(p) != rows:
            raise InputError(f"wrong board size: {len(p)} row lengths for a board of {rows} rows")
        for r, v in enumerate(p):
            if v > cols:
                raise InputError(f"wrong board size: row {r} has length {v}, the board has {cols} columns")
        if p[0] < 1:
            raise InputError("malformed profile: row 0 must keep the poisoned square (length >= 1)")
        for r in range(1, rows):
            if p[r] > p[r - 1]:
                raise InputError(f"malformed profile: row lengths must be non-increasing "
                                 f"(row {r} has {p[r]} > row {r - 1} has {p[r - 1]})")
        if p[0] == 1 and (rows == 1 or p[1] == 0):
            raise InputError("position already over: only the poisoned square is left")
        cells = table.winning_actions(p)
        return f"{','.join(map(str, p))} {table.grundy(p)} {','.join(map(str, cells)) or EMPTY}"

    return answer


def _fgame(args) -> Callable[[str], str]:
    # Parameters not given take the F-Game defaults (depth 10, branching 5, beta 0.05, seed 0).
    given = {k: getattr(args, k) for k in ("depth", "branching", "beta", "seed") if getattr(args, k) is not None}
    oracle = FGamePathOracle(**given)

    def answer(line: str) -> str:
        path = [] if line == EMPTY else _parse_ints(line, "path")
        try:
            if oracle.over([path])[0]:
                raise InputError(f"position already over: the node is a leaf (value {oracle.value(path)})")
        except IllegalMoveError as e:
            raise InputError(f"illegal path: {e}") from None
        best = oracle.optimal_actions(path)
        return f"{line} {oracle.value(path)} {','.join(map(str, best))}"

    return answer


def _hex(args) -> Callable[[str], str]:
    from oracle_service.hex_solver import HexSolver  # compiles or loads the kernels: only when asked

    solver = HexSolver(args.size, node_limit=args.node_limit, time_limit=args.time_limit)

    def answer(line: str) -> str:
        cells = [] if line == EMPTY else _parse_ints(line, "cell list")
        if args.analyze:
            values = solver.analyze(cells)
            occupied = set(cells)
            words = [EMPTY if p in occupied else "unknown" if v is None else str(v) for p, v in enumerate(values)]
            return " ".join([line] + words)
        result = solver.solve_value(cells) if args.value_only else solver.solve(cells)
        if result.value is None:
            return f"{line} unknown {EMPTY}"
        return f"{line} {result.value} {','.join(map(str, result.winning)) or EMPTY}"

    return answer


ANSWERERS = {"connect4": _connect4, "chomp": _chomp, "fgame": _fgame, "hex": _hex}


# ------------------------------------------------------------------ entry point


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m oracle_service", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    solve = sub.add_parser("solve", help="answer one position per input line (stdin -> stdout)")
    solve.add_argument("--game", required=True, choices=sorted(ANSWERERS))
    c4 = solve.add_argument_group("connect4")
    c4.add_argument("--width", type=int, help="columns, 4..9 (default 7)")
    c4.add_argument("--height", type=int, help="rows, 4..7 (default 6); (height + 1) * width <= 64")
    c4.add_argument("--weak", action="store_true", help="win/draw/loss only: 1, 0, -1")
    c4.add_argument("--analyze", action="store_true", help="the score of every column (hex: the value of every cell)")
    c4.add_argument("--engine", choices=ENGINES, help=f"who solves (default {DEFAULT_ENGINE}: our solver; "
                                                      f"bitbully: BitBully, AGPL-3.0, {BITBULLY_EXTRA})")
    ch = solve.add_argument_group("chomp")
    ch.add_argument("--rows", type=int)
    ch.add_argument("--cols", type=int)
    ch.add_argument("--cache-dir", help="where Grundy tables are kept (default $SELFPLAY_CHOMP_CACHE "
                                        "or ~/.cache/selfplay/chomp)")
    book = sub.add_parser("book", help="solve every position up to a depth into the store, on Ray")
    book.add_argument("--game", required=True, choices=["connect4"])
    book.add_argument("--depth", type=int, required=True, help="plies beyond --from")
    book.add_argument("--from", dest="prefix", default="", help="the root position, as move digits")
    book.add_argument("--store", help="store path or redis:// URL (default $SELFPLAY_ORACLE_STORE or "
                                      "~/.cache/selfplay/oracle.sqlite)")
    book.add_argument("--replicas", type=int, default=2, help="oracle replicas solving in parallel")
    book.add_argument("--address", help="Ray cluster to join (default: an embedded Ray)")
    book.add_argument("--seed-depth", type=int, default=2,
                      help="plies below a position whose stored scores seed its search (0: none)")
    hx = solve.add_argument_group("hex")
    hx.add_argument("--size", type=int, help="board size, 1..9")
    hx.add_argument("--value-only", action="store_true", help="the value and one winning cell, not every one")
    hx.add_argument("--node-limit", type=int, help="search nodes per line; beyond it the answer is unknown")
    hx.add_argument("--time-limit", type=float, help="seconds per line; beyond it the answer is unknown")
    fg = solve.add_argument_group("fgame")
    fg.add_argument("--depth", type=int)
    fg.add_argument("--branching", type=int)
    fg.add_argument("--beta", type=float)
    fg.add_argument("--seed", type=int)
    return parser


def _check_options(parser: argparse.ArgumentParser, args) -> None:
    """Options of another game are errors, not silently ignored."""
    own = {"connect4": ("width", "height", "weak", "analyze", "engine"), "chomp": ("rows", "cols", "cache_dir"),
           "fgame": ("depth", "branching", "beta", "seed"), "hex": ("size", "analyze", "value_only", "node_limit",
                                                                                  "time_limit")}
    for name in {name for names in own.values() for name in names}:
        owners = [game for game, names in own.items() if name in names]
        if args.game not in owners and getattr(args, name) not in (None, False):
            parser.error(f"--{name.replace('_', '-')} is an option of --game {' or '.join(owners)}, not {args.game}")
    required = {"chomp": ("rows", "cols"), "hex": ("size",)}
    missing = [f"--{n}" for n in required.get(args.game, ()) if getattr(args, n) is None]
    if missing:
        parser.error(f"--game {args.game} needs {', '.join(missing)}")
    if args.analyze and args.value_only:  # (--value-only is Hex's: checked above)
        parser.error("--analyze (every cell's value) and --value-only (one winning cell) exclude each other")


def run_book(args, stdout: TextIO, stderr: TextIO) -> int:
    # Ray and the service load only for the book: its start-up takes seconds, which the
    # one-line-per-position solve command should not pay.
    import ray

    from lifecycle.ray_start import start_ray
    from oracle_service.book import book_positions, fill_book
    from oracle_service.service import OracleClient

    try:
        positions = book_positions(args.depth, args.prefix)
        if args.seed_depth < 0:
            raise ValueError(f"--seed-depth must be >= 0, got {args.seed_depth}")
    except ValueError as e:
        print(f"error: {e}", file=stderr)
        return 2
    started = start_ray(args.address)
    client = OracleClient(num_replicas=args.replicas, store=args.store, seed_depth=args.seed_depth)
    try:
        done = fill_book(client, positions, progress=lambda n, total: print(
            f"\r{n}/{total} positions", end="", file=stderr, flush=True))
    finally:
        client.close()
        if started:
            ray.shutdown()
    print(file=stderr)
    print(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in done.items()),
          file=stdout)
    return 1 if done["errors"] else 0


def main(argv: list[str] | None = None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout,
         stderr: TextIO = sys.stderr) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "book":
        return run_book(args, stdout, stderr)
    _check_options(parser, args)
    try:
        answer = ANSWERERS[args.game](args)
    except (ValueError, MissingEngineError) as e:  # a board or tree the engines reject (e.g. --rows 40),
        parser.error(str(e))  # or an engine whose optional package is not installed
    bad = 0
    for number, raw in enumerate(stdin, start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            out = answer(line)
        except ValueError as e:  # InputError, or the solver's and engines' own checks
            bad += 1
            print(f"error: line {number}: {line!r}: {e}", file=stderr, flush=True)
            continue
        print(out, file=stdout, flush=True)
    return 1 if bad else 0
