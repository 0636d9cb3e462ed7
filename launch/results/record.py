"""A study's trial data read from its experiment directory and written as the tables of
``launch/results/schema.py``: what ``launch report`` and each finished trial write into
the experiment's ``data/``, and what ``python -m launch results add`` copies into the
repository's ``results/<study>/``.

Where a trial ran (commit, machine) comes from its run directory's provenance file,
written by every start and resume of a run (``launch/run_dir.py``); a run older than that
file needs ``commit`` and ``machine`` stated by whoever adds it, and they are recorded as
given.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.parquet as pq

from evaluation.run_config import CONFIG_FILE
from evaluation.metric_keys import parse_metric_key
from evaluation.run_metrics import read_metrics
from launch.experiments.layout import DONE_FILE, EXPERIMENT_FILE, match_path
from launch.experiments.rescore import read_search_scores
from launch.results.schema import STUDY_FILE, TABLES, table_from_rows
from launch.run_dir import read_provenance

DATA_DIR = "data"  # an experiment directory's copy of its trial data
# Where a run without a provenance file ran, in an experiment's own data; the repository's
# results/ never hold it (``results add`` asks for --commit and --machine instead).
UNKNOWN = "unknown"


def _iso(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds")


def _evaluation_rows(study: str, trial: str, records: list[dict]) -> list[dict]:
    """One row per numeric ``eval/`` key at each number of updates, at the counters of the
    record that carried it (a run logs its counters with each evaluation's record). A key
    logged twice at the same updates keeps its later value: a resumed run logs again the
    evaluations after its checkpoint, and the final weights' evaluation repeats the last
    iteration's."""
    start = next((r["time"] for r in records if "time" in r), None)
    rows, counters = {}, {"updates": 0, "rows": 0, "compute": None}
    for record in records:
        for key in counters:
            if isinstance(record.get(key), (int, float)):
                counters[key] = record[key]
        wall = record["time"] - start if start is not None and "time" in record else 0.0
        for key, value in record.items():
            if (parse_metric_key(key) is not None and isinstance(value, (int, float))
                    and not isinstance(value, bool)):
                updates = int(counters["updates"])
                rows[(updates, key)] = {
                    "study": study, "trial": trial, "updates": updates, "rows": int(counters["rows"]),
                    "compute": None if counters["compute"] is None else float(counters["compute"]),
                    "wall_s": float(wall), "metric": key, "value": float(value)}
    return list(rows.values())


def _provenance(run_dir: Path, stated: dict) -> tuple[str, str]:
    """(commit, machine) of a run: its provenance file's, joined over its starts, or what
    was stated for a run without one; neither is UNKNOWN, or with ``stated["strict"]`` an
    error naming the run."""
    starts = read_provenance(run_dir)
    if starts:
        commits = list(dict.fromkeys(s["commit"] for s in starts))
        machines = list(dict.fromkeys(s["machine"] for s in starts))
        return ", ".join(commits), "; ".join(machines)
    if stated.get("commit") and stated.get("machine"):
        return stated["commit"], stated["machine"]
    if not stated.get("strict"):
        return UNKNOWN, UNKNOWN
    raise ValueError(f"{run_dir}: no provenance file (a run started before runs recorded one); state where "
                         f"it ran with --commit and --machine")


def experiment_tables(exp_dir, study: str, *, stated: dict | None = None) -> dict:
    """The trials of the experiment in ``exp_dir`` that have metrics, as the three tables
    (pyarrow); an unfinished trial is kept with ``finished`` false, so that a reader sees
    it and the statistics leave it out."""
    exp_dir = Path(exp_dir)
    manifest = json.loads((exp_dir / EXPERIMENT_FILE).read_text())
    labels = {arm: entry.get("label", arm) for arm, entry in manifest["arms"].items()}
    trials, evaluations = [], []
    for trial in manifest["trials"]:
        run_dir = exp_dir / trial["run_dir"]
        try:
            records = read_metrics(run_dir)
        except FileNotFoundError:
            continue  # not started
        commit, machine = _provenance(run_dir, stated or {})
        times = [r["time"] for r in records if "time" in r]
        # The run's own config.json holds its resolved config; the plan's is the one asked for.
        written = run_dir / CONFIG_FILE
        config = json.loads(written.read_text()) if written.is_file() else trial["config"]
        trials.append({
            "study": study, "trial": trial["name"], "arm": trial["arm"], "arm_label": labels[trial["arm"]],
            "algo": config["algo"], "game": config["game"], "board": trial["group"], "seed": int(trial["seed"]),
            "budget_updates": int(trial["updates"]), "goal": json.dumps(trial.get("stop_when") or {}, sort_keys=True),
            "hold": int(trial.get("hold", 1)), "finished": (run_dir / DONE_FILE).is_file(),
            "final_updates": int(max((r["updates"] for r in records if "updates" in r), default=0)),
            "commit": commit, "machine": machine, "started": _iso(min(times, default=None)),
            "ended": _iso(max(times, default=None)), "config": json.dumps(config, sort_keys=True)})
        # The search's scores of kept checkpoints (launch rescore) after the run's own: a
        # key the run logged itself at the same updates keeps the later, rescored value.
        evaluations += _evaluation_rows(study, trial["name"], records + read_search_scores(run_dir))
    matches = []
    for match in manifest.get("matches", []):
        path = match_path(exp_dir, match)
        if not path.is_file():
            continue
        result = json.loads(path.read_text())
        metrics = result.get("metrics", {})
        suite = match["suite"]
        count = {k: int(metrics.get(f"eval/{suite}/{k}", 0)) for k in ("wins", "draws", "losses")}
        # Each side's policy as the plan resolved it (auto: the policy head, else greedy) and
        # its search budget where it has one; a result that records its own wins over the plan.
        sides = result.get("sides") or {
            "a": {"trial": match["trial"], "policy": match.get("policy")},
            "b": {"trial": match["opponent_trial"], "policy": match.get("opponent_policy")}}
        matches.append({"study": study, "match": match["name"], "trial": match["trial"],
                        "opponent": match["opponent_trial"], "policies": json.dumps(sides, sort_keys=True),
                        "games": sum(count.values()), **count,
                        "score": float(metrics.get(f"eval/{suite}/score", float("nan")))})
    return {"trials": table_from_rows("trials", trials), "evaluations": table_from_rows("evaluations", evaluations),
            "matches": table_from_rows("matches", matches)}


def study_info(exp_dir, study: str) -> dict:
    """``study.json`` of an experiment directory: what a page says of where the data came from."""
    exp_dir = Path(exp_dir)
    manifest = json.loads((exp_dir / EXPERIMENT_FILE).read_text())

    def portable(argv: str) -> str:
        """The command as a reader would run it: the experiment directory under runs/, not
        the path of the machine that ran it."""
        return argv.replace(str(exp_dir.resolve()), f"runs/{exp_dir.name}").replace(str(exp_dir), f"runs/{exp_dir.name}")

    return {"study": study, "spec": manifest.get("spec"), "size": manifest.get("size"),
            "description": manifest.get("description", ""), "game": manifest.get("game"),
            "reference_arm": manifest.get("reference_arm"), "arms": list(manifest["arms"]),
            "planned_trials": len(manifest["trials"]),  # a study stopped by its clock has fewer with data
            "commands": [{"time": c.get("time", ""), "argv": portable(c["argv"])} for c in manifest.get("commands", [])]}


def write_tables(tables: dict, info: dict, out_dir) -> Path:
    """The tables and ``study.json`` into ``out_dir`` (Parquet, zstd: a study is kilobytes)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        pq.write_table(tables[name], out_dir / f"{name}.parquet", compression="zstd")
    (out_dir / STUDY_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    return out_dir


def write_experiment_data(exp_dir, study: str | None = None, *, stated: dict | None = None) -> Path:
    """The experiment's trial data into its own ``data/`` (named after its directory
    unless ``study`` is given)."""
    exp_dir = Path(exp_dir)
    study = study or exp_dir.name
    return write_tables(experiment_tables(exp_dir, study, stated=stated), study_info(exp_dir, study),
                        exp_dir / DATA_DIR)
