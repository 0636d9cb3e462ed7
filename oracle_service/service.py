"""The oracle service: a pool of Ray actors answering batches of exact-oracle queries.

:class:`OracleWorker` is the plain, testable logic: it owns a Connect Four solver, the
shared solved-position store (``oracle_service/store.py``) and, built on first use, one
Chomp Grundy table per board size and one F-Game oracle per tree. Every method takes a
batch and returns one :class:`Answer` per item: a bad item (illegal sequence, full
column, finished game, malformed profile, wrong board size) gets its error string, the
others are answered, and the worker keeps running.

:class:`OracleReplica` is the worker as a Ray actor that Ray restarts when it dies and
whose in-flight calls Ray retries on the restarted actor. :class:`OracleClient` owns N
replicas, splits each batch over them and, should a call still fail because its
replica died for good, sends that chunk to another replica: answers do not depend on
crashes, and the store keeps what was solved before one.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import ray

from oracle_service.store import Solved, Store, connect4_keys, open_store


class Answer(NamedTuple):
    """One item's answer: ``value`` if ``error`` is None, else ``error`` says what was wrong."""

    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


Moves = str | Sequence[int]  # "4453" (1-based column digits) or actions 0..6


class OracleWorker:
    """Batched exact answers for Connect Four, Chomp and F-Games (see the module doc).

    ``store``: a path or ``redis://`` URL for :func:`open_store` (None: its default).
    Connect Four strong scores and analyses are read from the store before solving and
    written back after; weak (win/draw/loss) queries use a stored score when there is
    one, and otherwise solve in weak mode without storing (the store holds exact scores).
    """

    def __init__(self, store: str | None = None, *, tt_log2_size: int = 23,
                 chomp_cache_dir: str | None = None):
        from oracle_service.connect4_solver import Connect4Solver  # compiles kernels

        self.solver = Connect4Solver(tt_log2_size=tt_log2_size)
        self.store: Store = open_store(store)
        self.chomp_cache_dir = chomp_cache_dir
        self._chomp: dict[tuple[int, int], Any] = {}
        self._fgame: dict[tuple, Any] = {}
        self._stats = {"queries": 0, "unique_positions": 0, "store_hits": 0, "solved": 0,
                       "solve_seconds": 0.0, "errors": 0}

    # ---- Connect Four -----------------------------------------------------------

    def _parse(self, positions: Sequence[Moves]):
        """Per item: (cur, mask, plies) or the error; counts queries and errors."""
        from oracle_service.connect4_solver import parse_moves

        parsed: list[tuple[int, int, int] | None] = []
        errors: list[str | None] = []
        for p in positions:
            try:
                parsed.append(parse_moves(p))
                errors.append(None)
            except (ValueError, TypeError) as e:
                parsed.append(None)
                errors.append(str(e))
        self._stats["queries"] += len(positions)
        self._stats["errors"] += sum(e is not None for e in errors)
        return parsed, errors

    def _lookup(self, parsed, need_analysis: bool):
        """Unique positions of the good items and what the store knows of them.
        Returns (key per item or None, mirrored per item, {key: (cur, mask, plies)},
        {key: Solved in canonical orientation, for the keys the store answered})."""
        good = [i for i, p in enumerate(parsed) if p is not None]
        keys: list[int | None] = [None] * len(parsed)
        mirrored = [False] * len(parsed)
        if good:
            cur = np.array([parsed[i][0] for i in good], dtype=np.uint64)  # [G]
            mask = np.array([parsed[i][1] for i in good], dtype=np.uint64)  # [G]
            k, m = connect4_keys(cur, mask)
            for j, i in enumerate(good):
                keys[i], mirrored[i] = int(k[j]), bool(m[j])
        unique: dict[int, tuple[int, int, int]] = {}
        for i in good:
            unique.setdefault(keys[i], parsed[i])
        self._stats["unique_positions"] += len(unique)
        found = {}
        if unique:
            for k, v in zip(unique, self.store.get_many(list(unique))):
                if v is not None and (v.analysis is not None or not need_analysis):
                    found[k] = v
        self._stats["store_hits"] += len(found)
        return keys, mirrored, unique, found

    def _timed(self, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        self._stats["solve_seconds"] += time.perf_counter() - t0
        return out

    def connect4_solve(self, positions: Sequence[Moves], weak: bool = False) -> list[Answer]:
        """Per position: its score (DESIGN.md), or with ``weak`` 1 / 0 / -1."""
        parsed, errors = self._parse(positions)
        keys, _, unique, found = self._lookup(parsed, need_analysis=False)
        scores = {k: v.score for k, v in found.items()}
        missing = [k for k in unique if k not in found]
        if missing:
            cur, mask, plies = (np.array([unique[k][j] for k in missing], dtype=dt)
                                for j, dt in ((0, np.uint64), (1, np.uint64), (2, np.int64)))
            solved = self._timed(self.solver.solve_states, cur, mask, plies, weak)
            self._stats["solved"] += len(missing)
            scores.update(zip(missing, (int(s) for s in solved)))
            if not weak:
                self.store.put_many((k, Solved(scores[k])) for k in missing)
        out = []
        for i, k in enumerate(keys):
            if errors[i] is not None:
                out.append(Answer(error=errors[i]))
            else:
                s = scores[k]
                # A stored exact score answers a weak query by its sign.
                out.append(Answer(int(np.sign(s)) if weak else s))
        return out

    def connect4_analyze(self, positions: Sequence[Moves]) -> list[Answer]:
        """Per position: the score of each column 0..6 (None for a full column)."""
        parsed, errors = self._parse(positions)
        keys, mirrored, _unique, found = self._lookup(parsed, need_analysis=True)
        canonical = dict(found)
        first = {}  # key -> an item that asked for it, to solve in that item's orientation
        for i, k in enumerate(keys):
            if k is not None and k not in found:
                first.setdefault(k, i)
        for k, i in first.items():
            analysis = tuple(self._timed(self.solver.analyze, positions[i]))
            score = max(s for s in analysis if s is not None)
            canonical[k] = Solved(score, analysis).oriented(mirrored[i])
        self._stats["solved"] += len(first)
        self.store.put_many((k, canonical[k]) for k in first)
        return [Answer(error=errors[i]) if errors[i] is not None
                else Answer(list(canonical[k].oriented(mirrored[i]).analysis))
                for i, k in enumerate(keys)]

    def connect4_best_moves(self, positions: Sequence[Moves]) -> list[Answer]:
        """Per position: the ascending columns 0..6 of maximal score (quickest win,
        else a draw, else the slowest loss)."""
        out = []
        for a in self.connect4_analyze(positions):
            if not a.ok:
                out.append(a)
                continue
            best = max(s for s in a.value if s is not None)
            out.append(Answer([c for c, s in enumerate(a.value) if s == best]))
        return out

    # ---- Chomp ------------------------------------------------------------------

    def _chomp_table(self, rows: int, cols: int):
        from oracle_service.chomp_grundy import ChompTable

        if (rows, cols) not in self._chomp:
            self._chomp[(rows, cols)] = ChompTable(rows, cols, cache_dir=self.chomp_cache_dir)
        return self._chomp[(rows, cols)]

    def _chomp_items(self, rows, cols, profiles, answer_batch) -> list[Answer]:
        self._stats["queries"] += len(profiles)
        try:
            table = self._chomp_table(rows, cols)
        except ValueError as e:  # a board size the engine does not allow
            self._stats["errors"] += len(profiles)
            return [Answer(error=str(e)) for _ in profiles]
        out: list[Answer | None] = [None] * len(profiles)
        good, checked = [], []
        for i, p in enumerate(profiles):
            try:
                q = table.check_profiles([list(p)])[0]  # [rows]
                if q[0] == 1 and (rows == 1 or q[1] == 0):
                    raise ValueError(f"chomp ({rows} x {cols}): profile {list(p)}: position already "
                                     "over, only the poisoned square is left")
            except (ValueError, TypeError) as e:
                out[i] = Answer(error=str(e))
                self._stats["errors"] += 1
                continue
            good.append(i)
            checked.append(q)
        if good:
            for i, v in zip(good, answer_batch(table, np.stack(checked))):
                out[i] = Answer(v)
        return out

    def chomp_grundy(self, rows: int, cols: int, profiles: Sequence[Sequence[int]]) -> list[Answer]:
        """Per profile (row lengths, row 0 first): its Grundy number (0: the mover loses)."""
        return self._chomp_items(rows, cols, profiles,
                                 lambda t, p: [int(g) for g in t.grundy_batch(p)])

    def chomp_winning_moves(self, rows: int, cols: int,
                            profiles: Sequence[Sequence[int]]) -> list[Answer]:
        """Per profile: the ascending actions ``row * cols + col`` that leave Grundy 0."""
        return self._chomp_items(rows, cols, profiles,
                                 lambda t, p: [np.flatnonzero(w).tolist()
                                               for w in t.winning_actions_batch(p)])

    # ---- F-Games ----------------------------------------------------------------

    def fgame_value(self, params: dict, paths: Sequence[Sequence[int]]) -> list[Answer]:
        """Per action path from the root: the node's exact value for the player to move
        (-1, 0, 1; leaves too). ``params``: ``depth``, ``branching``, ``beta``, ``seed``."""
        from oracle_service.fgame_oracle import FGameOracle

        self._stats["queries"] += len(paths)
        ident = tuple(sorted(params.items()))
        try:
            if ident not in self._fgame:
                self._fgame[ident] = FGameOracle(**params)
        except (ValueError, TypeError) as e:
            self._stats["errors"] += len(paths)
            return [Answer(error=f"fgame {params}: {e}") for _ in paths]
        oracle = self._fgame[ident]
        out = []
        for p in paths:  # one by one, so that a bad path fails alone
            try:
                out.append(Answer(oracle.value(p)))
            except (ValueError, TypeError) as e:
                self._stats["errors"] += 1
                out.append(Answer(error=str(e)))
        return out

    # ---- statistics -------------------------------------------------------------

    def stats(self) -> dict:
        """Counters since start: queries (items asked), unique_positions (distinct
        Connect Four positions per batch, summed), store_hits, solved, solve_seconds,
        errors; and the store's own counters under ``store``."""
        return {**self._stats, "store": self.store.stats()}

    def ping(self) -> bool:
        return True


OracleReplica = ray.remote(max_restarts=-1, max_task_retries=-1)(OracleWorker)


class OracleClient:
    """N :class:`OracleReplica` actors behind one batched interface.

    A batch is cut into one chunk per replica; each chunk goes to its replica, and if
    that call fails because the replica died (``RayActorError``; Ray already retries
    calls on a restarted replica), it is sent to the next replica, up to
    ``max_attempts`` times. ``replica_options`` are Ray actor options (e.g.
    ``{"num_cpus": 1}``); ``worker_kwargs`` go to :class:`OracleWorker`.
    """

    def __init__(self, num_replicas: int = 2, store: str | None = None, *,
                 replica_options: dict | None = None, max_attempts: int = 3, **worker_kwargs):
        if num_replicas < 1:
            raise ValueError(f"oracle client: num_replicas must be >= 1, got {num_replicas}")
        options = {"num_cpus": 1, **(replica_options or {})}
        self.max_attempts = max_attempts
        self.replicas = [OracleReplica.options(**options).remote(store, **worker_kwargs)
                         for _ in range(num_replicas)]
        ray.get([r.ping.remote() for r in self.replicas])  # fail here, not on the first query

    def _call(self, method: str, items: Sequence, *args, **kwargs) -> list[Answer]:
        """``method(*args, chunk, **kwargs)`` on the replicas, one chunk of ``items`` each."""
        items = list(items)
        n = len(self.replicas)
        bounds = np.linspace(0, len(items), min(n, max(len(items), 1)) + 1).astype(int)
        chunks = [(j, items[a:b]) for j, (a, b) in enumerate(itertools.pairwise(bounds)) if b > a]
        pending = {j: getattr(self.replicas[j % n], method).remote(*args, chunk, **kwargs)
                   for j, chunk in chunks}
        results: dict[int, list[Answer]] = {}
        for j, chunk in chunks:
            for attempt in range(1, self.max_attempts + 1):
                try:
                    results[j] = [Answer(*a) for a in ray.get(pending[j])]
                    break
                except ray.exceptions.RayActorError:
                    if attempt == self.max_attempts:
                        raise
                    replica = self.replicas[(j + attempt) % n]
                    pending[j] = getattr(replica, method).remote(*args, chunk, **kwargs)
        return [a for j, _ in chunks for a in results[j]]

    def connect4_solve(self, positions: Sequence[Moves], weak: bool = False) -> list[Answer]:
        return self._call("connect4_solve", positions, weak=weak)

    def connect4_analyze(self, positions: Sequence[Moves]) -> list[Answer]:
        return self._call("connect4_analyze", positions)

    def connect4_best_moves(self, positions: Sequence[Moves]) -> list[Answer]:
        return self._call("connect4_best_moves", positions)

    def chomp_grundy(self, rows: int, cols: int, profiles) -> list[Answer]:
        return self._call("chomp_grundy", profiles, rows, cols)

    def chomp_winning_moves(self, rows: int, cols: int, profiles) -> list[Answer]:
        return self._call("chomp_winning_moves", profiles, rows, cols)

    def fgame_value(self, params: dict, paths) -> list[Answer]:
        return self._call("fgame_value", paths, params)

    def stats(self) -> list[dict | None]:
        """Each replica's :meth:`OracleWorker.stats` (a restarted one counts from zero;
        None for one that is gone for good)."""
        out = []
        for ref in [r.stats.remote() for r in self.replicas]:
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayActorError:
                out.append(None)
        return out

    def close(self) -> None:
        for r in self.replicas:
            ray.kill(r, no_restart=True)
        self.replicas = []
