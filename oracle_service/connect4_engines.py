"""The Connect Four engines behind one interface, chosen by name (``--engine``, the
service's ``engine``):

- ``ours``: :class:`~oracle_service.connect4_solver.Connect4Solver`, our numba search
  down to the 12-ply book (``use_book=False``: searched to the end), at every board size
  of ``games.connect4`` (the books are 7x6's: other sizes are searched to the end);
- ``bitbully``: BitBully's C++ solver of 7x6 (PyPI ``bitbully``, AGPL-3.0, the optional extra
  ``selfplay[bitbully]``) with its 12-ply distance book from ``bitbully-databases``
  (``use_book=False``: without it). Imported only when chosen, so that nothing in the
  default install or the default path needs it.

Every engine answers from our inputs (move strings, action lists, :class:`Board`,
engine states), checked by our parsers, so that bad input gets the same error
whichever engine answers, and in our score convention (docs/design.md): BitBully's scores
are the same as ours (22 minus the winner's stones; tested against ours in
tests/oracle/test_connect4_engines.py on positions of every ply), so they are passed
through as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from games.connect4 import COLUMN_BITS, HEIGHT, WIDTH

ENGINES = ("ours", "bitbully")
DEFAULT_ENGINE = "ours"
BITBULLY_EXTRA = "pip install 'selfplay[bitbully]'"
_BITBULLY_COLUMN_BITS = 9
_BITBULLY_FULL_COLUMN = -1000  # scoreMoves' score of a full column
_CELLS = WIDTH * HEIGHT


class Connect4Engine(Protocol):
    """What the command line and the oracle service ask of an engine. Positions are a
    move string (``"4453"``), a list of actions 0..width-1 or a ``Board``; states are
    ``games.connect4`` bitboards (uint64[B], uint64[B], int64[B] plies) of the engine's
    board size (BitBully's: 7x6 only)."""

    def solve(self, position, weak: bool = False) -> int:
        """The position's score (``weak``: 1 / 0 / -1)."""

    def analyze(self, position, weak: bool = False) -> list[int | None]:
        """Per column 0..width-1 the score of playing it, None for a full column."""

    def best_columns(self, position) -> tuple[list[int], int]:
        """(the columns 0..width-1 of maximal score, ascending; that score)."""

    def solve_states(self, current: np.ndarray, mask: np.ndarray, moves: np.ndarray,
                     weak: bool = False) -> np.ndarray:
        """int64[B] scores of engine states, none of them over."""

    takes_seeds: bool  # whether seed() enters scores in its search (else the store is not read for it)

    def seed(self, current: np.ndarray, mask: np.ndarray, scores: np.ndarray) -> None:
        """Exact scores known from elsewhere (the store), for the search to stop at."""

    @property
    def book_leaves(self) -> int:
        """Searched nodes that the 12-ply book answered."""


class MissingEngineError(ImportError):
    """An engine was chosen whose optional package is not installed."""


def make_engine(name: str = DEFAULT_ENGINE, *, use_book: bool | None = None, tt_log2_size: int = 23,
                width: int = WIDTH, height: int = HEIGHT) -> Connect4Engine:
    """The engine called ``name`` (one of :data:`ENGINES`) for Connect Four on ``width`` x
    ``height`` (the standard 7x6 by default), with its 12-ply book where there is one (on
    7x6) unless ``use_book`` is False. ``tt_log2_size`` sizes our transposition table
    (BitBully sizes its own). ValueError for an unknown name, a size there is not
    (``games.connect4.check_size``), BitBully at another size than 7x6 (it plays 7x6
    only) or ``use_book=True`` there; :class:`MissingEngineError`, naming the extra to
    install, when ``bitbully`` is chosen and not installed."""
    if name == "ours":
        # Imported here: the module compiles (or loads) its kernels, which a caller
        # choosing BitBully should not pay for.
        from oracle_service.connect4_solver import Connect4Solver

        return Connect4Solver(tt_log2_size=tt_log2_size, use_book=use_book, width=width, height=height)
    if name == "bitbully":
        if (width, height) != (WIDTH, HEIGHT):
            raise ValueError(f"the bitbully connect4 engine plays {WIDTH}x{HEIGHT} only, not {width}x{height}; "
                             f"use the engine 'ours'")
        return BitBullyEngine(use_book=use_book is not False)
    raise ValueError(f"unknown connect4 engine {name!r}: choose one of {', '.join(ENGINES)}")


def bitbully_bits(bits: np.ndarray) -> np.ndarray:
    """uint64[B] bitboards in BitBully's layout (9 bits a column, 6 cells used) from
    ours (``games.connect4``: 7 bits a column, 6 cells and a sentinel)."""
    bits = np.asarray(bits, dtype=np.uint64)  # [B]
    column = np.uint64((1 << HEIGHT) - 1)
    out = np.zeros_like(bits)  # [B]
    for c in range(WIDTH):
        out |= ((bits >> np.uint64(c * COLUMN_BITS)) & column) << np.uint64(c * _BITBULLY_COLUMN_BITS)
    return out


class BitBullyEngine:
    """BitBully's solver behind :class:`Connect4Engine`. Its transposition table is kept
    across calls, as ours is; it cannot take scores from outside, so :meth:`seed` keeps
    nothing (the store still answers the positions it holds before any search)."""

    def __init__(self, use_book: bool = True):
        try:
            from bitbully import bitbully_core
        except ImportError as e:
            raise MissingEngineError(
                f"the bitbully connect4 engine needs the optional package bitbully (AGPL-3.0), "
                f"which is not installed: {BITBULLY_EXTRA}") from e
        self._core_module = bitbully_core
        if use_book:
            import bitbully_databases

            path = Path(bitbully_databases.BitBullyDatabases.get_database_path("12-ply-dist"))
            self._core = bitbully_core.BitBullyCore(path)
            if not self._core.isBookLoaded():
                raise RuntimeError(f"bitbully could not load its 12-ply book {path}")
        else:
            self._core = bitbully_core.BitBullyCore()

    @property
    def book_leaves(self) -> int:
        return 0  # BitBully does not count its book's answers apart from its nodes

    takes_seeds = False  # no way in to BitBully's table: see the class docstring

    def seed(self, current: np.ndarray, mask: np.ndarray, scores: np.ndarray) -> None:
        return None

    def _board(self, current: int, mask: int, plies: int):
        board = self._core_module.BoardCore()
        cur, msk = bitbully_bits(np.array([current, mask], dtype=np.uint64)).tolist()
        board.setRawState(msk, cur, _CELLS - plies)  # (all stones, the mover's, empty cells)
        return board

    def _solve_bits(self, current: int, mask: int, plies: int, weak: bool) -> int:
        score = int(self._core.mtdf(self._board(current, mask, plies), 0))
        return int(np.sign(score)) if weak else score

    def solve(self, position, weak: bool = False) -> int:
        from oracle_service.connect4_solver import parse_position

        return self._solve_bits(*parse_position(position), weak)

    def solve_states(self, current: np.ndarray, mask: np.ndarray, moves: np.ndarray,
                     weak: bool = False) -> np.ndarray:
        from oracle_service.connect4_solver import Board, parse_board

        current = np.asarray(current, dtype=np.uint64)  # [B]
        mask = np.asarray(mask, dtype=np.uint64)  # [B]
        moves = np.asarray(moves, dtype=np.int64)  # [B]
        assert current.shape == mask.shape == moves.shape and current.ndim == 1, \
            (current.shape, mask.shape, moves.shape)
        out = np.zeros(current.size, dtype=np.int64)  # [B]
        for i, (c, m, n) in enumerate(zip(current.tolist(), mask.tolist(), moves.tolist())):
            _, _, plies = parse_board(Board(c, m))  # over or inconsistent: ValueError, as ours
            if plies != n:
                raise ValueError(f"connect4 state {i}: {n} moves given for a board of {plies} stones")
            out[i] = self._solve_bits(c, m, plies, weak)
        return out

    def analyze(self, position, weak: bool = False) -> list[int | None]:
        from oracle_service.connect4_solver import parse_position

        scores = self._core.scoreMoves(self._board(*parse_position(position)))
        return [None if s == _BITBULLY_FULL_COLUMN else int(np.sign(s)) if weak else int(s)
                for s in scores]

    def best_columns(self, position) -> tuple[list[int], int]:
        scores = self.analyze(position)
        best = max(s for s in scores if s is not None)
        return [c for c, s in enumerate(scores) if s == best], best
