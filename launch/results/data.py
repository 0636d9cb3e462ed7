"""A study's committed trial data read back: ``results/<study>/`` as pandas frames, and the
questions every page asks of it (the trials of a board and arm, a metric's series, the
updates every trial of a board reached)."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from launch.results import stats
from launch.results.schema import STUDY_FILE, TABLES, TUNING_PREFIX

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "results"  # the repository's trial data, a directory per study

GOAL_METRIC = "eval/*-play/error_rate"  # the error rate against the solver, from every opening, both sides
# The AVI paper's training budgets in gradient updates (its section 4: Connect Four and
# Hex 7x7 for 2.4M updates; Othello and Go 9x9 for 5.12M gradient steps). The small boards
# have no budget of their own in the paper: a page states theirs against the full board's.
PAPER_UPDATES = {"connect4": 2_400_000, "hex": 2_400_000, "othello": 5_120_000, "go": 5_120_000}


class StudyMissing(FileNotFoundError):
    pass


JOIN = "+"  # a marker's study=a+b draws the trials of studies a and b as one


@dataclass
class Study:
    name: str  # a study's directory name, or the joined names (a+b)
    paths: list  # results/<study>/, one a study joined
    info: dict  # study.json (joined: the parts' arms in order, each part's own under "parts")
    trials: pd.DataFrame
    evaluations: pd.DataFrame
    matches: pd.DataFrame
    tunings: list  # each tune-<arm>.json: an arm's exploration parameter tuned (launch tune)

    @property
    def finished(self) -> pd.DataFrame:
        """The trials that ended (budget or held goal): the statistics take these alone."""
        return self.trials[self.trials["finished"]]

    def boards(self) -> list[str]:
        return list(dict.fromkeys(self.finished["board"]))

    def arms(self, board: str | None = None) -> list[str]:
        """The arms in the spec's order (those with finished trials on ``board``)."""
        have = self.finished if board is None else self.finished[self.finished["board"] == board]
        order = self.info.get("arms") or list(dict.fromkeys(have["arm"]))
        return [a for a in order if a in set(have["arm"])]

    def label(self, arm: str) -> str:
        return str(self.trials.loc[self.trials["arm"] == arm, "arm_label"].iloc[0])

    def cell(self, board: str, arm: str) -> pd.DataFrame:
        """The finished trials of one board and arm, by seed."""
        t = self.finished
        return t[(t["board"] == board) & (t["arm"] == arm)].sort_values("seed")

    def series(self, trial: str, pattern: str) -> pd.DataFrame:
        """The evaluations of one trial whose metric key matches ``pattern`` (fnmatch, one
        key a trial: a board's suite), by updates."""
        e = self.evaluations[self.evaluations["trial"] == trial]
        keys = [k for k in e["metric"].unique() if fnmatch.fnmatchcase(k, pattern)]
        if len(keys) > 1:
            raise ValueError(f"study {self.name}, trial {trial}: {pattern!r} matches {len(keys)} metrics "
                             f"({', '.join(sorted(keys))}); name one")
        return e[e["metric"] == keys[0]].sort_values("updates") if keys else e.iloc[0:0]

    def matched_updates(self, board: str, pattern: str, arms: list[str] | None = None) -> int | None:
        """The most updates at which every finished trial of ``board`` (of ``arms``)
        evaluated ``pattern``: values there do not depend on when a trial stopped."""
        ends = []
        for arm in arms or self.arms(board):
            for trial in self.cell(board, arm)["trial"]:
                s = self.series(trial, pattern)
                if s.empty:
                    return None
                ends.append(int(s["updates"].max()))
        return min(ends) if ends else None

    def goal_times(self, board: str, arm: str, metric: str, goal: float, x: str = "updates") -> list:
        """[(seed, stats.GoalTimes)] of the finished trials of one board and arm: when each
        first reached ``metric`` <= ``goal`` and when it held there at the trial's ``hold``
        evaluations in a row (at least 3), in ``x`` (updates or compute)."""
        out = []
        for _, t in self.cell(board, arm).iterrows():
            s = self.series(t["trial"], metric).dropna(subset=[x])
            if s.empty:  # a trial that never evaluated the metric (an arm without a search): no time
                continue
            points = list(zip(s[x].astype(float), s["value"].astype(float)))
            out.append((int(t["seed"]), stats.goal_times(points, goal, max(int(t["hold"]), stats.MIN_HOLD))))
        return out

    def arm_setting(self, arm: str, key: str, instance: str | None = None):
        """The value of the dotted config ``key`` its trials of ``arm`` (on ``instance``,
        the spec's name of a board: its trials' names begin with it) ran with (None when
        they differ or do not hold it)."""
        values = set()
        mine = self.trials["arm"] == arm
        if instance:
            mine &= self.trials["trial"].str.startswith(f"{instance}-{arm}-s")
        for config in self.trials.loc[mine, "config"]:
            node = json.loads(config)
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            values.add(json.dumps(node))
        return json.loads(values.pop()) if len(values) == 1 else None

    def value_at(self, trial: str, pattern: str, updates: int) -> float | None:
        """The metric at the trial's last evaluation at or before ``updates``."""
        s = self.series(trial, pattern)
        s = s[s["updates"] <= updates]
        return None if s.empty else float(s["value"].iloc[-1])


def load_study(name: str, root: Path = RESULTS_DIR) -> Study:
    """``results/<name>/``; a name of studies joined by ``+`` gives their trials as one study,
    so that a page draws trials of one protocol that ran in separate experiments (a
    ladder's arms and an arm run beside them later, on the same boards and seeds) in one
    table. Two parts holding the same board, arm and seed are refused."""
    if JOIN in name:
        return _joined(name, [load_study(part, root) for part in name.split(JOIN)])
    path = Path(root) / name
    if not (path / STUDY_FILE).is_file():
        raise StudyMissing(f"results/{name}: no such study (no {STUDY_FILE}); studies: "
                           f"{', '.join(study_names(root)) or 'none'}")
    frames = {t: pq.read_table(path / f"{t}.parquet").to_pandas() for t in TABLES}
    tunings = [json.loads(p.read_text()) for p in sorted(path.glob(f"{TUNING_PREFIX}*.json"))]
    return Study(name, [path], json.loads((path / STUDY_FILE).read_text()), frames["trials"], frames["evaluations"],
                 frames["matches"], tunings)


def _joined(name: str, parts: list[Study]) -> Study:
    trials = pd.concat([p.trials for p in parts], ignore_index=True)
    twice = trials[trials.duplicated(["board", "arm", "seed"], keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        holders = sorted(set(twice.loc[(twice["board"] == first["board"]) & (twice["arm"] == first["arm"])
                                       & (twice["seed"] == first["seed"]), "study"]))
        raise ValueError(f"study={name}: {first['board']}, arm {first['arm']}, seed {first['seed']} is in "
                         f"{' and '.join(holders)}; a joined study takes each trial from one part")
    arms = list(dict.fromkeys(a for p in parts for a in (p.info.get("arms") or [])))
    info = {"study": name, "arms": arms, "parts": [p.info for p in parts],
            "planned_trials": sum(p.info.get("planned_trials", len(p.trials)) for p in parts)}
    return Study(name, [path for p in parts for path in p.paths], info, trials,
                 pd.concat([p.evaluations for p in parts], ignore_index=True),
                 pd.concat([p.matches for p in parts], ignore_index=True), [t for p in parts for t in p.tunings])


def study_names(root: Path = RESULTS_DIR) -> list[str]:
    return sorted(p.parent.name for p in Path(root).glob(f"*/{STUDY_FILE}"))
