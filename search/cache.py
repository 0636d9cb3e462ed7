"""Evaluations done once per weight version: in-batch deduplication and a bounded cache.

Within a collection phase the network's weights are frozen, so an input that was
evaluated once need not be evaluated again: early plies repeat across the environments
of a batch, transpositions and re-searched subtrees repeat across steps. The wrappers
here send each distinct input of a call to the network once (deduplication) and keep
the answers for later calls (the cache), until the weights change.

- :class:`EvaluationCache`: the table. Rows of an array are keyed by their bytes (binary
  encodings, the case of every game here, packed to one bit a feature; anything else byte
  for byte) and found in an open-addressing hash table by a compiled kernel, with the
  full key compared on every match, so two different inputs never share an answer. No
  Python runs per row.
- :class:`CachedValueFn`: ``obs float32[N, *obs_shape] -> float32[N]`` around any such
  value function (AVI's one-step lookahead, ``inference.network.ValueFunction``);
- :class:`CachedEvaluator`: ``states -> (logits [N, A], values [N])`` around a search
  evaluator (``search.evaluators``), keyed by ``key(states)``, the game's encoding by
  default: exact for every network evaluator, whose answer is a function of the encoding.

Both clear the table when the wrapped function's ``version`` attribute changes (a new
weight version), so a stale answer is never returned; a function without ``version`` is
taken to be fixed.

Memory is bounded: at most ``max_entries`` answers (by default as many as fit in
``max_bytes``). When a call would take the table past that it is emptied first (a
generation flush: no per-entry bookkeeping, and the call itself is still deduplicated).

Exactness: every answer is the wrapped function's answer for exactly that input. A
network's answer can still differ from the uncached run in the last bit, because the
batch it was computed in differs (CPU matrix kernels block the batch axis, and a row's
rounding depends on its block: measured at most 1e-7, in a few rows of a thousand, for
the preset MLPs and conv towers; the uncached network has the same dependence on batch
composition). A batch-invariant function gives bitwise the same answers with or without
the cache (tests/search/test_cache.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from games import Game, take
from games.base import State, batch_size

# How a network's callers use the cache: "off" (every input evaluated), "batch" (each
# distinct input once per call) or "cache" (once per weight version, across calls).
EVAL_CACHE_MODES = ("off", "batch", "cache")

_BITS, _BYTES = np.uint64(1), np.uint64(2)  # key kinds, the first word of every key


def row_keys(x: np.ndarray) -> np.ndarray:
    """uint64[N, W] keys of the rows of ``x`` [N, ...]: equal rows, equal keys, and the
    converse. Word 0 tags the kind: 1 for rows all 0 or 1 (packed to a bit each), 2 for
    the raw bytes of anything else."""
    n = len(x)
    flat = np.ascontiguousarray(x).reshape(n, -1)
    binary = flat.dtype == np.bool_ or bool(np.all((flat == 0) | (flat == 1)))
    raw = np.packbits(flat != 0, axis=1) if binary else flat.view(np.uint8).reshape(n, -1)
    body = np.zeros((n, 8 * -(-raw.shape[1] // 8)), np.uint8)  # padded to whole words
    body[:, :raw.shape[1]] = raw
    keys = np.empty((n, 1 + body.shape[1] // 8), np.uint64)
    keys[:, 0] = _BITS if binary else _BYTES
    keys[:, 1:] = body.view(np.uint64)
    return keys


@njit(cache=True)
def _smallest(keys):
    """[N, W] the lexicographically smallest of each row's images ``keys`` [S, N, W]."""
    s_count, n, w = keys.shape
    out = np.empty((n, w), np.uint64)
    for i in range(n):
        best = 0
        for s in range(1, s_count):
            for j in range(w):
                a, b = keys[s, i, j], keys[best, i, j]
                if a != b:
                    if a < b:
                        best = s
                    break
        out[i] = keys[best, i]
    return out


def canonical_keys(x: np.ndarray, images) -> np.ndarray:
    """Keys of the rows of ``x`` equal for the images of a row under ``images`` (a list
    of ``obs -> obs`` maps, a symmetry group with the identity included): the smallest
    of the images' :func:`row_keys`."""
    return _smallest(np.stack([row_keys(image(x)) for image in images]))


@njit(cache=True)
def _probe(slots, entry_keys, size, keys):
    """Find or add every row of ``keys`` [N, W] in the table (``slots`` [C] of entry
    indices, -1 empty; ``entry_keys`` [E, W]; ``size`` entries in use). Returns each row's
    entry [N], the rows that made a new entry, in order [M], and the new size; the new
    entries are ``size .. size + M - 1`` in that order."""
    n, w = keys.shape
    mask = slots.shape[0] - 1
    entry = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        h = np.uint64(0xCBF29CE484222325)
        for j in range(w):
            h = (h ^ keys[i, j]) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
        h = (h ^ (h >> np.uint64(33))) * np.uint64(0xFF51AFD7ED558CCD)  # finaliser: mix the high
        h ^= h >> np.uint64(33)  # bits into the low ones that pick the slot
        s = np.int64(h & np.uint64(mask))
        while True:
            e = slots[s]
            if e < 0:  # empty: a new entry
                e = size
                size += 1
                slots[s] = e
                entry_keys[e] = keys[i]
                first[m] = i
                m += 1
                break
            same = True
            for j in range(w):
                if entry_keys[e, j] != keys[i, j]:
                    same = False
                    break
            if same:
                break
            s = (s + 1) & mask
        entry[i] = e
    return entry, first[:m], size


class EvaluationCache:
    """A bounded table from row keys to answers ``float32[D]``, with hit counters.

    ``lookup(keys, compute)``: the answers [N, D] for ``keys`` [N, W] (``row_keys``),
    calling ``compute(rows) -> float32[M, D]`` once, on the rows whose key is neither in
    the table nor earlier in the call (``rows`` are indices into the call's N).
    ``persist=False`` forgets the answers after each call: deduplication only."""

    def __init__(self, *, max_entries: int | None = None, max_bytes: int = 32 << 20, persist: bool = True):
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"EvaluationCache: max_entries must be >= 1, got {max_entries}")
        if max_bytes < 1:
            raise ValueError(f"EvaluationCache: max_bytes must be >= 1, got {max_bytes}")
        self.max_entries_arg, self.max_bytes, self.persist = max_entries, int(max_bytes), persist
        self.max_entries = 0  # set with the table, on the first call (it needs W and D)
        self.slots = self.keys = self.answers = None
        self.size = 0
        self.lookups = 0  # rows asked for
        self.evaluated = 0  # rows sent to compute
        self.hits_batch = 0  # rows answered by an earlier row of the same call
        self.hits_cache = 0  # rows answered from an earlier call
        self.flushes = 0  # times the table was emptied because it was full

    @property
    def hit_rate(self) -> float:
        """Fraction of the rows asked for that were not evaluated."""
        return 1.0 - self.evaluated / self.lookups if self.lookups else 0.0

    def stats(self) -> dict:
        return {"lookups": self.lookups, "evaluated": self.evaluated, "hits_batch": self.hits_batch,
                "hits_cache": self.hits_cache, "hit_rate": self.hit_rate, "entries": self.size,
                "flushes": self.flushes, "nbytes": self.nbytes}

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.slots, self.keys, self.answers) if a is not None)

    def clear(self) -> None:
        if self.slots is not None:
            self.slots.fill(-1)
        self.size = 0

    def _build(self, width: int, depth: int, cap: int | None = None) -> None:
        entry_bytes = 8 * width + 4 * depth + 16  # key, answer, about 4 slots of the table
        cap = cap or self.max_entries_arg or max(1, self.max_bytes // entry_bytes)
        self.max_entries = int(cap)
        # A power of two at least twice the entries: the load stays at most one half.
        self.slots = np.full(1 << int(2 * cap - 1).bit_length(), -1, np.int32)
        self.keys = np.zeros((cap, width), np.uint64)
        self.answers = np.zeros((cap, depth), np.float32)
        self.size = 0

    def lookup(self, keys: np.ndarray, compute: Callable[[np.ndarray], np.ndarray], depth: int) -> np.ndarray:
        n, width = keys.shape
        if not self.persist:  # a table the size of the call, deduplication only
            self._build(width, depth, cap=max(n, 1))
        elif self.keys is None or self.keys.shape[1] != width or self.answers.shape[1] != depth:
            self._build(width, depth)
        out = np.empty((n, depth), np.float32)
        for start in range(0, n, self.max_entries):  # a call larger than the table: in parts
            part = keys[start:start + self.max_entries]
            if self.size + len(part) > self.max_entries:
                self.flushes += self.size > 0
                self.clear()
            before = self.size
            entry, first, self.size = _probe(self.slots, self.keys, before, part)
            if len(first):
                answers = np.asarray(compute(first + start), np.float32).reshape(len(first), depth)
                self.answers[before:self.size] = answers
            out[start:start + len(part)] = self.answers[entry]
            self.lookups += len(part)
            self.evaluated += len(first)
            self.hits_cache += int((entry < before).sum())
            self.hits_batch += len(part) - len(first) - int((entry < before).sum())
        return out

    def check_version(self, version) -> None:
        """Empty the table when ``version`` differs from the one of its answers."""
        if version != getattr(self, "_version", None):
            self.clear()
            self._version = version


class _Wrapper:
    """Attributes not found on a wrapper are those of the function it wraps (``_inner``
    names it): ``samples_forward``, ``set_weights``, ``version``, ..."""

    _inner = ""

    def __getattr__(self, name):  # only for names not found on the wrapper itself
        inner = self.__dict__.get(self._inner)
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)


class CachedValueFn(_Wrapper):
    """``value_fn`` (``obs float32[N, *obs_shape] -> float32[N]``) with each distinct
    encoding of a call evaluated once, and, with ``persist``, answers kept across calls
    until ``value_fn.version`` changes. Other attributes are the wrapped function's
    (``samples_forward``, ``set_weights``, ...).

    ``symmetries``: maps of the encoding (``Symmetry.obs`` of the game's group, identity
    included) under which ``value_fn`` is invariant, as a symmetrized network is (it
    averages its images): the images of a position then share one entry, so a position
    met after its mirror image is a hit. Not for a function that is not invariant: it
    would answer a position with its image's value."""

    _inner = "value_fn"

    def __init__(self, value_fn: Callable[[np.ndarray], np.ndarray], *, persist: bool = True,
                 max_entries: int | None = None, max_bytes: int = 32 << 20, symmetries=None):
        self.value_fn = value_fn
        self.images = list(symmetries) if symmetries is not None and len(symmetries) > 1 else None
        self.cache = EvaluationCache(max_entries=max_entries, max_bytes=max_bytes, persist=persist)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        self.cache.check_version(getattr(self.value_fn, "version", None))
        if len(obs) == 0:
            return np.asarray(self.value_fn(obs), np.float32)
        keys = row_keys(obs) if self.images is None else canonical_keys(obs, self.images)
        out = self.cache.lookup(keys, lambda rows: self.value_fn(obs[rows]), depth=1)
        return out[:, 0]


class CachedEvaluator(_Wrapper):
    """A search evaluator (``states -> (logits float32[N, A], values float32[N])``) with
    each distinct ``key(states)`` row of a call evaluated once, and, with ``persist``,
    answers kept across calls until ``evaluate.version`` changes. ``key`` defaults to
    ``game.encode``: exact for evaluators whose answer is a function of the encoding
    (every network evaluator); for one that reads more of the state, pass
    ``key=lambda s: np.concatenate([np.asarray(f).reshape(len(f), -1).view(np.uint8) ...])``
    or similar. An evaluator that draws random numbers (``RolloutEvaluator``) gives other
    draws when fewer states reach it."""

    _inner = "evaluate"

    def __init__(self, game: Game, evaluate, *, key: Callable[[State], np.ndarray] | None = None,
                 persist: bool = True, max_entries: int | None = None, max_bytes: int = 32 << 20):
        self.game, self.evaluate = game, evaluate
        self.key = key if key is not None else game.encode
        self.cache = EvaluationCache(max_entries=max_entries, max_bytes=max_bytes, persist=persist)

    def __call__(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        self.cache.check_version(getattr(self.evaluate, "version", None))
        A = self.game.num_actions

        def compute(rows):
            logits, values = self.evaluate(take(states, rows))
            return np.concatenate([np.asarray(logits, np.float32).reshape(len(rows), A),
                                   np.asarray(values, np.float32).reshape(len(rows), 1)], axis=1)

        if batch_size(states) == 0:
            return self.evaluate(states)
        out = self.cache.lookup(row_keys(np.asarray(self.key(states))), compute, depth=A + 1)
        return out[:, :A], out[:, A]
