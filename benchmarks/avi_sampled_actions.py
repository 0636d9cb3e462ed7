"""AVI collection with every legal child evaluated against k sampled children
(``actors.sample_actions``, actors/avi.py): network evaluations per row and rows/s.

    python -m benchmarks.avi_sampled_actions [--game othello] [--k 0 4] [--phases 3] [--sample-by prior]

Without Ray, one process on one thread, with the game's preset network at fresh weights
(``--set`` changes the config, e.g. ``network.channels=16``) behind the actors' default
evaluation cache (``--eval-cache off`` without it), ``--num-envs`` environments at the
preset's epsilon. After ``--warmup`` steps of the exhaustive collector (the environments
spread over their games), ``--phases`` phases of ``--phase-steps`` steps: in each, every
``--k`` plays the phase from the same environments (the order alternates between phases)
with a new weight version, so the cache starts empty as at the start of an iteration.
Reports per k the network evaluations per row (the compute proxy ``forward_samples``) of
each phase and their median, the median rows/s, and against the first k the medians of
the per-phase ratios of evaluations and of time (the speed-up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from actors.avi import AviCollector
from benchmarks.avi_speed import fresh_value_function
from search.cache import CachedValueFn


def sampled_speed(name: str, ks: list[int], num_envs: int, warmup: int | None, phases: int, phase_steps: int,
                  eval_cache: str, sample_by: str = "uniform", overrides: list[str] = ()) -> dict:
    config, game, vf, weights = fresh_value_function(name, overrides)
    value_fn = vf if eval_cache == "off" else CachedValueFn(vf)
    collectors = {k: AviCollector(game, num_envs, epsilon=config.actors.epsilon, gamma=config.gamma, seed=0,
                                  sample_actions=k, sample_by=sample_by) for k in ks}
    lead = collectors[ks[0]]
    lead.collect(value_fn, game.max_length if warmup is None else warmup)
    seconds, per_row = {k: [] for k in ks}, {k: [] for k in ks}
    rows = num_envs * phase_steps
    for phase in range(phases):
        saved = lead.get_state()
        for i, k in enumerate(ks[::1 if phase % 2 == 0 else -1]):  # who goes first alternates
            vf.set_weights(weights, 1 + phase * len(ks) + i)  # a new version: the cache starts empty
            collectors[k].set_state(saved)  # every k plays the phase from the same start
            before = vf.samples_forward
            start = time.perf_counter()
            collectors[k].collect(value_fn, phase_steps)
            seconds[k].append(time.perf_counter() - start)
            per_row[k].append((vf.samples_forward - before) / rows)
    first = ks[0]
    return {"game": name, "num_envs": num_envs, "phase_steps": phase_steps, "eval_cache": eval_cache,
            "sample_by": sample_by,
            "epsilon": config.actors.epsilon,
            "by_k": {k: {"forward_samples_per_row": statistics.median(per_row[k]),
                         "forward_samples_per_row_by_phase": per_row[k],
                         "rows_per_s": rows / statistics.median(seconds[k]),
                         "forward_ratio": statistics.median(n / f for f, n in zip(per_row[first], per_row[k])),
                         "speedup": statistics.median(f / s for f, s in zip(seconds[first], seconds[k]))}
                     for k in ks}}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="othello")
    p.add_argument("--k", type=int, nargs="+", default=[0, 4], help="sample_actions values (0: every legal move)")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--warmup", type=int, default=None, help="steps before the phases (the game's max length)")
    p.add_argument("--phases", type=int, default=3)
    p.add_argument("--phase-steps", type=int, default=16)
    p.add_argument("--eval-cache", choices=("off", "cache"), default="cache")
    p.add_argument("--sample-by", choices=("uniform", "prior"), default="uniform",
                   help="prior needs --set network.policy_head=true")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(json.dumps(sampled_speed(args.game, args.k, args.num_envs, args.warmup, args.phases, args.phase_steps,
                                   args.eval_cache, args.sample_by, args.overrides), indent=1))


if __name__ == "__main__":
    main()
