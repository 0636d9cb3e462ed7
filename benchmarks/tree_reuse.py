"""Tree reuse between moves (``search.reuse``) on Connect Four: what it saves and what it
is worth, for the PUCT search and Gumbel AlphaZero's.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m benchmarks.tree_reuse \
        [--simulations 32] [--openings 16] [--repeats 3] [--rollouts 1 | --checkpoint CKPT] [--json]

For each search, ``--repeats`` matches (another seed each: openings and rollouts): the
search with tree reuse against the same search without, at the same ``--simulations``
new simulations a move, from ``--openings`` random 2-ply openings played twice with the
sides exchanged (``evaluation.play.head_to_head``), all games in lockstep. The leaf
evaluator is ``RolloutEvaluator`` (uniform prior, the value of ``--rollouts`` random
playouts): classic MCTS, whose strength grows with its simulations without a trained
network; ``--checkpoint`` takes a trained network's prior and value instead (both sides
the same network, so the matches differ by the reuse alone). Reports, each the median
over the repeats:
- ``reused_fraction``: roots that started from a kept subtree;
- ``kept_visits``: the visits those roots brought (the simulations not spent again),
  the median over the reused roots, and ``kept_per_move`` their mean over every search
  as a fraction of ``--simulations`` (the extra search a move gets for free);
- ``ms_per_move`` with and without reuse (the time of the policy's calls over the moves
  it made), ``tree_ms_per_move`` the part outside the evaluator (the tree's own work, the
  reuse's lookups and copies included) and ``evaluated_per_move`` the states evaluated
  (a reused root is not evaluated again). With rollouts the evaluator's time varies with
  the playouts' lengths, so the tree's share is the cost of reuse itself;
- ``score``: the reuse side's mean score in [-1, 1] (its mean and the half-width of a 95%
  Student-t interval over the repeats as well).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import games  # noqa: E402
from evaluation.metrics import mean_ci  # noqa: E402
from evaluation.play import head_to_head  # noqa: E402
from games.testing import random_move_lists  # noqa: E402
from search import MCTS, MCTSConfig, RolloutEvaluator  # noqa: E402
from search.gumbel import GumbelConfig, GumbelMCTS  # noqa: E402
from search.reuse import TreeReuse  # noqa: E402


class CountingReuse(TreeReuse):
    """TreeReuse that records the visits each reused root brought."""

    def __init__(self):
        super().__init__()
        self.kept: list[int] = []

    def find(self, state):
        found = super().find(state)
        self.kept += [int(f.tree.visits[f.b, f.nodes[0]]) for f in found if f is not None]
        return found


def timed_policy(search, evaluate, seed: int, reuse: TreeReuse | None):
    """``choose(states)`` playing ``search``'s move, adding to ``clock`` its time, the
    evaluator's time and states, and the moves."""
    rng = np.random.default_rng(seed)
    clock = {"seconds": 0.0, "evaluator_seconds": 0.0, "evaluated": 0, "moves": 0}

    def timed(states):
        start = time.perf_counter()
        out = evaluate(states)
        clock["evaluator_seconds"] += time.perf_counter() - start
        clock["evaluated"] += len(out[1])
        return out

    def choose(states):
        start = time.perf_counter()
        action = search.search(states, timed, rng, reuse=reuse).action
        clock["seconds"] += time.perf_counter() - start
        clock["moves"] += len(action)
        return np.asarray(action, np.int64)

    return choose, clock


def make_search(name: str, game, simulations: int):
    if name == "mcts":  # evaluation's settings: no root noise, the most visited move
        return MCTS(game, MCTSConfig(simulations=simulations, noise_fraction=0.0, temperature=0.0))
    return GumbelMCTS(game, MCTSConfig(simulations=simulations), GumbelConfig(gumbel_scale=0.0))


def evaluators(game, rollouts: int, seed: int, checkpoint):
    """The two sides' leaf evaluators: random playouts (seeded apart), or both the
    network of ``checkpoint`` (a ``python -m launch`` checkpoint with a policy head)."""
    if checkpoint is None:
        return RolloutEvaluator(game, rollouts, seed=seed), RolloutEvaluator(game, rollouts, seed=seed + 10_000)
    from evaluation.checkpoints import read_checkpoint
    from evaluation.network import NetworkModel
    from inference.networks import NetworkConfig

    g, net_config, weights, _ = read_checkpoint(checkpoint, game.name)
    model = NetworkModel(g, NetworkConfig(**net_config) if isinstance(net_config, dict) else net_config, weights)
    return model.evaluate, model.evaluate


def one_match(name: str, game, simulations: int, openings: int, rollouts: int, seed: int, checkpoint=None) -> dict:
    """The reuse side against the fresh side from ``openings`` random openings, both sides."""
    rng = np.random.default_rng(seed)
    eval_on, eval_off = evaluators(game, rollouts, seed, checkpoint)
    starts = game.from_moves(random_move_lists(game, openings, rng, max_plies=2, min_plies=2))
    reuse = CountingReuse()
    with_reuse, clock_on = timed_policy(make_search(name, game, simulations), eval_on, seed, reuse)
    without, clock_off = timed_policy(make_search(name, game, simulations), eval_off, seed, None)
    warm = TreeReuse()  # compile (or load) every kernel first, a reused root's included
    search = make_search(name, game, simulations)
    played, _, _ = game.step(starts, search.search(starts, RolloutEvaluator(game, 1), rng, reuse=warm).action)
    search.search(played, RolloutEvaluator(game, 1), rng, reuse=warm)
    result = head_to_head(game, with_reuse, without, starts)
    return {"score": result["score"], "games": result["games"],
            "reused_fraction": reuse.reused / max(reuse.searches, 1),
            "kept_visits": float(np.median(reuse.kept)) if reuse.kept else 0.0,
            "kept_per_move": sum(reuse.kept) / max(reuse.searches, 1) / simulations,
            **{f"{key}_{side}": value for side, clock in (("reuse", clock_on), ("fresh", clock_off))
               for key, value in per_move(clock).items()}}


def per_move(clock: dict) -> dict:
    """A side's costs per move: milliseconds in all and outside the evaluator (the tree's
    own work, reuse's copies included), and the states evaluated."""
    moves = max(clock["moves"], 1)
    return {"ms_per_move": 1e3 * clock["seconds"] / moves,
            "tree_ms_per_move": 1e3 * (clock["seconds"] - clock["evaluator_seconds"]) / moves,
            "evaluated_per_move": clock["evaluated"] / moves}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simulations", type=int, default=32)
    p.add_argument("--openings", type=int, default=16, help="random 2-ply openings, each played from both sides")
    p.add_argument("--repeats", type=int, default=3, help="matches per search, another seed each")
    p.add_argument("--rollouts", type=int, default=1, help="random playouts per leaf")
    p.add_argument("--searches", nargs="+", default=["mcts", "gumbel"], choices=["mcts", "gumbel"])
    p.add_argument("--checkpoint", help="a Connect Four checkpoint with a policy head: its network as the "
                                        "evaluator of both sides instead of rollouts")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    game = games.make("connect4")
    out = {"simulations": args.simulations, "openings": args.openings, "repeats": args.repeats,
           "evaluator": args.checkpoint or f"{args.rollouts} rollouts"}
    for name in args.searches:
        # A first match, not counted: torch's and numba's first calls in the process.
        one_match(name, game, args.simulations, 2, args.rollouts, 999, args.checkpoint)
        runs = [one_match(name, game, args.simulations, args.openings, args.rollouts, seed, args.checkpoint)
                for seed in range(args.repeats)]
        row = {key: statistics.median(r[key] for r in runs) for key in runs[0] if key != "games"}
        mean, half = mean_ci([r["score"] for r in runs])
        row.update(score_mean=mean, score_ci95=half, games=sum(r["games"] for r in runs),
                   speed_ratio=row["ms_per_move_fresh"] / row["ms_per_move_reuse"])
        out[name] = row
        if not args.json:
            print(f"{name}: S={args.simulations}, {row['games']} games: reused roots {row['reused_fraction']:.0%}, "
                  f"kept visits (median of reused) {row['kept_visits']:.0f}, per move {row['kept_per_move']:.0%} of S; "
                  f"ms/move {row['ms_per_move_reuse']:.1f} with reuse, {row['ms_per_move_fresh']:.1f} without "
                  f"(outside the evaluator {row['tree_ms_per_move_reuse']:.2f} and {row['tree_ms_per_move_fresh']:.2f}); "
                  f"states evaluated/move {row['evaluated_per_move_reuse']:.1f} and {row['evaluated_per_move_fresh']:.1f}; "
                  f"score of reuse {row['score']:+.3f} (mean {mean:+.3f} +- {half:.3f})", flush=True)
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
