"""``python -m launch demo``: random self-play on one engine, a finished board, the speed."""

from __future__ import annotations

import time

import numpy as np

import games
from games import random_legal_actions, take


def play_batch(game, batch: int, rng: np.random.Generator):
    """Play ``batch`` random games to the end; returns (final state, rewards, plies, lengths)."""
    state = game.init(batch)
    live = np.ones(batch, bool)
    last_reward = np.zeros(batch, np.float32)
    length = np.zeros(batch, np.int64)
    plies = 0
    while live.any():
        actions = np.zeros(batch, np.int64)
        actions[live] = random_legal_actions(game.legal(take(state, live)), rng)
        state, reward, done = games.step_live(game, state, actions, live, check=False)
        last_reward[live], length[live] = reward[live], length[live] + 1
        plies += int(live.sum())
        live &= ~done
    return state, last_reward, plies, length


def run_demo(name: str, params: dict, batch: int, seed: int) -> int:
    game = games.make(name, **params)
    rng = np.random.default_rng(seed)
    play_batch(game, 2, rng)  # compile (or load from the numba cache) outside the timing
    start = time.perf_counter()
    state, reward, plies, length = play_batch(game, batch, rng)
    seconds = time.perf_counter() - start
    print(f"{game!r}: {batch} random games, {plies} plies in {seconds:.3f} s "
          f"({batch / seconds:,.0f} games/s, {plies / seconds:,.0f} steps/s)")
    # Who won, as seen by the first player: the last mover is the first player after
    # an odd number of plies.
    first_player = np.where(length % 2 == 1, reward, -reward)
    print(f"first player: {np.mean(first_player > 0):.1%} wins, {np.mean(first_player == 0):.1%} draws, "
          f"{np.mean(first_player < 0):.1%} losses; mean length {length.mean():.1f} plies")
    print("a finished game:")
    print(game.render(state, 0))
    return 0
