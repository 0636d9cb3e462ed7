"""AZAL's oracle labels (AZAL paper, Section 4 and Appendix B.3).

A labelled state gets the smoothed target ``q(a|s) ∝ 1[a optimal] + 1e-3`` over its
legal moves; an unlabelled one gets all zeros, which the learner reads as "no label"
(``aux_policy`` rows that sum to 0 are left out of the auxiliary loss).

- Connect Four: the optimal moves are the columns of maximal exact score in the
  solver's analysis (quickest win, else draw, else slowest loss).
- Chomp: the moves to a Grundy-0 position; a state of Grundy number 0 has none and
  stays unlabelled.

Queries go to the oracle service (``oracle_service.service.OracleClient``) in one batch
per call, after removing duplicates; :meth:`OracleLabeler.submit` sends the batch without
waiting, so that self-play searches on while the replicas solve (``actors/alphazero.py``);
the replicas answer from the shared store what it holds and solve the rest. Connect
Four positions with fewer than ``min_ply`` stones are not sent to the solver: without
its books a position near the start took it seconds to minutes. They are looked up in
the solved-position store instead (``store``: its path or URL), and labelled when a book
(``python -m oracle_service book``) or an earlier analysis has put them there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import games
from games import Game, GameTable
from games.connect4 import HEIGHT, WIDTH
from oracle_service.store import connect4_keys, open_store

SMOOTHING = 1e-3  # the AZAL paper's epsilon in q(a|s)


class LabelStats(NamedTuple):
    """A labeller's counts so far (or, as a difference, over one collection call)."""

    oracle_queries: int  # items asked of the oracle, duplicates included
    oracle_unique: int  # distinct items asked
    oracle_errors: int  # items the oracle refused
    store_labels: int  # early Connect Four positions labelled from the store alone

    def since(self, before: "LabelStats") -> "LabelStats":
        return LabelStats(*(now - then for now, then in zip(self, before)))


class Connect4Labels:
    """Connect Four's label source: a position is its move string (columns from 1), its
    optimal moves the columns of maximal exact score. On 7x6 one with fewer than
    ``min_ply`` stones is not sent to the solver (key None) but looked up in the store;
    another board has no books and no store (their keys are 7x6's), and every position is
    sent: the service searches a small board's positions to the end in milliseconds."""

    def __init__(self, game: Game):
        self.game = game
        self.board = (game.width, game.height)

    def keys(self, states, histories: list[list[int]], min_ply: int) -> list[str | None]:
        min_ply = min_ply if self.board == (WIDTH, HEIGHT) else 0
        return ["".join(str(a + 1) for a in h) if len(h) >= min_ply else None for h in histories]

    def request(self, keys: list[str]) -> tuple[str, tuple, list]:
        """The oracle method, its leading arguments and its items for ``keys`` (the
        service answers 7x6 from its books and store, another board by its own solver)."""
        return "connect4_board_best_moves", self.board, keys

    def stored_optimal(self, store, states) -> np.ndarray:
        """bool[N, 7]: the best columns of the positions whose analysis is stored; rows
        of positions not in the store (or stored without an analysis) stay False."""
        keys, mirrored = connect4_keys(states.current, states.mask)
        out = np.zeros((len(keys), self.game.num_actions), bool)
        for i, record in enumerate(store.get_many([int(k) for k in keys])):
            if record is not None and record.analysis is not None:
                analysis = record.oriented(bool(mirrored[i])).analysis
                best = max(v for v in analysis if v is not None)
                out[i] = [v == best for v in analysis]
        return out


class ChompLabels:
    """Chomp's label source: a position is its profile, its optimal moves those to a
    Grundy-0 position (none where the Grundy number is 0)."""

    def __init__(self, game: Game):
        self.game = game

    def keys(self, states, histories: list[list[int]], min_ply: int) -> list[str]:
        return [",".join(map(str, row)) for row in np.asarray(states.profile).tolist()]

    def request(self, keys: list[str]) -> tuple[str, tuple, list]:
        rows, cols = self.game.params["rows"], self.game.params["cols"]
        return "chomp_winning_moves", (rows, cols), [[int(x) for x in k.split(",")] for k in keys]


# The games whose optimal moves the oracle service labels for AZAL: (game) -> label source.
LABELLERS: GameTable[Callable[[Game], object]] = GameTable("AZAL label source", {"connect4": Connect4Labels, "chomp": ChompLabels})


class OracleLabeler:
    """Smoothed oracle targets for batches of states, fetched from an oracle client
    through the game's label source (its entry in LABELLERS)."""

    def __init__(self, game: Game, client, *, min_ply: int = 0, store: str | None = None):
        source = LABELLERS.get(game)
        if source is None:
            raise ValueError(f"AZAL labels exist for {', '.join(LABELLERS.names())}, not for {game.name!r} "
                             f"(actors.labels.LABELLERS has no label source for it)")
        self.source = source(game)
        self.game, self.client, self.min_ply = game, client, int(min_ply)
        self._store_location, self._store = store, None
        self.queries = self.unique = self.errors = self.store_labels = 0  # as LabelStats names them

    def label(self, states, histories: list[list[int]]) -> np.ndarray:
        """float32[N, A] targets for the N ``states`` (reached by the action lists
        ``histories`` from the start); zero rows for unlabelled states."""
        return self.submit(states, histories).result()

    def submit(self, states, histories: list[list[int]]) -> "PendingLabels":
        """:meth:`label`'s targets, asked of the oracle without waiting for them: early
        positions are looked up in the store now, the others sent to the oracle in one
        batch of distinct items; the caller takes the targets when they are ready."""
        legal = self.game.legal(states)  # [N, A]
        optimal = np.zeros_like(legal)
        keys = self.source.keys(states, histories, self.min_ply)
        wanted = sorted({k for k in keys if k is not None})
        self.queries += sum(k is not None for k in keys)
        self.unique += len(wanted)
        early = [i for i, k in enumerate(keys) if k is None]
        if early and self.min_ply > 0:
            optimal[early] = self._stored_optimal(games.take(states, early))
        answers = None
        if wanted:
            method, args, items = self.source.request(wanted)
            answers = self.client.submit(method, items, *args)
        return PendingLabels(self, legal, optimal, keys, wanted, answers)

    def _stored_optimal(self, states) -> np.ndarray:
        """bool[N, A]: the optimal moves of early positions (key None) from the store."""
        if self._store is None:
            self._store = open_store(self._store_location)
        out = self.source.stored_optimal(self._store, states)
        self.store_labels += int(out.any(axis=1).sum())
        return out

    def stats(self) -> LabelStats:
        return LabelStats(self.queries, self.unique, self.errors, self.store_labels)


class PendingLabels:
    """One batch's targets while the oracle works on them (:meth:`OracleLabeler.submit`)."""

    def __init__(self, labeler: OracleLabeler, legal: np.ndarray, optimal: np.ndarray, keys: list,
                 wanted: list[str], answers):
        self._labeler, self._legal, self._optimal = labeler, legal, optimal  # [N, A] each
        self._keys, self._wanted, self._answers = keys, wanted, answers
        self._targets: np.ndarray | None = None

    def ready(self) -> bool:
        """Whether :meth:`result` would return without waiting for the oracle."""
        return self._answers is None or self._answers.ready()

    def result(self) -> np.ndarray:
        """float32[N, A]: the smoothed targets, zero rows for unlabelled states (waits
        for the oracle's answers if they have not come)."""
        if self._targets is None:
            optimal = self._optimal
            if self._answers is not None:
                answers = self._answers.result()
                self._labeler.errors += sum(not a.ok for a in answers)
                moves_of = {k: a.value for k, a in zip(self._wanted, answers) if a.ok}
                for i, k in enumerate(self._keys):
                    if moves_of.get(k):
                        optimal[i, moves_of[k]] = True
            labelled = optimal.any(axis=1)
            q = np.where(self._legal, optimal + SMOOTHING, 0.0)
            q[~labelled] = 0.0
            q /= np.maximum(q.sum(axis=1, keepdims=True), 1e-12)
            self._targets = q.astype(np.float32)
        return self._targets
