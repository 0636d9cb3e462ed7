"""The ladder: the compute each arm takes to reach a play error rate, against the board's size.

An experiment whose groups are boards of one game (``experiments/ladder-connect4.toml``:
Connect Four 4x4 to 6x5; ``ladder-hex.toml``: Hex 3x3 to 6x6) trains each arm until its
error rate against the perfect opponent, from every opening of the board's play suite,
reaches 0 or its budget ends. Its report adds what Jones (2021) drew for AlphaZero on
Hex, with an exact metric in place of Elo: for each arm and goal (an error rate <= 0.05,
and 0), the updates and the compute proxy of each trial's first evaluation at the goal,
against the board's cells, the Kaplan-Meier median over every seed with its 95% interval
(launch/results/stats.py). A seed that never got there is censored at its last record,
counted as "not there yet", never left out: drawn at its budget as an open marker, and
counted in the table ("k of n").

The experiment is recognised by its trials, not by its name (:func:`ladder_boards`):
every finished trial runs on an instance whose parameters give a board (a game whose
observation is planes x rows x columns), the trials of a group share one board, and
each logged its board's play error rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from launch.results.stats import kaplan_meier

GOALS = (0.05, 0.0)  # play error rates: nearly solved, and solved against every opening


@dataclass(frozen=True)
class Board:
    """A group's board: its cells and the record key of its play suite's error rate."""

    cells: int
    metric: str  # eval/<the board's play suite>/error_rate


@dataclass(frozen=True)
class Crossing:
    """One trial's first evaluation at or below a goal, or its budget where it never got there."""

    seed: int
    reached: bool
    updates: float  # at the crossing; the trial's last record when not reached (censored)
    compute: float | None  # the compute proxy at the same record (None where not logged)
    run_dir: str


def _board(config) -> tuple[int, list[str]] | None:
    """(cells, the error-rate keys of its play suites) of a trial's game; None when the game
    has no board of rows x columns or no suites."""
    from evaluation.suites import suites_for

    game = config.game_network.make_game()
    if len(game.obs_shape) != 3:  # planes x rows x columns; an F-Game's tree has no board
        return None
    try:
        suites = suites_for(game)
    except ValueError:  # a game without evaluation suites
        return None
    return game.obs_shape[-2] * game.obs_shape[-1], [f"eval/{s.name}/error_rate" for s in suites if s.kind == "play"]


def ladder_boards(exp) -> dict | None:
    """group -> :class:`Board` when every finished trial of ``exp`` (a read experiment,
    launch/experiments/report.py) is on an instance whose parameters give a board, logged
    that board's play error rate, and shares its group's board; else None."""
    from launch.config import TrainConfig

    boards: dict = {}
    for (group, _), trials in exp.runs.items():
        for trial, records in trials:
            config = TrainConfig.from_dict(trial["config"])
            if not trial.get("instance") or not config.game_params:
                return None
            board = _board(config)
            logged = [m for m in (board[1] if board else []) if any(m in r for r in records)]
            if len(logged) != 1:
                return None
            found = Board(board[0], logged[0])
            if boards.setdefault(group, found) != found:
                return None
    return boards or None


def first_crossing(trial: dict, records: list[dict], metric: str, goal: float) -> Crossing:
    """The trial's first evaluation with ``metric`` <= ``goal``, in updates, or its last
    record (censored). Records are merged per update count, the later winning: a resumed
    run logs again the iterations after its last checkpoint."""
    by_updates: dict = {}
    for r in records:
        if "updates" in r:
            by_updates.setdefault(r["updates"], {}).update(r)
    if not by_updates:
        raise ValueError(f"{trial['run_dir']}: no record holds 'updates'")
    points = [by_updates[u] for u in sorted(by_updates)]
    hit = next((r for r in points if isinstance(r.get(metric), (int, float)) and r[metric] <= goal), None)
    at = hit if hit is not None else points[-1]
    return Crossing(trial["seed"], hit is not None, float(at["updates"]), at.get("compute"), trial["run_dir"])


def crossings(exp, boards: dict, group: str, arm: str, goal: float) -> list[Crossing]:
    return [first_crossing(t, recs, boards[group].metric, goal) for t, recs in exp.trials(group, arm)]


def _km(found: list[Crossing], key: str):
    """The Kaplan-Meier estimate of the trials' ``key`` (updates or compute) to the goal;
    None where a trial did not log ``key``."""
    if any(getattr(c, key) is None for c in found):
        return None
    return kaplan_meier([getattr(c, key) if c.reached else None for c in found], [getattr(c, key) for c in found])


def _fmt(km, fmt: str) -> str:
    """The KM median [95% interval] (∞: not bounded by the seeds); "not reached" for none."""
    if km is None or km.reached == 0:
        return "–" if km is None else "not reached"
    f = (lambda v: "∞" if v == float("inf") else format(v, fmt))
    return f"{f(km.median)} [{f(km.low)}, {f(km.high)}]"


def ladder_lines(exp, boards: dict) -> list[str]:
    """The summary's ladder table: per board, arm and goal, the seeds that reached it, the
    Kaplan-Meier median updates and compute over every seed, the others' budgets, and the files."""
    lines = ["## Ladder: compute to reach the play error rate, against the board's cells", "",
             "| board | cells | arm | error rate | reached (seeds) | updates (Kaplan-Meier median [95% CI] "
             "over every seed) | compute | not reached: updates at its end | from |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for group in sorted(boards, key=lambda g: boards[g].cells):
        for arm in (a for a in exp.arms if exp.trials(group, a)):
            for goal in GOALS:
                found = crossings(exp, boards, group, arm, goal)
                hit = [c for c in found if c.reached]
                censored = ", ".join(f"{c.updates:,.0f} (seed {c.seed})" for c in found if not c.reached) or "–"
                lines.append(
                    f"| {group} | {boards[group].cells} | {exp.labels[arm]} | <= {goal:g} | {len(hit)} of {len(found)} "
                    f"| {_fmt(_km(found, 'updates'), ',.0f')} | {_fmt(_km(found, 'compute'), '.3g')} | {censored} "
                    f"| {', '.join(f'`{c.run_dir}/metrics.jsonl`' for c in found)} |")
    metrics = sorted({b.metric.removeprefix("eval/") for b in boards.values()})
    return lines + ["", f"Each trial's first evaluation with the play error rate ({', '.join(metrics)}) at or "
                        "below the goal: its `updates` and `compute` (the proxy N_forward + 3 N_backward), as "
                        "the Kaplan-Meier median over every seed with its 95% interval (lifelines; ∞: an end "
                        "the seeds cannot bound). A trial that never got there within its budget is censored at "
                        "its last record (listed), counted as not there yet: a mean over only the seeds that "
                        "reached the goal would be biased down.", ""]


def draw_ladder(exp, boards: dict, out_dir: Path, plt) -> Path:
    """``figure_ladder.png``: a row per goal, a column per x of compute (updates, the
    compute proxy), the board's cells across; per arm the Kaplan-Meier median and its 95%
    interval over every seed (drawn where at least half reached the goal; each seed that
    did a small dot), and each censored seed as an open triangle at its budget. One legend below the panels, an arm a colour, so that
    it hides no point however many arms (an experiment joined ``--beside`` another) there are."""
    order = sorted(boards, key=lambda g: boards[g].cells)
    colours = {arm: f"C{i}" for i, arm in enumerate(exp.arms)}  # as the report's other figures
    drawn = [arm for arm in exp.arms if any(a == arm for _, a in exp.runs)]  # a size may leave arms out
    legend = [plt.Line2D([], [], color=colours[arm], marker="o", label=exp.labels[arm]) for arm in drawn]
    legend += [plt.Line2D([], [], color="grey", marker="o", label="Kaplan-Meier median and 95% CI over every seed "
                          "(small dots: the seeds that reached the goal)"),
               plt.Line2D([], [], color="grey", marker="^", markerfacecolor="none", linestyle="none",
                          label="a seed that did not reach it, at its budget")]
    legend_inches = 0.2 * -(-len(legend) // 2) + 0.3  # two columns
    height = 3.4 * len(GOALS) + legend_inches
    fig, axes = plt.subplots(len(GOALS), 2, figsize=(9.0, height), squeeze=False)
    for row, goal in enumerate(GOALS):
        for col, (key, label) in enumerate((("updates", "gradient updates"),
                                            ("compute", "compute (N_forward + 3 N_backward)"))):
            ax = axes[row][col]
            for i, arm in enumerate(drawn):
                colour, shift = colours[arm], 0.25 * (i - (len(drawn) - 1) / 2)  # arms side by side
                xs, means, halves, seed_x, seed_y, open_x, open_y = [], [], [], [], [], [], []
                for group in order:
                    found = crossings(exp, boards, group, arm, goal)
                    values = [getattr(c, key) for c in found if c.reached and getattr(c, key) is not None]
                    km = _km(found, key)
                    if km is not None and km.median != float("inf"):
                        high = km.high if km.high != float("inf") else max(getattr(c, key) for c in found)
                        xs.append(boards[group].cells + shift), means.append(km.median)
                        halves.append((km.median - km.low, high - km.median))
                    seed_x += [boards[group].cells + shift] * len(values)
                    seed_y += values
                    for c in found:
                        if not c.reached and getattr(c, key) is not None:
                            open_x.append(boards[group].cells + shift), open_y.append(getattr(c, key))
                if xs:
                    ax.errorbar(xs, means, yerr=list(zip(*halves)), fmt="-o", color=colour, capsize=3)
                if seed_x:
                    ax.scatter(seed_x, seed_y, s=8, color=colour, alpha=0.5)
                if open_x:
                    ax.scatter(open_x, open_y, marker="^", s=40, facecolors="none", edgecolors=colour)
            ax.set_yscale("log")
            ax.set_xticks([boards[g].cells for g in order], [f"{boards[g].cells}\n{g}" for g in order], fontsize=7)
            ax.set_xlabel("board cells", fontsize=8)
            ax.set_ylabel(label, fontsize=8)
            ax.set_title(f"play error rate <= {goal:g}: first reached", fontsize=9)
            ax.grid(alpha=0.3)
    fig.legend(handles=legend, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=(legend_inches + 0.45) / height, top=1 - 0.35 / height,
                        wspace=0.3, hspace=0.5)
    path = out_dir / "figure_ladder.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
