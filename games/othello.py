"""Othello (Reversi) on an 8x8 board, on bitboards.

Each side's discs are one uint64, bit index = ``row * 8 + col``, row 0 the top row
("1") and col 0 the left column ("a"); the action of a placement is its bit index::

          a  b  c  d  e  f  g  h
      1   0  1  2  3  4  5  6  7
      2   8  9 10 11 12 13 14 15
      3  16 17 18 19 20 21 22 23
      4  24 25 26 27 28 29 30 31        start: d4 (27), e5 (36) white,
      5  32 33 34 35 36 37 38 39               e4 (28), d5 (35) black;
      6  40 41 42 43 44 45 46 47        black moves first
      7  48 49 50 51 52 53 54 55
      8  56 57 58 59 60 61 62 63        action 64 = pass

Moving one square is a shift: east ``<< 1``, west ``>> 1``, south (down a row)
``<< 8``, north ``>> 8``, and the diagonals ``<< 9``, ``<< 7``, ``>> 9``, ``>> 7``. A
horizontal or diagonal shift carries column h over into column a of the next row
(and back), so runs of opponent discs in those directions are grown only through
columns b..g (``_INNER``). That loses nothing: a run flanked on both ends lies
strictly between two squares of one line, never on an edge column. And it makes the
last shift, from the run to the square that closes it, wrap-free. Vertical shifts
simply drop off the ends of the 64 bits.

Legal placements of every direction at once come from a dumb7fill (``_moves``):
runs of opponent discs grown from the mover's discs, one square past their end. The
discs a placement flips are found per direction the same way, from the placed disc
(``_flips``).

State, one row per batch element, always from the point of view of the player to move:
  player     uint64[B]  discs of the player to move
  opponent   uint64[B]  discs of the other player
  placements uint64[B]  the squares open to the player to move (0: pass, or over)
  to_play    int8[B]    0 black, 1 white: who ``player`` is (for people; rules ignore it)
  moves      int64[B]   plies played, passes included
  over       bool[B]    neither player can place a disc

Rules: a player with no placement must pass, and pass is legal only then. The game
ends when neither player can place (a full board included), and it is detected in the
step that makes it so, so a game never ends on a pass. The winner has more discs;
empty squares count for no one.

``max_length = 120``: there are at most 60 placements (each fills one of the 60 empty
squares), the first move of the game is a placement, a pass is followed by a
placement (it is only forced while the other player can move) and two passes in a
row end the game before they happen, so every pass is matched with the placement after
it and there are at most 59 passes: 119 plies at most, rounded up to 120.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, Symmetry, square_board_symmetries
from games.descriptors import GameDescriptor, GtpFacts

SIZE = 8
CELLS = SIZE * SIZE
PASS = CELLS  # the action index of a pass
NUM_ACTIONS = CELLS + 1
MAX_LENGTH = 120  # see the header: 60 placements + at most 59 passes, rounded up

# Constants as uint64: mixing uint64 with int64 makes numba compute in float64.
_ZERO, _ONE = np.uint64(0), np.uint64(1)
_INNER = np.uint64(0x7E7E7E7E7E7E7E7E)  # columns b..g: where a horizontal/diagonal run may pass
_S1, _S7, _S8, _S9 = np.uint64(1), np.uint64(7), np.uint64(8), np.uint64(9)
_S2, _S4, _S56 = np.uint64(2), np.uint64(4), np.uint64(56)
_M1 = np.uint64(0x5555555555555555)  # popcount (SWAR) masks
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
# The start: black (to move) on e4, d5; white on d4, e5.
_START_BLACK = np.uint64((1 << 28) | (1 << 35))
_START_WHITE = np.uint64((1 << 27) | (1 << 36))


class OthelloState(NamedTuple):
    player: np.ndarray  # uint64[B], discs of the player to move
    opponent: np.ndarray  # uint64[B], discs of the other player
    placements: np.ndarray  # uint64[B], squares open to the player to move (a cache)
    to_play: np.ndarray  # int8[B], 0 black, 1 white
    moves: np.ndarray  # int64[B], plies played (passes included)
    over: np.ndarray  # bool[B], game ended


# --------------------------------------------------------------------- kernels


@njit(cache=True)
def _popcount(x):
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return np.int64((x * _H01) >> _S56)


@njit(cache=True)
def _run_left(seed, mask, s):
    """Squares reached from ``seed`` by runs of ``mask`` squares going ``<< s`` (up to
    6 long: a run flanked on both ends inside an 8-square line)."""
    t = mask & (seed << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    t |= mask & (t << s)
    return t


@njit(cache=True)
def _run_right(seed, mask, s):
    """As ``_run_left`` going ``>> s``."""
    t = mask & (seed >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    t |= mask & (t >> s)
    return t


@njit(cache=True)
def _moves(p, o):
    """Bitboard of the legal placements of the player with discs ``p`` against ``o``:
    the empty squares just past a run of ``o`` discs that starts next to a ``p`` disc."""
    oi = o & _INNER
    m = _run_left(p, oi, _S1) << _S1
    m |= _run_right(p, oi, _S1) >> _S1
    m |= _run_left(p, o, _S8) << _S8
    m |= _run_right(p, o, _S8) >> _S8
    m |= _run_left(p, oi, _S7) << _S7
    m |= _run_right(p, oi, _S7) >> _S7
    m |= _run_left(p, oi, _S9) << _S9
    m |= _run_right(p, oi, _S9) >> _S9
    return m & ~(p | o)


@njit(cache=True)
def _flips(move, p, o):
    """The ``o`` discs flipped by placing the disc ``move`` (one bit) for ``p``: per
    direction, the run of ``o`` discs from ``move`` if a ``p`` disc closes it."""
    oi = o & _INNER
    f = _ZERO
    t = _run_left(move, oi, _S1)
    if (t << _S1) & p:
        f |= t
    t = _run_right(move, oi, _S1)
    if (t >> _S1) & p:
        f |= t
    t = _run_left(move, o, _S8)
    if (t << _S8) & p:
        f |= t
    t = _run_right(move, o, _S8)
    if (t >> _S8) & p:
        f |= t
    t = _run_left(move, oi, _S7)
    if (t << _S7) & p:
        f |= t
    t = _run_right(move, oi, _S7)
    if (t >> _S7) & p:
        f |= t
    t = _run_left(move, oi, _S9)
    if (t << _S9) & p:
        f |= t
    t = _run_right(move, oi, _S9)
    if (t >> _S9) & p:
        f |= t
    return f


@njit(cache=True)
def _play(p, o, action):
    """Play a legal ``action`` for ``p``: (player, opponent, placements, over, reward)
    after it, seen from the next player to move; the reward is the mover's."""
    if action != PASS:
        move = _ONE << np.uint64(action)
        f = _flips(move, p, o)
        p = p | move | f
        o = o & ~f
    placements = _moves(o, p)  # the opponent is to move next
    over = placements == _ZERO and _moves(p, o) == _ZERO
    reward = np.float32(0.0)
    if over:
        mine, theirs = _popcount(p), _popcount(o)
        reward = np.float32(1.0) if mine > theirs else np.float32(-1.0) if mine < theirs else np.float32(0.0)
    return o, p, placements, over, reward


@njit(cache=True)
def _step_kernel(player, opponent, to_play, moves, actions):
    B = player.shape[0]
    out_p = np.empty(B, np.uint64)
    out_o = np.empty(B, np.uint64)
    out_placements = np.empty(B, np.uint64)
    out_to_play = np.empty(B, np.int8)
    out_moves = np.empty(B, np.int64)
    over = np.empty(B, np.bool_)  # [B]
    reward = np.empty(B, np.float32)  # [B]
    for b in range(B):
        out_p[b], out_o[b], out_placements[b], over[b], reward[b] = _play(player[b], opponent[b], actions[b])
        out_to_play[b] = 1 - to_play[b]
        out_moves[b] = moves[b] + 1
    return out_p, out_o, out_placements, out_to_play, out_moves, over, reward


@njit(cache=True)
def _legal_kernel(placements, over):
    B = placements.shape[0]
    legal = np.empty((B, NUM_ACTIONS), np.bool_)  # [B, A]
    for b in range(B):
        bits = placements[b]
        for a in range(CELLS):
            legal[b, a] = (bits >> np.uint64(a)) & _ONE
        legal[b, PASS] = bits == _ZERO and not over[b]
    return legal


@njit(cache=True)
def _encode_kernel(player, opponent):
    B = player.shape[0]
    # Bit s is square s = row * 8 + col, so the flat planes are already row-major; a
    # branch-free store of every bit is ~10x faster than zero-filling and testing.
    out = np.empty((B, 2 * CELLS), np.float32)  # [B, 2 * 64]
    for b in range(B):
        p, o = player[b], opponent[b]
        for s in range(CELLS):
            out[b, s] = np.float32((p >> np.uint64(s)) & _ONE)
        for s in range(CELLS):
            out[b, CELLS + s] = np.float32((o >> np.uint64(s)) & _ONE)
    return out.reshape(B, 2, SIZE, SIZE)  # [B, 2, row, col]


@njit(cache=True)
def _expand_kernel(player, opponent, placements, to_play, moves, over):
    B, A = player.shape[0], NUM_ACTIONS
    n = B * A
    ch_p = np.empty(n, np.uint64)
    ch_o = np.empty(n, np.uint64)
    ch_placements = np.empty(n, np.uint64)
    ch_to_play = np.empty(n, np.int8)
    ch_moves = np.empty(n, np.int64)
    ch_over = np.empty(n, np.bool_)
    reward = np.zeros((B, A), np.float32)  # [B, A]
    done = np.zeros((B, A), np.bool_)  # [B, A]
    legal = np.zeros((B, A), np.bool_)  # [B, A]
    for b in range(B):
        p, o, bits = player[b], opponent[b], placements[b]
        for a in range(A):
            i = b * A + a
            if a == PASS:
                ok = bits == _ZERO and not over[b]
            else:
                ok = ((bits >> np.uint64(a)) & _ONE) != _ZERO
            if ok:
                legal[b, a] = True
                ch_p[i], ch_o[i], ch_placements[i], ch_over[i], reward[b, a] = _play(p, o, a)
                done[b, a] = ch_over[i]
                ch_to_play[i] = 1 - to_play[b]
                ch_moves[i] = moves[b] + 1
            else:  # illegal: a copy of the parent, a valid state of no meaning
                ch_p[i], ch_o[i], ch_placements[i] = p, o, bits
                ch_to_play[i], ch_moves[i], ch_over[i] = to_play[b], moves[b], over[b]
    return ch_p, ch_o, ch_placements, ch_to_play, ch_moves, ch_over, reward, done, legal


@njit(cache=True)
def _status_kernel(player, opponent):
    """(placements, over) of hand-built positions."""
    B = player.shape[0]
    placements = np.empty(B, np.uint64)
    over = np.empty(B, np.bool_)
    for b in range(B):
        placements[b] = _moves(player[b], opponent[b])
        over[b] = placements[b] == _ZERO and _moves(opponent[b], player[b]) == _ZERO
    return placements, over


def _bits_of(boards: np.ndarray) -> np.ndarray:
    """uint64[B] bitboards of truthy [B, 8, 8] boards (bit row*8+col)."""
    flat = boards.reshape(-1, CELLS) != 0  # [B, 64]
    return np.packbits(flat, axis=1, bitorder="little").view("<u8").reshape(-1).astype(np.uint64)


# ------------------------------------------------------------------- the game


class Othello(Game):
    """Standard 8x8 Othello. ``obs_shape = (2, 8, 8)``: channel 0 the discs of the
    player to move, channel 1 the opponent's; axes 1 and 2 are row (0 = "1", top) and
    column (0 = "a"). Actions ``row * 8 + col``, pass = 64."""

    def __init__(self):
        self.name = "othello"
        self.params = {}
        self.num_actions = NUM_ACTIONS
        self.obs_shape = (2, SIZE, SIZE)
        self.max_length = MAX_LENGTH

    def _init(self, batch: int) -> OthelloState:
        p = np.full(batch, _START_BLACK, np.uint64)
        o = np.full(batch, _START_WHITE, np.uint64)
        placements, over = _status_kernel(p, o)
        return OthelloState(p, o, placements, np.zeros(batch, np.int8), np.zeros(batch, np.int64), over)

    def from_boards(self, mover, opponent, to_play=0, moves=None) -> OthelloState:
        """States of hand-built positions: ``mover`` and ``opponent`` are [B, 8, 8]
        boards (truthy = a disc of that side) seen as in the encoding, ``to_play`` says
        who the mover is (0 black, 1 white). Whether the mover must pass and whether
        the game is over follow from the discs. ``moves`` defaults to the number of
        placements (discs beyond the first four): passes before are unknown."""
        mover, opponent = np.asarray(mover), np.asarray(opponent)
        if mover.shape[-2:] != (SIZE, SIZE) or opponent.shape[-2:] != (SIZE, SIZE):
            raise ValueError(f"othello: boards must have shape [B, 8, 8], got {mover.shape} "
                             f"and {opponent.shape}")
        p, o = _bits_of(mover), _bits_of(opponent)
        if p.shape != o.shape:
            raise ValueError(f"othello: mover and opponent boards differ in batch size "
                             f"({p.shape[0]} and {o.shape[0]})")
        if (p & o).any():
            raise ValueError("othello: mover and opponent boards overlap (a square holds two discs)")
        B = p.shape[0]
        to_play = np.broadcast_to(np.asarray(to_play, np.int8), (B,)).copy()
        if not np.isin(to_play, (0, 1)).all():
            raise ValueError("othello: to_play must be 0 (black) or 1 (white)")
        if moves is None:
            discs = (mover.reshape(B, -1) != 0).sum(1) + (opponent.reshape(B, -1) != 0).sum(1)
            moves = np.maximum(discs - 4, 0)
        moves = np.broadcast_to(np.asarray(moves, np.int64), (B,)).copy()
        placements, over = _status_kernel(p, o)
        return OthelloState(p, o, placements, to_play, moves, over)

    def _legal(self, state: OthelloState) -> np.ndarray:
        return _legal_kernel(state.placements, state.over)

    def _step(self, state: OthelloState, actions: np.ndarray):
        p, o, placements, to_play, moves, over, reward = _step_kernel(
            state.player, state.opponent, state.to_play, state.moves, actions)
        return OthelloState(p, o, placements, to_play, moves, over), reward, over.copy()

    def _encode(self, state: OthelloState) -> np.ndarray:
        return _encode_kernel(state.player, state.opponent)

    def _expand(self, state: OthelloState) -> Expansion:
        p, o, placements, to_play, moves, over, reward, done, legal = _expand_kernel(
            state.player, state.opponent, state.placements, state.to_play, state.moves, state.over)
        return Expansion(OthelloState(p, o, placements, to_play, moves, over), reward, done, legal)

    def terminal(self, state: OthelloState) -> np.ndarray:
        return state.over.copy()

    def symmetries(self) -> list[Symmetry]:
        """The 8 rotations and reflections of the square; pass maps to itself. Only the
        identity, the half turn and the two diagonal reflections fix the start."""
        return square_board_symmetries(SIZE, extra_actions=1)

    def action_name(self, action: int) -> str:
        action = int(action)
        if action == PASS:
            return "pass"
        if not 0 <= action < CELLS:
            raise ValueError(f"othello: action {action} is out of range 0..{PASS}")
        return f"{'abcdefgh'[action % SIZE]}{action // SIZE + 1}"

    def render_one(self, state: OthelloState, i: int) -> str:
        """Rows 1..8 top to bottom, columns a..h; X black, O white, * a legal placement."""
        p, o, legal = int(state.player[i]), int(state.opponent[i]), int(state.placements[i])
        black_to_play = int(state.to_play[i]) == 0
        black, white = (p, o) if black_to_play else (o, p)
        lines = ["  " + " ".join("abcdefgh")]
        for r in range(SIZE):
            cells = []
            for c in range(SIZE):
                bit = 1 << (r * SIZE + c)
                cells.append("X" if black & bit else "O" if white & bit else "*" if legal & bit else ".")
            lines.append(f"{r + 1} " + " ".join(cells))
        nb, nw = bin(black).count("1"), bin(white).count("1")
        if state.over[i]:
            status = "black (X) wins" if nb > nw else "white (O) wins" if nw > nb else "draw"
        else:
            status = f"{'black (X)' if black_to_play else 'white (O)'} to move" + (
                "" if legal else ", must pass")
        lines.append(f"ply {int(state.moves[i])}, X {nb} O {nw}, {status}")
        return "\n".join(lines)


def _discs(bits: int) -> int:
    return bin(int(bits)).count("1")


def occupied(game: Othello, state: OthelloState, action: int) -> bool:
    """Whether ``action`` names a square of the first board of ``state`` that holds a disc."""
    return action < CELLS and bool((int(state.player[0]) | int(state.opponent[0])) >> action & 1)


def black_margin(game: Othello, state: OthelloState) -> float:
    """Black's disc difference on the first board of ``state``."""
    mine = _discs(state.player[0]) - _discs(state.opponent[0])
    return float(mine if int(state.to_play[0]) == 0 else -mine)


# Othello's facts (games.descriptors): played
# over GTP as gtp-rhino plays it (which skips a player without a move itself, and may
# count the empty squares for the winner).
DESCRIPTOR = GameDescriptor(
    name="othello", engine=Othello,
    gtp=GtpFacts(letters="abcdefgh", board_size=SIZE, passes=True, occupied=occupied, black_margin=black_margin,
                 end_reason="no moves left", engines_skip_pass=True, engine_counts_empty=True,
                 sgf_game=2, sgf_records=True),
    network=dict(kind="conv", blocks=3, channels=64),  # AVI paper C.2
    preset={"actors.epsilon": 0.15, "learner.augment_symmetries": True},  # AVI paper C.2: Table 3, epsilon 0.15
)
