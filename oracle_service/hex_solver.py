"""A weak solver for Hex (no swap, sizes 1..9): win or loss for the side to move, and
every winning move.

Conventions are ``games/hex.py``'s: cell ``(r, c)`` is ``r * size + c``, Black (1, the
first player) joins row 0 to row size-1, White (2) joins column 0 to column size-1; a
move that completes a chain wins. There are no draws, so a value is +1 or -1.

The search is a depth-first boolean negamax whose every proof carries its *carrier*:
the set of empty cells the winner's proof depends on. "W wins with carrier C" means W
still wins when every empty cell outside C is given to the loser (Hex is monotone: a
stone never hurts its owner, so W then wins the real position too). Carriers give the
two prunings that make Hex solvable:

- mustplay: when the mover's move m loses to a proof with carrier C, every move outside
  C loses too (the loser's stone lands where the winner did not need anything), so the
  mover only tries moves inside the intersection of the carriers found so far. The
  opponent's immediate wins and virtual connections (``hex_vc.py``) start that
  intersection before any move is searched.
- a winning move m whose reply's proof has carrier C wins with carrier C + {m}; a lost
  node's carrier is the union of its refutations' carriers.

Before a node is searched, inferior cells are filled in (``_fill_inferior``): a *dead*
cell (one whose colour can never matter) gets a neutral marker, and a *captured pair*
(two cells where, whichever the opponent takes, the owner takes the other and the
opponent's stone is dead) is given to its owner. Both leave the value unchanged; the
captured cells join the node's carrier, the dead ones need not (their colour does not
matter in any completion either). Deadness is recognised locally from a cell's six
neighbours (``_useless``): a cell is useless to a colour when every two non-adjacent
neighbours it could join are already joined around it by that colour's stones or edge.
A cell useless to one colour is dead: on a full board exactly one player has a chain, so
if a Black stone there never makes Black's chain, a White one never makes White's.

The transposition table (``_TT``) maps a Zobrist hash of the filled position and the
side to move to the proven value and its carrier; two entries per bucket, one kept by
subtree size and one always replaced, so memory is bounded. It lives as long as the
``HexSolver``, so labelling many positions of one game is cheap.

Cells are bitsets of two uint64 words (``lo`` cells 0..63, ``hi`` 64..127), enough for
9 x 9 = 81 cells.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit

from oracle_service.hex_vc import SC_CAP, hsearch, label_groups

EMPTY, BLACK, WHITE, DEAD = 0, 1, 2, 3
MAX_SIZE = 9
# Ring order of the six neighbours, cyclic (each is adjacent to the next):
_RING_STEPS = ((-1, 0), (-1, 1), (0, 1), (1, 0), (1, -1), (0, -1))
WIN, LOSS, ABORT = 1, 0, -1  # a node's result for its side to move (ABORT: limit reached)


class HexPositionError(ValueError):
    """A position the solver cannot take: its message names the problem (a cell off the
    board, a repeated cell, a position already won, a size out of range)."""


@dataclass(frozen=True)
class HexResult:
    value: int | None  # +1: the side to move wins, -1: it loses, None: a limit was reached
    winning: tuple[int, ...]  # every winning cell of the side to move, ascending; () if lost/unknown
    nodes: int  # search nodes spent on this call
    seconds: float


# ------------------------------------------------------------------- tables


def _tables(size: int):
    """neighbours int64[N, 6] in ring order, -1 off the board;
    ring_own int8[N, 6]: for an off-board neighbour, bit 0 if it lies beyond Black's edge
    (a row outside) and bit 1 if beyond White's (a column outside);
    edges int64[3, N]: edge bits of each cell for colour 1 (1 top, 2 bottom) and 2
    (1 left, 2 right)."""
    n = size * size
    neighbours = np.full((n, 6), -1, np.int64)
    ring_own = np.zeros((n, 6), np.int8)
    edges = np.zeros((3, n), np.int64)
    for r in range(size):
        for c in range(size):
            p = r * size + c
            for k, (dr, dc) in enumerate(_RING_STEPS):
                rr, cc = r + dr, c + dc
                if 0 <= rr < size and 0 <= cc < size:
                    neighbours[p, k] = rr * size + cc
                else:
                    ring_own[p, k] = (1 if not 0 <= rr < size else 0) | (2 if not 0 <= cc < size else 0)
            edges[BLACK, p] = (r == 0) | (r == size - 1) << 1
            edges[WHITE, p] = (c == 0) | (c == size - 1) << 1
    return neighbours, ring_own, edges


# ------------------------------------------------------------- bitset helpers


@njit(cache=True, inline="always")
def _bit(p):
    """(lo, hi) of the single cell p."""
    if p < 64:
        return np.uint64(1) << np.uint64(p), np.uint64(0)
    return np.uint64(0), np.uint64(1) << np.uint64(p - 64)


@njit(cache=True, inline="always")
def _has(lo, hi, p):
    if p < 64:
        return (lo >> np.uint64(p)) & np.uint64(1) != 0
    return (hi >> np.uint64(p - 64)) & np.uint64(1) != 0


# ------------------------------------------------------------------ kernels


@njit(cache=True)
def _now():
    with numba.objmode(t="float64"):
        t = time.perf_counter()
    return t


def _useless_table() -> np.ndarray:
    """bool[4096], indexed by ``owned | usable << 6`` (bit k: ring neighbour k, in ring
    order): whether an empty cell with those neighbours can never be part of a minimal
    chain of the colour. ``usable``: the neighbour is empty, the colour's stone or edge;
    ``owned``: it is the colour's stone or edge. Useless when every two non-adjacent
    usable neighbours are joined around the cell by an arc of owned ones (then a chain
    through the cell can take the arc instead)."""
    table = np.zeros(4096, np.bool_)
    for owned in range(64):
        for usable in range(64):
            if owned & ~usable:
                continue  # owned implies usable; such indices never occur
            ok = True
            for i in range(6):
                for d in (2, 3, 4):
                    j = (i + d) % 6
                    if j < i or not (usable >> i & 1 and usable >> j & 1):
                        continue
                    arc1 = all(owned >> k & 1 for k in range(i + 1, j))
                    arc2 = all(owned >> (k % 6) & 1 for k in range(j + 1, i + 6))
                    if not arc1 and not arc2:
                        ok = False
            table[owned | usable << 6] = ok
    return table


@njit(cache=True)
def _dead(board, p, neighbours, ring_own, useless):
    """Whether empty cell p is useless to Black or to White, hence dead."""
    ob, ub, ow, uw = 0, 0, 0, 0
    for k in range(6):
        q = neighbours[p, k]
        if q < 0:
            own = ring_own[p, k]
            if own & BLACK:
                ob |= 1 << k
            if own & WHITE:
                ow |= 1 << k
        else:
            v = board[q]
            if v == BLACK:
                ob |= 1 << k
            elif v == WHITE:
                ow |= 1 << k
            elif v == EMPTY:
                ub |= 1 << k
                uw |= 1 << k
    ub |= ob
    uw |= ow
    return useless[ob | ub << 6] or useless[ow | uw << 6]


@njit(cache=True)
def _fill_inferior(board, neighbours, ring_own, useless, filled):
    """Fill dead cells (DEAD) and captured pairs (their owner) until none is left.
    Writes the filled cells into ``filled`` and returns (count, captured lo, captured hi)."""
    n = board.shape[0]
    count = 0
    clo, chi = np.uint64(0), np.uint64(0)
    changed = True
    while changed:
        changed = False
        for p in range(n):
            if board[p] == EMPTY and _dead(board, p, neighbours, ring_own, useless):
                board[p] = DEAD
                filled[count] = p
                count += 1
                changed = True
        for p in range(n):
            if board[p] != EMPTY:
                continue
            for k in range(6):
                q = neighbours[p, k]
                if q <= p or board[q] != EMPTY:
                    continue
                for colour in (BLACK, WHITE):
                    board[q] = colour
                    first = _dead(board, p, neighbours, ring_own, useless)
                    board[q] = EMPTY
                    if not first:
                        continue
                    board[p] = colour
                    second = _dead(board, q, neighbours, ring_own, useless)
                    board[p] = EMPTY
                    if second:
                        board[p] = colour
                        board[q] = colour
                        filled[count] = p
                        filled[count + 1] = q
                        count += 2
                        blo, bhi = _bit(p)
                        clo |= blo
                        chi |= bhi
                        blo, bhi = _bit(q)
                        clo |= blo
                        chi |= bhi
                        changed = True
                        break
                if board[p] != EMPTY:
                    break
    return count, clo, chi


@njit(cache=True)
def _group_flags(board, colour, neighbours, edges, label, flags, stack):
    """Label the groups of ``colour`` (label[p] = group index, -1 elsewhere) and their
    edge bits (flags[g]); returns whether one group touches both edges."""
    label[:] = -1
    groups = label_groups(board, colour, neighbours, edges, label, flags, stack, 0)
    for g in range(groups):
        if flags[g] == 3:
            return True
    return False


@njit(cache=True)
def _winning_cells(board, colour, neighbours, edges, label, flags, out):
    """Empty cells where ``colour`` completes a chain at once (label/flags from
    _group_flags for that colour); writes them to ``out``, returns their count."""
    n = board.shape[0]
    count = 0
    for p in range(n):
        if board[p] != EMPTY:
            continue
        f = edges[colour, p]
        for k in range(6):
            q = neighbours[p, k]
            if q >= 0 and label[q] >= 0:
                f |= flags[label[q]]
        if f == 3:
            out[count] = p
            count += 1
    return count


@njit(cache=True)
def _distances(board, colour, side, neighbours, edges, dist, queue):
    """0-1 BFS distance from ``colour``'s edge ``side`` (1 or 2) to every cell: own
    stones cost 0, empty cells 1, the opponent's and dead cells are walls."""
    n = board.shape[0]
    big = 1 << 20
    for p in range(n):
        dist[p] = big
    # a deque in a ring buffer of 2n slots
    m = 2 * n + 2
    head = n + 1
    tail = n + 1
    for p in range(n):
        if edges[colour, p] & side and (board[p] == EMPTY or board[p] == colour):
            d = 0 if board[p] == colour else 1
            if d < dist[p]:
                dist[p] = d
                if d == 0:
                    head = (head - 1) % m
                    queue[head] = p
                else:
                    queue[tail] = p
                    tail = (tail + 1) % m
    while head != tail:
        p = queue[head]
        head = (head + 1) % m
        for k in range(6):
            q = neighbours[p, k]
            if q < 0:
                continue
            v = board[q]
            if v != EMPTY and v != colour:
                continue
            w = 0 if v == colour else 1
            if dist[p] + w < dist[q]:
                dist[q] = dist[p] + w
                if w == 0:
                    head = (head - 1) % m
                    queue[head] = q
                else:
                    queue[tail] = q
                    tail = (tail + 1) % m


@njit(cache=True)
def _order_moves(board, mover, neighbours, edges, moves, count, scratch, queue):
    """Sort moves[:count] best first: the cells on both players' shortest paths
    (the least sum of each player's edge-to-edge distance through the cell)."""
    n = board.shape[0]
    score = np.zeros(n, np.int64)
    for colour in (mover, 3 - mover):
        for side in (1, 2):
            _distances(board, colour, side, neighbours, edges, scratch, queue)
            for i in range(count):
                p = moves[i]
                d = scratch[p]
                if d > 1000:
                    d = 1000
                score[p] += d * (3 if colour == mover else 2)
    for i in range(1, count):  # insertion sort, lists are short
        x = moves[i]
        j = i - 1
        while j >= 0 and score[moves[j]] > score[x]:
            moves[j + 1] = moves[j]
            j -= 1
        moves[j + 1] = x


@njit(cache=True)
def _hash(board, mover, zobrist):
    h = zobrist[0, 0] if mover == WHITE else np.uint64(0)
    for p in range(board.shape[0]):
        v = board[p]
        if v != EMPTY:
            h ^= zobrist[v, p]
    return h


@njit(cache=True)
def _tt_probe(h, tt_key, tt_val, tt_lo, tt_hi):
    slot = np.int64(h & np.uint64(tt_key.shape[0] // 2 - 1)) * 2
    for s in range(slot, slot + 2):
        if tt_key[s] == h and tt_val[s] >= 0:
            return tt_val[s], tt_lo[s], tt_hi[s]
    return -1, np.uint64(0), np.uint64(0)


@njit(cache=True)
def _tt_store(h, val, lo, hi, work, tt_key, tt_val, tt_lo, tt_hi, tt_work):
    slot = np.int64(h & np.uint64(tt_key.shape[0] // 2 - 1)) * 2
    s = slot if work >= tt_work[slot] or tt_key[slot] == h else slot + 1
    tt_key[s], tt_val[s], tt_lo[s], tt_hi[s], tt_work[s] = h, val, lo, hi, work


@njit(cache=True)
def _search(board, mover, neighbours, ring_own, edges, useless, zobrist, tt_key, tt_val, tt_lo, tt_hi, tt_work,
            stats, deadline, use_vc):
    """(result for the side to move: WIN, LOSS or ABORT, carrier lo, carrier hi).

    stats int64[3]: nodes so far, node limit (-1 none), 1 if ``deadline`` (a
    time.perf_counter() value) is to be checked."""
    n = board.shape[0]
    zero = np.uint64(0)
    stats[0] += 1
    if stats[1] >= 0 and stats[0] > stats[1]:
        return ABORT, zero, zero
    if stats[2] and stats[0] & 255 == 0:
        if _now() > deadline:
            stats[1] = 0  # every caller stops at its next node
            return ABORT, zero, zero
    start = stats[0]
    opp = 3 - mover
    filled = np.empty(n, np.int64)
    nfill, cap_lo, cap_hi = _fill_inferior(board, neighbours, ring_own, useless, filled)
    label = np.empty(n, np.int64)
    flags = np.empty(n, np.int64)
    stack = np.empty(2 * n + 2, np.int64)  # also the distance queue of _order_moves
    moves = np.empty(n, np.int64)
    res, lo, hi = LOSS, zero, zero
    if _group_flags(board, mover, neighbours, edges, label, flags, stack):
        res = WIN  # the captured cells completed the mover's chain
    elif _group_flags(board, opp, neighbours, edges, label, flags, stack):
        res = LOSS
    else:
        h = _hash(board, mover, zobrist)
        val, lo, hi = _tt_probe(h, tt_key, tt_val, tt_lo, tt_hi)
        if val >= 0:
            res = np.int64(val)
        else:
            res = -1
            # the opponent's immediate wins (labels of opp from the test above): each is
            # a threat with carrier {cell}, and the mover must play inside them all
            threats = _winning_cells(board, opp, neighbours, edges, label, flags, moves)
            mlo, mhi = ~zero, ~zero  # the mustplay
            for i in range(threats):
                blo, bhi = _bit(moves[i])
                mlo &= blo
                mhi &= bhi
                lo |= blo
                hi |= bhi
            _group_flags(board, mover, neighbours, edges, label, flags, stack)
            if _winning_cells(board, mover, neighbours, edges, label, flags, moves) > 0:
                res = WIN
                lo, hi = _bit(moves[0])
            elif threats < 2 and use_vc:
                vc_out = np.empty((1, 2), np.uint64)
                sc_out = np.empty((SC_CAP, 2), np.uint64)
                has_vc, nsc = hsearch(board, mover, neighbours, edges, vc_out, sc_out)
                if has_vc or nsc > 0:  # the mover is connected, or connects by moving
                    res = WIN
                    lo, hi = (vc_out[0, 0], vc_out[0, 1]) if has_vc else (sc_out[0, 0], sc_out[0, 1])
                else:
                    has_vc, nsc = hsearch(board, opp, neighbours, edges, vc_out, sc_out)
                    if has_vc:
                        res = LOSS
                        lo, hi = vc_out[0, 0], vc_out[0, 1]
                    for i in range(nsc):  # each SC of the opponent is a threat with its carrier
                        mlo &= sc_out[i, 0]
                        mhi &= sc_out[i, 1]
                        lo |= sc_out[i, 0]
                        hi |= sc_out[i, 1]
            if res < 0:
                count = 0
                for p in range(n):
                    if board[p] == EMPTY and _has(mlo, mhi, p):
                        moves[count] = p
                        count += 1
                if count > 1:
                    _order_moves(board, mover, neighbours, edges, moves, count, label, stack)
                res = LOSS
                for i in range(count):
                    m = moves[i]
                    if not _has(mlo, mhi, m):
                        continue
                    board[m] = mover
                    r, clo, chi = _search(board, opp, neighbours, ring_own, edges, useless, zobrist, tt_key,
                                          tt_val, tt_lo, tt_hi, tt_work, stats, deadline, use_vc)
                    board[m] = EMPTY
                    if r == ABORT:
                        res = ABORT
                        break
                    if r == LOSS:
                        res = WIN
                        blo, bhi = _bit(m)
                        lo, hi = clo | blo, chi | bhi
                        break
                    lo |= clo
                    hi |= chi
                    mlo &= clo
                    mhi &= chi
            if res != ABORT:
                _tt_store(h, res, lo, hi, stats[0] - start, tt_key, tt_val, tt_lo, tt_hi, tt_work)
    for i in range(nfill):
        board[filled[i]] = EMPTY
    return res, lo | cap_lo, hi | cap_hi


@njit(cache=True)
def _chain_winner(board, neighbours, edges):
    """0, or the colour with a side-to-side chain on the flat board."""
    n = board.shape[0]
    label = np.empty(n, np.int64)
    flags = np.empty(n, np.int64)
    stack = np.empty(n, np.int64)
    for colour in (BLACK, WHITE):
        if _group_flags(board, colour, neighbours, edges, label, flags, stack):
            return colour
    return 0


@njit(cache=True)
def _root_order(board, mover, neighbours, edges):
    n = board.shape[0]
    moves = np.empty(n, np.int64)
    count = 0
    for p in range(n):
        if board[p] == EMPTY:
            moves[count] = p
            count += 1
    scratch = np.empty(n, np.int64)
    queue = np.empty(2 * n + 2, np.int64)
    if count > 1:
        _order_moves(board, mover, neighbours, edges, moves, count, scratch, queue)
    return moves[:count]


# ------------------------------------------------------------------- solver


class HexSolver:
    """Win/loss and every winning move of Hex positions on a ``size x size`` board.

    ``node_limit`` / ``time_limit`` (seconds) bound one call (they can be overridden per
    call); a call that reaches one answers ``value=None``. The transposition table
    (``2**tt_log2`` buckets of two entries, 33 bytes each) is kept across calls.
    """

    def __init__(self, size: int, *, node_limit: int | None = None, time_limit: float | None = None,
                 tt_log2: int = 20, use_vc: bool = True):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= MAX_SIZE:
            raise HexPositionError(f"hex solver: size must be an integer in 1..{MAX_SIZE}, got {size!r}")
        self.size = int(size)
        self.cells = self.size * self.size
        self.node_limit, self.time_limit = node_limit, time_limit
        self._neighbours, self._ring_own, self._edges = _tables(self.size)
        self._useless = _useless_table()
        self.use_vc = use_vc
        rng = np.random.default_rng(20031)
        self._zobrist = rng.integers(1, 2**63, size=(4, self.cells), dtype=np.int64).astype(np.uint64)
        self._zobrist[0, 0] = np.uint64(rng.integers(1, 2**63))  # the side key (White to move)
        entries = 2 * (1 << tt_log2)
        self._tt = (np.zeros(entries, np.uint64), np.full(entries, -1, np.int8), np.zeros(entries, np.uint64),
                    np.zeros(entries, np.uint64), np.zeros(entries, np.int64))

    # ---- positions ----------------------------------------------------------

    def board_of(self, cells) -> tuple[np.ndarray, int]:
        """The flat board int8[N] and the side to move after ``cells`` played in order
        (Black first); HexPositionError for a cell off the board, a repeated cell, or a
        position already won."""
        board = np.zeros(self.cells, np.int8)
        for ply, cell in enumerate(cells):
            if isinstance(cell, bool) or not isinstance(cell, (int, np.integer)):
                raise HexPositionError(f"cell {cell!r} is not an integer")
            cell = int(cell)
            if not 0 <= cell < self.cells:
                raise HexPositionError(f"cell {cell} is off the board (cells are 0..{self.cells - 1} on "
                                       f"{self.size}x{self.size})")
            if board[cell] != EMPTY:
                raise HexPositionError(f"cell {cell} is repeated (played at ply {ply})")
            board[cell] = BLACK if ply % 2 == 0 else WHITE
        self._check_not_won(board)
        return board, BLACK if len(cells) % 2 == 0 else WHITE

    def _check_not_won(self, board):
        winner = _chain_winner(board, self._neighbours, self._edges)
        if winner:
            raise HexPositionError(f"position already won by {'Black' if winner == BLACK else 'White'}")

    # ---- solving ------------------------------------------------------------

    def solve(self, cells, *, node_limit: int | None = None, time_limit: float | None = None) -> HexResult:
        """Value and every winning move after ``cells`` (played cells, in move order)."""
        board, mover = self.board_of(list(cells))
        return self._solve(board, mover, node_limit, time_limit)

    def solve_board(self, board, to_move, *, node_limit: int | None = None,
                    time_limit: float | None = None) -> HexResult:
        """The same for a board int[size, size] (0 empty, 1 Black, 2 White) and the colour
        to move (1 or 2)."""
        board = np.asarray(board)
        if board.shape != (self.size, self.size):
            raise HexPositionError(f"board must have shape ({self.size}, {self.size}), got {board.shape}")
        if not np.isin(board, (EMPTY, BLACK, WHITE)).all():
            raise HexPositionError("board cells must be 0 (empty), 1 (Black) or 2 (White)")
        if to_move not in (BLACK, WHITE):
            raise HexPositionError(f"to_move must be 1 (Black) or 2 (White), got {to_move!r}")
        flat = np.ascontiguousarray(board.reshape(-1), dtype=np.int8).copy()
        self._check_not_won(flat)
        return self._solve(flat, int(to_move), node_limit, time_limit)

    def analyze(self, cells, *, node_limit: int | None = None, time_limit: float | None = None) -> list:
        """Per cell: +1 if the side to move wins by playing there, -1 if not, None for an
        occupied cell (or one left unknown when a limit was reached)."""
        board, mover = self.board_of(list(cells))
        values = self._move_values(board, mover, node_limit, time_limit)[0]
        return values

    def _solve(self, board, mover, node_limit, time_limit) -> HexResult:
        t0 = time.perf_counter()
        values, nodes = self._move_values(board, mover, node_limit, time_limit)
        seconds = time.perf_counter() - t0
        if any(v is None for p, v in enumerate(values) if board[p] == EMPTY):
            return HexResult(None, (), nodes, seconds)
        winning = tuple(p for p, v in enumerate(values) if v == 1)
        return HexResult(1 if winning else -1, winning, nodes, seconds)

    def _move_values(self, board, mover, node_limit, time_limit):
        """([+1 / -1 / None per cell], nodes): each move is proved unless a refutation
        already shows it loses (a move outside the carrier of a refuted move's proof)."""
        node_limit = self.node_limit if node_limit is None else node_limit
        time_limit = self.time_limit if time_limit is None else time_limit
        stats = np.zeros(3, np.int64)
        stats[1] = -1 if node_limit is None else int(node_limit)
        deadline = 0.0
        if time_limit is not None:
            stats[2] = 1
            deadline = time.perf_counter() + float(time_limit)
        values: list[int | None] = [None] * self.cells
        opp = 3 - mover
        must = None  # the intersection of the refutations' carriers (cells that might win)
        for m in _root_order(board, mover, self._neighbours, self._edges):
            m = int(m)
            if must is not None and not must[m]:
                values[m] = -1
                continue
            board[m] = mover
            won = _chain_winner(board, self._neighbours, self._edges) == mover
            if won:
                r = LOSS
            else:
                r, lo, hi = _search(board, opp, self._neighbours, self._ring_own, self._edges, self._useless,
                                    self._zobrist, *self._tt, stats, deadline, self.use_vc)
            board[m] = EMPTY
            if r == ABORT:
                break
            if r == LOSS:
                values[m] = 1
            else:
                values[m] = -1
                carrier = _carrier_mask(int(lo), int(hi), self.cells)
                must = carrier if must is None else must & carrier
        for m in range(self.cells):  # moves skipped before the limit stopped the search
            if board[m] == EMPTY and values[m] is None and must is not None and not must[m]:
                values[m] = -1
        return values, int(stats[0])


def _carrier_mask(lo: int, hi: int, cells: int) -> np.ndarray:
    bits = lo | (hi << 64)
    return np.array([(bits >> p) & 1 == 1 for p in range(cells)], bool)
