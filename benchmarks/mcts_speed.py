"""Speed of the batched PUCT search (``search.mcts``) on Connect Four, beside OpenSpiel's.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 taskset -c 0 python -m benchmarks.mcts_speed \
        [--batches 1 128] [--simulations 64] [--seconds 2] [--repeats 3]

Reports simulations/s (B trees x S simulations per search / seconds per search), each
the median of ``--repeats`` timed runs of ``--seconds`` on the same mid-game roots:
- the search with a trivial evaluator (``UniformEvaluator``: zero logits, zero values),
  i.e. the tree's own cost, at each batch size;
- the search with the Connect Four preset network with a policy head (torch on one
  thread, fresh weights) at the largest batch, and the tree's share of the search time
  (time outside the evaluator / total): the part of a self-play step that is not inference;
- OpenSpiel's Python ``MCTSBot`` (PUCT selection, exact terminal values, no solver) with
  an evaluator doing the same trivial work (uniform priors, value 0), measured in the
  same run, and our speed as a multiple of it.
The process is pinned to one core and numba and torch to one thread. ``--gumbel`` adds
Gumbel AlphaZero's search (``search.gumbel``, training's settings) in every case of ours.

``--cache``: AlphaZero self-play (``actors.alphazero``) on Connect Four with the preset
policy-value network (fresh weights), ``--envs`` trees of ``--simulations[0]``
simulations, after ``--warmup`` moves: ``--phases`` phases of ``--phase-steps`` moves,
each played twice from the same environments and generator (which goes first
alternates), without and with the evaluation cache (``search.cache.CachedEvaluator``,
emptied per phase as on a new weight version). Reports the hit rate (leaves repeated
across trees in one evaluator call, and positions met again in later simulations and
searches of the phase: the search keeps no tree between moves) and the moves/s ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time

# One core, one thread, set before numpy, numba and torch load.
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numpy as np  # noqa: E402
import torch  # noqa: E402

import games  # noqa: E402
from games import take  # noqa: E402
from games.testing import random_move_lists  # noqa: E402
from inference.tensors import numpy_weights  # noqa: E402
from inference.networks import PRESET_NETWORKS, build_network  # noqa: E402
from search import MCTS, MCTSConfig, UniformEvaluator  # noqa: E402
from search.cache import CachedEvaluator  # noqa: E402
from search.gumbel import GumbelMCTS  # noqa: E402
from inference.network import NetworkEvaluator  # noqa: E402

C_PUCT = 3.0  # Table 4, for both searches


def mid_game_move_lists(count: int, rng: np.random.Generator) -> list[list[int]]:
    """Move lists of live Connect Four positions after 0 to 14 random plies."""
    return random_move_lists(games.make("connect4"), count, rng, max_plies=14)


class TimedEvaluator:
    """An evaluator that adds up the seconds spent inside the wrapped one."""

    def __init__(self, inner):
        self.inner, self.seconds = inner, 0.0

    def __call__(self, states):
        start = time.perf_counter()
        out = self.inner(states)
        self.seconds += time.perf_counter() - start
        return out


def ours(roots, evaluate, simulations: int, search: str = "puct"):
    """A function that runs one search (PUCT, or Gumbel AlphaZero's with ``search="gumbel"``)
    from ``roots`` and returns (simulations, seconds, seconds inside ``evaluate``)."""
    game = games.make("connect4")
    mcts = MCTS(game, MCTSConfig(simulations=simulations, c_puct=C_PUCT))
    if search == "gumbel":  # training's settings: Gumbel noise on, 16 considered actions
        mcts = GumbelMCTS(game, MCTSConfig(simulations=simulations))
    timed = TimedEvaluator(evaluate)
    rng = np.random.default_rng(0)
    B = len(roots[0])

    def run():
        timed.seconds = 0.0
        start = time.perf_counter()
        mcts.search(roots, timed, rng)
        return B * simulations, time.perf_counter() - start, timed.seconds

    return run


def openspiel(move_lists, simulations: int):
    """The same for OpenSpiel's MCTSBot, one root after the other."""
    import pyspiel
    from open_spiel.python.algorithms import mcts as os_mcts

    class TrivialEvaluator(os_mcts.Evaluator):
        """Uniform priors and value 0: the same work as our UniformEvaluator."""

        def evaluate(self, state):
            return np.zeros(2)

        def prior(self, state):
            legal = state.legal_actions(state.current_player())
            return [(a, 1.0 / len(legal)) for a in legal]

    game = pyspiel.load_game("connect_four")
    bot = os_mcts.MCTSBot(game, C_PUCT, simulations, TrivialEvaluator(), solve=False,
                          random_state=np.random.RandomState(0),
                          child_selection_fn=os_mcts.SearchNode.puct_value)
    roots = []
    for moves in move_lists:
        state = game.new_initial_state()
        for a in moves:
            state.apply_action(a)
        roots.append(state)
    searches = [0]

    def run():
        start = time.perf_counter()
        bot.mcts_search(roots[searches[0] % len(roots)])
        searches[0] += 1
        return simulations, time.perf_counter() - start, 0.0

    return run


def timed_run(run, seconds: float) -> tuple[float, float]:
    """(simulations/s, share of the time outside the evaluator) over calls of ``run``
    for at least ``seconds``."""
    sims = elapsed = inside = 0.0
    while elapsed < seconds:
        n, t, e = run()
        sims, elapsed, inside = sims + n, elapsed + t, inside + e
    return sims / elapsed, 1.0 - inside / elapsed


def cache_speed(network, envs: int, simulations: int, warmup: int, phases: int, phase_steps: int) -> dict:
    """AlphaZero self-play steps without and with the evaluation cache (module docstring)."""
    from actors.alphazero import AlphaZeroCollector

    game = games.make("connect4")
    collector = AlphaZeroCollector(game, envs, mcts=MCTSConfig(simulations=simulations, c_puct=C_PUCT), seed=0)
    collector.collect(network, max(warmup, 1))
    seconds, hits, within = {"off": [], "cache": []}, [], []
    for phase in range(phases):
        saved = collector.get_state()
        cached = CachedEvaluator(game, network)
        for mode in ("off", "cache")[::1 if phase % 2 == 0 else -1]:  # who goes first alternates
            evaluate = network if mode == "off" else cached
            collector.set_state(saved)
            start = time.perf_counter()
            collector.collect(evaluate, phase_steps)
            seconds[mode].append(time.perf_counter() - start)
        hits.append(cached.cache.hit_rate)
        within.append(cached.cache.hits_batch / cached.cache.lookups)
    moves = envs * phase_steps
    return {"envs": envs, "simulations": simulations, "phase_steps": phase_steps,
            "hit_rate": statistics.median(hits), "hit_rate_batch": statistics.median(within),
            "moves_per_s_off": moves / statistics.median(seconds["off"]),
            "moves_per_s_cache": moves / statistics.median(seconds["cache"]),
            "speedup": statistics.median(o / c for o, c in zip(seconds["off"], seconds["cache"]))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, nargs="+", default=[1, 128], help="trees per search (B)")
    p.add_argument("--simulations", type=int, nargs="+", default=[64], help="simulations per search (S)")
    p.add_argument("--seconds", type=float, default=2.0, help="length of one timed run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-network", action="store_true", help="skip the preset network's run")
    p.add_argument("--gumbel", action="store_true",
                   help="time Gumbel AlphaZero's search beside PUCT's (each case twice, its rows 'ours gumbel')")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cache", action="store_true", help="AlphaZero self-play without and with the evaluation cache")
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--warmup", type=int, default=12)
    p.add_argument("--phases", type=int, default=2)
    p.add_argument("--phase-steps", type=int, default=4)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    try:
        import pyspiel  # noqa: F401
        have_openspiel = True
    except ImportError:
        have_openspiel = False
        print("OpenSpiel is not installed (pip install open_spiel): reporting our search only", file=sys.stderr)

    game = games.make("connect4")
    move_lists = mid_game_move_lists(max(args.batches), np.random.default_rng(0))
    all_roots = game.from_moves(move_lists)
    net_config = dataclasses.replace(PRESET_NETWORKS["connect4"], policy_head=True)
    network = NetworkEvaluator(game, net_config)
    torch.manual_seed(0)
    network.set_weights(numpy_weights(build_network(game, net_config)), version=0)
    if args.cache:
        r = cache_speed(network, args.envs, args.simulations[0], args.warmup, args.phases, args.phase_steps)
        if args.json:
            print(json.dumps(r, indent=1))
            return
        print("| envs | simulations | moves per phase | hit rate | within a call | moves/s off | moves/s cache "
              "| speed-up |")
        print("|---|---|---|---|---|---|---|---|")
        print(f"| {r['envs']} | {r['simulations']} | {r['phase_steps']} | {r['hit_rate']:.1%} "
              f"| {r['hit_rate_batch']:.1%} | {r['moves_per_s_off']:,.1f} | {r['moves_per_s_cache']:,.1f} "
              f"| x{r['speedup']:.2f} |")
        return

    # Cases: (search, evaluator, B, S, run). Their timed runs take turns, repeat by
    # repeat, so that a change of load on a shared machine hits every case alike.
    cases = []
    for S in args.simulations:
        for B in args.batches:
            roots = take(all_roots, np.arange(B))
            for search in ("puct", "gumbel") if args.gumbel else ("puct",):
                who = "ours" if search == "puct" else "ours gumbel"
                cases.append((who, "trivial", B, S, ours(roots, UniformEvaluator(game), S, search)))
                if not args.no_network and B == max(args.batches):
                    cases.append((who, "network", B, S, ours(roots, network, S, search)))
        if have_openspiel:
            cases.append(("OpenSpiel", "trivial", 1, S, openspiel(move_lists, S)))
    for *_, run in cases:
        run()  # warm up: compile or load the cached kernels
    measured = [[] for _ in cases]
    for _ in range(args.repeats):
        for case, out in zip(cases, measured):
            out.append(timed_run(case[-1], args.seconds))
    rows = []
    for (who, evaluator, B, S, _), out in zip(cases, measured):
        row = {"search": who, "evaluator": evaluator, "B": B, "S": S,
               "sims_per_s": statistics.median(r for r, _ in out)}
        if who.startswith("ours"):
            row["tree_share"] = statistics.median(s for _, s in out)
        rows.append(row)
    reference = {r["S"]: r["sims_per_s"] for r in rows if r["search"] == "OpenSpiel"}
    for r in rows:
        if r["search"] == "ours" and r["evaluator"] == "trivial" and r["S"] in reference:
            r["vs_openspiel"] = r["sims_per_s"] / reference[r["S"]]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print("| search | evaluator | B | S | simulations/s | tree share of search time | x OpenSpiel |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        share = f"{r['tree_share']:.0%}" if "tree_share" in r else ""
        ratio = f"{r['vs_openspiel']:.1f}" if "vs_openspiel" in r else ""
        print(f"| {r['search']} | {r['evaluator']} | {r['B']} | {r['S']} | {r['sims_per_s']:,.0f} "
              f"| {share} | {ratio} |")


if __name__ == "__main__":
    main()
