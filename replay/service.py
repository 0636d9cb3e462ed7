"""The replay service on Ray: ring-buffer shards as actors, a handle to all of them, and
a prefetching sampler for the learner.

    actors --ReplayService.add(rows, shard=i)--> ReplayShard i (RingBuffer)
    learner <--ReplaySampler.next()-- multinomial split of each batch over the shards

Shards are I/O actors: they hold memory and copy rows, they do no compute, so they are
created with ``num_cpus=0`` and never take a CPU slot that a self-play actor could use.
They restart forever (``max_restarts=-1``) and do not retry calls (``max_task_retries=0``):
a call in flight when a shard dies fails, and the restarted shard reloads its last
snapshot from ``snapshot_dir`` if there is one. ``ReplayService.put`` (what self-play
actors use) sends the rows again once the shard is back, so a crash loses only the rows
stored since the snapshot, never those of the call in flight. What was lost cannot be
known by the shard itself (the dead process's counters died with it), so it reports the
counters it came back with (``ReplayService.recoveries()``, with an ``incarnation`` that
changes at each restart) and the caller, which saw the live counters in ``stats()`` and
in the replies of ``put``, compares.

Snapshots are written by the shard processes, so on a multi-node cluster the snapshot
directory must be storage that every node sees.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections import deque
from typing import Mapping, NamedTuple

import numpy as np
import ray
from ray.exceptions import RayActorError

import storage

from lifecycle import TASK_EVENTS, stop, was_restarted, watched
from replay.buffer import BufferStats, RingBuffer, SnapshotError
from replay.rows import Column, check_rows

log = logging.getLogger(__name__)


class Stored(NamedTuple):
    """A shard's answer to rows added: what it took and what it holds now."""

    written: int  # rows of this call stored
    size: int  # rows the shard holds now
    total_added: int  # rows it has taken since its buffer began (snapshots included)
    incarnation: str  # of the shard process that took them: new at each (re)start
    shard: int = -1  # its index (ReplayService.put sets it)


class ShardRecovery(NamedTuple):
    """How a shard process started: compare ``stats.total_added`` with the last live count
    seen to know the rows a crash lost."""

    restarted: bool  # by Ray, after a crash
    restored_from: str | None  # the snapshot it reloaded, or None
    incarnation: str  # new at each start
    node_id: str  # where it runs
    stats: BufferStats  # the counters it started with


@ray.remote(enable_task_events=TASK_EVENTS)
@watched
class ReplayShard:
    """One ``RingBuffer`` in its own actor; restores ``snapshot_path`` on (re)start if it exists."""

    def __init__(self, schema: Mapping[str, Column], capacity: int, seed: int = 0,
                 snapshot_path: str | None = None):  # fmt: skip
        self._schema = dict(schema)
        self._snapshot_path = snapshot_path
        restarted = was_restarted()
        restored_from = None
        if snapshot_path is not None and storage.exists(snapshot_path):
            self._buffer = self._load(snapshot_path, capacity)
            restored_from = snapshot_path
        else:
            self._buffer = RingBuffer(self._schema, capacity, seed)
        # The counters this shard (re)started with: after a crash, the caller subtracts
        # them from the last live counters it saw to count the rows lost.
        self._recovery = ShardRecovery(restarted, restored_from, uuid.uuid4().hex,
                                       ray.get_runtime_context().get_node_id(), self._buffer.stats())
        if restarted or restored_from:
            log.warning(
                "replay shard %s with %d rows (total_added %d) from %s",
                "restarted" if restarted else "started",
                self._buffer.size,
                self._buffer.total_added,
                restored_from or "nothing (no snapshot yet): all its rows are lost",
            )

    def _load(self, path: str, capacity: int) -> RingBuffer:
        buffer = RingBuffer.restore(path, schema=self._schema)
        if buffer.capacity != capacity:
            raise SnapshotError(f"{path}: snapshot capacity {buffer.capacity}, this shard's capacity {capacity}")
        return buffer

    def add(self, rows: Mapping[str, np.ndarray]) -> Stored:
        written = self._buffer.add(rows)
        return Stored(written, self._buffer.size, self._buffer.total_added, self._recovery.incarnation)

    def sample(self, n: int) -> tuple[dict, int]:
        """``(rows, size)``: ``n`` rows, or none at all while the shard is empty (a shard can
        come back empty after a restart without snapshot), and the shard's size."""
        return self._buffer.sample(n if self._buffer.size else 0), self._buffer.size

    def size(self) -> int:
        return self._buffer.size

    def stats(self) -> BufferStats:
        return self._buffer.stats()

    def recovery(self) -> ShardRecovery:
        return self._recovery

    def snapshot(self, path: str | None = None) -> str:
        path = path or self._snapshot_path
        if path is None:
            raise ValueError("replay shard has no snapshot_path; pass a path to snapshot()")
        return self._buffer.snapshot(path)

    def restore(self, path: str) -> BufferStats:
        self._buffer = self._load(path, self._buffer.capacity)
        return self._buffer.stats()


class ReplayService:
    """Handles to the shards of one replay buffer, and its configuration; picklable, so it
    can be passed to actors. Build it with ``ReplayService.create``."""

    def __init__(self, shards: list, schema: Mapping[str, Column], shard_capacity: int, name: str,
                 snapshot_dir: str | None):  # fmt: skip
        self.shards = list(shards)
        self.schema = dict(schema)
        self.shard_capacity = shard_capacity
        self.name = name
        self.snapshot_dir = snapshot_dir
        self._cursor = random.randrange(len(self.shards))

    def __getstate__(self):
        # A copy travels with its shards' names, not their handles, and looks them up where
        # it lands: Ray cannot promise to restart an actor whose constructor arguments hold
        # references (an actor handle is one), and says so on the console (ray#53727).
        return {**self.__dict__, "shards": [_shard_name(self.name, i) for i in range(len(self.shards))]}

    def __setstate__(self, state):
        # Each copy (one per actor) starts its round-robin at its own random shard, so copies
        # that never pass ``shard=`` still spread over the shards.
        self.__dict__.update(state)
        self.shards = [ray.get_actor(name) for name in state["shards"]]
        self._cursor = random.randrange(len(self.shards))

    @classmethod
    def create(cls, schema: Mapping[str, Column], capacity: int, num_shards: int, seed: int = 0,
               snapshot_dir: str | None = None, actor_options: dict | None = None, name: str = "replay",
               timeout: float = 120.0, log_dir: str | None = None) -> "ReplayService":  # fmt: skip
        """Start ``num_shards`` shard actors ``{name}-shard-{i}`` of ``capacity // num_shards``
        rows each, and wait until each has started.

        With ``snapshot_dir``, shard ``i`` snapshots to ``{snapshot_dir}/{name}-shard-{i}.parquet``
        and restores from that file when it (re)starts, so creating a service over the
        directory of an earlier run resumes its buffer. ``actor_options`` are passed to
        ``ReplayShard.options`` and override the defaults (``num_cpus=0``, restarts).
        ``name`` prefixes the actor and snapshot file names: services sharing a Ray cluster
        or a snapshot directory need different names. Raises the shard's own error if one
        cannot start (say, its snapshot holds rows of another schema). ``log_dir``: where
        each shard logs its start, exit and crashes (``lifecycle``; None: stderr).
        """
        if num_shards < 1 or capacity < num_shards:
            raise ValueError(
                f"need num_shards >= 1 and capacity >= num_shards, got {num_shards} shards, capacity {capacity}"
            )
        if snapshot_dir is not None:
            storage.makedirs(snapshot_dir)
        shard_capacity = capacity // num_shards
        shards = []
        for i in range(num_shards):
            options = {"name": _shard_name(name, i), "max_restarts": -1, "max_task_retries": 0, "num_cpus": 0}
            options.update(actor_options or {})
            path = _shard_path(snapshot_dir, name, i) if snapshot_dir is not None else None
            shards.append(ReplayShard.options(**options).remote(schema, shard_capacity, seed + i, path,
                                                                log_dir=log_dir))
        try:
            ray.get([s.recovery.remote() for s in shards], timeout=timeout)
        except BaseException:
            _kill(shards, name)  # free the names of the shards that did start
            raise
        return cls(shards, schema, shard_capacity, name, snapshot_dir)

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    def add(self, rows: Mapping[str, np.ndarray], shard: int | None = None) -> ray.ObjectRef:
        """Send ``rows`` to shard ``shard % num_shards`` (actor ``i`` passes ``shard=i``), or
        round-robin without it; returns at once with the ref of the shard's :class:`Stored`."""
        check_rows(self.schema, rows)
        if shard is None:
            shard = self._cursor
            self._cursor += 1
        return self.shards[shard % len(self.shards)].add.remote(rows)

    def put(self, rows: Mapping[str, np.ndarray], shard: int, timeout: float = 180.0) -> tuple[Stored, int]:
        """Store ``rows`` in shard ``shard % num_shards`` and wait for it, sending them again
        while the shard is dead or restarting (a hard-killed node is noticed after some
        15 s, and the shard then restarts elsewhere). Safe: a shard that died with the
        rows in flight lost them along with everything since its snapshot. Returns the
        shard's :class:`Stored` (with its index) and the number of failed attempts; raises
        the last ``RayActorError`` after ``timeout`` s."""
        check_rows(self.schema, rows)
        shard %= len(self.shards)
        deadline = time.monotonic() + timeout
        failures = 0
        while True:
            try:
                return ray.get(self.shards[shard].add.remote(rows))._replace(shard=shard), failures
            except RayActorError:
                failures += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def sizes(self) -> list[int]:
        return ray.get([s.size.remote() for s in self.shards])

    def size(self) -> int:
        """Rows stored over all shards."""
        return sum(self.sizes())

    def stats(self) -> list[BufferStats]:
        """``RingBuffer.stats()`` of each shard, in shard order."""
        return ray.get([s.stats.remote() for s in self.shards])

    def recoveries(self) -> list[ShardRecovery]:
        """Each shard's :class:`ShardRecovery`: whether it restarted, from which snapshot, and
        the counters it started with (compare ``stats.total_added`` with the last live
        ``stats()`` to count rows lost in a crash)."""
        return ray.get([s.recovery.remote() for s in self.shards])

    def snapshot(self, directory: str | None = None) -> list[str]:
        """Snapshot all shards in parallel, one Parquet file each; returns the paths.
        Only snapshots in ``snapshot_dir`` (the default) are what restarted shards reload."""
        directory = self._directory(directory)
        storage.makedirs(directory)
        paths = [_shard_path(directory, self.name, i) for i in range(len(self.shards))]
        return ray.get([s.snapshot.remote(p) for s, p in zip(self.shards, paths)])

    def restore(self, directory: str | None = None) -> list[BufferStats]:
        """Replace every shard's rows by its snapshot in ``directory``; returns their stats."""
        directory = self._directory(directory)
        paths = [_shard_path(directory, self.name, i) for i in range(len(self.shards))]
        missing = [p for p in paths if not storage.exists(p)]
        if missing:
            raise SnapshotError(
                f"cannot restore {len(self.shards)} replay shards from {directory}: missing {missing}"
            )
        return ray.get([s.restore.remote(p) for s, p in zip(self.shards, paths)])

    def wait_for(self, min_rows: int, timeout: float, poll: float = 0.1) -> int:
        """Block until the shards hold ``min_rows`` rows in all; returns the size.
        Raises ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        size = 0
        while True:
            try:
                size = self.size()
            except RayActorError:
                pass  # a shard died or is restarting; ask again
            if size >= min_rows:
                return size
            if time.monotonic() > deadline:
                raise TimeoutError(f"replay holds {size} rows after {timeout:.0f} s, waiting for {min_rows}")
            time.sleep(poll)

    def close(self) -> None:
        """Kill the shard actors for good (no restart), and wait until their names are free
        for a new service; rows not snapshotted are lost."""
        _kill(self.shards, self.name)

    def _directory(self, directory: str | None) -> str:
        directory = directory or self.snapshot_dir
        if directory is None:
            raise ValueError("no snapshot directory: pass one, or create the service with snapshot_dir")
        return directory


def _kill(shards: list, name: str, timeout: float = 30.0) -> None:
    """End ``shards`` for good, each logging its exit (``lifecycle.stop``), and wait until
    they no longer hold their names (the end is asynchronous; a name may meanwhile belong
    to another service's shard, which is fine)."""
    stop(shards)
    waiting = {_shard_name(name, i): s._actor_id for i, s in enumerate(shards)}
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        for actor_name, actor_id in list(waiting.items()):
            try:
                holder = ray.get_actor(actor_name)
            except ValueError:  # no live actor of that name
                holder = None
            if holder is None or holder._actor_id != actor_id:
                del waiting[actor_name]
        if waiting:
            time.sleep(0.05)
    if waiting:
        raise TimeoutError(
            f"replay shards {sorted(waiting)} still hold their names {timeout:.0f} s after being killed"
        )


def _shard_name(name: str, i: int) -> str:
    return f"{name}-shard-{i}"


def _shard_path(directory: str, name: str, i: int) -> str:
    return str(storage.join(directory, f"{_shard_name(name, i)}.parquet"))


class ReplaySampler:
    """Batches drawn uniformly over all rows of all shards, with ``prefetch`` requests in flight.

    Each request (``batches_per_request`` batches; see :meth:`next_block`) splits its rows
    over the shards by a multinomial draw proportional to the shard sizes last reported (every shard answers every request, if only with its
    size, so the sizes stay fresh), then each shard samples its part uniformly: every
    stored row is equally likely. ``wait_seconds`` is the time ``next`` spent blocked on
    Ray, ``batches`` the number of batches returned, ``dropped`` the requests discarded.

    A request that fails because a shard died, or that comes back short because a shard
    restarted empty, is dropped and redrawn from refreshed sizes. While every shard is
    empty ``next`` waits, up to ``timeout`` seconds, then raises ``TimeoutError``.
    """

    def __init__(self, service: ReplayService, batch_size: int, prefetch: int = 4, seed: int = 0,
                 timeout: float = 120.0, batches_per_request: int = 1):  # fmt: skip
        if batch_size < 1 or prefetch < 1 or batches_per_request < 1:
            raise ValueError(f"need batch_size >= 1, prefetch >= 1 and batches_per_request >= 1, got "
                             f"{batch_size}, {prefetch}, {batches_per_request}")
        self.service = service
        self.batch_size = batch_size
        self.prefetch = prefetch
        self.batches_per_request = batches_per_request
        self.timeout = timeout
        self.wait_seconds = 0.0
        self.batches = 0
        self.dropped = 0
        self._rng = np.random.default_rng(seed)
        self._sizes = np.zeros(service.num_shards, np.int64)  # [S], last reported
        self._pending: deque[tuple[list[ray.ObjectRef], int]] = deque()  # each: one ref per shard, its batches
        self._ready: deque[dict[str, np.ndarray]] = deque()  # batches of a block not yet returned by next()
        self._allowed: int | None = None  # requests still allowed by ``expect``; None: no limit
        self._closed = False

    def expect(self, batches: int) -> None:
        """Announce that exactly ``batches`` more batches will be asked for, and no more
        before the next ``expect``: prefetching stops there, so no request is left in
        flight afterwards (a checkpoint then captures the shards' and this sampler's
        generators at a quiet point, and a resumed run draws the same batches)."""
        if self._pending:
            try:
                ray.get([ref for request, _ in self._pending for ref in request])
            except RayActorError:
                pass  # a shard died with a request in flight; the request was not needed
            self._pending.clear()
        self._ready.clear()
        self._allowed = int(batches)
        # Rows were inserted since the last reply: split requests by the sizes of now.
        self._refresh_sizes(time.monotonic() + self.timeout)

    def rng_state(self) -> dict:
        return self._rng.bit_generator.state

    def set_rng_state(self, state: dict) -> None:
        self._rng.bit_generator.state = state

    def next(self) -> dict[str, np.ndarray]:
        """One batch: ``[batch_size, *shape]`` per schema column, rows in random order."""
        if not self._ready:
            block, batches = self.next_block()
            self._ready.extend({name: column[i * self.batch_size:(i + 1) * self.batch_size]
                                for name, column in block.items()} for i in range(batches))
        return self._ready.popleft()

    def next_block(self) -> tuple[dict[str, np.ndarray], int]:
        """``(rows, m)``: the ``m`` batches of one request (at most ``batches_per_request``),
        as ``[m * batch_size, *shape]`` per column in random order; batch ``i`` is rows
        ``i * batch_size`` to ``(i + 1) * batch_size``. Every row is drawn independently and
        uniformly from all stored rows, as ``next`` draws them: one request for ``m``
        batches spares ``m - 1`` round trips to the shards (a GPU learner takes thousands
        of batches a second) and lets the learner move them to its device at once."""
        if self._closed:
            raise RuntimeError("ReplaySampler.next() after close()")
        if self._ready:
            raise RuntimeError("ReplaySampler.next_block() while batches of a block taken by next() wait")
        deadline = time.monotonic() + self.timeout
        while True:
            self._fill()
            if not self._pending:
                self._refresh_sizes(deadline)
                continue
            request, batches = self._pending.popleft()
            start = time.perf_counter()
            try:
                replies = ray.get(request)  # [(rows, size)] per shard
            except RayActorError:
                replies = None  # a shard died with this request in flight
            finally:
                self.wait_seconds += time.perf_counter() - start
            if replies is None:
                self._drop(batches)
                self._refresh_sizes(deadline)
                continue
            self._sizes[:] = [size for _, size in replies]
            parts = [rows for rows, _ in replies]
            rows = batches * self.batch_size
            if sum(len(next(iter(p.values()))) for p in parts) != rows:
                self._drop(batches)  # a shard restarted empty: its share is missing, draw again
                continue
            order = self._rng.permutation(rows)
            block = {name: np.concatenate([p[name] for p in parts])[order] for name in self.service.schema}
            assert check_rows(self.service.schema, block) == rows
            self.batches += batches
            self._fill()
            return block, batches

    def close(self) -> None:
        """Drop the requests in flight; ``next`` raises afterwards."""
        self._pending.clear()
        self._ready.clear()
        self._closed = True

    def _drop(self, batches: int) -> None:
        self.dropped += 1
        if self._allowed is not None:
            self._allowed += batches  # they still have to be drawn

    def _fill(self) -> None:
        """Issue requests until ``prefetch`` are in flight (none while all shards look empty,
        nor past what ``expect`` allows)."""
        total = int(self._sizes.sum())
        while total and len(self._pending) < self.prefetch and (self._allowed is None or self._allowed > 0):
            batches = self.batches_per_request if self._allowed is None else min(self.batches_per_request,
                                                                                 self._allowed)
            counts = self._rng.multinomial(batches * self.batch_size, self._sizes / total)  # [S]
            self._pending.append(([s.sample.remote(int(c)) for s, c in zip(self.service.shards, counts)], batches))
            if self._allowed is not None:
                self._allowed -= batches

    def _refresh_sizes(self, deadline: float) -> None:
        """Ask every shard its size, waiting while all are empty or one is restarting."""
        start = time.perf_counter()
        try:
            while True:
                try:
                    self._sizes[:] = self.service.sizes()
                except RayActorError:
                    pass  # a shard died or is restarting; ask again
                else:
                    if self._sizes.sum():
                        return
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"replay sampler waited {self.timeout:.0f} s for rows: shard sizes {self._sizes.tolist()}"
                    )
                time.sleep(0.05)
        finally:
            self.wait_seconds += time.perf_counter() - start
