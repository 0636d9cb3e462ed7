"""``python -m launch rescore EXP_DIR``: an experiment's searching arms scored afterwards by
their training search, at each checkpoint their runs kept.

The AVI paper scores AlphaZero by its search at its training budget (its section 4.3). A run
evaluates its search beside its policy head as it trains (``evaluation.also_search``); a
run made before that, or with it off, has only its policy head's curve. If it kept
checkpoints (``keep_checkpoints_every``), this scores each of them afterwards on the run's
own suites by the run's training search (``launch/evaluator.py``'s ``training_search``, at
its S, with the exploration constants it trained with), and writes one record per
checkpoint to ``RUN_DIR/search_scores.jsonl``: its ``eval/<suite>@<search>/<metric>`` keys
at the counters (updates, rows, compute, time) of the run's own record at that checkpoint.
The trial data (``launch/results/record.py``) reads them beside the run's metrics. A
checkpoint already scored is not scored again; nothing of the run is changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from evaluation.run_metrics import read_metrics
from launch.experiments.layout import EXPERIMENT_FILE

SEARCH_SCORES = "search_scores.jsonl"
COUNTERS = ("updates", "rows", "compute", "time", "elapsed")


def read_search_scores(run_dir) -> list[dict]:
    """The records ``rescore`` wrote for a run (none: [])."""
    path = Path(run_dir) / SEARCH_SCORES
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rescore_run(run_dir, log=print) -> list[dict]:
    """Score each kept checkpoint of the run in ``run_dir`` that has no record yet by the
    run's training search; returns the new records (none where the run's algorithm
    searches no tree)."""
    from evaluation.checkpoints import read_checkpoint
    from evaluation.runner import SuiteRunner
    from launch.evaluator import chosen_suites, training_search, training_search_settings
    from launch.run_dir import read_run_config
    from learner.checkpoint import list_checkpoints

    run_dir = Path(run_dir)
    config = read_run_config(run_dir)
    search = training_search(config)
    if search is None:
        return []
    by_updates = {}
    for record in read_metrics(run_dir):
        if "updates" in record:  # the counters as the run logged them at that many updates
            by_updates.setdefault(int(record["updates"]), {}).update(
                {k: record[k] for k in COUNTERS if k in record})
    done = {int(r["updates"]) for r in read_search_scores(run_dir)}
    new = []
    def updates_of(path) -> int:
        return int(Path(str(path)).stem.split("-")[-1])

    runner = None
    for path in sorted(list_checkpoints(run_dir / "checkpoints"), key=updates_of):
        updates = updates_of(path)
        if updates in done or updates not in by_updates:
            continue
        game, net_config, weights, _ = read_checkpoint(path, config.game)
        if runner is None:  # one runner for the run's checkpoints: its suites and oracle loaded once
            suites = chosen_suites(game, config.evaluation.suites)
            if suites is False:
                return []
            runner = SuiteRunner(game, net_config, suites=suites,
                                 evaluation=replace(config.evaluation, also_search="auto"), gamma=config.gamma,
                                 training_search=search, search_settings=training_search_settings(config))
        metrics = runner.evaluate(weights, skip=[run.name for run in runner.runs if run.own])
        record = {**by_updates[updates], **metrics, "scored_from": f"checkpoints/{Path(str(path)).name}"}
        with open(run_dir / SEARCH_SCORES, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        new.append(record)
        log(f"{run_dir.name}: {search} at {updates} updates: "
            + ", ".join(f"{k} {v:.3g}" for k, v in sorted(metrics.items())
                        if k.count("/") == 2 and k.endswith(("/error_rate", "/policy_regret"))))
    return new


def rescore_experiment(exp_dir, arms: list[str] | None = None, log=print) -> int:
    """Every trial of the experiment in ``exp_dir`` (of ``arms``) rescored; returns the
    number of checkpoints scored."""
    exp_dir = Path(exp_dir)
    manifest_path = exp_dir / EXPERIMENT_FILE
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{exp_dir}: no {EXPERIMENT_FILE}, not an experiment directory")
    manifest = json.loads(manifest_path.read_text())
    known = set(manifest["arms"])
    unknown = sorted(set(arms or ()) - known)
    if unknown:
        raise ValueError(f"--arm {', '.join(unknown)}: not an arm of {manifest['spec']}; arms: {', '.join(known)}")
    scored = 0
    for trial in manifest["trials"]:
        run_dir = exp_dir / trial["run_dir"]
        if (arms and trial["arm"] not in arms) or not (run_dir / "checkpoints").is_dir():
            continue
        scored += len(rescore_run(run_dir, log))
    return scored


def rescore_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launch rescore",
                                     description="Score the kept checkpoints of an experiment's searching arms by "
                                                 "their training search at its budget.")
    parser.add_argument("exp_dir", type=Path, help="an experiment directory (python -m launch experiment --out)")
    parser.add_argument("--arm", action="append", help="only this arm (repeatable); default every searching arm")
    args = parser.parse_args(argv)
    try:
        scored = rescore_experiment(args.exp_dir, args.arm)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{scored} checkpoint(s) scored; python -m launch results add {args.exp_dir} --study NAME takes them in")
    return 0
