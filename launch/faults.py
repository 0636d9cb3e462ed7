"""The fault ledger of a training run: restarts, rows and updates lost, seconds lost.

Plain bookkeeping, no Ray: the run feeds it what its calls answered (the actors'
collection statistics, the replay shards' recoveries, a restarted learner's counters)
and logs ``faults/<name>`` (since the last record) and ``faults/<name>_total`` (the
run's total, kept in checkpoints across ``--resume``) with every record. Each restart
also prints one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records only: the ledger itself needs no Ray
    from actors.pool import CollectStats
    from replay.service import ShardRecovery

FAULTS = ("actor_restarts", "replay_restarts", "learner_restarts", "replay_add_failures", "replay_rows_lost",
          "learner_updates_lost", "learner_restored_updates", "learner_fresh_weights", "learner_wait_s",
          "seconds_lost")


class FaultLedger:
    def __init__(self, shard_incarnations: list[str]):
        """``shard_incarnations``: each replay shard's incarnation now."""
        self.totals = {k: 0 for k in FAULTS}
        self._logged = dict(self.totals)
        # Per shard: its incarnation, and the highest total_added seen per incarnation (from
        # the actors' replies), to count the rows a restart lost.
        self._shard_incarnation = list(shard_incarnations)
        self._shard_seen: list[dict[str, int]] = [{} for _ in shard_incarnations]
        # (actor index, incarnation) of the actor restarts counted: a collect call and a
        # checkpoint's question may both see one restart.
        self._actor_restarts: set[tuple[int, str]] = set()

    def restore(self, totals: dict) -> None:
        """Go on from the run's totals of a checkpoint (names it lacks stay 0); they are
        not news, so the next record counts from them."""
        unknown = set(totals) - set(FAULTS)
        if unknown:
            raise ValueError(f"fault totals: unknown names {sorted(unknown)}; known: {', '.join(FAULTS)}")
        self.totals.update(totals)
        self._logged = dict(self.totals)

    def actor_call(self, stats: CollectStats, wall: float) -> None:
        """One collection call of ``wall`` seconds (submit to result) answered ``stats``."""
        if stats.restarted:
            lost = max(0.0, wall - stats.seconds)
            self._count_actor_restart(stats.index, stats.actor_incarnation)
            self.totals["seconds_lost"] += lost
            print(f"self-play actor {stats.index} restarted; its call took {wall:.1f} s ({lost:.1f} s lost)",
                  flush=True)
        self.totals["replay_add_failures"] += stats.replay_add_failures
        if stats.replay_shard >= 0:
            seen = self._shard_seen[stats.replay_shard]
            seen[stats.replay_incarnation] = max(seen.get(stats.replay_incarnation, 0), stats.replay_total_added)

    def actor_restarted(self, index: int, incarnation: str) -> None:
        """Self-play actor ``index`` is the restarted process ``incarnation`` (a checkpoint
        asked): a restart unless a collect call counted it already. Its lost time is counted
        by the collect call that follows, if one does."""
        if self._count_actor_restart(index, incarnation):
            print(f"self-play actor {index} restarted (noticed at a checkpoint)", flush=True)

    def _count_actor_restart(self, index: int, incarnation: str) -> bool:
        if incarnation and (index, incarnation) in self._actor_restarts:
            return False
        self._actor_restarts.add((index, incarnation))
        self.totals["actor_restarts"] += 1
        return True

    def shard_recoveries(self, recoveries: list[ShardRecovery]) -> None:
        """Notice replay shards that restarted (``ReplayService.recoveries()``), and count
        the rows each lost: those it had taken (as the actors' replies said) beyond the
        snapshot it came back with."""
        for i, r in enumerate(recoveries):
            if r.incarnation == self._shard_incarnation[i]:
                continue
            seen = self._shard_seen[i]
            lost = max(0, max((v for k, v in seen.items() if k != r.incarnation), default=0) - r.stats.total_added)
            self._shard_incarnation[i] = r.incarnation
            self._shard_seen[i] = {k: v for k, v in seen.items() if k == r.incarnation}
            self.totals["replay_restarts"] += 1
            self.totals["replay_rows_lost"] += lost
            print(f"replay shard {i} restarted from {r.restored_from or 'nothing (no snapshot yet)'} with "
                  f"{r.stats.size} rows: {lost} rows lost (stored since that snapshot)", flush=True)

    def learner_restarted(self, *, updates_before: int, updates_after: int, restored_from: str | None,
                          seconds: float, waited: float = 0.0) -> None:
        """The learner came back with ``updates_after`` updates (its checkpoint's) after the
        run had counted ``updates_before``; the call it interrupted lost ``seconds``, of which
        ``waited`` the run spent waiting for it to answer again after it was lost (a
        replacement node's start included: ``learner_wait_s``)."""
        lost = updates_before - updates_after
        self.totals["learner_restarts"] += 1
        self.totals["learner_updates_lost"] += lost
        self.totals["learner_restored_updates"] += updates_after
        self.totals["learner_wait_s"] += waited
        self.totals["seconds_lost"] += seconds
        if restored_from is None and updates_before > 0:  # trained weights gone: say so in the records
            self.totals["learner_fresh_weights"] += 1
        print(f"learner restarted from {restored_from or 'nothing (no checkpoint yet): fresh weights'} with "
              f"{updates_after} updates ({lost} updates lost, {seconds:.1f} s)", flush=True)

    def record(self) -> dict:
        """``faults/<name>`` since the last record and ``faults/<name>_total``."""
        record = {}
        for k, total in self.totals.items():
            record[f"faults/{k}"] = total - self._logged[k]
            record[f"faults/{k}_total"] = total
        self._logged = dict(self.totals)
        return record
