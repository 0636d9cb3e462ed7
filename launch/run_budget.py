"""A training run's budget, and the evaluations and checkpoints spent from it.

One of three budgets (``python -m launch``'s flags):

- ``--updates N``: the run's total gradient steps; its evaluations cost nothing of it
  (the unit of the experiments: a loaded machine takes longer instead of doing less);
- ``--minutes M``: the wall clock, from Ray's start to the process's exit. Starting the
  roles, every evaluation, checkpoint and the exit are spent from it; the evaluations are
  planned into ``evaluation.time_share`` of it (``launch/eval_plan.py``), and training
  stops in time for the final evaluation, the final checkpoint and the exit;
- ``--train-minutes M``: minutes of collecting and training; every evaluation moves the
  deadline past the time it took.

:class:`RunBudget` holds the schedule's :class:`~launch.schedules.Budget` (where it stops),
the plan of a wall clock, the progress line, and the run's evaluation seconds; the run
evaluates and checkpoints through it, so that each is spent from the right clock.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Protocol

import storage
from launch.config import ConfigError
from launch.eval_plan import EvaluationPlan
from launch.progress import Progress
from launch.records import RunCounters
from launch.schedules import Budget


def check_budget(updates: int | None, minutes: float | None, train_minutes: float | None = None) -> None:
    """A budget a run can spend: ``updates`` >= 1, ``minutes`` > 0 or ``train_minutes`` > 0,
    one of them."""
    given = [flag for flag, value in (("--updates", updates), ("--minutes", minutes),
                                      ("--train-minutes", train_minutes)) if value is not None]
    if not given:
        raise ConfigError("give a budget: --updates N, --minutes M (the wall clock) or --train-minutes M")
    if len(given) > 1:
        raise ConfigError(f"give one budget, not {' and '.join(given)}")
    if updates is not None and (isinstance(updates, bool) or not isinstance(updates, int) or updates < 1):
        raise ConfigError(f"--updates must be a whole number >= 1, got {updates!r}")
    for flag, value in (("--minutes", minutes), ("--train-minutes", train_minutes)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ConfigError(f"{flag} must be a number > 0, got {value!r}")


class Evaluates(Protocol):
    """The part of a run (``launch.train.Run``) its budget evaluates and checkpoints."""

    counters: RunCounters
    play_suites: list  # the evaluator's game suites (launch/evaluator.py PLAY_KINDS)

    def evaluate(self, *, play: bool, others: bool, limits: dict | None, deadline: float | None): ...

    def checkpoint(self): ...


RETRY_SECONDS = 10.0  # between tries of the final checkpoint while the storage is out


class RunBudget:
    def __init__(self, run: Evaluates, *, updates: int | None = None, minutes: float | None = None,
                 train_minutes: float | None = None, started: float | None = None, time_share: float = 0.2,
                 storage_outage_s: float = 600.0):
        """``started``: when the wall clock of ``minutes`` began (a ``time.time()``; default now);
        ``storage_outage_s``: how long checkpoints may fail before the run ends (TrainConfig)."""
        self.storage_outage_s = storage_outage_s
        self.storage_down_since: float | None = None  # the first failed write of the outage under way
        self.checkpoints_failed = 0  # over the run
        check_budget(updates, minutes, train_minutes)
        self.run, self.updates, self.minutes, self.train_minutes = run, updates, minutes, train_minutes
        self.start = time.time()
        self.started = self.start if started is None else started
        self.plan = (EvaluationPlan(start=self.started, end=self.started + minutes * 60, share=time_share,
                                    costly=list(run.play_suites)) if minutes is not None else None)
        self.budget = Budget(updates, self.plan.train_deadline() if self.plan is not None
                             else None if train_minutes is None else self.start + train_minutes * 60)
        self.progress = (Progress(updates, "updates", updates_before=run.counters.updates) if updates is not None
                         else Progress((minutes or train_minutes) * 60, "s", updates_before=run.counters.updates))
        self.eval_seconds = 0.0  # spent evaluating (since a resume)
        self.complete: set[int] = set()  # weight versions evaluated on every suite

    def spent(self) -> float:
        """The budget spent so far, in the progress line's unit."""
        if self.updates is not None:
            return self.run.counters.updates
        if self.plan is not None:
            return time.time() - self.started
        return time.time() - self.start - self.eval_seconds

    def evaluate(self, *, play: bool = True, others: bool = True, final: bool = False,
                 due: list[str] | None = None, checkpoint_left: bool = True) -> dict:
        """The run's evaluation of its newest weights (its game suites when ``play``, the
        others when ``others``), as the budget allows; ``final``: of the final weights,
        whose game suites ``due`` are still missing; ``checkpoint_left``: whether those
        weights are still to be checkpointed after it."""
        plan, began = self.plan, time.time()
        chosen = (plan.choose(final=final, due=due if final else None, checkpoint_left=checkpoint_left)
                  if plan is not None and play and self.run.play_suites else None)
        out, abandoned = self.run.evaluate(play=play, others=others, limits=None if chosen is None else chosen.limits,
                                           deadline=None if chosen is None else chosen.deadline)
        took = time.time() - began
        self.eval_seconds += took
        if plan is None:
            self.budget.extend(took)  # an evaluation does not spend --train-minutes
        else:
            plan.record(seconds=took, cheap=others, abandoned=abandoned,
                        suite_seconds={s: out[f"eval/{s}/seconds"] for s in self.run.play_suites
                                       if f"eval/{s}/seconds" in out})
            self.budget.deadline = plan.train_deadline()
        if play and others and not abandoned and (chosen is None or len(chosen.limits) == len(self.run.play_suites)):
            self.complete.add(self.run.counters.version)
        return {**out, "eval_seconds": self.eval_seconds}

    def cadence_allows(self) -> bool:
        """Whether an evaluation of the ``evaluation.every`` cadence fits the budget."""
        return self.plan is None or self.plan.cheap_fits()

    def checkpoint(self, *, final: bool = False) -> None:
        """A checkpoint of the run. One the storage refuses is tried again at the next
        checkpoint (the run goes on: a few seconds of an object store's errors must not end
        hours of training), or with ``final`` every few seconds; once the writes have failed
        for ``storage_outage_s``, the storage's error ends the run."""
        while True:
            began = time.time()
            try:
                self.run.checkpoint()
            except storage.StorageError as err:
                self.checkpoints_failed += 1
                self.storage_down_since = self.storage_down_since or began
                down = time.time() - self.storage_down_since
                if down >= self.storage_outage_s:
                    raise storage.StorageError(f"checkpoints have failed for {down:.0f} s (storage_outage_s="
                                               f"{self.storage_outage_s:g}): {err}") from err
                again = f"in {RETRY_SECONDS:g} s" if final else "at the next checkpoint"
                print(f"checkpoint at {self.run.counters.updates} updates not written ({err}); trying again {again}, "
                      f"for {self.storage_outage_s - down:.0f} s more", file=sys.stderr, flush=True)
                if not final:
                    return
                time.sleep(min(RETRY_SECONDS, self.storage_outage_s - down))
                continue
            self.storage_down_since = None
            if self.plan is not None:
                self.plan.checkpointed(time.time() - began)
                self.budget.deadline = self.plan.train_deadline()
            return

    def end_reason(self, stopped: bool) -> str:
        if stopped:
            return "stopped"
        if self.updates is not None and self.run.counters.updates >= self.updates:
            return f"{self.updates} updates"
        if self.minutes is not None:
            return f"{self.minutes:g} minutes"
        if self.train_minutes is not None:
            return f"{self.train_minutes:g} minutes of training"
        return "the budget"

    def left_out(self) -> list[str]:
        """The lines saying which suites a wall clock left out, and why."""
        return [] if self.plan is None else self.plan.skipped_lines()

    def train_seconds(self) -> float:
        return time.time() - self.start - self.eval_seconds
