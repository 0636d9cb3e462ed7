"""The keys of evaluation metrics in ``metrics.jsonl`` and W&B: written by the suite
runner, read by the reports.

A suite's metric is ``eval/<suite>/<kind>`` (``eval/connect4-uniform/policy_regret``),
or per subset of its states ``eval/<suite>/<subset>/<kind>``, where the subset may hold
slashes of its own (``eval/connect4-uniform/easy-opening/policy_regret``). The run's
built-in exact metrics are ``eval/<kind>``, without a suite.
"""

from __future__ import annotations

from typing import NamedTuple

PREFIX = "eval/"


class MetricKey(NamedTuple):
    suite: str | None  # None: the run's built-in exact metrics
    subset: str | None  # None: the suite's overall value
    kind: str  # value_mae, policy_regret, error_rate, ...

    def __str__(self) -> str:
        return PREFIX + "/".join(p for p in (self.suite, self.subset, self.kind) if p is not None)


def suite_metric(suite: str, name: str) -> str:
    """The key of a suite's metric ``name`` (``kind`` or ``subset/kind``)."""
    return f"{PREFIX}{suite}/{name}"


def parse_metric_key(key: str) -> MetricKey | None:
    """The parts of an evaluation metric's key; None for a key that is not one."""
    if not key.startswith(PREFIX) or key == PREFIX:
        return None
    parts = key[len(PREFIX):].split("/")
    if len(parts) == 1:
        return MetricKey(None, None, parts[0])
    return MetricKey(parts[0], "/".join(parts[1:-1]) or None, parts[-1])
