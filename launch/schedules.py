"""The two schedules of a training run, each a generator of one metrics record per
iteration over a started run: a :class:`ScheduleHost`, the part of the run they use
(``launch.train.Run`` is one, structurally; the schedules do not import it).

Synchronous (the AVI paper's Algorithm 1, the default): every actor collects
``N_envs x K`` rows with frozen weights; then the learner takes its gradient steps
(epochs per iteration = replay ratio) and new weights are published.

Asynchronous: actors collect all the time, each call with the newest weights, while the
learner trains in chunks of a quarter iteration whenever the :class:`RateLimiter`
allows.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Iterator, Protocol

import ray

from actors.pool import CollectStats
from launch.config import TrainConfig
from launch.faults import FaultLedger
from launch.records import RunCounters, collect_record
from launch.restarts import LearnerLink, RoleWatch, WaitExpired
from learner.weights import WeightVersion


class ScheduleHost(Protocol):
    """What a schedule drives and reads: a started run, its roles and its counters.

    The schedules call the self-play ``actors`` (``collect``) with the published
    ``weights``, train through ``link`` (the learner, restarts survived), wait for the
    actors' calls through ``watch`` (an actor away for good ends the run, not hangs it),
    count what they collect and train in ``counters``, enter each actor call's faults in ``faults``,
    and read ``config`` (actors.collect_steps, learner.batch_size, learner.epochs_per_iteration,
    updates_per_iteration, samples_per_insert, max_policy_lag). ``publish()`` makes the
    learner's newest weights ``weights`` (one version more); ``replay_record()`` is the
    replay's sizes for the record. ``launch.train.Run`` has all of them."""

    config: TrainConfig
    counters: RunCounters
    actors: list  # self-play actor handles (actors.pool.SelfPlayActor)
    weights: WeightVersion
    link: LearnerLink
    watch: RoleWatch  # bounds the waits for the actors' calls
    faults: FaultLedger

    def publish(self) -> None: ...

    def replay_record(self) -> dict: ...


@dataclass
class Budget:
    """Where a run stops: at ``updates`` gradient steps (the run's total), or at
    ``deadline`` (a ``time.time()``), which the run moves (``launch/run_budget.py``): past
    each evaluation under ``--train-minutes`` (:meth:`extend`), and to where the final
    evaluation, checkpoint and exit still fit under the wall clock of ``--minutes``."""

    updates: int | None
    deadline: float | None

    def extend(self, seconds: float) -> None:
        if self.deadline is not None:
            self.deadline += seconds

    def updates_left(self, done: int) -> int | None:
        return None if self.updates is None else self.updates - done

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    def spent(self, done: int) -> bool:
        left = self.updates_left(done)
        return (left is not None and left <= 0) or self.out_of_time()


class RateLimiter:
    """When the asynchronous learner may train its next ``chunk`` of updates: its gradient
    samples may not run ahead of ``samples_per_insert`` times the rows inserted, and it
    waits while some actor still collects with weights ``max_policy_lag`` versions old
    (so that no row is more than that far behind)."""

    def __init__(self, *, samples_per_insert: float, batch_size: int, max_policy_lag: int, chunk: int):
        self.samples_per_insert, self.batch_size = samples_per_insert, batch_size
        self.max_policy_lag, self.chunk = max_policy_lag, chunk

    def allows(self, *, rows: int, updates: int, version: int, oldest_version: int) -> bool:
        """``rows`` inserted and ``updates`` done so far; ``version`` of the newest weights,
        ``oldest_version`` of those an actor still collects with."""
        if rows < self.batch_size:
            return False  # AlphaZero: no full batch in the replay yet
        allowed = int(self.samples_per_insert * rows / self.batch_size) - updates
        return allowed >= self.chunk and version - oldest_version < self.max_policy_lag


def collect_all(run: ScheduleHost, steps: int, deadline: float | None) -> list[CollectStats]:
    """One collection call of every actor with the current weights; a call whose actor
    died is retried by Ray, and the time it waited is entered as lost. An actor away for
    longer than the run's watch allows ends the run (``WaitExpired``)."""
    start = time.time()
    calls = {a.collect.remote([run.weights], steps, deadline): a for a in run.actors}
    done_at = run.watch.each(calls, "the self-play actors' collection")
    refs = list(calls)
    stats = ray.get(refs)
    for ref, s in zip(refs, stats):
        run.faults.actor_call(s, done_at[ref] - start)
    run.counters.add_collected(stats)
    return stats


def synchronous(run: ScheduleHost, budget: Budget) -> Iterator[dict]:
    """Algorithm 1: collect with frozen weights, train on the new rows, publish; repeat.
    While a lost learner is waited for, the actors collect on with the weights they have
    (their rows go to the replay, and count in the run's totals)."""
    cfg, counters = run.config, run.counters
    while not budget.spent(counters.updates):
        start = time.time()
        stats = collect_all(run, cfg.actors.collect_steps, budget.deadline)  # frozen weights
        record = collect_record(stats)
        collected = time.time()
        if counters.rows < cfg.learner.batch_size:  # AlphaZero's rows arrive when games end
            counters.iteration += 1
            yield {**record, **run.replay_record(), "collect_seconds": collected - start}
            continue
        # Epochs per iteration over the positions played (fewer when time ran out).
        steps = max(1, round(cfg.learner.epochs_per_iteration * record["collect_positions"] / cfg.learner.batch_size))
        left = budget.updates_left(counters.updates)
        # Only around training: a checkpoint's calls must see no rows beyond its snapshot.
        run.link.meanwhile = lambda: collect_all(run, cfg.actors.collect_steps, budget.deadline)
        try:
            trained = run.link.call("train", steps if left is None else min(left, steps), counters.version,
                                    budget.deadline)
        finally:
            run.link.meanwhile = None
        steps = trained.counters.updates - counters.updates
        counters.take_learner(trained.counters)
        trained_at = time.time()
        run.publish()
        counters.iteration += 1
        yield {**record, **trained.metrics(), **run.replay_record(), "collect_seconds": collected - start,
               "train_seconds": trained_at - collected,
               # Every row of an iteration comes from the weights published before it.
               "policy_lag": max(counters.version - 1 - s.version for s in stats),
               "updates_per_s": steps / max(trained_at - collected, 1e-9)}


def asynchronous(run: ScheduleHost, budget: Budget) -> Iterator[dict]:
    """Every actor always has a collection call in flight; whenever the rate limiter allows,
    the learner trains a chunk, after which new weights are published and a record yielded.
    While a lost learner is waited for, the actors' calls are taken and made again."""
    cfg, counters = run.config, run.counters
    steps = max(1, cfg.actors.collect_steps // 4)  # shorter calls: fresher weights per call
    chunk = max(1, cfg.updates_per_iteration // 4)
    limiter = RateLimiter(samples_per_insert=cfg.samples_per_insert, batch_size=cfg.learner.batch_size,
                          max_policy_lag=cfg.max_policy_lag, chunk=chunk)
    pending = {}  # collection call -> (its actor, the weight version it took, when it was submitted)

    def submit(actor) -> None:
        pending[actor.collect.remote([run.weights], steps, budget.deadline)] = (actor, run.weights.version,
                                                                                 time.time())

    since, lag_max, limited = [], 0, 0.0  # collection calls, policy lag and seconds held since the last chunk

    def take(ref) -> None:
        """A finished collection call: its rows counted, its actor given the next one."""
        nonlocal lag_max
        actor, _, submitted = pending.pop(ref)
        stats = ray.get(ref)
        run.faults.actor_call(stats, time.time() - submitted)
        counters.add_collected([stats])
        since.append(stats)
        lag_max = max(lag_max, counters.version - stats.version)
        submit(actor)

    def collect_on() -> None:
        """While a lost learner is waited for: the finished collections taken, the actors kept busy."""
        for ref in ray.wait(list(pending), num_returns=len(pending), timeout=1.0)[0]:
            take(ref)

    for actor in run.actors:
        submit(actor)
    training = None  # the learner's chunk in flight
    try:
        while True:
            left = budget.updates_left(counters.updates)
            if (left is not None and left <= 0 and training is None) or budget.out_of_time():
                return
            oldest = min(version for _, version, _ in pending.values())
            if training is None and (left is None or left > 0) and limiter.allows(
                    rows=counters.rows, updates=counters.updates, version=counters.version, oldest_version=oldest):
                training = run.link.learner.train.remote(chunk if left is None else min(chunk, left),
                                                         counters.version, budget.deadline)
            waited = time.perf_counter()
            calls = {ref: actor for ref, (actor, _, _) in pending.items()}
            if training is not None:  # its failure is the link's to wait out; its actor away, the watch's
                calls[training] = run.link.learner
            ready = [run.watch.first(calls, "the self-play actors and the learner")]
            if training is None:
                limited += time.perf_counter() - waited  # the learner idles: held by the limiter
            if ready[0] is training:
                training = None
                # Actors kept collecting meanwhile: a restart loses no seconds here.
                run.link.meanwhile = collect_on
                try:
                    trained = run.link.answer(ready[0], "train", None)
                finally:
                    run.link.meanwhile = None
                if trained is None:
                    continue  # the chunk died with its learner: the limiter issues it again
                counters.take_learner(trained.counters)
                run.publish()
                counters.iteration += 1
                record = {**(collect_record(since) if since else {}), **trained.metrics(), **run.replay_record(),
                          "policy_lag": lag_max, "rate_limited_seconds": limited}
                since, lag_max, limited = [], 0, 0.0
                yield record
                continue
            take(ready[0])
    finally:
        _wait_in_flight(run, {ref: actor for ref, (actor, _, _) in pending.items()}, training)


def _wait_in_flight(run: ScheduleHost, calls: dict, training) -> None:
    """Wait for the calls in flight at the asynchronous schedule's end (their failures, if
    any, no longer matter), within the watch's bound: an actor away for good is left, and
    said so."""
    if training is not None:
        calls[training] = run.link.learner
    try:
        run.watch.each(calls, "the calls in flight at the schedule's end")
    except WaitExpired as err:
        print(f"left unfinished: {err}", file=sys.stderr, flush=True)


SCHEDULES = {"sync": synchronous, "async": asynchronous}
