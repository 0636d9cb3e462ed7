"""The run's counters and the records of the actors' collection calls, without Ray."""

from __future__ import annotations

import pytest

from actors.labels import LabelStats
from actors.pool import CollectStats
from launch.records import RunCounters, collect_record
from learner.actor import LearnerCounters


def stats(index, rows, positions, seconds, labels=None, labelled_rows=0):
    return CollectStats(index=index, rows=rows, positions=positions, version=0, games_finished=1, seconds=seconds,
                        forward_samples=10 * positions, timings={"search": 3.0, "transport": 1.0},
                        target_mean=0.5, target_std=0.1, restarted=False, replay_add_failures=0, replay_shard=0,
                        replay_total_added=rows, replay_incarnation="a", labels=labels, labelled_rows=labelled_rows)


def test_counters_add_up_and_give_the_compute_proxy():
    counters = RunCounters()
    counters.add_collected([stats(0, 8, 8, 1.0), stats(1, 0, 4, 1.0)])
    counters.take_learner(LearnerCounters(updates=3, samples_forward=100, samples_backward=100))
    assert (counters.rows, counters.positions, counters.games, counters.actor_forward_samples) == (8, 12, 2, 120)
    assert counters.compute == 120 + 100 + 3 * 100
    saved = counters.as_dict()
    resumed = RunCounters()
    resumed.restore(saved)
    assert resumed == counters
    with pytest.raises(ValueError, match="missing \\['version'\\]"):
        RunCounters().restore({k: v for k, v in saved.items() if k != "version"})


def test_collect_record_rates_per_actor_and_azal_labels():
    labels = LabelStats(oracle_queries=5, oracle_unique=4, oracle_errors=0, store_labels=1)
    record = collect_record([stats(0, 8, 8, 2.0, labels, 3), stats(1, 4, 4, 1.0, labels, 1),
                             stats(0, 8, 8, 2.0, labels, 2)])
    assert record["collect_rows"] == 20 and record["collect_positions"] == 20
    assert record["positions_per_s"] == pytest.approx(16 / 4.0 + 4 / 1.0)  # actor calls overlap: per actor
    assert record["actor_time/search"] == pytest.approx(0.75)
    assert record["oracle_queries"] == 15 and record["store_labels"] == 3 and record["labelled_rows"] == 6
    assert "oracle_queries" not in collect_record([stats(0, 8, 8, 1.0)])
