"""Speed of the game engines on one core, beside OpenSpiel's when it is installed.

    python -m benchmarks.games_speed [--games connect4 othello ...] [--batch 1024] [--seconds 1]

For each game: random-play games/s and steps/s through the public batched API at
batch B (legal -> random legal action -> step -> reset finished games), ``expand``
legal children/s on mid-game states, the same figures for OpenSpiel's implementation
measured in the same run (``pip install open_spiel``; a reference only), their ratio,
and the one-time numba compile time against the time to load the on-disk cache.
Every figure is the median of ``--repeats`` timed runs; the process is pinned to one
core and numba to one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# One core, one thread, set before numpy and numba load.
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import numpy as np  # noqa: E402

import games  # noqa: E402
from games import random_legal_actions, step_live, where  # noqa: E402

# Our game (name, params) -> OpenSpiel's game string, where OpenSpiel has the game.
GAMES = {
    "connect4": ({}, "connect_four"),
    "tictactoe": ({}, "tic_tac_toe"),
    "hex": ({"size": 7}, "hex(board_size=7)"),
    "othello": ({}, "othello"),
    "go": ({"size": 9, "komi": 7.0}, "go(board_size=9,komi=7.0)"),
    "chomp": ({"rows": 9, "cols": 10}, None),
    "fgame": ({"depth": 10, "branching": 5}, None),
}


def median_rate(run, repeats):
    """Median over ``repeats`` of run() -> (count, seconds), as count per second."""
    return statistics.median(count / seconds for count, seconds in (run() for _ in range(repeats)))


# ----------------------------------------------------------------------- ours


def ours_random_play(game, batch, seconds, rng):
    fresh = game.init(batch)
    state = fresh
    steps = finished = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        actions = random_legal_actions(game.legal(state), rng)
        state, _, done = game.step(state, actions, check=False)
        steps += batch
        if done.any():
            finished += int(done.sum())
            state = where(done, fresh, state)
    elapsed = time.perf_counter() - start
    return finished, steps, elapsed


def mid_game_states(game, batch, rng):
    """A batch of live states after a random number of random plies."""
    state = game.init(batch)
    target = rng.integers(0, max(2, game.max_length // 3), size=batch)
    for ply in range(int(target.max())):
        live = ~game.terminal(state) & (target > ply)
        if not live.any():
            break
        nxt, _, done = step_live(game, state, random_legal_actions(game.legal(state), rng), live, check=False)
        # Keep states live: a move that ends the game is not taken.
        state = where(done, state, nxt)
    return state


def bench_ours(name, params, batch, seconds, repeats):
    game = games.make(name, **params)
    rng = np.random.default_rng(0)
    ours_random_play(game, 8, 0.05, rng)  # warm up: compile or load cached kernels
    plays = [ours_random_play(game, batch, seconds, rng) for _ in range(repeats)]
    states = mid_game_states(game, batch, rng)
    game.expand(states)

    def one_expand():
        start = time.perf_counter()
        exp = game.expand(states)
        return int(exp.legal.sum()), time.perf_counter() - start

    return {
        "games_per_s": statistics.median(f / t for f, _, t in plays),
        "steps_per_s": statistics.median(s / t for _, s, t in plays),
        "expand_children_per_s": median_rate(one_expand, max(5, repeats)),
    }


# ------------------------------------------------------------------ OpenSpiel


def bench_openspiel(spec, seconds, repeats):
    import pyspiel

    game = pyspiel.load_game(spec)
    rng = np.random.default_rng(0)

    def play():
        finished = steps = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            state = game.new_initial_state()
            while not state.is_terminal():
                legal = state.legal_actions()
                state.apply_action(legal[rng.integers(len(legal))])
                steps += 1
            finished += 1
        return finished, steps, time.perf_counter() - start

    plays = [play() for _ in range(repeats)]
    states = []
    while len(states) < 256:
        state = game.new_initial_state()
        for _ in range(rng.integers(0, game.max_game_length() // 3)):
            legal = state.legal_actions()
            child = state.child(legal[rng.integers(len(legal))])
            if child.is_terminal():
                break
            state = child
        states.append(state)

    def expand():
        start = time.perf_counter()
        children = 0
        for state in states:
            for action in state.legal_actions():
                state.child(action)
                children += 1
        return children, time.perf_counter() - start

    return {
        "games_per_s": statistics.median(f / t for f, _, t in plays),
        "steps_per_s": statistics.median(s / t for _, s, t in plays),
        "expand_children_per_s": median_rate(expand, max(5, repeats)),
    }


# -------------------------------------------------------------- compile time


def compile_seconds(name):
    """Seconds to make the game and play 2 games in a fresh process, first with an empty
    numba cache (compiling) and then with the cache it left (loading)."""
    code = (
        "import time, numpy as np; t = time.perf_counter(); import games; "
        "from benchmarks.games_speed import GAMES, ours_random_play; "
        f"g = games.make({name!r}, **GAMES[{name!r}][0]); "
        "ours_random_play(g, 2, 0.0, np.random.default_rng(0)); g.expand(g.init(2)); "
        "print(time.perf_counter() - t)"
    )
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 check=True)
            out.append(float(res.stdout.split()[-1]))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seconds", type=float, default=1.0, help="length of one timed run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        import pyspiel  # noqa: F401
        have_openspiel = True
    except ImportError:
        have_openspiel = False
        print("OpenSpiel is not installed (pip install open_spiel): reporting our engines only",
              file=sys.stderr)

    rows = []
    for name in args.games:
        params, spec = GAMES[name]
        row = {"game": name, "params": params, "batch": args.batch,
               "ours": bench_ours(name, params, args.batch, args.seconds, args.repeats)}
        if have_openspiel and spec:
            row["openspiel"] = bench_openspiel(spec, args.seconds, args.repeats)
            row["ratio"] = {k: row["ours"][k] / row["openspiel"][k] for k in row["ours"]}
        if not args.no_compile:
            row["compile_s"], row["cached_load_s"] = compile_seconds(name)
        rows.append(row)
        if not args.json:
            print_row(row)
    if args.json:
        print(json.dumps(rows, indent=1))


def print_row(row):
    ours, os_ = row["ours"], row.get("openspiel")
    line = (f"{row['game']:10s} ours: {ours['games_per_s']:>10,.0f} games/s {ours['steps_per_s']:>12,.0f} steps/s "
            f"{ours['expand_children_per_s']:>12,.0f} children/s")
    if os_:
        r = row["ratio"]
        line += (f" | OpenSpiel: {os_['games_per_s']:>8,.0f} games/s {os_['steps_per_s']:>9,.0f} steps/s "
                 f"{os_['expand_children_per_s']:>9,.0f} children/s | x{r['games_per_s']:.1f} games/s, "
                 f"x{r['expand_children_per_s']:.1f} expand")
    if "compile_s" in row:
        line += f" | compile {row['compile_s']:.1f} s, cached {row['cached_load_s']:.1f} s"
    print(line, flush=True)


if __name__ == "__main__":
    main()
