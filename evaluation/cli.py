"""``python -m launch evaluate`` (and ``python -m evaluation evaluate``): the command line
of a checkpoint's evaluation, and the Ray start-up it needs.

:func:`evaluate_main` parses the arguments, starts the oracle service
(:func:`start_oracle_service`, also the Hex dataset builder's) or an embedded Ray for the
engine suites' workers when asked, runs ``evaluation.runner.evaluate_checkpoint`` and
prints the flat metrics (``--json``: one JSON object), with the policy each side played
and its budget by name (``agent``, ``opponent``: ``{"policy": "mcts", "simulations":
32}``); a corrupt or mismatched checkpoint, a missing dataset or a bad option is one
``error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import ray

import games
import storage
from evaluation import policy_registry
from evaluation.checkpoints import CheckpointMismatchError
from evaluation.config import add_arguments as add_evaluation_arguments
from evaluation.config import from_arguments as evaluation_from_arguments
from evaluation.datasets import DatasetError
from evaluation.runner import evaluate_checkpoint
from learner.checkpoint import CorruptCheckpointError
from lifecycle.json_stdout import stdout_to_stderr
from lifecycle.ray_start import start_ray
from oracle_service.connect4_engines import DEFAULT_ENGINE, ENGINES
from oracle_service.service import OracleClient


def start_oracle_service(replicas: int, store: str | None, engine: str = DEFAULT_ENGINE):
    """(an ``OracleClient`` of ``replicas`` replicas, whether Ray was started here): on
    the Ray this process has, else ``RAY_ADDRESS``'s cluster when set, else an embedded
    one without a dashboard; each replica takes no CPU of its own, since this process
    waits while they work. ``store``: "default" or None for the service's default
    store, or a path / ``redis://`` URL."""
    started = start_ray(log_to_driver=False)
    client = OracleClient(replicas, None if store in (None, "default") else store, replica_options={"num_cpus": 0},
                          engine=engine)
    return client, started


def evaluate_main(argv: list[str] | None = None) -> int:
    """``evaluate --checkpoint PATH --game NAME [--suite S ...] [--policy P] [--json]``."""
    parser = argparse.ArgumentParser(prog="python -m launch evaluate",
                                     description="Exact (oracle) and match metrics of a checkpoint.")
    parser.add_argument("--checkpoint", required=True, type=storage.location)
    parser.add_argument("--game", required=True, choices=games.names())
    parser.add_argument("--suite", action="append", help="a suite name (repeatable); default: the game's defaults")
    parser.add_argument("--algo", help="fail unless the checkpoint was trained with this algorithm")
    add_evaluation_arguments(parser)  # --policy, --simulations, --depth, --max-openings, --inference-dtype
    parser.add_argument("--opponent", type=storage.location, help="checkpoint of the head-to-head opponent")
    parser.add_argument("--opponent-policy", default=policy_registry.AUTO, choices=policy_registry.choices(),
                        help="the policy the --opponent plays with, with this command's search settings "
                             "(default auto: its policy head's argmax, or greedy without one)")
    parser.add_argument("--prior", type=storage.location,
                        help="with --policy mcts: the checkpoint whose policy head gives the search's prior, "
                             "while --checkpoint gives the leaf values (cross-inference, AVI paper 4.3)")
    parser.add_argument("--oracle-store", default="default",
                        help="solved-position store of the Connect Four and Hex oracles (path or redis:// URL; 'none')")
    parser.add_argument("--oracle-replicas", type=int, default=0,
                        help="answer Connect Four and Hex oracle queries with an oracle service of N replicas on Ray "
                             "(the cluster of RAY_ADDRESS, else an embedded one), sharing --oracle-store; "
                             "0 (default): a solver in this process")
    parser.add_argument("--oracle-engine", default=DEFAULT_ENGINE, choices=ENGINES,
                        help="the Connect Four oracle's engine: ours (default), or bitbully (the optional "
                             "AGPL-3.0 extra, a reference)")
    parser.add_argument("--engine-level", type=int,
                        help="level of the engine suites' engine (go-gnugo: GNU Go 0..10, default 0; "
                             "othello-grhino: gtp-rhino 1..5, default 1)")
    parser.add_argument("--engine-tables", type=int, help="engine games played at once (default: one per CPU; "
                        "with --engine-workers, per worker, default 1)")
    parser.add_argument("--engine-workers", type=int, default=1,
                        help="split the engine games over N Ray tasks (the cluster at RAY_ADDRESS, else an "
                             "embedded Ray), each with its own engines and copy of the agent (default 1: here)")
    parser.add_argument("--engine-timeout", type=float, default=60.0, help="seconds an engine may take per move")
    parser.add_argument("--sgf-dir", type=Path, help="keep each engine game as SGF, and a JSON line per game, here")
    parser.add_argument("--games-out", type=Path,
                        help="write every game of the play suites here, one JSON record a line "
                             "(python -m launch play --replay FILE --replay-index N shows one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.oracle_replicas < 0:
        parser.error(f"--oracle-replicas must be >= 0, got {args.oracle_replicas}")
    store = None if args.oracle_store == "none" else args.oracle_store
    if args.engine_workers < 1:
        parser.error(f"--engine-workers must be >= 1, got {args.engine_workers}")
    # --json: stdout holds the one JSON object only (lifecycle/json_stdout.py); the Ray
    # started here is shut down inside.
    with stdout_to_stderr(args.json):
        client, started_ray = (start_oracle_service(args.oracle_replicas, store, args.oracle_engine)
                               if args.oracle_replicas else (None, False))
        if args.engine_workers > 1:  # RAY_ADDRESS's cluster, else an embedded Ray
            started_ray = start_ray(log_to_driver=False) or started_ray
        played = [] if args.games_out is not None else None
        sides: dict = {}
        try:
            evaluation = evaluation_from_arguments(args)
            metrics = evaluate_checkpoint(
                args.checkpoint, args.game, args.suite, algo=args.algo, evaluation=evaluation,
                opponent_checkpoint=args.opponent, opponent_policy=args.opponent_policy,
                prior_checkpoint=args.prior, oracle_store=store, oracle_client=client,
                oracle_engine=args.oracle_engine, engine_level=args.engine_level, engine_tables=args.engine_tables,
                engine_timeout=args.engine_timeout, sgf_dir=args.sgf_dir, engine_workers=args.engine_workers,
                games_out=played, sides_out=sides)
            metrics = {**sides, **metrics}  # what played, by name, first: the policy and its budget
            if played is not None:
                args.games_out.write_text("".join(json.dumps(r) + "\n" for r in played))
            if client is not None:
                metrics.update(client.stats_summary())
        except (CorruptCheckpointError, DatasetError, CheckpointMismatchError, ValueError, FileNotFoundError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            if client is not None:
                client.close()
            if started_ray:
                ray.shutdown()
    show(metrics, as_json=args.json)
    return 0


def show(record: dict, *, as_json: bool) -> None:
    """Print an evaluation's record: one JSON object, or a line per key (what played, as JSON)."""
    if as_json:
        print(json.dumps(record, sort_keys=True))
        return
    width = max(map(len, record), default=0)
    for k, v in record.items():
        shown = f"{v:.4g}" if isinstance(v, float) else json.dumps(v) if isinstance(v, dict) else v
        print(f"{k:<{width}}  {shown}")
