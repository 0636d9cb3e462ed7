"""Strong Connect Four solver: exact scores of 7x6 positions by negamax with alpha-beta.

Positions use the bitboard layout of ``games/connect4.py`` (bit = col * 7 + row, row 0
the bottom, one always-empty sentinel bit on top of each column; ``current`` = stones
of the player to move, ``mask`` = all stones), so engine states are solved as they are.

Score (DESIGN.md, "Oracle command line"), from the side to move's point of view:
0 for a draw; ``22 - s`` if the side to move wins, ``s`` being the number of stones the
winner has played when it completes its four under perfect play (a win with the 4th
stone scores 18); the negative of the opponent's winning score for a loss. With ``n``
plies played, the side to move has played ``n // 2`` stones, so a win with its very
next stone scores ``21 - n // 2 == (43 - n) // 2``.

The search (all in ``_negamax``, compiled with numba):
- only moves that do not hand the opponent an immediate win are tried; an opponent
  threat that must be blocked leaves one move, two such threats are a loss at once;
- moves are tried in order of the number of winning cells (threats) they create,
  centre columns first on ties, because good moves cut the search early;
- the score is bracketed by what the number of empty cells allows, then narrowed by
  null-window searches (is the score > m?), a binary search that probes near 0 first;
- a transposition table keeps, per position, a lower and an upper bound of its score,
  shared by all the null-window searches and kept across positions;
- exact scores known from elsewhere (the solved-position store) can be entered in the
  table beforehand (:meth:`Connect4Solver.seed`, lower = upper bound): a search that
  reaches such a position reads its score there and does not search below it;
- a position with 12 stones is an exact leaf when the 12-ply book holds it
  (:mod:`oracle_service.connect4_book12`), so earlier positions are searched only down
  to ply 12.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import int8, int32, int64, njit, uint64

from games.connect4 import CENTRE_FIRST, COLUMN_BITS, HEIGHT, WIDTH, moves_from_digits
from oracle_service.connect4_book12 import BOOK_PLY, NOT_IN_BOOK, Book12, book_score, empty_book, load_book

CELLS = WIDTH * HEIGHT
MIN_SCORE = -(CELLS // 2) + 3  # -18: lose to the opponent's 4th stone
MAX_SCORE = (CELLS + 1) // 2 - 3  # 18: win with one's 4th stone

_BOTTOM = [1 << (c * COLUMN_BITS) for c in range(WIDTH)]
_COLUMN_INT = [((1 << HEIGHT) - 1) << (c * COLUMN_BITS) for c in range(WIDTH)]
_TOP_INT = [1 << (c * COLUMN_BITS + HEIGHT - 1) for c in range(WIDTH)]
_BOTTOM_MASK = np.uint64(sum(_BOTTOM))
_BOARD_MASK = np.uint64(sum(_COLUMN_INT))
_COLUMN = np.array(_COLUMN_INT, dtype=np.uint64)
_ZERO, _ONE = np.uint64(0), np.uint64(1)
# Shifts as uint64: mixing uint64 with int64 makes numba compute in float64.
_S1, _S2, _S3 = np.uint64(1), np.uint64(2), np.uint64(3)
_S6, _S7, _S8 = np.uint64(COLUMN_BITS - 1), np.uint64(COLUMN_BITS), np.uint64(COLUMN_BITS + 1)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S4, _S56 = np.uint64(4), np.uint64(56)
_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads the sparse keys
# Transposition-table entry: key << 12 | lower code << 6 | upper code; a code is
# score + _CODE_OFFSET (1..63), 0 = no bound. The key (49 bits) is kept whole, so a
# hit is never a different position.
_KEY_SHIFT, _BOUND_BITS = np.uint64(12), np.uint64(6)
_CODE_MASK = np.uint64(63)
_CODE_OFFSET = 32

_MAX_PLY_ROWS = CELLS + 1  # scratch rows of the move lists, one per ply 0..42


# --------------------------------------------------------------------- kernels


@njit(cache=True)
def _popcount(x):
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return (x * _H01) >> _S56


@njit(cache=True)
def _winning_cells(pos, mask):
    """Empty cells that would complete a four for the stones ``pos``."""
    r = (pos << _S1) & (pos << _S2) & (pos << _S3)  # vertical: three stones below
    for d in (_S7, _S6, _S8):  # horizontal and the two diagonals
        d2 = d + d
        d3 = d2 + d
        p = (pos << d) & (pos << d2)  # two stones on the low side
        r |= p & (pos << d3)
        r |= p & (pos >> d)
        p = (pos >> d) & (pos >> d2)  # two stones on the high side
        r |= p & (pos >> d3)
        r |= p & (pos << d)
    return r & (_BOARD_MASK ^ mask)


@njit(cache=True)
def _tt_index(key, shift):
    return int64((key * _HASH_MUL) >> shift)


@njit(cache=True)
def _tt_store(tt, shift, key, lower, upper):
    """Merge a lower and/or an upper bound (code 0 = none) into the entry of ``key``."""
    i = _tt_index(key, shift)
    e = tt[i]
    if (e >> _KEY_SHIFT) == key:  # same position: keep the tighter of each bound
        old_lo = (e >> _BOUND_BITS) & _CODE_MASK
        old_hi = e & _CODE_MASK
        if lower == _ZERO or (old_lo != _ZERO and old_lo > lower):
            lower = old_lo
        if upper == _ZERO or (old_hi != _ZERO and old_hi < upper):
            upper = old_hi
    tt[i] = (key << _KEY_SHIFT) | (lower << _BOUND_BITS) | upper


@njit(int64(uint64, uint64, int64, int64, int64, uint64[:], uint64, uint64[:, :], int64[:],
            int32[:], int8[:]), cache=True)
def _negamax(cur, mask, moves, alpha, beta, tt, shift, buf, stats, book_codes, book_scores):
    """Score of a position where the side to move cannot win at once, or a bound:
    <= alpha means score <= result; >= beta means score >= result; else exact.
    ``buf[moves]`` is this ply's scratch row for its ordered moves; ``book_codes``,
    ``book_scores`` the 12-ply book (:mod:`oracle_service.connect4_book12`, may be empty)."""
    stats[0] += 1
    opp = cur ^ mask
    possible = (mask + _BOTTOM_MASK) & _BOARD_MASK
    opp_win = _winning_cells(opp, mask)
    forced = possible & opp_win
    if forced != _ZERO:
        if (forced & (forced - _ONE)) != _ZERO:  # two threats to block: the opponent wins next
            return -((CELLS - moves) // 2)
        possible = forced
    possible &= ~(opp_win >> _S1)  # never play just below an opponent's winning cell
    if possible == _ZERO:
        return -((CELLS - moves) // 2)
    if moves >= CELLS - 2:  # two stones left, neither completes a four
        return 0
    if moves == BOOK_PLY:
        # An exact score satisfies the contract whatever the window (it is a bound of
        # either side), so it is returned as it is, and not entered in the table.
        s = book_score(book_codes, book_scores, cur, mask)
        if s != NOT_IN_BOOK:
            stats[1] += 1
            return s

    lo = -((CELLS - 2 - moves) // 2)  # the opponent cannot win with its next stone
    if alpha < lo:
        alpha = lo
        if alpha >= beta:
            return alpha
    hi = (CELLS - 1 - moves) // 2  # we cannot win with our next stone
    if beta > hi:
        beta = hi
        if alpha >= beta:
            return beta

    key = cur + mask
    e = tt[_tt_index(key, shift)]
    if (e >> _KEY_SHIFT) == key:
        c = int64((e >> _BOUND_BITS) & _CODE_MASK)
        if c != 0 and c - _CODE_OFFSET > alpha:
            alpha = c - _CODE_OFFSET
            if alpha >= beta:
                return alpha
        c = int64(e & _CODE_MASK)
        if c != 0 and c - _CODE_OFFSET < beta:
            beta = c - _CODE_OFFSET
            if alpha >= beta:
                return beta

    # Order the moves: most threats created first, centre first on ties (stable insert).
    # buf[moves, :7] gets the moves, buf[moves, 7:] their threat counts.
    row = buf[moves]
    n = 0
    for k in range(WIDTH):
        mv = possible & _COLUMN[CENTRE_FIRST[k]]
        if mv != _ZERO:
            s = _popcount(_winning_cells(cur | mv, mask | mv))
            j = n
            while j > 0 and row[WIDTH + j - 1] < s:
                row[WIDTH + j] = row[WIDTH + j - 1]
                row[j] = row[j - 1]
                j -= 1
            row[WIDTH + j] = s
            row[j] = mv
            n += 1

    alpha0 = alpha
    for k in range(n):
        mv = row[k]
        s = -_negamax(opp, mask | mv, moves + 1, -beta, -alpha, tt, shift, buf, stats, book_codes,
                      book_scores)
        if s >= beta:
            _tt_store(tt, shift, key, uint64(s + _CODE_OFFSET), _ZERO)
            return s
        alpha = max(alpha, s)
    # alpha is an upper bound; if a move raised it inside the window it is exact.
    lower = uint64(alpha + _CODE_OFFSET) if alpha > alpha0 else _ZERO
    _tt_store(tt, shift, key, lower, uint64(alpha + _CODE_OFFSET))
    return alpha


@njit(cache=True)
def _trunc_half(x):
    """x / 2 rounded toward zero."""
    return x // 2 if x >= 0 else -((-x) // 2)


@njit(cache=True)
def _solve(cur, mask, moves, weak, tt, shift, buf, stats, book_codes, book_scores):
    """Exact score (weak: its sign) of a position that is not over."""
    possible = (mask + _BOTTOM_MASK) & _BOARD_MASK
    if (_winning_cells(cur, mask) & possible) != _ZERO:  # negamax assumes no win at once
        s = (CELLS + 1 - moves) // 2
        return 1 if weak else s
    lo = -((CELLS - moves) // 2)
    hi = (CELLS + 1 - moves) // 2
    if weak:
        lo, hi = -1, 1
    while lo < hi:  # binary search with null windows, probing near 0 first (short proofs)
        med = lo + (hi - lo) // 2
        if med <= 0 and _trunc_half(lo) < med:
            med = _trunc_half(lo)
        elif med >= 0 and hi // 2 > med:
            med = hi // 2
        r = _negamax(cur, mask, moves, med, med + 1, tt, shift, buf, stats, book_codes, book_scores)
        if r <= med:
            hi = r
        else:
            lo = r
    if weak:
        return (lo > 0) - (lo < 0)
    return lo


@njit(cache=True)
def _solve_batch(cur, mask, moves, weak, tt, shift, buf, stats, book_codes, book_scores):
    out = np.empty(cur.shape[0], np.int64)  # [B]
    for b in range(cur.shape[0]):
        out[b] = _solve(cur[b], mask[b], moves[b], weak, tt, shift, buf, stats, book_codes, book_scores)
    return out


@njit(cache=True)
def _bad_states(cur, mask, moves):
    """[B] True where a state is over (a four on the board, or full) or inconsistent
    (the ply count is not the number of stones)."""
    bad = np.zeros(cur.shape[0], np.bool_)
    for b in range(cur.shape[0]):
        bad[b] = (_aligned(cur[b] ^ mask[b]) or _aligned(cur[b]) or moves[b] >= CELLS
                  or _popcount(mask[b]) != uint64(moves[b]) or (cur[b] & ~mask[b]) != _ZERO
                  or (mask[b] & ~_BOARD_MASK) != _ZERO)
    return bad


@njit(cache=True)
def _seed_kernel(tt, shift, keys, scores):
    """Enter each exact score as both bounds of its position's entry."""
    for i in range(keys.shape[0]):
        code = uint64(scores[i] + _CODE_OFFSET)
        _tt_store(tt, shift, keys[i], code, code)


@njit(cache=True)
def _children_kernel(cur, mask, moves):
    """[B, WIDTH] children (current, mask) of each position and whether each is a live
    position (column not full, the move does not complete a four nor fill the board)."""
    B = cur.shape[0]
    ccur = np.zeros((B, WIDTH), np.uint64)  # [B, WIDTH]
    cmask = np.zeros((B, WIDTH), np.uint64)  # [B, WIDTH]
    live = np.zeros((B, WIDTH), np.bool_)  # [B, WIDTH]
    for b in range(B):
        wins = _winning_cells(cur[b], mask[b])
        for c in range(WIDTH):
            col = _COLUMN[c]
            piece = (mask[b] + (col & ~(col << _S1))) & col
            if piece == _ZERO or (piece & wins) != _ZERO or moves[b] + 1 >= CELLS:
                continue
            ccur[b, c] = cur[b] ^ mask[b]
            cmask[b, c] = mask[b] | piece
            live[b, c] = True
    return ccur, cmask, live


# ------------------------------------------------------------- python side


_OK, _BAD_ACTION, _FULL_COLUMN, _AFTER_WIN, _WON = 0, 1, 2, 3, 4


@njit(cache=True)
def _aligned(pos):
    for d in (_S1, _S6, _S7, _S8):
        m = pos & (pos >> d)
        if (m & (m >> (d + d))) != _ZERO:
            return True
    return False


@njit(cache=True)
def _parse_kernel(actions):
    """(current, mask, error code, index of the offending move) after ``actions``."""
    cur = _ZERO
    mask = _ZERO
    for i in range(actions.shape[0]):
        a = actions[i]
        if a < 0 or a >= WIDTH:
            return cur, mask, _BAD_ACTION, i
        col = _COLUMN[a]
        if (mask & col) == col:
            return cur, mask, _FULL_COLUMN, i
        piece = (mask + (col & ~(col << _S1))) & col  # col's lowest bit, carried up
        if _aligned(cur | piece):
            return cur, mask, _AFTER_WIN if i + 1 < actions.shape[0] else _WON, i
        cur, mask = cur ^ mask, mask | piece
    return cur, mask, _OK, actions.shape[0]


def parse_moves(moves: str | Sequence[int]) -> tuple[int, int, int]:
    """(current, mask, plies) of a move sequence: a string of 1-based column digits
    (``"4453"``) or a list of actions 0..6. Raises ValueError for an illegal digit or
    action, a full column, a move after the game was won, a won game or a full board
    (no position to solve)."""
    if isinstance(moves, str):
        name = repr(moves)
        digits = np.frombuffer(moves.encode(), dtype=np.uint8)
        if digits.size and (digits.min() < ord("1") or digits.max() > ord("7")):
            moves_from_digits(moves)  # raises, naming the bad character
        actions = digits.astype(np.int64) - ord("1")
    else:
        moves = list(moves)
        for i, a in enumerate(moves):
            # Integers only (a float column or a bool is a mistake, not a column), and in
            # range before numpy sees them (a huge int would overflow the conversion).
            if not isinstance(a, (int, np.integer)) or isinstance(a, (bool, np.bool_)) or not 0 <= a < WIDTH:
                raise ValueError(f"connect4 actions {moves!r:.80}: action {a!r:.30} at position {i} is out of "
                                 f"range: not an integer in 0..{WIDTH - 1}")
        actions = np.asarray(moves, dtype=np.int64)
        name = f"actions {actions.tolist()}"
    cur, mask, code, i = _parse_kernel(actions)
    if code == _BAD_ACTION:
        raise ValueError(f"connect4 {name}: action {actions[i]} at position {i} is out of "
                         f"range 0..{WIDTH - 1}")
    if code == _FULL_COLUMN:
        raise ValueError(f"connect4 {name}: move {i + 1} plays column {actions[i] + 1}, "
                         "which is full")
    if code == _AFTER_WIN:
        raise ValueError(f"connect4 {name}: move {i + 2} comes after the game was won by "
                         f"move {i + 1}")
    if code == _WON:
        raise ValueError(f"connect4 {name}: the game is already won (by move {i + 1}); "
                         "there is no position to solve")
    if i == CELLS:
        raise ValueError(f"connect4 {name}: the board is full (a draw); there is no "
                         "position to solve")
    return int(cur), int(mask), int(i)


@njit(cache=True)
def _stone_is_first(first, c, h):
    return ((first >> uint64(c * COLUMN_BITS + h)) & _ONE) == _ONE


@njit(cache=True)
def _buildable(first, mask):
    """Whether the stones of ``mask`` (stacked from the bottom of each column) can be
    played in some order with the two players alternating, the first player's stones
    being ``first``. A greedy order answers most boards at once (a mover plays where
    its stone uncovers one of the opponent's, else in the tallest column left); when it
    gets stuck, a depth-first search over the column heights reached decides (each
    state visited once; the stack holds at most 6 siblings per ply of the path)."""
    heights = np.zeros(WIDTH, np.int64)
    for c in range(WIDTH):
        while heights[c] < HEIGHT and (mask >> uint64(c * COLUMN_BITS + heights[c])) & _ONE:
            heights[c] += 1
    plies = 0
    for c in range(WIDTH):
        plies += heights[c]
    level = np.zeros(WIDTH, np.int64)
    for n in range(plies + 1):
        if n == plies:
            return True
        mover = n % 2 == 0
        pick, pick_rank = -1, -1
        for c in range(WIDTH):
            h = level[c]
            if h < heights[c] and _stone_is_first(first, c, h) == mover:
                uncovers = h + 1 < heights[c] and _stone_is_first(first, c, h + 1) != mover
                rank = (HEIGHT + 1) * (1 if uncovers else 0) + heights[c] - h
                if rank > pick_rank:
                    pick, pick_rank = c, rank
        if pick < 0:
            break
        level[pick] += 1
    radix = np.ones(WIDTH, np.int64)  # state = sum of height[c] * radix[c]
    for c in range(1, WIDTH):
        radix[c] = radix[c - 1] * (heights[c - 1] + 1)
    seen = np.zeros(radix[WIDTH - 1] * (heights[WIDTH - 1] + 1), np.bool_)
    stack = np.zeros(WIDTH * (plies + 1), np.int64)
    top = 1  # stack[0] = 0: no stone played yet
    seen[0] = True
    while top > 0:
        top -= 1
        state = stack[top]
        played = 0
        for c in range(WIDTH):
            played += (state // radix[c]) % (heights[c] + 1)
        if played == plies:
            return True
        mover = played % 2 == 0
        for c in range(WIDTH):
            h = (state // radix[c]) % (heights[c] + 1)
            if h < heights[c] and _stone_is_first(first, c, h) == mover:
                child = state + radix[c]
                if not seen[child]:
                    seen[child] = True
                    stack[top] = child
                    top += 1
    return False


class Board(NamedTuple):
    """A position given by its bitboards (``games.connect4`` layout) rather than by the
    moves that led to it: engine states have no move list. ``current``: the stones of
    the player to move; ``mask``: all stones."""

    current: int
    mask: int


def parse_board(board: Board) -> tuple[int, int, int]:
    """(current, mask, plies) of a :class:`Board`, checked as a position that a game
    reaches: bits only on the 7x6 cells, stones stacked from the bottom of each column,
    the mover's stones a subset of the board and as many as it has played (half the
    plies, rounded down), some order of alternating moves that stacks them, no four on
    the board (then none was made on the way either), not full. ValueError names the
    problem."""
    cur, mask = board
    for name, bits in (("current", cur), ("mask", mask)):
        if not isinstance(bits, (int, np.integer)) or isinstance(bits, (bool, np.bool_)) or bits < 0:
            raise ValueError(f"connect4 board {tuple(board)!r:.80}: {name} is {bits!r:.30}, "
                             f"not a non-negative integer bitboard")
    cur, mask = int(cur), int(mask)
    what = f"connect4 board (current={cur:#x}, mask={mask:#x})"
    if mask & ~int(_BOARD_MASK):
        raise ValueError(f"{what}: mask has bits outside the 7x6 cells (a sentinel or bit >= 49)")
    if cur & ~mask:
        raise ValueError(f"{what}: current has stones where mask has none")
    for c in range(WIDTH):
        column = (mask >> (c * COLUMN_BITS)) & ((1 << HEIGHT) - 1)
        if column & (column + 1):  # not of the form 0..01..1: a gap below a stone
            raise ValueError(f"{what}: column {c} has a stone above an empty cell")
    plies = mask.bit_count()
    if cur.bit_count() != plies // 2:
        raise ValueError(f"{what}: the player to move has {cur.bit_count()} stones after {plies} plies, "
                         f"not {plies // 2}")
    first = cur if plies % 2 == 0 else cur ^ mask  # the first player's stones
    if not _buildable(np.uint64(first), np.uint64(mask)):
        raise ValueError(f"{what}: no order of alternating moves stacks these stones (a column's "
                         f"colours cannot be interleaved with the others')")
    if _aligned(np.uint64(cur)) or _aligned(np.uint64(cur ^ mask)):
        raise ValueError(f"{what}: the game is already won; there is no position to solve")
    if plies == CELLS:
        raise ValueError(f"{what}: the board is full (a draw); there is no position to solve")
    return cur, mask, plies


def parse_position(position: str | Sequence[int] | Board) -> tuple[int, int, int]:
    """(current, mask, plies) of a move sequence (:func:`parse_moves`) or a :class:`Board`."""
    return parse_board(position) if isinstance(position, Board) else parse_moves(position)


def win_score(moves_played: int) -> int:
    """Score of winning with the very next stone after ``moves_played`` plies."""
    return (CELLS + 1 - moves_played) // 2


def plies_to_end(score: int, moves_played: int) -> int:
    """Plies from a position to the end of the game under perfect play, from its score.

    The side to move has played ``m = moves_played // 2`` stones, its opponent
    ``moves_played - m``. A score ``v > 0`` is a win with the mover's ``22 - v``-th
    stone, i.e. its ``k = 22 - v - m``-th move from here: ``2k - 1`` plies. A score
    ``v < 0`` is a win of the opponent with its ``22 + v``-th stone, its
    ``k = 22 + v - (moves_played - m)``-th move from here: ``2k`` plies. A draw fills
    the board: ``42 - moves_played`` plies."""
    if score == 0:
        return CELLS - moves_played
    mine = moves_played // 2
    if score > 0:
        return 2 * (22 - score - mine) - 1
    return 2 * (22 + score - (moves_played - mine))


def score_to_value(score: int, moves_played: int, gamma: float = 1.0) -> float:
    """The exact value V*(s) of a position from its score, for the side to move, with
    reward +1 to the player who completes a four and the value of the next position
    counted as ``-gamma`` times its own (negamax, one discount per ply).

    gamma = 1 gives 1 (win), 0 (draw), -1 (loss). For gamma < 1 a result that falls
    ``p = plies_to_end(score, moves_played)`` plies from now is worth
    ``+-gamma ** (p - 1)``: a win with the very next move is worth 1, a loss to the
    opponent's next move ``-gamma``. The score orders outcomes exactly as the discounted
    value does (quicker wins and slower losses first), so perfect play for the score is
    perfect play for V* and the conversion is exact."""
    if not 0.0 < gamma <= 1.0:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    if score == 0:
        return 0.0
    p = plies_to_end(score, moves_played)
    if p < 1 or p > CELLS - moves_played:
        raise ValueError(f"score {score} is impossible after {moves_played} plies")
    v = gamma ** (p - 1)
    return v if score > 0 else -v


def children(current: np.ndarray, mask: np.ndarray, moves: np.ndarray):
    """The live children of positions (``current``, ``mask`` uint64[B], ``moves``
    int64[B], none over): (current uint64[B, 7], mask uint64[B, 7], live bool[B, 7]),
    column ``c`` being the position after playing ``c``; not live (and zeros) where the
    column is full or the move ends the game (a four, or the last cell)."""
    current = np.ascontiguousarray(current, dtype=np.uint64)  # [B]
    mask = np.ascontiguousarray(mask, dtype=np.uint64)  # [B]
    moves = np.ascontiguousarray(moves, dtype=np.int64)  # [B]
    return _children_kernel(current, mask, moves)


def descendants(current: np.ndarray, mask: np.ndarray, moves: np.ndarray, depth: int):
    """(current uint64[N], mask uint64[N], moves int64[N]): the distinct live positions
    reached from the positions given (uint64[B], uint64[B], int64[B]; none over) in 1 to
    ``depth`` plies. With 7 moves a ply, N <= 7 + 49 + ... per root."""
    if depth < 0:
        raise ValueError(f"descendants: depth must be >= 0, got {depth}")
    cur = np.ascontiguousarray(current, dtype=np.uint64)  # [F] the frontier
    msk = np.ascontiguousarray(mask, dtype=np.uint64)  # [F]
    mv = np.ascontiguousarray(moves, dtype=np.int64)  # [F]
    found = []
    for _ in range(depth):
        if cur.size == 0:
            break
        ccur, cmask, live = _children_kernel(cur, msk, mv)  # [F, 7] each
        ccur, cmask = ccur[live], cmask[live]  # [L]
        cmv = np.repeat(mv + 1, WIDTH)[live.reshape(-1)]  # [L]
        _, first = np.unique(ccur + cmask, return_index=True)  # transpositions once
        cur, msk, mv = ccur[first], cmask[first], cmv[first]
        found.append((cur, msk, mv))
    if not found:
        return (np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int64))
    cur, msk, mv = (np.concatenate(a) for a in zip(*found))
    _, first = np.unique(cur + msk, return_index=True)  # roots of different depths overlap
    return cur[first], msk[first], mv[first]


class Connect4Solver:
    """Exact Connect Four scores. Keeps one transposition table of ``2**tt_log2_size``
    8-byte entries (the default 2**23 = 64 MiB) across calls; not thread-safe. With
    ``use_book`` (the default) every position with 12 stones that the 12-ply book holds
    is an exact leaf of the search (:func:`connect4_book12.load_book`: read once per
    process; missing, it warns once and every position is searched)."""

    def __init__(self, tt_log2_size: int = 23, use_book: bool = True):
        if not 10 <= tt_log2_size <= 32:
            raise ValueError(f"tt_log2_size must be in 10..32, got {tt_log2_size}")
        # np.full writes every page now; np.zeros would map them lazily and make the
        # first searches pay a page fault per new page touched.
        self.tt = np.full(1 << tt_log2_size, 0, dtype=np.uint64)  # [2**tt_log2_size]
        self._shift = np.uint64(64 - tt_log2_size)
        # [ply, 2 * WIDTH]: per ply, the ordered moves then their threat counts
        self._buf = np.zeros((_MAX_PLY_ROWS, 2 * WIDTH), dtype=np.uint64)
        self._stats = np.zeros(2, dtype=np.int64)  # [nodes searched, book leaves]
        self.book: Book12 = load_book() if use_book else empty_book()

    @property
    def nodes(self) -> int:
        """Nodes searched since construction (or the last ``reset``)."""
        return int(self._stats[0])

    @property
    def book_leaves(self) -> int:
        """Searched nodes answered by the 12-ply book since construction (or ``reset``)."""
        return int(self._stats[1])

    def reset(self) -> None:
        """Forget the transposition table and the node and book-leaf counts."""
        self.tt[:] = 0
        self._stats[:] = 0

    def seed(self, current: np.ndarray, mask: np.ndarray, scores: np.ndarray) -> None:
        """Enter the exact ``scores`` (int[N], for the side to move) of the positions
        ``current``, ``mask`` (uint64[N], the engine's bitboards, as they are: not
        mirror-canonicalised) as both bounds of their table entries, so that searches
        reaching them stop there. The scores must be exact: a wrong one makes the
        searches through that position wrong. An entry can later be overwritten by
        another position hashing to the same slot, which only costs a search."""
        current = np.ascontiguousarray(current, dtype=np.uint64)  # [N]
        mask = np.ascontiguousarray(mask, dtype=np.uint64)  # [N]
        scores = np.ascontiguousarray(scores, dtype=np.int64)  # [N]
        assert current.shape == mask.shape == scores.shape and current.ndim == 1, \
            (current.shape, mask.shape, scores.shape)
        if scores.size and (scores.min() < MIN_SCORE or scores.max() > MAX_SCORE):
            raise ValueError(f"connect4 seed: scores must lie in {MIN_SCORE}..{MAX_SCORE}, got "
                             f"{scores.min()}..{scores.max()}")
        _seed_kernel(self.tt, self._shift, current + mask, scores)

    def _solve_bits(self, cur: int, mask: int, plies: int, weak: bool) -> int:
        return int(_solve(np.uint64(cur), np.uint64(mask), plies, weak, self.tt,
                          self._shift, self._buf, self._stats, *self.book))

    def solve(self, moves: str | Sequence[int] | Board, weak: bool = False) -> int:
        """Score of the position after ``moves`` (a move sequence or a :class:`Board`;
        see the module docstring); with ``weak`` only its sign: 1 win, 0 draw, -1 loss
        for the side to move."""
        cur, mask, plies = parse_position(moves)
        return self._solve_bits(cur, mask, plies, weak)

    def solve_many(self, positions: Sequence[str | Sequence[int]], weak: bool = False) -> list[int]:
        """``solve`` of each position, in one compiled call."""
        parsed = [parse_moves(p) for p in positions]
        n = len(parsed)
        cur = np.fromiter((p[0] for p in parsed), np.uint64, n)  # [B]
        mask = np.fromiter((p[1] for p in parsed), np.uint64, n)  # [B]
        plies = np.fromiter((p[2] for p in parsed), np.int64, n)  # [B]
        out = _solve_batch(cur, mask, plies, weak, self.tt, self._shift, self._buf, self._stats, *self.book)
        return [int(x) for x in out]

    def solve_states(self, current: np.ndarray, mask: np.ndarray, moves: np.ndarray,
                     weak: bool = False) -> np.ndarray:
        """int64[B] scores of engine states (``games.connect4`` bitboards: ``current``,
        ``mask`` uint64[B], ``moves`` int64[B]), none of which may be over."""
        current = np.ascontiguousarray(current, dtype=np.uint64)  # [B]
        mask = np.ascontiguousarray(mask, dtype=np.uint64)  # [B]
        moves = np.ascontiguousarray(moves, dtype=np.int64)  # [B]
        assert current.shape == mask.shape == moves.shape and current.ndim == 1, \
            (current.shape, mask.shape, moves.shape)
        bad = np.flatnonzero(_bad_states(current, mask, moves))
        if bad.size:
            raise ValueError(f"connect4 states {bad[:10].tolist()} (of {current.size}) are over "
                             "(won or full) or inconsistent; no position to solve")
        return _solve_batch(current, mask, moves, weak, self.tt, self._shift, self._buf,
                            self._stats, *self.book)

    def analyze(self, moves: str | Sequence[int] | Board, weak: bool = False) -> list[int | None]:
        """Score of each column 0..6 for the side to move now: the score after playing
        it (negated: the opponent moves next), ``win_score`` for a move that wins at
        once, None for a full column. ``moves``: a move sequence or a :class:`Board`."""
        cur, mask, plies = parse_position(moves)
        out: list[int | None] = []
        wins = int(_winning_cells(np.uint64(cur), np.uint64(mask)))
        for c in range(WIDTH):
            if mask & _TOP_INT[c]:
                out.append(None)
                continue
            piece = (mask + _BOTTOM[c]) & _COLUMN_INT[c]
            if wins & piece:
                out.append(1 if weak else win_score(plies))
            elif plies + 1 == CELLS:
                out.append(0)  # the last cell, not a four: a draw
            else:
                out.append(-self._solve_bits(cur ^ mask, mask | piece, plies + 1, weak))
        return out

    def best_moves(self, moves: str | Sequence[int]) -> list[int]:
        """Columns (0..6) of maximal score: the quickest win, else a draw, else the
        slowest loss."""
        scores = self.analyze(moves)
        best = max(s for s in scores if s is not None)
        return [c for c, s in enumerate(scores) if s == best]
