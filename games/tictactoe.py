"""Tic-tac-toe, the test game: small enough to solve exhaustively in a test.

Cells are numbered ``row * 3 + col`` (row 0 at the top); a board is a 9-bit mask
with bit ``i`` for cell ``i``:

     0 | 1 | 2
    ---+---+---
     3 | 4 | 5
    ---+---+---
     6 | 7 | 8

The state keeps the stones of the player to move and of the opponent, so a
step plays into ``mine`` and then swaps the two.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, square_board_symmetries
from games.descriptors import GameDescriptor

_LINES = np.array([0b000000111, 0b000111000, 0b111000000,  # rows
                   0b001001001, 0b010010010, 0b100100100,  # columns
                   0b100010001, 0b001010100], dtype=np.int64)  # diagonals
_FULL = 0b111111111


class TicTacToeState(NamedTuple):
    mine: np.ndarray  # int64[B], stones of the player to move
    theirs: np.ndarray  # int64[B], stones of the opponent
    moves: np.ndarray  # int64[B], plies played
    over: np.ndarray  # bool[B]


@njit(cache=True)
def _play(mine, theirs, action):
    """One move: (new mine, new theirs, reward for the mover, done)."""
    placed = mine | (np.int64(1) << action)
    for line in _LINES:
        if placed & line == line:
            return theirs, placed, 1.0, True
    if placed | theirs == _FULL:
        return theirs, placed, 0.0, True
    return theirs, placed, 0.0, False


@njit(cache=True)
def _step_kernel(mine, theirs, moves, actions):
    B = mine.shape[0]
    new_mine, new_theirs = np.empty_like(mine), np.empty_like(theirs)
    reward, done = np.zeros(B, np.float32), np.zeros(B, np.bool_)
    for b in range(B):
        new_mine[b], new_theirs[b], reward[b], done[b] = _play(mine[b], theirs[b], actions[b])
    return new_mine, new_theirs, moves + 1, reward, done


@njit(cache=True)
def _expand_kernel(mine, theirs, moves, over):
    B = mine.shape[0]
    child_mine, child_theirs = np.empty(B * 9, np.int64), np.empty(B * 9, np.int64)
    child_moves, child_over = np.empty(B * 9, np.int64), np.zeros(B * 9, np.bool_)
    reward, done, legal = np.zeros((B, 9), np.float32), np.zeros((B, 9), np.bool_), np.zeros((B, 9), np.bool_)
    for b in range(B):
        empty = ~(mine[b] | theirs[b])
        for a in range(9):
            row = b * 9 + a
            child_moves[row] = moves[b] + 1
            if over[b] or not (empty >> a) & 1:
                child_mine[row], child_theirs[row] = mine[b], theirs[b]
                child_moves[row], child_over[row] = moves[b], over[b]
                continue
            legal[b, a] = True
            child_mine[row], child_theirs[row], reward[b, a], done[b, a] = _play(mine[b], theirs[b], a)
            child_over[row] = done[b, a]
    return child_mine, child_theirs, child_moves, child_over, reward, done, legal


class TicTacToe(Game):
    """Tic-tac-toe on 3x3; X moves first. Encoding (2, 3, 3): mover's, opponent's stones."""

    def __init__(self):
        self.name, self.params = "tictactoe", {}
        self.num_actions, self.obs_shape, self.max_length = 9, (2, 3, 3), 9
        self._bits = np.int64(1) << np.arange(9, dtype=np.int64)  # [9]

    def _init(self, batch):
        zeros = np.zeros(batch, np.int64)
        return TicTacToeState(zeros, zeros.copy(), zeros.copy(), np.zeros(batch, bool))

    def terminal(self, state):
        return state.over

    def _legal(self, state):
        return ((state.mine | state.theirs)[:, None] & self._bits[None, :]) == 0  # [B, 9]

    def _step(self, state, actions):
        mine, theirs, moves, reward, done = _step_kernel(state.mine, state.theirs, state.moves, actions)
        return TicTacToeState(mine, theirs, moves, done), reward, done

    def _expand(self, state):
        *children, reward, done, legal = _expand_kernel(state.mine, state.theirs, state.moves, state.over)
        return Expansion(TicTacToeState(*children), reward, done, legal)

    def _encode(self, state):
        planes = np.stack([state.mine, state.theirs], axis=1)[:, :, None] & self._bits  # [B, 2, 9]
        return (planes != 0).astype(np.float32).reshape(-1, 2, 3, 3)

    def symmetries(self):
        return square_board_symmetries(3)

    def action_name(self, action):
        return "abc"[action % 3] + str(3 - action // 3)

    def render_one(self, state, i):
        # X moved first, so X is to move exactly after an even number of plies.
        x_to_move = state.moves[i] % 2 == 0
        x, o = (state.mine[i], state.theirs[i]) if x_to_move else (state.theirs[i], state.mine[i])
        lines = []
        for r in range(3):
            cells = ["X" if x >> (3 * r + c) & 1 else "O" if o >> (3 * r + c) & 1 else "." for c in range(3)]
            lines.append(f"{3 - r} " + " ".join(cells))
        lines.append("  a b c")
        return "\n".join(lines)


# Tic-tac-toe's facts (games.descriptors): not in the papers, so a small network.
DESCRIPTOR = GameDescriptor(
    name="tictactoe", engine=TicTacToe,
    network=dict(kind="mlp", width=64, blocks=2, layers_per_block=2),
    # No paper preset: Table 3 scaled down so that one iteration takes about a second.
    preset={"actors.num_envs": 256, "actors.collect_steps": 16, "actors.epsilon": 0.5, "replay.capacity": 100_000,
            "checkpoint_every": 10, "evaluation.every": 5},
)
