"""The tables of a study's trial data: what ``results/<study>/`` holds in the repository,
each table a Parquet file, each column declared once here with what it holds.

A study is one experiment directory (``python -m launch experiment``) or a set of runs,
kept as three tables and a ``study.json``:

- ``trials``: one row per trial, its resolved config, where and when it ran;
- ``evaluations``: one row per evaluation metric of a trial at one point of its training,
  in long form, so that a new suite or metric needs no new column;
- ``matches``: one row per head-to-head match, each side's policy and budget named.

docs/results/data.md is this module as a page; ``tests/results/test_schema.py`` holds them
equal.
"""

from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa


class Column(NamedTuple):
    name: str
    type: pa.DataType
    doc: str
    nullable: bool = False


TRIALS = (
    Column("study", pa.string(), "the study's name (its directory under results/)"),
    Column("trial", pa.string(), "the trial's name, unique in the study: instance-arm-seed"),
    Column("arm", pa.string(), "the arm (an algorithm and its settings) as the spec names it"),
    Column("arm_label", pa.string(), "the arm's label in figures"),
    Column("algo", pa.string(), "the algorithm: a name of algorithms.names()"),
    Column("game", pa.string(), "the game's registered name"),
    Column("board", pa.string(), "the figure row the trial belongs to (the spec's group: 'hex 4x4')"),
    Column("seed", pa.int64(), "the trial's seed"),
    Column("budget_updates", pa.int64(), "the gradient updates the trial may take"),
    Column("goal", pa.string(), "the spec's stop_when as JSON ({} when the budget alone ends the trial)"),
    Column("hold", pa.int64(), "evaluations in a row the goal must hold at before the trial ends"),
    Column("finished", pa.bool_(), "whether the trial ended (its budget or its held goal), not cut short"),
    Column("final_updates", pa.int64(), "the updates of the trial's last record"),
    Column("commit", pa.string(), "the source commit that ran the trial (+changes: a tree with edits)"),
    Column("machine", pa.string(), "the CPU, its cores and accelerator as the run saw them"),
    Column("started", pa.string(), "UTC time of the trial's first record, ISO 8601"),
    Column("ended", pa.string(), "UTC time of the trial's last record, ISO 8601"),
    Column("config", pa.string(), "the trial's resolved TrainConfig as JSON (config.json)"),
)

EVALUATIONS = (
    Column("study", pa.string(), "the study's name"),
    Column("trial", pa.string(), "the trial's name (trials.trial)"),
    Column("updates", pa.int64(), "gradient updates when the evaluated weights were published"),
    Column("rows", pa.int64(), "replay rows inserted by then"),
    Column("compute", pa.float64(), "the AVI paper's compute proxy N_forward + 3 N_backward by then, in samples",
           nullable=True),
    Column("wall_s", pa.float64(), "seconds since the trial's first record"),
    Column("metric", pa.string(), "the metric's key: eval/<suite>/<kind> or eval/<suite>/<subset>/<kind> "
                                  "(evaluation/metric_keys.py)"),
    Column("value", pa.float64(), "the metric's value"),
)

MATCHES = (
    Column("study", pa.string(), "the study's name"),
    Column("match", pa.string(), "the match's name"),
    Column("trial", pa.string(), "the trial whose final checkpoint plays side A"),
    Column("opponent", pa.string(), "the trial or engine on side B"),
    Column("policies", pa.string(), "each side's policy and budget as JSON, as the match played them"),
    Column("games", pa.int64(), "games played"),
    Column("wins", pa.int64(), "side A's wins"),
    Column("draws", pa.int64(), "draws"),
    Column("losses", pa.int64(), "side A's losses"),
    Column("score", pa.float64(), "side A's mean score in [-1, 1]"),
)

TABLES = {"trials": TRIALS, "evaluations": EVALUATIONS, "matches": MATCHES}
STUDY_FILE = "study.json"  # the study's name, description, spec, size and commands
TUNING_PREFIX = "tune-"  # tune-<arm>.json: an arm's tuning run (launch tune's tune.json), beside the tables


def schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in TABLES[table]])


def table_from_rows(table: str, rows: list[dict]) -> pa.Table:
    """``rows`` as the table ``table``: every column present, of its type; a missing or
    unknown column, or a null where none may be, is a ValueError naming it."""
    columns = TABLES[table]
    names = {c.name for c in columns}
    for i, row in enumerate(rows):
        if set(row) != names:
            raise ValueError(f"{table} row {i}: missing {sorted(names - set(row))}, unknown {sorted(set(row) - names)}")
        for c in columns:
            if row[c.name] is None and not c.nullable:
                raise ValueError(f"{table} row {i}: column {c.name!r} may not be empty")
    return pa.Table.from_pylist(rows, schema=schema(table))
