"""The driver's calls that survive a restart of the process they go to.

- The learner (``learner/actor.py``) restarts from its newest good checkpoint by
  itself. :class:`LearnerLink` asks its status beside every call, so it notices a
  restart that no call saw failing too; it then waits for the learner, makes its
  counters (the checkpoint's) the run's, enters the restart in the fault ledger and
  redoes the call, unless the answer came from the restored learner (a ``train`` reply
  names the incarnation that trained).
- A replay shard restarts from its snapshot: :func:`replay_call` asks again meanwhile.
"""

from __future__ import annotations

import time

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from launch.faults import FaultLedger
from launch.records import RunCounters
from learner.actor import LearnerStatus, TrainReply

RESTART_TIMEOUT = 180.0  # seconds to wait for a restarted learner or replay shard to answer


def replay_call(call):
    """``call()`` (a replay service request), asked again while a shard restarts."""
    deadline = time.monotonic() + RESTART_TIMEOUT
    while True:
        try:
            return call()
        except RayActorError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class LearnerLink:
    """Calls to the learner actor ``learner`` that outlive its restarts."""

    def __init__(self, learner, counters: RunCounters, faults: FaultLedger):
        self.learner, self.counters, self.faults = learner, counters, faults
        self.incarnation = ray.get(learner.status.remote()).incarnation

    def call(self, method: str, *args):
        """``ray.get`` of a learner method, made again until an answer stands."""
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
        try:
            result, status = ray.get([ref, self.learner.status.remote()])
        except RayActorError as error:
            result, status = None, self.await_restart(error)
        restarted = status.incarnation != self.incarnation
        if restarted:
            self._restarted(status, 0.0 if start is None else time.time() - start)
        survived = isinstance(result, TrainReply) and result.incarnation == status.incarnation
        if result is None or (restarted and not survived):
            return None
        return result

    def await_restart(self, error: Exception) -> LearnerStatus:
        deadline = time.monotonic() + RESTART_TIMEOUT
        while True:
            try:
                return ray.get(self.learner.status.remote(), timeout=10)
            except (RayActorError, GetTimeoutError) as again:
                if _failed_to_start(again):  # Ray restarts no actor whose start raised: say why now
                    raise RuntimeError(f"the learner could not restart: {_failed_to_start(again)}") from again
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the learner did not come back within {RESTART_TIMEOUT:.0f} s "
                                       f"after it failed: {error}") from error
                time.sleep(0.5)

    def _restarted(self, status: LearnerStatus, seconds: float) -> None:
        """The learner came back as ``status`` says: its counters (a checkpoint's) are the run's now."""
        self.faults.learner_restarted(updates_before=self.counters.updates, updates_after=status.started.updates,
                                      restored_from=status.restored_from, seconds=seconds)
        self.counters.take_learner(status.started)
        self.incarnation = status.incarnation


def _failed_to_start(error: Exception) -> str | None:
    """The error a restarted actor's ``__init__`` raised (its last line, which names it),
    when that is why ``error`` says the actor is gone; None for any other loss."""
    text = str(error)
    if not isinstance(error, RayActorError) or "error raised in its creation task" not in text:
        return None
    return text.strip().splitlines()[-1].strip()
