"""Metrics of a run: one JSON line per record in ``metrics.jsonl`` and the same to W&B.

W&B runs offline unless credentials are present (``WANDB_API_KEY``) or online mode is
asked for; its files stay in the run directory, and a resumed run continues the same
W&B run (its id is kept in ``wandb_id.txt``).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

from evaluation.run_metrics import read_metrics  # noqa: F401  (the reader of what MetricsLogger writes)


def default_wandb_mode() -> str:
    return "online" if os.environ.get("WANDB_API_KEY") else "offline"


class MetricsLogger:
    def __init__(self, run_dir: Path, config: dict, *, wandb_mode: str | None = None, name: str = ""):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.file = open(self.path, "a", buffering=1)
        self.wandb = None
        mode = wandb_mode or default_wandb_mode()
        if mode != "disabled":
            self.wandb = _start_wandb(Path(run_dir), config, mode, name)

    def log(self, record: dict) -> None:
        record = {"time": time.time(), **record}
        self.file.write(json.dumps(record, sort_keys=True) + "\n")
        if self.wandb is not None:
            numbers = {k: v for k, v in record.items() if isinstance(v, (int, float)) and k != "time"}
            self.wandb.log(numbers, step=int(record.get("updates", 0)))

    def close(self) -> None:
        self.file.close()
        if self.wandb is not None:
            self.wandb.finish()
            self.wandb = None


def _start_wandb(run_dir: Path, config: dict, mode: str, name: str):
    import wandb

    id_file = run_dir / "wandb_id.txt"
    run_id = id_file.read_text().strip() if id_file.exists() else secrets.token_hex(4)
    id_file.write_text(run_id)
    os.environ.setdefault("WANDB_SILENT", "true")
    return wandb.init(project=os.environ.get("WANDB_PROJECT", "selfplay"), id=run_id, resume="allow",
                      dir=str(run_dir), mode=mode, config=config, name=name or run_dir.name,
                      settings=wandb.Settings(console="off"))
