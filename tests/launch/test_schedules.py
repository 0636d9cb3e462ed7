"""The asynchronous schedule's rate limiter and the run's budget, without Ray."""

from __future__ import annotations

import time

from launch.schedules import Budget, RateLimiter


def test_the_rate_limiter_holds_the_learner_to_samples_per_insert():
    limiter = RateLimiter(samples_per_insert=2.0, batch_size=64, max_policy_lag=4, chunk=10)
    # 640 rows allow 2 * 640 / 64 = 20 updates: a chunk of 10 after 10 done, not after 11.
    assert limiter.allows(rows=640, updates=10, version=0, oldest_version=0)
    assert not limiter.allows(rows=640, updates=11, version=0, oldest_version=0)
    assert not limiter.allows(rows=63, updates=0, version=0, oldest_version=0)  # no full batch yet


def test_the_rate_limiter_waits_for_actors_that_lag_behind():
    limiter = RateLimiter(samples_per_insert=4.0, batch_size=64, max_policy_lag=2, chunk=1)
    assert limiter.allows(rows=6400, updates=0, version=5, oldest_version=4)
    assert not limiter.allows(rows=6400, updates=0, version=5, oldest_version=3)


def test_the_budget_in_updates_and_in_time():
    budget = Budget(updates=100, deadline=None)
    assert budget.updates_left(40) == 60 and not budget.spent(99) and budget.spent(100)
    timed = Budget(updates=None, deadline=time.time() - 1)
    assert timed.updates_left(10**6) is None and timed.out_of_time() and timed.spent(0)
    assert not Budget(updates=None, deadline=time.time() + 60).spent(10**6)
