"""The fault ledger on made-up replies (no Ray, nothing killed): what each fault counts,
per record and in total, and what a resumed run goes on from."""

from __future__ import annotations

import pytest

from actors.pool import CollectStats
from launch.faults import FAULTS, FaultLedger
from replay.buffer import BufferStats
from replay.service import ShardRecovery


def stats(*, index=0, restarted=False, seconds=1.0, add_failures=0, shard=0, total_added=0, incarnation="a",
          actor_incarnation=""):
    return CollectStats(index=index, rows=4, positions=4, version=0, games_finished=0, seconds=seconds,
                        forward_samples=0, timings={}, target_mean=0.0, target_std=0.0, restarted=restarted,
                        replay_add_failures=add_failures, replay_shard=shard, replay_total_added=total_added,
                        replay_incarnation=incarnation, actor_incarnation=actor_incarnation)


def recovery(incarnation, total_added, size=0, restored_from=None):
    counters = BufferStats(size=size, capacity=1000, total_added=total_added, total_sampled=0, target_mean=None,
                           target_std=None)
    return ShardRecovery(restarted=restored_from is not None, restored_from=restored_from, incarnation=incarnation,
                         node_id="n", stats=counters)


def test_an_actor_restart_counts_the_seconds_its_call_waited(capsys):
    ledger = FaultLedger(["a"])
    ledger.actor_call(stats(seconds=1.0), wall=1.2)  # no restart: nothing lost
    ledger.actor_call(stats(index=3, restarted=True, seconds=2.0, add_failures=2), wall=7.5)
    record = ledger.record()
    assert record["faults/actor_restarts"] == 1 and record["faults/seconds_lost"] == pytest.approx(5.5)
    assert record["faults/replay_add_failures"] == 2
    assert "self-play actor 3 restarted; its call took 7.5 s (5.5 s lost)" in capsys.readouterr().out
    # The next record shows nothing new, the totals stay.
    again = ledger.record()
    assert again["faults/actor_restarts"] == 0 and again["faults/actor_restarts_total"] == 1
    assert set(again) == {f"faults/{k}" for k in FAULTS} | {f"faults/{k}_total" for k in FAULTS}



def test_an_actor_restart_seen_by_a_checkpoint_and_a_collect_counts_once(capsys):
    ledger = FaultLedger(["a"])
    ledger.actor_restarted(1, "p2")  # the checkpoint's question came first
    ledger.actor_call(stats(index=1, restarted=True, seconds=2.0, actor_incarnation="p2"), wall=6.0)
    record = ledger.record()
    assert record["faults/actor_restarts"] == 1  # once, and the collect's wait is still counted
    assert record["faults/seconds_lost"] == pytest.approx(4.0)
    ledger.actor_restarted(1, "p2")  # asked again at the next checkpoint: the same process
    assert ledger.record()["faults/actor_restarts"] == 0
    ledger.actor_call(stats(index=1, restarted=True, seconds=1.0, actor_incarnation="p3"), wall=1.5)
    ledger.actor_restarted(1, "p3")  # a second restart, counted by its collect first
    ledger.actor_restarted(0, "q2")  # and another actor's, seen by a checkpoint only
    record = ledger.record()
    assert record["faults/actor_restarts"] == 2 and record["faults/actor_restarts_total"] == 3
    assert "self-play actor 0 restarted (noticed at a checkpoint)" in capsys.readouterr().out

def test_a_shard_restart_loses_the_rows_stored_since_its_snapshot(capsys):
    ledger = FaultLedger(["a", "b"])
    ledger.actor_call(stats(shard=0, total_added=300, incarnation="a"), wall=1.0)
    ledger.actor_call(stats(shard=1, total_added=50, incarnation="b"), wall=1.0)
    ledger.shard_recoveries([recovery("a", 300), recovery("b", 50)])  # nothing restarted
    assert ledger.record()["faults/replay_restarts"] == 0
    # Shard 0 came back with the 200 rows of its snapshot: 100 rows are lost.
    ledger.shard_recoveries([recovery("a2", 200, size=200, restored_from="s0.parquet"), recovery("b", 50)])
    record = ledger.record()
    assert record["faults/replay_restarts"] == 1 and record["faults/replay_rows_lost"] == 100
    assert "replay shard 0 restarted from s0.parquet with 200 rows: 100 rows lost" in capsys.readouterr().out
    # Rows the new incarnation takes afterwards are not lost again.
    ledger.actor_call(stats(shard=0, total_added=260, incarnation="a2"), wall=1.0)
    ledger.shard_recoveries([recovery("a2", 260), recovery("b", 50)])
    assert ledger.record()["faults/replay_rows_lost_total"] == 100


def test_a_learner_restart_and_a_resumed_run(capsys):
    ledger = FaultLedger([])
    ledger.learner_restarted(updates_before=40, updates_after=30, restored_from="ckpt-000000030.pt", seconds=3.0)
    record = ledger.record()
    assert record["faults/learner_restarts"] == 1 and record["faults/learner_updates_lost"] == 10
    out = capsys.readouterr().out
    assert "learner restarted from ckpt-000000030.pt with 30 updates (10 updates lost, 3.0 s)" in out
    resumed = FaultLedger([])
    resumed.restore(ledger.totals)
    first = resumed.record()
    assert first["faults/learner_restarts"] == 0 and first["faults/learner_restarts_total"] == 1
    resumed.restore({})  # a checkpoint from before the ledger: totals stay
    with pytest.raises(ValueError, match="unknown names \\['learner_crashes'\\]"):
        resumed.restore({"learner_crashes": 1})
