"""Self-play's way into the replay (``ReplayService.put``) and the learner's sampler when a
shard process is killed between calls (on the session's Ray): the rows are sent again
to the restarted shard, which holds its snapshot plus them, and requests that the
sampler had in flight to the dead shard are dropped rather than raised."""

from __future__ import annotations

import time

import numpy as np
import ray
from ray.exceptions import RayActorError

from replay.rows import avi_schema
from replay.service import ReplaySampler, ReplayService

OBS = (3, 3, 3)
SCHEMA = avi_schema(OBS)


def make_rows(n: int, start: int) -> dict:
    return {"obs": np.zeros((n, *OBS), np.uint8), "target": np.arange(start, start + n, dtype=np.float32),
            "version": np.zeros(n, np.int64)}


def wait_until_replaced(shard, incarnation: str, timeout: float = 60.0) -> None:
    """Block until the shard process ``incarnation`` is gone (ray.kill does not wait): a call
    fails while Ray restarts it, or its successor answers. A put sent earlier could still
    reach the old process."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ray.get(shard.recovery.remote()).incarnation != incarnation:
                return
        except RayActorError:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"replay shard {incarnation} still answers {timeout:.0f} s after it was killed")
        time.sleep(0.05)


def test_put_reaches_the_restarted_shard_and_the_sampler_goes_on(ray_session, tmp_path):
    service = ReplayService.create(SCHEMA, 200, 2, snapshot_dir=str(tmp_path), name="f-put")
    try:
        reply, failures = service.put(make_rows(40, 0), shard=0)
        assert (reply.shard, reply.total_added, failures) == (0, 40, 0)
        service.put(make_rows(40, 100), shard=1)
        service.snapshot()
        reply, _ = service.put(make_rows(25, 40), shard=0)  # not in the snapshot: lost in the crash
        first = reply.incarnation
        sampler = ReplaySampler(service, batch_size=16, prefetch=4, seed=0)
        sampler.expect(5)
        sampler.next()  # four requests now in flight, to both shards

        ray.kill(service.shards[0], no_restart=False)
        wait_until_replaced(service.shards[0], first)
        reply, failures = service.put(make_rows(10, 65), shard=2)  # shard 2 % 2 == 0
        assert reply.shard == 0 and reply.incarnation != first
        assert reply.total_added == 40 + 10 and reply.size == 50  # the snapshot, then these rows
        recovery = service.recoveries()[0]
        assert recovery.restarted and recovery.incarnation == reply.incarnation
        assert recovery.stats.total_added == 40

        sampler.expect(3)  # the requests to the dead shard fail: dropped, not raised
        targets = np.concatenate([sampler.next()["target"] for _ in range(3)])
        assert not np.any((targets >= 40) & (targets < 65))  # the lost rows never come back
        assert service.sizes() == [50, 40]
    finally:
        service.close()
