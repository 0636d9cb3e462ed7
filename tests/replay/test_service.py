"""The replay service on a real Ray session: shards as actors in their own processes,
inserts from a remote task, the prefetching sampler, snapshots, and a killed shard
coming back from its snapshot."""

from __future__ import annotations

import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from replay.rows import avi_schema
from replay.service import ReplaySampler, ReplayService

OBS = (2, 6, 7)
SCHEMA = avi_schema(OBS)


def make_rows(n: int, tag: int, start: int = 0) -> dict:
    """``n`` rows whose ``version`` is ``tag`` (which shard they went to) and ``target`` their number."""
    rng = np.random.default_rng(tag * 1000 + start)
    return {
        "obs": rng.integers(0, 2, (n, *OBS)).astype(np.uint8),
        "target": np.arange(start, start + n, dtype=np.float32),
        "version": np.full(n, tag, dtype=np.int64),
    }


@pytest.fixture
def service_factory(ray_session):
    """Creates services (named per test) and kills their shards afterwards."""
    made = []

    def create(name, **kwargs):
        kwargs.setdefault("schema", SCHEMA)
        service = ReplayService.create(name=name, **kwargs)
        made.append(service)
        return service

    yield create
    for service in made:
        service.close()


def wait_until(condition, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # a restarting actor refuses calls until it is back
            pass
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


def test_rows_from_a_remote_task_land_in_shards(ray_session, service_factory):
    ray = ray_session
    service = service_factory("t-insert", capacity=300, num_shards=3)
    assert service.shard_capacity == 100

    @ray.remote(num_cpus=0)
    def producer(service, batches):
        # The service travels to the task by pickling; the task picks shards by index,
        # modulo the number of shards.
        return ray.get([service.add(rows, shard=i) for i, rows in enumerate(batches)])

    batches = [make_rows(10, 0), make_rows(20, 1), make_rows(40, 2), make_rows(5, 3)]  # 3 % 3 == 0
    replies = ray.get(producer.remote(service, batches))
    assert [r.written for r in replies] == [10, 20, 40, 5]
    assert service.sizes() == [15, 20, 40]
    assert service.size() == 75
    stats = service.stats()
    assert [s.total_added for s in stats] == [15, 20, 40]
    assert [s.capacity for s in stats] == [100, 100, 100]
    # Round-robin without ``shard`` spreads three adds over the three shards.
    ray.get([service.add(make_rows(1, 9)) for _ in range(3)])
    assert service.sizes() == [16, 21, 41]
    with pytest.raises(ValueError, match="column 'obs': expected dtype uint8"):
        service.add({**make_rows(1, 0), "obs": np.zeros((1, *OBS), np.float32)})


def test_sampler_draws_in_proportion_to_shard_sizes(ray_session, service_factory):
    ray = ray_session
    service = service_factory("t-sample", capacity=1200, num_shards=3)
    sizes = [50, 150, 400]  # unequal on purpose
    ray.get([service.add(make_rows(n, i), shard=i) for i, n in enumerate(sizes)])

    sampler = ReplaySampler(service, batch_size=128, prefetch=4, seed=1)
    counts = np.zeros(3)
    for _ in range(100):
        batch = sampler.next()
        assert batch["obs"].shape == (128, *OBS) and batch["obs"].dtype == np.uint8
        assert batch["target"].shape == (128,) and batch["target"].dtype == np.float32
        assert batch["version"].shape == (128,) and batch["version"].dtype == np.int64
        counts += np.bincount(batch["version"], minlength=3)
        # Each row is one that was inserted in its shard (target numbers rows within a shard).
        assert np.all(batch["target"] < np.take(sizes, batch["version"]))
    share = counts / counts.sum()
    expected = np.array(sizes) / sum(sizes)
    # 12,800 draws: the standard error of each share is below 0.005.
    np.testing.assert_allclose(share, expected, atol=0.025)
    assert sampler.batches == 100 and sampler.wait_seconds > 0
    # Batches are shuffled, not grouped by shard.
    assert np.any(np.diff(batch["version"]) < 0)
    sampler.close()
    with pytest.raises(RuntimeError, match="after close"):
        sampler.next()


def test_sampler_waits_for_rows_then_times_out(ray_session, service_factory):
    ray = ray_session
    service = service_factory("t-empty", capacity=100, num_shards=2)
    with pytest.raises(TimeoutError, match=r"shard sizes \[0, 0\]"):
        ReplaySampler(service, batch_size=8, timeout=0.5).next()

    @ray.remote(num_cpus=0)
    def late_producer(service, rows):
        time.sleep(1.0)
        return ray.get(service.add(rows, shard=1))

    ref = late_producer.remote(service, make_rows(20, 1))
    batch = ReplaySampler(service, batch_size=8, timeout=30).next()  # blocks until the rows come
    assert np.all(batch["version"] == 1)
    ray.get(ref)
    with pytest.raises(TimeoutError, match="waiting for 100"):
        service.wait_for(100, timeout=0.3)
    assert service.wait_for(20, timeout=5) == 20


def test_snapshot_then_restore_into_a_fresh_service(ray_session, service_factory, tmp_path):
    ray = ray_session
    first = service_factory("t-snap", capacity=100, num_shards=2, seed=4)
    ray.get([first.add(make_rows(70, 0), shard=0), first.add(make_rows(30, 1), shard=1)])  # shard 0 wraps
    ReplaySampler(first, batch_size=16, prefetch=1).next()
    paths = first.snapshot(str(tmp_path / "a"))
    assert [p.rsplit("/", 1)[1] for p in paths] == ["t-snap-shard-0.parquet", "t-snap-shard-1.parquet"]
    stats = first.stats()
    first.close()

    # Same name (the first is gone), fresh shards, then an explicit restore.
    second = service_factory("t-snap", capacity=100, num_shards=2, seed=99)
    assert second.size() == 0
    second.restore(str(tmp_path / "a"))
    assert second.stats() == stats
    again = second.snapshot(str(tmp_path / "b"))
    for a, b in zip(paths, again):
        assert pq.read_table(a).equals(pq.read_table(b))  # same rows, same order, same metadata
    second.close()

    # Creating over a snapshot directory resumes from it at start-up.
    third = service_factory("t-snap", capacity=100, num_shards=2, snapshot_dir=str(tmp_path / "a"))
    assert third.stats() == stats
    assert [r.restored_from for r in third.recoveries()] == paths
    assert not any(r.restarted for r in third.recoveries())
    third.close()

    # A snapshot of other rows is refused at start-up, with the file and both schemas named.
    with pytest.raises(ray.exceptions.RayActorError, match=r"t-snap-shard-\d.parquet: snapshot rows have schema "
                       r"obs:uint8\[2,6,7\].*expected obs:uint8\[3,6,7\]"):  # fmt: skip
        service_factory("t-snap", schema=avi_schema((3, 6, 7)), capacity=100, num_shards=2,
                        snapshot_dir=str(tmp_path / "a"))  # fmt: skip
    # ... and the failed start freed the shard names again.
    assert service_factory("t-snap", capacity=100, num_shards=2, snapshot_dir=str(tmp_path / "a")).stats() == stats


def test_killed_shard_comes_back_from_its_snapshot(ray_session, service_factory, tmp_path):
    ray = ray_session
    service = service_factory("t-crash", capacity=200, num_shards=2, snapshot_dir=str(tmp_path))
    ray.get([service.add(make_rows(40, 0), shard=0), service.add(make_rows(40, 1), shard=1)])
    service.snapshot()
    ray.get(service.add(make_rows(25, 0, start=40), shard=0))  # not in the snapshot
    live = service.stats()
    assert [s.total_added for s in live] == [65, 40]
    sampler = ReplaySampler(service, batch_size=32, prefetch=4, seed=2)
    sampler.next()  # requests in flight to the shard about to die

    ray.kill(service.shards[0], no_restart=False)
    # Keep sampling through the crash: requests to the dead or restarting shard fail, are
    # dropped, and are redrawn once it answers again.
    deadline = time.monotonic() + 60
    while sampler.dropped == 0 and time.monotonic() < deadline:
        assert sampler.next()["obs"].shape == (32, *OBS)
    assert sampler.dropped > 0

    wait_until(lambda: service.recoveries()[0].restarted, what="shard 0 to restart")
    recovery = service.recoveries()[0]
    assert recovery.restored_from == str(tmp_path / "t-crash-shard-0.parquet")
    assert recovery.stats.total_added == 40 and recovery.stats.size == 40
    assert live[0].total_added - recovery.stats.total_added == 25  # the rows lost
    assert service.sizes() == [40, 40]
    assert not service.recoveries()[1].restarted

    for _ in range(sampler.prefetch):  # requests issued before the restart was confirmed
        sampler.next()
    for _ in range(6):
        batch = sampler.next()
        assert np.all(batch["target"] < 40)  # rows 40..64 of shard 0 are gone


def test_sampler_blocks_of_several_batches(ray_session, service_factory):
    # A GPU learner asks for many batches per round trip: `expect(10)` with 4 batches per
    # request gives blocks of 4, 4 and 2 batches, and no request is left in flight.
    ray = ray_session
    service = service_factory("t-blocks", capacity=1200, num_shards=3)
    sizes = [50, 150, 400]
    ray.get([service.add(make_rows(n, i), shard=i) for i, n in enumerate(sizes)])
    sampler = ReplaySampler(service, batch_size=32, prefetch=2, seed=5, batches_per_request=4)
    sampler.expect(10)
    blocks, counts = [], np.zeros(3)
    for _ in range(3):
        block, batches = sampler.next_block()
        blocks.append(batches)
        assert block["obs"].shape == (batches * 32, *OBS) and block["target"].shape == (batches * 32,)
        assert np.all(block["target"] < np.take(sizes, block["version"]))  # rows that were stored
        counts += np.bincount(block["version"], minlength=3)
    assert blocks == [4, 4, 2] and sampler.batches == 10 and not sampler._pending
    # Drawn in proportion to the shard sizes, as single batches are (320 draws: loose bound).
    np.testing.assert_allclose(counts / counts.sum(), np.array(sizes) / sum(sizes), atol=0.08)
    # next() hands out a block's batches one by one; next_block() refuses while some wait.
    sampler.expect(5)
    first = sampler.next()
    assert first["obs"].shape == (32, *OBS)
    with pytest.raises(RuntimeError, match="batches of a block"):
        sampler.next_block()
    assert [sampler.next()["obs"].shape[0] for _ in range(4)] == [32] * 4 and sampler.batches == 15
    with pytest.raises(ValueError, match="batches_per_request"):
        ReplaySampler(service, batch_size=32, batches_per_request=0)
    sampler.close()

