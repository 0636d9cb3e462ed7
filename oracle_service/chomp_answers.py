"""The oracle service's Chomp answers (``OracleWorker.chomp_grundy`` and
``chomp_winning_moves``): batches of positions (row profiles) answered from the Grundy
table of their board (``oracle_service.chomp_grundy``), one table per board, each item
checked first so that a bad profile is that item's error and not the batch's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from oracle_service.answers import Answer
from oracle_service.chomp_grundy import ChompTable
from oracle_service.counters import OracleCounters


def _chomp_error(table, rows: int, cols: int, i: int, profile) -> str | None:
    """What is wrong with item ``i``, ``profile``, on ``table`` (None: a live position)."""
    problem = table.profile_problem(profile)
    if problem is None and profile[0] == 1 and (rows == 1 or profile[1] == 0):
        problem = "position already over, only the poisoned square is left"
    if problem is None:
        return None
    try:
        shown = np.asarray(profile).tolist()
    except ValueError:  # ragged
        shown = repr(profile)
    return f"chomp ({rows} x {cols}): item {i} of the batch, profile {shown}: {problem}"


class ChompAnswers:
    """Chomp's Grundy numbers and winning moves, a table per board (``cache_dir``: where
    the tables are kept between runs)."""

    def __init__(self, stats: OracleCounters, cache_dir: str | None = None):
        self.stats, self.cache_dir = stats, cache_dir
        self._tables: dict[tuple[int, int], Any] = {}

    def _table(self, rows: int, cols: int):
        if (rows, cols) not in self._tables:
            self._tables[(rows, cols)] = ChompTable(rows, cols, cache_dir=self.cache_dir)
        return self._tables[(rows, cols)]

    def _items(self, rows, cols, profiles, answer_batch: Callable) -> list[Answer]:
        self.stats.queries += len(profiles)
        try:
            table = self._table(rows, cols)
        except ValueError as e:  # a board size the engine does not allow
            self.stats.errors += len(profiles)
            return [Answer(error=str(e)) for _ in profiles]
        out: list[Answer | None] = [None] * len(profiles)
        good = []
        for i, p in enumerate(profiles):
            error = _chomp_error(table, rows, cols, i, p)
            if error is not None:
                out[i] = Answer(error=error)
                self.stats.errors += 1
            else:
                good.append(i)
        if good:
            checked = table.check_profiles([list(profiles[i]) for i in good])  # [G, rows]
            for i, v in zip(good, answer_batch(table, checked)):
                out[i] = Answer(v)
        return out

    def grundy(self, rows: int, cols: int, profiles: Sequence[Sequence[int]]) -> list[Answer]:
        """Per profile (row lengths, row 0 first): its Grundy number (0: the mover loses)."""
        return self._items(rows, cols, profiles, lambda t, p: [int(g) for g in t.grundy_batch(p)])

    def winning_moves(self, rows: int, cols: int, profiles: Sequence[Sequence[int]]) -> list[Answer]:
        """Per profile: the ascending actions ``row * cols + col`` that leave Grundy 0."""
        return self._items(rows, cols, profiles,
                           lambda t, p: [np.flatnonzero(w).tolist() for w in t.winning_actions_batch(p)])
