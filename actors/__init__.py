"""Self-play actors: AVI collection, AlphaZero self-play, AZAL labels and the Ray actor pool."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def collect_steps(step: Callable[[], dict[str, np.ndarray]], steps: int,
                  deadline: float | None = None) -> dict[str, np.ndarray]:
    """``steps`` calls of ``step`` (one move of every environment, returning rows), their
    rows concatenated in order. Past ``deadline`` (a ``time.time()``) it stops early,
    after at least one step."""
    parts = []
    for _ in range(steps):
        parts.append(step())
        if deadline is not None and time.time() > deadline:
            break
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
