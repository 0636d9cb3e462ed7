"""The board page's picture and score readings of Connect Four at a board other than 7x6."""

from __future__ import annotations

import numpy as np

import games
from board.grid import connect4_grid
from board.marks import pons_reading


def _play(game, actions):
    state = game.init(1)
    for a in actions:
        state, _, _ = game.step(state, np.array([a]))
    return state


def test_the_grid_of_a_5x4_board_has_its_columns_and_rows():
    game = games.make("connect4", width=5, height=4)
    grid = connect4_grid(game, _play(game, [0, 4, 4, 4, 4]))  # columns a and e; e is full
    assert (grid.rows, grid.cols) == (4, 5)
    bottom, top = grid.cells[3], grid.cells[0]  # grid row 0 is the top row
    assert bottom == [1, 0, 0, 0, 2]  # the first player's disc in a, the second's at the foot of e
    assert [grid.cells[r][4] for r in range(4)] == [1, 2, 1, 2]  # column e, top to bottom
    assert top == [0, 0, 0, 0, 1]
    assert grid.click[0] == [0, 1, 2, 3, 4]


def test_pons_scores_are_read_by_the_stones_of_the_board():
    # A win with the mover's stone k scores cells / 2 + 1 - k: 11 - k on 5x4 (20 cells), 22 - k on 7x6.
    small, standard = games.make("connect4", width=5, height=4), games.make("connect4")
    assert pons_reading(small, 7, 0).startswith("win with its stone 4 ")
    assert pons_reading(standard, 7, 0).startswith("win with its stone 15 ")
    assert pons_reading(small, -2, 1).startswith("loss: the opponent wins with its stone 9 ")
    assert pons_reading(small, 0, 5) == "draw"
