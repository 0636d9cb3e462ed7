"""How a run on a wall clock (``--minutes M``) fits its evaluations into M minutes.

The run's clock starts when Ray is up and ends at its exit: starting the roles, every
evaluation, the final checkpoint and the shutdown are spent from it. Evaluations may take
``evaluation.time_share`` of it in all (the *allowance*), in two classes:

- the **cheap** suites (states against exact labels, and the built-in labels: seconds) run
  on their cadence (``evaluation.every``), as in a run budgeted in updates;
- the **costly** suites (``PLAY_KINDS``: whole games against the oracle, traces, outside
  engines: minutes on Connect Four) run where time is kept for them. Each suite by each
  policy of the evaluator is one costly suite here (``connect4-play`` and, for a run that
  also plays its training search, ``connect4-play@mcts64``: launch/evaluator.py), planned,
  measured and left out on its own, since a search's decisions cost its simulations in
  network evaluations where the policy head's cost one. The final weights'
  evaluation comes first: the run stops training early enough to leave it the whole
  allowance still unspent (or, once a suite's cost is measured, that cost). On the
  ``evaluation.play_every`` cadence before the end, a costly suite runs only if what it
  costs still leaves one more run of every costly suite for the end; a suite whose cost
  is not known yet is given half of what is left, and abandoned there if unfinished (what
  it solved stays in the oracle's store, so the next try is cheaper).

Both classes are **paced** over the run: before the end, an evaluation runs only while what
the evaluations spent, with its own cost, stays within ``time_share`` of the time elapsed
(the first one always runs). A cadence cheaper than that share is spaced out evenly, so a
long run has points along its whole curve rather than a burst at its start, an allowance
spent by mid-run and nothing until its final weights. Where there are costly suites, the
cheap ones are paced to half the share (:data:`CHEAP_SHARE`), so that a cheap cadence
that could fill the share leaves the costly suites their runs along the curve.

Every suite left out, and why, is kept (:attr:`EvaluationPlan.skipped`): the run prints
each such line and writes them into its last row. The run stops training at
:meth:`EvaluationPlan.train_deadline`: the clock's end less the final evaluation, the
final checkpoint (as long as the longest so far) and :data:`EXIT_SECONDS`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# The run's close (roles stopped, the logger flushed) and Ray's shutdown, measured at 2-4 s
# on the 2-core machine; kept free at the clock's end.
EXIT_SECONDS = 5.0
# A checkpoint before the run has written one (a replay snapshot and the learner's state).
FIRST_CHECKPOINT_SECONDS = 3.0
# A costly suite whose cost is unknown gets this share of the allowance left before the end.
UNKNOWN_SHARE = 0.5
# Where a run has costly suites, the part of the paced share its cheap suites may take.
CHEAP_SHARE = 0.5


@dataclass
class Chosen:
    """What one evaluation runs: the costly suites (of those due), each with the seconds it
    may take (``limits``) before it is abandoned, and a time (a ``time.time()``) no suite
    may run past (``deadline``)."""

    limits: dict
    deadline: float

    @property
    def costly(self) -> list[str]:
        return list(self.limits)


@dataclass
class EvaluationPlan:
    """The evaluations of a run whose clock ends at ``end`` (a ``time.time()``), begun at
    ``start``; ``share`` of that time is the allowance; ``costly``: the names of its
    costly suites."""

    start: float
    end: float
    share: float
    costly: list[str]
    clock: object = time.time
    spent: float = 0.0  # seconds of evaluations so far
    cheap_spent: float = 0.0  # of which in the cheap suites
    cost: dict = field(default_factory=dict)  # costly suite -> seconds of its newest complete run
    abandoned: dict = field(default_factory=dict)  # costly suite -> seconds of its newest unfinished run
    cheap_cost: float = 0.0  # seconds of the newest evaluation's cheap part
    checkpoint_cost: float = FIRST_CHECKPOINT_SECONDS  # the longest checkpoint so far
    skipped: dict = field(default_factory=dict)  # suite -> why it is left out, until it next runs whole
    left_out: dict = field(default_factory=dict)  # suite -> evaluations it was left out of (skipped or abandoned)
    cheap_skipped: int = 0  # evaluations of the cadence left out whole: the allowance was spent
    cheap_paced: int = 0  # evaluations of the cadence left out to space the rest over the run

    @property
    def allowance(self) -> float:
        return self.share * (self.end - self.start)

    def left(self) -> float:
        """Seconds of the allowance not spent yet."""
        return max(0.0, self.allowance - self.spent)

    def _final_reserve(self) -> float:
        """Seconds kept for the final weights' costly suites: their measured costs, or the
        whole allowance left while one is not measured."""
        if not self.costly:
            return 0.0
        if all(s in self.cost for s in self.costly):
            return min(self.left(), sum(self.cost[s] for s in self.costly))
        return self.left()

    def on_pace(self, cost: float, spent: float | None = None, share: float | None = None) -> bool:
        """Whether an evaluation before the end that costs ``cost`` seconds keeps ``spent``
        (default: all the evaluations' seconds) within ``share`` (default: ``time_share``)
        of the time elapsed; the first one always does."""
        spent = self.spent if spent is None else spent
        share = self.share if share is None else share
        return spent == 0.0 or spent + cost <= share * (self.clock() - self.start)

    def cheap_fits(self) -> bool:
        """Whether an evaluation of the cadence runs now: it is on pace, and it still fits
        the allowance with the final evaluation's share of it kept: its cheap part and one
        run of every measured costly suite (the final evaluation always runs; its wall time
        is kept by :meth:`train_deadline`)."""
        kept = self.cheap_cost + sum(self.cost.get(s, 0.0) for s in self.costly)
        fits = self.spent + self.cheap_cost + kept <= self.allowance
        self.cheap_skipped += not fits
        share = self.share * (CHEAP_SHARE if self.costly else 1.0)
        paced = fits and self.on_pace(self.cheap_cost, self.cheap_spent, share)
        self.cheap_paced += fits and not paced
        return paced

    def train_deadline(self) -> float:
        """When collecting and training stop: the end, less the final evaluation, the final
        checkpoint and the exit."""
        return self.end - self._final_reserve() - self.cheap_cost - self.checkpoint_cost - EXIT_SECONDS

    def choose(self, *, final: bool, due: list[str] | None = None, checkpoint_left: bool = True) -> Chosen:
        """The costly suites one evaluation runs, of those ``due`` (default: all), each known
        to fit or given its share; the others are entered in :attr:`skipped`. ``final``: the
        final weights' evaluation, which may spend all that is left; ``checkpoint_left``:
        whether a checkpoint is still to be written after it (not when the last iteration's
        checkpoint holds the final weights already)."""
        due = self.costly if due is None else [s for s in self.costly if s in due]
        now = self.clock()
        # Never past the point where the end's checkpoint and exit would no longer fit.
        hard = self.end - (self.checkpoint_cost if checkpoint_left else 0.0) - EXIT_SECONDS
        room = min(self.left(), hard - now - (0.0 if final else self.cheap_cost))
        # Before the end, one more run of every measured costly suite stays kept for it.
        keep = 0.0 if final else sum(self.cost.get(s, 0.0) for s in self.costly)
        limits = {}
        for suite in due:
            known = self.cost.get(suite)
            if known is not None:
                if not final and not self.on_pace(self.cheap_cost + known):
                    self.left_out[suite] = self.left_out.get(suite, 0) + 1
                    self.skipped[suite] = "paced: its time share is spread over the run"
                elif known + keep <= room:
                    limits[suite] = room - keep  # it may overrun its last cost, up to what is left
                    room -= known
                    self.skipped.pop(suite, None)
                else:
                    self.left_out[suite] = self.left_out.get(suite, 0) + 1
                    self.skipped[suite] = (f"needs about {known:.0f} s (its last run), "
                                           f"{max(room - keep, 0.0):.0f} s of the evaluation time left")
                continue
            unknown = sum(1 for s in due[due.index(suite):] if s not in self.cost)
            give = (room if final else UNKNOWN_SHARE * (room - keep)) / unknown
            floor = self.abandoned.get(suite, 0.0)
            if give < 1.0 or give <= floor:
                self.left_out[suite] = self.left_out.get(suite, 0) + 1
                self.skipped[suite] = (f"{max(give, 0.0):.0f} s of the evaluation time left for it"
                                       + (f", and it did not finish in {floor:.0f} s" if floor else ""))
                continue
            limits[suite] = give
            room -= give
        return Chosen(limits, hard)

    def record(self, *, seconds: float, cheap: bool, suite_seconds: dict[str, float],
               abandoned: dict[str, float]) -> None:
        """One evaluation took ``seconds``, its cheap suites among them when ``cheap``;
        ``suite_seconds``: each costly suite that finished, ``abandoned``: each one given up,
        with the seconds it ran."""
        self.spent += seconds
        if cheap:
            self.cheap_cost = max(0.0, seconds - sum(suite_seconds.values()) - sum(abandoned.values()))
            self.cheap_spent += self.cheap_cost
        for suite, s in suite_seconds.items():
            self.cost[suite] = s
            self.abandoned.pop(suite, None)
            self.skipped.pop(suite, None)
        for suite, s in abandoned.items():
            self.left_out[suite] = self.left_out.get(suite, 0) + 1
            self.abandoned[suite] = max(s, self.abandoned.get(suite, 0.0))
            self.skipped[suite] = f"did not finish in the {s:.0f} s it was given; abandoned"

    def checkpointed(self, seconds: float) -> None:
        self.checkpoint_cost = max(self.checkpoint_cost, seconds)

    def skipped_lines(self) -> list[str]:
        """One line per suite left out of an evaluation: why, where the final weights lack it."""
        lines = []
        for suite, times in sorted(self.left_out.items()):
            earlier = f"left out of {times} evaluation{'s' if times > 1 else ''}"
            if suite in self.skipped:
                lines.append(f"{suite}: not on the final weights ({self.skipped[suite]}); {earlier} in all")
            else:
                lines.append(f"{suite}: {earlier} for time, run on the final weights")
        if self.cheap_paced:
            lines.append(f"{self.cheap_paced} evaluation{'s' if self.cheap_paced > 1 else ''} of the "
                         f"evaluation.every cadence left out to spread the evaluation time share over the run")
        if self.cheap_skipped:
            lines.append(f"{self.cheap_skipped} evaluation{'s' if self.cheap_skipped > 1 else ''} of the "
                         f"evaluation.every cadence left out whole: the evaluation time share was spent")
        return lines
