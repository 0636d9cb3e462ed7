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
  opponent's immediate wins and virtual connections (``hex_vc.py``, with the edge
  templates of ``hex_templates.py``) start that intersection before any move is
  searched.
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

Moves the opponent could kill at once are not searched (``_drop_vulnerable``): when an
opponent's stone on q would make the mover's cell p dead, the mover's p is never better
than its q.

Moves are searched best first by the resistance evaluation (``hex_resistance.py``: the
cells carrying most of both players' edge-to-edge currents), and a node's proof number
looks only at the first half of its live moves in that order (DFPN widening, as in
MoHex's solver): the search proves a win with the likely moves before it spreads over
the rest. Its disproof number still counts every live move, and a move proved losing
leaves the window, so every move is searched before a node is declared lost.

The transposition table (``TransTable``, one record of parallel arrays) maps a Zobrist
hash of the filled position and the side to move to the proven value and its carrier;
two entries per bucket, one kept by subtree size and one always replaced, so memory is
bounded. It lives as long as the ``HexSolver``, so labelling many positions of one game
is cheap.

Cells are bitsets of two uint64 words (``lo`` cells 0..63, ``hi`` 64..127), enough for
9 x 9 = 81 cells.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from games.hex import label_groups
from oracle_service.hex_resistance import add_flows
from oracle_service.hex_templates import EdgeTemplates, find_edge_templates, no_templates
from oracle_service.hex_vc import SC_CAP, hsearch
from oracle_service.jit import refcount_free

EMPTY, BLACK, WHITE, DEAD = 0, 1, 2, 3
MAX_SIZE = 9
# Ring order of the six neighbours, cyclic (each is adjacent to the next):
_RING_STEPS = ((-1, 0), (-1, 1), (0, 1), (1, 0), (1, -1), (0, -1))
WIN, LOSS = 1, 0  # what a position's facts decide for its side to move
_INF = np.int64(1 << 30)  # a proof or disproof number that no search reaches: proved
_PROVEN_WORK = np.int64(2**31 - 1)  # the subtree size a proof is stored with (kept first)
ORDER_PATHS, ORDER_RESISTANCE = 0, 1  # the move orderings of _order_moves
_ORDERINGS = {"paths": ORDER_PATHS, "resistance": ORDER_RESISTANCE}


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


@refcount_free
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


@refcount_free
def _killed_by(board, p, q, colour, neighbours, ring_own, useless):
    """Whether a stone of ``colour`` on the empty cell q would make the empty cell p dead."""
    board[q] = colour
    killed = _dead(board, p, neighbours, ring_own, useless)
    board[q] = EMPTY
    return killed


@refcount_free
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
                    if (_killed_by(board, p, q, colour, neighbours, ring_own, useless)
                            and _killed_by(board, q, p, colour, neighbours, ring_own, useless)):
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
def _drop_vulnerable(board, mover, neighbours, ring_own, useless, moves, count):
    """Drop from moves[:count] the mover's moves the opponent could kill at once: p is
    *vulnerable* to an empty neighbour q when an opponent's stone at q would make p dead.
    The mover's move at p is then never better than its move at q (Bjornsson, Hayward,
    Johanson and van Rijswijck 2006: after p, the opponent's q would leave a dead stone
    and an opponent's stone), so only q needs searching. A move is dropped only for a
    killer not dropped itself, so no two moves drop each other; a killer outside the
    mustplay loses, and so does what it dominates. Returns the new count.

    Carriers stay valid: giving the winner (the opponent, when this node is lost) more
    cells keeps a dead cell dead, and a killer the winner then owns leaves p dead already
    (a dead move is a pass, no better than a losing move)."""
    opp = 3 - mover
    dropped = np.zeros(board.shape[0], np.bool_)
    kept = 0
    for i in range(count):
        p = moves[i]
        for k in range(6):
            q = neighbours[p, k]
            if q < 0 or board[q] != EMPTY or dropped[q]:
                continue
            if _killed_by(board, p, q, opp, neighbours, ring_own, useless):
                dropped[p] = True
                break
        if not dropped[p]:
            moves[kept] = p
            kept += 1
    return kept


@refcount_free
def _group_flags(board, colour, neighbours, edges, label, flags, stack):
    """Label the groups of ``colour`` (label[p] = group index, -1 elsewhere) and their
    edge bits (flags[g]); returns whether one group touches both edges."""
    label[:] = -1
    groups = label_groups(board, colour, neighbours, edges, label, flags, stack, 0)
    for g in range(groups):
        if flags[g] == 3:
            return True
    return False


@refcount_free
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


@refcount_free
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
def _order_moves(board, mover, neighbours, edges, moves, count, scratch, queue, ordering):
    """Sort moves[:count] best first. ``ordering`` ORDER_PATHS: the cells on both
    players' shortest paths first (the least sum of each player's edge-to-edge distance
    through the cell); ORDER_RESISTANCE: the cells carrying the most of both players'
    currents first (``hex_resistance.py``)."""
    n = board.shape[0]
    if ordering == ORDER_RESISTANCE:
        flow = np.zeros(n)
        add_flows(board, mover, neighbours, edges, flow)
        add_flows(board, 3 - mover, neighbours, edges, flow)
        score = -flow
    else:
        score = np.zeros(n)
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


@refcount_free
def _hash(board, mover, zobrist):
    h = zobrist[0, 0] if mover == WHITE else np.uint64(0)
    for p in range(board.shape[0]):
        v = board[p]
        if v != EMPTY:
            h ^= zobrist[v, p]
    return h


class TransTable(NamedTuple):
    """The transposition table: E entries (two per bucket, E a power of two), entry s of
    each array together. Built by ``_new_table``; numba takes the record as one argument."""

    key: np.ndarray  # uint64[E]: Zobrist hash of the position (filled, with the side to move)
    pn: np.ndarray  # int32[E]: proof number, -1 for an empty slot
    dn: np.ndarray  # int32[E]: disproof number
    lo: np.ndarray  # uint64[E]: carrier, cells 0..63: the proof's (proved), else the threats' and refutations'
    hi: np.ndarray  # uint64[E]: carrier, cells 64..127
    mlo: np.ndarray  # uint64[E]: mustplay (not proved yet), cells 0..63; 0 with mhi: unknown
    mhi: np.ndarray  # uint64[E]: mustplay, cells 64..127
    work: np.ndarray  # int32[E]: subtree size (nodes) of the search that stored it, the largest for a proof


def _new_table(buckets: int) -> TransTable:
    """An empty table of ``buckets`` buckets (a power of two) of two entries."""
    entries = 2 * buckets
    return TransTable(key=np.zeros(entries, np.uint64), pn=np.full(entries, -1, np.int32),
                      dn=np.zeros(entries, np.int32), lo=np.zeros(entries, np.uint64), hi=np.zeros(entries, np.uint64),
                      mlo=np.zeros(entries, np.uint64), mhi=np.zeros(entries, np.uint64),
                      work=np.zeros(entries, np.int32))


@refcount_free
def _tt_probe(h, tt):
    """(found, pn, dn, lo, hi, mustplay lo, hi) of position ``h`` in the table ``tt``.
    Proved (pn or dn 0): lo/hi is the proof's carrier. Not yet: lo/hi is the carrier of
    the threats and refutations found so far, and the mustplay their intersection (0
    when unknown)."""
    key, pn = tt.key, tt.pn
    slot = np.int64(h & np.uint64(key.shape[0] // 2 - 1)) * 2
    for s in range(slot, slot + 2):
        if key[s] == h and pn[s] >= 0:
            return True, np.int64(pn[s]), np.int64(tt.dn[s]), tt.lo[s], tt.hi[s], tt.mlo[s], tt.mhi[s]
    zero = np.uint64(0)
    return False, np.int64(1), np.int64(1), zero, zero, zero, zero


@refcount_free
def _tt_store(h, pn, dn, lo, hi, mlo, mhi, work, tt):
    """Store position ``h`` in the table ``tt``. Two entries per bucket: the first kept
    for the larger subtree (a proof counts as the largest: it is never recomputed), the
    second always replaced."""
    key = tt.key
    slot = np.int64(h & np.uint64(key.shape[0] // 2 - 1)) * 2
    if pn == 0 or dn == 0:
        work = _PROVEN_WORK
    if key[slot + 1] == h:
        s = slot + 1
    elif key[slot] == h or work >= tt.work[slot]:
        s = slot
    else:
        s = slot + 1
    key[s], tt.lo[s], tt.hi[s], tt.mlo[s], tt.mhi[s] = h, lo, hi, mlo, mhi
    tt.pn[s] = min(pn, _INF)
    tt.dn[s] = min(dn, _INF)
    tt.work[s] = min(work, _PROVEN_WORK)


@njit(cache=True)
def _node_facts(board, mover, neighbours, edges, label, flags, stack, moves, use_vc, templates, mover_vc):
    """What a (filled) position shows before any move is searched:
    (WIN, LOSS or -1 undecided, carrier lo, hi, mustplay lo, hi).

    Decided: a chain already made (by filled-in captured cells), an immediate win of the
    mover, or a virtual connection of either side. Undecided: the carrier holds the
    opponent's threats (its immediate wins and semi-connections, each a way to win that
    the mover must break) and the mustplay their intersection, outside which every move
    loses. ``mover_vc`` False skips the mover's H-search, where the caller knows it
    finds nothing (``_mid``'s ``mover_quiet``)."""
    zero = np.uint64(0)
    opp = 3 - mover
    if _group_flags(board, mover, neighbours, edges, label, flags, stack):
        return WIN, zero, zero, zero, zero
    if _group_flags(board, opp, neighbours, edges, label, flags, stack):
        return LOSS, zero, zero, zero, zero
    lo, hi = zero, zero
    mlo, mhi = ~zero, ~zero
    # the labels of opp from the test above give its immediate wins, each a threat
    # with carrier {cell}
    threats = _winning_cells(board, opp, neighbours, edges, label, flags, moves)
    for i in range(threats):
        blo, bhi = _bit(moves[i])
        mlo &= blo
        mhi &= bhi
        lo |= blo
        hi |= bhi
    _group_flags(board, mover, neighbours, edges, label, flags, stack)
    if _winning_cells(board, mover, neighbours, edges, label, flags, moves) > 0:
        wlo, whi = _bit(moves[0])
        return WIN, wlo, whi, zero, zero
    if threats < 2 and use_vc:
        vc_out = np.empty((1, 2), np.uint64)
        sc_out = np.empty((SC_CAP, 2), np.uint64)
        if mover_vc:
            has_vc, nsc = hsearch(board, mover, neighbours, edges, templates, vc_out, sc_out)
            if has_vc:  # connected even with the opponent to move
                return WIN, vc_out[0, 0], vc_out[0, 1], zero, zero
            if nsc > 0:  # connects by moving
                return WIN, sc_out[0, 0], sc_out[0, 1], zero, zero
        has_vc, nsc = hsearch(board, opp, neighbours, edges, templates, vc_out, sc_out)
        if has_vc:
            return LOSS, vc_out[0, 0], vc_out[0, 1], zero, zero
        for i in range(nsc):
            mlo &= sc_out[i, 0]
            mhi &= sc_out[i, 1]
            lo |= sc_out[i, 0]
            hi |= sc_out[i, 1]
    return -1, lo, hi, mlo, mhi


@njit(cache=True)
def _mid(board, mover, h, th_pn, th_dn, neighbours, ring_own, edges, useless, zobrist, tt, stats, deadline, use_vc,
         templates, prune, ordering, widen, mover_quiet):
    """One visit of depth-first proof-number search (Nagai's MID, with the 1 + epsilon
    threshold of Pawlewicz and Lew) at the position ``board`` (hash ``h``, before any
    filling), for the side to move: returns (pn, dn, carrier lo, hi) once pn >= th_pn
    or dn >= th_dn. pn == 0: the mover wins; dn == 0: it loses; the carrier is valid for
    those only.

    pn and dn are negamax numbers: pn is the least dn of a child, dn the sum of the
    children's pn. A child proved a win for the opponent (a losing move) narrows the
    mustplay to its carrier, so its siblings outside that carrier are dropped as
    losing too, as the carriers of ``_node_facts``'s threats do before any child is
    searched.

    mover_quiet: the parent's facts showed no threat of this node's mover (no
    semi-connection, no immediate win: the parent's mustplay was the whole board). The
    mover has no more stones here than there, so its H-search is skipped unless the
    filling gave it captured cells: it would find nothing (16 openings: the same median
    nodes, 8% less time).

    tt: the transposition table (``TransTable``), read and written.

    stats int64[4]: nodes so far, node limit (-1 none), 1 if ``deadline`` (a
    time.perf_counter() value) is to be checked, 1 once a limit stopped the search (then
    every visit returns at once, unproven)."""
    n = board.shape[0]
    zero = np.uint64(0)
    stats[0] += 1
    if stats[1] >= 0 and stats[0] > stats[1]:
        stats[3] = 1
    if stats[2] and stats[0] & 255 == 0 and _now() > deadline:
        stats[3] = 1
    if stats[3]:
        return np.int64(1), np.int64(1), zero, zero
    found, pn, dn, lo, hi, mlo, mhi = _tt_probe(h, tt)
    if found and (pn == 0 or dn == 0):
        return pn, dn, lo, hi
    start = stats[0]
    opp = 3 - mover
    filled = np.empty(n, np.int64)
    nfill, cap_lo, cap_hi = _fill_inferior(board, neighbours, ring_own, useless, filled)
    hf = h
    for i in range(nfill):
        hf ^= zobrist[board[filled[i]], filled[i]]
    label = np.empty(n, np.int64)
    flags = np.empty(n, np.int64)
    stack = np.empty(2 * n + 2, np.int64)  # also the distance queue of _order_moves
    moves = np.empty(n, np.int64)
    if found and (mlo != 0 or mhi != 0):  # a visit before this one stored the facts
        res = -1
    else:
        mover_vc = not mover_quiet
        for i in range(nfill):
            if board[filled[i]] == mover:  # a captured cell: the mover may connect now
                mover_vc = True
        res, lo, hi, mlo, mhi = _node_facts(board, mover, neighbours, edges, label, flags, stack, moves, use_vc,
                                            templates, mover_vc)
    # the mustplay keeps every bit (even those beyond the board) only where the opponent
    # had no threat and no refutation has narrowed it: the children's ``mover_quiet``
    opp_quiet = res == -1 and mlo == ~zero and mhi == ~zero
    if res == WIN:
        pn, dn = np.int64(0), _INF
    elif res == LOSS:
        pn, dn = _INF, np.int64(0)
    else:
        count = 0
        for p in range(n):
            if board[p] == EMPTY and _has(mlo, mhi, p):
                moves[count] = p
                count += 1
        if prune and count > 1:
            count = _drop_vulnerable(board, mover, neighbours, ring_own, useless, moves, count)
        if count > 1:
            _order_moves(board, mover, neighbours, edges, moves, count, label, stack, ordering)
        cpn = np.empty(count, np.int64)
        cdn = np.empty(count, np.int64)
        clo = np.empty(count, np.uint64)
        chi = np.empty(count, np.uint64)
        side = zobrist[0, 0]
        for i in range(count):
            m = moves[i]
            _, cpn[i], cdn[i], clo[i], chi[i], _, _ = _tt_probe(hf ^ zobrist[mover, m] ^ side, tt)
            if cpn[i] == 0:  # a losing move already known
                mlo &= clo[i]
                mhi &= chi[i]
                lo |= clo[i]
                hi |= chi[i]
        while True:
            pn, dn = _INF, np.int64(0)
            best, best_dn, second_dn = -1, _INF, _INF
            window = count  # widening: how many of the live moves (best ordered first) pn looks at
            if widen > 0:
                live = 0
                for i in range(count):
                    if _has(mlo, mhi, moves[i]) and cpn[i] != 0:
                        live += 1
                if live > 1:
                    window = 1 + (live * widen + 99) // 100
            seen = 0
            for i in range(count):
                if not _has(mlo, mhi, moves[i]) or cpn[i] == 0:
                    continue
                if cdn[i] == 0:  # the reply loses: the mover wins
                    blo, bhi = _bit(moves[i])
                    pn, dn, lo, hi = np.int64(0), _INF, clo[i] | blo, chi[i] | bhi
                    best = -1
                    break
                dn = min(dn + cpn[i], _INF)
                seen += 1
                if seen > window:
                    continue
                if cdn[i] < best_dn:
                    best, best_dn, second_dn = i, cdn[i], best_dn
                elif cdn[i] < second_dn:
                    second_dn = cdn[i]
            if best < 0:  # proved: won above, or no move left (lost, carrier lo/hi)
                break
            pn = best_dn
            if pn >= th_pn or dn >= th_dn or stats[3]:
                break
            child_th_pn = min(th_dn - dn + cpn[best], _INF)
            child_th_dn = th_pn if second_dn >= _INF else min(th_pn, second_dn + second_dn // 4 + 1)
            m = moves[best]
            board[m] = mover
            cpn[best], cdn[best], clo[best], chi[best] = _mid(
                board, opp, hf ^ zobrist[mover, m] ^ side, child_th_pn, child_th_dn, neighbours, ring_own, edges,
                useless, zobrist, tt, stats, deadline, use_vc, templates, prune, ordering, widen, opp_quiet)
            board[m] = EMPTY
            if cpn[best] == 0:
                mlo &= clo[best]
                mhi &= chi[best]
                lo |= clo[best]
                hi |= chi[best]
    proved = pn == 0 or dn == 0
    if proved:
        lo |= cap_lo
        hi |= cap_hi
        mlo, mhi = zero, zero
    if proved or not stats[3]:
        _tt_store(h, pn, dn, lo, hi, mlo, mhi, stats[0] - start, tt)
    for i in range(nfill):
        board[filled[i]] = EMPTY
    return pn, dn, lo, hi


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
def _root_order(board, mover, neighbours, edges, ordering):
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
        _order_moves(board, mover, neighbours, edges, moves, count, scratch, queue, ordering)
    return moves[:count]


# ------------------------------------------------------------------- solver


def _int_in(value, lo: int, hi: int) -> bool:
    """Whether ``value`` is an integer (not a bool) in lo..hi: the solver's options."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and lo <= value <= hi


class HexSolver:
    """Win/loss and every winning move of Hex positions on a ``size x size`` board.

    ``node_limit`` / ``time_limit`` (seconds) bound one call (they can be overridden per
    call); a call that reaches one answers ``value=None``. The transposition table
    (``2**tt_log2`` buckets of two entries, 52 bytes each) is kept across calls.
    ``use_vc=False`` turns H-search off, ``templates=False`` only the edge templates of
    ``hex_templates.py`` (what finding them uses), ``prune=False`` the dropping of
    vulnerable moves (``_drop_vulnerable``). ``ordering`` "resistance" (the default) or
    "paths" (the players' shortest-path distances, cheaper and weaker) orders the moves;
    ``widen`` is the percentage of a node's live moves its proof number looks at (0: all).
    """

    def __init__(self, size: int, *, node_limit: int | None = None, time_limit: float | None = None,
                 tt_log2: int = 20, use_vc: bool = True, templates: bool = True, prune: bool = True,
                 ordering: str = "resistance", widen: int = 50):
        if not _int_in(size, 1, MAX_SIZE):
            raise HexPositionError(f"hex solver: size must be an integer in 1..{MAX_SIZE}, got {size!r}")
        self.size = int(size)
        self.cells = self.size * self.size
        self.node_limit, self.time_limit = node_limit, time_limit
        self._neighbours, self._ring_own, self._edges = _tables(self.size)
        self._useless = _useless_table()
        self.use_vc, self.prune = use_vc, prune
        if ordering not in _ORDERINGS:
            raise ValueError(f"hex solver: ordering must be one of {sorted(_ORDERINGS)}, got {ordering!r}")
        self.ordering = _ORDERINGS[ordering]
        if not _int_in(widen, 0, 100):
            raise ValueError(f"hex solver: widen must be a percentage 0..100 (0: off), got {widen!r}")
        self.widen = int(widen)
        if not _int_in(tt_log2, 1, 30):
            raise ValueError(f"hex solver: tt_log2 must be an integer in 1..30 (2**tt_log2 buckets of 104 bytes), "
                             f"got {tt_log2!r}")
        # the 4th-row edge templates H-search cannot derive (found once per size, by a solver without them)
        self._templates = (edge_templates(self.size) if use_vc and templates else no_templates()).arrays
        rng = np.random.default_rng(20031)
        self._zobrist = rng.integers(1, 2**63, size=(4, self.cells), dtype=np.int64).astype(np.uint64)
        self._zobrist[0, 0] = np.uint64(rng.integers(1, 2**63))  # the side key (White to move)
        self._tt = _new_table(1 << tt_log2)

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

    def solve_value(self, cells, *, node_limit: int | None = None, time_limit: float | None = None) -> HexResult:
        """The value after ``cells`` and, where the side to move wins, one winning move
        (``winning`` holds that one only): a single proof, where ``solve`` proves every
        winning move. What an opponent playing perfectly, and a dataset that needs only
        the value, ask for."""
        board, mover = self.board_of(list(cells))
        t0 = time.perf_counter()
        stats, deadline = self._limits(node_limit, time_limit)
        pn, dn = self._root(board, mover, stats, deadline)[:2]
        winning: tuple[int, ...] = ()
        if pn == 0:
            move = self._winning_move(board, mover, stats, deadline)
            winning = () if move is None else (move,)
        value = -1 if dn == 0 else 1 if winning else None
        return HexResult(value, winning, int(stats[0]), time.perf_counter() - t0)

    def _limits(self, node_limit, time_limit):
        """(stats, deadline) of one call: the search's counters (``_mid``) and limits."""
        node_limit = self.node_limit if node_limit is None else node_limit
        time_limit = self.time_limit if time_limit is None else time_limit
        stats = np.zeros(4, np.int64)
        stats[1] = -1 if node_limit is None else int(node_limit)
        deadline = 0.0
        if time_limit is not None:
            stats[2] = 1
            deadline = time.perf_counter() + float(time_limit)
        return stats, deadline

    def _root(self, board, mover, stats, deadline):
        """(pn, dn, carrier lo, hi) of the position: pn 0 won, dn 0 lost, else a limit
        stopped the search."""
        return _mid(board, mover, _hash(board, mover, self._zobrist), _INF, _INF, self._neighbours, self._ring_own,
                    self._edges, self._useless, self._zobrist, self._tt, stats, deadline, self.use_vc,
                    self._templates, self.prune, self.ordering, self.widen, False)

    def _reply(self, board, mover, m, stats, deadline):
        """(pn, dn, carrier lo, hi) of the opponent after ``mover`` plays ``m``: dn 0
        (and no carrier) where the move completes the mover's chain."""
        board[m] = mover
        try:
            if _chain_winner(board, self._neighbours, self._edges) == mover:
                return _INF, 0, 0, 0
            return self._root(board, 3 - mover, stats, deadline)
        finally:
            board[m] = EMPTY

    def black_carrier(self, board) -> frozenset[int] | None:
        """The cells of Black's winning carrier on a flat board int8[N] (0/1/2) with
        White to move; None where White does not lose (or already has its chain). What
        the edge template search proves with."""
        if _chain_winner(board, self._neighbours, self._edges):
            return None
        stats, deadline = self._limits(None, None)
        pn, dn, lo, hi = self._root(board.copy(), WHITE, stats, deadline)
        if dn != 0:
            return None
        return frozenset(int(p) for p in np.flatnonzero(_carrier_mask(int(lo), int(hi), self.cells)))

    def _winning_move(self, board, mover, stats, deadline):
        """A winning move of a won position just proved: the child the proof used, read
        from the table (as ``_mid`` keys it, after the root's filling), else the first
        move of the position whose reply a search proves lost (the filling may have left
        no empty cell: captured cells can complete a chain). None if a limit stops that
        search."""
        filled = board.copy()
        _fill_inferior(filled, self._neighbours, self._ring_own, self._useless, np.empty(self.cells, np.int64))
        key = _hash(filled, mover, self._zobrist) ^ self._zobrist[0, 0]
        for m in _root_order(filled, mover, self._neighbours, self._edges, self.ordering):
            if _tt_probe(key ^ self._zobrist[mover, m], self._tt)[2] == 0:
                return int(m)
        for m in _root_order(board, mover, self._neighbours, self._edges, self.ordering):
            m = int(m)
            if self._reply(board, mover, m, stats, deadline)[1] == 0:
                return m
            if stats[3]:  # a limit was reached
                return None
        return None

    def _move_values(self, board, mover, node_limit, time_limit):
        """([+1 / -1 / None per cell], nodes). The position is proved first: where the
        mover loses, that one proof refutes every move. Otherwise each move is proved,
        unless a refutation already shows it loses (a move outside the carrier of a
        refuted move's proof), or the position is its own 180-degree rotation (the empty
        board) and the move's image was proved already: the two moves lead to rotations
        of one position, so they have one value."""
        stats, deadline = self._limits(node_limit, time_limit)
        values: list[int | None] = [None] * self.cells
        pn, dn = self._root(board, mover, stats, deadline)[:2]
        if dn == 0:
            return [-1 if v == EMPTY else None for v in board], int(stats[0])
        if pn != 0:
            return values, int(stats[0])
        last = self.cells - 1  # the rotation maps cell p to last - p, and keeps both colours' edges
        symmetric = bool(np.array_equal(board, board[::-1]))
        must = None  # the intersection of the refutations' carriers (cells that might win)
        for m in _root_order(board, mover, self._neighbours, self._edges, self.ordering):
            m = int(m)
            if must is not None and not must[m]:
                values[m] = -1
                continue
            if symmetric and values[last - m] is not None:
                values[m] = values[last - m]
                continue
            pn, dn, lo, hi = self._reply(board, mover, m, stats, deadline)
            if pn != 0 and dn != 0:  # a limit stopped the search
                break
            if dn == 0:  # the reply loses
                values[m] = 1
            else:
                values[m] = -1
                carrier = _carrier_mask(int(lo), int(hi), self.cells)
                must = carrier if must is None else must & carrier
        for m in range(self.cells):  # moves skipped before the limit stopped the search
            if board[m] == EMPTY and values[m] is None and must is not None and not must[m]:
                values[m] = -1
        return values, int(stats[0])


@functools.lru_cache(maxsize=None)
def edge_templates(size: int) -> EdgeTemplates:
    """The edge templates of a ``size x size`` board (``hex_templates.py``), found once
    per process by a solver without them."""
    return find_edge_templates(size, HexSolver(size, tt_log2=14, templates=False).black_carrier)


def _carrier_mask(lo: int, hi: int, cells: int) -> np.ndarray:
    bits = lo | (hi << 64)
    return np.array([(bits >> p) & 1 == 1 for p in range(cells)], bool)
