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
  that requests from many callers are in flight at once) around a ``ValueFunction`` per
  weight version in flight (the asynchronous schedule's actors lag by up to
  ``max_policy_lag`` versions, and each is answered by the weights it froze);
- :class:`InferenceClient`: a value function ``obs -> values`` for ``AviCollector``
  that calls the actor; ``set_weights`` hands a new version to the server once, and
  again to a server that restarted without it.

The launcher starts ``inference_servers`` of them (``launch/train.py``; a GPU each where
the cluster has them beside the learner's) and gives self-play actor ``i`` server
``i % inference_servers``. The compute proxy counts evaluations run: each request is
answered with its share of its batch's network work, which its actor reports.

The client side imports no torch. Inputs travel as uint8 when that is lossless (every
game's encoding is binary), a quarter of the bytes of float32.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import ray

from actors.config import SelfPlayConfig
from inference.game_network import GameNetwork
from inference.machine import THREADED_RUNTIME_ENV
from lifecycle import TASK_EVENTS, watched
from search.cache import CachedValueFn


class BatchingServer:
    """``await evaluate(obs)`` -> ``value_fn`` of ``obs``, with the requests that wait
    together evaluated in one call of ``value_fn`` (see the module docstring)."""

    def __init__(self, value_fn: Callable[[np.ndarray], np.ndarray], *, min_requests: int = 1,
                 max_wait_s: float = 0.0, work: Callable[[], tuple[int, ...]] | None = None):
        """``work``: counters of what ``value_fn`` ran (e.g. inputs evaluated, samples
        forward), read around each batch: :meth:`evaluate_counted` answers each request with
        its share of the batch's increase, in proportion to its rows (the shares of a batch
        add up to its increase exactly)."""
        if min_requests < 1:
            raise ValueError(f"BatchingServer: min_requests must be >= 1, got {min_requests}")
        if max_wait_s < 0:
            raise ValueError(f"BatchingServer: max_wait_s must be >= 0, got {max_wait_s}")
        self.value_fn, self.min_requests, self.max_wait_s = value_fn, int(min_requests), float(max_wait_s)
        self.work = work if work is not None else (lambda: ())
        self.waiting: list[tuple[np.ndarray, asyncio.Future]] = []
        self.scheduled: asyncio.Handle | None = None  # the next batch's run, once planned
        self.batches = self.requests = self.rows = self.max_requests_per_batch = 0

    async def evaluate(self, obs: np.ndarray) -> np.ndarray:
        return (await self.evaluate_counted(obs))[0]

    async def evaluate_counted(self, obs: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
        """``(values, share)``: ``value_fn`` of ``obs``, and this request's share of each
        ``work`` counter's increase over its batch."""
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
        before = np.asarray(self.work(), np.int64)
        try:
            values = np.asarray(self.value_fn(np.concatenate([obs for obs, _ in batch])), np.float32)
        except Exception as error:  # every caller of the batch gets the error
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        ends = np.cumsum(sizes)
        spent = np.asarray(self.work(), np.int64) - before
        # Shares in proportion to rows, rounded on the running sum so that they add up.
        cut = np.rint(np.outer(ends, spent) / max(int(ends[-1]), 1)).astype(np.int64)
        shares = np.diff(np.vstack([np.zeros((1, len(spent)), np.int64), cut]), axis=0)
        for (_, future), end, size, share in zip(batch, ends, sizes, shares):
            if not future.done():
                future.set_result((values[end - size:end], tuple(int(x) for x in share)))
        self.batches += 1
        self.requests += len(batch)
        self.rows += int(ends[-1])
        self.max_requests_per_batch = max(self.max_requests_per_batch, len(batch))

    def stats(self) -> dict:
        return {"batches": self.batches, "requests": self.requests, "rows": self.rows,
                "max_requests_per_batch": self.max_requests_per_batch,
                "mean_rows_per_batch": self.rows / self.batches if self.batches else 0.0}


class InferenceWorker:
    """The server's process: ``ValueFunction``s of a game's network (its
    :class:`GameNetwork`) on ``device``, one per weight version held, each behind the
    evaluation cache (``eval_cache``: ``"off"``, ``"batch"`` or ``"cache"``) and a
    :class:`BatchingServer`.

    It holds the newest ``versions`` weight versions: in the asynchronous schedule actors
    collect with versions up to ``max_policy_lag`` apart, and each must be answered by the
    weights it froze, not by the newest. A request names its version; one the server does
    not hold (a version evicted, or every version after a restart) is answered ``None``,
    and the client sends those weights and asks again."""

    def __init__(self, *, game_network: GameNetwork, algo, config: SelfPlayConfig = SelfPlayConfig(),
                 versions: int = 1, min_requests: int = 1, max_wait_s: float = 0.0):
        """``game_network``: the game and the network it serves (the run's,
        ``TrainConfig.game_network``); ``algo``: the ``AlgorithmDescriptor`` of
        the actors it serves, whose ``eval_cache`` default ``auto`` takes; ``config``: their self-play settings (its
        device ``inference_device``, resolved by the run, ``auto`` here being the CPU;
        ``threads``, ``eval_cache``, ``inference_dtype``)."""
        eval_cache = config.resolved_cache(algo)
        if versions < 1:
            raise ValueError(f"InferenceWorker: versions must be >= 1, got {versions}")
        # torch only here, in the server's process: its clients' processes need not load it.
        import torch

        torch.set_num_threads(config.torch_threads)
        self.game = game_network.make_game()
        device = "cpu" if config.inference_device == "auto" else config.inference_device
        self.network, self.device, self.eval_cache = game_network.network, device, eval_cache
        self.inference_dtype, self.max_versions = config.inference_dtype, int(versions)
        self.batching = dict(min_requests=min_requests, max_wait_s=max_wait_s)
        # A symmetrized network values a position and its images alike: one cache entry.
        self.images = [s.obs for s in self.game.symmetries()] if self.network.symmetrize else None
        self.held: OrderedDict[int, _Version] = OrderedDict()  # version -> its network, oldest first
        self.totals = {"batches": 0, "requests": 0, "rows": 0, "evaluated": 0, "samples_forward": 0,
                       "max_requests_per_batch": 0}  # of evicted versions

    def _new_version(self, weights: dict[str, np.ndarray], version: int) -> None:
        from inference.network import ValueFunction

        net = ValueFunction(self.game, self.network, device=self.device, inference_dtype=self.inference_dtype)
        net.set_weights(weights, version)
        fn = net if self.eval_cache == "off" else CachedValueFn(net, persist=self.eval_cache == "cache",
                                                                 symmetries=self.images)
        cache = getattr(fn, "cache", None)
        # What each request cost: inputs the network ran (repeats excluded) and samples forward.
        work = lambda: (cache.evaluated if cache is not None else net.samples_forward // net.cost,  # noqa: E731
                        net.samples_forward)
        self.held[version] = _Version(net, fn, BatchingServer(fn, work=work, **self.batching))
        while len(self.held) > self.max_versions:
            _, old = self.held.popitem(last=False)
            self._retire(old)

    def _retire(self, old: _Version) -> None:
        s, t = old.server.stats(), self.totals
        for k in ("batches", "requests", "rows"):
            t[k] += s[k]
        t["evaluated"] += old.work()[0]
        t["samples_forward"] += old.net.samples_forward
        t["max_requests_per_batch"] = max(t["max_requests_per_batch"], s["max_requests_per_batch"])

    def set_weights(self, weights, version: int) -> int:
        """Hold ``version`` (``weights``: a dict of arrays, or ``[ObjectRef]`` of one, fetched
        only when the version is new here); returns the newest version held. A version older
        than every held one, when the server is full, is not taken."""
        version = int(version)
        if version not in self.held and (len(self.held) < self.max_versions or version > min(self.held)):
            if isinstance(weights, list):
                weights = ray.get(weights[0])
            self._new_version(weights, version)
        return max(self.held)

    async def evaluate(self, obs: np.ndarray, version: int | None = None) -> np.ndarray:
        """float32[N] values of ``obs`` [N, *obs_shape] (uint8 or float32) by ``version``
        (None: the newest held)."""
        answer = await self.evaluate_counted(obs, max(self.held) if version is None else version)
        if answer is None:
            raise KeyError(f"InferenceWorker: weight version {version} is not held (held: {list(self.held)})")
        return answer[0]

    async def evaluate_counted(self, obs: np.ndarray, version: int):
        """``(values float32[N], inputs run, samples forward)``: the values of ``obs`` by the
        weights of ``version`` and this request's share of its batch's network work; or None
        when the server does not hold ``version``."""
        held = self.held.get(int(version))
        if held is None:
            return None
        # uint8 (as clients send it) goes to the network as is: converted on its device.
        obs = obs if obs.dtype == np.uint8 else np.asarray(obs, np.float32)
        values, (evaluated, forward) = await held.server.evaluate_counted(obs)
        return values, int(evaluated), int(forward)

    def stats(self) -> dict:
        """Batches, requests, rows asked and inputs run over every version the server held,
        with the newest version and its cache's counters."""
        out = dict(self.totals)
        for held in self.held.values():
            s = held.server.stats()
            for k in ("batches", "requests", "rows"):
                out[k] += s[k]
            out["evaluated"] += held.work()[0]
            out["samples_forward"] += held.net.samples_forward
            out["max_requests_per_batch"] = max(out["max_requests_per_batch"], s["max_requests_per_batch"])
        out["mean_rows_per_batch"] = out["rows"] / out["batches"] if out["batches"] else 0.0
        newest = self.held[max(self.held)] if self.held else None
        cache = getattr(newest.fn, "cache", None) if newest is not None else None
        return {**out, "version": max(self.held) if self.held else None, "versions_held": list(self.held),
                "cache": cache.stats() if cache is not None else None}


class _Version(NamedTuple):
    net: object  # the ValueFunction, for its samples_forward
    fn: Callable[[np.ndarray], np.ndarray]  # what answers: net, or net behind its cache
    server: BatchingServer

    def work(self) -> tuple[int, int]:
        return self.server.work()


InferenceActor = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1, enable_task_events=TASK_EVENTS,
                            runtime_env=THREADED_RUNTIME_ENV)(watched(InferenceWorker))


class ClientCounts:
    """A client's evaluation counts, named as ``search.cache.EvaluationCache``'s so that the
    self-play actor reports them the same way: inputs asked, and those the network ran for
    this client (its share of each batch; repeats answered by the server's cache are not run)."""

    def __init__(self):
        self.lookups = self.evaluated = 0


class InferenceClient:
    """A value function ``obs float32[N, *obs_shape] -> float32[N]`` answered by an
    :data:`InferenceActor`, for ``AviCollector``.

    ``samples_forward`` counts this client's share of the network work the server ran for
    it, so that the compute proxy counts evaluations run, as with a local network. A new
    version is announced to the server once (as the object reference: the server fetches
    the weights only when it does not hold that version), and again when the server answers
    that it does not hold it (it restarted, or evicted it)."""

    takes_weight_refs = True  # set_weights takes [ObjectRef]: SelfPlayWorker need not fetch the weights

    def __init__(self, server):
        self.server = server
        self.version: int | None = None
        self.weights = None  # what set_weights was given, to send again to a server that lost it
        self.samples_forward = 0
        self.cache = ClientCounts()

    def set_weights(self, weights, version: int) -> None:
        """``weights``: ``[ObjectRef]`` of the weight dict (or the dict itself)."""
        if version != self.version:
            self.weights, self.version = weights, int(version)
            ray.get(self.server.set_weights.remote(weights, self.version))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.version is None:
            raise RuntimeError("InferenceClient called before set_weights")
        small = obs.astype(np.uint8)
        if np.array_equal(small, obs):  # lossless: a quarter of the bytes
            obs = small
        for _ in range(3):
            answer = ray.get(self.server.evaluate_counted.remote(obs, self.version))
            if answer is not None:
                values, evaluated, forward = answer
                self.cache.lookups += len(obs)
                self.cache.evaluated += evaluated
                self.samples_forward += forward
                return values
            ray.get(self.server.set_weights.remote(self.weights, self.version))  # a restarted server
        raise RuntimeError(f"InferenceClient: the server keeps refusing weight version {self.version}: "
                           f"it holds newer versions only (more than its 'versions' apart?)")
