"""The shared solved-position store: exact Connect Four and Hex answers kept across processes and machines.

Solving an early position can take minutes, and evaluation keeps asking for the same
ones, so every solver process first looks positions up here and writes back what it
solved. Two back ends behind one interface (``get_many``, ``put_many``, ``__len__``,
``stats``):

- :class:`EmbeddedStore` (the default): one SQLite file in WAL mode, so several
  processes on one machine read and write it at once;
- :class:`RedisStore`: a Redis server, for processes on several machines. If the
  server is unreachable, reads are misses and writes are dropped (logged and counted):
  the store only saves time, it never decides an answer.

Keys are Pons position keys (``current + mask``, 49 bits; ``games/connect4.py``)
canonicalised under the left-right mirror: the smaller of the key of the position and
that of its mirror image, so a position and its mirror share one entry. Values are
:class:`Solved` records, kept in the orientation of the canonical key; a caller that
looked up a mirrored position mirrors the record back (:meth:`Solved.oriented`).

Hex positions (``hex_get_many``, ``hex_put_many``) live beside them, apart: their own
SQLite table (keyed by board size and key) and one Redis hash per board size, so no
Hex key can meet a Connect Four one. A Hex key is the board packed 2 bits a cell
(``hex_keys``), canonicalised under the 180-degree rotation (cell ``i`` -> ``N-1-i``,
which keeps each colour's two edges, so the value and the winning cells, rotated,
are the same); the record (:class:`HexSolved`: the value and every winning cell) is
kept in the canonical orientation and rotated back by :meth:`HexSolved.oriented`.
Only exact answers are stored: a query that hit the solver's limit is not.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

import games
from games.connect4 import COLUMN_BITS, WIDTH, moves_from_digits

log = logging.getLogger(__name__)

STORE_ENV = "SELFPLAY_ORACLE_STORE"  # a path or a redis:// URL
PASSWORD_ENV = "SELFPLAY_REDIS_PASSWORD"
_COL_BITS = np.uint64((1 << COLUMN_BITS) - 1)
_FULL = -128  # packed code of a full column (no score) in an analysis


def default_store_path() -> Path:
    return Path.home() / ".cache" / "selfplay" / "oracle.sqlite"


# ------------------------------------------------------------------------- keys


def mirror_bits(x: np.ndarray) -> np.ndarray:
    """uint64[N]: the bitboards ``x`` (uint64[N], layout of ``games/connect4.py``) with
    column ``c`` moved to column ``6 - c``. Columns are 7-bit fields, so a mirror is a
    permutation of fields."""
    x = np.asarray(x, dtype=np.uint64)
    out = np.zeros_like(x)
    for c in range(WIDTH):
        field = (x >> np.uint64(c * COLUMN_BITS)) & _COL_BITS
        out |= field << np.uint64((WIDTH - 1 - c) * COLUMN_BITS)
    return out


def connect4_keys(current: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys int64[N], mirrored bool[N]) of bitboard positions ``current``, ``mask``
    (uint64[N]): the canonical key, and whether it is that of the mirror image (a
    symmetric position is never "mirrored"). Keys fit in 49 bits."""
    current = np.asarray(current, dtype=np.uint64)  # [N]
    mask = np.asarray(mask, dtype=np.uint64)  # [N]
    assert current.shape == mask.shape and current.ndim == 1, (current.shape, mask.shape)
    # Within one column current + mask never carries past its sentinel bit, so the
    # key of the mirror is the mirror of the key; computed on the boards to be plain.
    key = current + mask
    mkey = mirror_bits(current) + mirror_bits(mask)
    mirrored = mkey < key
    return np.where(mirrored, mkey, key).astype(np.int64), mirrored


def connect4_key(moves: str | Sequence[int]) -> tuple[int, bool]:
    """(canonical key, mirrored) of the position after ``moves``: a string of 1-based
    column digits (``"4453"``) or a list of actions 0..6. Raises ValueError
    (``games.IllegalMoveError``) for an illegal sequence."""
    actions = moves_from_digits(moves) if isinstance(moves, str) else [int(a) for a in moves]
    state = games.make("connect4").from_moves([actions])
    keys, mirrored = connect4_keys(state.current, state.mask)
    return int(keys[0]), bool(mirrored[0])


def hex_keys(boards: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """(keys, rotated bool[B]) of Hex boards int[B, size, size] (0 empty, 1 Black,
    2 White; ``games/hex.py``): each board's canonical key, the smaller (bytewise) of
    its own and its 180-degree rotation's, and whether it is the rotation's (a
    symmetric board is never "rotated"). A key is the cells in order, 2 bits each,
    packed big-endian: ceil(2 N / 8) bytes (13 on 7x7); the store adds the size."""
    boards = np.asarray(boards)
    assert boards.ndim == 3 and boards.shape[1] == boards.shape[2], boards.shape
    flat = boards.reshape(len(boards), boards.shape[1] * boards.shape[2]).astype(np.uint8)  # [B, N]
    rot = flat[:, ::-1]  # [B, N], cell i -> N-1-i is the 180-degree rotation of the rhombus

    def pack(cells: np.ndarray) -> np.ndarray:  # [B, N] -> uint8[B, ceil(2N/8)]
        bits = np.stack([(cells >> 1) & 1, cells & 1], axis=2).reshape(len(cells), 2 * cells.shape[1])  # [B, 2N]
        return np.packbits(bits, axis=1)

    own, other = pack(flat), pack(rot)
    keys, rotated = [], np.zeros(len(boards), bool)
    for i, (a, b) in enumerate(zip(own, other)):
        a, b = a.tobytes(), b.tobytes()
        rotated[i] = b < a
        keys.append(b if b < a else a)
    return keys, rotated


# ----------------------------------------------------------------------- values


class Solved(NamedTuple):
    """What is known of one position: its exact score (docs/design.md convention, for the
    side to move) and, if computed, its analysis: the score of each column 0..6, None
    for a full column."""

    score: int
    analysis: tuple[int | None, ...] | None = None

    def oriented(self, mirrored: bool) -> Solved:
        """This record seen from the mirror image if ``mirrored``: columns reversed."""
        if not mirrored or self.analysis is None:
            return self
        return Solved(self.score, tuple(reversed(self.analysis)))

    def pack(self) -> bytes:
        """1 byte (score) or 8 bytes (score, then 7 column scores; -128 = full column)."""
        if self.analysis is None:
            return np.int8(self.score).tobytes()
        assert len(self.analysis) == WIDTH, self.analysis
        codes = [self.score] + [_FULL if s is None else s for s in self.analysis]
        return np.array(codes, dtype=np.int8).tobytes()

    @staticmethod
    def unpack(data: bytes) -> Solved:
        codes = np.frombuffer(data, dtype=np.int8).tolist()
        if len(codes) == 1:
            return Solved(codes[0])
        if len(codes) != 1 + WIDTH:
            raise ValueError(f"solved-position store: a value of {len(data)} bytes is corrupt "
                             f"(expected 1 or {1 + WIDTH})")
        return Solved(codes[0], tuple(None if s == _FULL else s for s in codes[1:]))


class HexSolved(NamedTuple):
    """An exact Hex answer for the side to move: ``value`` +1 (it wins) or -1 (it
    loses; no draws in Hex) and ``winning``, all its winning cells, ascending (empty
    exactly when the value is -1)."""

    value: int
    winning: tuple[int, ...] = ()

    def oriented(self, rotated: bool, size: int) -> HexSolved:
        """This record seen from the 180-degree rotation if ``rotated``: cell ``i`` is
        ``size * size - 1 - i`` there."""
        if not rotated:
            return self
        n = size * size
        return HexSolved(self.value, tuple(sorted(n - 1 - c for c in self.winning)))

    def pack(self) -> bytes:
        """1 byte (the value), then one byte per winning cell (cells < 256: boards up to 15x15)."""
        assert self.value in (1, -1) and (self.value > 0) == bool(self.winning), self
        return np.array([self.value, *self.winning], dtype=np.int16).astype(np.uint8).tobytes()

    @staticmethod
    def unpack(data: bytes) -> HexSolved:
        codes = np.frombuffer(data, dtype=np.uint8)
        if codes.size == 0 or codes[0] not in (1, 255):
            raise ValueError(f"solved-position store: a Hex value of {len(data)} bytes is corrupt "
                             f"(its first byte must be the value +1 or -1)")
        return HexSolved(1 if codes[0] == 1 else -1, tuple(int(c) for c in codes[1:]))


def _hex_size_checked(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= 15:
        raise ValueError(f"solved-position store: a Hex board size must be an integer in 1..15, got {size!r}")
    return int(size)


# ----------------------------------------------------------------------- stores


class EmbeddedStore:
    """Solved positions in one SQLite file (WAL mode: concurrent readers and writers in
    several processes). The connection is opened per process, so an instance survives
    being pickled to or forked into another process."""

    def __init__(self, path: str | os.PathLike | None = None, *, timeout_s: float = 30.0):
        self.path = Path(path) if path else default_store_path()
        self.timeout_s = timeout_s
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._counts = {"gets": 0, "hits": 0, "puts": 0, "hex_gets": 0, "hex_hits": 0, "hex_puts": 0}
        self._db()  # fail early on a bad path

    def __getstate__(self):
        return {"path": self.path, "timeout_s": self.timeout_s}

    def __setstate__(self, state):
        self.__init__(state["path"], timeout_s=state["timeout_s"])

    def _db(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
            # Switching to WAL needs a moment of exclusive access, which SQLite refuses at
            # once (no busy wait) while another process opens or recovers the same file,
            # as replicas starting together or restarting after a kill do: retry then.
            deadline = time.monotonic() + self.timeout_s
            while True:
                try:
                    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                        conn.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as err:
                    if "locked" not in str(err) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, never corrupt
            conn.execute("CREATE TABLE IF NOT EXISTS connect4 "
                         "(key INTEGER PRIMARY KEY, value BLOB NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS hex "
                         "(size INTEGER NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, "
                         "PRIMARY KEY (size, key)) WITHOUT ROWID")
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get_many(self, keys: Sequence[int]) -> list[Solved | None]:
        keys = [int(k) for k in keys]
        found: dict[int, bytes] = {}
        db = self._db()
        for i in range(0, len(keys), 500):  # SQLite caps the number of bound parameters
            chunk = keys[i:i + 500]
            rows = db.execute(f"SELECT key, value FROM connect4 WHERE key IN "
                              f"({','.join('?' * len(chunk))})", chunk)
            found.update(rows)
        out = [Solved.unpack(found[k]) if k in found else None for k in keys]
        self._counts["gets"] += len(keys)
        self._counts["hits"] += sum(v is not None for v in out)
        return out

    def put_many(self, items: Iterable[tuple[int, Solved]]) -> None:
        rows = [(int(k), v.pack()) for k, v in items]
        if not rows:
            return
        # A score-only record never replaces one that also holds the analysis.
        self._db().executemany(
            "INSERT INTO connect4 (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
            "SET value = excluded.value WHERE length(excluded.value) >= length(connect4.value)",
            rows)
        self._counts["puts"] += len(rows)

    def __len__(self) -> int:
        return self._db().execute("SELECT COUNT(*) FROM connect4").fetchone()[0]

    def hex_get_many(self, size: int, keys: Sequence[bytes]) -> list[HexSolved | None]:
        """The Hex records of canonical ``keys`` (``hex_keys``) on ``size`` boards, None where unknown."""
        size = _hex_size_checked(size)
        keys = [bytes(k) for k in keys]
        found: dict[bytes, bytes] = {}
        db = self._db()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = db.execute(f"SELECT key, value FROM hex WHERE size = ? AND key IN "
                              f"({','.join('?' * len(chunk))})", [size, *chunk])
            found.update(rows)
        out = [HexSolved.unpack(found[k]) if k in found else None for k in keys]
        self._counts["hex_gets"] += len(keys)
        self._counts["hex_hits"] += sum(v is not None for v in out)
        return out

    def hex_put_many(self, size: int, items: Iterable[tuple[bytes, HexSolved]]) -> None:
        """Keep exact Hex records (canonical orientation) of ``size`` boards."""
        size = _hex_size_checked(size)
        rows = [(size, bytes(k), v.pack()) for k, v in items]
        if rows:
            self._db().executemany("INSERT OR REPLACE INTO hex (size, key, value) VALUES (?, ?, ?)", rows)
            self._counts["hex_puts"] += len(rows)

    def hex_len(self, size: int) -> int:
        return self._db().execute("SELECT COUNT(*) FROM hex WHERE size = ?", (_hex_size_checked(size),)).fetchone()[0]

    def stats(self) -> dict:
        return {"backend": "sqlite", "path": str(self.path), **self._counts}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class RedisStore:
    """Solved positions in one Redis hash (field: the 7-byte big-endian key; value: the
    packed record), read with HMGET and written through a pipeline; Hex positions in
    one hash per board size, ``{hex_hash_prefix}:{size}`` (field: the ``hex_keys`` key).

    ``url`` like ``redis://:password@host:6379/0``; without a password in it, the one in
    ``$SELFPLAY_REDIS_PASSWORD`` is used. When the server cannot be reached, a call
    logs a warning, counts an error and answers misses (reads) or drops the records
    (writes); for ``retry_after_s`` seconds later calls do the same without waiting on
    the network, then the next call connects again.
    """

    def __init__(self, url: str, *, hash_name: str = "selfplay:connect4", hex_hash_prefix: str = "selfplay:hex",
                 timeout_s: float = 2.0, retry_after_s: float = 5.0):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.url, self.hash_name, self.retry_after_s = url, hash_name, retry_after_s
        self.hex_hash_prefix = hex_hash_prefix
        kwargs = {}
        if os.environ.get(PASSWORD_ENV) and "@" not in url:
            kwargs["password"] = os.environ[PASSWORD_ENV]
        # One attempt per call: the fallback above, not redis-py's back-off, handles outages.
        self._redis = redis.Redis.from_url(url, socket_timeout=timeout_s,
                                           socket_connect_timeout=timeout_s,
                                           retry=Retry(NoBackoff(), 0), **kwargs)
        self._errors_caught = (redis.ConnectionError, redis.TimeoutError)
        self._down_until = 0.0
        self._counts = {"gets": 0, "hits": 0, "puts": 0, "errors": 0, "dropped_puts": 0,
                        "hex_gets": 0, "hex_hits": 0, "hex_puts": 0}
        # A refused password is a configuration error, not an outage: say so now rather
        # than answer every lookup with a miss. A server that is down stays soft.
        try:
            self._redis.ping()
        except redis.AuthenticationError as err:
            raise ValueError(f"redis store {self._safe_url()}: the server refused the password ({err}); give it "
                             f"in the URL (redis://:PASSWORD@host:port/db) or in ${PASSWORD_ENV}") from None
        except self._errors_caught as err:
            self._failed("connect", err)

    def __getstate__(self):
        return {"url": self.url, "hash_name": self.hash_name, "hex_hash_prefix": self.hex_hash_prefix,
                "retry_after_s": self.retry_after_s}

    def __setstate__(self, state):
        self.__init__(state["url"], hash_name=state["hash_name"],
                      hex_hash_prefix=state.get("hex_hash_prefix", "selfplay:hex"),
                      retry_after_s=state["retry_after_s"])

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, what: str, err: Exception) -> None:
        self._counts["errors"] += 1
        self._down_until = time.monotonic() + self.retry_after_s
        log.warning("redis store %s: %s failed (%s: %s); answering without the store for %.1f s",
                    self._safe_url(), what, type(err).__name__, err, self.retry_after_s)

    def _safe_url(self) -> str:
        kw = self._redis.connection_pool.connection_kwargs
        return f"redis://{kw.get('host')}:{kw.get('port')}/{kw.get('db', 0)}"

    @staticmethod
    def _field(key: int) -> bytes:
        return int(key).to_bytes(7, "big")

    def _read(self, name: str, fields: list[bytes], unpack, gets: str, hits: str) -> list:
        """The records of ``fields`` in the hash ``name`` (None where missing, and all None
        while the server is away), counted in ``_counts[gets]`` and ``_counts[hits]``."""
        self._counts[gets] += len(fields)
        if not fields:
            return []
        if not self._available():
            return [None] * len(fields)
        try:
            raw = self._redis.hmget(name, fields)
        except self._errors_caught as e:
            self._failed("read", e)
            return [None] * len(fields)
        out = [None if v is None else unpack(v) for v in raw]
        self._counts[hits] += sum(v is not None for v in out)
        return out

    def get_many(self, keys: Sequence[int]) -> list[Solved | None]:
        return self._read(self.hash_name, [self._field(k) for k in keys], Solved.unpack, "gets", "hits")

    def put_many(self, items: Iterable[tuple[int, Solved]]) -> None:
        items = list(items)
        if not items:
            return
        if not self._available():
            self._counts["dropped_puts"] += len(items)
            return
        full = {self._field(k): v.pack() for k, v in items if v.analysis is not None}
        pipe = self._redis.pipeline(transaction=False)
        if full:
            pipe.hset(self.hash_name, mapping=full)
        for k, v in items:
            if v.analysis is None:  # never replace a record that also holds the analysis
                pipe.hsetnx(self.hash_name, self._field(k), v.pack())
        try:
            pipe.execute()
        except self._errors_caught as e:
            self._failed("write", e)
            self._counts["dropped_puts"] += len(items)
            return
        self._counts["puts"] += len(items)

    def __len__(self) -> int:
        return int(self._redis.hlen(self.hash_name))

    def _hex_hash(self, size: int) -> str:
        return f"{self.hex_hash_prefix}:{_hex_size_checked(size)}"

    def hex_get_many(self, size: int, keys: Sequence[bytes]) -> list[HexSolved | None]:
        """As :meth:`EmbeddedStore.hex_get_many`; misses while the server is away."""
        return self._read(self._hex_hash(size), [bytes(k) for k in keys], HexSolved.unpack, "hex_gets", "hex_hits")

    def hex_put_many(self, size: int, items: Iterable[tuple[bytes, HexSolved]]) -> None:
        """As :meth:`EmbeddedStore.hex_put_many`; dropped (and counted) while the server is away."""
        name, mapping = self._hex_hash(size), {bytes(k): v.pack() for k, v in items}
        if not mapping:
            return
        if not self._available():
            self._counts["dropped_puts"] += len(mapping)
            return
        try:
            self._redis.hset(name, mapping=mapping)
        except self._errors_caught as e:
            self._failed("write", e)
            self._counts["dropped_puts"] += len(mapping)
            return
        self._counts["hex_puts"] += len(mapping)

    def hex_len(self, size: int) -> int:
        return int(self._redis.hlen(self._hex_hash(size)))

    def stats(self) -> dict:
        return {"backend": "redis", "url": self._safe_url(), **self._counts}

    def close(self) -> None:
        self._redis.close()


class NullStore:
    """A store that keeps nothing: every lookup misses and writes are dropped, for
    solving every position afresh (an oracle asked to work without a store)."""

    def get_many(self, keys: Sequence[int]) -> list[Solved | None]:
        return [None] * len(keys)

    def put_many(self, items: Iterable[tuple[int, Solved]]) -> None:
        pass

    def __len__(self) -> int:
        return 0

    def hex_get_many(self, size: int, keys: Sequence[bytes]) -> list[HexSolved | None]:
        return [None] * len(keys)

    def hex_put_many(self, size: int, items: Iterable[tuple[bytes, HexSolved]]) -> None:
        pass

    def hex_len(self, size: int) -> int:
        return 0

    def stats(self) -> dict:
        return {"backend": "none"}

    def close(self) -> None:
        pass


Store = EmbeddedStore | RedisStore | NullStore


def open_store(url_or_path: str | os.PathLike | None = None) -> Store:
    """``redis://...`` (or ``rediss://``): a :class:`RedisStore`; anything else: an
    :class:`EmbeddedStore` at that path. None: ``$SELFPLAY_ORACLE_STORE`` if set, else
    ``~/.cache/selfplay/oracle.sqlite``."""
    target = url_or_path if url_or_path is not None else os.environ.get(STORE_ENV) or None
    if isinstance(target, str) and target.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(target)
    return EmbeddedStore(target)
