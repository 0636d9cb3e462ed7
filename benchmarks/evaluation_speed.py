"""Speed of exact evaluation with the Connect Four preset network (random weights).

    python -m benchmarks.evaluation_speed [--threads 2] [--repeats 3] [--openings 4]
                                          [--store PATH|none] [--json]

1. States: value MAE and greedy-policy regret on both committed Connect Four sets
   (2 x 1500 states) through ``evaluation.runner.SuiteRunner`` -- the one-step greedy
   policy evaluates every live child (about 6 per state, 2 images each with the
   symmetrized preset). Loading the sets is timed apart; the evaluation is the median
   of ``--repeats`` runs. The acceptance target is under a minute on 2 cores.
2. Play against the oracle: the greedy agent plays ``--openings`` of the 568
   four-ply openings from both sides against the solver (every agent position and
   every oracle move solved, children included). Early positions take the solver
   seconds each, so the full suite (1136 games) is extrapolated from the measured time
   per game unless ``--openings all``; ``--store none`` (default) measures it cold, a
   store path reuses what earlier runs solved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

import games
from evaluation.datasets import load_dataset
from evaluation.network import NetworkModel
from evaluation.oracles import Connect4Oracle
from evaluation.play import play_vs_oracle
from evaluation.policies import greedy_policy
from evaluation.runner import SuiteRunner
from learner.learner import Learner
from inference.networks import PRESET_NETWORKS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--openings", default="4", help="how many openings to play, or 'all'")
    parser.add_argument("--store", default="none", help="solved-position store for the oracle, or 'none'")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    game = games.make("connect4")
    config = PRESET_NETWORKS["connect4"]
    weights = Learner(game, config, device="cpu", seed=0).get_weights()
    out = {"threads": args.threads}

    start = time.perf_counter()
    ev = SuiteRunner(game, config, suites=["connect4-uniform", "connect4-eps-optimal"])
    out["states_load_s"] = time.perf_counter() - start
    times, metrics = [], {}
    for _ in range(args.repeats):
        start = time.perf_counter()
        metrics = ev.evaluate(weights)
        times.append(time.perf_counter() - start)
    out["states_eval_s_median"] = statistics.median(times)
    out["states"] = metrics["eval/connect4-uniform/states"] + metrics["eval/connect4-eps-optimal/states"]
    out["states_network_evals"] = (metrics["eval/connect4-uniform/inference_evals"]
                                   + metrics["eval/connect4-eps-optimal/inference_evals"])

    openings = load_dataset("connect4-openings").states
    n = len(openings.moves) if args.openings == "all" else min(int(args.openings), len(openings.moves))
    oracle = Connect4Oracle(game, store=None if args.store == "none" else args.store)
    model = NetworkModel(game, config, weights)
    start = time.perf_counter()
    play = play_vs_oracle(game, greedy_policy(game, model.value_obs), oracle, games.take(openings, np.arange(n)))
    seconds = time.perf_counter() - start
    out.update({"play_openings": n, "play_games": play["games"], "play_s": seconds,
                "play_s_per_game": seconds / play["games"], "play_solver_positions": oracle.solves,
                "play_full_suite_s_estimate": seconds / play["games"] * 2 * len(openings.moves),
                "play_error_rate": play["error_rate"], "play_blunder_rate": play["blunder_rate"]})
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:32s} {v:.4g}" if isinstance(v, float) else f"{k:32s} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
