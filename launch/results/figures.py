"""The results pages' figures, drawn from a study's data (launch/results/fragments.py
links them). Each PNG records the digest of the data and arguments it was drawn from in
its ``Description`` text chunk, so ``python -m launch results --check`` tells a stale
figure without redrawing it (a redraw differs byte for byte between Matplotlib builds).

- ``km``: per board, the Kaplan-Meier share of seeds at the goal against updates, the
  held goal solid and the first hit dashed, an arm a colour; each seed's held time a tick
  on the axis, a censored seed an open circle at its last evaluation.
- ``curves``: per board a row, per metric a column, against updates: every seed a thin
  line, the mean over seeds a thick one up to the first seed's stop (a held goal ends a
  trial early).
- ``figure1``: the AVI paper's Figure 1 (launch/results/figure1.py): per board a row, value
  MAE, regret and error rate with Student-t bands over seeds, and the compute relative to AVI.
"""

from __future__ import annotations

from pathlib import Path

from launch.results import figure1, stats
from launch.results.data import GOAL_METRIC, Study

FIGURES = ("km", "curves", "figure1")
ARM_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive")
DIGEST_KEY = "Description"


def caption(kind: str, study: Study, args: dict) -> str:
    if kind == "km":
        return (f"Share of seeds at an error rate of {float(args.get('goal', 0)):g} against the solver, held at 3 "
                f"evaluations in a row (solid) and first reached (dashed), against updates: Kaplan-Meier estimates "
                f"per board and arm; ticks: each seed's held time; open circles: seeds censored at their last "
                f"evaluation.")
    if kind == "curves":
        return (f"{', '.join(m.split('/')[-1] for m in args['metrics'].split(','))} against updates per board: "
                f"each seed a thin line, the mean over seeds thick while every seed runs.")
    if kind == "figure1":
        return figure1.caption(args)
    raise ValueError(f"figure kind {kind!r}: one of {', '.join(FIGURES)}")


def recorded_digest(path: Path) -> str | None:
    from PIL import Image

    if not Path(path).is_file():
        return None
    with Image.open(path) as image:
        return image.text.get(DIGEST_KEY)


def draw(kind: str, study: Study, args: dict, path: Path, digest: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    text = caption(kind, study, args)
    boards = study.boards()
    colours = {arm: ARM_COLOURS[i % len(ARM_COLOURS)] for i, arm in enumerate(study.arms())}
    if kind == "km":
        metric, goal = args.get("metric", GOAL_METRIC), float(args.get("goal", 0))
        fig, axes = plt.subplots(1, len(boards), figsize=(4.2 * len(boards), 3.4), squeeze=False)
        for ax, board in zip(axes[0], boards):
            for arm in study.arms(board):
                rows = study.goal_times(board, arm, metric, goal)
                ends = [r.end for _, r in rows]
                for attr, style in (("held", "-"), ("first", "--")):
                    km = stats.kaplan_meier([getattr(r, attr) for _, r in rows], ends)
                    ax.step([0.0, *km.times, max(ends)], [0.0, *km.share, km.share[-1]], where="post",
                            linestyle=style, color=colours[arm],
                            label=f"{study.label(arm)} ({attr})" if board == boards[0] else None)
                held = [r.held for _, r in rows if r.held is not None]
                ax.plot(held, [-0.03] * len(held), "|", color=colours[arm], markersize=10)
                censored = [r.end for _, r in rows if r.held is None]
                ax.plot(censored, [0.0] * len(censored), "o", mfc="none", color=colours[arm])
            ax.set_title(board, fontsize=10)
            ax.set_xlabel("gradient updates")
            ax.set_ylim(-0.06, 1.05)
        axes[0][0].set_ylabel("share of seeds at the goal")
        fig.legend(loc="lower center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, -0.02))
        fig.tight_layout(rect=(0, 0.1, 1, 1))
    elif kind == "curves":
        metrics = [m.strip() for m in args["metrics"].split(",")]
        fig, axes = plt.subplots(len(boards), len(metrics), figsize=(4.0 * len(metrics), 3.0 * len(boards)),
                                 squeeze=False)
        for row, board in zip(axes, boards):
            for ax, metric in zip(row, metrics):
                for arm in study.arms(board):
                    series = [study.series(t, metric) for t in study.cell(board, arm)["trial"]]
                    for s in series:
                        ax.plot(s["updates"], s["value"], color=colours[arm], alpha=0.3, linewidth=0.8)
                    if series and all(not s.empty for s in series):
                        import pandas as pd

                        # The mean only where every seed evaluated: past a seed's stop it would be
                        # the mean of the others, a different set of seeds.
                        mean = pd.concat([s.set_index("updates")["value"] for s in series], axis=1).dropna().mean(axis=1)
                        ax.plot(mean.index, mean.values, color=colours[arm], linewidth=2,
                                label=study.label(arm) if board == boards[0] and metric == metrics[0] else None)
                ax.set_title(f"{board}: {metric.split('/')[-1]}", fontsize=9)
                ax.set_xlabel("gradient updates")
        fig.legend(loc="lower center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, -0.01))
        fig.tight_layout(rect=(0, 0.06, 1, 1))
    elif kind == "figure1":
        fig = figure1.draw(study, args, plt, colours)
    else:
        raise ValueError(f"figure kind {kind!r}: one of {', '.join(FIGURES)}")
    fig.savefig(path, dpi=110, metadata={DIGEST_KEY: digest})
    plt.close(fig)
    return text
