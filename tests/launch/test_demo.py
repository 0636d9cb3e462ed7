"""``python -m launch demo``'s random games: every game played to its end, the counts consistent."""

from __future__ import annotations

import numpy as np

import games
from launch.demo import play_batch


def test_play_batch_plays_every_game_to_its_end():
    game = games.make("tictactoe")
    state, last_reward, plies, length = play_batch(game, 256, np.random.default_rng(0))
    assert game.terminal(state).all()
    assert plies == int(length.sum())
    assert ((length >= 5) & (length <= 9)).all()  # no tic-tac-toe game ends before the fifth stone
    # A game over before the board is full was won by its last mover; a full board is a win or a draw.
    assert (last_reward[length < 9] == 1).all()
    assert set(np.unique(last_reward[length == 9])) <= {0.0, 1.0}
    assert 0 < (length == 9).sum() < 256  # random play reaches both kinds of ending
