"""Tic-tac-toe golden counts: 255,168 complete games and 5,478 reachable positions."""

import numpy as np

import games
from games import take


def test_game_and_position_counts():
    game = games.make("tictactoe")
    frontier = game.init(1)
    finished_games = 0
    positions = {(0, 0)}
    while len(frontier.moves):
        exp = game.expand(frontier)
        legal = exp.legal.reshape(-1)
        done = exp.done.reshape(-1)
        finished_games += int((legal & done).sum())
        children = take(exp.children, legal)
        positions.update(zip(children.mine.tolist(), children.theirs.tolist()))
        frontier = take(exp.children, legal & ~done)
    assert finished_games == 255_168
    assert len(positions) == 5_478


def test_win_draw_and_outcomes_of_known_games():
    game = games.make("tictactoe")
    # X: a3 b3 c3 across the top row; O plays twice in between.
    state = game.from_moves([[0, 3], [0, 3, 1, 4]])
    state, reward, done = game.step(state, np.array([6, 2]))
    assert done.tolist() == [False, True] and reward.tolist() == [0.0, 1.0]
    # A full board without a line is a draw: reward 0 with done.
    draw = [0, 1, 2, 4, 3, 5, 7, 6]
    state = game.from_moves([draw])
    state, reward, done = game.step(state, np.array([8]))
    assert done[0] and reward[0] == 0.0
