"""Compile the numba kernels of the game engines, the searches and the exact oracles into
numba's cache on disk, ahead of the first run: ``python -m launch.kernels`` (``make setup``
runs it).

A kernel compiles at its first call in a process unless numba's cache beside its source
(``__pycache__``, keyed by the source file's path, size and modification time) holds it. A
fresh checkout has none, so without this step the first run of each game, search and
oracle pays the compilation, tens of seconds in all, and pays it in every Ray process that
starts before the first one has written the cache (each actor of a first run compiles the
engine itself). This plays four random games of every registered game through the
calls a run makes (legal moves, steps, expansions, encodings), searches with PUCT and
Gumbel MCTS (with tree reuse and the evaluation cache), and asks each game's exact oracle
about positions near the end of its games, where every oracle answers at once."""

from __future__ import annotations

import argparse
import time

import numpy as np

import games
from evaluation.oracles import ORACLES, make_oracle
from games.base import random_play, take
from search.cache import CachedEvaluator
from search.evaluators import UniformEvaluator
from search.gumbel import GumbelMCTS
from search.mcts import MCTS, MCTSConfig
from search.reuse import TreeReuse

GAMES_PER_BATCH = 4
ORACLE_PLIES_LEFT = 3  # positions this many plies before a random game's end


def _late_positions(plies: list) -> list:
    """Per random game, its live state ``ORACLE_PLIES_LEFT`` plies before the end (or its
    first, for a shorter game), as a batch of one."""
    moving = np.array([p.moving for p in plies])  # [plies, B]
    positions = []
    for b in range(moving.shape[1]):
        live = np.flatnonzero(moving[:, b])
        if len(live):
            positions.append(take(plies[live[max(0, len(live) - ORACLE_PLIES_LEFT)]].state, [b]))
    return positions


def compile_game(name: str, rng: np.random.Generator) -> None:
    """The engine's kernels (and its oracle's, where it has one) at its default size."""
    game = games.make(name)
    plies = list(random_play(game, game.init(GAMES_PER_BATCH), rng))
    for ply in plies:
        game.expand(ply.state)
        game.encode(ply.state)
    if hasattr(game, "score"):  # a scored game's final count (Go: the margin against GNU Go)
        game.score(plies[-1].state)
    if ORACLES.get(game) is None:
        return
    oracle = make_oracle(game)
    for position in _late_positions(plies)[:2]:
        oracle.analyze(position)


def compile_searches(rng: np.random.Generator) -> None:
    """PUCT and Gumbel MCTS, each twice through one ``TreeReuse`` and the evaluation cache."""
    game = games.make("tictactoe")
    evaluate = CachedEvaluator(game, UniformEvaluator(game))  # the search's kernels, without a network
    state = game.init(2)
    for search in (MCTS(game, MCTSConfig(simulations=16)), GumbelMCTS(game, MCTSConfig(simulations=16))):
        reuse = TreeReuse()
        result = search.search(state, evaluate, rng, reuse=reuse)
        after, _, _ = game.step(state, result.action)
        search.search(after, evaluate, rng, reuse=reuse)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launch.kernels", description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for name in games.names():
        began = time.perf_counter()
        compile_game(name, rng)
        print(f"{name}: {time.perf_counter() - began:.1f} s", flush=True)
    began = time.perf_counter()
    compile_searches(rng)
    print(f"searches: {time.perf_counter() - began:.1f} s", flush=True)
    print(f"numba kernels compiled and cached in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
