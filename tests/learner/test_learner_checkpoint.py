"""Checkpoints: round trip, atomic saves, corrupt and truncated files refused with a
message naming the file, fallback to the newest good checkpoint, pruning."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import torch

from learner.checkpoint import (
    CorruptCheckpointError,
    LearnerState,
    RunCheckpoint,
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    load_run_checkpoint,
    prune,
    save_checkpoint,
    save_run_checkpoint,
)


def payload(step):
    return {"step": step, "net": {"w": torch.full((64, 64), float(step))}, "name": "avi",
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.default_rng(step).bit_generator.state},
            "betas": (0.9, 0.999), "none": None, "list": [1, 2.5, "x"], 7: "int key"}


class FailsToPickle(dict):
    """Passes the payload check (it is a dict) but fails inside torch.save."""

    def __reduce_ex__(self, protocol):
        raise RuntimeError("cannot pickle this on purpose")


def test_round_trip(tmp_path):
    path = save_checkpoint(checkpoint_path(tmp_path, 42), payload(42))
    assert path.name == "ckpt-000000042.pt"
    checksum = (tmp_path / "ckpt-000000042.pt.sha256").read_text().split()
    assert len(checksum[0]) == 64 and checksum[1] == path.name  # sha256sum -c format
    got = load_checkpoint(path)
    assert got["step"] == 42 and got["name"] == "avi" and got[7] == "int key"
    assert torch.equal(got["net"]["w"], payload(42)["net"]["w"])
    assert got["rng"]["numpy"] == np.random.default_rng(42).bit_generator.state
    assert got["betas"] == (0.9, 0.999) and got["none"] is None and got["list"] == [1, 2.5, "x"]


def test_failed_save_leaves_no_partial_file(tmp_path):
    path = checkpoint_path(tmp_path, 5)
    save_checkpoint(path, payload(5))
    bad = {"net": {"w": torch.zeros(256, 256)}, "later": FailsToPickle(a=1)}
    with pytest.raises(RuntimeError, match="on purpose"):
        save_checkpoint(path, bad)
    # The previous checkpoint under that name is intact, and nothing else was left behind.
    assert load_checkpoint(path)["step"] == 5
    assert sorted(os.listdir(tmp_path)) == ["ckpt-000000005.pt", "ckpt-000000005.pt.sha256"]
    with pytest.raises(RuntimeError, match="on purpose"):
        save_checkpoint(checkpoint_path(tmp_path, 6), bad)
    assert sorted(os.listdir(tmp_path)) == ["ckpt-000000005.pt", "ckpt-000000005.pt.sha256"]


def test_unloadable_payload_is_refused_before_writing(tmp_path):
    with pytest.raises(TypeError, match=r"payload\['rng'\]\['numpy'\] is a numpy.ndarray"):
        save_checkpoint(tmp_path / "ckpt-000000001.pt", {"rng": {"numpy": np.zeros(3)}})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_checkpoint_is_refused(tmp_path, damage):
    path = save_checkpoint(checkpoint_path(tmp_path, 9), payload(9))
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    else:
        data = data[: len(data) // 2]
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCheckpointError, match=r"ckpt-000000009\.pt: SHA-256 mismatch .* truncated or corrupt"):
        load_checkpoint(path)


def test_missing_checksum_is_refused(tmp_path):
    path = save_checkpoint(checkpoint_path(tmp_path, 3), payload(3))
    (tmp_path / "ckpt-000000003.pt.sha256").unlink()
    with pytest.raises(CorruptCheckpointError, match=r"ckpt-000000003\.pt: no readable checksum file"):
        load_checkpoint(path)


def test_latest_checkpoint_falls_back_past_corrupt_ones(tmp_path, caplog):
    assert latest_checkpoint(tmp_path) is None
    assert latest_checkpoint(tmp_path / "missing") is None
    for step in (100, 200, 1000):  # 1000 sorts last as text but is the newest
        save_checkpoint(checkpoint_path(tmp_path, step), payload(step))
    assert latest_checkpoint(tmp_path).name == "ckpt-000001000.pt"
    newest = checkpoint_path(tmp_path, 1000)
    newest.write_bytes(newest.read_bytes()[:100])  # as if the machine died mid-write
    with caplog.at_level(logging.WARNING, logger="learner.checkpoint"):
        found = latest_checkpoint(tmp_path)
    assert found.name == "ckpt-000000200.pt" and load_checkpoint(found)["step"] == 200
    assert "skipping corrupt checkpoint" in caplog.text and "ckpt-000001000.pt" in caplog.text


def test_prune_keeps_the_newest(tmp_path):
    for step in (1, 2, 3, 4, 5):
        save_checkpoint(checkpoint_path(tmp_path, step), payload(step))
    removed = prune(tmp_path, keep=2)
    assert [p.name for p in removed] == ["ckpt-000000003.pt", "ckpt-000000002.pt", "ckpt-000000001.pt"]
    assert sorted(os.listdir(tmp_path)) == ["ckpt-000000004.pt", "ckpt-000000004.pt.sha256",
                                            "ckpt-000000005.pt", "ckpt-000000005.pt.sha256"]
    with pytest.raises(ValueError, match="keep must be >= 1"):
        prune(tmp_path, keep=0)


def test_prune_also_keeps_the_first_checkpoint_of_each_multiple(tmp_path):
    """A run checkpointing every 96 updates, pruned after each save as the run does: the
    newest 2, and the oldest at or past 0, 256, 512, ... (0, 288, 576, 768) stay."""
    kept_at = {}
    for step in range(0, 1057, 96):
        save_checkpoint(checkpoint_path(tmp_path, step), payload(step))
        prune(tmp_path, keep=2, every=256)
        kept_at[step] = sorted(int(name[5:14]) for name in os.listdir(tmp_path) if name.endswith(".pt"))
    assert kept_at[1056] == [0, 288, 576, 768, 960, 1056]
    assert kept_at[672] == [0, 288, 576, 672]  # 576 stays kept once 672 follows it
    assert all(p.endswith(".pt.sha256") or os.path.exists(tmp_path / (p + ".sha256"))
               for p in os.listdir(tmp_path))  # every kept checkpoint keeps its checksum
    assert load_checkpoint(checkpoint_path(tmp_path, 288))["step"] == 288
    with pytest.raises(ValueError, match="every must be >= 0"):
        prune(tmp_path, keep=2, every=-1)


def run_checkpoint(step):
    return RunCheckpoint(counters={"updates": step}, learner=LearnerState(payload(step), {"state": 3}),
                         actors=[{"calls": 2}], config='{"algo": "avi"}', faults={"actor_restarts": 1})


def test_a_run_checkpoint_round_trips_as_its_record(tmp_path):
    path = save_run_checkpoint(checkpoint_path(tmp_path, 8), run_checkpoint(8))
    got = load_run_checkpoint(path)
    assert isinstance(got, RunCheckpoint) and isinstance(got.learner, LearnerState)
    assert got.counters == {"updates": 8} and got.learner.learner["step"] == 8
    assert got.learner.sampler_rng == {"state": 3}
    assert got.actors == [{"calls": 2}] and got.config == '{"algo": "avi"}' and got.faults == {"actor_restarts": 1}


def test_a_run_checkpoint_missing_a_part_names_the_file_and_the_part(tmp_path):
    old = run_checkpoint(4).to_payload()
    del old["faults"]  # written before the fault totals were kept: still loads
    save_checkpoint(checkpoint_path(tmp_path, 4), old)
    assert load_run_checkpoint(checkpoint_path(tmp_path, 4)).faults == {}
    for missing in ("actors", "counters"):
        broken = run_checkpoint(5).to_payload()
        del broken[missing]
        path = save_checkpoint(checkpoint_path(tmp_path, 5), broken)
        with pytest.raises(CorruptCheckpointError, match=f"ckpt-000000005.pt: holds no {missing}"):
            load_run_checkpoint(path)
    path = save_checkpoint(checkpoint_path(tmp_path, 6), {"learner": {"learner": {}}})  # no sampler state
    with pytest.raises(CorruptCheckpointError, match="ckpt-000000006.pt: holds no learner state"):
        load_run_checkpoint(path)
