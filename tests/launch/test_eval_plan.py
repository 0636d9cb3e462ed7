"""The evaluation plan of a run on a wall clock (launch/eval_plan.py), on a clock of its own:
the costly suites fit the allowance or are left out with a reason, the final weights'
evaluation keeps its time, and training stops in time for the end."""

from __future__ import annotations

import pytest

from launch.eval_plan import EXIT_SECONDS, FIRST_CHECKPOINT_SECONDS, EvaluationPlan


class Clock:
    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def plan(costly=("play",), minutes=10.0, share=0.2, now=0.0) -> tuple[EvaluationPlan, Clock]:
    clock = Clock(now)
    return EvaluationPlan(start=0.0, end=minutes * 60, share=share, costly=list(costly), clock=clock), clock


def test_without_costly_suites_training_stops_for_the_cheap_evaluation_the_checkpoint_and_the_exit():
    p, _ = plan(costly=())
    p.record(seconds=4.0, cheap=True, suite_seconds={}, abandoned={})
    p.checkpointed(7.0)
    assert p.train_deadline() == pytest.approx(600 - 4.0 - 7.0 - EXIT_SECONDS)


def test_an_unmeasured_costly_suite_keeps_the_whole_allowance_for_the_end():
    p, _ = plan()  # 10 minutes, 20%: 120 s of evaluations
    assert p.allowance == pytest.approx(120.0)
    assert p.train_deadline() == pytest.approx(600 - 120 - FIRST_CHECKPOINT_SECONDS - EXIT_SECONDS)


def test_before_the_end_an_unmeasured_suite_gets_half_of_what_is_left_and_the_final_all_of_it():
    p, clock = plan()
    chosen = p.choose(final=False)
    assert chosen.limits == {"play": pytest.approx(60.0)}
    assert chosen.deadline == pytest.approx(600 - FIRST_CHECKPOINT_SECONDS - EXIT_SECONDS)
    p.record(seconds=50.0, cheap=True, suite_seconds={}, abandoned={"play": 45.0})
    clock.now = 400.0
    final = p.choose(final=True)
    assert final.limits == {"play": pytest.approx(70.0)}  # what is left of the 120 s


def test_two_unmeasured_suites_share_the_time():
    p, _ = plan(costly=("play", "traces"))
    chosen = p.choose(final=True)
    assert chosen.limits == {"play": pytest.approx(60.0), "traces": pytest.approx(60.0)}


def test_a_measured_suite_runs_before_the_end_only_if_one_more_run_still_fits():
    p, clock = plan(now=500.0)  # late enough that pacing allows every run below
    p.record(seconds=32.0, cheap=True, suite_seconds={"play": 30.0}, abandoned={})
    # 88 s left, 2 s of cheap suites kept: 30 now and 30 kept for the end fit.
    assert p.choose(final=False).costly == ["play"]
    p.record(seconds=32.0, cheap=True, suite_seconds={"play": 30.0}, abandoned={})
    # 56 s left: 30 now would leave less than 30 for the end.
    assert p.choose(final=False).costly == []
    assert "needs about 30 s" in p.skipped["play"]
    # Measured, the end keeps only its cost, and training may go on until then.
    assert p.train_deadline() == pytest.approx(600 - 30.0 - 2.0 - FIRST_CHECKPOINT_SECONDS - EXIT_SECONDS)
    clock.now = p.train_deadline()
    assert p.choose(final=True).costly == ["play"]
    p.record(seconds=31.0, cheap=False, suite_seconds={"play": 31.0}, abandoned={})
    assert p.skipped == {}
    assert p.skipped_lines() == ["play: left out of 1 evaluation for time, run on the final weights"]


def test_a_suite_that_did_not_finish_is_not_tried_again_with_less_time():
    p, clock = plan(minutes=1.0)  # 12 s of evaluations
    chosen = p.choose(final=False)
    assert chosen.limits == {"play": pytest.approx(6.0)}
    p.record(seconds=6.5, cheap=True, suite_seconds={}, abandoned={"play": 6.0})
    clock.now = 45.0
    assert p.choose(final=True).costly == []  # 5.5 s left, less than the 6 s it did not finish in
    lines = p.skipped_lines()
    assert len(lines) == 1 and lines[0].startswith("play: not on the final weights")
    assert "did not finish in 6 s" in lines[0] and "left out of 2 evaluations" in lines[0]


def test_the_end_keeps_the_checkpoint_and_the_exit_whatever_the_allowance():
    p, clock = plan(minutes=1.0, share=0.5)  # 30 s allowance
    clock.now = 55.0  # 5 s before the end: no room for anything but the exit
    assert p.choose(final=True).costly == []
    assert p.choose(final=True).deadline == pytest.approx(60 - FIRST_CHECKPOINT_SECONDS - EXIT_SECONDS)


def test_the_cadence_stops_when_the_allowance_is_spent():
    p, _ = plan(costly=(), minutes=1.0, now=59.0)  # 12 s; at the end, where pacing allows all of it
    p.record(seconds=3.0, cheap=True, suite_seconds={}, abandoned={})
    assert p.cheap_fits()  # 3 + 3 + 3 kept for the final evaluation's cheap part <= 12
    p.record(seconds=3.0, cheap=True, suite_seconds={}, abandoned={})
    assert p.cheap_fits()  # 6 + 3 + 3 <= 12
    p.record(seconds=3.0, cheap=True, suite_seconds={}, abandoned={})
    assert not p.cheap_fits()  # 9 + 3 + 3 > 12
    assert p.skipped_lines() == ["1 evaluation of the evaluation.every cadence left out whole: "
                                 "the evaluation time share was spent"]


def test_the_cadence_leaves_the_end_its_measured_costly_suites():
    p, _ = plan(minutes=1.5, now=89.0)  # 18 s; at the end, where pacing allows all of it
    p.record(seconds=6.0, cheap=True, suite_seconds={"play": 4.0}, abandoned={})
    assert p.cheap_fits()  # 6 + 2, and 2 + 4 kept for the final evaluation <= 18
    p.record(seconds=2.0, cheap=True, suite_seconds={}, abandoned={})
    p.record(seconds=2.0, cheap=True, suite_seconds={}, abandoned={})
    assert p.cheap_fits()  # 10 + 2 + 6 <= 18
    p.record(seconds=2.0, cheap=True, suite_seconds={}, abandoned={})
    assert not p.cheap_fits()  # 12 + 2 + 6 > 18: the cheap suites wait for the final evaluation


def test_the_final_evaluation_keeps_its_cheap_part_and_its_play_after_a_busy_cadence():
    """A cadence of cheap evaluations every few seconds spends the share until it stops;
    what it leaves is the final evaluation's whole: its cheap part and the play suite."""
    p, clock = plan(minutes=3.0)  # 36 s of evaluation
    p.record(seconds=2.6, cheap=True, suite_seconds={"play": 0.6}, abandoned={})
    while p.cheap_fits():
        clock.now += 4.0
        p.record(seconds=2.0, cheap=True, suite_seconds={}, abandoned={})
    clock.now = p.train_deadline()  # training stops in time for the end
    assert p.left() >= p.cheap_cost + p.cost["play"]
    final = p.choose(final=True, due=["play"])
    assert final.limits.get("play", 0.0) >= p.cost["play"] and p.skipped == {}


def test_the_final_evaluation_after_the_last_checkpoint_may_use_the_checkpoints_time():
    """The last iteration's checkpoint already holds the final weights: the time kept for
    a checkpoint after the final evaluation is the evaluation's."""
    p, clock = plan(minutes=1.0)
    p.record(seconds=2.0, cheap=True, suite_seconds={"play": 1.0}, abandoned={})
    p.checkpointed(3.0)
    clock.now = p.train_deadline() + 3.0  # the last iteration's checkpoint took its 3 s
    assert p.choose(final=True, due=["play"], checkpoint_left=False).limits["play"] >= 1.0
    assert "play" not in p.skipped


def test_the_cadence_is_spread_over_the_whole_run():
    """A cadence far cheaper than its share (a 2.5 s evaluation asked every 3.5 s of a 30
    minute run at 20%) runs as often in the run's second half as in its first, up to its
    end, instead of spending the share at the start."""
    p, clock = plan(costly=(), minutes=30.0)
    ran = []
    while clock.now < p.train_deadline():
        if p.cheap_fits():
            ran.append(clock.now)
            p.record(seconds=2.5, cheap=True, suite_seconds={}, abandoned={})
            clock.now += 2.5
        clock.now += 1.0  # an iteration of training
    first_half = sum(1 for t in ran if t < 900)
    assert first_half > 40 and abs(first_half - (len(ran) - first_half)) <= 0.1 * len(ran)
    assert ran[-1] > 0.95 * p.train_deadline()
    assert p.spent <= 0.2 * clock.now + 2.5
    assert any("spread the evaluation time share" in line for line in p.skipped_lines())


def test_a_measured_costly_suite_is_paced_before_the_end_but_the_final_one_runs():
    p, clock = plan(now=10.0)  # 120 s of evaluation in 10 minutes
    p.record(seconds=12.0, cheap=True, suite_seconds={"play": 10.0}, abandoned={})
    assert p.choose(final=False).costly == []  # 12 s spent in the first 10 s: far ahead of pace
    assert p.skipped["play"].startswith("paced")
    clock.now = 200.0  # 40 s of share: 12 + 2 + 10 fits
    assert p.choose(final=False).costly == ["play"]
    clock.now = 20.0
    assert p.choose(final=True).costly == ["play"]  # the final weights' evaluation is never paced


def test_a_cheap_cadence_that_could_fill_the_share_leaves_the_play_suite_its_runs():
    """A quiet machine: an iteration every 2 s, 0.6 s of cheap suites at each, a 10 s play
    suite due at every 4th iteration, 30 minutes at 20%. Cheap evaluations alone could
    spend the whole paced share; they take half of it, and play runs along the curve."""
    p, clock = plan(minutes=30.0)
    played, iteration = [], 0
    while clock.now < p.train_deadline():
        iteration += 1
        clock.now += 2.0
        if not p.cheap_fits():
            continue
        play = p.choose(final=False).costly if iteration % 4 == 0 else []
        seconds = {"play": 10.0} if play else {}
        p.record(seconds=0.6 + sum(seconds.values()), cheap=True, suite_seconds=seconds, abandoned={})
        clock.now += 0.6 + sum(seconds.values())
        played += [clock.now] if play else []
    assert len(played) >= 10
    assert played[-1] > 0.8 * p.train_deadline() and played[0] < 0.2 * p.train_deadline()
    assert p.cheap_spent <= 0.5 * 0.2 * clock.now + 0.6
