"""Speed of AVI self-play actors and of the learner, on Ray, with a game's preset network;
and how many network evaluations the evaluation cache saves (``search.cache``).

    python -m benchmarks.avi_speed [--game connect4] [--steps 16] [--repeats 3] [--updates 64]
    python -m benchmarks.avi_speed --server [--game connect4] [--actors 1 2]
    python -m benchmarks.avi_speed --hit-rates [--games connect4 tictactoe ...] [--phases 3]

Reports, as medians of ``--repeats`` collection calls after one warm-up call:
- rows/s of the pool with 1 and with 2 self-play actors (the preset's N_envs split
  between them), and rows/s per actor, without the evaluation cache (``eval_cache="off"``)
  and with it (``"cache"``, the actors' default) side by side: the two pools' calls take
  turns, the first of each pair alternating, and every timed call gets a new weight
  version, so the cache starts empty as at the start of a training iteration; the
  speed-up is the median of the per-repeat ratios, the hit rate the fraction of the
  children not sent to the network;
- where an actor's step time goes: game engine (expand, encode, stepping, resets),
  network forward, other (targets and epsilon-greedy choice), transport (rows to
  the replay shard);
- the learner's updates/s at the preset batch size and the fraction of its time spent
  waiting for replay batches.

``--server``: the same side-by-side pools, each actor with its own network and cache
(``"cache"``) against actors sharing one batched inference server
(``actors/inference_server.py``, ``"server"``, a zero-CPU actor: on this machine its
batches take the CPUs the waiting actors leave), and the server's rows per batch.

``--hit-rates``: per game, without Ray, one process on one thread, with the preset
network (fresh weights; ``--set`` changes it, e.g. ``network.channels=16`` for a quick
look at the conv games), ``--num-envs`` environments (128) at the preset's epsilon:
after ``--warmup`` steps (the game's length, so that the environments are spread over
their games), ``--phases`` collection phases of ``--phase-steps`` steps (the preset's
``collect_steps``) each with a new weight version. Every phase is played twice from the
same environments and generator state, without and with the cache (which goes first
alternates), and timed; reports
the hit rate (within a step and from earlier steps of the phase) and the rows/s ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace

import ray
import torch

import algorithms
import games
from actors.avi import AviCollector
from actors.inference_server import InferenceActor
from actors.pool import SelfPlayActor
from launch.config import resolve
from learner.actor import LearnerActor
from inference.network import ValueFunction
from inference.tensors import numpy_weights
from inference.networks import build_network
from learner.weights import WeightVersion
from lifecycle.ray_start import start_ray
from replay.rows import avi_schema
from replay.service import ReplayService
from search.cache import CachedValueFn

CACHE_MODES = ("off", "cache")  # measured side by side
SERVER_MODES = ("cache", "server")  # with --server


def actor_options(config, num_actors: int, eval_cache: str = "auto") -> dict:
    """The self-play actors' arguments for ``config``, as the launcher gives them, with
    ``num_actors`` actors sharing its environments and the evaluation cache ``eval_cache``;
    the caller adds ``replay``, ``index`` and any ``inference_server``."""
    actors = replace(config.actors, num_actors=num_actors, threads=1, eval_cache=eval_cache)
    return dict(game_network=config.game_network, config=actors, algo=algorithms.descriptor(config.algo),
                gamma=config.gamma, seed=0)


def learner_options(config) -> dict:
    """The learner actor's arguments for ``config`` on the CPU."""
    return dict(game_network=config.game_network, config=replace(config.learner, device="cpu"),
                algo=algorithms.descriptor(config.algo),
                seed=0)


def pool_speed(config, num_actors: int, steps: int, repeats: int, name: str, modes=CACHE_MODES) -> dict:
    """Pools of ``num_actors`` actors in each of ``modes`` (an ``eval_cache``, or
    ``"server"``: one shared inference server), their calls taking turns; the pools exist at
    once (as zero-CPU actors) and only one runs at a time."""
    game = config.game_network.make_game()
    replay = ReplayService.create(avi_schema(game.obs_shape), config.replay.capacity, config.replay.shards,
                                  name=f"{name}-replay")
    learner = LearnerActor.options(num_cpus=0).remote(**learner_options(config), replay=replay)
    ref = learner.get_weights.remote()
    server = (InferenceActor.options(num_cpus=0).remote(game_network=config.game_network,
                                                         algo=algorithms.descriptor(config.algo))
              if "server" in modes else None)
    pools = {mode: [SelfPlayActor.options(num_cpus=0).remote(
        **actor_options(config, num_actors, "cache" if mode == "server" else mode), replay=replay, index=i,
        inference_server=server if mode == "server" else None) for i in range(num_actors)] for mode in modes}
    for actors in pools.values():  # warm up: compile, load weights
        ray.get([a.collect.remote([WeightVersion(0, ref)], 1) for a in actors])
    rates, shares, hits = {m: [] for m in modes}, {m: [] for m in modes}, []
    version = 0
    for repeat in range(repeats):
        for mode in modes[::1 if repeat % 2 == 0 else -1]:  # who goes first alternates
            actors = pools[mode]
            version += 1  # a new phase: the cache starts empty
            start = time.perf_counter()
            stats = ray.get([a.collect.remote([WeightVersion(version, ref)], steps) for a in actors])
            rates[mode].append(sum(s.rows for s in stats) / (time.perf_counter() - start))
            timing = {k: sum(s.timings[k] for s in stats) for k in stats[0].timings}
            total = sum(timing.values())
            shares[mode].append({k: v / total for k, v in timing.items()})
            if mode == modes[-1]:
                lookups = sum(s.cache_lookups for s in stats)
                hits.append(1.0 - sum(s.cache_evaluated for s in stats) / max(lookups, 1))
    result = {"actors": num_actors, "steps": steps}
    for mode in modes:
        rate = statistics.median(rates[mode])
        result[mode] = {"rows_per_s": rate, "rows_per_s_per_actor": rate / num_actors,
                        "time_share": {k: statistics.median(s[k] for s in shares[mode]) for k in shares[mode][0]}}
    result["speedup"] = statistics.median(c / o for o, c in zip(rates[modes[0]], rates[modes[1]]))
    result["hit_rate"] = statistics.median(hits)
    if server is not None:
        result["server_stats"] = ray.get(server.stats.remote())
        ray.kill(server)
    for actors in pools.values():
        for a in actors:
            ray.kill(a)
    ray.kill(learner)
    replay.close()
    return result


class Timed:
    """``fn`` with the seconds spent in its calls added up; its ``version`` is ``fn``'s."""

    def __init__(self, fn):
        self.fn, self.seconds = fn, 0.0

    @property
    def version(self):
        return getattr(self.fn, "version", None)

    def __call__(self, obs):
        start = time.perf_counter()
        out = self.fn(obs)
        self.seconds += time.perf_counter() - start
        return out


def fresh_value_function(name: str, overrides: list[str] = ()):
    """The paper preset of game ``name`` with ``overrides``, its engine, a value function with
    the preset network's initial weights (seed 0) and those weights, which a benchmark sets
    again under a new version to empty an evaluation cache."""
    config = resolve(name, "paper", overrides)
    game = games.make(name, **config.game_params)
    torch.manual_seed(0)
    vf = ValueFunction(game, config.network)
    weights = numpy_weights(build_network(game, config.network))
    vf.set_weights(weights, 0)
    return config, game, vf, weights


def hit_rates(name: str, num_envs: int, warmup: int | None, phases: int, phase_steps: int | None,
              overrides: list[str] = ()) -> dict:
    """The evaluation cache on one game's AVI collection, without Ray (see the module docstring)."""
    config, game, vf, weights = fresh_value_function(name, overrides)
    network = Timed(vf)  # the network's own time, inside the cache
    cached = Timed(CachedValueFn(network))  # and the cache's time around it
    collector = AviCollector(game, num_envs, epsilon=config.actors.epsilon, gamma=config.gamma, seed=0)
    collector.collect(cached, game.max_length if warmup is None else warmup)
    steps = phase_steps or config.actors.collect_steps
    seconds, rates = {m: [] for m in CACHE_MODES}, {"batch": [], "cache": [], "total": []}
    table = cached.fn.cache
    network.seconds = cached.seconds = 0.0
    phases_before = table.stats()
    for phase in range(phases):
        saved, before = collector.get_state(), table.stats()
        for mode in CACHE_MODES[::1 if phase % 2 == 0 else -1]:  # who goes first alternates
            vf.set_weights(weights, phase + 1)  # a new version: the cache is emptied
            collector.set_state(saved)  # both modes play the phase from the same start
            start = time.perf_counter()
            collector.collect(vf if mode == "off" else cached, steps)
            seconds[mode].append(time.perf_counter() - start)
        after = table.stats()
        asked = after["lookups"] - before["lookups"]
        rates["batch"].append((after["hits_batch"] - before["hits_batch"]) / asked)
        rates["cache"].append((after["hits_cache"] - before["hits_cache"]) / asked)
        rates["total"].append(1.0 - (after["evaluated"] - before["evaluated"]) / asked)
    rows, lookups = num_envs * steps, table.lookups - phases_before["lookups"]
    evaluated = table.evaluated - phases_before["evaluated"]
    return {"game": name, "epsilon": config.actors.epsilon, "num_envs": num_envs, "phase_steps": steps,
            "hit_rate": statistics.median(rates["total"]), "hit_rate_batch": statistics.median(rates["batch"]),
            "hit_rate_steps": statistics.median(rates["cache"]),
            "rows_per_s_off": rows / statistics.median(seconds["off"]),
            "rows_per_s_cache": rows / statistics.median(seconds["cache"]),
            "speedup": statistics.median(o / c for o, c in zip(seconds["off"], seconds["cache"])),
            # The cache's own cost (keys, table) per row asked, beside the network's per row run.
            "cache_us_per_row": 1e6 * (cached.seconds - network.seconds) / lookups,
            "network_us_per_row": 1e6 * network.seconds / max(evaluated, 1)}


def learner_speed(config, updates: int, repeats: int, name: str) -> dict:
    game = config.game_network.make_game()
    replay = ReplayService.create(avi_schema(game.obs_shape), config.replay.capacity, config.replay.shards,
                                  name=f"{name}-replay")
    actor = SelfPlayActor.remote(**dict(actor_options(config, 1), replay=replay), index=0)
    learner = LearnerActor.remote(**learner_options(config), replay=replay)
    weights = WeightVersion(0, learner.get_weights.remote())
    ray.get(actor.collect.remote([weights], 8))  # rows to sample from
    ray.kill(actor)  # the learner alone: its updates/s without a competing actor
    ray.get(learner.train.remote(4, 0))
    rates, waits = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = ray.get(learner.train.remote(updates, 0))
        rates.append(updates / (time.perf_counter() - start))
        waits.append(out.wait_fraction)
    ray.kill(learner)
    replay.close()
    return {"updates_per_s": statistics.median(rates), "wait_fraction": statistics.median(waits),
            "batch_size": config.learner.batch_size}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="connect4")
    p.add_argument("--preset", default="paper")
    p.add_argument("--steps", type=int, default=16, help="collection steps per timed call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--updates", type=int, default=64, help="learner updates per timed call")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--hit-rates", action="store_true", help="the evaluation cache per game, without Ray")
    p.add_argument("--server", action="store_true", help="own network and cache against a shared inference server")
    p.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="pool sizes")
    p.add_argument("--games", nargs="+", default=["connect4", "tictactoe", "hex"])
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--warmup", type=int, default=None, help="steps before the phases (the game's max length)")
    p.add_argument("--phases", type=int, default=3)
    p.add_argument("--phase-steps", type=int, default=None, help="steps per phase (the preset's collect_steps)")
    args = p.parse_args(argv)
    if args.hit_rates:
        torch.set_num_threads(1)
        print("| game | epsilon | envs | steps per phase | hit rate | within a step | from earlier steps "
              "| rows/s off | rows/s cache | speed-up | cache µs/row asked | network µs/row run |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name in args.games:
            r = hit_rates(name, args.num_envs, args.warmup, args.phases, args.phase_steps, args.overrides)
            print(f"| {name} | {r['epsilon']} | {r['num_envs']} | {r['phase_steps']} | {r['hit_rate']:.1%} "
                  f"| {r['hit_rate_batch']:.1%} | {r['hit_rate_steps']:.1%} | {r['rows_per_s_off']:,.0f} "
                  f"| {r['rows_per_s_cache']:,.0f} | x{r['speedup']:.2f} | {r['cache_us_per_row']:.2f} "
                  f"| {r['network_us_per_row']:.1f} |", flush=True)
        return
    config = resolve(args.game, args.preset, args.overrides)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray-bench-"))
    started = start_ray(num_cpus=2, log_to_driver=False)
    try:
        modes = SERVER_MODES if args.server else CACHE_MODES
        report = {"game": args.game, "preset": args.preset, "num_envs": config.actors.num_envs,
                  "pools": [pool_speed(config, n, args.steps, args.repeats, f"bench{n}", modes) for n in args.actors],
                  "learner": None if args.server else learner_speed(config, args.updates, args.repeats, "benchl")}
    finally:
        if started:
            ray.shutdown()
    print(json.dumps(report, indent=1))
    for pool in report["pools"]:
        for mode in modes:
            r = pool[mode]
            share = ", ".join(f"{k} {v:.0%}" for k, v in r["time_share"].items())
            print(f"{pool['actors']} actor(s), {mode if mode == 'server' else 'eval_cache=' + mode}: "
                  f"{r['rows_per_s']:,.0f} rows/s ({r['rows_per_s_per_actor']:,.0f} per actor); actor step time: {share}")
        print(f"{pool['actors']} actor(s): {modes[1]} x{pool['speedup']:.2f} rows/s against {modes[0]}, "
              f"hit rate {pool['hit_rate']:.1%} over calls of {pool['steps']} steps")
        if "server_stats" in pool:
            print(f"  server: {pool['server_stats']['mean_rows_per_batch']:,.0f} rows per batch, "
                  f"at most {pool['server_stats']['max_requests_per_batch']} requests in one")
    lr = report["learner"]
    if lr is None:
        return
    print(f"learner: {lr['updates_per_s']:.1f} updates/s at batch {lr['batch_size']}, "
          f"waiting on replay {lr['wait_fraction']:.1%} of its time")


if __name__ == "__main__":
    main()
