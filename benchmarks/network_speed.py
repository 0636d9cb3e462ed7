"""Speed of the preset networks on the CPU, fp32 beside the fast paths: actor inference
and learner updates.

    python -m benchmarks.network_speed [--json] [--games connect4 othello ...]
                                       [--dtypes int8 bf16] [--threads 1] [--seconds 0.5]

For each game's preset network (``inference.networks.PRESET_NETWORKS``, initialised as the
learner initialises it, seed 0), on ``--threads`` torch threads:

- inference throughput of the fp32 network and of each reduced-precision copy
  (``inference.precision.convert``; ``--dtypes``, default those ``auto`` would time here,
  ``inference.precision.candidates``) at batch ``--batch`` (default 4096 for the
  MLPs, 1024 for the conv towers), in network evaluations/s (a symmetrized network
  evaluates 2 images per sample), timed in alternation so that all see the same load;
  each copy's largest value difference from fp32 on the timed batch and its greedy
  moves' agreement with fp32's on the game's guard positions (``inference.precision.check``);
- ``fast``: the copy ``inference_dtype=auto`` keeps (the fastest that holds, within
  ``inference.precision.TOLERANCE`` and ``MIN_AGREEMENT``, and at least ``MIN_SPEEDUP``
  times fp32), else fp32;
- learner updates/s of ``Learner.train_step`` at batch ``--train-batch``, precision fp32
  beside bf16 (autocast), in alternation.

Every rate is the median of ``--repeats`` timed runs of ``--seconds`` each. ``--json``
prints one JSON object keyed by preset name; without it, the table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import numpy as np
import torch

import games
from inference import precision
from learner.learner import Learner
from inference.network import ValueFunction
from inference.networks import PRESET_NETWORKS, count_parameters, forward_cost


def rate(call, per_call: int, seconds: float) -> float:
    """``call()`` repeated for at least ``seconds`` (and once): ``per_call`` units per call, per second."""
    calls, start = 0, time.perf_counter()
    while calls < 1 or time.perf_counter() - start < seconds:
        call()
        calls += 1
    return calls * per_call / (time.perf_counter() - start)


def alternating(calls: dict, per_call: int, seconds: float, repeats: int) -> dict[str, float]:
    """Median rate of each of ``calls`` (name -> call), timed in turn ``repeats`` rounds."""
    rates = {k: [] for k in calls}
    for call in calls.values():
        call()  # warm up (allocator, oneDNN primitives)
    for _ in range(repeats):
        for k, call in calls.items():
            rates[k].append(rate(call, per_call, seconds))
    return {k: statistics.median(v) for k, v in rates.items()}


def bench_game(name: str, args) -> dict:
    game, config = games.make(name), PRESET_NETWORKS[name]
    batch = args.batch or (4096 if config.kind == "mlp" else 1024)
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, size=(batch, *game.obs_shape)).astype(np.float32)
    train = {"obs": rng.integers(0, 2, size=(args.train_batch, *game.obs_shape), dtype=np.uint8),
             "target": rng.uniform(-1, 1, args.train_batch).astype(np.float32)}
    learners = {p: Learner(game, config, device="cpu", precision=p) for p in ("fp32", "bf16")}
    values = ValueFunction(game, config)
    values.set_weights(learners["fp32"].get_weights(), 0)
    x = torch.from_numpy(obs)
    cost = forward_cost(values.net)
    dtypes = args.dtypes if args.dtypes is not None else precision.candidates(values.net, torch.device("cpu"))
    row = {"game": name, "config": dataclasses.asdict(config), "parameters": count_parameters(values.net),
           "images_per_sample": cost, "batch": batch, "train_batch": args.train_batch, "threads": args.threads}
    torch.set_num_threads(args.threads)
    modules, candidates = {"fp32": values.net}, {}
    guard = precision.guard_set(game, config.policy_head, torch.device("cpu"))
    for dtype in dtypes:
        start = time.perf_counter()
        modules[dtype] = precision.convert(values.net, dtype, x[:precision.GUARD_ROWS])
        measured = precision.check(modules[dtype], values.net, x, guard)
        candidates[dtype] = {"conversion_s": time.perf_counter() - start, "max_abs_value_diff": measured.max_abs_diff,
                             "agreement": measured.agreement, "holds": measured.holds}
    with torch.inference_mode():
        rates = alternating({k: (lambda m=m: m(x)) for k, m in modules.items()}, batch * cost,
                            args.seconds, args.repeats)
    for dtype, c in candidates.items():
        c.update(evaluations_per_s=rates[dtype], speedup=rates[dtype] / rates["fp32"])
    fits = {k: c["speedup"] for k, c in candidates.items() if c["holds"] and c["speedup"] >= precision.MIN_SPEEDUP}
    fast = max(fits, key=fits.get, default="fp32")
    updates = alternating({p: (lambda lr=lr: lr.train_step(train)) for p, lr in learners.items()}, 1,
                          args.seconds, args.repeats)
    row.update(fp32=rates["fp32"], fast=rates[fast], fast_dtype=fast, speedup=rates[fast] / rates["fp32"],
               max_abs_value_diff=candidates[fast]["max_abs_value_diff"] if fast != "fp32" else 0.0,
               candidates=candidates, learner_fp32=updates["fp32"], learner_bf16=updates["bf16"],
               learner_speedup=updates["bf16"] / updates["fp32"])
    return row


def label(row: dict) -> str:
    c = row["config"]
    shape = (f"MLP {c['blocks']}x{c['layers_per_block']}, width {c['width']}" if c["kind"] == "mlp"
             else f"conv {c['blocks']} blocks, {c['channels']} channels")
    return f"{row['game']} {shape}" + (", symmetrized" if c["symmetrize"] else "")


def print_table(rows: list[dict]) -> None:
    print("| preset | params | fp32 evaluations/s | fast evaluations/s | fast dtype | x fp32 | max abs value diff "
          "| other dtypes (x fp32, max diff, greedy agreement) | fp32 updates/s | bf16 updates/s | x fp32 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        others = "; ".join(f"{k} x{c['speedup']:.2f}, {c['max_abs_value_diff']:.3f}, agree {c['agreement']:.3f}"
                           for k, c in r["candidates"].items() if k != r["fast_dtype"]) or "-"
        print(f"| {label(r)} | {r['parameters']:,} | {r['fp32']:,.0f} | {r['fast']:,.0f} | {r['fast_dtype']} "
              f"| x{r['speedup']:.2f} | {r['max_abs_value_diff']:.4f} | {others} | {r['learner_fp32']:.1f} "
              f"| {r['learner_bf16']:.1f} | x{r['learner_speedup']:.2f} |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", default=list(PRESET_NETWORKS), choices=list(PRESET_NETWORKS))
    p.add_argument("--dtypes", nargs="+", choices=precision.FAST_DTYPES, default=None,
                   help="reduced-precision paths to time (default: those auto times on this machine)")
    p.add_argument("--batch", type=int, default=None, help="inference batch (default 4096 MLP, 1024 conv)")
    p.add_argument("--train-batch", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=0.5, help="length of one timed run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = [bench_game(name, args) for name in args.games]
    if args.json:
        print(json.dumps({r["game"]: r for r in rows}, indent=1))
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
