"""Figures and a summary of an experiment directory (``python -m launch report EXP_DIR``).

``write_experiment_report(exp_dir, out_dir)`` reads an experiment directory (``python -m
launch experiment``: its ``experiment.json`` lists the trials, their arms, groups and
seeds) and lays the figures out like the AVI paper's Figure 1: one row per group (the
game, or an F-Game shape, a Chomp board), one column per metric kind found under the
records' ``eval/...`` keys (value error, regret, error rate, ...: whatever the suites
logged, so new suites appear without changes here; a kind's suites share its column,
one line style each), a curve per arm with its Student-t band over seeds, and a last
column with each arm's training and inference compute relative to the reference arm
(AVI). One figure against updates, one against the compute proxy (and one against
forward passes where counted). Figure 1 takes each suite's overall metrics; a suite that
also logs them per subset (Connect Four's phases and difficulties) gets its breakdown
figure, one row per subset, like the AVI paper's Figures 5 and 6. An experiment with an
inference study (``[[inference]]``: MCTS with one arm's prior and each arm's values,
minimax over each arm's values) gets ``figure_inference.png``, its metric against the
search's budget, like Figure 2. An experiment whose groups are boards of one game (the
ladder specs) gets ``figure_ladder.png`` and its table: the compute each arm takes to
reach a play error rate, against the board's cells (launch/experiments/ladder.py).
``summary.md`` gives the budgets, the final values, the checkpoint sensitivity (per arm,
the mean over each trial's last K evaluations with their spread: ``--last K``, default
5), the paired differences over the seeds both trials have (each arm against the arm its
spec's ``compare_to`` or ``--compare ARM=BASE`` names, else the reference arm: the final
values, their signs, the means over the last K evaluations and the values at the most
updates both trials evaluated), any head-to-head scores
and inference points, the commands that made the experiment, and for every table the
files its values come from.

``--beside OTHER_EXP_DIR`` joins the finished trials of another experiment of the same game
at the boards and seeds this one has finished (``join_beside``): a spec's size that runs
one arm alone (``only``) is compared in one report with the trials it left to that other
experiment (another algorithm's and the sampling arms' ladder sizes beside the ladder's AVI and
AlphaZero trials).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import algorithms
from evaluation import policy_registry
from evaluation.metric_keys import FIGURE_ONE_KINDS, INFERENCE_KINDS, REPORT_KINDS, parse_metric_key
from evaluation.metrics import mean_ci
from evaluation.report import (LAST_EVALUATIONS, add_last_argument, band, band_edges, fmt_ci, fmt_number,
                               last_evaluations, metric_series, metric_slug, print_report, spread, write_report)
from evaluation.run_metrics import read_metrics
from launch.config import TrainConfig
from launch.experiments.ladder import draw_ladder, ladder_boards, ladder_lines
from launch.experiments.layout import DONE_FILE, EXPERIMENT_FILE, INFERENCE_DIR, inference_path, match_path
from launch.experiments.matches import played_policies


def _final(records: list[dict], key: str):
    """The last value of ``key`` in a run's records (None when it never logged it)."""
    return next((r[key] for r in reversed(records) if isinstance(r.get(key), (int, float))), None)


def _kinds(metrics: list[str]) -> list[str]:
    kinds = {parse_metric_key(m).kind for m in metrics}
    return [k for k in FIGURE_ONE_KINDS if k in kinds] + sorted(kinds - set(FIGURE_ONE_KINDS))


def inference_evaluations(config: TrainConfig) -> float | None:
    """Network evaluations per decision of the evaluated policy: AVI's greedy policy
    evaluates every child (at most the game's number of actions, the paper's "7 for
    Connect Four"), the policy head one, MCTS its simulations; None where not counted."""
    policy = config.evaluation.policy
    if policy == policy_registry.AUTO:
        policy = algorithms.descriptor(config.algo).report_policy
    cost = policy_registry.entry(policy).evaluations
    if cost is None:
        return None
    actions = config.game_network.make_game().num_actions
    return cost(actions, policy_registry.PolicySpec(policy, simulations=config.evaluation.simulations,
                                                     depth=config.evaluation.depth))


def _cell(values, digits: int = 4) -> str:
    values = [v for v in values if v is not None]
    return fmt_ci(values, digits) if values else "–"


def _count(values) -> str:
    """A count over seeds: the number when every seed has the same, else mean ± 95% CI."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    if len(set(values)) == 1:
        return f"{values[0]:,.0f}"
    m, h = mean_ci(values)
    return f"{m:,.0f} ± {h:,.0f}"


@dataclass
class Experiment:
    """An experiment directory read back: its trials' records by (group, arm)."""

    path: Path
    manifest: dict
    arms: list  # arm names, the spec's order
    reference: str  # the arm the others are compared to (budgets; paired differences where no base is named)
    labels: dict  # arm -> its legend label
    groups: list  # figure rows, in the trials' order: those with a finished trial
    runs: dict  # (group, arm) -> [(trial, records)]
    missing: list  # run directories without metrics yet
    unfinished: list  # run directories with metrics but no DONE_FILE: running, or interrupted
    metrics: list  # eval/... keys of REPORT_KINDS found in any record
    matches: list  # (match, its result file's path, its result or None): launch/experiments/matches.py
    inference: list  # (point, its result file's path, its result or None): launch/experiments/inference.py
    beside: list = field(default_factory=list)  # the other experiments joined (join_beside), their manifests
    bases: dict = field(default_factory=dict)  # arm -> the arm its paired differences are to (compare_to, --compare)

    def trials(self, group: str, arm: str) -> list:
        return self.runs.get((group, arm), [])

    def base(self, arm: str) -> str:
        return self.bases.get(arm, self.reference)

    def compute(self, group: str, arm: str) -> tuple[list, list]:
        """Training compute (the last record's proxy) and inference evaluations per
        decision (from the config) of the arm's trials in ``group``."""
        trials = self.trials(group, arm)
        training = [_final(recs, "compute") for _, recs in trials]
        # The manifest holds each trial's config as its config.json does (flat in an
        # experiment written before the roles owned their settings): read the same way.
        inference = [inference_evaluations(TrainConfig.from_dict(t["config"])) for t, _ in trials]
        return [v for v in training if v is not None], [v for v in inference if v is not None]


def read_experiment(exp_dir) -> Experiment:
    exp_dir = Path(exp_dir)
    manifest = json.loads((exp_dir / EXPERIMENT_FILE).read_text())
    arms = list(manifest["arms"])
    runs, missing, unfinished = {}, [], []
    for trial in manifest["trials"]:
        try:
            records = read_metrics(exp_dir / trial["run_dir"])
        except FileNotFoundError:
            missing.append(trial["run_dir"])
            continue
        if not (exp_dir / trial["run_dir"] / DONE_FILE).is_file():
            # A trial cut short would enter the means as a seed at a smaller budget: left
            # out until it is done (--resume finishes it).
            unfinished.append(trial["run_dir"])
            continue
        start = next((r["time"] for r in records if "time" in r), None)
        for r in records:  # the forward passes alone: the x axis of the AVI paper's Figure 7
            if "actor_forward_samples" in r and "learner_forward_samples" in r:
                r["forward"] = r["actor_forward_samples"] + r["learner_forward_samples"]
            if start is not None and "time" in r:  # wall seconds since the run's first record
                r["wall"] = r["time"] - start
        runs.setdefault((trial["group"], trial["arm"]), []).append((trial, records))
    if not runs:
        raise FileNotFoundError(f"experiment {exp_dir}: none of its {len(manifest['trials'])} trials has finished yet")
    metrics = sorted({k for trials in runs.values() for _, recs in trials for r in recs for k in r
                      if (key := parse_metric_key(k)) is not None and key.kind in REPORT_KINDS})
    matches = []
    for match in manifest.get("matches", []):
        path = match_path(exp_dir, match)
        matches.append((match, path, json.loads(path.read_text()) if path.is_file() else None))
    inference = []
    for point in manifest.get("inference", []):
        path = inference_path(exp_dir, point)
        inference.append((point, path, json.loads(path.read_text()) if path.is_file() else None))
    return Experiment(exp_dir, manifest, arms, manifest.get("reference_arm") or arms[0],
                      {arm: manifest["arms"][arm].get("label", arm) for arm in arms},
                      # A group none of whose trials has finished (a ladder's next board) has no row.
                      [g for g in dict.fromkeys(t["group"] for t in manifest["trials"]) if any(k[0] == g for k in runs)],
                      runs, missing, unfinished, metrics,
                      matches, inference,
                      bases={arm: entry["compare_to"] for arm, entry in manifest["arms"].items()
                             if "compare_to" in entry})


def _relative(values: list, reference: list) -> float | None:
    return float(np.mean(values) / np.mean(reference)) if values and reference and np.mean(reference) > 0 else None


def _suite_of(metric: str) -> str:
    """The suite of an ``eval/<suite>/...`` metric (a built-in ``eval/<kind>``: its kind)."""
    key = parse_metric_key(metric)
    return key.suite if key.suite is not None else key.kind


def _subset_of(metric: str) -> str | None:
    """The subset of a per-subset metric (``eval/<suite>/<subset>/<kind>``), else None."""
    return parse_metric_key(metric).subset


def _axes_x(exp: Experiment) -> list:
    axes_x = [("updates", "gradient updates"), ("compute", "compute (N_forward + 3 N_backward)")]
    if any("forward" in r for trials in exp.runs.values() for _, recs in trials for r in recs):
        axes_x.append(("forward", "network forward passes (N_forward, Figure 7's axis)"))
    if any("wall" in r for trials in exp.runs.values() for _, recs in trials for r in recs):
        axes_x.append(("wall", "wall time (s since the run's first record)"))
    return axes_x


def _curves(ax, exp: Experiment, group: str, metrics: list, x_key: str, x_label: str, title: str) -> None:
    """One panel: a curve per arm and metric (line styles tell the metrics apart), with a
    Student-t band over seeds where there are several."""
    colours = {arm: f"C{i}" for i, arm in enumerate(exp.arms)}
    for arm in exp.arms:
        trials = exp.trials(group, arm)
        for metric, style in zip(metrics, ("-", "--", ":", "-.") * 4):
            series = [metric_series(recs, metric, x_key) for _, recs in trials]
            x, mean, half = band(series, log=x_key != "updates")
            if not x.size:
                continue
            ax.plot(x, mean, style, color=colours[arm], marker="o" if x.size < 3 else None,
                    label=f"{exp.labels[arm]}{' ' + _suite_of(metric) if len(metrics) > 1 else ''} ({len(trials)})")
            if len(trials) > 1:  # one seed: no band
                ax.fill_between(x, *band_edges(metric, mean, half), color=colours[arm], alpha=0.2)
            if len({xs[-1] for xs, _ in series if xs.size}) > 1:
                # Seeds that end apart (a trial stopped at its goal, stop_when): the band
                # covers the range all share, each seed's own curve the rest.
                for xs, ys in series:
                    ax.plot(xs, ys, style, color=colours[arm], lw=0.6, alpha=0.5)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(x_label, fontsize=8)
    if x_key != "updates":
        ax.set_xscale("log")
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=6)


def _save(fig, path: Path, rows: int, columns: int) -> Path:
    # Fixed margins: tight_layout measures every label, seconds per figure.
    fig.subplots_adjust(left=0.2 / columns, right=1 - 0.05 / columns, bottom=0.45 / (2.9 * rows),
                        top=1 - 0.3 / (2.9 * rows), wspace=0.3, hspace=0.55)
    fig.savefig(path, dpi=100)
    return path


def draw_experiment_figures(exp: Experiment, out_dir: Path) -> list[Path]:
    """Figure 1's layout per x axis (updates, compute, forward passes where counted, wall
    time where the records have their time), the
    breakdown of every suite with subsets (Figures 5 and 6), and the inference study's
    figure where the experiment has one (Figure 2); returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    overall = [m for m in exp.metrics if _subset_of(m) is None]
    kinds = _kinds(overall)
    suites = {kind: [m for m in overall if parse_metric_key(m).kind == kind] for kind in kinds}
    colours = {arm: f"C{i}" for i, arm in enumerate(exp.arms)}
    rows, columns = len(exp.groups), len(kinds) + 1
    paths = []
    for x_key, x_label in _axes_x(exp):
        fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.9 * rows), squeeze=False)
        for row, group in enumerate(exp.groups):
            for col, kind in enumerate(kinds):
                # The group's own suites (a board's: connect4-5x4-play), one line style each.
                logged = [m for m in suites[kind] if any(_final(r, m) is not None for a in exp.arms
                                                         for _, r in exp.trials(group, a))]
                _curves(axes[row][col], exp, group, logged, x_key, x_label, f"{group}: {kind}")
            # The last column: each arm's compute relative to the reference arm (Figure 1).
            ax, width = axes[row][-1], 0.8 / len(exp.arms)
            ref_train, ref_infer = exp.compute(group, exp.reference)
            for i, arm in enumerate(exp.arms):
                train, infer = exp.compute(group, arm)
                for j, ratio in enumerate((_relative(train, ref_train), _relative(infer, ref_infer))):
                    if ratio is not None:
                        ax.bar(j + i * width, ratio, width, color=colours[arm], label=exp.labels[arm] if j == 0 else None)
            ax.set_xticks([0.4 - width / 2, 1.4 - width / 2], ["training", "inference"])
            ax.set_yscale("log")
            ax.axhline(1.0, color="grey", lw=0.5)
            ax.set_title(f"{group}: compute relative to {exp.labels[exp.reference]}", fontsize=9)
            if ax.patches:
                ax.legend(fontsize=6)
        paths.append(_save(fig, out_dir / f"figure_vs_{x_key}.png", rows, columns))
        plt.close(fig)
    paths += _draw_breakdowns(exp, out_dir, plt)
    boards = ladder_boards(exp)
    if boards:
        paths.append(draw_ladder(exp, boards, out_dir, plt))
    if any(result is not None for _, _, result in exp.inference):
        paths.append(_draw_inference(exp, out_dir, plt))
    return paths


def _draw_breakdowns(exp: Experiment, out_dir: Path, plt) -> list[Path]:
    """Per group and suite with subsets: one row per subset (the suite's order), one
    column per metric kind, against updates and the compute proxy (Figures 5 and 6)."""
    paths = []
    for group in exp.groups:
        logged = [m for m in exp.metrics if _subset_of(m) is not None
                  and any(_final(r, m) is not None for arm in exp.arms for _, r in exp.trials(group, arm))]
        for suite in dict.fromkeys(_suite_of(m) for m in logged):
            ours = [m for m in logged if _suite_of(m) == suite]
            subsets = list(dict.fromkeys(_subset_of(m) for m in ours))
            kinds = _kinds(ours)
            rows, columns = len(subsets), len(kinds)
            for x_key, x_label in _axes_x(exp)[:2]:
                fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.9 * rows), squeeze=False)
                for row, subset in enumerate(subsets):
                    for col, kind in enumerate(kinds):
                        metric = f"eval/{suite}/{subset}/{kind}"
                        _curves(axes[row][col], exp, group, [metric] if metric in ours else [], x_key, x_label,
                                f"{suite} {subset}: {kind}")
                prefix = f"{group}_" if len(exp.groups) > 1 else ""
                paths.append(_save(fig, out_dir / f"figure_breakdown_{metric_slug(prefix + suite)}_vs_{x_key}.png",
                                   rows, columns))
                plt.close(fig)
    return paths



def _inference_curves(exp: Experiment) -> dict:
    """(group, entry, metric) -> {"metric", "policy", "prior_arm", "arms": {arm: {budget:
    [(value, file)]}}} from the inference results found."""
    curves: dict = {}
    for point, path, result in exp.inference:
        for kind in INFERENCE_KINDS if result is not None else ():
            metric = f"eval/{point['suite']}/{kind}"
            if metric not in result["metrics"]:
                continue
            curve = curves.setdefault((point["group"], point["entry"], metric),
                                      {"metric": metric, "policy": point["policy"],
                                       "prior_arm": point.get("prior_arm"), "arms": {}})
            curve["arms"].setdefault(point["arm"], {}).setdefault(point["budget"], []).append(
                (float(result["metrics"][metric]), path))
    return curves


def _inference_label(exp: Experiment, curve: dict, arm: str) -> str:
    prior = curve["prior_arm"]
    if prior is None:
        return f"{exp.labels[arm]} values"
    if arm == prior:
        return f"{exp.labels[arm]} (native)"
    return f"{exp.labels[prior]} prior, {exp.labels[arm]} values"


def inference_layout(keys) -> tuple[list, dict]:
    """The inference figure's columns, one per (group, entry) in the order met, and each
    (group, entry, metric) key's row: its entry's metrics from the top, in
    INFERENCE_KINDS' order."""
    columns = list(dict.fromkeys(key[:2] for key in keys))
    row_of = {}
    for column in columns:
        mine = sorted((key for key in keys if key[:2] == column),
                      key=lambda key: INFERENCE_KINDS.index(parse_metric_key(key[2]).kind))
        row_of.update({key: row for row, key in enumerate(mine)})
    return columns, row_of


def _draw_inference(exp: Experiment, out_dir: Path, plt) -> Path:
    """A column per group and entry, its metrics from the top in INFERENCE_KINDS' order
    (entries on a play suite and on a states suite have different metrics: a shared row
    per metric would leave each column half empty): the metric against the search's
    budget, a curve per arm whose values the search used, the mean and a 95% band over
    seeds."""
    curves = _inference_curves(exp)
    columns, row_of = inference_layout(curves)
    rows = 1 + max(row_of.values(), default=0)
    fig, axes = plt.subplots(rows, len(columns), figsize=(4.2 * len(columns), 3.2 * rows), squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    colours = {arm: f"C{i}" for i, arm in enumerate(exp.arms)}
    for (group, entry, metric), curve in curves.items():
        ax = axes[row_of[(group, entry, metric)]][columns.index((group, entry))]
        ax.set_visible(True)
        for arm, by_budget in curve["arms"].items():
            budgets = sorted(by_budget)
            stats = [mean_ci([v for v, _ in by_budget[b]]) for b in budgets]
            mean = np.array([m for m, _ in stats])
            seeds = max(len(by_budget[b]) for b in budgets)
            ax.plot(budgets, mean, "-o", color=colours[arm], label=f"{_inference_label(exp, curve, arm)} ({seeds})")
            if seeds > 1:
                half = np.array([h for _, h in stats])
                ax.fill_between(budgets, mean - half, mean + half, color=colours[arm], alpha=0.2)
        budget = policy_registry.searches()[curve["policy"]]
        ax.set_xlabel(f"{curve['policy']} {budget}", fontsize=8)
        if budget == "simulations":  # doubled from one budget to the next: a log axis
            ax.set_xscale("log", base=2)
        ticks = sorted({b for by_budget in curve["arms"].values() for b in by_budget})
        ax.set_xticks(ticks, [str(b) for b in ticks])
        ax.set_title(f"{group}: {entry}, {curve['metric'].removeprefix('eval/')}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    path = _save(fig, out_dir / "figure_inference.png", rows, len(columns))
    plt.close(fig)
    return path


def _sources(trials) -> str:
    return ", ".join(f"`{t['run_dir']}/metrics.jsonl`" for t, _ in trials)


def _sensitivity_lines(exp: Experiment, group: str, present: list, shown: list, last: int) -> list[str]:
    """Per suite-level metric and arm: the mean over each trial's last ``last``
    evaluations (mean ± 95% CI over seeds), the least and greatest of those evaluations
    over all seeds, and the standard deviation within a trial (mean over seeds)."""
    rows = []
    for metric in (m for m in shown if _subset_of(m) is None):
        for arm in present:
            spreads = [spread(values) for _, r in exp.trials(group, arm) if (values := last_evaluations(r, metric, last))]
            if not spreads:
                continue
            stds = [s.std for s in spreads if np.isfinite(s.std)]
            rows.append(f"| {metric.removeprefix('eval/')} | {exp.labels[arm]} | {len(spreads)} | "
                        f"{max(s.count for s in spreads)} | {_cell([s.mean for s in spreads])} | "
                        f"{fmt_number(min(s.min for s in spreads))} | {fmt_number(max(s.max for s in spreads))} | "
                        f"{fmt_number(float(np.mean(stds)) if stds else float('nan'))} |")
    if not rows:
        return []
    return [f"### Checkpoint sensitivity (each trial's last {last} evaluations)", "",
            "| metric | arm | seeds | evaluations | mean over the last evaluations (mean ± 95% CI over seeds) "
            "| min | max | std within a trial (mean over seeds) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |", *rows, "",
            "From the same files as the final values: each trial's last records holding the metric, one per "
            "update count.", ""]


def _at_matched_updates(mine: list[dict], theirs: list[dict], metric: str) -> tuple[float, int] | None:
    """``metric``'s difference at the most updates both runs evaluated it at, and that count;
    None when they share no evaluation."""
    x_mine, y_mine = metric_series(mine, metric, "updates")
    x_theirs, y_theirs = metric_series(theirs, metric, "updates")
    common = np.intersect1d(x_mine, x_theirs)
    if common.size == 0:
        return None
    at = common[-1]
    return float(y_mine[x_mine == at][0] - y_theirs[x_theirs == at][0]), int(at)


def _paired_lines(exp: Experiment, group: str, present: list, shown: list, last: int) -> list[str]:
    """Per arm and metric, seed by seed against the arm's base (``Experiment.base``): the
    difference of the final values (mean ± 95% CI), in how many pairs the arm is higher,
    equal and lower, the difference of the means over each trial's last ``last``
    evaluations (mean ± 95% CI), which a single checkpoint's luck moves less, and the
    difference at the most updates both trials evaluated: where a goal stopped one trial
    of a pair early, its final values are of fewer updates than the other's."""
    rows = []
    for arm in present:
        base = exp.base(arm)
        by_seed = {t["seed"]: r for t, r in exp.trials(group, base)}
        if arm == base or not by_seed:
            continue
        for metric in shown:
            pairs = [(r, by_seed[t["seed"]]) for t, r in exp.trials(group, arm) if t["seed"] in by_seed
                     and _final(r, metric) is not None and _final(by_seed[t["seed"]], metric) is not None]
            if not pairs:
                continue
            diffs = [_final(mine, metric) - _final(theirs, metric) for mine, theirs in pairs]
            signs = [sum(d > 0 for d in diffs), sum(d == 0 for d in diffs), sum(d < 0 for d in diffs)]
            late = [float(np.mean(last_evaluations(mine, metric, last)) - np.mean(last_evaluations(theirs, metric, last)))
                    for mine, theirs in pairs]
            matched = [m for mine, theirs in pairs if (m := _at_matched_updates(mine, theirs, metric)) is not None]
            at = sorted({u for _, u in matched})
            at_matched = (f"{fmt_ci([d for d, _ in matched])} at {at[0]:,}"
                          + (f" to {at[-1]:,}" if len(at) > 1 else "")) if matched else "–"
            rows.append(f"| {exp.labels[arm]} − {exp.labels[base]} | {metric.removeprefix('eval/')} | {len(diffs)} | "
                        f"{fmt_ci(diffs)} | {', '.join(map(str, signs))} | {fmt_ci(late)} | {at_matched} |")
    return rows


def _group_summary(exp: Experiment, group: str, last: int = LAST_EVALUATIONS) -> list[str]:
    """The summary's section of one group: budget and compute, final values, checkpoint
    sensitivity over the last ``last`` evaluations, paired differences (each arm against
    ``Experiment.base``), head-to-head scores; each table says its files."""
    present = [arm for arm in exp.arms if exp.trials(group, arm)]
    label = exp.labels
    lines = [f"## {group}", "", "### Budget and compute", "",
             "| arm | seeds | updates | rows | training compute | relative | inference evaluations per decision "
             "| relative | from |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    ref_train, ref_infer = exp.compute(group, exp.reference)
    for arm in present:
        trials = exp.trials(group, arm)
        train, infer = exp.compute(group, arm)
        ratios = [f"{r:.3g}" if r is not None else "–" for r in (_relative(train, ref_train), _relative(infer, ref_infer))]
        lines.append(f"| {label[arm]} | {len(trials)} | {_count([_final(r, 'updates') for _, r in trials])} | "
                     f"{_count([_final(r, 'rows') for _, r in trials])} | {_count(train)} | {ratios[0]} | "
                     f"{_count(infer)} | {ratios[1]} | {_sources(trials)} (last record) |")
    lines += ["", "Inference evaluations per decision follow from each trial's `config.json` "
                  "(greedy: the game's actions, policy head: 1, MCTS: its simulations).", ""]
    shown = [m for m in exp.metrics if any(_final(r, m) is not None for a in present for _, r in exp.trials(group, a))]
    if shown:
        lines += ["### Final values (mean ± 95% CI over seeds; the value alone for one seed)", "",
                  "| metric | " + " | ".join(label[a] for a in present) + " |", "| --- |" + " --- |" * len(present)]
        lines += [f"| {m.removeprefix('eval/')} | "
                  + " | ".join(_cell([_final(r, m) for _, r in exp.trials(group, a)]) for a in present) + " |"
                  for m in shown]
        lines += ["", "Each value: the last record holding the metric in each trial's `metrics.jsonl` "
                      f"({'; '.join(label[a] + ': ' + _sources(exp.trials(group, a)) for a in present)}).", ""]
        lines += _sensitivity_lines(exp, group, present, shown, last)
    paired = _paired_lines(exp, group, present, shown, last)
    if paired:
        lines += ["### Paired differences (same seeds, same files)", "",
                  "Each row: an arm minus the arm it is compared to (its spec's `compare_to` or the report's "
                  f"`--compare`, else the reference arm {label[exp.reference]}), seed by seed; a seed enters "
                  "where both trials have the metric.", "",
                  "| arms | metric | pairs | final difference (mean ± 95% CI; alone for one pair) | higher, equal, lower "
                  f"| difference of the means over the last {last} evaluations "
                  "| difference at matched updates (the most both trials evaluated) |",
                  "| --- | --- | --- | --- | --- | --- | --- |", *paired, "",
                  "A goal (`stop_when`) may end one trial of a pair before the other: its final values and last "
                  "evaluations are then of fewer updates, and the last column compares the two at the same "
                  "updates.", ""]
    pairs: dict = {}  # (arm, its policy, opponent, its policy, suite) -> [(score, file)]
    for match, path, result in exp.matches:
        if match["group"] == group and result is not None:
            score = result["metrics"].get(f"eval/{match['suite']}/score")
            played = played_policies(result["match"])
            key = (match["arm"], played["policy"], match["opponent"], played["opponent_policy"], match["suite"])
            pairs.setdefault(key, []).append((score, path))
    if pairs:
        lines += ["### Head-to-head (final checkpoints, paired seeds; positive favours the arm)", "",
                  "| arm, its policy | against, its policy | suite | seeds | score (mean ± 95% CI over paired seeds) "
                  "| from |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for (arm, policy, opponent, opponent_policy, suite), results in pairs.items():
            scores = [v for v, _ in results if v is not None]
            files = ", ".join(f"`{p.relative_to(exp.path)}`" for _, p in results)
            lines.append(f"| {label[arm]}, {policy} | {label[opponent]}, {opponent_policy} | {suite} | "
                         f"{len(scores)} | {_cell(scores)} | {files} |")
        lines += ["", "Each file holds the match's `launch evaluate` command, both checkpoints and the "
                      "wins, draws and losses.", ""]
    for (in_group, entry, _), curve in _inference_curves(exp).items():
        if in_group != group:
            continue
        budgets = sorted({b for by_budget in curve["arms"].values() for b in by_budget})
        what = policy_registry.searches()[curve["policy"]]
        lines += [f"### Inference: {entry} ({curve['metric'].removeprefix('eval/')} against {curve['policy']} "
                  f"{what}; mean ± 95% CI over seeds)", "",
                  "| values (seeds) | " + " | ".join(f"{what} {b}" for b in budgets) + " |",
                  "| --- |" + " --- |" * len(budgets)]
        files = []
        for arm, by_budget in curve["arms"].items():
            seeds = max(len(v) for v in by_budget.values())
            lines.append(f"| {_inference_label(exp, curve, arm)} ({seeds}) | "
                         + " | ".join(_cell([v for v, _ in by_budget.get(b, [])]) for b in budgets) + " |")
            files += [p for b in budgets for _, p in by_budget.get(b, [])]
        lines += ["", f"From {len(files)} files in `{INFERENCE_DIR}/` (`{files[0].relative_to(exp.path)}`, ...), "
                      "each with its `launch evaluate` command and checkpoints.", ""]
    return lines


def join_beside(exp: Experiment, other: Experiment) -> Experiment:
    """``exp`` with the finished trials of ``other`` (an experiment of the same game) at the
    groups and seeds ``exp`` has finished trials of. An arm ``exp`` declares but has no
    trial of (a size's ``only`` left it out) takes ``other``'s trials of the arm of that
    name; any other arm of ``other`` joins as ``"<its spec>:<arm>"``, labelled with its spec.
    The joined trials' ``run_dir`` is relative to ``exp``'s directory, so each table still
    names its files; ``exp``'s reference arm stays the reference."""
    if other.manifest["game"] != exp.manifest["game"]:
        raise ValueError(f"--beside {other.path}: an experiment on {other.manifest['game']!r}, "
                         f"not on this one's game {exp.manifest['game']!r}")
    seeds = {(group, t["seed"]) for (group, _), trials in exp.runs.items() for t, _ in trials}
    spec = other.manifest["spec"]
    arms, labels, runs = list(exp.arms), dict(exp.labels), dict(exp.runs)
    for (group, arm), trials in other.runs.items():
        joined = [(_relative_run_dir(t, other.path, exp.path), records) for t, records in trials
                  if (group, t["seed"]) in seeds]
        if not joined:
            continue
        left_out = arm in exp.arms and not any(a == arm for _, a in exp.runs)
        key = arm if left_out else f"{spec}:{arm}"
        if left_out:
            labels[key] = f"{exp.labels[arm]} ({spec})"
        elif key not in arms:
            arms.append(key)
            labels[key] = f"{other.labels[arm]} ({spec})"
        runs[(group, key)] = runs.get((group, key), []) + joined
    metrics = sorted(set(exp.metrics) | set(other.metrics))  # each group shows those its trials logged
    return replace(exp, arms=arms, labels=labels, runs=runs, metrics=metrics, beside=exp.beside + [other.manifest])


def _relative_run_dir(trial: dict, from_dir: Path, to_dir: Path) -> dict:
    """The trial's record with its run directory relative to ``to_dir`` instead of ``from_dir``."""
    return {**trial, "run_dir": os.path.relpath(Path(from_dir) / trial["run_dir"], to_dir)}


def with_bases(exp: Experiment, compare: dict) -> Experiment:
    """``exp`` with each arm of ``compare`` paired against its value (``--compare ARM=BASE``),
    in place of its spec's ``compare_to`` or the reference arm."""
    for arm, base in compare.items():
        for name in (arm, base):
            if name not in exp.arms:
                raise ValueError(f"--compare {arm}={base}: {name!r} is not an arm of this report; "
                                 f"arms: {', '.join(exp.arms)}")
        if arm == base:
            raise ValueError(f"--compare {arm}={base}: an arm is not compared with itself")
    return replace(exp, bases={**exp.bases, **compare})


def write_experiment_report(exp_dir, out_dir=None, *, figures: bool = True, last: int = LAST_EVALUATIONS,
                            beside=(), compare: dict | None = None) -> Path:
    """Figures (unless ``figures`` is False: the tables alone, in a fraction of the time)
    and ``summary.md`` of an experiment directory into ``out_dir`` (default
    ``exp_dir/report``); returns the summary's path. ``last``: the evaluations of the
    checkpoint sensitivity; ``beside``: other experiment directories whose trials join
    (``join_beside``); ``compare``: arm -> the arm its paired differences are to
    (``with_bases``)."""
    exp = read_experiment(exp_dir)
    for other in beside:
        exp = join_beside(exp, read_experiment(other))
    compare = dict(compare or {})
    exp = with_bases(exp, compare)
    out_dir = Path(out_dir) if out_dir is not None else exp.path / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = draw_experiment_figures(exp, out_dir) if figures else []
    manifest = exp.manifest
    size = manifest["size"] + (f", --updates {manifest['updates_override']}" if manifest.get("updates_override") else "")
    lines = [f"# Experiment {manifest['spec']} ({size})", "", manifest.get("description", ""), "",
             "## Commands", "", "```", *[c["argv"] for c in manifest.get("commands", [])],
             *[c["argv"] for m in exp.beside for c in m.get("commands", [])],
             f"python -m launch report {exp.path}" + "".join(f" --beside {b}" for b in beside)
             + "".join(f" --compare {arm}={base}" for arm, base in compare.items()),
             "```", "",
             *([f"Beside this experiment's trials: the finished trials of {', '.join(m['spec'] for m in exp.beside)} "
                "at the same boards and seeds (its arms named with their spec, or filling the arms this "
                "size left out).", ""] if exp.beside else []),
             *([f"Figures: {', '.join(f'`{p.name}`' for p in figures)} (one row per group; curves are means "
                "over seeds with a 95% Student-t band where there are several, drawn within a bounded "
                "metric's scale).", ""] if figures else [])]
    if exp.missing:
        lines += [f"Not run yet (no metrics.jsonl): {', '.join(exp.missing)}.", ""]
    if exp.unfinished:
        lines += [f"Not finished (running, or interrupted: `--resume` finishes them), so left out of the "
                  f"tables and figures: {', '.join(exp.unfinished)}.", ""]
    boards = ladder_boards(exp)
    if boards:
        lines += ladder_lines(exp, boards)
    for group in exp.groups:
        lines += _group_summary(exp, group, last)
    summary = out_dir / "summary.md"
    summary.write_text("\n".join(lines) + "\n")
    return summary


def log_figures_to_wandb(exp_dir, report_dir: Path, mode: str) -> None:
    """The report's figures and summary as one W&B run of job type ``report`` in the
    experiment's group (the trials' runs are in the same group), so that the project
    shows them beside the trials' curves."""
    import os

    import wandb

    manifest = json.loads((Path(exp_dir) / EXPERIMENT_FILE).read_text())
    os.environ.setdefault("WANDB_SILENT", "true")
    run = wandb.init(project=os.environ.get("WANDB_PROJECT", "selfplay"), group=manifest["spec"], job_type="report",
                     name=f"{manifest['spec']}-report", mode=mode, dir=str(report_dir),
                     settings=wandb.Settings(console="off"))
    run.log({f"report/{p.stem}": wandb.Image(str(p)) for p in sorted(report_dir.glob("figure_*.png"))})
    run.summary["summary_md"] = (report_dir / "summary.md").read_text()
    run.finish()


def report_main(argv: list[str] | None = None) -> int:
    """``report RUN_DIR... [--out DIR]`` (default: ``plots/`` of the first run), or
    ``report EXPERIMENT_DIR [--out DIR]`` (default: its ``report/``)."""
    parser = argparse.ArgumentParser(prog="python -m launch report",
                                     description="Plots and a summary table of runs' evaluation metrics, "
                                                 "or the figures and summary of an experiment directory.")
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--beside", type=Path, action="append", default=[], metavar="OTHER_EXP_DIR",
                        help="another experiment directory of the same game: its finished trials at the boards "
                             "and seeds this experiment has finished join the figures and tables")
    parser.add_argument("--wandb", choices=("online", "offline"),
                        help="an experiment's figures also as W&B images, in the experiment's group")
    parser.add_argument("--compare", action="append", default=[], metavar="ARM=BASE",
                        help="an experiment's paired differences of ARM to BASE (another arm), in place of the "
                             "spec's compare_to or the reference arm; repeat for several arms")
    add_last_argument(parser)
    args = parser.parse_args(argv)
    for other in args.beside:
        if not (other / EXPERIMENT_FILE).is_file():
            parser.error(f"--beside {other}: not an experiment directory (no {EXPERIMENT_FILE})")
    pairs = [pair.split("=") for pair in args.compare]
    for pair, given in zip(pairs, args.compare):
        if len(pair) != 2 or not all(pair):
            parser.error(f"--compare {given}: give ARM=BASE, two arm names")
    if not (len(args.run_dirs) == 1 and (args.run_dirs[0] / EXPERIMENT_FILE).is_file()):
        if args.beside or args.compare:
            parser.error("--beside and --compare are for an experiment: give one experiment directory "
                         "(with experiment.json)")
        return print_report(lambda: write_report(args.run_dirs, args.out or args.run_dirs[0] / "plots", last=args.last))

    def write() -> Path:
        from launch.results.record import write_experiment_data

        path = write_experiment_report(args.run_dirs[0], args.out, last=args.last, beside=args.beside,
                                       compare=dict(pairs))
        write_experiment_data(args.run_dirs[0])  # its trial data beside the report (launch/results/record.py)
        if args.wandb:
            log_figures_to_wandb(args.run_dirs[0], path.parent, args.wandb)
        return path

    return print_report(write)
