"""Speed of AVI self-play actors and of the learner, on Ray, with a game's preset network.

    python -m benchmarks.avi_speed [--game connect4] [--steps 16] [--repeats 3] [--updates 64]

Reports, as medians of ``--repeats`` collection calls after one warm-up call:
- rows/s of the pool with 1 and with 2 self-play actors (the preset's N_envs split
  between them), and rows/s per actor;
- where an actor's step time goes: game engine (expand, encode, stepping, resets),
  network forward, other (targets and epsilon-greedy choice), transport (rows to
  the replay shard);
- the learner's updates/s at the preset batch size and the fraction of its time spent
  waiting for replay batches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import ray

from actors.pool import SelfPlayActor
from launch.config import resolve
from learner.actor import LearnerActor
from learner.weights import WeightVersion
from replay.rows import avi_schema
from replay.service import ReplayService

import games


def pool_speed(config, num_actors: int, steps: int, repeats: int, name: str) -> dict:
    game = games.make(config.game, **config.game_params)
    replay = ReplayService.create(avi_schema(game.obs_shape), config.replay_capacity, config.replay_shards,
                                  name=f"{name}-replay")
    learner = LearnerActor.options(num_cpus=0).remote(
        game=config.game, game_params=config.game_params, network=config.network, lr=config.lr,
        batch_size=config.batch_size, replay=replay, prefetch=config.prefetch, seed=0, device="cpu",
        augment=config.augment_symmetries)
    weights = WeightVersion(0, learner.get_weights.remote())
    actors = [SelfPlayActor.remote(game=config.game, game_params=config.game_params, network=config.network,
                                   num_envs=config.num_envs // num_actors, epsilon=config.epsilon,
                                   gamma=config.gamma, seed=0, index=i, replay=replay, threads=1)
              for i in range(num_actors)]
    ray.get([a.collect.remote([weights], 1) for a in actors])  # warm up: compile, load weights
    rates, shares = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        stats = ray.get([a.collect.remote([weights], steps) for a in actors])
        rates.append(sum(s.rows for s in stats) / (time.perf_counter() - start))
        timing = {k: sum(s.timings[k] for s in stats) for k in stats[0].timings}
        total = sum(timing.values())
        shares.append({k: v / total for k, v in timing.items()})
    result = {"actors": num_actors, "rows_per_s": statistics.median(rates),
              "rows_per_s_per_actor": statistics.median(rates) / num_actors,
              "time_share": {k: statistics.median(s[k] for s in shares) for k in shares[0]}}
    for a in actors:
        ray.kill(a)
    ray.kill(learner)
    replay.close()
    return result


def learner_speed(config, updates: int, repeats: int, name: str) -> dict:
    game = games.make(config.game, **config.game_params)
    replay = ReplayService.create(avi_schema(game.obs_shape), config.replay_capacity, config.replay_shards,
                                  name=f"{name}-replay")
    actor = SelfPlayActor.remote(game=config.game, game_params=config.game_params, network=config.network,
                                 num_envs=config.num_envs, epsilon=config.epsilon, gamma=config.gamma, seed=0,
                                 index=0, replay=replay, threads=1)
    learner = LearnerActor.remote(
        game=config.game, game_params=config.game_params, network=config.network, lr=config.lr,
        batch_size=config.batch_size, replay=replay, prefetch=config.prefetch, seed=0, device="cpu",
        augment=config.augment_symmetries)
    weights = WeightVersion(0, learner.get_weights.remote())
    ray.get(actor.collect.remote([weights], 8))  # rows to sample from
    ray.kill(actor)  # the learner alone: its updates/s without a competing actor
    ray.get(learner.train.remote(4, 0))
    rates, waits = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = ray.get(learner.train.remote(updates, 0))
        rates.append(updates / (time.perf_counter() - start))
        waits.append(out["learner_wait_fraction"])
    ray.kill(learner)
    replay.close()
    return {"updates_per_s": statistics.median(rates), "wait_fraction": statistics.median(waits),
            "batch_size": config.batch_size}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="connect4")
    p.add_argument("--preset", default="paper")
    p.add_argument("--steps", type=int, default=16, help="collection steps per timed call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--updates", type=int, default=64, help="learner updates per timed call")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    config = resolve(args.game, args.preset, args.overrides)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-bench-"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        report = {"game": args.game, "preset": args.preset, "num_envs": config.num_envs,
                  "pools": [pool_speed(config, n, args.steps, args.repeats, f"bench{n}") for n in (1, 2)],
                  "learner": learner_speed(config, args.updates, args.repeats, "benchl")}
    finally:
        ray.shutdown()
    print(json.dumps(report, indent=1))
    for pool in report["pools"]:
        share = ", ".join(f"{k} {v:.0%}" for k, v in pool["time_share"].items())
        print(f"{pool['actors']} actor(s): {pool['rows_per_s']:,.0f} rows/s "
              f"({pool['rows_per_s_per_actor']:,.0f} per actor); actor step time: {share}")
    lr = report["learner"]
    print(f"learner: {lr['updates_per_s']:.1f} updates/s at batch {lr['batch_size']}, "
          f"waiting on replay {lr['wait_fraction']:.1%} of its time")


if __name__ == "__main__":
    main()
