"""Grundy numbers of every Chomp position of an ``rows x cols`` board, in one table.

A position is its profile ``p``: the squares left in each row, row 0 first,
non-increasing, ``p[0] >= 1`` (row 0 holds the poisoned square P at column 0; see
``games/chomp.py``). Taking square ``(r, c)`` with ``c < p[r]``, ``(r, c) != (0, 0)``,
sets ``p[r'] = min(p[r'], c)`` for every ``r' >= r``. ``[1, 0, ..., 0]`` (only P left)
has no move: the player to move has lost, Grundy 0.

Ranking. Read the profile backwards, ``q[i] = p[rows - 1 - i]`` (non-decreasing in
0..cols); then ``s[i] = q[i] + i`` is a strictly increasing choice of ``rows`` numbers
out of ``0..rows + cols - 1``, and its colex rank

    rank(p) = sum_i binom(q[i] + i, i + 1)

is a bijection onto ``0 .. binom(rows + cols, rows) - 1``. Rank 0 is the empty
profile (P taken too), which no move reaches; its entry is unused. Each term grows
with ``q[i]``, and a move lowers some rows and raises none, so every move goes to a
smaller rank: filling the table in increasing rank order sees every successor first.

Grundy numbers fit in uint8 on every board the engine allows (at most 16 x 16):
a mex is at most the number of moves, ``rows * cols - 1 <= 255``; the build asserts it.

Tables are built once per board size and kept as ``grundy_<rows>x<cols>.npy`` under
the cache directory (``$SELFPLAY_CHOMP_CACHE`` or ``~/.cache/selfplay/chomp``).
"""

from __future__ import annotations

import os
import tempfile
from math import comb
from pathlib import Path
from typing import Sequence

import numpy as np
from numba import njit

MAX_SIDE = 16  # the engine's limit (games/chomp.py)
CACHE_ENV = "SELFPLAY_CHOMP_CACHE"


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "selfplay" / "chomp")


# --------------------------------------------------------------------- kernels


def binomials(rows: int, cols: int) -> np.ndarray:
    """int64[rows + cols + 1, rows + 2]: ``binom(n, k)``, the ranking's weights."""
    n_max, k_max = rows + cols, rows + 1
    out = np.zeros((n_max + 1, k_max + 1), np.int64)
    for n in range(n_max + 1):
        for k in range(min(n, k_max) + 1):
            out[n, k] = comb(n, k)
    return out


@njit(cache=True)
def _rank_one(profile, binom):
    rows = profile.shape[0]
    r = np.int64(0)
    for i in range(rows):
        r += binom[profile[rows - 1 - i] + i, i + 1]
    return r


@njit(cache=True)
def _rank_kernel(profiles, binom):
    N = profiles.shape[0]
    out = np.empty(N, np.int64)  # [N]
    for b in range(N):
        out[b] = _rank_one(profiles[b], binom)
    return out


@njit(cache=True)
def _unrank_kernel(ranks, rows, cols, binom):
    N = ranks.shape[0]
    out = np.empty((N, rows), np.int8)  # [N, rows]
    for b in range(N):
        rem = ranks[b]
        # Colex unranking: the largest s[i] with binom(s[i], i + 1) <= rem, from the top.
        for i in range(rows - 1, -1, -1):
            s = i + cols  # s[i] <= q_max + i
            while binom[s, i + 1] > rem:
                s -= 1
            rem -= binom[s, i + 1]
            out[b, rows - 1 - i] = s - i
    return out


@njit(cache=True)
def _build_kernel(rows, cols, binom):
    n = binom[rows + cols, rows]
    table = np.zeros(n, np.uint8)  # [n]; rank 0 (empty profile) stays 0, unused
    seen = np.full(257, -1, np.int64)  # seen[g] == rank: a child of `rank` has Grundy g
    # weight[r, v]: the rank term of row r at length v (row r is q index rows - 1 - r);
    # below[r, v] = sum of weight[j, v] over rows j < r, so cutting rows r..e-1 to
    # length c adds below[e, c] - below[r, c] to the rank in O(1).
    weight = np.empty((rows, cols + 1), np.int64)
    for r in range(rows):
        for v in range(cols + 1):
            weight[r, v] = binom[v + rows - 1 - r, rows - r]
    below = np.zeros((rows + 1, cols + 1), np.int64)
    for r in range(rows):
        below[r + 1] = below[r] + weight[r]
    profile = np.zeros(rows + 1, np.int64)  # a sentinel row of length 0 ends every cut
    now = np.zeros(rows + 1, np.int64)  # now[r]: sum of the profile's terms of rows < r
    profile[0] = 1  # rank 1: [1, 0, ..., 0], the terminal position
    max_g = 0
    for rank in range(1, n):
        if rank > 1:  # next profile in colex order: bump the lowest row that may grow
            r = rows - 1
            while r > 0 and profile[r] == profile[r - 1]:
                r -= 1
            profile[r] += 1
            for k in range(r + 1, rows):
                profile[k] = 0
        for r in range(rows):
            now[r + 1] = now[r] + weight[r, profile[r]]
        for r in range(rows):
            # Walk c down from p[r] - 1: the cut rows r..e-1 (those longer than c) only
            # grow, so e moves monotonically down the profile.
            e = r
            for c in range(profile[r] - 1, 0 if r == 0 else -1, -1):
                while profile[e] > c:
                    e += 1
                child = rank - (now[e] - now[r]) + (below[e, c] - below[r, c])
                seen[table[child]] = rank
        g = 0
        while seen[g] == rank:
            g += 1
        table[rank] = g
        max_g = max(max_g, g)
    return table, max_g


@njit(cache=True)
def _winning_kernel(profiles, table, cols, binom):
    N, rows = profiles.shape
    win = np.zeros((N, rows * cols), np.bool_)  # [N, A]
    child = np.empty(rows, np.int8)
    for b in range(N):
        for r in range(rows):
            for c in range(1 if r == 0 else 0, profiles[b, r]):
                for k in range(rows):
                    child[k] = min(profiles[b, k], c) if k >= r else profiles[b, k]
                if table[_rank_one(child, binom)] == 0:
                    win[b, r * cols + c] = True
    return win


# ------------------------------------------------------------------- the table


class ChompTable:
    """The Grundy number of every position of ``rows x cols`` Chomp.

    Built on first use of a board size and saved to ``cache_dir`` (default
    :func:`default_cache_dir`); later instances load it. ``use_disk=False`` builds
    in memory only (benchmarks, tests). Profiles are checked like the engine's
    ``from_profiles``; a bad one raises ``ValueError`` naming its index and problem.
    """

    def __init__(self, rows: int, cols: int, *, cache_dir: str | os.PathLike | None = None,
                 use_disk: bool = True):
        for pname, v in (("rows", rows), ("cols", cols)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= MAX_SIDE:
                raise ValueError(f"chomp table: {pname} must be an integer in 1..{MAX_SIDE}, got {v!r}")
        self.rows, self.cols = int(rows), int(cols)
        self.num_actions = self.rows * self.cols
        self.size = comb(self.rows + self.cols, self.rows)  # positions, the empty profile included
        self._binom = binomials(self.rows, self.cols)
        self.path = Path(cache_dir or default_cache_dir()) / f"grundy_{self.rows}x{self.cols}.npy"
        self.table = self._load() if use_disk else None  # uint8[size]
        if self.table is None:
            self.table = self.build()
            if use_disk:
                self._save()

    def build(self) -> np.ndarray:
        """uint8[size]: a fresh table, computed in rank order (no disk access)."""
        table, max_g = _build_kernel(self.rows, self.cols, self._binom)
        # Bounded by the number of moves (<= 255 on allowed boards), so this is a bug check.
        assert max_g < 256, f"chomp {self.rows} x {self.cols}: Grundy number {max_g} overflows uint8"
        return table

    def _load(self) -> np.ndarray | None:
        if not self.path.exists():
            return None
        try:
            table = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError, EOFError):  # truncated or not an .npy file: rebuild
            return None
        if table.dtype != np.uint8 or table.shape != (self.size,):
            return None  # a stale or foreign file: rebuild and overwrite it
        return table

    def _save(self) -> None:
        # Write then rename, so a concurrent reader never sees half a file.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".npy.tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, self.table)
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise

    # ---- ranking ----------------------------------------------------------------

    def rank(self, profiles) -> np.ndarray:
        """int64[N]: the ranks of checked profiles ``[N, rows]``."""
        return _rank_kernel(self.check_profiles(profiles), self._binom)

    def unrank(self, ranks) -> np.ndarray:
        """int8[N, rows]: the profiles of ranks ``0 .. size - 1`` (rank 0 is all zeros)."""
        ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
        if ranks.size and (ranks.min() < 0 or ranks.max() >= self.size):
            raise ValueError(f"chomp {self.rows} x {self.cols}: ranks must lie in 0..{self.size - 1}")
        return _unrank_kernel(ranks, self.rows, self.cols, self._binom)

    def check_profiles(self, profiles) -> np.ndarray:
        """int8[N, rows]: ``profiles`` as an array, each checked (see the class doc)."""
        where = f"chomp ({self.rows} x {self.cols})"
        p = np.asarray(profiles)
        if p.ndim != 2 or p.shape[1] != self.rows:
            raise ValueError(f"{where}: profiles must have shape [N, {self.rows}], got {p.shape}")
        if p.size and not np.issubdtype(p.dtype, np.integer):
            raise ValueError(f"{where}: row lengths must be integers, got dtype {p.dtype}")
        p = p.astype(np.int64)
        for bad, reason in self._problems(p):
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{where}: profile {i} {p[i].tolist()}: {reason}")
        return np.ascontiguousarray(p, dtype=np.int8)

    def profile_problem(self, profile) -> str | None:
        """What is wrong with one profile (its row lengths, row 0 first), without the
        board or an index, for a caller that names the item itself; None if it is a
        position of this board (which may be over)."""
        try:
            p = np.asarray(profile)
        except ValueError as e:  # ragged nesting
            return f"not a list of {self.rows} row lengths ({e})"
        if p.ndim != 1 or p.shape[0] != self.rows:
            got = f"{p.shape[0]}" if p.ndim == 1 else f"shape {p.shape}"
            return f"expected {self.rows} row lengths, got {got}"
        if p.size and not np.issubdtype(p.dtype, np.integer):
            return f"row lengths must be integers, got dtype {p.dtype}"
        for bad, reason in self._problems(p[None].astype(np.int64)):
            if bad[0]:
                return reason
        return None

    def _problems(self, p: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """(bool[N], reason) per rule a profile can break, for int64 ``p[N, rows]``."""
        return [
            (((p < 0) | (p > self.cols)).any(axis=1), f"row lengths must lie in 0..{self.cols}"),
            (p[:, 0] < 1, "row 0 must keep the poisoned square (length >= 1)"),
            ((np.diff(p, axis=1) > 0).any(axis=1), "row lengths must be non-increasing"),
        ]

    # ---- answers ----------------------------------------------------------------

    def grundy_batch(self, profiles) -> np.ndarray:
        """uint8[N]: the Grundy number of each profile ``[N, rows]`` (0: the mover loses)."""
        return self.table[self.rank(profiles)]

    def winning_actions_batch(self, profiles) -> np.ndarray:
        """bool[N, rows * cols]: actions ``row * cols + col`` that move to Grundy 0."""
        p = self.check_profiles(profiles)
        return _winning_kernel(p, self.table, self.cols, self._binom)

    def grundy(self, profile: Sequence[int]) -> int:
        return int(self.grundy_batch([profile])[0])

    def winning_actions(self, profile: Sequence[int]) -> list[int]:
        """Ascending actions ``row * cols + col`` that move to Grundy 0 (empty if none)."""
        return np.flatnonzero(self.winning_actions_batch([profile])[0]).tolist()

    def winning_moves(self, profile: Sequence[int]) -> list[tuple[int, int]]:
        """The squares ``(row, col)`` of :meth:`winning_actions`, in the same order."""
        return [divmod(a, self.cols) for a in self.winning_actions(profile)]
