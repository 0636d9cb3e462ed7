"""The board as the page draws it: a grid of cells, each empty or holding a stone of the
first (1) or second (2) player, and the action a click on each cell plays.

One small function per game turns element 0 of a state batch into a :class:`Grid`; the
page knows nothing of the rules. Connect Four maps every cell of a column to that
column's action (a click anywhere in a column drops a disc); Chomp draws squares left
(1) and taken (0) with the poisoned square marked; the F-Games have no board (``None``:
the page shows one button per move); actions with no cell (Go and Othello's pass, Hex's
swap) are listed in ``extra`` for buttons.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from games import Game, GameTable


class Grid(NamedTuple):
    shape: str  # "columns" (Connect Four), "squares", "hex" (rhombus, rows shifted), "chomp"
    rows: int
    cols: int
    cells: list  # [rows][cols] of 0 empty, 1 first player, 2 second player (Chomp: 1 left, 0 taken)
    click: list  # [rows][cols] of the action a click plays there (None: nothing)
    extra: list  # actions without a cell, each {"action": a, "name": str}

    def to_json(self) -> dict:
        return self._asdict()


def _bits_to_rows(bits: int, rows: int, cols: int) -> np.ndarray:
    return np.array([[(bits >> (r * cols + c)) & 1 for c in range(cols)] for r in range(rows)], np.int8)


def connect4_grid(game, state) -> Grid:
    width, height = game.width, game.height
    column_bits = height + 1  # each column's bits and its sentinel (games/connect4.py's bitboard)
    cur, mask, moves = int(state.current[0]), int(state.mask[0]), int(state.moves[0])
    first = cur if moves % 2 == 0 else cur ^ mask  # the first player moves after an even number of plies
    cells = [[0] * width for _ in range(height)]
    for r in range(height):  # grid row 0 is the top row of the board
        for c in range(width):
            bit = 1 << (c * column_bits + (height - 1 - r))
            cells[r][c] = 1 if first & bit else 2 if mask & bit else 0
    click = [[c for c in range(width)] for _ in range(height)]
    return Grid("columns", height, width, cells, click, [])


def tictactoe_grid(game, state) -> Grid:
    moves = int(state.moves[0])
    mine, theirs = int(state.mine[0]), int(state.theirs[0])
    first, second = (mine, theirs) if moves % 2 == 0 else (theirs, mine)
    cells = (_bits_to_rows(first, 3, 3) + 2 * _bits_to_rows(second, 3, 3)).tolist()
    return Grid("squares", 3, 3, cells, [[r * 3 + c for c in range(3)] for r in range(3)], [])


def othello_grid(game, state) -> Grid:
    black_to_move = int(state.to_play[0]) == 0
    player, opponent = int(state.player[0]), int(state.opponent[0])
    black, white = (player, opponent) if black_to_move else (opponent, player)
    cells = (_bits_to_rows(black, 8, 8) + 2 * _bits_to_rows(white, 8, 8)).tolist()
    return Grid("squares", 8, 8, cells, [[r * 8 + c for c in range(8)] for r in range(8)],
                [{"action": 64, "name": "pass"}])


def go_grid(game, state) -> Grid:
    n = game.size
    cells = np.asarray(state.board[0], np.int64).reshape(n, n).tolist()
    return Grid("squares", n, n, cells, [[r * n + c for c in range(n)] for r in range(n)],
                [{"action": n * n, "name": "pass"}])


def hex_grid(game, state) -> Grid:
    n = game.size
    cells = np.asarray(state.board[0], np.int64).reshape(n, n).tolist()
    extra = [{"action": n * n, "name": "swap"}] if game.num_actions > n * n else []
    return Grid("hex", n, n, cells, [[r * n + c for c in range(n)] for r in range(n)], extra)


def chomp_grid(game, state) -> Grid:
    rows, cols = game.rows, game.cols
    profile = np.asarray(state.profile[0], np.int64)
    cells = [[1 if c < profile[r] else 0 for c in range(cols)] for r in range(rows)]
    click = [[r * cols + c if c < profile[r] and (r, c) != (0, 0) else None for c in range(cols)]
             for r in range(rows)]
    return Grid("chomp", rows, cols, cells, click, [])


# The games drawn as a grid of cells: (game, state) -> Grid; the others (F-Games) have no board.
GRIDS: GameTable[Callable[..., Grid]] = GameTable("board drawing", {
    "connect4": connect4_grid, "tictactoe": tictactoe_grid, "othello": othello_grid, "go": go_grid,
    "hex": hex_grid, "chomp": chomp_grid})


def grid_of(game: Game, state) -> Grid | None:
    """The drawing of element 0 of ``state`` (the game's entry in GRIDS); None for games
    without a board (F-Games)."""
    decode = GRIDS.get(game)
    return None if decode is None else decode(game, state)
