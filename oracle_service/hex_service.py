"""The oracle service's Hex answers (``OracleWorker.hex_solve``): batches of Hex
positions solved by the weak solver (``oracle_service.hex_solver``), one per board
size, read from the shared store first and written back after, under a node and time
limit per query that answers "unknown" (``Answer(None)``) instead of holding the replica.
Kept apart from the worker's Connect Four, Chomp and F-Game answers: its own parsing of
cells and boards, canonical keys under the 180-degree rotation and stored children."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

import games
from oracle_service.answers import Answer
from oracle_service.counters import OracleCounters
from oracle_service.store import HexSolved, Store, hex_keys


def hex_move_order(board: np.ndarray) -> list[int]:
    """A move order that reaches the Hex ``board`` (int[size, size], 0/1/2): Black's and
    White's cells alternately, Black first, each colour's ascending. Any order reaches
    the same position, and none passes through a won one when the board itself is not
    won (a chain of fewer stones would be a chain of the whole board)."""
    flat = np.asarray(board).reshape(-1)
    black, white = np.flatnonzero(flat == 1).tolist(), np.flatnonzero(flat == 2).tolist()
    return [c for pair in itertools.zip_longest(black, white) for c in pair if c is not None]


def hex_preference_order(size: int) -> np.ndarray:
    """int64[size * size]: Hex cells by hex distance from the board's centre, then by
    index: the order in which the weak oracle breaks ties between moves of one outcome.
    (Cells (r, c) and (r', c') are ``max(|dr|, |dc|, |dr + dc|)`` apart on the rhombus.)"""
    r, c = np.divmod(np.arange(size * size), size)
    dr, dc = 2 * r - (size - 1), 2 * c - (size - 1)  # doubled, so that even boards stay integral
    distance = np.maximum(np.maximum(np.abs(dr), np.abs(dc)), np.abs(dr + dc))
    return np.lexsort((np.arange(size * size), distance)).astype(np.int64)


class HexValue(NamedTuple):
    """A value-only Hex answer for the side to move: ``value`` +1 or -1 and ``move``,
    one winning cell (-1 where the value is -1). Where several cells win, which one
    depends on what the solver proved before; any of them wins."""

    value: int
    move: int = -1

    @staticmethod
    def of(record: HexSolved, size: int) -> HexValue:
        """The value of a full record and its first winning cell in
        :func:`hex_preference_order` (the one cell of a value-only solve's record)."""
        if record.value < 0:
            return HexValue(-1)
        order = hex_preference_order(size)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return HexValue(1, int(min(record.winning, key=lambda c: rank[c])))


class HexAnswers:
    """The Hex part of an oracle worker: ``store`` (shared with the worker), the worker's
    ``stats`` (an ``OracleCounters``, counted here too), ``timed`` (the worker's timing of a solve) and the default
    limits per query."""

    def __init__(self, store: Store, stats: OracleCounters, timed: Callable, *, node_limit: int | None = None,
                 time_limit: float | None = 60.0):
        self.store, self._stats, self._timed = store, stats, timed
        self._solvers: dict[int, object] = {}
        self.limits = {"node_limit": node_limit, "time_limit": time_limit}

    def _solver(self, size: int):
        # Imported here, as the Connect Four engine is: the solver compiles when imported.
        from oracle_service.hex_solver import HexSolver

        if size not in self._solvers:
            self._solvers[size] = HexSolver(size)
        return self._solvers[size]

    @staticmethod
    def _board(size: int, item) -> np.ndarray:
        """int8[size, size] of one Hex item: the played cells in move order (Black first),
        or a board (0 empty, 1 Black, 2 White). ValueError naming what is wrong with it;
        the solver refuses what is left (a position already won)."""
        n = size * size
        arr = np.asarray(item)
        if arr.ndim == 2:
            if arr.shape != (size, size) or not np.isin(arr, (0, 1, 2)).all():
                raise ValueError(f"a board must be {size}x{size} cells of 0, 1 or 2, got shape {arr.shape}")
            black, white = int((arr == 1).sum()), int((arr == 2).sum())
            if not 0 <= black - white <= 1:
                raise ValueError(f"the board has {black} Black and {white} White stones; Black (first player) "
                                 f"must have as many as White or one more")
            return arr.astype(np.int8)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(f"a position is a list of cells 0..{n - 1} in move order, or a board; got {item!r}")
        board = np.zeros(n, np.int8)
        for ply, cell in enumerate(arr.tolist()):
            if not 0 <= cell < n:
                raise ValueError(f"cell {cell} at ply {ply} is off the {size}x{size} board (cells 0..{n - 1})")
            if board[cell]:
                raise ValueError(f"cell {cell} at ply {ply} is played twice")
            board[cell] = 1 + ply % 2
        return board.reshape(size, size)

    def solve(self, size: int, positions: Sequence, *, node_limit: int | None = None,
              time_limit: float | None = None, value_only: bool = False) -> list[Answer]:
        """Per Hex position (the played cells in move order, or an int8[size, size] board):
        ``Answer(HexSolved(value, winning))`` for the side to move (value +1 or -1, all its
        winning cells ascending), ``Answer(None)`` when the solver reached its limit
        (unknown), or the item's error. Limits per query: ``node_limit``, ``time_limit``
        (seconds), default the worker's (``hex_node_limit``, ``hex_time_limit``).

        ``value_only``: ``Answer(HexValue(value, move))`` instead, the value and one winning
        cell (-1 where the mover loses), from a single proof (``HexSolver.solve_value``):
        what a perfect opponent and a value label need, often far cheaper than proving
        every move of an early position. A full record in the store answers it too (its
        first winning cell in :func:`hex_preference_order`).

        The store is read first and written after (only exact, complete answers: a
        value-only win is not one); a winning move's child is lost for its mover, which
        makes a full record (-1, no winning cell), so those are stored too."""
        self._stats.queries += len(positions)
        try:
            solver = self._solver(int(size))
        except (ValueError, TypeError) as e:  # a size the solver does not take
            self._stats.errors += len(positions)
            return [Answer(error=f"hex: {e}") for _ in positions]
        out: list[Answer | None] = [None] * len(positions)
        boards = {}
        for i, p in enumerate(positions):
            try:
                boards[i] = self._board(size, p)
            except (ValueError, TypeError) as e:
                out[i] = Answer(error=f"hex {size}x{size}: item {i} of the batch: {e}")
        if boards:
            order = list(boards)
            keys, rotated = hex_keys(np.stack([boards[i] for i in order]))
            key_of = dict(zip(order, keys))
            rot_of = dict(zip(order, rotated.tolist()))
            unique = list(dict.fromkeys(keys))
            canonical = {k: v for k, v in zip(unique, self.store.hex_get_many(size, unique)) if v is not None}
            self._stats.store_hits += len(canonical)
            limits = {"node_limit": self.limits["node_limit"] if node_limit is None else node_limit,
                      "time_limit": self.limits["time_limit"] if time_limit is None else time_limit}
            fresh, failed = [], {}
            for i in order:  # each missing position once, in the orientation it was asked in
                k = key_of[i]
                if k in canonical or k in failed:
                    continue
                board = boards[i]
                to_move = 1 if (board == 1).sum() == (board == 2).sum() else 2
                try:
                    result = self._timed(solver.solve_value if value_only else solver.solve,
                                         hex_move_order(board), **limits)
                except ValueError as e:  # HexPositionError: a position already won
                    failed[k] = f"hex {size}x{size}: item {i} of the batch: {e}"
                    continue
                if result.value is None:
                    failed[k] = None
                    self._stats.hex_unknown += 1
                    continue
                self._stats.solved += 1
                canonical[k] = HexSolved(int(result.value), tuple(int(c) for c in result.winning)).oriented(
                    rot_of[i], size)
                fresh.append((k, canonical[k], board, to_move, result))
            # A value-only win names one winning cell of several: not a record to keep.
            complete = [(k, v) for k, v, *_ in fresh if not (value_only and v.value > 0)]
            self.store.hex_put_many(size, complete + self._lost_children(size, fresh))
            for i in order:
                k = key_of[i]
                if k in canonical:
                    record = canonical[k].oriented(rot_of[i], size)
                    out[i] = Answer(HexValue.of(record, size) if value_only else record)
                elif failed[k] is None:
                    out[i] = Answer(None)
                else:
                    out[i] = Answer(error=failed[k])
        self._stats.errors += sum(1 for a in out if a.error is not None)
        return out

    def _lost_children(self, size: int, fresh: list) -> list[tuple[bytes, HexSolved]]:
        """Store records of the children after each winning move of freshly solved
        positions that do not end the game: the mover there loses, (-1, no cell)."""
        kids = []
        for _k, _v, board, to_move, result in fresh:
            for cell in result.winning:
                child = board.copy().reshape(-1)
                child[cell] = to_move
                kids.append(child.reshape(size, size))
        if not kids or size < 2:
            return []
        kids = np.stack(kids)
        live = games.make("hex", size=size).winners(kids) == 0
        keys, _ = hex_keys(kids[live])
        self._stats.children_stored += len(keys)
        return [(k, HexSolved(-1, ())) for k in keys]
