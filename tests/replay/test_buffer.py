"""RingBuffer and the row schema: ring order, uniform sampling, row checks, and Parquet
snapshots (bit-exact round trip, atomic replace, corrupt/truncated/mismatched files refused)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from replay.buffer import BufferStats, RingBuffer, SchemaMismatchError, SnapshotError
from replay.rows import Column, alphazero_schema, avi_schema, check_rows

OBS = (2, 6, 7)  # Connect Four


def make_rows(start: int, n: int, *, policy: int | None = None, seed: int = 0) -> dict:
    """Rows numbered start..start+n-1: ``target`` and ``version`` carry the number."""
    rng = np.random.default_rng(seed + start)
    rows = {
        "obs": rng.integers(0, 2, (n, *OBS)).astype(np.uint8),
        "target": np.arange(start, start + n, dtype=np.float32),
        "version": np.arange(start, start + n, dtype=np.int64),
    }
    if policy is not None:
        rows["policy"] = rng.dirichlet(np.ones(policy), n).astype(np.float32)
    return rows


# ------------------------------------------------------------------------- rows


def test_schemas_have_the_documented_columns():
    assert avi_schema(OBS) == {
        "obs": Column(OBS, "uint8"),
        "target": Column((), "float32"),
        "version": Column((), "int64"),
    }
    schema = alphazero_schema(OBS, 7)
    assert list(schema) == ["obs", "target", "version", "policy"]
    assert schema["policy"] == Column((7,), "float32")
    assert Column([2, 3], np.float32) == Column((2, 3), "float32")  # one canonical spelling


def test_check_rows_returns_n():
    assert check_rows(avi_schema(OBS), make_rows(0, 5)) == 5
    assert check_rows(alphazero_schema(OBS, 7), make_rows(0, 0, policy=7)) == 0


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.pop("version"), "missing columns ['version']"),
        (lambda r: r.update(extra=np.zeros(5)), "unexpected columns ['extra']"),
        (lambda r: r.update(obs=r["obs"].astype(np.float32)), "column 'obs': expected dtype uint8, got float32"),
        (lambda r: r.update(target=r["target"].astype(np.float64)), "expected dtype float32, got float64"),
        (lambda r: r.update(obs=r["obs"][:, :1]), "column 'obs': expected shape [N, 2, 6, 7], got [5, 1, 6, 7]"),
        (lambda r: r.update(target=r["target"][:, None]), "column 'target': expected shape [N], got [5, 1]"),
        (lambda r: r.update(version=r["version"][:4]), "'obs' has 5 rows, 'version' has 4"),
        (lambda r: r.update(target=r["target"].tolist()), "column 'target': expected a numpy array, got list"),
    ],
)
def test_check_rows_refuses_bad_rows(change, message):
    rows = make_rows(0, 5)
    change(rows)
    with pytest.raises(ValueError) as err:
        check_rows(avi_schema(OBS), rows)
    assert message in str(err.value)


# ----------------------------------------------------------------- ring, sample


def test_ring_wraps_around_and_keeps_order():
    buffer = RingBuffer(avi_schema(OBS), capacity=5)
    rows = make_rows(0, 3)
    assert buffer.add(rows) == 3
    assert buffer.rows_in_order()["target"].tolist() == [0, 1, 2]
    assert buffer.add(make_rows(3, 4)) == 4  # wraps: rows 0 and 1 overwritten
    assert buffer.rows_in_order()["target"].tolist() == [2, 3, 4, 5, 6]
    assert (buffer.size, buffer.capacity, buffer.total_added) == (5, 5, 7)
    np.testing.assert_array_equal(buffer.rows_in_order()["obs"][0], rows["obs"][2])

    assert buffer.add(make_rows(7, 12)) == 5  # larger than the ring: its last 5 rows stay
    assert buffer.rows_in_order()["target"].tolist() == [14, 15, 16, 17, 18]
    assert buffer.rows_in_order()["version"].tolist() == [14, 15, 16, 17, 18]
    assert (buffer.size, buffer.total_added) == (5, 19)
    assert buffer.add(make_rows(19, 0)) == 0


def test_stats():
    buffer = RingBuffer(avi_schema(OBS), capacity=4)
    assert buffer.stats() == BufferStats(size=0, capacity=4, total_added=0, total_sampled=0,
                                         target_mean=None, target_std=None)  # fmt: skip
    buffer.add(make_rows(0, 6))  # stores 2, 3, 4, 5
    buffer.sample(10)
    stats = buffer.stats()
    assert {k: getattr(stats, k) for k in ("size", "capacity", "total_added", "total_sampled")} == {
        "size": 4, "capacity": 4, "total_added": 6, "total_sampled": 10}  # fmt: skip
    assert stats.target_mean == pytest.approx(3.5)
    assert stats.target_std == pytest.approx(np.std([2, 3, 4, 5]))


def test_sampling_is_uniform_over_stored_rows():
    capacity = 50
    buffer = RingBuffer(avi_schema(OBS), capacity=capacity, seed=3)
    buffer.add(make_rows(0, 80))  # wrapped: rows 30..79 stored
    draws = np.concatenate([buffer.sample(1000)["version"] for _ in range(50)])  # [50_000]
    assert draws.min() >= 30 and draws.max() <= 79  # overwritten rows never come back
    counts = np.bincount(draws - 30, minlength=capacity)
    expected = len(draws) / capacity
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # 49 degrees of freedom: mean 49, sd 9.9; outside (20, 110) has probability < 1e-4.
    assert 20 < chi2 < 110, chi2
    assert buffer.total_sampled == 50_000


def test_sample_rows_match_and_external_rng_leaves_own_generator():
    buffer = RingBuffer(avi_schema(OBS), capacity=8, seed=1)
    rows = make_rows(0, 8)
    buffer.add(rows)
    state = buffer.rng.bit_generator.state
    batch = buffer.sample(32, rng=np.random.default_rng(9))
    assert buffer.rng.bit_generator.state == state
    index = batch["version"]  # row number == position in ``rows``
    np.testing.assert_array_equal(batch["obs"], rows["obs"][index])
    np.testing.assert_array_equal(batch["target"], rows["target"][index])
    assert {k: v.dtype for k, v in batch.items()} == {"obs": np.uint8, "target": np.float32, "version": np.int64}


def test_sampling_an_empty_buffer_is_refused():
    buffer = RingBuffer(avi_schema(OBS), capacity=8)
    with pytest.raises(ValueError, match="empty replay buffer"):
        buffer.sample(1)
    assert buffer.sample(0)["obs"].shape == (0, *OBS)


# -------------------------------------------------------------------- snapshots


def filled_buffer() -> RingBuffer:
    buffer = RingBuffer(alphazero_schema(OBS, 7), capacity=100, seed=5)
    buffer.add(make_rows(0, 70, policy=7))
    buffer.add(make_rows(70, 60, policy=7))  # wrapped: the ring starts mid-array
    buffer.sample(33)
    return buffer


def test_snapshot_restore_round_trip_is_bit_exact(tmp_path):
    buffer = filled_buffer()
    path = buffer.snapshot(tmp_path / "shard.parquet")
    assert os.listdir(tmp_path) == ["shard.parquet"]  # the temporary file was renamed away

    restored = RingBuffer.restore(path, schema=buffer.schema)
    assert restored.schema == buffer.schema
    assert restored.stats() == buffer.stats()
    assert restored.rng.bit_generator.state == buffer.rng.bit_generator.state
    for name, values in buffer.rows_in_order().items():
        again = restored.rows_in_order()[name]
        assert again.dtype == values.dtype and again.tobytes() == values.tobytes(), name

    # Both continue identically: sampling, adding past the wrap point, sampling again.
    for step in range(3):
        a, b = buffer.sample(64), restored.sample(64)
        assert all(np.array_equal(a[k], b[k]) for k in a), step
        buffer.add(make_rows(1000 + 50 * step, 50, policy=7))
        restored.add(make_rows(1000 + 50 * step, 50, policy=7))
    assert restored.stats() == buffer.stats()


def test_snapshot_file_layout(tmp_path):
    buffer = filled_buffer()
    path = buffer.snapshot(tmp_path / "shard.parquet")
    schema = pq.read_schema(path)
    assert schema.names == ["obs", "target", "version", "policy"]
    assert schema.field("obs").type == pa.binary(84)
    assert schema.field("policy").type == pa.binary(28)
    assert schema.field("target").type == pa.float32()
    meta = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    assert meta["replay.capacity"] == "100" and meta["replay.total_added"] == "130"
    assert meta["replay.total_sampled"] == "33"
    table = pq.read_table(path)
    assert table.column("version").to_pylist() == list(range(30, 130))  # oldest first
    rows = buffer.rows_in_order()
    assert table.column("obs")[0].as_py() == rows["obs"][0].tobytes()  # C order
    policy = np.frombuffer(table.column("policy")[5].as_py(), "<f4")  # little-endian
    np.testing.assert_array_equal(policy, rows["policy"][5])


def test_snapshot_replaces_existing_file_and_restores_empty_buffer(tmp_path):
    path = tmp_path / "shard.parquet"
    filled_buffer().snapshot(path)
    empty = RingBuffer(avi_schema(OBS), capacity=10, seed=2)
    empty.snapshot(path)  # atomically replaces the larger snapshot
    restored = RingBuffer.restore(path)
    assert restored.size == 0 and restored.capacity == 10 and restored.schema == avi_schema(OBS)
    assert sorted(os.listdir(tmp_path)) == ["shard.parquet"]


def test_truncated_snapshot_is_refused(tmp_path):
    path = filled_buffer().snapshot(tmp_path / "shard.parquet")
    data = path_bytes(path)
    for cut in (0, 4, len(data) // 2, len(data) - 1):
        bad = tmp_path / f"cut{cut}.parquet"
        bad.write_bytes(data[:cut])
        with pytest.raises(SnapshotError, match=str(bad)):
            RingBuffer.restore(bad)


@pytest.mark.slow
def test_corrupt_snapshot_is_refused_or_identical(tmp_path):
    """Flip one bit at offsets all over the file: each damaged file is refused naming it, or
    (a bit Parquet never reads) restores to exactly the same buffer; never to a different one."""
    buffer = filled_buffer()
    path = buffer.snapshot(tmp_path / "shard.parquet")
    data = path_bytes(path)
    expected = buffer.rows_in_order()
    bad = tmp_path / "bad.parquet"
    tries = refused = 0
    for offset in range(0, len(data), 7):
        for bit in (0x01, 0x80):
            corrupt = bytearray(data)
            corrupt[offset] ^= bit
            bad.write_bytes(bytes(corrupt))
            tries += 1
            try:
                restored = RingBuffer.restore(bad)
            except SnapshotError as e:
                assert str(bad) in str(e)
                refused += 1
                continue
            assert restored.stats() == buffer.stats(), offset
            assert restored.rng.bit_generator.state == buffer.rng.bit_generator.state, offset
            assert all(np.array_equal(restored.rows_in_order()[k], v) for k, v in expected.items()), offset
    assert refused > 0.5 * tries


def test_missing_file_and_foreign_parquet_are_refused(tmp_path):
    with pytest.raises(SnapshotError, match="nothing.parquet"):
        RingBuffer.restore(tmp_path / "nothing.parquet")
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"target": pa.array([1.0, 2.0], pa.float32())}), foreign)
    with pytest.raises(SnapshotError, match="not a replay snapshot"):
        RingBuffer.restore(foreign)


def test_schema_mismatch_is_refused(tmp_path):
    path = RingBuffer(avi_schema(OBS), capacity=10).snapshot(tmp_path / "shard.parquet")
    with pytest.raises(SchemaMismatchError) as err:
        RingBuffer.restore(path, schema=avi_schema((3, 6, 7)))
    message = str(err.value)
    assert str(path) in message
    assert "obs:uint8[2,6,7]" in message and "obs:uint8[3,6,7]" in message
    with pytest.raises(SchemaMismatchError, match="policy"):
        RingBuffer.restore(path, schema=alphazero_schema(OBS, 7))


def path_bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()
