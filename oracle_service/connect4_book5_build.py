"""Regenerates the Connect Four 5-ply book (:mod:`oracle_service.connect4_book5`) with our
solver. It is kept apart from the reader, which the solver imports: the two would otherwise
import each other.

    python -m oracle_service.connect4_book5_build [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from oracle_service.connect4_book5 import BOOK5_FILE, BOOK5_PLY, book5_path, classes
from oracle_service.connect4_solver import Connect4Solver


def generate(max_ply: int = BOOK5_PLY) -> str:
    """The file's text: every class up to ``max_ply`` solved by our solver with its 12-ply
    book and without this file, deepest first (each shallower search finds its children's
    bounds in the transposition table)."""
    solver = Connect4Solver(use_book5=False)
    if solver.book.codes.size == 0:
        raise RuntimeError("the 12-ply book is not loaded: the generation would take hours")
    moves = classes(max_ply)
    scores = {m: solver.solve(m) for m in sorted(moves, key=len, reverse=True)}
    return "".join(f"{m or '-'} {scores[m]}\n" for m in moves)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="regenerate the Connect Four 5-ply book")
    p.add_argument("--out", type=Path, default=None, help=f"default: the packaged {BOOK5_FILE}")
    args = p.parse_args(argv)
    text = generate()
    out = args.out or book5_path()
    out.write_text(text)
    print(f"{out}: {len(text.splitlines())} positions, sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
