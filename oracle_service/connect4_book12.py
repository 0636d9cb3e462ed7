"""The exact scores of Connect Four positions with 12 stones, from BitBully's 12-ply
distance table (PyPI ``bitbully-databases``, MIT licence), read with our own code.

The file (``bitbully_databases/assets/book_12ply_distances.dat``) is a sequence of
5-byte records sorted by their first four bytes:
- a big-endian signed 32-bit code of the board: columns left to right, each from the
  bottom up, ``10`` for a stone of the first player, ``11`` for the second player's, a
  ``0`` where the column ends (after a full column too), then one ``0``; 12 stones make
  exactly 24 + 7 + 1 = 32 bits;
- a signed byte, the score for the first player (who is to move after 12 plies):
  0 a draw, ``100 - d`` a win and ``-(100 - d)`` a loss, ``d`` being the plies the game
  lasts from here.
Only one of each mirror pair is stored, and not every position: those missing (a four
on the board, a win or a forced block at once, ...) are searched as any other.

Our score (docs/design.md): ``22 - s`` for a win, ``s`` the winner's stones when it completes
its four. After 12 plies each player has 6 stones; a win ``d`` plies on is the mover's
``(d + 1) / 2``-th stone from here (d odd) or the opponent's ``d / 2``-th (d even), so
a table score ``t`` converts to ``sign(t) * (22 - 6 - ceil(d / 2))`` with ``d = 100 - |t|``
(:func:`convert_scores`, tested against our solver in tests/oracle/test_connect4_book12.py).
"""

from __future__ import annotations

import functools
import hashlib
import warnings
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit, uint64

from games.connect4 import COLUMN_BITS, HEIGHT, WIDTH
from oracle_service.jit import refcount_free

BOOK_PLY = 12
_STONES_EACH = BOOK_PLY // 2
_TABLE_PACKAGE, _TABLE_PATH = "bitbully_databases", "assets/book_12ply_distances.dat"
# bitbully-databases 0.0.2: a different file is a different table, not an update.
TABLE_SHA256 = "1e01874dbb9b296a96baa2f5483ae69333ac7009377b34b222f112d9d8e89704"
_RECORD = np.dtype([("code", ">i4"), ("score", "i1")])
_DISTANCE_BASE = 100
_ONE = np.uint64(1)
NOT_IN_BOOK = 99  # book_score's answer for a position the table does not hold (no score is 99)


class Book12(NamedTuple):
    """The table in memory: ``codes`` int32[N] sorted, ``scores`` int8[N] in our
    convention for the side to move (the first player) at ply 12."""

    codes: np.ndarray
    scores: np.ndarray


def empty_book() -> Book12:
    """A book with no positions: every 12-stone position is searched."""
    return Book12(np.zeros(0, np.int32), np.zeros(0, np.int8))


def convert_scores(table_scores: np.ndarray) -> np.ndarray:
    """int8[N] our scores of the table's scores (int[N], first player = side to move)."""
    t = np.asarray(table_scores, dtype=np.int64)  # [N]
    plies_left = _DISTANCE_BASE - np.abs(t)  # [N] meaningless where t == 0
    ours = 22 - _STONES_EACH - (plies_left + 1) // 2  # [N]
    return (np.sign(t) * ours).astype(np.int8)


def read_table(path: Path) -> Book12:
    """The table at ``path``, converted; ValueError if it is not a table of this format."""
    raw = np.fromfile(path, dtype=_RECORD)  # [N]
    if raw.size == 0 or path.stat().st_size != raw.size * _RECORD.itemsize:
        raise ValueError(f"connect4 12-ply book {path}: {path.stat().st_size} bytes, not a whole "
                         f"number of {_RECORD.itemsize}-byte records")
    codes = raw["code"].astype(np.int32)  # [N] native byte order for the lookups
    if np.any(codes[1:] <= codes[:-1]):
        raise ValueError(f"connect4 12-ply book {path}: the codes are not strictly increasing")
    t = raw["score"]
    if np.any((t != 0) & ((np.abs(t.astype(np.int64)) > _DISTANCE_BASE - 1)
                          | (np.abs(t.astype(np.int64)) < _DISTANCE_BASE - (42 - BOOK_PLY)))):
        raise ValueError(f"connect4 12-ply book {path}: a score outside +-{_DISTANCE_BASE - 42 + BOOK_PLY}.."
                         f"{_DISTANCE_BASE - 1}")
    return Book12(codes, convert_scores(t))


def table_path() -> Path | None:
    """Where the installed ``bitbully-databases`` keeps the table, None if not installed."""
    try:
        root = resources.files(_TABLE_PACKAGE)
    except ModuleNotFoundError:
        return None
    return Path(str(root.joinpath(_TABLE_PATH)))


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@functools.cache
def load_book(path: Path | None = None) -> Book12:
    """The table at ``path`` (None: the installed one), read once per process. If it is
    missing, fails its checksum or does not parse, one warning says so and the empty book
    is returned: the solver then searches every position itself (exact, only slower
    before ply 12)."""
    path = table_path() if path is None else path
    problem = None
    if path is None or not path.is_file():
        problem = (f"{_TABLE_PACKAGE} is not installed" if path is None else f"{path} is missing")
    elif (digest := _sha256(path)) != TABLE_SHA256:
        problem = f"{path} has sha256 {digest}, not the pinned {TABLE_SHA256}"
    else:
        try:
            return read_table(path)
        except ValueError as e:
            problem = str(e)
    warnings.warn(f"connect4 12-ply book not used: {problem}; the solver searches positions "
                  f"before ply {BOOK_PLY} without it (exact, but seconds to minutes each). "
                  f"Install bitbully-databases==0.0.2 (pyproject's dependencies).", RuntimeWarning,
                  stacklevel=2)
    return empty_book()


@njit(cache=True)
def _code(cur, mask, mirrored):
    """The table's code of a 12-stone position (``cur``: the first player's stones, as it
    is to move), read with the columns reversed if ``mirrored``."""
    code = uint64(0)
    for k in range(WIDTH):
        c = WIDTH - 1 - k if mirrored else k
        for h in range(HEIGHT + 1):
            bit = uint64(c * COLUMN_BITS + h)
            if h == HEIGHT or ((mask >> bit) & _ONE) == 0:
                code = code << _ONE  # the column ends
                break
            code = (code << uint64(2)) | (uint64(2) if ((cur >> bit) & _ONE) else uint64(3))
    code = code << _ONE
    return np.int64(code) - (np.int64(1) << 32) if code >= (uint64(1) << uint64(31)) else np.int64(code)


@refcount_free
def book_score(codes, scores, cur, mask):
    """Our exact score of a 12-stone position with the first player to move, or
    NOT_IN_BOOK if the table does not hold it."""
    if codes.shape[0] == 0:
        return NOT_IN_BOOK
    for mirrored in (False, True):
        code = _code(cur, mask, mirrored)
        i = np.searchsorted(codes, code)
        if i < codes.shape[0] and codes[i] == code:
            return np.int64(scores[i])
    return NOT_IN_BOOK
