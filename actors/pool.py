"""The self-play actor pool on Ray: thin actors around the collector of the run's
algorithm (its descriptor's, built by ``actors.collectors``: :class:`AviCollector` for
AVI, :class:`AlphaZeroCollector` for AlphaZero and AZAL).

Each actor owns ``num_envs`` environments and a CPU copy of the network (or, with an
inference server, AVI only, a client of the shared network: ``actors/inference_server.py``). It
takes new weights only at the start of a collection call (the paper's frozen
parameters during collection), pushes its rows straight into its replay shard and
returns a small :class:`CollectStats` record. Actors restart when their process or node dies
(``max_restarts=-1``) and the interrupted call is retried, so a run goes on; the first
call of a restarted actor says so (``restarted``), for the launcher's fault metrics.
A restarted actor starts its environments afresh (its state is not restored).
Rows go in with ``ReplayService.put``, which sends them again while their shard
restarts, so a shard crash costs no rows of the call in flight.

The weights are frozen during a call, so the actor's network sees each distinct input
once (``eval_cache``, ``search.cache``): ``"cache"`` deduplicates every network call and
keeps the answers until the weight version changes, ``"batch"`` only deduplicates within
a call, ``"off"`` evaluates everything. The default is ``"cache"`` for AVI (about half of
Connect Four's children are repeats; docs/benchmarks.md) and ``"off"`` for AlphaZero and
AZAL, where about a third of the leaves repeat but the speed-up is not shown
(``SelfPlayConfig.eval_cache``). The answers are the network's own;
``forward_samples`` counts the evaluations actually run.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import ray
import torch

from actors.collectors import CollectorSetup
from actors.config import SelfPlayConfig
from actors.labels import LabelStats
from inference.game_network import GameNetwork
from inference.machine import THREADED_RUNTIME_ENV
from learner.weights import WeightVersion
from lifecycle import TASK_EVENTS, was_restarted, watched
from replay.rows import AUX_POLICY
from replay.service import Stored

if TYPE_CHECKING:  # the descriptor is handed over; actors/ looks no algorithm up
    from algorithms.descriptors import AlgorithmDescriptor


@dataclass(frozen=True)
class CollectStats:
    """What one collection call of one actor did: the counts of this call only (an actor
    that restarts starts its totals again)."""

    index: int  # the actor's
    rows: int  # rows sent to the replay
    positions: int  # environment steps played
    version: int  # of the weights it collected with
    games_finished: int
    seconds: float  # the call's own time, from taking the weights to the last row stored
    forward_samples: int  # network evaluations, symmetric images included (compute proxy)
    timings: dict[str, float]  # seconds per part of the collector's loop, and "transport" to the replay
    target_mean: float  # of the rows' value targets (0 without rows)
    target_std: float
    # Fault accounting: a restart of this actor, failed sends to a restarting shard, and
    # that shard's total_added and incarnation once it took these rows (shard -1: no rows).
    restarted: bool  # the first call of a process Ray restarted (the time it lost is in this call)
    replay_add_failures: int
    replay_shard: int
    replay_total_added: int
    replay_incarnation: str
    labels: LabelStats | None = None  # AZAL: this call's oracle queries
    labelled_rows: int = 0  # AZAL: rows with an oracle target
    # The evaluation cache (eval_cache): inputs asked of the network, and those it ran
    # (the others were repeats within a call or answered from an earlier one); 0 when off.
    cache_lookups: int = 0
    cache_evaluated: int = 0
    actor_incarnation: str = ""  # new at each start of this actor's process (restarts counted once)


class SelfPlayWorker:
    """The plain logic of one actor: environments, a value function, the replay target."""

    def __init__(self, *, game_network: GameNetwork, config: SelfPlayConfig,
                 algo: AlgorithmDescriptor, seed: int,
                 index: int, replay, gamma: float = 1.0, oracle=None, oracle_store: str | None = None,
                 inference_server=None):
        """``game_network``: the game this actor plays and the network it plays with (the
        run's, ``TrainConfig.game_network``); ``config``: the run's self-play settings, whole
        (this actor plays ``config.envs_per_actor`` environments); ``algo``: the run's
        ``AlgorithmDescriptor``, its settings resolved (this process looks no algorithm up by
        name); ``gamma``: the one-step lookahead's discount;
        ``oracle`` (an ``OracleClient``) and ``oracle_store``: the labels of an algorithm that
        asks for them (AZAL's); ``inference_server``: an ``InferenceActor`` (values only: an
        algorithm whose descriptor allows it) that evaluates for this actor, which then holds
        no network (the server applies the cache and the inference path)."""
        described = algo
        if isinstance(described, str):
            raise TypeError(f"self-play: algo takes the algorithm's descriptor (algorithms.descriptor({described!r})), "
                            f"not its name")
        torch.set_num_threads(config.torch_threads)
        self.index, self.replay = index, replay
        self.game = game_network.make_game()
        if inference_server is not None and not described.inference_server:
            raise ValueError(f"self-play: an inference server answers values only; {described.name}'s "
                             f"collection needs more (an MCTS's priors)")
        setup = CollectorSetup(
            game=self.game, network=game_network.network, config=config, num_envs=config.envs_per_actor,
            seed=np.random.SeedSequence([seed, index]).generate_state(1)[0], gamma=gamma,
            eval_cache=config.resolved_cache(described), oracle=oracle, oracle_store=oracle_store,
            inference_server=inference_server, settings=described.settings)
        self.value_fn, self.collector = described.piece("collector")(setup)
        self.version = -1
        self.calls = 0  # rotates the replay shard this actor writes to
        self.incarnation = uuid.uuid4().hex[:12]
        self.is_restart = was_restarted()  # for good: Ray restarted this process (restart_incarnation)
        self.restart_unreported = self.is_restart  # until the next collect call reports it, with the time it lost

    def collect(self, weights: list[WeightVersion], steps: int, deadline: float | None = None) -> CollectStats:
        """``steps`` steps of every environment with the weights of ``weights[0]``
        (wrapped in a list so Ray hands over the reference, fetched only when new);
        fewer when the run's time budget ends at ``deadline``."""
        latest = weights[0]
        if latest.version != self.version:
            # An inference server's client hands the reference on: the server fetches it once.
            weights = [latest.ref] if getattr(self.value_fn, "takes_weight_refs", False) else ray.get(latest.ref)
            self.value_fn.set_weights(weights, latest.version)
            self.version = latest.version
        c = self.collector
        before = dict(c.timings)
        games_before, forward_before, positions_before = c.games_finished, self.value_fn.samples_forward, c.positions
        labeler = getattr(c, "labeler", None)
        labels_before = labeler.stats() if labeler is not None else None
        cache = getattr(self.value_fn, "cache", None)
        lookups_before, evaluated_before = (cache.lookups, cache.evaluated) if cache is not None else (0, 0)
        start = time.perf_counter()
        rows = c.collect(self.value_fn, steps, deadline)
        collected = time.perf_counter()
        n = len(rows["target"])
        rows["version"] = np.full(n, self.version, np.int64)
        stored, add_failures = Stored(written=0, size=0, total_added=0, incarnation=""), 0  # shard -1: no rows
        if n:  # AlphaZero's rows come only with finished games
            # Actor i writes to shards i, i+1, ... in turn: every shard fills, deterministically.
            stored, add_failures = self.replay.put(rows, shard=self.index + self.calls)
            self.calls += 1
        end = time.perf_counter()
        timings = {k: c.timings[k] - before[k] for k in before}
        timings["transport"] = end - collected
        out = CollectStats(
            index=self.index, rows=n, positions=c.positions - positions_before, version=self.version,
            games_finished=c.games_finished - games_before, seconds=end - start,
            forward_samples=self.value_fn.samples_forward - forward_before, timings=timings,
            target_mean=float(rows["target"].mean()) if n else 0.0,
            target_std=float(rows["target"].std()) if n else 0.0,
            restarted=self.restart_unreported, replay_add_failures=add_failures, replay_shard=stored.shard,
            replay_total_added=stored.total_added, replay_incarnation=stored.incarnation,
            labels=None if labeler is None else labeler.stats().since(labels_before),
            labelled_rows=int((rows[AUX_POLICY].sum(1) > 0).sum()) if labeler is not None else 0,
            cache_lookups=cache.lookups - lookups_before if cache is not None else 0,
            cache_evaluated=cache.evaluated - evaluated_before if cache is not None else 0,
            actor_incarnation=self.incarnation)
        self.restart_unreported = False
        return out

    def restart_incarnation(self) -> str | None:
        """This process's incarnation if Ray restarted it, else None. The run asks at each
        checkpoint, so that a restart no collect call reported (the actor died in the run's
        last calls) is counted too; the incarnation keeps it from being counted twice."""
        return self.incarnation if self.is_restart else None

    def get_state(self) -> dict:
        return {"collector": self.collector.get_state(), "calls": self.calls}

    def set_state(self, saved: dict) -> None:
        self.collector.set_state(saved["collector"])
        self.calls = int(saved["calls"])

    def ping(self) -> int:
        return self.index

    def node_id(self) -> str:
        """The Ray node this actor runs on (it changes when a restart moves it)."""
        return ray.get_runtime_context().get_node_id()


SelfPlayActor = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1, enable_task_events=TASK_EVENTS,
                           runtime_env=THREADED_RUNTIME_ENV)(watched(SelfPlayWorker))
