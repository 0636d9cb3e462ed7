"""The statistics of the results pages, each from a library the field relies on rather
than a formula of our own:

- **Time to a goal is censored data.** A seed that never reached the goal within its budget
  says "more than its budget", not nothing: Kaplan-Meier estimates (lifelines) of the share
  of seeds at the goal against updates or compute, and the median with its 95% interval
  (the interval's ends read off the estimate's confidence band, lifelines'
  ``median_survival_times``; an end the data cannot bound is infinite). A mean over only
  the seeds that reached the goal is biased down and is never computed here.
- **A goal reached once is not held.** The first evaluation at the goal and the first of
  ``hold`` evaluations in a row at it are two events, both reported.
- **Aggregates over seeds** are means with rliable's stratified bootstrap intervals, which
  stay inside a bounded metric's range (an error rate's interval never passes 0).
- **A pairwise claim** is rliable's probability of improvement, P(X better than Y) over
  seeds, with its bootstrap interval, computed at one number of updates every trial of
  both arms reached: a value there does not depend on when a trial stopped later, so the
  comparison stays valid under the stopping rule.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

BOOTSTRAP_REPS = 2000  # rliable's intervals: enough for stable 95% ends with 3-20 seeds
CONFIDENCE = 0.95
MIN_HOLD = 3  # a held goal is read over at least this many evaluations, whatever a trial's own stop rule was


class GoalTimes(NamedTuple):
    """One trial's times to a goal, in its x unit (updates or compute); ``None`` where the
    trial never reached it (censored at ``end``)."""

    first: float | None  # the first evaluation at the goal
    held: float | None  # the first evaluation of the first run of ``hold`` in a row at it
    end: float  # the trial's last evaluation: where a censored trial was last seen


def goal_times(points: list[tuple[float, float]], goal: float, hold: int) -> GoalTimes:
    """``points``: (x, value) of one trial's evaluations of the goal's metric, in order;
    the goal is met at value <= ``goal``."""
    first = held = None
    streak_start, streak = None, 0
    for x, value in points:
        if value <= goal:
            if first is None:
                first = x
            if streak == 0:
                streak_start = x
            streak += 1
            if streak >= hold and held is None:
                held = streak_start
        else:
            streak = 0
    return GoalTimes(first, held, points[-1][0] if points else 0.0)


class KaplanMeier(NamedTuple):
    n: int  # trials
    reached: int  # of them, those that reached the goal within their budget
    median: float  # KM median time to the goal (inf: under half the seeds reached it)
    low: float  # its 95% interval's ends (inf: unbounded by the data)
    high: float
    times: np.ndarray  # the estimate's steps: x and the share of seeds at the goal by then
    share: np.ndarray


def kaplan_meier(times: list[float | None], ends: list[float]) -> KaplanMeier:
    """The share of trials at a goal against x, from each trial's time to it (None:
    censored at its ``end``)."""
    from lifelines import KaplanMeierFitter
    from lifelines.utils import median_survival_times

    durations = [t if t is not None else e for t, e in zip(times, ends)]
    observed = [t is not None for t in times]
    km = KaplanMeierFitter(alpha=1 - CONFIDENCE).fit(durations, event_observed=observed)
    band = median_survival_times(km.confidence_interval_)
    low, high = (float(v) for v in np.asarray(band).ravel()[:2])
    survival = km.survival_function_
    return KaplanMeier(len(times), sum(observed), float(km.median_survival_time_), low, high,
                       survival.index.to_numpy(dtype=float), 1.0 - survival.iloc[:, 0].to_numpy(dtype=float))


class Interval(NamedTuple):
    mean: float
    low: float
    high: float
    n: int


def mean_interval(values: list[float], *, seed: int = 0) -> Interval:
    """The mean over seeds with rliable's stratified bootstrap 95% interval (one task:
    the seeds are the stratum); a single seed has no interval (its ends are nan)."""
    values = [float(v) for v in values]
    if not values:
        return Interval(math.nan, math.nan, math.nan, 0)
    if len(values) == 1 or len(set(values)) == 1:
        return Interval(values[0] if len(values) == 1 else float(np.mean(values)),
                        math.nan if len(values) == 1 else values[0], math.nan if len(values) == 1 else values[0],
                        len(values))
    from rliable import library as rly

    np.random.seed(seed)  # rliable draws from numpy's global generator: the pages must not change on a redraw
    scores = {"x": np.asarray(values, dtype=float)[:, None]}  # [seeds, tasks=1]
    point, ci = rly.get_interval_estimates(scores, lambda s: np.array([np.mean(s)]), reps=BOOTSTRAP_REPS,
                                           confidence_interval_size=CONFIDENCE)
    return Interval(float(point["x"][0]), float(ci["x"][0, 0]), float(ci["x"][1, 0]), len(values))


def probability_of_improvement(better_x: list[float], y: list[float], *, lower_is_better: bool,
                               seed: int = 0) -> Interval:
    """rliable's P(X better than Y) over seeds (ties count half) with its bootstrap 95%
    interval; for a metric where lower is better the scores are negated first."""
    from rliable import library as rly
    from rliable import metrics

    sign = -1.0 if lower_is_better else 1.0
    x = sign * np.asarray(better_x, dtype=float)[:, None]
    y = sign * np.asarray(y, dtype=float)[:, None]
    np.random.seed(seed)
    point, ci = rly.get_interval_estimates({"pair": (x, y)}, metrics.probability_of_improvement,
                                           reps=BOOTSTRAP_REPS, confidence_interval_size=CONFIDENCE)
    return Interval(float(np.ravel(point["pair"])[0]), float(np.ravel(ci["pair"])[0]), float(np.ravel(ci["pair"])[1]),
                    len(better_x))


def t_interval(values: list[float], *, bounds: tuple[float, float] = (-math.inf, math.inf)) -> Interval:
    """The mean over seeds with its Student-t 95% interval (the AVI paper's bands over seeds,
    scipy's t quantile), its ends kept inside the metric's range ``bounds``; one seed has
    no interval (nan ends)."""
    from scipy import stats as st

    values = [float(v) for v in values]
    if not values:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = float(np.mean(values))
    if len(values) == 1:
        return Interval(mean, math.nan, math.nan, 1)
    half = float(st.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1) * np.std(values, ddof=1) / math.sqrt(len(values)))
    return Interval(mean, max(bounds[0], mean - half), min(bounds[1], mean + half), len(values))


def difference_interval(x: list[float], y: list[float]) -> Interval:
    """mean(x) - mean(y) over two arms' independent seeds with Welch's 95% interval
    (scipy's ``ttest_ind(equal_var=False)``); fewer than two seeds a side: nan ends."""
    from scipy import stats as st

    x, y = [float(v) for v in x], [float(v) for v in y]
    if not x or not y:
        return Interval(math.nan, math.nan, math.nan, 0)
    diff = float(np.mean(x) - np.mean(y))
    if min(len(x), len(y)) < 2 or (np.var(x) == 0 and np.var(y) == 0):
        return Interval(diff, diff if len(x) > 1 and len(y) > 1 else math.nan,
                        diff if len(x) > 1 and len(y) > 1 else math.nan, min(len(x), len(y)))
    ci = st.ttest_ind(x, y, equal_var=False).confidence_interval(CONFIDENCE)
    return Interval(diff, float(ci.low), float(ci.high), min(len(x), len(y)))
