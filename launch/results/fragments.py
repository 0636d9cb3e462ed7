"""The generated parts of the results pages, each drawn from one study's committed data.

A page asks for a fragment with a marker, and ``python -m launch results`` writes what
the data gives between it and the closing marker (launch/results/pages.py):

    <!-- results: time-to-goal study=ladder-hex-held metric=eval/*-play/error_rate goal=0 -->
    ...
    <!-- /results -->

Each kind below takes the marker's ``key=value`` arguments and returns markdown. Numbers
appear here only as the data gives them: the statistics are launch/results/stats.py's.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from launch.results import figure1, stats
from launch.results.data import GOAL_METRIC, PAPER_UPDATES, RESULTS_DIR, Study, load_study, study_names


@dataclass
class Context:
    page: Path  # the page being generated (figures are linked relative to it)
    root: Path = RESULTS_DIR  # the studies' data
    pages_of: dict = None  # study -> the first page that presents it (index, headline)
    draw: bool = True  # draw figures (False: --check compares their recorded digests)


class FragmentError(ValueError):
    pass


def _num(value, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    return f"{value:,.{digits}f}"


def _x_unit(x: str) -> str:
    return {"updates": "updates", "compute": "compute (N_forward + 3 N_backward)"}[x]


def _x(value, x: str = "updates") -> str:
    """A time to a goal as its unit reads: updates whole, compute in three figures."""
    if x == "compute" and value is not None and math.isfinite(value):
        return f"{value:.3g}"
    return _num(value)


def _median(km: stats.KaplanMeier, x: str = "updates") -> str:
    if km.reached == 0:
        return "not reached"
    return f"{_x(km.median, x)} [{_x(km.low, x)}, {_x(km.high, x)}]"


def time_to_goal(study: Study, args: dict, ctx: Context) -> str:
    """Per board and arm: how many seeds reached the goal first and held it, the Kaplan-Meier
    median time to each with its 95% interval, and every seed's times (a censored seed as
    "> its last evaluation")."""
    metric, goal, x = args.get("metric", GOAL_METRIC), float(args.get("goal", 0)), args.get("x", "updates")
    hold = max([stats.MIN_HOLD, *map(int, study.finished["hold"])])
    lines = [f"| board | arm | seeds | first at ≤ {goal:g}: seeds | KM median {x} [95% CI] | held {hold} in a row: "
             f"seeds | KM median {x} [95% CI] | each seed: first / held |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for board in study.boards():
        for arm in study.arms(board):
            rows = study.goal_times(board, arm, metric, goal, x)
            if not rows:
                continue
            ends = [r.end for _, r in rows]
            first = stats.kaplan_meier([r.first for _, r in rows], ends)
            held = stats.kaplan_meier([r.held for _, r in rows], ends)
            seeds = "; ".join(f"s{seed}: {_x(r.first, x) if r.first is not None else '> ' + _x(r.end, x)} / "
                              f"{_x(r.held, x) if r.held is not None else '> ' + _x(r.end, x)}" for seed, r in rows)
            lines.append(f"| {board} | {study.label(arm)} | {len(rows)} | {first.reached} of {first.n} | "
                         f"{_median(first, x)} | {held.reached} of {held.n} | {_median(held, x)} | {seeds} |")
    lines += ["", f"The metric is `{metric}`; a seed's time is the {_x_unit(x)} at its first evaluation at "
              f"≤ {goal:g}, and for the held goal at the first of {hold} evaluations in a row at it. A seed that "
              f"never got there is censored at its last evaluation (\"> N\"): the Kaplan-Meier median (lifelines) "
              f"counts it as not there yet, and ∞ marks an interval's end the seeds cannot bound."]
    return "\n".join(lines)


def _metric_cells(study: Study, board: str, arms: list[str], metric: str, at: int):
    return {arm: [v for v in (study.value_at(t, metric, at) for t in study.cell(board, arm)["trial"]) if v is not None]
            for arm in arms}


def final(study: Study, args: dict, ctx: Context) -> str:
    """Per board and arm, each metric at the most updates every trial of the board
    evaluated: the mean over seeds with its stratified bootstrap 95% interval (rliable)."""
    metrics = [m.strip() for m in args["metrics"].split(",")]
    head = " | ".join(f"`{m.split('/')[-1]}` ({m.split('/')[-2] if m.count('/') > 1 else 'built-in'})"
                      for m in metrics)
    lines = [f"| board | arm | seeds | at updates | {head} |", "|---|---|---:|---:|" + "---:|" * len(metrics)]
    for board in study.boards():
        # The arms that have the first metric (an arm without a search has no search's score).
        arms = [a for a in study.arms(board) if study.matched_updates(board, metrics[0], [a]) is not None]
        at = study.matched_updates(board, metrics[0], arms) if arms else None
        if at is None:
            continue
        for arm in arms:
            cells = []
            for metric in metrics:
                values = _metric_cells(study, board, [arm], metric, at)[arm]
                iv = stats.mean_interval(values)
                cells.append(f"{_num(iv.mean, 3)} [{_num(iv.low, 3)}, {_num(iv.high, 3)}]" if values else "–")
            lines.append(f"| {board} | {study.label(arm)} | {len(study.cell(board, arm))} | {_num(at)} | "
                         + " | ".join(cells) + " |")
    lines += ["", "Each value is the mean over seeds with a stratified bootstrap 95% interval (rliable, "
              f"{stats.BOOTSTRAP_REPS} resamples), taken at the most updates every trial of the board evaluated, "
              "so that a trial that stopped at its goal enters at the same point as the others."]
    return "\n".join(lines)


def improvement(study: Study, args: dict, ctx: Context) -> str:
    """Per board: the probability that arm ``a`` is better than arm ``b`` on ``metric``
    (rliable), at the most updates every trial of both evaluated."""
    a, b, metric = args["a"], args["b"], args["metric"]
    lower = args.get("lower", "true") == "true"
    lines = [f"| board | seeds | at updates | P({study.label(a)} better than {study.label(b)}) [95% CI] |",
             "|---|---:|---:|---:|"]
    for board in study.boards():
        if a not in study.arms(board) or b not in study.arms(board):
            continue
        at = study.matched_updates(board, metric, [a, b])
        if at is None:
            continue
        cells = _metric_cells(study, board, [a, b], metric, at)
        if min(len(cells[a]), len(cells[b])) < 2:
            continue
        p = stats.probability_of_improvement(cells[a], cells[b], lower_is_better=lower)
        lines.append(f"| {board} | {len(cells[a])} and {len(cells[b])} | {_num(at)} | "
                     f"{_num(p.mean, 2)} [{_num(p.low, 2)}, {_num(p.high, 2)}] |")
    lines += ["", f"`{metric}` at the most updates every trial of both arms evaluated ({'lower' if lower else 'higher'} "
              "is better); ties count half; the interval is rliable's stratified bootstrap. 0.5 is no difference."]
    return "\n".join(lines)


def tuning(study: Study, args: dict, ctx: Context) -> str:
    """Each tuned arm of the study: the parameter's range, every tuning trial (its value,
    seed, metric and how it ended), the value chosen, and the value the study's trials of
    that arm ran with (the same, or not: a page says which)."""
    if not study.tunings:
        return ("No arm of this study has a tuning run in its data: each arm ran with its preset's exploration "
                "parameter (`python -m launch tune SPEC --arm ARM`, then `results add --tune DIR`).")
    out = []
    extended = {(t.get("instance"), t["arm"]) for t in study.tunings if "extends" in t}
    # A step, then its range's extension past the chosen end (the choice over both).
    for t in sorted(study.tunings, key=lambda t: (t.get("instance") or "", t["arm"], "extends" in t)):
        key, metric, chosen = t["space"]["key"], t["scheduler"]["metric"], t.get("chosen_overall", t["chosen"])
        ran = study.arm_setting(t["arm"], key, t.get("instance"))
        where = f" on {t['instance']}" if t.get("instance") else ""
        past = (f", past the chosen end of its first range ({t['extends']['chosen']['value']:g})"
                if "extends" in t else "")
        out += [f"**{t['arm']}**{where}{past} ({t['algo']}): `{key}` on a {t['space']['scale']} scale over "
                f"[{t['space']['low']:g}, {t['space']['high']:g}], {t['search']['kind']} search, ASHA on `{metric}` "
                f"against updates (grace {t['scheduler']['grace_period']:,}); tuning seeds "
                f"{', '.join(map(str, t['seeds']['tuning']))}, none of the comparison's; "
                f"{t['budget']['updates']:,} updates a trial at most; `{t['command']}`.", "",
                f"| `{key}` | seed | `{metric.split('/')[-1]}` | updates | ended |", "|---:|---:|---:|---:|---|"]
        for trial in sorted(t["trials"], key=lambda x: x["value"]):
            out.append(f"| {trial['value']:g} | {trial['seed']} | {_num(trial['metric'], 3)} | "
                       f"{_num(trial['updates'])} | {trial['end']} |")
        verdict = ("no value chosen: no trial ran to its end" if chosen is None else
                   f"chosen {'over both ranges ' if past else ''}`{key} = {chosen['value']:g}`")
        values = [trial["value"] for trial in t["trials"]]
        if past:  # the values of both ranges: the step's own and those past its end
            values += [trial["value"] for b in study.tunings if "extends" not in b and b["arm"] == t["arm"]
                       and b.get("instance") == t.get("instance") for trial in b["trials"]]
        if chosen is not None and len(values) > 1 and chosen["value"] in (min(values), max(values)):
            if not past and (t.get("instance"), t["arm"]) in extended:
                out += ["", f"{verdict}, an end of the values tried: the values past it follow.", ""]
                continue
            verdict += (" (the parameter's limit)" if chosen["value"] in t["space"].get("limits", []) else
                        " (an end of the values tried: a better one may lie beyond the range)")
        same = (ran is not None and chosen is not None and math.isclose(float(ran), float(chosen["value"])))
        mine = study.trials["arm"] == t["arm"]
        if t.get("instance"):
            mine &= study.trials["trial"].str.startswith(f"{t['instance']}-{t['arm']}-s")
        if not mine.any():
            out += ["", f"{verdict}; no trial of {t['arm']}{where} has data yet.", ""]
            continue
        out += ["", f"{verdict}; the study's {t['arm']} trials{where} ran with `{key} = {ran}`"
                + (" (the chosen value)." if same else " (not the chosen value: the comparison is at the "
                   "preset's setting for this arm)."), ""]
    return "\n".join(out)


def _dates(study: Study) -> str:
    t = study.trials
    if t.empty:  # a study entered with its tuning steps alone
        return "no trial yet"
    return f"{min(t['started'])[:10]} to {max(t['ended'])[:10]}"


def provenance(study: Study, args: dict, ctx: Context) -> str:
    """Where and when the study's trials ran, and the commands that ran them."""
    t = study.trials
    lines = ["| board | arm | trials (finished) | seeds | updates reached (budget) | commit | machine | ran |",
             "|---|---|---:|---|---|---|---|---|"] if not t.empty else ["No trial of this study has data yet."]
    for (board, arm), g in t.groupby(["board", "arm"], sort=False):
        g = g.sort_values("seed")
        reached = ", ".join(_num(u) for u in g["final_updates"])
        lines.append(f"| {board} | {g['arm_label'].iloc[0]} | {len(g)} ({int(g['finished'].sum())}) | "
                     f"{', '.join(map(str, g['seed']))} | {reached} ({_num(int(g['budget_updates'].max()))}) | "
                     f"{', '.join(sorted(set(g['commit'])))} | {'; '.join(sorted(set(g['machine'])))} | "
                     f"{min(g['started'])[:16]} to {max(g['ended'])[:16]} UTC |")
    for part in study.info.get("parts", [study.info | {"study": study.name}]):
        commands = [c["argv"] for c in part.get("commands", [])]
        lines += ["", f"Commands (`results/{part['study']}/study.json`):", "", "```", *(commands or ["(none recorded)"]),
                  f"python -m launch results add EXP_DIR --study {part['study']}", "```"]
    return "\n".join(lines)


def budget(study: Study, args: dict, ctx: Context) -> str:
    """The study's budget a trial, as a fraction of the AVI paper's for the game."""
    game = str(study.trials["game"].iloc[0])
    paper = PAPER_UPDATES.get(game)
    most = int(study.trials["budget_updates"].max())
    if paper is None:
        return f"A trial's budget: at most {_num(most)} updates; the AVI paper gives no budget for {game}."
    return (f"A trial's budget: at most {_num(most)} updates, {100 * most / paper:.2g}% of the AVI paper's "
            f"{_num(paper)} for {game} at its full board (section 4; the paper trains no smaller board).")


def _digest(study: Study, kind: str, args: dict) -> str:
    """What a figure is drawn from: its data's bytes and the arguments, hashed; a figure
    whose recorded digest differs is out of date."""
    h = hashlib.sha256(json.dumps({"kind": kind, "args": args}, sort_keys=True).encode())
    for path in study.paths:
        for name in ("trials", "evaluations"):
            h.update((path / f"{name}.parquet").read_bytes())
    return h.hexdigest()[:16]


def figure(study: Study, args: dict, ctx: Context) -> str:
    """A figure drawn from the data into docs/results/figures/, linked with its caption:
    what it shows, the command, commits, machine and dates of its data."""
    from launch.results import figures

    kind = args["kind"]
    name = f"{study.name}-{kind}.png"
    path = ctx.page.parent / "figures" / name
    digest = _digest(study, kind, args)
    if ctx.draw:
        path.parent.mkdir(parents=True, exist_ok=True)
        caption = figures.draw(kind, study, args, path, digest)
    else:
        recorded = figures.recorded_digest(path)
        if recorded != digest:
            raise FragmentError(f"{path}: drawn from other data than results/{study.name} holds "
                                f"(digest {recorded} against {digest}); run python -m launch results")
        caption = figures.caption(kind, study, args)
    machines = "; ".join(sorted(set(study.trials["machine"])))
    commits = ", ".join(sorted(set(c for cs in study.trials["commit"] for c in cs.split(", "))))
    data = ", ".join(f"`results/{path.name}/`" for path in study.paths)
    return (f"![{caption}](figures/{name})\n\n*{caption}* Data: {data} ({len(study.trials)} trials, "
            f"{_dates(study)}), commits {commits}, {machines}; drawn by `python -m launch results`.")


def index(_: None, args: dict, ctx: Context) -> str:
    """One row per study with data: what it ran, how many trials, when, and its page."""
    lines = ["| study | spec (size) | boards | arms | trials finished | ran | page |", "|---|---|---|---|---:|---|---|"]
    for name in study_names(ctx.root):
        s = load_study(name, ctx.root)
        link = _page_link(name, ctx)
        lines.append(f"| `{name}` | `{s.info.get('spec')}` ({s.info.get('size')}) | {', '.join(s.boards()) or '–'} | "
                     f"{', '.join(s.label(a) for a in s.arms()) or '–'} | {_finished(s)} | {_dates(s)} | {link} |")
    return "\n".join(lines)


def headline(_: None, args: dict, ctx: Context) -> str:
    """README's rows: per study, each board and arm's held goal (seeds and KM median)."""
    lines = ["| study | held error rate 0 against the solver: seeds, KM median updates [95% CI] | page |",
             "|---|---|---|"]
    for name in study_names(ctx.root):
        s = load_study(name, ctx.root)
        if s.trials.empty:  # its tuning steps alone: no goal to report yet
            continue
        cells = []
        for board in s.boards():
            for arm in s.arms(board):
                # An arm that searches is given by its policy head and, where scored, by its
                # search at its training budget (the AVI paper's protocol).
                searched = s.goal_times(board, arm, figure1.searched(GOAL_METRIC), 0.0)
                for metric, how in ((GOAL_METRIC, " (policy head)" if searched else ""),
                                    (figure1.searched(GOAL_METRIC), " (its search)")):
                    rows = s.goal_times(board, arm, metric, 0.0)
                    if not rows:
                        continue
                    km = stats.kaplan_meier([r.held for _, r in rows], [r.end for _, r in rows])
                    cells.append(f"{board} {s.label(arm)}{how}: {km.reached} of {km.n} seeds, {_median(km)}")
        link = _page_link(name, ctx)
        lines.append(f"| `{name}` ({_finished(s)} trials finished, {_dates(s)}) | "
                     f"{'; '.join(cells) or '–'} | {link} |")
    return "\n".join(lines)


def schema(_: None, args: dict, ctx: Context) -> str:
    """The tables of results/<study>/, column by column (launch/results/schema.py)."""
    from launch.results.schema import TABLES

    out = []
    for table, columns in TABLES.items():
        out += [f"### `{table}.parquet`", "", "| column | type | holds |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.type}{' (may be empty)' if c.nullable else ''} | {c.doc} |" for c in columns]
        out.append("")
    return "\n".join(out)


def plan(_: None, args: dict, ctx: Context) -> str:
    """A spec's plan at a size, as ``launch experiment --dry-run`` makes it on one machine
    running one trial at a time: its trials per board, its tuning steps and its wall-time
    estimate from the spec's rates. Drawn from the spec, not from data: what a study will
    cost before it has run."""
    from launch.experiments.spec import load_spec
    from launch.experiments.spec import plan as make_plan

    spec, size = args["spec"], args.get("size", "small")
    p = make_plan(load_spec(spec), size)
    boards = list(dict.fromkeys(t.group for t in p.trials))
    lines = ["| board | arms | seeds an arm | updates a trial | trials | tuning steps |", "|---|---|---|---:|---:|---:|"]
    for board in boards:
        mine = [t for t in p.trials if t.group == board]
        arms = list(dict.fromkeys(t.arm for t in mine))
        seeds = sorted({sum(t.arm == a for t in mine) for a in arms})
        instance = mine[0].instance
        lines.append(f"| {board} | {', '.join(p.spec.arms[a].label for a in arms)} | "
                     f"{', '.join(map(str, seeds))} | {_num(mine[0].updates)} | {len(mine)} | "
                     f"{sum(s.instance == instance for s in p.tuning)} |")
    wall, tuning = p.wall_seconds(1), sum(s.estimated_seconds or 0 for s in p.tuning)
    lines += ["", f"`{spec}` at size `{size}`: {len(p.trials)} trials and {len(p.tuning)} tuning steps, estimated at "
              f"{_num(wall / 3600, 1)} hours one trial at a time, the tuning steps at most {_num(tuning / 3600, 1)} "
              f"of them (every tuning trial to its budget, the values past a chosen end of a range too), from the spec's "
              f"`updates_per_second`."
              if wall is not None else f"`{spec}` at size `{size}`: {len(p.trials)} trials; the spec gives no rates "
              f"for an estimate."]
    return "\n".join(lines)


def _page_link(study: str, ctx: Context) -> str:
    """A link from the page being drawn to the first results page that presents ``study``."""
    page = (ctx.pages_of or {}).get(study)
    return f"[{page.stem}]({_relative(page, ctx.page)})" if page else "–"


def _finished(study: Study) -> str:
    """"k of n": the finished trials of all the study planned (a study stopped by its clock
    has planned trials with no data yet)."""
    return f"{len(study.finished)} of {study.info.get('planned_trials', len(study.trials))}"


def _relative(target: Path, page: Path) -> str:
    import os

    return os.path.relpath(target, page.parent).replace(os.sep, "/")


KINDS = {"time-to-goal": time_to_goal, "final": final, "improvement": improvement, "provenance": provenance,
         "budget": budget, "figure": figure, "index": index, "headline": headline, "schema": schema,
         "tuning": tuning, "figure1-final": figure1.final_table, "figure1-flat": figure1.flat_table,
         "table2": figure1.table2, "figure1-verdict": figure1.verdict, "plan": plan}
WITHOUT_STUDY = {"index", "headline", "schema", "plan"}  # kinds drawn from every study, or from none
