"""Connect Four (7 columns x 6 rows, gravity, four in a row wins) on bitboards.

Bit layout, exactly that of PascalPons/connect4 ``Position.hpp`` so that the strong
solver of ``oracle_service`` can read our states as they are. Each column takes 7
bits: its 6 cells from the bottom up, then one sentinel bit that is always 0. Bit
index = ``col * 7 + row`` with row 0 the bottom row::

      col:   0  1  2  3  4  5  6
    sentinel 6 13 20 27 34 41 48    (always 0)
    row 5    5 12 19 26 33 40 47
    row 4    4 11 18 25 32 39 46
    row 3    3 10 17 24 31 38 45
    row 2    2  9 16 23 30 37 44
    row 1    1  8 15 22 29 36 43
    row 0    0  7 14 21 28 35 42    (bottom)

State, one row per batch element:
  current uint64[B]  stones of the player to move
  mask    uint64[B]  all stones; ``mask ^ current`` = stones of the player who just moved
  moves   int64[B]   plies played so far (0..42)
  over    bool[B]    the game has ended (four in a row or a full board)

Pons' position key is ``current + mask``: unique per position in 49 bits.

Why the sentinel bit: shifting a board by 1 (vertical), 6, 7 or 8 (the diagonals and
horizontal) moves cells to their neighbours without ever joining two columns' ends
into a false line, because the cell a line would wrap through is a sentinel, never
set. Four in a row is then four shift-and operations (see ``_aligned``), and playing
column ``c`` is one addition: ``mask + bottom(c)`` carries up to the lowest empty
cell of column ``c``.

Actions are columns 0..6 left to right; ``action_name`` and the solver's move strings
use 1-based column digits (``"4453"`` = actions ``[3, 3, 4, 2]``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, Symmetry, identity_symmetry
from games.descriptors import GameDescriptor, GtpFacts

# The layout above, for every module that reads these bitboards (the solver, the store).
WIDTH, HEIGHT = 7, 6
COLUMN_BITS = HEIGHT + 1  # bits per column, sentinel included
# Columns from the centre out: more lines pass through the centre, so searches try
# these first and oracles prefer them among equal moves.
CENTRE_FIRST = np.array([3, 2, 4, 1, 5, 0, 6], dtype=np.int64)

# Tables built once; numba freezes these globals into the kernels as constants.
_BOTTOM = np.array([1 << (c * COLUMN_BITS) for c in range(WIDTH)], dtype=np.uint64)  # lowest cell of c
_TOP = np.array([1 << (c * COLUMN_BITS + HEIGHT - 1) for c in range(WIDTH)], dtype=np.uint64)  # top cell
_COLUMN = np.array([((1 << HEIGHT) - 1) << (c * COLUMN_BITS) for c in range(WIDTH)], dtype=np.uint64)
_ZERO = np.uint64(0)
# Shift amounts as uint64: mixing uint64 with int64 makes numba compute in float64.
_S1, _S2 = np.uint64(1), np.uint64(2)  # vertical
_S6, _S12 = np.uint64(COLUMN_BITS - 1), np.uint64(2 * (COLUMN_BITS - 1))  # diagonal "\" (down-right)
_S7, _S14 = np.uint64(COLUMN_BITS), np.uint64(2 * COLUMN_BITS)  # horizontal
_S8, _S16 = np.uint64(COLUMN_BITS + 1), np.uint64(2 * (COLUMN_BITS + 1))  # diagonal "/" (up-right)
_CELLS = WIDTH * HEIGHT


class ConnectFourState(NamedTuple):
    current: np.ndarray  # uint64[B], stones of the player to move
    mask: np.ndarray  # uint64[B], all stones
    moves: np.ndarray  # int64[B], plies played
    over: np.ndarray  # bool[B], game ended


# --------------------------------------------------------------------- kernels


@njit(cache=True)
def _aligned(pos):
    """True if the stones ``pos`` (uint64) hold four in a row in any direction.
    ``m = pos & (pos >> s)`` marks pairs at distance s; ``m & (m >> 2s)`` then marks
    two pairs back to back, i.e. four in a row."""
    m = pos & (pos >> _S7)
    if (m & (m >> _S14)) != _ZERO:
        return True
    m = pos & (pos >> _S6)
    if (m & (m >> _S12)) != _ZERO:
        return True
    m = pos & (pos >> _S8)
    if (m & (m >> _S16)) != _ZERO:
        return True
    m = pos & (pos >> _S1)
    if (m & (m >> _S2)) != _ZERO:
        return True
    return False


@njit(cache=True)
def _play(current, mask, moves, col):
    """Play ``col`` (legal) in one position: (current, mask, moves, reward, done) after."""
    piece = (mask + _BOTTOM[col]) & _COLUMN[col]  # the lowest empty cell of col
    win = _aligned(current | piece)
    n = moves + 1
    # The mover's stones become the opponent's, who is now to move: current ^ mask
    # (taken before adding the piece) are exactly the opponent's stones.
    return current ^ mask, mask | piece, n, 1.0 if win else 0.0, win or n == _CELLS


@njit(cache=True)
def _step_kernel(current, mask, moves, actions):
    B = current.shape[0]
    out_cur = np.empty(B, np.uint64)
    out_mask = np.empty(B, np.uint64)
    out_moves = np.empty(B, np.int64)
    reward = np.empty(B, np.float32)  # [B]
    done = np.empty(B, np.bool_)  # [B]
    for b in range(B):
        out_cur[b], out_mask[b], out_moves[b], reward[b], done[b] = _play(
            current[b], mask[b], moves[b], actions[b])
    return out_cur, out_mask, out_moves, reward, done


@njit(cache=True)
def _legal_kernel(mask):
    B = mask.shape[0]
    legal = np.empty((B, WIDTH), np.bool_)  # [B, A]
    for b in range(B):
        for c in range(WIDTH):
            legal[b, c] = (mask[b] & _TOP[c]) == _ZERO
    return legal


@njit(cache=True)
def _encode_kernel(current, mask):
    B = current.shape[0]
    out = np.zeros((B, 2, HEIGHT, WIDTH), np.float32)  # [B, 2, rows (bottom first), cols]
    for b in range(B):
        mine = current[b]
        theirs = mine ^ mask[b]
        for c in range(WIDTH):
            for r in range(HEIGHT):
                bit = np.uint64(1) << np.uint64(c * COLUMN_BITS + r)
                if mine & bit:
                    out[b, 0, r, c] = 1.0
                elif theirs & bit:
                    out[b, 1, r, c] = 1.0
    return out


@njit(cache=True)
def _expand_kernel(current, mask, moves, over):
    B = current.shape[0]
    n = B * WIDTH
    ch_cur = np.empty(n, np.uint64)
    ch_mask = np.empty(n, np.uint64)
    ch_moves = np.empty(n, np.int64)
    ch_over = np.empty(n, np.bool_)
    reward = np.zeros((B, WIDTH), np.float32)  # [B, A]
    done = np.zeros((B, WIDTH), np.bool_)  # [B, A]
    legal = np.zeros((B, WIDTH), np.bool_)  # [B, A]
    for b in range(B):
        for c in range(WIDTH):
            i = b * WIDTH + c
            if not over[b] and (mask[b] & _TOP[c]) == _ZERO:
                legal[b, c] = True
                ch_cur[i], ch_mask[i], ch_moves[i], reward[b, c], done[b, c] = _play(
                    current[b], mask[b], moves[b], c)
                ch_over[i] = done[b, c]
            else:  # illegal: a copy of the parent, a valid state of no meaning
                ch_cur[i], ch_mask[i], ch_moves[i], ch_over[i] = current[b], mask[b], moves[b], over[b]
    return ch_cur, ch_mask, ch_moves, ch_over, reward, done, legal


# ------------------------------------------------------------------- the game


class ConnectFour(Game):
    """Standard Connect Four. ``obs_shape = (2, 6, 7)``: channel 0 the stones of the
    player to move, channel 1 the opponent's; axis 1 is the row with **row 0 = the
    bottom row** (as in the bit layout), axis 2 the column 0..6 left to right."""

    def __init__(self):
        self.name = "connect4"
        self.params = {}
        self.num_actions = WIDTH
        self.obs_shape = (2, HEIGHT, WIDTH)
        self.max_length = _CELLS

    def _init(self, batch: int) -> ConnectFourState:
        return ConnectFourState(np.zeros(batch, np.uint64), np.zeros(batch, np.uint64),
                                np.zeros(batch, np.int64), np.zeros(batch, bool))

    def _legal(self, state: ConnectFourState) -> np.ndarray:
        return _legal_kernel(state.mask)

    def _step(self, state: ConnectFourState, actions: np.ndarray):
        cur, mask, moves, reward, done = _step_kernel(state.current, state.mask, state.moves, actions)
        return ConnectFourState(cur, mask, moves, done.copy()), reward, done

    def _encode(self, state: ConnectFourState) -> np.ndarray:
        return _encode_kernel(state.current, state.mask)

    def _expand(self, state: ConnectFourState) -> Expansion:
        cur, mask, moves, over, reward, done, legal = _expand_kernel(
            state.current, state.mask, state.moves, state.over)
        return Expansion(ConnectFourState(cur, mask, moves, over), reward, done, legal)

    def terminal(self, state: ConnectFourState) -> np.ndarray:
        return state.over.copy()

    def symmetries(self) -> list[Symmetry]:
        """Identity and the left-right mirror (column c <-> 6 - c)."""
        mirror = Symmetry("mirror", lambda obs: np.ascontiguousarray(obs[..., ::-1]),
                          np.arange(WIDTH - 1, -1, -1, dtype=np.int64))
        return [identity_symmetry(WIDTH), mirror]

    def action_name(self, action: int) -> str:
        return str(int(action) + 1)

    def illegal_reason(self, state: ConnectFourState, action: int) -> str:
        return f"is illegal: column {action + 1} is full"

    def render_one(self, state: ConnectFourState, i: int) -> str:
        """Rows top to bottom, X = first player, O = second, columns numbered 1..7."""
        cur, mask, moves = int(state.current[i]), int(state.mask[i]), int(state.moves[i])
        # The first player is to move after an even number of plies.
        x_stones = cur if moves % 2 == 0 else cur ^ mask
        lines = []
        for r in range(HEIGHT - 1, -1, -1):
            cells = []
            for c in range(WIDTH):
                bit = 1 << (c * COLUMN_BITS + r)
                cells.append("X" if x_stones & bit else "O" if mask & bit else ".")
            lines.append(f"{r + 1} " + " ".join(cells))
        lines.append("  " + " ".join(str(c + 1) for c in range(WIDTH)))
        if not state.over[i]:
            status = f"{'X' if moves % 2 == 0 else 'O'} to move"
        elif _aligned(np.uint64(cur ^ mask)):
            status = f"{'O' if moves % 2 == 0 else 'X'} wins"
        else:
            status = "draw"
        lines.append(f"ply {moves}, {status}")
        return "\n".join(lines)


# ------------------------------------------------------- solver move strings


def moves_from_digits(s: str) -> list[int]:
    """Actions of a solver move string of 1-based column digits: ``"4453" -> [3, 3, 4, 2]``."""
    actions = []
    for i, ch in enumerate(s):
        if ch not in "1234567":
            raise ValueError(f"connect4 move string {s!r}: bad character {ch!r} at position {i}; "
                             f"expected column digits 1..{WIDTH}")
        actions.append(int(ch) - 1)
    return actions


def moves_to_digits(actions) -> str:
    """The solver move string of a list of actions (columns 0..6): ``[3, 3, 4, 2] -> "4453"``."""
    out = []
    for a in actions:
        if not 0 <= int(a) < WIDTH:
            raise ValueError(f"connect4 action {a} is out of range 0..{WIDTH - 1}")
        out.append(str(int(a) + 1))
    return "".join(out)


# What the rest of the system knows about Connect Four (games.descriptors).
DESCRIPTOR = GameDescriptor(
    name="connect4", engine=ConnectFour,
    oracle="evaluation.oracles:connect4_oracle", oracle_service=True,  # the Pons solver, in the service
    labeller="actors.labels:Connect4Labels",
    suites="evaluation.suites:connect4_suites", auto_suites="default",
    gtp=GtpFacts(letters="abcdefg", board_size=WIDTH, drop_rows=HEIGHT),
    replay_digits="1234567",  # the solver's move strings: columns 1..7
    score_reading="board.marks:pons_reading",
    grid="board.grid:connect4_grid",
    network=dict(kind="mlp", blocks=4, layers_per_block=4, symmetrize=True),  # AVI paper C.1
    # Play and traces from every opening take minutes (docs/evaluation.md): every 10th
    # evaluation, so that they cost a fraction of the run.
    preset={"evaluation.play_every": 10},
    # The AZAL paper's trace metrics (Tables 1 and 2) beside play, for AlphaZero and AZAL alike.
    alphazero_changes={"evaluation.suites": "connect4-uniform,connect4-eps-optimal,connect4-play,connect4-traces"},
    # AZAL labels every ply, the opening included, where the AZAL paper finds the oracle's
    # guidance matters most: the solver's 12-ply book answers a position before ply 12 in
    # milliseconds (it took seconds to minutes without it).
    azal_changes={"actors.label_min_ply": 0},
)
