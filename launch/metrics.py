"""Metrics of a run: one JSON line per record in ``metrics.jsonl`` and the same to W&B.

W&B runs offline unless credentials are present (``WANDB_API_KEY``) or online mode is
asked for; its files stay in the run directory, and a resumed run continues the same
W&B run (its id is kept in ``wandb_id.txt``). Where the run is filed in W&B, its x-axes
and its table of evaluations: ``launch/wandb_run.py``.

A run directory on an object store (``storage``) cannot be appended to: the records are
written to a local copy (W&B's files beside it) and the whole ``metrics.jsonl`` is
uploaded at most every ``UPLOAD_SECONDS`` and at the end.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import storage
from evaluation.run_metrics import read_metrics  # noqa: F401  (the reader of what MetricsLogger writes)
from launch import wandb_run


def numbers(record: dict) -> dict:
    """The numeric entries of a record (what Ray Tune takes as a trial's result)."""
    return {k: v for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def default_wandb_mode() -> str:
    return "online" if os.environ.get("WANDB_API_KEY") else "offline"


UPLOAD_SECONDS = 10.0  # the longest a record waits to reach a run directory on an object store


class MetricsLogger:
    def __init__(self, run_dir, config: dict, *, wandb_mode: str | None = None,
                 wandb_as: wandb_run.WandbRun | None = None):
        """``wandb_as``: where W&B files the run (default: a plain run, named after ``run_dir``)."""
        self.location = storage.join(run_dir, "metrics.jsonl")
        self.remote = storage.is_remote(run_dir)
        local_dir = _local_copy(run_dir) if self.remote else Path(run_dir)
        self.path = local_dir / "metrics.jsonl"
        if self.remote and storage.exists(self.location):  # a resumed run appends to its records
            self.path.write_bytes(storage.read_bytes(self.location))
        self.file = open(self.path, "a", buffering=1)
        self.uploaded = 0.0
        self.wandb = None
        self.wandb_mode = wandb_mode or default_wandb_mode()
        self.wandb_as = wandb_as or wandb_run.plain_run(config, storage.basename(run_dir))
        if self.wandb_mode != "disabled":
            self.wandb = _start_wandb(run_dir, local_dir, config, self.wandb_mode, self.wandb_as)

    def log(self, record: dict) -> None:
        record = {"time": time.time(), **record}
        self.file.write(json.dumps(record, sort_keys=True) + "\n")
        if self.remote and time.monotonic() - self.uploaded >= UPLOAD_SECONDS:
            try:
                self._upload()
            except storage.StorageError as e:  # the records stay here; the next upload carries them all
                self.uploaded = time.monotonic()
                print(f"metrics: not uploaded ({e}); trying again in {UPLOAD_SECONDS:g} s", file=sys.stderr,
                      flush=True)
        if self.wandb is not None:
            numbers = {k: v for k, v in record.items() if isinstance(v, (int, float)) and k != "time"}
            self.wandb.log(numbers, step=int(record.get("updates", 0)))

    def _upload(self) -> None:
        storage.write_atomic(self.location, self.path.read_bytes())
        self.uploaded = time.monotonic()

    def close(self) -> None:
        self.file.close()
        if self.remote:
            try:
                self._upload()
            except storage.StorageError as e:  # the run may be ending because of it: keep its records
                print(f"metrics: the last records stay in {self.path} only: {e}", file=sys.stderr, flush=True)
        if self.wandb is not None:
            if self.wandb_as.evaluation_table and self.wandb_mode == "online":
                wandb_run.log_evaluation_table(self.wandb, read_metrics(self.path.parent))
            self.wandb.finish()
            self.wandb = None


def _local_copy(run_dir: str) -> Path:
    """The driver's local directory for a run on an object store: its records as they are
    written, and W&B's files."""
    directory = Path(tempfile.gettempdir()) / "selfplay-runs" / run_dir.split("://", 1)[1].replace("/", "_")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _start_wandb(run_dir, local_dir: Path, config: dict, mode: str, wandb_as: wandb_run.WandbRun):
    id_file = storage.join(run_dir, "wandb_id.txt")
    run_id = storage.read_text(id_file).strip() if storage.exists(id_file) else secrets.token_hex(4)
    storage.write_atomic(id_file, run_id.encode())
    return wandb_run.start(wandb_as, run_id=run_id, mode=mode, directory=str(local_dir), config=config)
