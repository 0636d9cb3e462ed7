"""A batched inference actor: one network, on one GPU (or the CPU), serving the
evaluations of many self-play actors, in the manner of SEED RL and KataGo.

Each self-play actor sends the network inputs of its step (``obs`` of every child, for
AVI) to the server instead of evaluating them itself, and waits for the answer. The
server gathers the requests that arrive together into one batch, runs ONE network call
over all of them and answers each request with its rows. A GPU node's actors so share
one large batch, and the network's weights are held once per node instead of once per
actor. The batch is deduplicated and its answers cached until the weights change
(``search.cache``): the same opening positions of all the actors cost one evaluation.

Batching rule (:class:`BatchingServer`): a batch runs as soon as ``min_requests``
requests wait, or ``max_wait_s`` after the first waiting request came in, whichever is
first; every request that arrived while the previous batch ran joins the next one, so
under load batches grow by themselves. A request is never split. With the defaults
(``min_requests=1``, ``max_wait_s=0``) nothing waits on purpose.

- :class:`BatchingServer`: the plain logic, on an asyncio loop (testable without Ray);
- :class:`InferenceWorker` / :data:`InferenceActor`: the Ray actor (an async actor, so
  that requests from many callers are in flight at once) around a ``ValueFunction``;
- :class:`InferenceClient`: a value function ``obs -> values`` for ``AviCollector``
  that calls the actor; ``set_weights`` hands a new version to the server once.

The client side imports no torch. Inputs travel as uint8 when that is lossless (every
game's encoding is binary), a quarter of the bytes of float32.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import ray

import games
from search.cache import EVAL_CACHE_MODES, CachedValueFn


class BatchingServer:
    """``await evaluate(obs)`` -> ``value_fn`` of ``obs``, with the requests that wait
    together evaluated in one call of ``value_fn`` (see the module docstring)."""

    def __init__(self, value_fn: Callable[[np.ndarray], np.ndarray], *, min_requests: int = 1,
                 max_wait_s: float = 0.0):
        if min_requests < 1:
            raise ValueError(f"BatchingServer: min_requests must be >= 1, got {min_requests}")
        if max_wait_s < 0:
            raise ValueError(f"BatchingServer: max_wait_s must be >= 0, got {max_wait_s}")
        self.value_fn, self.min_requests, self.max_wait_s = value_fn, int(min_requests), float(max_wait_s)
        self.waiting: list[tuple[np.ndarray, asyncio.Future]] = []
        self.scheduled: asyncio.Handle | None = None  # the next batch's run, once planned
        self.batches = self.requests = self.rows = self.max_requests_per_batch = 0

    async def evaluate(self, obs: np.ndarray) -> np.ndarray:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.waiting.append((obs, future))
        if len(self.waiting) >= self.min_requests:
            # Soon, not now: the requests already delivered to the loop join this batch.
            self._schedule(loop.call_soon(self._run))
        elif self.scheduled is None:
            self.scheduled = loop.call_later(self.max_wait_s, self._run)
        return await future

    def _schedule(self, handle: asyncio.Handle) -> None:
        if self.scheduled is not None:
            self.scheduled.cancel()
        self.scheduled = handle

    def _run(self) -> None:
        self.scheduled = None
        batch, self.waiting = self.waiting, []
        if not batch:
            return
        sizes = [len(obs) for obs, _ in batch]
        try:
            values = np.asarray(self.value_fn(np.concatenate([obs for obs, _ in batch])), np.float32)
        except Exception as error:  # every caller of the batch gets the error
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        ends = np.cumsum(sizes)
        for (_, future), end, size in zip(batch, ends, sizes):
            if not future.done():
                future.set_result(values[end - size:end])
        self.batches += 1
        self.requests += len(batch)
        self.rows += int(ends[-1])
        self.max_requests_per_batch = max(self.max_requests_per_batch, len(batch))

    def stats(self) -> dict:
        return {"batches": self.batches, "requests": self.requests, "rows": self.rows,
                "max_requests_per_batch": self.max_requests_per_batch,
                "mean_rows_per_batch": self.rows / self.batches if self.batches else 0.0}


class InferenceWorker:
    """The server's process: a ``ValueFunction`` of ``network`` for ``game`` on ``device``,
    behind the evaluation cache (``eval_cache``: ``"off"``, ``"batch"`` or ``"cache"``) and a
    :class:`BatchingServer`."""

    def __init__(self, *, game: str, game_params: dict, network, device: str = "cpu", threads: int = 1,
                 eval_cache: str = "cache", min_requests: int = 1, max_wait_s: float = 0.0):
        if eval_cache not in EVAL_CACHE_MODES:
            raise ValueError(f"InferenceWorker: unknown eval_cache {eval_cache!r}; known: {', '.join(EVAL_CACHE_MODES)}")
        # torch only here, in the server's process: its clients' processes need not load it.
        import torch

        from learner.learner import ValueFunction

        torch.set_num_threads(threads)
        self.game = games.make(game, **game_params)
        self.net = ValueFunction(self.game, network, device=device)
        fn = self.net if eval_cache == "off" else CachedValueFn(self.net, persist=eval_cache == "cache")
        self.value_fn = fn
        self.server = BatchingServer(fn, min_requests=min_requests, max_wait_s=max_wait_s)

    async def evaluate(self, obs: np.ndarray) -> np.ndarray:
        """float32[N] values of ``obs`` [N, *obs_shape] (uint8 or float32)."""
        return await self.server.evaluate(np.asarray(obs, np.float32))

    def set_weights(self, weights: dict[str, np.ndarray], version: int) -> int:
        """Take ``weights`` unless the server already has ``version`` or a newer one;
        returns the version in use."""
        if self.net.version is None or version > self.net.version:
            self.net.set_weights(weights, version)
        return self.net.version

    def stats(self) -> dict:
        cache = getattr(self.value_fn, "cache", None)
        return {**self.server.stats(), "samples_forward": self.net.samples_forward, "version": self.net.version,
                "cache": cache.stats() if cache is not None else None}


InferenceActor = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(InferenceWorker)


class InferenceClient:
    """A value function ``obs float32[N, *obs_shape] -> float32[N]`` answered by an
    :data:`InferenceActor`, for ``AviCollector``. It counts no ``samples_forward`` (the
    server does) and sends a new weight version to the server once."""

    def __init__(self, server):
        self.server = server
        self.version: int | None = None
        self.samples_forward = 0  # the server's work, not this process's

    def set_weights(self, weights: dict[str, np.ndarray], version: int) -> None:
        if version != self.version:
            ray.get(self.server.set_weights.remote(weights, version))
            self.version = int(version)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        small = obs.astype(np.uint8)
        if np.array_equal(small, obs):  # lossless: a quarter of the bytes
            obs = small
        return ray.get(self.server.evaluate.remote(obs))
