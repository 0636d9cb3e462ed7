"""The replay service's configuration, validated here; ``--set replay.KEY=VALUE``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReplayConfig:
    """The ring buffers of training rows (replay/service.py)."""

    capacity: int = 1_000_000  # rows over all shards
    shards: int = 2  # ring-buffer actors

    def __post_init__(self):
        if self.shards < 1:
            raise ValueError(f"shards must be >= 1, got {self.shards}")
        if self.capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {self.capacity}")

    def check(self) -> None:
        """The checks across fields (each field alone is checked on construction)."""
        if self.capacity < self.shards:
            raise ValueError(f"capacity ({self.capacity}) must be at least shards ({self.shards})")
