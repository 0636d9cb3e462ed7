"""How a training run appears in W&B: where it is filed, its x-axes, and its evaluations
as one table.

- **Where it is filed.** W&B's run table filters and groups by ``group`` and ``job_type``,
  and shows the run's name. A plain ``python -m launch`` run is filed under
  ``<algo>-<game>`` (job type ``train``), named after its run directory. An experiment's
  trial (``launch/experiments/tune_run.py``) is filed under the experiment's name, its
  job type is its arm, its name says arm, instance (or board) and seed, and the same
  four are tags and config entries, so that the trials of one arm, one board or one seed
  can be selected together. :class:`WandbRun` holds these; :func:`init_args` turns one
  into the arguments of ``wandb.init``, passed explicitly rather than through ``WANDB_*``
  variables, which would leak into every later run of the process.
- **X-axes.** Every record carries the run's ``updates`` (gradient steps), ``compute``
  (the proxy N_forward + 3 N_backward, in samples) and ``elapsed`` (seconds of training);
  they are declared as metrics (``X_AXES``), and every other key is plotted against
  ``updates`` by default, so that a chart can switch to compute or wall time.
- **Evaluations as a table.** A trial, when W&B is online, logs its evaluation records at
  its end as one ``wandb.Table`` (``EVALUATION_TABLE``): a row per evaluation, with the
  run's updates, rows, compute and elapsed seconds then and its ``eval/`` metrics: the
  trial's curves in a form that can be filtered and exported beside other trials'. Offline runs are left out: their files already hold
  the same history, and a table is uploaded only by a later ``wandb sync``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

X_AXES = ("updates", "compute", "elapsed")
EVALUATION_TABLE = "evaluations"
TABLE_COUNTERS = ("updates", "rows", "compute", "elapsed")  # the leading columns: when each evaluation ran


@dataclass(frozen=True)
class WandbRun:
    """Where W&B files a run (``group``, ``job_type``, ``name``, ``tags``), the entries
    added to its config, and whether it logs its evaluations as a table at its end."""

    group: str
    job_type: str
    name: str
    tags: tuple[str, ...] = ()
    config: dict = field(default_factory=dict)
    evaluation_table: bool = False


def board_label(game: str, game_params: dict) -> str:
    """The game and its parameters in a run name: ``connect4``, ``connect4-width4-height4``."""
    return "-".join([game, *(f"{k}{v}" for k, v in sorted(game_params.items()))])


def plain_run(config: dict, run_name: str) -> WandbRun:
    """A ``python -m launch`` run: the runs of one algorithm on one game together."""
    return WandbRun(group=f"{config['algo']}-{config['game']}", job_type="train", name=run_name,
                    tags=(config["algo"], config["game"]))


def trial_run(experiment: str, arm: str, instance: str, seed: int, config: dict) -> WandbRun:
    """An experiment's trial; ``instance``: the spec's instance, "" when it lists none (the
    board then names the trial)."""
    where = instance or board_label(config["game"], config.get("game_params") or {})
    return WandbRun(group=experiment, job_type=arm, name=f"{arm}-{where}-s{seed}",
                    tags=(experiment, arm, where, f"seed{seed}"),
                    config={"experiment": experiment, "arm": arm, "instance": where, "seed": seed},
                    evaluation_table=True)


def init_args(run: WandbRun, *, run_id: str, mode: str, directory: str, config: dict) -> dict:
    """The keyword arguments of ``wandb.init`` for ``run`` (the W&B ``settings`` aside):
    ``run_id`` continues the same W&B run on ``--resume``."""
    return {"project": os.environ.get("WANDB_PROJECT", "selfplay"), "id": run_id, "resume": "allow",
            "dir": directory, "mode": mode, "group": run.group, "job_type": run.job_type, "name": run.name,
            "tags": list(run.tags), "config": {**config, **run.config}}


def start(run: WandbRun, *, run_id: str, mode: str, directory: str, config: dict):
    """The started W&B run, its x-axes declared."""
    import wandb

    os.environ.setdefault("WANDB_SILENT", "true")
    started = wandb.init(**init_args(run, run_id=run_id, mode=mode, directory=directory, config=config),
                         settings=wandb.Settings(console="off"))
    for axis in X_AXES:
        started.define_metric(axis)
    started.define_metric("*", step_metric="updates")
    return started


def evaluation_rows(records: list[dict]) -> tuple[list[str], list[list]]:
    """(columns, rows) of the evaluations among ``records`` (``metrics.jsonl``): a row per
    record with an ``eval/`` number, ``TABLE_COUNTERS`` first, then every ``eval/`` metric
    any of them has, sorted; a value a record lacks (a suite not run that time) is None."""
    evaluated = [r for r in records if any(k.startswith("eval/") and _is_number(v) for k, v in r.items())]
    metrics = sorted({k for r in evaluated for k, v in r.items() if k.startswith("eval/") and _is_number(v)})
    columns = [*TABLE_COUNTERS, *metrics]
    rows = [[r[c] if _is_number(r.get(c)) else None for c in columns] for r in evaluated]
    return columns, rows


def log_evaluation_table(started, records: list[dict]) -> None:
    """Log ``records``' evaluations (:func:`evaluation_rows`) to the W&B run ``started``."""
    import wandb

    columns, rows = evaluation_rows(records)
    if rows:
        started.log({EVALUATION_TABLE: wandb.Table(columns=columns, data=rows)})


def _is_number(value) -> bool:
    # W&B tables take finite numbers; a bool is a flag, not a metric.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
