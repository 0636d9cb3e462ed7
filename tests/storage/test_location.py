"""The run's storage behaves the same on a local path and on a real S3-protocol server
(moto's, in its own process): atomic writes, listings, copies, deletions, and a clear
error naming the location when the server cannot be reached."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import storage


@pytest.fixture(params=["path", "s3"])
def root(request, tmp_path):
    if request.param == "path":
        return tmp_path / "run"
    request.getfixturevalue("s3_server")
    return f"s3://runs/{uuid.uuid4().hex[:8]}"


@pytest.mark.slow
def test_a_location_round_trips_on_a_path_and_on_an_object_store(root):
    assert not storage.exists(root) and storage.listdir(root) == []
    data = os.urandom(3 << 20)  # several multipart-sized chunks on S3
    ckpt = storage.join(root, "checkpoints", "ckpt-1.pt")
    storage.write_atomic(ckpt, data)
    storage.write_atomic(storage.join(root, "config.json"), lambda f: f.write(b'{"a": 1}'))
    assert isinstance(ckpt, Path) == (not storage.is_remote(root))
    assert storage.listdir(root) == ["checkpoints", "config.json"]
    assert storage.is_dir(storage.join(root, "checkpoints")) and storage.is_file(ckpt)
    assert storage.read_bytes(ckpt) == data and storage.size(ckpt) == len(data)
    assert storage.sha256(ckpt) == hashlib.sha256(data).hexdigest()
    storage.write_atomic(ckpt, b"replaced")  # a rewrite replaces the whole file
    assert storage.read_text(ckpt) == "replaced"
    copy = storage.join(root, "replay", "live.parquet")
    storage.copy(ckpt, copy)
    assert storage.read_bytes(copy) == b"replaced"
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(storage.join(root, "missing"))
    storage.delete(storage.join(root, "missing"))  # nothing to delete is no error
    storage.delete_tree(storage.join(root, "replay"))
    assert storage.listdir(root) == ["checkpoints", "config.json"]
    storage.delete(ckpt)
    assert not storage.exists(ckpt)


def test_an_unreachable_object_store_is_an_error_naming_it():
    # A fresh process with an endpoint where nothing listens (port 1).
    code = ("import storage\n"
            "try:\n    storage.listdir('s3://runs/lost/checkpoints')\n"
            "except storage.StorageError as e:\n    print('StorageError', e)\n")
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("StorageError run storage s3://runs/lost/checkpoints: listing it failed"), out


@pytest.mark.slow
def test_a_run_on_an_unreachable_store_stops_before_ray_starts(tmp_path):
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "RAY_TMPDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "launch", "--algo", "avi", "--game", "tictactoe", "--updates", "8",
                             "--run-dir", "s3://runs/unreachable", "--wandb", "disabled"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "error: run storage s3://runs/unreachable/config.json" in result.stderr
    assert "Started a local Ray" not in result.stdout + result.stderr
