"""The AVI paper's Figure 1 and Table 2 drawn from a study's data (``figure1-small``), and
the table of the paper's claims against that data.

Figure 1 compares AVI with AlphaZero at several search budgets S under the same rows and
updates: the value MAE, the regret and the error rate against updates, with Student-t
bands over seeds, and the compute each arm spends relative to AVI. The paper scores
AlphaZero by its search at its training budget (its section 4.3): here every AlphaZero or
AZAL arm is drawn twice, by its search (``eval/<suite>@mcts<S>/...``, solid) and by its
policy head (dashed); AVI by its greedy policy. The value MAE is the network's own.

Every trial of such a study runs its whole budget, so the values at the end are taken
at each trial's final evaluation, and a board's statistics use the seeds that finished.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from launch.results import stats
from launch.results.data import Study

VALUE = "eval/*-uniform/value_mae"  # the network's value against the exact one on the board's labelled states
REGRET = "eval/*-uniform/policy_regret"  # the value lost by the policy's move on those states
ERROR = "eval/*-play/error_rate"  # games that end worse than the opening's exact value, every opening, both sides
# (pattern, label, the metric's range): a band never leaves the range.
PANELS = ((VALUE, "value MAE", (0.0, 2.0)), (REGRET, "policy regret", (0.0, 2.0)), (ERROR, "error rate", (0.0, 1.0)))
SEARCHING = ("alphazero", "azal")  # algorithms whose decisions the paper takes from their search
REFERENCE = "avi"
LAST_SHARE = 0.2  # "flat" is judged over the last 20% of the budget


def searched(pattern: str) -> str:
    """The same metric as scored by the arm's search at its training budget."""
    return pattern.replace("-uniform/", "-uniform@mcts*/").replace("-play/", "-play@mcts*/")


def searches(study: Study, arm: str) -> bool:
    return str(study.trials.loc[study.trials["arm"] == arm, "algo"].iloc[0]) in SEARCHING


def curves(study: Study, board: str, arm: str, pattern: str, column: str = "value") -> pd.DataFrame:
    """One column per finished seed, one row per ``updates`` every seed evaluated (of the
    evaluations' ``column``: the metric's value, or the compute by then): a band's points
    have the same seeds throughout."""
    columns = {}
    for _, t in study.cell(board, arm).iterrows():
        s = study.series(t["trial"], pattern)
        if s.empty:
            return pd.DataFrame()
        columns[int(t["seed"])] = s.set_index("updates")[column]
    return pd.concat(columns, axis=1).dropna() if columns else pd.DataFrame()


def finals(study: Study, board: str, arm: str, pattern: str) -> list[float]:
    """Each finished seed's value at its last evaluation of ``pattern``."""
    out = []
    for trial in study.cell(board, arm)["trial"]:
        s = study.series(trial, pattern)
        if not s.empty:
            out.append(float(s["value"].iloc[-1]))
    return out


def compute_ratio(study: Study, board: str, arm: str) -> list[float]:
    """Each seed's compute (N_forward + 3 N_backward, training and inference) at its end,
    over the mean of AVI's on the board."""
    def ends(name: str) -> list[float]:
        values = []
        for trial in study.cell(board, name)["trial"]:
            e = study.evaluations[study.evaluations["trial"] == trial].dropna(subset=["compute"])
            if not e.empty:
                values.append(float(e.sort_values("updates")["compute"].iloc[-1]))
        return values

    reference = ends(REFERENCE)
    if not reference:
        return []
    base = sum(reference) / len(reference)
    return [v / base for v in ends(arm)] if base > 0 else []


def _cell(iv: stats.Interval, digits: int = 3) -> str:
    if iv.n == 0 or math.isnan(iv.mean):
        return "–"
    if math.isnan(iv.low):
        return f"{iv.mean:.{digits}f} (1 seed)"
    return f"{iv.mean:.{digits}f} [{iv.low:.{digits}f}, {iv.high:.{digits}f}]"


def _ranges(pattern: str) -> tuple[float, float]:
    return next(r for p, _, r in PANELS if p == pattern)


def final_table(study: Study, args: dict, ctx) -> str:
    """Per board and arm at the end of training: value MAE, regret and error rate (greedy or
    the policy head, and the search at S), and the compute relative to AVI; each the mean
    over seeds with its Student-t 95% interval."""
    lines = ["| board | arm | seeds | value MAE | regret: greedy / policy head | regret: search at S | "
             "error rate: greedy / policy head | error rate: search at S | compute ÷ AVI's |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for board in study.boards():
        for arm in study.arms(board):
            cells = [_cell(stats.t_interval(finals(study, board, arm, VALUE), bounds=_ranges(VALUE)))]
            for pattern in (REGRET, ERROR):
                cells.append(_cell(stats.t_interval(finals(study, board, arm, pattern), bounds=_ranges(pattern))))
                cells.append(_cell(stats.t_interval(finals(study, board, arm, searched(pattern)),
                                                     bounds=_ranges(pattern))) if searches(study, arm) else "–")
            cells.append(_cell(stats.t_interval(compute_ratio(study, board, arm), bounds=(0.0, math.inf)), 2))
            lines.append(f"| {board} | {study.label(arm)} | {len(study.cell(board, arm))} | " + " | ".join(cells) + " |")
    lines += ["", "At each trial's final evaluation (every trial runs its whole budget): the mean over seeds with "
              "its Student-t 95% interval, kept inside the metric's range. Value MAE and regret on the board's "
              "labelled states (`*-uniform`), the error rate in play from every opening, both sides, against the "
              "solver (`*-play`). The compute is the AVI paper's proxy N_forward + 3 N_backward, self-play and "
              "learning, over AVI's mean on the board."]
    return "\n".join(lines)


def _change(study: Study, board: str, arm: str, pattern: str) -> stats.Interval:
    """Per seed, the metric at its end minus at its last evaluation at or before 80% of
    its budget; the t interval of those changes."""
    changes = []
    for _, t in study.cell(board, arm).iterrows():
        s = study.series(t["trial"], pattern)
        early = s[s["updates"] <= (1 - LAST_SHARE) * int(t["budget_updates"])]
        if not s.empty and not early.empty:
            changes.append(float(s["value"].iloc[-1]) - float(early["value"].iloc[-1]))
    return stats.t_interval(changes)


def _trend(iv: stats.Interval) -> str:
    if iv.n < 2:
        return "–" if iv.n == 0 else f"{iv.mean:+.3f} (1 seed)"
    word = "flat" if iv.low <= 0 <= iv.high else ("falling" if iv.high < 0 else "rising")
    return f"{iv.mean:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}]: {word}"


def flat_table(study: Study, args: dict, ctx) -> str:
    """Whether training has ended: per board and arm, the change of value MAE and error
    rate over the last 20% of the budget, with its t interval over seeds."""
    lines = ["| board | arm | seeds | value MAE: change over the last 20% | error rate: change over the last 20% |",
             "|---|---|---:|---:|---:|"]
    for board in study.boards():
        for arm in study.arms(board):
            error = searched(ERROR) if searches(study, arm) else ERROR
            lines.append(f"| {board} | {study.label(arm)} | {len(study.cell(board, arm))} | "
                         f"{_trend(_change(study, board, arm, VALUE))} | {_trend(_change(study, board, arm, error))} |")
    lines += ["", "Each seed's value at its end minus its value at its last evaluation by 80% of the budget (the "
              "error rate of a searching arm: its search's), the mean change with its Student-t 95% interval: "
              "*flat* where the interval holds 0."]
    return "\n".join(lines)


def _played(side: dict | None) -> str:
    """A side's policy and its budget as the match played it: ``mcts, 64 simulations``."""
    if not side or not side.get("policy"):
        return "its arm's evaluation policy"
    budget = [f"{v} {k}" for k, v in side.items() if k not in ("policy", "trial")]
    return ", ".join([side["policy"], *budget])


def table2(study: Study, args: dict, ctx) -> str:
    """Table 2: each board's head-to-head matches of paired seeds' final checkpoints, side A
    as the study's arm, with each side's policy and budget, and the mean score over seeds
    with its Student-t 95% interval."""
    m = study.matches
    if m.empty:
        return "No head-to-head match of this study has data yet: the matches run after every trial of the study."
    trials = study.trials.set_index("trial")
    lines = ["| board | side A (policy) | side B (policy) | seeds | games | A's wins / draws / losses | "
             "A's mean score [95% CI] |", "|---|---|---|---:|---:|---|---:|"]
    # The sides' policies without their trials: one row per pair of arms and policies.
    played = [json.dumps({k: {f: v for f, v in side.items() if f != "trial"} for k, side in json.loads(p).items()},
                         sort_keys=True) for p in m["policies"]]
    m = m.assign(board=[trials.loc[t, "board"] for t in m["trial"]],
                 a=[trials.loc[t, "arm"] for t in m["trial"]],
                 b=[trials.loc[o, "arm"] if o in trials.index else o for o in m["opponent"]], played=played)
    for (board, a, b, policies), g in m.groupby(["board", "a", "b", "played"], sort=False):
        sides = json.loads(policies)
        iv = stats.t_interval(list(g["score"]), bounds=(-1.0, 1.0))
        lines.append(f"| {board} | {study.label(a)} ({_played(sides.get('a'))}) | "
                     f"{study.label(b) if b in set(study.trials['arm']) else b} ({_played(sides.get('b'))}) | "
                     f"{len(g)} | {int(g['games'].sum()):,} | {int(g['wins'].sum())} / {int(g['draws'].sum())} / "
                     f"{int(g['losses'].sum())} | {_cell(iv)} |")
    lines += ["", "Each seed's final AVI against the same seed's final opponent, from every opening of the board "
              "twice, sides exchanged; a game scores 1, 0 or -1 for side A; the interval is over seeds."]
    return "\n".join(lines)


def _verdict(iv: stats.Interval, below: str, spans: str, above: str) -> str:
    if iv.n < 2 or math.isnan(iv.low):
        return "too few seeds"
    return below if iv.high < 0 else (above if iv.low > 0 else spans)


def verdict(study: Study, args: dict, ctx) -> str:
    """The paper's claims about Figure 1 and Table 2, each against this study's data, per
    board: what the data shows, with the numbers it rests on."""
    lines = ["| board | the paper's claim | this data | the numbers |", "|---|---|---|---|"]
    for board in study.boards():
        arms = study.arms(board)
        if REFERENCE not in arms:
            continue
        others = [a for a in arms if searches(study, a)]
        avi_value = finals(study, board, REFERENCE, VALUE)
        diffs = {a: stats.difference_interval(finals(study, board, a, VALUE), avi_value) for a in others}
        shown = [_verdict(d, "reversed", "not shown", "holds") for d in diffs.values()]
        lines.append(f"| {board} | AVI's value MAE is below AlphaZero's at every S | "
                     f"{'holds' if shown and all(s == 'holds' for s in shown) else ', '.join(sorted(set(shown))) or '–'} | "
                     + "; ".join(f"{study.label(a)} − AVI {_cell(d)}" for a, d in diffs.items()) + " |")
        gaps = []
        for a in others:
            both = curves(study, board, a, VALUE).mean(axis=1).to_frame("az").join(
                curves(study, board, REFERENCE, VALUE).mean(axis=1).to_frame("avi"), how="inner")
            if len(both) >= 2:
                gap = both["az"] - both["avi"]
                quarter = gap[gap.index <= gap.index.max() / 4]
                gaps.append((a, float(quarter.iloc[-1]) if not quarter.empty else float(gap.iloc[0]),
                             float(gap.iloc[-1])))
        grows = [end > early for _, early, end in gaps]
        lines.append(f"| {board} | the gap grows over training | "
                     f"{'holds' if gaps and all(grows) else ('not for every S' if gaps else '–')} (means, no interval) | "
                     + "; ".join(f"{study.label(a)}: {early:+.3f} at a quarter, {end:+.3f} at the end"
                                 for a, early, end in gaps) + " |")
        for pattern, name in ((REGRET, "regret"), (ERROR, "error rate")):
            best = min(others, key=lambda a: stats.t_interval(finals(study, board, a, searched(pattern))).mean,
                       default=None)
            if best is None:
                continue
            d = stats.difference_interval(finals(study, board, REFERENCE, pattern),
                                          finals(study, board, best, searched(pattern)))
            lines.append(f"| {board} | greedy AVI's {name} is close to or below the best AlphaZero's (search) | "
                         f"{_verdict(d, 'below', 'close: the interval holds 0', 'above')} | "
                         f"AVI − {study.label(best)} {_cell(d)} |")
        spread = {a: stats.t_interval(finals(study, board, a, VALUE)) for a in arms}
        sd = {a: float(pd.Series(finals(study, board, a, VALUE)).std()) for a in arms}
        lines.append(f"| {board} | AVI is stable over seeds | "
                     f"{'holds' if others and all(sd[REFERENCE] <= sd[a] for a in others) else 'not against every S'} "
                     f"(standard deviations of the final value MAE) | "
                     + "; ".join(f"{study.label(a)} {sd[a]:.3f} ({spread[a].n} seeds)" for a in arms) + " |")
        m = study.matches
        if not m.empty:
            mine = m[m["trial"].isin(set(study.cell(board, REFERENCE)["trial"]))]
            iv = stats.t_interval(list(mine["score"]), bounds=(-1.0, 1.0))
            lines.append(f"| {board} | Table 2: greedy AVI scores above AlphaZero at its largest S | "
                         f"{_verdict(iv, 'reversed', 'not shown', 'holds')} | AVI's mean score {_cell(iv)} |")
    lines += ["", "Differences are Welch's 95% intervals over the two arms' seeds at the end of training; *holds* "
              "where the interval excludes 0 on the paper's side, *not shown* where it holds 0, *reversed* where "
              "it excludes 0 on the other side."]
    return "\n".join(lines)


def caption(args: dict) -> str:
    return ("Figure 1 on the small boards: value MAE, policy regret and error rate against gradient updates, the "
            "mean over seeds with its Student-t 95% band; AlphaZero and AZAL by their search at their training S "
            "(solid) and by their policy head (dashed), AVI greedy; the last column the compute relative to AVI's.")


def draw(study: Study, args: dict, plt, colours: dict):
    boards = study.boards()
    fig, axes = plt.subplots(len(boards), 4, figsize=(16, 3.2 * len(boards)), squeeze=False)
    for row, board in zip(axes, boards):
        for ax, (pattern, label, bounds) in zip(row, PANELS):
            for arm in study.arms(board):
                variants = [(pattern, "-")]
                if searches(study, arm):
                    variants = [(searched(pattern), "-"), (pattern, "--")] if pattern != VALUE else [(pattern, "-")]
                for key, style in variants:
                    c = curves(study, board, arm, key)
                    if c.empty:
                        continue
                    bands = [stats.t_interval(list(v), bounds=bounds) for _, v in c.iterrows()]
                    ax.plot(c.index, [b.mean for b in bands], style, color=colours[arm],
                            label=study.label(arm) if board == boards[0] and pattern == VALUE else None)
                    if c.shape[1] > 1:
                        ax.fill_between(c.index, [b.low for b in bands], [b.high for b in bands], color=colours[arm],
                                        alpha=0.12 if style == "-" else 0.06, linewidth=0)
            ax.set_title(f"{board}: {label}", fontsize=9)
            ax.set_xlabel("gradient updates")
        ax = row[3]
        reference = curves(study, board, REFERENCE, VALUE, column="compute").mean(axis=1)
        for arm in study.arms(board):
            mine = curves(study, board, arm, VALUE, column="compute").mean(axis=1)
            both = pd.concat([mine, reference], axis=1, keys=["arm", "avi"]).dropna()
            if not both.empty:
                ax.plot(both.index, both["arm"] / both["avi"], color=colours[arm])
        ax.set_title(f"{board}: compute ÷ AVI's", fontsize=9)
        ax.set_xlabel("gradient updates")
    fig.legend(loc="lower center", ncol=6, fontsize=8, bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig
