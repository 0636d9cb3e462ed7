"""The oracle service's Connect Four answers on other boards than 7x6
(``OracleWorker.connect4_board_best_moves``): AZAL's labels at the smaller boards. The
books and the store's keys are 7x6's, so each board has a solver of its own in the
replica, searching every position to the end (milliseconds on a small board), and its
answers are kept in the replica, not in the store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oracle_service.answers import Answer
from oracle_service.connect4_engines import make_engine
from oracle_service.counters import OracleCounters


class Connect4BoardAnswers:
    """Best columns of Connect Four positions at any board, a solver per board."""

    def __init__(self, stats: OracleCounters, timed: Callable, tt_log2_size: int, kept: int):
        """``kept``: the answers kept in memory before starting afresh."""
        self.stats, self.timed, self.kept = stats, timed, kept
        # A small board's table: the evaluator's in-process oracle sizes it the same way.
        self.tt_log2_size = min(int(tt_log2_size), 22)
        self._solvers: dict[tuple[int, int], Any] = {}
        self._best: dict[tuple[int, int, str], list[int]] = {}

    def best_moves(self, width: int, height: int, positions: Sequence[str]) -> list[Answer]:
        """Per position (its move string, columns from 1): the ascending columns
        0..width-1 of maximal score (quickest win, else a draw, else the slowest loss), or
        an error naming the board for a position it does not have."""
        board = (int(width), int(height))
        self.stats.queries += len(positions)
        try:
            if board not in self._solvers:
                self._solvers[board] = make_engine("ours", use_book=False, width=board[0], height=board[1],
                                                   tt_log2_size=self.tt_log2_size)
        except ValueError as e:  # a board Connect Four does not have
            self.stats.errors += len(positions)
            return [Answer(error=str(e)) for _ in positions]
        out = []
        for position in positions:
            key = (*board, str(position))
            if key not in self._best:
                try:
                    columns, _ = self.timed(self._solvers[board].best_columns, str(position))
                except (ValueError, TypeError) as e:  # not a position of this board, or one that is over
                    self.stats.errors += 1
                    out.append(Answer(error=f"connect4 {board[0]}x{board[1]}: {e}"))
                    continue
                if len(self._best) > self.kept:
                    self._best.clear()
                self._best[key] = columns
                self.stats.solved += 1
            out.append(Answer(list(self._best[key])))
        return out
