"""The training row: the one record that crosses actors -> replay -> learner.

A schema is an ordered ``dict[str, Column]``; a batch of ``N`` rows is a
``dict[str, np.ndarray]`` with the same keys, column ``c`` holding an array of shape
``[N, *schema[c].shape]`` and dtype ``schema[c].dtype``. Producers build rows that
match exactly (``check_rows`` refuses anything else, it never converts), so every
consumer can rely on the dtypes without checking again.

    obs      uint8[N, *obs_shape]  the encoded position, 0/1 planes from the mover's
                                   point of view (uint8: 4x smaller than float32)
    target   float32[N]            the value target for the mover
    version  int64[N]              weight version that produced the row (policy lag)
    policy      float32[N, A]      AlphaZero and AZAL: the search's visit distribution
    aux_policy  float32[N, A]      AZAL only: the oracle's smoothed target q(a|s), all
                                   zeros on rows the oracle did not label

The action distributions an algorithm's rows carry are its descriptor's
``policy_columns`` (``algorithms/``), in the order its loss reads them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

import numpy as np


@dataclass(frozen=True)
class Column:
    """Per-row shape (without the leading row axis) and numpy dtype name of one column."""

    shape: tuple
    dtype: str

    def __post_init__(self):
        shape = tuple(int(d) for d in self.shape)
        if any(d <= 0 for d in shape):
            raise ValueError(f"Column shape must have positive dimensions, got {self.shape}")
        # One canonical spelling ('float32', not 'f4' or np.float32) so schemas compare equal.
        dtype = np.dtype(self.dtype).name
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)


Schema = dict  # dict[str, Column], ordered

POLICY = "policy"
AUX_POLICY = "aux_policy"
BASE_COLUMNS = ("obs", "target", "version")  # every algorithm's rows


def avi_schema(obs_shape) -> Schema:
    """The columns of every algorithm's rows (AVI's all): position, value target, producing weight version."""
    return {
        "obs": Column(tuple(obs_shape), "uint8"),
        "target": Column((), "float32"),
        "version": Column((), "int64"),
    }


def schema_for(policy_columns, obs_shape, num_actions: int) -> Schema:
    """The rows of an algorithm whose rows carry the action distributions ``policy_columns``
    (its descriptor's, ``algorithms.descriptor(algo).policy_columns``), each ``float32[A]``,
    after the base columns: AVI none, AlphaZero (POLICY,), AZAL (POLICY, AUX_POLICY)."""
    schema = avi_schema(obs_shape)
    for name in policy_columns:
        if name in schema:
            raise ValueError(f"an algorithm's action distribution cannot be named {name!r}: "
                             f"{', '.join(BASE_COLUMNS)} are every row's")
        schema[name] = Column((int(num_actions),), "float32")
    return schema


def alphazero_schema(obs_shape, num_actions: int) -> Schema:
    """AVI's rows plus the search policy ``float32[A]`` of AlphaZero self-play."""
    return schema_for((POLICY,), obs_shape, num_actions)


def check_rows(schema: Mapping[str, Column], rows: Mapping[str, np.ndarray]) -> int:
    """The number of rows ``N`` in ``rows``, after checking them against ``schema``.

    Raises ``ValueError`` naming the column for missing or unexpected columns, a value
    that is not a numpy array, a wrong dtype (no casting: a float 0/1 ``obs`` must be
    cast to uint8 by the producer), a wrong per-row shape, or unequal lengths.
    """
    missing = [name for name in schema if name not in rows]
    extra = [name for name in rows if name not in schema]
    if missing or extra:
        raise ValueError(
            f"rows do not match the schema: missing columns {missing}, unexpected columns "
            f"{extra} (expected {list(schema)})"
        )
    n = None
    for name, column in schema.items():
        values = rows[name]
        if not isinstance(values, np.ndarray):
            raise ValueError(f"column {name!r}: expected a numpy array, got {type(values).__name__}")
        if values.dtype != np.dtype(column.dtype):
            raise ValueError(f"column {name!r}: expected dtype {column.dtype}, got {values.dtype}")
        if values.ndim != 1 + len(column.shape) or values.shape[1:] != column.shape:
            expected = "[" + ", ".join(["N", *map(str, column.shape)]) + "]"
            raise ValueError(f"column {name!r}: expected shape {expected}, got {list(values.shape)}")
        if n is None:
            n = values.shape[0]
        elif values.shape[0] != n:
            raise ValueError(
                f"columns have unequal lengths: {list(schema)[0]!r} has {n} rows, "
                f"{name!r} has {values.shape[0]}"
            )
    if n is None:
        raise ValueError("the schema has no columns")
    return int(n)


def schema_to_json(schema: Mapping[str, Column]) -> str:
    """The schema as a JSON object ``{name: {"shape": [...], "dtype": "..."}}``, in order."""
    return json.dumps({name: {"shape": list(c.shape), "dtype": c.dtype} for name, c in schema.items()})


def schema_from_json(text: str) -> Schema:
    """The inverse of ``schema_to_json``."""
    return {name: Column(tuple(c["shape"]), c["dtype"]) for name, c in json.loads(text).items()}


def format_schema(schema: Mapping[str, Column]) -> str:
    """A short human-readable schema, for error messages: ``obs:uint8[2,6,7] target:float32[]``."""
    return " ".join(f"{name}:{c.dtype}[{','.join(map(str, c.shape))}]" for name, c in schema.items())
