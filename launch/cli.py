"""Argument parsing for ``python -m launch`` (the command line of docs/design.md).

``python -m launch --algo ALGO --game GAME ...`` trains; the first word may instead
name a subcommand: ``demo`` (random play on an engine, with its speed), ``evaluate``
(a checkpoint's exact metrics: ``evaluation/cli.py``), ``report`` (plots and a
summary table of run directories: ``evaluation/report.py``), ``play`` (the board in the
browser: ``board/``), ``gtp`` (a checkpoint as a GTP engine: ``launch/gtp_serve.py``),
``experiment`` (a spec's trials on Ray Tune: ``launch/experiment.py``), ``tune`` (an
arm's exploration parameter tuned on Ray Tune: ``launch/experiments/tuning.py``) and
``results`` (the results pages drawn from the committed trial data: ``launch/results/pages.py``).
"""

from __future__ import annotations

import argparse
import json
import sys

import ray

import algorithms
import games
import storage
from launch.experiments.report import report_main
from evaluation.run_metrics import read_metrics
from evaluation.cli import evaluate_main
from launch.config import ConfigError, apply_overrides, resolve
from launch.demo import run_demo
from launch.restarts import WaitExpired
from launch.run_dir import check_shared, resume_changes, resumed_config
from launch.run_store import check_lengthens
from launch.summary import end_of_run
from launch.run_budget import check_budget
from launch.train import train
from lifecycle.json_stdout import stdout_to_stderr

SUBCOMMANDS = ("demo", "evaluate", "report", "play", "gtp", "experiment", "tune", "rescore", "results")


def parse_game_params(pairs: list[str]) -> dict:
    """``games.parse_params`` for the command line: a malformed pair ends it with the error."""
    try:
        return games.parse_params(pairs)
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None


def train_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m launch",
        description="Train by self-play on Ray. Subcommands: "
                    + ", ".join(SUBCOMMANDS) + " (python -m launch SUBCOMMAND --help).")
    p.add_argument("--algo", choices=algorithms.names(), help="training algorithm (required unless --resume)")
    p.add_argument("--game", choices=games.names(), help="game to learn (required unless --resume)")
    p.add_argument("--preset", help="named hyperparameter preset (default: the paper's for the game)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config field by its dotted key (learner.lr=1e-3, actors.num_envs=64, "
                        "actors.mcts.simulations=32, evaluation.every=5; docs/reference/config.md); repeatable")
    p.add_argument("--run-dir", help="directory of this run (config.json, metrics.jsonl, checkpoints/): a path, "
                   "a shared mount, or an object store's URI (s3://bucket/run, gs://bucket/run)")
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR (a path or a URI) exactly; it may "
                   "lengthen the run (--updates, the run's total, or --minutes) and --set only the bounds of its "
                   "waits (learner.wait_for_gpu_s, learner.restart_wait_s, storage_outage_s)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--updates", type=int, help="stop after this many gradient updates (the run's total)")
    budget.add_argument("--minutes", type=float,
                        help="the run's wall clock, from Ray's start to the exit: evaluations, checkpoints and "
                             "the end included (evaluations planned into evaluation.time_share of it)")
    budget.add_argument("--train-minutes", type=float,
                        help="stop after this many minutes of collecting and training (evaluations not counted)")
    p.add_argument("--seed", type=int, help="the run's seed (default: the preset's, 0)")
    p.add_argument("--address", help="Ray cluster to join (auto or ray://host:port); default: embedded Ray")
    p.add_argument("--wandb", choices=("offline", "online", "disabled"),
                   help="W&B mode (default: online with credentials, else offline)")
    p.add_argument("--json", action="store_true",
                   help="print the final record as one JSON object instead of the summary")
    return p


def demo_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m launch demo",
        description="Play random games on one engine, show a finished board and the speed.")
    p.add_argument("--game", choices=games.names(), default="connect4")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="game parameter, e.g. --param size=9; repeatable")
    p.add_argument("--games", type=int, default=1024, help="number of games played in one batch")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "demo":
        args = demo_parser().parse_args(argv[1:])
        return run_demo(args.game, parse_game_params(args.param), args.games, args.seed)
    if argv and argv[0] == "evaluate":
        return evaluate_main(argv[1:])
    if argv and argv[0] == "report":
        return report_main(argv[1:])
    if argv and argv[0] == "play":  # the board in the browser (board/cli.py); imported here, it loads a web stack
        from board.cli import play_main
        return play_main(argv[1:])
    if argv and argv[0] == "experiment":  # a spec's trials on Ray Tune (launch/experiment.py); imports Tune
        from launch.experiment import experiment_main
        return experiment_main(argv[1:])
    if argv and argv[0] == "tune":  # an arm's exploration parameter on Ray Tune (launch/experiments/tuning.py)
        from launch.experiments.tuning import tune_main
        return tune_main(argv[1:])
    if argv and argv[0] == "rescore":  # kept checkpoints scored by their search (launch/experiments/rescore.py)
        from launch.experiments.rescore import rescore_main
        return rescore_main(argv[1:])
    if argv and argv[0] == "results":  # the results pages from results/ (launch/results/pages.py)
        from launch.results.pages import main as results_main
        return results_main(argv[1:])
    if argv and argv[0] == "gtp":  # a checkpoint as a GTP engine (launch/gtp_serve.py)
        from launch.gtp_serve import gtp_main
        return gtp_main(argv[1:])
    parser = train_parser()
    args = parser.parse_args(argv)
    return run_training(parser, args)


def run_training(parser: argparse.ArgumentParser, args) -> int:
    try:
        if args.resume:
            # A resumed run continues exactly: its config.json is kept, but for the bounds of
            # its waits (RESUME_SETTABLE); its budget may be longer than the first start's.
            changes = [flag for flag, given in (("--seed", args.seed is not None),
                                                ("--preset", args.preset is not None)) if given]
            if changes:
                raise ConfigError(f"{' and '.join(changes)} cannot change a resumed run; "
                                  f"--resume {args.resume} keeps its config.json")
            overrides = resume_changes(args.resume, args.overrides)
            config = apply_overrides(resumed_config(args.resume, algo=args.algo, game=args.game), overrides)
            check_lengthens(args.resume, args.updates)
        else:
            if not args.algo or not args.game:
                parser.error("--algo and --game are required (or --resume DIR)")
            config = resolve(args.game, args.preset, args.overrides, algo=args.algo, seed=args.seed)
        check_budget(args.updates, args.minutes, args.train_minutes)
        check_shared(args.resume or args.run_dir, args.address, "--resume" if args.resume else "--run-dir")
        # --json: stdout holds the final record only (lifecycle/json_stdout.py).
        with stdout_to_stderr(args.json):
            ray_before = ray.is_initialized()
            run_dir, last = train(config, run_dir=args.run_dir, resume=args.resume, updates=args.updates,
                                  minutes=args.minutes, train_minutes=args.train_minutes, address=args.address,
                                  wandb_mode=args.wandb)
            if args.json and not ray_before:
                ray.shutdown()
    except (ConfigError, storage.StorageError, WaitExpired) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({k: last[k] for k in sorted(last)}))
    else:
        print(end_of_run(config, run_dir, read_metrics(run_dir), last))
    return 0
