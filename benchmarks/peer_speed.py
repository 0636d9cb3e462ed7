"""This project's self-play and learner beside the JAX stack's (pgx + mctx + optax, jit-compiled
end to end on the CPU), the same computation alternating in one process.

    python -m benchmarks.peer_speed [--cores 1] [--quick | --tiny] [--tasks ...] [--ours-only] [--json]
        [--compile off|on|both] [--profile N]

The peer needs the ``bench`` extra (``pip install -e '.[bench]'``: jax, pgx, mctx, optax);
without it the command says so and exits 1, unless ``--ours-only``.

Comparisons (``--tasks``, default all), each at the AlphaZero or AVI paper preset of its game:
- ``alphazero_{puct,gumbel}_{connect4,hex}``: AlphaZero self-play, positions/s (moves of
  all environments). Ours: ``actors.alphazero.AlphaZeroCollector`` with
  ``inference.network.NetworkEvaluator``, as ``benchmarks.azal_speed`` builds it; the peer:
  ``jax.vmap(env.step)`` and ``mctx.muzero_policy`` (Dirichlet noise, the move drawn from the
  visits) or ``mctx.gumbel_muzero_policy``, the policy target and observation of every move
  kept (``jax.lax.scan`` over the moves of a call). Both at the preset's environments,
  simulations, c_puct, noise and Gumbel parameters.
- ``avi_{connect4,hex}``: AVI self-play, rows/s: every legal child evaluated, epsilon-greedy,
  the one-step target. Ours: ``actors.avi.AviCollector`` with ``inference.network.ValueFunction``
  and no evaluation cache (the same computation; the cache, on by default in training, is measured
  in ``benchmarks.avi_speed``); the peer evaluates all ``A`` children of every state
  (static shapes), ours only the legal, unfinished ones.
- ``learner_alphazero_{connect4,hex}``: one Adam update of the policy-value network on both
  heads (value MSE plus policy cross entropy) at the preset's batch and learning rate,
  updates/s. Ours: ``learner.learner.Learner.train_step`` (its metrics read after every
  update); the peer: ``jax.value_and_grad`` and ``optax.adam`` in one jitted update, with the
  gradient norm that ours reports.

The network on both sides is the game's preset (Connect Four: a residual MLP of width 256,
4 blocks of 4 Linear-LayerNorm-GELU layers, heads of 256, on the board and its mirror image
averaged; Hex 7x7: 2 blocks of 2, the board and its 180-degree turn), with the same initial
weights (torch's, seed 0, copied into the peer's pytree: ``benchmarks/_jax_peer.py``).

Timing: each side is built and run once untimed (jit compile, numba load), then ``repeats``
timed calls of each side take turns (who goes first alternates); a rate is the median of
its calls and the ratio ours/peer the median of the per-repeat ratios. ``--cores 1`` (the
default) pins the process to one core with one thread on both sides (torch's intra-op
threads, XLA's Eigen pool off); ``--cores 2`` uses two of each. Sizes: the presets' (the
default), ``--quick`` (16 environments, 8 simulations, batch 64: every comparison in about
2 minutes), ``--tiny`` (the test suite's: a check that it runs, not a measurement).

``--compile``: our network eager (``off``, the default), compiled (``on``: ``actors.compile=on``,
``inference/compiled.py``), or ``both``: a third side, ours compiled, taking turns with the other
two, its rate in ``compiled``, its ratio to the peer in ``compiled_ratio``, to ours eager in
``compiled_speedup`` and its first call's wall time (the compile) in ``compile_s``; the self-play
comparisons only (the learner trains eagerly).

``--json``: one line per comparison: ``task``, ``ours``, ``peer``, ``unit``, ``ratio`` (and the
size it ran at); ``peer`` and ``ratio`` are null with ``--ours-only``. ``--profile N``: after
each comparison, cProfile's ``N`` costliest functions of one call of our side, on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import statistics
import sys
import time

import algorithms

PEER_PACKAGES = ("jax", "pgx", "mctx", "optax")
INSTALL = "pip install -e '.[bench]'"


@dataclasses.dataclass(frozen=True)
class Size:
    """How big each comparison runs; ``None``: the preset's."""

    envs: int | None
    simulations: int | None
    moves: int  # moves (AlphaZero) or steps (AVI) of every environment per timed call
    batch: int | None  # the learner's
    updates: int  # learner updates per timed call
    repeats: int


SIZES = {"full": Size(None, None, 4, None, 20, 3), "quick": Size(16, 8, 2, 64, 5, 3),
         "tiny": Size(4, 2, 1, 8, 2, 1)}
TASKS = ("alphazero_puct_connect4", "alphazero_gumbel_connect4", "alphazero_puct_hex", "alphazero_gumbel_hex",
         "avi_connect4", "avi_hex", "learner_alphazero_connect4", "learner_alphazero_hex")
UNITS = {"alphazero": "positions/s", "avi": "rows/s", "learner": "updates/s"}


def missing_peer_packages() -> list[str]:
    return [name for name in PEER_PACKAGES if importlib.util.find_spec(name) is None]


def pin(cores: int) -> None:
    """One or more cores for this process, one thread per core on both sides; before jax
    starts its backend (XLA reads its flags once)."""
    if hasattr(os, "sched_setaffinity"):
        available = sorted(os.sched_getaffinity(0))
        if cores > len(available):
            raise SystemExit(f"peer_speed: --cores {cores}, but this process may use {len(available)}")
        os.sched_setaffinity(0, set(available[:cores]))
    if cores == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()
    import torch

    torch.set_num_threads(cores)


# ---------------------------------------------------------------------------- ours


# A task's first word -> the work it times (a tree search's self-play, every child's value,
# the learner's update) and the algorithm whose preset it runs at.
WORK = {"alphazero": ("search", "alphazero"), "avi": ("values", "avi"), "learner": ("learner", "alphazero")}


def setup(task: str, size: Size):
    """The task's game, its resolved config (resized) and the preset network at seed 0."""
    import torch

    from launch.config import resolve
    from inference.networks import build_network

    prefix, *rest = task.split("_")
    game_name = rest[-1]
    kind, algo = WORK[prefix]
    overrides = [f"actors.num_envs={size.envs}"] if size.envs else []
    if size.simulations:
        overrides.append(f"actors.mcts.simulations={size.simulations}")
    if size.batch:
        overrides.append(f"learner.batch_size={size.batch}")
    config = resolve(game_name, algo=algo, overrides=overrides)
    game = config.game_network.make_game()
    torch.manual_seed(0)
    net = build_network(game, config.network)
    return kind, rest[0] if kind == "search" else None, config, game, net


def ours(task: str, size: Size, compile: str = "off"):
    """``(call, units per call)``: one timed call of this project's side, run once here;
    ``compile``: the network's (``actors.compile``)."""
    from inference.tensors import numpy_weights

    kind, search, config, game, net = setup(task, size)
    actors = config.actors
    if kind == "search":
        from actors.alphazero import AlphaZeroCollector
        from inference.network import NetworkEvaluator

        network = NetworkEvaluator(game, config.network, inference_dtype=actors.inference_dtype, compile=compile)
        network.set_weights(numpy_weights(net), version=0)
        collector = AlphaZeroCollector(game, actors.num_envs, mcts=actors.mcts, seed=0, search=search,
                                       gumbel=actors.gumbel)

        def call():
            collector.collect(network, size.moves)
        units = actors.num_envs * size.moves
    elif kind == "values":
        from actors.avi import AviCollector
        from inference.network import ValueFunction

        values = ValueFunction(game, config.network, inference_dtype=actors.inference_dtype, compile=compile)
        values.set_weights(numpy_weights(net), 0)
        collector = AviCollector(game, actors.num_envs, epsilon=actors.epsilon, gamma=config.gamma, seed=0)

        def call():
            collector.collect(values, size.moves)
        units = actors.num_envs * size.moves
    else:
        from learner.learner import Learner

        learner = Learner(game, config.network, lr=config.learner.lr, device="cpu", seed=0,
                          loss=algorithms.descriptor("alphazero"))
        learner.set_weights(numpy_weights(net))
        batch = learner_batch(game, config.learner.batch_size)

        def call():
            for _ in range(size.updates):
                learner.train_step(batch)
        units = size.updates
    call()  # warm-up: numba's kernels loaded, buffers allocated
    return call, units


def learner_batch(game, n: int) -> dict:
    """Replayed rows of random live positions: ``obs`` uint8, ``target`` in {-1, 0, 1}, a
    policy over the legal moves; the same rows for both sides."""
    import numpy as np

    from games.testing import random_move_lists

    rng = np.random.default_rng(0)
    states = game.from_moves(random_move_lists(game, n, rng, max_plies=game.max_length // 2))
    policy = rng.random((n, game.num_actions)).astype(np.float32) * game.legal(states)
    policy /= policy.sum(1, keepdims=True)
    return {"obs": game.encode(states).astype(np.uint8), "target": rng.choice([-1.0, 0.0, 1.0], n).astype(np.float32),
            "policy": policy}


# ---------------------------------------------------------------------------- the peer


def peer(task: str, size: Size):
    """``(call, units per call)``: the JAX stack's side of ``task``, compiled and run once here."""
    import jax
    import numpy as np

    from benchmarks import _jax_peer

    kind, search, config, game, net = setup(task, size)
    actors = config.actors
    side = _jax_peer.Peer(game, config.network, net)
    if kind in ("search", "values"):
        if kind == "search":
            run = side.alphazero(actors.num_envs, size.moves, search=search, mcts=actors.mcts, gumbel=actors.gumbel)
        else:
            run = side.avi(actors.num_envs, size.moves, epsilon=actors.epsilon, gamma=config.gamma)
        carry = [side.init(actors.num_envs, 0), jax.random.PRNGKey(0)]

        def call():
            state, key, rows = run(side.params, *carry)
            _jax_peer.block(rows)
            carry[:] = [state, key]
        units = actors.num_envs * size.moves
    else:
        init, update = side.learner(config.learner.lr, policy=True)
        batch = learner_batch(game, config.learner.batch_size)
        obs, z, pi = (jax.numpy.asarray(batch[k]) for k in ("obs", "target", "policy"))
        carry = [side.params, init(side.params)]

        def call():
            params, opt_state = carry
            for _ in range(size.updates):
                params, opt_state, stats = update(params, opt_state, obs, z, pi)
                np.asarray(stats)  # read every update's metrics, as ours does
            carry[:] = [params, opt_state]
        units = size.updates
    call()  # warm-up: the jit compile
    return call, units


# ---------------------------------------------------------------------------- the comparison


def profile(task: str, size: Size, top: int, compile: str = "off") -> str:
    """Where one call of our side of ``task`` spends its time: cProfile's ``top`` functions
    by their own time, and by time including what they call."""
    import cProfile
    import io
    import pstats

    call, _ = ours(task, size, compile)
    profiler = cProfile.Profile()
    profiler.runcall(call)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def compare(task: str, size: Size, ours_only: bool, compile: str = "off") -> dict:
    with_compiled = compile == "both" and not task.startswith("learner")
    sides = {"ours": ours(task, size, "on" if compile == "on" else "off")}
    compile_s = None
    if with_compiled:
        start = time.perf_counter()
        sides["compiled"] = ours(task, size, "on")
        compile_s = time.perf_counter() - start  # building the side and its first call: the compile
    if not ours_only:
        sides["peer"] = peer(task, size)
    rates = {name: [] for name in sides}
    names = list(sides)
    for repeat in range(size.repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:  # who goes first alternates
            call, units = sides[name]
            start = time.perf_counter()
            call()
            rates[name].append(units / (time.perf_counter() - start))
    _, search, config, game, _ = setup(task, size)
    row = {"task": task, "ours": statistics.median(rates["ours"]),
           "peer": statistics.median(rates["peer"]) if "peer" in rates else None,
           "unit": UNITS[task.split("_")[0]],
           "ratio": (statistics.median(o / p for o, p in zip(rates["ours"], rates["peer"]))
                     if "peer" in rates else None)}
    if task.startswith("learner"):
        row.update(batch=config.learner.batch_size, updates=size.updates)
    else:
        row.update(envs=config.actors.num_envs, moves=size.moves)
        if task.startswith("alphazero"):
            row["simulations"] = config.actors.mcts.simulations
    if with_compiled:
        row.update(compiled=statistics.median(rates["compiled"]), compile_s=compile_s,
                   compiled_speedup=statistics.median(c / o for c, o in zip(rates["compiled"], rates["ours"])),
                   compiled_ratio=(statistics.median(c / p for c, p in zip(rates["compiled"], rates["peer"]))
                                   if "peer" in rates else None),
                   compiled_runs=rates["compiled"])
    row.update(repeats=size.repeats, ours_runs=rates["ours"], peer_runs=rates.get("peer"))
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peer_speed", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    p.add_argument("--cores", type=int, default=1, help="cores (and threads) of both sides")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="every comparison small, in about 2 minutes")
    group.add_argument("--tiny", action="store_true", help="the test suite's size: that it runs, not how fast")
    p.add_argument("--repeats", type=int, help="timed calls of each side (default: the size's)")
    p.add_argument("--ours-only", action="store_true", help="this project's side alone (no bench extra needed)")
    p.add_argument("--json", action="store_true", help="one JSON line per comparison")
    p.add_argument("--compile", choices=("off", "on", "both"), default="off",
                   help="our network eager, compiled, or both side by side (inference/compiled.py)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="then profile one call of our side of each task: its N costliest functions, on stderr")
    args = p.parse_args(argv)
    missing = [] if args.ours_only else missing_peer_packages()
    if missing:
        print(f"peer_speed: the peer needs {', '.join(missing)} (the bench extra): {INSTALL}; "
              f"or run this project's side alone with --ours-only", file=sys.stderr)
        return 1
    size = SIZES["tiny" if args.tiny else "quick" if args.quick else "full"]
    if args.repeats:
        size = dataclasses.replace(size, repeats=args.repeats)
    pin(args.cores)
    rows = []
    for task in args.tasks:
        row = {**compare(task, size, args.ours_only, args.compile), "cores": args.cores}
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            peer_text = "-" if row["peer"] is None else f"{row['peer']:,.1f}"
            ratio = "-" if row["ratio"] is None else f"x{row['ratio']:.2f}"
            print(f"{task:28s} ours {row['ours']:>10,.1f}  peer {peer_text:>10s} {row['unit']:12s} ours/peer {ratio}",
                  flush=True)
            if "compiled" in row:
                ratio = "-" if row["compiled_ratio"] is None else f"x{row['compiled_ratio']:.2f}"
                print(f"{'':28s} compiled {row['compiled']:>6,.1f}  x{row['compiled_speedup']:.2f} of eager, "
                      f"compiled/peer {ratio}, compile {row['compile_s']:.0f} s", flush=True)
        if args.profile:
            text = profile(task, size, args.profile, "on" if args.compile == "on" else "off")
            print(f"== {task}, our side, one call\n{text}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
