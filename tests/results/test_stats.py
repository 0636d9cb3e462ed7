"""The results' statistics against values worked out by hand: times to a goal, the
Kaplan-Meier estimate of censored seeds, bounded bootstrap intervals and the probability
of improvement."""

from __future__ import annotations

import math

import pytest

from launch.results import stats


def test_the_first_hit_and_the_held_goal_are_two_events():
    # 0 at 128, lost at 256, then 0 at 384, 512 and 640: first 128, held (3 in a row) from 384.
    points = [(0, 0.5), (128, 0.0), (256, 0.1), (384, 0.0), (512, 0.0), (640, 0.0)]
    assert stats.goal_times(points, 0.0, 3) == stats.GoalTimes(128, 384, 640)
    # Two zeros in a row when the budget ends: reached, not held (censored at 640).
    assert stats.goal_times(points[:5], 0.0, 3) == stats.GoalTimes(128, None, 512)
    assert stats.goal_times([(0, 0.3), (64, 0.2)], 0.0, 3) == stats.GoalTimes(None, None, 64)


def test_kaplan_meier_counts_a_censored_seed_as_not_there_yet():
    # Events at 100 and 300, one seed censored at 500: S(100) = 2/3, S(300) = 1/3, so the
    # share at the goal is 1/3 then 2/3 and the median is 300.
    km = stats.kaplan_meier([100, 300, None], [100, 300, 500])
    assert (km.n, km.reached, km.median) == (3, 2, 300)
    assert list(km.share[km.times > 0]) == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    # The mean over the seeds that reached the goal would say 200: the estimate does not.
    assert km.median != (100 + 300) / 2
    # Under half the seeds at the goal: the median is unbounded, not the reached seed's time.
    assert math.isinf(stats.kaplan_meier([100, None, None], [100, 800, 800]).median)


def test_an_interval_of_a_bounded_metric_stays_in_its_range():
    iv = stats.mean_interval([0.0, 0.0, 0.03])
    assert iv.mean == pytest.approx(0.01) and iv.low >= 0.0 and iv.high <= 0.03 and iv.n == 3
    # A Student-t interval over the same three seeds reaches below zero (the failure this avoids).
    assert 0.01 - 4.303 * (0.03 / math.sqrt(3)) / math.sqrt(3) < 0
    one = stats.mean_interval([0.2])
    assert one.mean == 0.2 and math.isnan(one.low) and math.isnan(one.high)


@pytest.mark.slow
def test_probability_of_improvement_is_the_share_of_pairs_won():
    # Lower is better. Pairs (x, y): x=0 beats 0.1 and 0.2 and ties 0; x=0.02 beats 0.1 and
    # 0.2 and loses to 0; x=0 again as the first: 6 wins and 2 ties of 9 pairs, 7/9.
    p = stats.probability_of_improvement([0.0, 0.02, 0.0], [0.1, 0.0, 0.2], lower_is_better=True)
    assert p.mean == pytest.approx(7 / 9)
    assert 0.0 <= p.low <= p.mean <= p.high <= 1.0
    higher = stats.probability_of_improvement([3.0, 4.0], [1.0, 2.0], lower_is_better=False)
    assert higher.mean == pytest.approx(1.0)
