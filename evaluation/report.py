"""Plots and a summary table of finished runs, from their ``metrics.jsonl``.

``write_report(run_dirs, out_dir)`` groups runs by label (``algo game`` from each
run's ``config.json``, else the directory name): runs of one label are seeds. For each
evaluation metric (records' ``eval/...`` keys) it draws one PNG with the metric
against updates and one against the compute proxy (``compute``), a line per label:
the mean over seeds, with a 95% Student-t band where there are several (as Figures 1
and 7 of the AVI paper), drawn within a bounded metric's scale (``band_edges``). Seeds
are put on a common x grid by linear interpolation within the range every seed covers
(log-spaced for compute, drawn on a log axis, so the untrained point at compute 0 is
left out there). A single run's curve marks each of its evaluations, and a match score
is drawn on its whole scale, [-1, 1]. ``summary.md`` lists, per label and metric, the
final value's mean and 95% half-width over seeds (the value alone for one seed), and
each run's checkpoint sensitivity (which the AZAL paper asks for): the mean, min, max and
standard deviation of every suite-level metric over the run's last K evaluations
(``last``, default :data:`LAST_EVALUATIONS`), each of them another set of weights along
the run, so the spread says how much the final figure depends on where the run stopped.

Experiment directories (``python -m launch experiment``) are reported by
``launch/experiments/report.py``, beside the code that writes them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from evaluation.metric_keys import KIND_RANGES, REPORT_KINDS, parse_metric_key
from evaluation.metrics import mean_ci
from evaluation.run_config import read_trained_with
from evaluation.run_metrics import read_metrics


def fmt_ci(values, digits: int = 4) -> str:
    """``mean ± half-width`` of the 95% Student-t interval; the value alone for one sample
    (there is no interval, not one of width zero), and the value with "(all N)" when
    all samples are equal (a saturated metric: the spread is none, not an estimate)."""
    m, h = mean_ci(values)
    if len(values) > 1 and len(set(values)) == 1:
        return f"{m:.{digits}f} (all {len(values)})"
    return f"{m:.{digits}f} ± {h:.{digits}f}" if len(values) > 1 else f"{m:.{digits}f}"


def _label(run_dir: Path) -> str:
    config = read_trained_with(run_dir)
    return config.label() if config is not None else Path(run_dir).name


LAST_EVALUATIONS = 5  # K of the checkpoint sensitivity: a metric's last K evaluations in a run


class Spread(NamedTuple):
    """A metric over a run's last evaluations (the checkpoint sensitivity)."""

    count: int  # evaluations: K, or fewer where the run has fewer
    mean: float
    min: float
    max: float
    std: float  # sample standard deviation (n - 1); NaN for a single evaluation


def last_evaluations(records: list[dict], metric: str, last: int = LAST_EVALUATIONS) -> list[float]:
    """``metric`` at the run's ``last`` evaluations holding it, oldest first: one value per
    update count, the last logged (as :func:`metric_series`: a resumed run logs again
    the evaluations it had made after its last checkpoint)."""
    if last < 1:
        raise ValueError(f"the checkpoint sensitivity needs at least one evaluation, got last={last}")
    _, y = metric_series(records, metric, "updates")
    return [float(v) for v in y[-last:]]


def spread(values: Sequence[float]) -> Spread:
    x = np.asarray(values, np.float64)
    if x.size == 0:
        raise ValueError("spread: no values")
    return Spread(int(x.size), float(x.mean()), float(x.min()), float(x.max()),
                  float(x.std(ddof=1)) if x.size > 1 else float("nan"))


def fmt_number(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` places; "–" for NaN (a standard deviation of one value)."""
    return "–" if not np.isfinite(value) else f"{value:.{digits}f}"


def sensitivity_lines(runs: list[tuple[str, list[dict]]], metrics: list[str], last: int) -> list[str]:
    """The summary's table of checkpoint sensitivity: a row per run (``(name, records)``)
    and suite-level metric (per-subset metrics stay in the final values' table)."""
    lines = [f"## Checkpoint sensitivity (each run's last {last} evaluations)", "",
             "| run | metric | evaluations | mean | min | max | std |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, records in runs:
        for metric in metrics:
            values = last_evaluations(records, metric, last) if parse_metric_key(metric).subset is None else []
            if values:
                s = spread(values)
                lines.append(f"| {name} | {metric.removeprefix('eval/')} | {s.count} | "
                             + " | ".join(fmt_number(v) for v in (s.mean, s.min, s.max, s.std)) + " |")
    return lines


def metric_series(records: list[dict], metric: str, x_key: str) -> tuple[np.ndarray, np.ndarray]:
    # One point per x, the last logged: a resumed run logs again the iterations it had
    # done after its last checkpoint, and the later records are those it continued from.
    latest = {float(r[x_key]): float(r[metric]) for r in records
              if metric in r and x_key in r and isinstance(r[metric], (int, float)) and np.isfinite(r[metric])}
    pts = sorted(latest.items())
    if not pts:
        return np.zeros(0), np.zeros(0)
    x, y = np.array(pts).T
    return x, y


def band(curves: list[tuple[np.ndarray, np.ndarray]], points: int = 100, log: bool = False):
    """(x grid, mean, 95% half-width) of several (x, y) curves over the x range they all
    cover; ``log``: a log-spaced grid over the points with x > 0."""
    if log:
        curves = [(x[x > 0], y[x > 0]) for x, y in curves]
    curves = [(x, y) for x, y in curves if x.size]
    if not curves:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    lo, hi = max(x.min() for x, _ in curves), min(x.max() for x, _ in curves)
    if len(curves) == 1:
        x, y = curves[0]
        return x, y, np.zeros_like(y)
    grid = (np.geomspace if log else np.linspace)(lo, hi, points) if hi > lo else np.array([lo])
    ys = np.stack([np.interp(grid, x, y) for x, y in curves])  # [seeds, points]
    stats = [mean_ci(ys[:, j]) for j in range(grid.size)]
    return grid, np.array([m for m, _ in stats]), np.array([h for _, h in stats])


def band_edges(metric: str, mean: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper edge of ``metric``'s band ``mean`` ± ``half``, within the scale
    of a bounded kind (metric_keys.KIND_RANGES); others as they are."""
    key = parse_metric_key(metric)
    low, high = KIND_RANGES.get(key.kind, (-np.inf, np.inf)) if key is not None else (-np.inf, np.inf)
    return np.clip(mean - half, low, high), np.clip(mean + half, low, high)


def metric_slug(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", metric.removeprefix("eval/"))


def write_report(run_dirs, out_dir, *, last: int = LAST_EVALUATIONS) -> Path:
    """Write PNG plots and ``summary.md`` for ``run_dirs`` into ``out_dir``; returns the
    summary's path. ``last``: the evaluations of the checkpoint sensitivity."""
    # Imported here: the file backend must be chosen before pyplot is first imported.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[list[dict]]] = {}
    named = []  # (label and directory, records), in the order given
    for d in run_dirs:
        label, records = _label(Path(d)), read_metrics(Path(d))
        runs.setdefault(label, []).append(records)
        named.append((label if label == Path(d).name else f"{label} `{Path(d).name}`", records))
    metrics = sorted({k for seeds in runs.values() for recs in seeds for r in recs for k in r
                      if (key := parse_metric_key(k)) is not None and key.kind in REPORT_KINDS})
    for metric in metrics:
        for x_key, x_label in (("updates", "gradient updates"), ("compute", "compute (N_forward + 3 N_backward)")):
            fig, ax = plt.subplots(figsize=(6, 4))
            drawn = False
            for label, seeds in sorted(runs.items()):
                x, mean, half = band([metric_series(recs, metric, x_key) for recs in seeds], log=x_key == "compute")
                if not x.size:
                    continue
                # One seed's curve is its evaluations themselves: mark them, since a run
                # of a few long iterations has only a handful.
                line, = ax.plot(x, mean, marker="o" if len(seeds) == 1 else None,
                                label=f"{label} ({len(seeds)} seed{'s' * (len(seeds) > 1)})")
                ax.fill_between(x, *band_edges(metric, mean, half), color=line.get_color(), alpha=0.2)
                drawn = True
            if drawn:
                ax.set_xlabel(x_label)
                ax.set_ylabel(metric.removeprefix("eval/"))
                if metric.endswith("/score"):  # a match score's whole scale, [-1, 1], as in Figure 3
                    ax.set_ylim(-1.05, 1.05)
                if x_key == "compute":
                    ax.set_xscale("log")
                ax.grid(alpha=0.3)
                ax.legend(fontsize=7)
                fig.tight_layout()
                fig.savefig(out_dir / f"{metric_slug(metric)}_vs_{x_key}.png", dpi=100)
            plt.close(fig)
    lines = ["| run (seeds) | metric | final value (mean ± 95% CI) |", "| --- | --- | --- |"]
    for label, seeds in sorted(runs.items()):
        for metric in metrics:
            finals = [r[metric] for recs in seeds for r in [next((r for r in reversed(recs) if metric in r), None)]
                      if r is not None]
            if finals:
                lines.append(f"| {label} ({len(finals)}) | {metric.removeprefix('eval/')} | {fmt_ci(finals)} |")
    lines += ["", *sensitivity_lines(named, metrics, last)]
    summary = out_dir / "summary.md"
    summary.write_text("# Evaluation summary\n\n" + "\n".join(lines) + "\n")
    return summary


def report_main(argv: list[str] | None = None) -> int:
    """``report RUN_DIR... [--out DIR]`` (default: ``plots/`` of the first run)."""
    parser = argparse.ArgumentParser(prog="python -m evaluation report",
                                     description="Plots and a summary table of runs' evaluation metrics.")
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    add_last_argument(parser)
    args = parser.parse_args(argv)
    return print_report(lambda: write_report(args.run_dirs, args.out or args.run_dirs[0] / "plots", last=args.last))


def add_last_argument(parser: argparse.ArgumentParser) -> None:
    """``--last K``: the evaluations of the checkpoint sensitivity (the run report's and an
    experiment's)."""
    def at_least_one(text: str) -> int:
        k = int(text)
        if k < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {k}")
        return k

    parser.add_argument("--last", type=at_least_one, default=LAST_EVALUATIONS, metavar="K",
                        help="checkpoint sensitivity: mean, min, max and std of each metric over a run's last K "
                             f"evaluations (default {LAST_EVALUATIONS})")


def print_report(write) -> int:
    """Run ``write`` (a report's writer, returning its path) for a command line: print the
    path and return 0, or print the missing file or bad input as one error line and return 2."""
    try:
        path = write()
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0
