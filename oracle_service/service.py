"""The oracle service: a pool of Ray actors answering batches of exact-oracle queries.

:class:`OracleWorker` is the plain, testable logic: it owns a Connect Four solver, the
shared solved-position store (``oracle_service/store.py``) and, built on first use, one
Chomp Grundy table per board size, one F-Game oracle per tree and one Hex solver per
board size (its answers: ``oracle_service/hex_service.py``). Every method takes a batch
and returns one :class:`Answer` per item (``oracle_service/answers.py``): a bad
item (illegal sequence, full column, finished game, malformed profile, wrong board size)
gets its error string, the others are answered, and the worker keeps running. A Hex
query runs under a node and time limit: one that reaches it is answered "unknown"
(``Answer(None)``) rather than holding the replica.

:class:`OracleReplica` is the worker as a Ray actor that Ray restarts when it dies and
whose in-flight calls Ray retries on the restarted actor. :class:`OracleClient` owns N
replicas, splits each batch over them and, should a call still fail because its
replica died for good, sends that chunk to another replica: answers do not depend on
crashes, and the store keeps what was solved before one.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import ray

from games.connect4 import HEIGHT, WIDTH
from lifecycle import TASK_EVENTS, stop, watched
from oracle_service.answers import Answer
from oracle_service.chomp_answers import ChompAnswers
from oracle_service.connect4_boards import Connect4BoardAnswers
from oracle_service.connect4_engines import DEFAULT_ENGINE, make_engine
from oracle_service.counters import OracleCounters
from oracle_service.fgame_oracle import FGamePathOracle
from oracle_service.hex_service import HexAnswers
from oracle_service.store import Solved, Store, connect4_keys, open_store


# "4453" (1-based column digits), actions 0..6, or a connect4_solver.Board (bitboards:
# what evaluation has for the states of its games, which carry no move list).
Moves = "str | Sequence[int] | Board"


class DistinctKeys:
    """How many distinct int64 keys were added: exact (a set) up to ``exact_limit``
    keys, then a HyperLogLog estimate (2**14 one-byte registers, about 1% standard
    error) that is kept from the start. Counters of several processes merge
    (:meth:`merged_count`): exactly while all are exact, else by their registers."""

    _P = 14  # log2 of the number of registers
    _M = 1 << _P

    def __init__(self, exact_limit: int = 100_000):
        self.exact_limit = exact_limit
        self._exact: set[int] | None = set()
        self._registers = np.zeros(self._M, dtype=np.uint8)  # [M]

    def add(self, keys: np.ndarray) -> None:
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)  # [N]
        if self._exact is not None:
            self._exact.update(keys.tolist())
            if len(self._exact) > self.exact_limit:
                self._exact = None
        # splitmix64's finaliser: keys that differ in a few bits get unrelated hashes.
        h = keys.view(np.uint64).copy()
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
        rest_bits = 64 - self._P
        index = (h >> np.uint64(rest_bits)).astype(np.int64)  # [N] the register
        rest = h & np.uint64((1 << rest_bits) - 1)  # [N] 50 bits: exact as float64
        # Position of the leading 1 of ``rest`` counted from the top, 1-based.
        rank = np.where(rest > 0, rest_bits - np.floor(np.log2(np.maximum(rest, 1))),
                        rest_bits + 1).astype(np.uint8)  # [N]
        np.maximum.at(self._registers, index, rank)

    def count(self) -> int:
        return self.merged_count([self.state()])

    def state(self) -> tuple[np.ndarray | None, np.ndarray]:
        """(the keys int64[K] while exact, else None; the registers uint8[2**14])."""
        exact = None if self._exact is None else np.fromiter(self._exact, np.int64, len(self._exact))
        return exact, self._registers.copy()

    @classmethod
    def merged_count(cls, states: Sequence[tuple[np.ndarray | None, np.ndarray]]) -> int:
        """Distinct keys over the counters whose :meth:`state` are ``states``."""
        if not states:
            return 0
        if all(e is not None for e, _ in states):
            return int(np.unique(np.concatenate([e for e, _ in states])).size)
        registers = np.max(np.stack([r for _, r in states]), axis=0).astype(np.float64)  # [M]
        m = cls._M
        estimate = 0.7213 / (1 + 1.079 / m) * m * m / np.sum(2.0 ** -registers)
        zeros = int(np.count_nonzero(registers == 0))
        if estimate <= 2.5 * m and zeros:  # small counts: linear counting is better
            estimate = m * np.log(m / zeros)
        return round(float(estimate))


# Best-column answers a worker keeps in memory (about 150 bytes each), then starts afresh.
BEST_SEEN = 200_000


def _best_of(analysis) -> list[int]:
    """The ascending columns of maximal score of an analysis (None: a full column)."""
    best = max(s for s in analysis if s is not None)
    return [c for c, s in enumerate(analysis) if s == best]


def _mirror(columns: list[int]) -> list[int]:
    """The same columns seen from the mirror image, ascending."""
    return sorted(WIDTH - 1 - c for c in columns)


def _best_records(keys: list[int], cur, mask, plies, solved: list[tuple[list[int], int]]) -> list:
    """What a best-column search of the positions ``keys`` (``cur``, ``mask``, ``plies``
    [F] each, as searched) found that the store can keep: each position's score, and the
    score of each child its best columns lead to (the position's, negated)."""
    from oracle_service.connect4_solver import children

    ccur, cmask, live = children(cur, mask, plies)  # [F, 7] each
    records = []
    for f, (key, (columns, score)) in enumerate(zip(keys, solved)):
        records.append((key, Solved(score)))
        kids = [c for c in columns if live[f, c]]
        if kids:
            records += [(int(k), Solved(-score)) for k in connect4_keys(ccur[f, kids], cmask[f, kids])[0]]
    return records


class OracleWorker:
    """Batched exact answers for Connect Four, Chomp and F-Games (see the module doc).

    ``store``: a path or ``redis://`` URL for :func:`open_store` (None: its default), or
    a store object (``NullStore``: keep nothing). ``engine``: the Connect Four engine's
    name (:mod:`oracle_service.connect4_engines`: ``ours``, or ``bitbully``, the optional
    extra); the store keeps what either solves, under the same keys. Connect Four scores,
    analyses and best moves are read from the store before solving and written back after
    (weak queries use a stored score, else solve without storing); before solving, the
    exact scores the store holds within ``seed_depth`` plies below enter the solver's
    transposition table, where the search stops on reaching them.
    """

    def __init__(self, store: str | None = None, *, tt_log2_size: int = 23, seed_depth: int = 2,
                 chomp_cache_dir: str | None = None, engine: str = DEFAULT_ENGINE,
                 hex_node_limit: int | None = None, hex_time_limit: float | None = 60.0):
        if seed_depth < 0:
            raise ValueError(f"oracle worker: seed_depth must be >= 0, got {seed_depth}")
        # make_engine imports the engine only here, in the replica: our solver compiles
        # its search when imported, which the clients (training, the launcher) should not wait for.
        self.solver = make_engine(engine, tt_log2_size=tt_log2_size)
        self.store: Store = store if isinstance(store, Store) else open_store(store)
        self.seed_depth = seed_depth
        self._fgame: dict[tuple, Any] = {}
        self._unique = DistinctKeys()
        # Best columns searched here, by canonical key: the store keeps their scores alone.
        self._best_seen: dict[int, list[int]] = {}
        self._stats = OracleCounters()
        self.hex = HexAnswers(self.store, self._stats, self._timed, node_limit=hex_node_limit,
                              time_limit=hex_time_limit)
        self.boards = Connect4BoardAnswers(self._stats, self._timed, tt_log2_size, kept=BEST_SEEN)
        self.chomp = ChompAnswers(self._stats, chomp_cache_dir)

    # ---- Connect Four -----------------------------------------------------------

    def _parse(self, positions: Sequence[Moves]):
        """Per item: (cur, mask, plies) or the error; counts queries and errors."""
        from oracle_service.connect4_solver import parse_position

        parsed: list[tuple[int, int, int] | None] = []
        errors: list[str | None] = []
        for p in positions:
            try:
                parsed.append(parse_position(p))
                errors.append(None)
            except (ValueError, TypeError) as e:
                parsed.append(None)
                errors.append(str(e))
        self._stats.queries += len(positions)
        self._stats.errors += sum(e is not None for e in errors)
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
        self._unique.add(np.fromiter(unique, np.int64, len(unique)))
        found = {}
        if unique:
            for k, v in zip(unique, self.store.get_many(list(unique))):
                if v is not None and (v.analysis is not None or not need_analysis):
                    found[k] = v
        self._stats.store_hits += len(found)
        return keys, mirrored, unique, found

    def _misses(self, keys: list, found: dict, parsed: list) -> tuple[dict, tuple]:
        """The positions the store did not answer: {key: an item that asked for it, to be
        solved in that item's orientation}, and their (cur, mask, plies) [F] each, with
        the solver's table seeded for them."""
        first = {}
        for i, k in enumerate(keys):
            if k is not None and k not in found:
                first.setdefault(k, i)
        cur, mask, plies = (np.array([parsed[i][j] for i in first.values()], dtype=dt)
                            for j, dt in ((0, np.uint64), (1, np.uint64), (2, np.int64)))
        if first:
            self._timed(self._seed, cur, mask, plies)
        return first, (cur, mask, plies)

    def _seed(self, cur: np.ndarray, mask: np.ndarray, plies: np.ndarray) -> None:
        """Before solving the positions ``cur``, ``mask`` (uint64[B]), ``plies``
        (int64[B]): enter in the solver's table the exact scores the store holds for
        their descendants within ``seed_depth`` plies (one batched read) and, from the
        analyses among those records, the scores of these descendants' children."""
        from oracle_service.connect4_solver import children, descendants

        if self.seed_depth == 0 or cur.size == 0 or not self.solver.takes_seeds:
            return  # (an engine that cannot take seeds: no store reads for them)
        dcur, dmask, dplies = descendants(cur, mask, plies, self.seed_depth)  # [D] each
        keys, mirrored = connect4_keys(dcur, dmask)  # [D]
        records = self.store.get_many(keys.tolist())
        hit = np.array([r is not None for r in records], dtype=bool)  # [D]
        # The store keeps canonical keys; the table needs the positions as the search
        # meets them. A score is the same for a position and its mirror image.
        self.solver.seed(dcur[hit], dmask[hit],
                         np.array([r.score for r in records if r is not None], dtype=np.int64))
        seeded = int(hit.sum())
        rows = np.array([j for j, r in enumerate(records) if r is not None and r.analysis is not None],
                        dtype=np.int64)  # [R]
        if rows.size:
            ccur, cmask, live = children(dcur[rows], dmask[rows], dplies[rows])  # [R, 7] each
            analysis = np.array([[0 if v is None else v
                                  for v in records[j].oriented(bool(mirrored[j])).analysis]
                                 for j in rows], dtype=np.int64)  # [R, 7], the mover's scores
            self.solver.seed(ccur[live], cmask[live], -analysis[live])
            seeded += int(live.sum())
        self._stats.seed_lookups += len(keys)
        self._stats.seeded += seeded

    def _timed(self, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self._stats.solve_seconds += time.perf_counter() - t0
        return out

    def connect4_solve(self, positions: Sequence[Moves], weak: bool = False) -> list[Answer]:
        """Per position: its score (docs/design.md), or with ``weak`` 1 / 0 / -1."""
        parsed, errors = self._parse(positions)
        keys, _, unique, found = self._lookup(parsed, need_analysis=False)
        scores = {k: v.score for k, v in found.items()}
        missing = [k for k in unique if k not in found]
        if missing:
            cur, mask, plies = (np.array([unique[k][j] for k in missing], dtype=dt)
                                for j, dt in ((0, np.uint64), (1, np.uint64), (2, np.int64)))
            self._timed(self._seed, cur, mask, plies)
            solved = self._timed(self.solver.solve_states, cur, mask, plies, weak)
            self._stats.solved += len(missing)
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
        first, (cur, mask, plies) = self._misses(keys, found, parsed)
        analyses = []  # [F] per position solved, in the asking item's orientation
        for k, i in first.items():
            analyses.append(tuple(self._timed(self.solver.analyze, positions[i])))
            score = max(s for s in analyses[-1] if s is not None)
            canonical[k] = Solved(score, analyses[-1]).oriented(mirrored[i])
        self._stats.solved += len(first)
        records = [(k, canonical[k]) for k in first]
        if first:  # the children's scores came with the analyses: keep them too
            from oracle_service.connect4_solver import children

            ccur, cmask, live = children(cur, mask, plies)  # [F, 7] each
            ckeys = connect4_keys(ccur[live], cmask[live])[0]  # [L]
            cscores = -np.array([[0 if v is None else v for v in a] for a in analyses],
                                dtype=np.int64)[live]  # [L]
            records += [(int(k), Solved(int(v))) for k, v in zip(ckeys, cscores)]
            self._stats.children_stored += len(ckeys)
        self.store.put_many(records)
        return [Answer(error=errors[i]) if errors[i] is not None
                else Answer(list(canonical[k].oriented(mirrored[i]).analysis))
                for i, k in enumerate(keys)]

    def connect4_best_moves(self, positions: Sequence[Moves]) -> list[Answer]:
        """Per position: the ascending columns 0..6 of maximal score (quickest win, else
        a draw, else the slowest loss): from the stored analysis, else the engine's
        ``best_columns`` (no column's exact score), whose scores are stored (``_best_records``)."""
        parsed, errors = self._parse(positions)
        keys, mirrored, _unique, found = self._lookup(parsed, need_analysis=True)
        best = {k: _best_of(v.analysis) for k, v in found.items()}  # canonical orientation
        best.update((k, self._best_seen[k]) for k in keys if k in self._best_seen and k not in best)
        first, (cur, mask, plies) = self._misses(keys, best, parsed)
        if first:
            solved = [self._timed(self.solver.best_columns, positions[i]) for i in first.values()]
            if len(self._best_seen) > BEST_SEEN:
                self._best_seen.clear()
            for (k, i), (columns, _) in zip(first.items(), solved):
                best[k] = self._best_seen[k] = _mirror(columns) if mirrored[i] else columns
            records = _best_records(list(first), cur, mask, plies, solved)
            self.store.put_many(records)
            self._stats.solved += len(first)
            self._stats.children_stored += len(records) - len(first)
        return [Answer(error=errors[i]) if errors[i] is not None
                else Answer(_mirror(best[k]) if mirrored[i] else list(best[k])) for i, k in enumerate(keys)]

    def connect4_board_best_moves(self, width: int, height: int, positions: Sequence[str]) -> list[Answer]:
        """:meth:`connect4_best_moves` on a ``width`` x ``height`` board (move strings):
        that method on 7x6, else :class:`oracle_service.connect4_boards.Connect4BoardAnswers`."""
        if (int(width), int(height)) == (WIDTH, HEIGHT):
            return self.connect4_best_moves(positions)
        return self.boards.best_moves(width, height, positions)

    # ---- Chomp ------------------------------------------------------------------

    def chomp_grundy(self, rows: int, cols: int, profiles: Sequence[Sequence[int]]) -> list[Answer]:
        """See :meth:`oracle_service.chomp_answers.ChompAnswers.grundy`."""
        return self.chomp.grundy(rows, cols, profiles)

    def chomp_winning_moves(self, rows: int, cols: int, profiles: Sequence[Sequence[int]]) -> list[Answer]:
        """See :meth:`oracle_service.chomp_answers.ChompAnswers.winning_moves`."""
        return self.chomp.winning_moves(rows, cols, profiles)

    # ---- F-Games ----------------------------------------------------------------

    def fgame_value(self, params: dict, paths: Sequence[Sequence[int]]) -> list[Answer]:
        """Per action path from the root: the node's exact value for the player to move
        (-1, 0, 1; leaves too). ``params``: ``depth``, ``branching``, ``beta``, ``seed``."""
        self._stats.queries += len(paths)
        ident = tuple(sorted(params.items()))
        try:
            if ident not in self._fgame:
                self._fgame[ident] = FGamePathOracle(**params)
        except (ValueError, TypeError) as e:
            self._stats.errors += len(paths)
            return [Answer(error=f"fgame {params}: {e}") for _ in paths]
        oracle = self._fgame[ident]
        out = []
        for p in paths:  # one by one, so that a bad path fails alone
            try:
                out.append(Answer(oracle.value(p)))
            except (ValueError, TypeError) as e:
                self._stats.errors += 1
                out.append(Answer(error=str(e)))
        return out

    # ---- Hex ----------------------------------------------------------------------

    def hex_solve(self, size: int, positions: Sequence, *, node_limit: int | None = None,
                  time_limit: float | None = None, value_only: bool = False) -> list[Answer]:
        """See :meth:`oracle_service.hex_service.HexAnswers.solve`."""
        return self.hex.solve(size, positions, node_limit=node_limit, time_limit=time_limit, value_only=value_only)

    # ---- statistics -------------------------------------------------------------

    def stats(self) -> dict:
        """Counters since start: ``queries`` (items asked, all games), ``unique_positions``
        (distinct Connect Four positions asked, a position and its mirror image being one;
        see :class:`DistinctKeys`), ``store_hits`` (distinct positions asked that the
        store answered), ``solved`` (positions solved), ``solve_seconds`` (solving,
        store reads for seeding included), ``errors`` (bad items), ``seed_lookups``
        (descendant positions looked up in the store before solving), ``seeded``
        (exact scores entered in the solver's table from those records),
        ``children_stored`` (children's score records written after analyses),
        ``book_leaves`` (search nodes the solver's 12-ply book answered); and the store's
        own counters under ``store``."""
        return {**asdict(self._stats), "unique_positions": self._unique.count(), "book_leaves": self.solver.book_leaves,
                "store": self.store.stats()}

    def unique_state(self) -> tuple[np.ndarray | None, np.ndarray]:
        """The distinct-position counter's state, for merging across replicas."""
        return self._unique.state()

    def ping(self) -> bool:
        return True

    def submit(self, method: str, items: Sequence, *args, **kwargs) -> Answered:
        """``method(*args, items, **kwargs)``, answered at once: :meth:`OracleClient.submit`'s
        interface, so that a caller takes the worker or the client alike."""
        return Answered(getattr(self, method)(*args, list(items), **kwargs))


OracleReplica = ray.remote(max_restarts=-1, max_task_retries=-1, enable_task_events=TASK_EVENTS)(watched(OracleWorker))


class PendingAnswers:
    """The answers to one batch on their way from the replicas (:meth:`OracleClient.submit`).

    Chunk ``j`` went to replica ``j``; :meth:`result` waits for every chunk and, should a
    call fail because its replica died (``RayActorError``; Ray already retries calls on a
    restarted replica), sends that chunk to the next replica, up to the client's
    ``max_attempts`` times."""

    def __init__(self, client: "OracleClient", method: str, chunks: list[list], args: tuple, kwargs: dict):
        self._client, self._method, self._chunks, self._args, self._kwargs = client, method, chunks, args, kwargs
        self._refs = [self._send(j, j) for j in range(len(chunks))]
        self._answers: list[Answer] | None = None

    def _send(self, j: int, replica: int):
        handle = self._client.replicas[replica % len(self._client.replicas)]
        return getattr(handle, self._method).remote(*self._args, self._chunks[j], **self._kwargs)

    def ready(self) -> bool:
        """Whether every chunk has come back (answered or failed), without waiting."""
        if self._answers is not None or not self._refs:
            return True
        done, _ = ray.wait(self._refs, num_returns=len(self._refs), timeout=0)
        return len(done) == len(self._refs)

    def result(self) -> list[Answer]:
        """One :class:`Answer` per item, in the order of the items (waits for them)."""
        if self._answers is None:
            results = []
            for j in range(len(self._chunks)):
                for attempt in range(1, self._client.max_attempts + 1):
                    try:
                        results.append([Answer(*a) for a in ray.get(self._refs[j])])
                        break
                    except ray.exceptions.RayActorError:
                        if attempt == self._client.max_attempts:
                            raise
                        self._refs[j] = self._send(j, j + attempt)
            self._answers = [a for chunk in results for a in chunk]
        return self._answers


class Answered:
    """Answers already at hand, behind :class:`PendingAnswers`' interface
    (:meth:`OracleWorker.submit`: an in-process worker answers at once)."""

    def __init__(self, answers: list[Answer]):
        self._answers = answers

    def ready(self) -> bool:
        return True

    def result(self) -> list[Answer]:
        return self._answers


class OracleClient:
    """N :class:`OracleReplica` actors behind one batched interface.

    A batch is cut into one chunk per replica; each chunk goes to its replica, and if
    that call fails because the replica died (``RayActorError``; Ray already retries
    calls on a restarted replica), it is sent to the next replica, up to
    ``max_attempts`` times. ``replica_options`` are Ray actor options (e.g.
    ``{"num_cpus": 1}``); ``worker_kwargs`` go to :class:`OracleWorker`.
    The named methods wait for their answers; :meth:`submit` sends a batch and returns
    at once, so that the caller (AZAL's self-play) works while the replicas solve.
    """

    def __init__(self, num_replicas: int = 2, store: str | None = None, *,
                 replica_options: dict | None = None, max_attempts: int = 3, **worker_kwargs):
        if num_replicas < 1:
            raise ValueError(f"oracle client: num_replicas must be >= 1, got {num_replicas}")
        options = {"num_cpus": 1, **(replica_options or {})}
        self.max_attempts = max_attempts
        # Named, so that copies of the client travel by name (see __getstate__).
        prefix = f"oracle-{uuid.uuid4().hex[:12]}"
        self.replica_names = [f"{prefix}-replica-{i}" for i in range(num_replicas)]
        self.replicas = [OracleReplica.options(**options, name=name).remote(store, **worker_kwargs)
                         for name in self.replica_names]
        ray.get([r.ping.remote() for r in self.replicas])  # fail here, not on the first query

    def __getstate__(self):
        # A copy travels with its replicas' names, not their handles, and looks them up
        # where it lands: Ray cannot promise to restart an actor whose constructor
        # arguments hold references (an actor handle is one), and says so (ray#53727).
        return {**self.__dict__, "replicas": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.replicas = [ray.get_actor(name) for name in self.replica_names]

    def submit(self, method: str, items: Sequence, *args, **kwargs) -> "PendingAnswers":
        """``method(*args, chunk, **kwargs)`` sent to the replicas, one chunk of ``items``
        each, without waiting: the caller goes on and collects the answers later
        (:class:`PendingAnswers`), in the order of ``items``."""
        items = list(items)
        n = len(self.replicas)
        bounds = np.linspace(0, len(items), min(n, max(len(items), 1)) + 1).astype(int)
        chunks = [items[a:b] for a, b in itertools.pairwise(bounds) if b > a]
        return PendingAnswers(self, method, chunks, args, kwargs)

    def _call(self, method: str, items: Sequence, *args, **kwargs) -> list[Answer]:
        """``method(*args, chunk, **kwargs)`` on the replicas, one chunk of ``items`` each."""
        return self.submit(method, items, *args, **kwargs).result()

    def connect4_solve(self, positions: Sequence[Moves], weak: bool = False) -> list[Answer]:
        return self._call("connect4_solve", positions, weak=weak)

    def connect4_analyze(self, positions: Sequence[Moves]) -> list[Answer]:
        return self._call("connect4_analyze", positions)

    def connect4_best_moves(self, positions: Sequence[Moves]) -> list[Answer]:
        return self._call("connect4_best_moves", positions)

    def connect4_board_best_moves(self, width: int, height: int, positions: Sequence[str]) -> list[Answer]:
        return self._call("connect4_board_best_moves", positions, width, height)

    def chomp_grundy(self, rows: int, cols: int, profiles) -> list[Answer]:
        return self._call("chomp_grundy", profiles, rows, cols)

    def chomp_winning_moves(self, rows: int, cols: int, profiles) -> list[Answer]:
        return self._call("chomp_winning_moves", profiles, rows, cols)

    def fgame_value(self, params: dict, paths) -> list[Answer]:
        return self._call("fgame_value", paths, params)

    def hex_solve(self, size: int, positions, *, node_limit: int | None = None,
                  time_limit: float | None = None, value_only: bool = False) -> list[Answer]:
        return self._call("hex_solve", positions, size, node_limit=node_limit, time_limit=time_limit,
                          value_only=value_only)

    def _gather(self, method: str) -> list:
        out = []
        for ref in [getattr(r, method).remote() for r in self.replicas]:
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayActorError:
                out.append(None)
        return out

    def stats(self) -> list[dict | None]:
        """Each replica's :meth:`OracleWorker.stats` (a restarted one counts from zero;
        None for one that is gone for good)."""
        return self._gather("stats")

    def stats_summary(self) -> dict[str, float]:
        """The replicas' statistics as one flat dict for a metrics log, summed over the
        live replicas (each counts since it last started; see :meth:`OracleWorker.stats`):

        - ``oracle/queries``: items asked (all games), bad ones included;
        - ``oracle/unique_positions``: distinct Connect Four positions asked (mirror
          images count once), over all replicas: exact up to 100,000 per replica,
          then an estimate within a few percent (:class:`DistinctKeys`);
        - ``oracle/store_hits``: positions asked that the store answered;
        - ``oracle/solved``: positions the replicas had to solve;
        - ``oracle/solve_seconds``: time spent solving (seeding reads included);
        - ``oracle/errors``: bad items;
        - ``oracle/seed_lookups``, ``oracle/seeded``: positions below those to solve
          looked up in the store, and exact scores from it entered in the solvers'
          tables (the store consulted during search);
        - ``oracle/children_stored``: children's scores written back after analyses;
        - ``oracle/book_leaves``: search nodes answered by the 12-ply book (positions
          with 12 stones: the book, not the store, ends searches from earlier plies);
        - ``oracle/replicas_alive``: replicas that answered (the others are gone).
        """
        stats = [s for s in self._gather("stats") if s is not None]
        states = [u for u in self._gather("unique_state") if u is not None]
        out: dict[str, float] = {
            f"oracle/{name}": sum(s[name] for s in stats)
            for name in ("queries", "store_hits", "solved", "solve_seconds", "errors",
                         "seed_lookups", "seeded", "children_stored", "book_leaves")}
        out["oracle/unique_positions"] = DistinctKeys.merged_count(states)
        out["oracle/replicas_alive"] = len(stats)
        return out

    def close(self) -> None:
        """End the replicas for good, each logging its exit (``lifecycle.stop``)."""
        stop(self.replicas)
        self.replicas, self.replica_names = [], []
