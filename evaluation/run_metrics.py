"""The records of a run's ``metrics.jsonl`` (one JSON object a line, written by
``launch.metrics.MetricsLogger``), read back for reports and checks. It sits here,
below ``launch``, so that evaluation reads runs without importing the launcher."""

from __future__ import annotations

import json
from pathlib import Path

import storage

METRICS_FILE = "metrics.jsonl"


def read_metrics(run_dir) -> list[dict]:
    """The records of ``run_dir/metrics.jsonl``; FileNotFoundError or ValueError name the
    run and the bad line."""
    path = storage.join(run_dir if storage.is_remote(str(run_dir)) else Path(run_dir), METRICS_FILE)
    if not storage.is_file(path):
        raise FileNotFoundError(f"run {run_dir}: no {METRICS_FILE}")
    out = []
    for i, line in enumerate(storage.read_text(path).splitlines()):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"run {run_dir}: {METRICS_FILE} line {i + 1} is not JSON ({e})") from e
    return out
