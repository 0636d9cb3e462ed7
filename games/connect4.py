"""Connect Four (gravity, four in a row wins) on bitboards, on boards of 4 to 9 columns
and 4 to 7 rows: ``games.make("connect4")`` is the standard 7 columns x 6 rows,
``games.make("connect4", width=5, height=4)`` a smaller one.

Bit layout, exactly that of PascalPons/connect4 ``Position.hpp`` so that the strong
solver of ``oracle_service`` can read our states as they are. Each column takes
``height + 1`` bits: its ``height`` cells from the bottom up, then one sentinel bit that
is always 0. Bit index = ``col * (height + 1) + row`` with row 0 the bottom row; on the
standard 7x6 board::

      col:   0  1  2  3  4  5  6
    sentinel 6 13 20 27 34 41 48    (always 0)
    row 5    5 12 19 26 33 40 47
    row 4    4 11 18 25 32 39 46
    row 3    3 10 17 24 31 38 45
    row 2    2  9 16 23 30 37 44
    row 1    1  8 15 22 29 36 43
    row 0    0  7 14 21 28 35 42    (bottom)

A board fits one uint64 while ``(height + 1) * width <= 64``: that and the column and
row ranges are the sizes there are (:func:`check_size`).

State, one row per batch element:
  current uint64[B]  stones of the player to move
  mask    uint64[B]  all stones; ``mask ^ current`` = stones of the player who just moved
  moves   int64[B]   plies played so far (0..width * height)
  over    bool[B]    the game has ended (four in a row or a full board)

Pons' position key is ``current + mask``: unique per position in ``(height + 1) * width``
bits (49 on 7x6).

Why the sentinel bit: shifting a board by 1 (vertical), height, height + 1 or height + 2
(the diagonals and horizontal) moves cells to their neighbours without ever joining two
columns' ends into a false line, because the cell a line would wrap through is a
sentinel, never set. Four in a row is then four shift-and operations (see ``_aligned``),
and playing column ``c`` is one addition: ``mask + bottom(c)`` carries up to the lowest
empty cell of column ``c``.

Actions are columns 0..width-1 left to right; ``action_name`` and the solver's move
strings use 1-based column digits (``"4453"`` = actions ``[3, 3, 4, 2]``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, Symmetry, identity_symmetry
from games.descriptors import GameDescriptor, GtpFacts

# The standard board, the default size, and its layout, for the modules that read only
# 7x6 bitboards (the books, the store, BitBully's adapter).
WIDTH, HEIGHT = 7, 6
COLUMN_BITS = HEIGHT + 1  # bits per column, sentinel included
# The sizes there are: a board and its sentinels must fit one uint64.
WIDTHS, HEIGHTS, MAX_BITS = range(4, 10), range(4, 8), 64


def check_size(width: int, height: int) -> None:
    """ValueError, naming the rule, unless ``width`` x ``height`` is a board there is."""
    for name, value, allowed in (("width", width, WIDTHS), ("height", height, HEIGHTS)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value not in allowed:
            raise ValueError(f"connect4 {name} must be an integer in {allowed.start}..{allowed.stop - 1}, "
                             f"got {value!r}; the sizes are width 4..9 x height 4..7 with "
                             f"(height + 1) * width <= {MAX_BITS}")
    if (height + 1) * width > MAX_BITS:
        raise ValueError(f"connect4 {width}x{height}: (height + 1) * width = {(height + 1) * width} bits "
                         f"do not fit one uint64 ((height + 1) * width <= {MAX_BITS}); the sizes are "
                         f"{', '.join(f'{w}x{h}' for w, h in sizes())}")


def sizes() -> list[tuple[int, int]]:
    """Every (width, height) there is, narrowest first."""
    return [(w, h) for w in WIDTHS for h in HEIGHTS if (h + 1) * w <= MAX_BITS]


def centre_first(width: int) -> np.ndarray:
    """Columns from the centre out, as Pons' ``columnOrder`` (on an even width the right
    one of the two centre columns, ``width // 2``, first): more lines pass through the
    centre, so the solver's searches try these first."""
    half = width // 2
    return np.array([half + (1 - 2 * (i % 2)) * ((i + 1) // 2) for i in range(width)], dtype=np.int64)


class ConnectFourState(NamedTuple):
    current: np.ndarray  # uint64[B], stones of the player to move
    mask: np.ndarray  # uint64[B], all stones
    moves: np.ndarray  # int64[B], plies played
    over: np.ndarray  # bool[B], game ended


# --------------------------------------------------------------------- kernels
#
# The kernels take the board's width and height as arguments rather than reading module
# constants: one compiled (and cached) version serves every size. A copy per size with the
# geometry frozen in as constants was the alternative; numba caches such copies (closures
# over the size) only as long as they call no other kernel, and these do. Measured on 7x6
# against the constant-geometry kernels, side by side: stepping and expanding as fast or
# faster, the legal mask 4 times slower until it got the standard board's loop of
# constant length below.

_ZERO, _ONE = np.uint64(0), np.uint64(1)


@njit(cache=True)
def _aligned(pos, height):
    """True if the stones ``pos`` (uint64) hold four in a row in any direction on a board
    of ``height`` rows. ``m = pos & (pos >> s)`` marks pairs at distance s; ``m & (m >> 2s)``
    then marks two pairs back to back, i.e. four in a row. Shifts as uint64: mixing
    uint64 with int64 makes numba compute in float64."""
    s = np.uint64(height + 1)  # horizontal
    m = pos & (pos >> s)
    if (m & (m >> (s + s))) != _ZERO:
        return True
    s = np.uint64(height)  # diagonal "\" (down-right)
    m = pos & (pos >> s)
    if (m & (m >> (s + s))) != _ZERO:
        return True
    s = np.uint64(height + 2)  # diagonal "/" (up-right)
    m = pos & (pos >> s)
    if (m & (m >> (s + s))) != _ZERO:
        return True
    m = pos & (pos >> _ONE)  # vertical
    if (m & (m >> np.uint64(2))) != _ZERO:
        return True
    return False


@njit(cache=True)
def _play(current, mask, moves, col, height, cells):
    """Play ``col`` (legal) in one position: (current, mask, moves, reward, done) after."""
    low = np.uint64(col * (height + 1))  # the bit of col's bottom cell
    column = np.uint64((1 << height) - 1) << low
    piece = (mask + (_ONE << low)) & column  # the lowest empty cell of col
    win = _aligned(current | piece, height)
    n = moves + 1
    # The mover's stones become the opponent's, who is now to move: current ^ mask
    # (taken before adding the piece) are exactly the opponent's stones.
    return current ^ mask, mask | piece, n, 1.0 if win else 0.0, win or n == cells


@njit(cache=True)
def _step_kernel(current, mask, moves, actions, width, height):
    B = current.shape[0]
    out_cur = np.empty(B, np.uint64)
    out_mask = np.empty(B, np.uint64)
    out_moves = np.empty(B, np.int64)
    reward = np.empty(B, np.float32)  # [B]
    done = np.empty(B, np.bool_)  # [B]
    cells = width * height
    for b in range(B):
        out_cur[b], out_mask[b], out_moves[b], reward[b], done[b] = _play(
            current[b], mask[b], moves[b], actions[b], height, cells)
    return out_cur, out_mask, out_moves, reward, done


_TOP = np.array([1 << (c * COLUMN_BITS + HEIGHT - 1) for c in range(WIDTH)], dtype=np.uint64)  # 7x6 top cells


@njit(cache=True)
def _legal_kernel(mask, width, height):
    B = mask.shape[0]
    legal = np.empty((B, width), np.bool_)  # [B, A]
    if width == WIDTH and height == HEIGHT:
        # The standard board: a loop of constant length over constant cells, which the
        # compiler unrolls (4 times the states a second of the general loop below).
        for b in range(B):
            for c in range(WIDTH):
                legal[b, c] = (mask[b] & _TOP[c]) == _ZERO
        return legal
    for c in range(width):
        top = _ONE << np.uint64(c * (height + 1) + height - 1)
        for b in range(B):
            legal[b, c] = (mask[b] & top) == _ZERO
    return legal


@njit(cache=True)
def _encode_kernel(current, mask, width, height):
    B = current.shape[0]
    out = np.zeros((B, 2, height, width), np.float32)  # [B, 2, rows (bottom first), cols]
    for b in range(B):
        mine = current[b]
        theirs = mine ^ mask[b]
        for c in range(width):
            for r in range(height):
                bit = _ONE << np.uint64(c * (height + 1) + r)
                if mine & bit:
                    out[b, 0, r, c] = 1.0
                elif theirs & bit:
                    out[b, 1, r, c] = 1.0
    return out


@njit(cache=True)
def _expand_kernel(current, mask, moves, over, width, height):
    B = current.shape[0]
    n = B * width
    ch_cur = np.empty(n, np.uint64)
    ch_mask = np.empty(n, np.uint64)
    ch_moves = np.empty(n, np.int64)
    ch_over = np.empty(n, np.bool_)
    reward = np.zeros((B, width), np.float32)  # [B, A]
    done = np.zeros((B, width), np.bool_)  # [B, A]
    legal = np.zeros((B, width), np.bool_)  # [B, A]
    cells = width * height
    for b in range(B):
        for c in range(width):
            i = b * width + c
            top = _ONE << np.uint64(c * (height + 1) + height - 1)
            if not over[b] and (mask[b] & top) == _ZERO:
                legal[b, c] = True
                ch_cur[i], ch_mask[i], ch_moves[i], reward[b, c], done[b, c] = _play(
                    current[b], mask[b], moves[b], c, height, cells)
                ch_over[i] = done[b, c]
            else:  # illegal: a copy of the parent, a valid state of no meaning
                ch_cur[i], ch_mask[i], ch_moves[i], ch_over[i] = current[b], mask[b], moves[b], over[b]
    return ch_cur, ch_mask, ch_moves, ch_over, reward, done, legal


# ------------------------------------------------------------------- the game


class ConnectFour(Game):
    """Connect Four on ``width`` columns x ``height`` rows (the standard 7x6 by default;
    :func:`check_size` says which exist). ``obs_shape = (2, height, width)``: channel 0
    the stones of the player to move, channel 1 the opponent's; axis 1 is the row with
    **row 0 = the bottom row** (as in the bit layout), axis 2 the column left to right."""

    def __init__(self, width: int = WIDTH, height: int = HEIGHT):
        check_size(width, height)
        self.name = "connect4"
        self.width, self.height = int(width), int(height)
        # The standard board's params stay {}: records, datasets and checkpoints of 7x6
        # games were written with {} and compare equal to it.
        self.params = {} if (self.width, self.height) == (WIDTH, HEIGHT) else {"width": self.width,
                                                                               "height": self.height}
        self.num_actions = self.width
        self.obs_shape = (2, self.height, self.width)
        self.max_length = self.width * self.height

    def _init(self, batch: int) -> ConnectFourState:
        return ConnectFourState(np.zeros(batch, np.uint64), np.zeros(batch, np.uint64),
                                np.zeros(batch, np.int64), np.zeros(batch, bool))

    def _legal(self, state: ConnectFourState) -> np.ndarray:
        return _legal_kernel(state.mask, self.width, self.height)

    def _step(self, state: ConnectFourState, actions: np.ndarray):
        cur, mask, moves, reward, done = _step_kernel(state.current, state.mask, state.moves, actions,
                                                      self.width, self.height)
        return ConnectFourState(cur, mask, moves, done.copy()), reward, done

    def _encode(self, state: ConnectFourState) -> np.ndarray:
        return _encode_kernel(state.current, state.mask, self.width, self.height)

    def _expand(self, state: ConnectFourState) -> Expansion:
        cur, mask, moves, over, reward, done, legal = _expand_kernel(
            state.current, state.mask, state.moves, state.over, self.width, self.height)
        return Expansion(ConnectFourState(cur, mask, moves, over), reward, done, legal)

    def terminal(self, state: ConnectFourState) -> np.ndarray:
        return state.over.copy()

    def symmetries(self) -> list[Symmetry]:
        """Identity and the left-right mirror (column c <-> width - 1 - c)."""
        mirror = Symmetry("mirror", lambda obs: np.ascontiguousarray(obs[..., ::-1]),
                          np.arange(self.width - 1, -1, -1, dtype=np.int64))
        return [identity_symmetry(self.width), mirror]

    def action_name(self, action: int) -> str:
        return str(int(action) + 1)

    def illegal_reason(self, state: ConnectFourState, action: int) -> str:
        return f"is illegal: column {action + 1} is full"

    def render_one(self, state: ConnectFourState, i: int) -> str:
        """Rows top to bottom, X = first player, O = second, columns numbered from 1."""
        cur, mask, moves = int(state.current[i]), int(state.mask[i]), int(state.moves[i])
        # The first player is to move after an even number of plies.
        x_stones = cur if moves % 2 == 0 else cur ^ mask
        lines = []
        for r in range(self.height - 1, -1, -1):
            cells = []
            for c in range(self.width):
                bit = 1 << (c * (self.height + 1) + r)
                cells.append("X" if x_stones & bit else "O" if mask & bit else ".")
            lines.append(f"{r + 1} " + " ".join(cells))
        lines.append("  " + " ".join(str(c + 1) for c in range(self.width)))
        if not state.over[i]:
            status = f"{'X' if moves % 2 == 0 else 'O'} to move"
        elif _aligned(np.uint64(cur ^ mask), self.height):
            status = f"{'O' if moves % 2 == 0 else 'X'} wins"
        else:
            status = "draw"
        lines.append(f"ply {moves}, {status}")
        return "\n".join(lines)


# ------------------------------------------------------- solver move strings


def moves_from_digits(s: str, width: int = WIDTH) -> list[int]:
    """Actions of a solver move string of 1-based column digits: ``"4453" -> [3, 3, 4, 2]``;
    a digit above ``width`` is an error."""
    digits = "123456789"[:width]
    actions = []
    for i, ch in enumerate(s):
        if ch not in digits:
            raise ValueError(f"connect4 move string {s!r}: bad character {ch!r} at position {i}; "
                             f"expected column digits 1..{width}")
        actions.append(int(ch) - 1)
    return actions


def moves_to_digits(actions, width: int = WIDTH) -> str:
    """The solver move string of a list of actions (columns 0..width-1):
    ``[3, 3, 4, 2] -> "4453"``."""
    out = []
    for a in actions:
        if not 0 <= int(a) < width:
            raise ValueError(f"connect4 action {a} is out of range 0..{width - 1}")
        out.append(str(int(a) + 1))
    return "".join(out)


def gtp_columns(game: ConnectFour) -> tuple[int, int]:
    """The board GTP tells (``boardsize``: the columns) and the rows of a column."""
    return game.width, game.height


# Connect Four's facts (games.descriptors).
DESCRIPTOR = GameDescriptor(
    name="connect4", engine=ConnectFour,
    gtp=GtpFacts(letters="abcdefghi", drops=True, columns=gtp_columns),
    replay_digits="1234567",  # the solver's move strings: columns 1..7
    network=dict(kind="mlp", blocks=4, layers_per_block=4, symmetrize=True),  # AVI paper C.1
    # Play and traces from every opening take minutes (docs/evaluation.md): every 10th
    # evaluation, so that they cost a fraction of the run.
    preset={"evaluation.play_every": 10},
    # On a board other than 7x6 (its sets built on first use, play in seconds): 32 steps an
    # iteration as on Hex's smaller boards, Hex's 2x2 network (3.3 times the updates a
    # minute of the paper's 4x4), the paper's epsilon 0.3, which on 5x4 in the same 12
    # minutes gave a third less regret than epsilon 0.1, and a replay of 32,768 rows (the
    # last 8 iterations' rows), whose targets are fresh: on 5x4 it gave an error rate of
    # 0.10 against the solver at 12,800 updates where the paper's 1,000,000 gave 0.50
    # (docs/training.md).
    preset_at=lambda params: ({"actors.collect_steps": 32, "actors.epsilon": 0.3, "network.blocks": 2,
                               "network.layers_per_block": 2, "replay.capacity": 32768,
                               "evaluation.play_every": 4}
                              if (params.get("width", WIDTH), params.get("height", HEIGHT)) != (WIDTH, HEIGHT)
                              else {}),
    # AlphaZero's and AZAL's changes here (the trace suites, labels at every ply) are theirs
    # (algorithms/alphazero.py, azal.py).
)
