"""AVI self-play in one file: Algorithm 1 of the AVI paper, one process, no Ray.

The same pieces as the distributed run (``python -m launch --algo avi``), wired by hand:

    games          the batched engine: expand a position into all its children at once
    AviCollector   epsilon-greedy one-step lookahead; each position s played becomes the
                   row (s, max_a r(s, a) - gamma V(f(s, a))), V the frozen network
    RingBuffer     the replay buffer of those rows, sampled uniformly
    Learner        Adam on the squared error (V_theta(s) - y)^2 (eq. 5)
    ValueFunction  the actors' read-only copy of the network, refreshed every iteration

One iteration: collect ``collect_steps`` steps of ``num_envs`` games with frozen
weights, add the rows to the replay, take ``epochs * rows / batch`` Adam steps on
sampled batches, hand the new weights to the collector. Tic-tac-toe is small enough to
solve exactly: every few iterations the value MAE and the greedy policy's optimal-move
rate over its 4,520 non-terminal positions are printed (``evaluation.exact``).

    python examples/avi_minimal.py --game tictactoe --until-exact   # 8,320 updates (seed 0)
    python examples/avi_minimal.py --game connect4 --updates 50000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, installed or not

import numpy as np
import torch

import games
from actors.avi import AviCollector
from evaluation.exact import exact_labels, value_metrics
from launch.config import changed, preset_config
from learner.learner import Learner
from inference.network import ValueFunction
from replay.buffer import RingBuffer
from replay.rows import avi_schema

# "Learned exactly" (tests/launch/test_train.py): value MAE and optimal greedy moves.
EXACT_MAE, EXACT_MOVES = 0.05, 0.99


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--game", choices=["tictactoe", "connect4"], default="tictactoe")
    p.add_argument("--updates", type=int, default=20_000, help="stop after this many Adam steps")
    p.add_argument("--until-exact", action="store_true",
                   help=f"tic-tac-toe: stop once value MAE < {EXACT_MAE} and optimal moves >= {EXACT_MOVES}")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the networks are small)")
    # Unset hyperparameters come from the game's preset (launch/config.py: Table 3 of
    # the paper for Connect Four, a scaled-down Table 3 for tic-tac-toe).
    flags = {"num-envs": ("actors.num_envs", int), "collect-steps": ("actors.collect_steps", int),
             "epsilon": ("actors.epsilon", float), "gamma": ("gamma", float), "lr": ("learner.lr", float),
             "batch-size": ("learner.batch_size", int), "epochs-per-iteration": ("learner.epochs_per_iteration", float),
             "replay-capacity": ("replay.capacity", int), "eval-every": ("evaluation.every", int)}
    for flag, (key, kind) in flags.items():
        p.add_argument(f"--{flag}", dest=key, type=kind, default=None, help=f"{key}; default: the game's preset")
    args = p.parse_args(argv)
    chosen = {key: getattr(args, key) for key, _ in flags.values() if getattr(args, key) is not None}
    return args, changed(preset_config(args.game), **chosen)


def main(argv=None) -> dict:
    args, cfg = parse_args(argv)
    torch.set_num_threads(args.threads)
    game = games.make(cfg.game)

    # The learner owns the trained network (seeded initial weights); the collector only
    # ever reads a frozen copy of it, as the actors of the distributed run do.
    learner = Learner(game, cfg.network, lr=cfg.learner.lr, seed=cfg.seed)
    value_fn = ValueFunction(game, cfg.network)
    version = 0  # of the weights the collector plays with: every row records it
    value_fn.set_weights(learner.get_weights(), version)
    collector = AviCollector(game, cfg.actors.num_envs, epsilon=cfg.actors.epsilon, gamma=cfg.gamma, seed=cfg.seed)
    replay = RingBuffer(avi_schema(game.obs_shape), cfg.replay.capacity, seed=cfg.seed)
    # Exhaustive negamax over every position (tic-tac-toe); None where an oracle is needed.
    labels = exact_labels(game, cfg.gamma)

    # Replay ratio: each row collected is trained on `epochs_per_iteration` times on average.
    updates_per_iteration = cfg.updates_per_iteration
    print(f"AVI on {game.name}: {cfg.actors.num_envs} games x {cfg.actors.collect_steps} steps per iteration, "
          f"{updates_per_iteration} updates of {cfg.learner.batch_size} rows, epsilon {cfg.actors.epsilon}, lr {cfg.learner.lr}")
    start, iteration, losses, metrics = time.time(), 0, [], {}
    while learner.updates < args.updates:
        # Self-play (Algorithm 1, lines 5-11) with the frozen weights of `version`.
        rows = collector.collect(value_fn, cfg.actors.collect_steps)
        rows["version"] = np.full(len(rows["target"]), version, np.int64)
        replay.add(rows)

        # Minibatch regression of V_theta onto the one-step targets (eq. 5).
        for _ in range(min(updates_per_iteration, args.updates - learner.updates)):
            losses.append(learner.train_step(replay.sample(cfg.learner.batch_size))["loss"])

        # The next iteration plays with the new weights.
        version += 1
        value_fn.set_weights(learner.get_weights(), version)
        iteration += 1

        if iteration % cfg.evaluation.every and learner.updates < args.updates:
            continue
        metrics = {"iteration": iteration, "updates": learner.updates, "rows": replay.total_added,
                   "games": collector.games_finished, "loss": float(np.mean(losses)),
                   "seconds": time.time() - start}
        losses = []
        line = f"iter {iteration:4d}  updates {learner.updates:6d}  loss {metrics['loss']:.4f}"
        if labels is not None:
            # Value MAE (eq. 6) and how often the one-step greedy move is optimal.
            metrics.update(value_metrics(game, labels, value_fn, cfg.gamma))
            line += f"  value MAE {metrics['value_mae']:.4f}  optimal moves {metrics['optimal_move_rate']:.4f}"
        print(f"{line}  ({metrics['seconds']:.0f} s)", flush=True)
        if (args.until_exact and labels is not None and metrics["value_mae"] < EXACT_MAE
                and metrics["optimal_move_rate"] >= EXACT_MOVES):
            break
    return metrics


if __name__ == "__main__":
    main()
