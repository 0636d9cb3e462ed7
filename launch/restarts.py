"""The driver's calls that survive a restart of the process they go to.

- The learner (``learner/actor.py``) restarts from its newest good checkpoint by
  itself. :class:`LearnerLink` asks its status beside every call, so it notices a
  restart that no call saw failing too; it then waits for the learner, makes its
  counters (the checkpoint's) the run's, enters the restart in the fault ledger and
  redoes the call, unless the answer came from the restored learner (a ``train`` reply
  names the incarnation that trained).
- A replay shard restarts from its snapshot: :func:`replay_call` asks again meanwhile.
- The calls to the other roles (the self-play actors' collections, the inference servers',
  the evaluator's) are waited for by a :class:`RoleWatch`: as long as their actors work on
  them, and no longer than the bound while an actor is away (restarting, or not placed).

Every wait here is bounded, and a wait that runs out raises :class:`WaitExpired`, whose
message names what was waited for and the setting that bounds it: the learner's first
answer and its answer after a restart wait ``learner.restart_wait_s`` (the learner may have
to wait for a node: a GPU node booting or replaced, its image pulled), and so does an actor
of another role away from the run (its node lost, a replacement booting); a replay shard
:data:`REPLAY_RESTART_S` (shards restart on the head, where the driver is).
"""

from __future__ import annotations

import sys
import time
from typing import Callable

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from launch.faults import FaultLedger
from launch.records import RunCounters
from learner.actor import LearnerStatus, TrainReply

REPLAY_RESTART_S = 180.0  # seconds to wait for a restarted replay shard (on the head) to answer
ASK_EVERY_S = 10.0  # how long one status request to the learner waits before it is asked again
REPORT_EVERY_S = 30.0  # how often a run waiting for its learner says so


class WaitExpired(RuntimeError):
    """A bounded wait ran out; the message names the wait and the setting to raise."""


def replay_call(call):
    """``call()`` (a replay service request), asked again while a shard restarts."""
    deadline = time.monotonic() + REPLAY_RESTART_S
    while True:
        try:
            return call()
        except RayActorError as error:
            if time.monotonic() > deadline:
                raise WaitExpired(f"a replay shard did not come back within {REPLAY_RESTART_S:g} s "
                                  f"(launch.restarts.REPLAY_RESTART_S): {error}") from error
            time.sleep(0.5)


def actor_state(actor) -> str:
    """Ray's state of ``actor`` (an actor handle): ALIVE, PENDING_CREATION (not yet placed,
    or still in its ``__init__``), RESTARTING or DEAD."""
    return ray._private.state.actors(actor._actor_id.hex())["State"]


class RoleWatch:
    """Waits for calls to the run's actors, bounded by how long an actor is away.

    A call is waited for as long as its actor is ALIVE and works on it (a collection's
    length is the run's to choose, not a wait's). An actor that is not ALIVE (restarting
    after its process or node died, or waiting for a node to be placed on) is waited for
    ``wait_s`` at most, counted from when it was first seen away and kept across calls;
    past that, :class:`WaitExpired` names the call, the actor and the setting. Every
    :data:`REPORT_EVERY_S` an actor is away, the run says so."""

    def __init__(self, wait_s: float, *, setting: str = "learner.restart_wait_s", ask_every_s: float = ASK_EVERY_S):
        self.wait_s, self.setting, self.ask_every_s = wait_s, setting, ask_every_s
        self._away_since: dict[str, float] = {}  # actor id -> when it was first seen away
        self._next_report = 0.0

    def first(self, calls: dict, what: str):
        """The first of ``calls`` (object ref -> the actor it waits on) to be ready."""
        while True:
            ready, _ = ray.wait(list(calls), num_returns=1, timeout=self.ask_every_s)
            if ready:
                return ready[0]
            self._check(calls.values(), what)

    def each(self, calls: dict, what: str) -> dict:
        """Every one of ``calls`` (object ref -> its actor) ready: ref -> when (``time.time()``)."""
        waiting, done_at = dict(calls), {}
        while waiting:
            ref = self.first(waiting, what)
            done_at[ref] = time.time()
            del waiting[ref]
        return done_at

    def get(self, calls: dict, what: str) -> list:
        """``ray.get`` of ``calls`` (object ref -> its actor), in their order, each waited for
        as :meth:`first` does."""
        self.each(calls, what)
        return ray.get(list(calls))

    def _check(self, actors, what: str) -> None:
        now, away = time.monotonic(), {}
        for actor in {a._actor_id.hex(): a for a in actors if a is not None}.values():
            key = actor._actor_id.hex()
            state = actor_state(actor)
            if state == "ALIVE":
                self._away_since.pop(key, None)
                continue
            since = self._away_since.setdefault(key, now)
            away[key] = state
            if now - since >= self.wait_s:
                name = actor._ray_actor_creation_function_descriptor.class_name
                raise WaitExpired(f"{what}: an actor ({name}) was {state} for {now - since:.0f} s, past "
                                  f"{self.setting}={self.wait_s:g} s (its node lost and not replaced, or no node "
                                  f"offers what it asks); raise {self.setting} where a node takes longer to join "
                                  f"(--set {self.setting}=SECONDS)")
        if away and now >= self._next_report:
            longest = max(now - self._away_since[k] for k in away)
            print(f"{what}: {len(away)} actor(s) away ({', '.join(sorted(set(away.values())))}) for up to "
                  f"{longest:.0f} of {self.wait_s:g} s ({self.setting})", file=sys.stderr, flush=True)
            self._next_report = now + REPORT_EVERY_S


class LearnerLink:
    """Calls to the learner actor ``learner`` that outlive its restarts, each wait for it
    bounded by ``wait_s`` (``learner.restart_wait_s``)."""

    def __init__(self, learner, counters: RunCounters, faults: FaultLedger, *, wait_s: float):
        self.learner, self.counters, self.faults, self.wait_s = learner, counters, faults, wait_s
        self.incarnation: str | None = None  # known once wait_started() returns
        # What the run does while it waits for a lost learner (the schedule's: the actors
        # collect on into the replay with the weights they have); None: nothing.
        self.meanwhile: Callable[[], None] | None = None

    def wait_started(self) -> None:
        """Wait for the learner's first answer: Ray places it once a node offers what it
        asks (on a cluster, a GPU node may still be booting), for at most ``wait_s``."""
        status = self._await_status("the learner did not start",
                                    "no node offered what it asks (the `learner` resource, its GPU), or it "
                                    "could not start there", None)
        self.incarnation = status.incarnation

    def call(self, method: str, *args):
        """``ray.get`` of a learner method that answers (not None), made again until an
        answer stands."""
        while True:
            start = time.time()
            result = self.answer(getattr(self.learner, method).remote(*args), method, start)
            if result is not None:
                return result

    def answer(self, ref, method: str, start: float | None):
        """The answer of the learner call ``ref`` (``method``, submitted at ``start``), or
        None when it must be made again: it died with the learner, or it came from before a
        restart (a ``train`` answer that names the restored incarnation stands). A restart
        is noticed here, with the seconds since ``start`` lost (none when ``start`` is None:
        nothing waited on it)."""
        waited = 0.0
        try:
            result, status = ray.get([ref, self.learner.status.remote()])
        except RayActorError as error:
            lost_at = time.time()
            result, status = None, self.await_restart(error)
            waited = time.time() - lost_at
        restarted = status.incarnation != self.incarnation
        if restarted:
            self._restarted(status, 0.0 if start is None else time.time() - start, waited)
        survived = isinstance(result, TrainReply) and result.incarnation == status.incarnation
        if result is None or (restarted and not survived):
            return None
        return result

    def await_restart(self, error: Exception) -> LearnerStatus:
        """The restarted learner's status, once it answers (within ``wait_s``); between its
        questions the run does :attr:`meanwhile`."""
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return self._await_status("the learner did not come back", f"after it failed ({first})", error)

    def _await_status(self, what: str, why: str, cause: Exception | None) -> LearnerStatus:
        """The learner's status, asked every :data:`ASK_EVERY_S` until it answers; past
        ``wait_s``, :class:`WaitExpired` saying ``what`` and ``why``."""
        began = time.monotonic()
        deadline, next_report = began + self.wait_s, began + REPORT_EVERY_S
        while True:
            try:
                return ray.get(self.learner.status.remote(), timeout=max(0.1, min(ASK_EVERY_S, deadline - time.monotonic())))
            except (RayActorError, GetTimeoutError) as again:
                if _failed_to_start(again):  # Ray restarts no actor whose start raised: say why now
                    raise RuntimeError(f"the learner could not restart: {_failed_to_start(again)}") from again
                now = time.monotonic()
                if now >= deadline:
                    raise WaitExpired(f"{what} within learner.restart_wait_s={self.wait_s:g} s, {why}; raise "
                                      f"learner.restart_wait_s where a node takes longer to join (--set "
                                      f"learner.restart_wait_s=SECONDS)") from (cause or again)
                if now >= next_report:
                    print(f"waiting for the learner ({now - began:.0f} of {self.wait_s:g} s, "
                          f"learner.restart_wait_s)", file=sys.stderr, flush=True)
                    next_report += REPORT_EVERY_S
                if cause is not None and self.meanwhile is not None:  # a lost learner: the actors collect on
                    self.meanwhile()
                elif isinstance(again, RayActorError):  # an answer that failed at once: not a busy loop
                    time.sleep(min(0.5, max(0.0, deadline - now)))

    def _restarted(self, status: LearnerStatus, seconds: float, waited: float) -> None:
        """The learner came back as ``status`` says: its counters (a checkpoint's) are the run's
        now; the run lost ``seconds`` to it, ``waited`` of them waiting for its answer."""
        self.faults.learner_restarted(updates_before=self.counters.updates, updates_after=status.started.updates,
                                      restored_from=status.restored_from, seconds=seconds, waited=waited)
        self.counters.take_learner(status.started)
        self.incarnation = status.incarnation


def _failed_to_start(error: Exception) -> str | None:
    """The error a restarted actor's ``__init__`` raised (its last line, which names it),
    when that is why ``error`` says the actor is gone; None for any other loss."""
    text = str(error)
    if not isinstance(error, RayActorError) or "error raised in its creation task" not in text:
        return None
    return text.strip().splitlines()[-1].strip()
