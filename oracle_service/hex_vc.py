"""Virtual connections for the Hex solver: H-search (Anshelevich, "A hierarchical
approach to computer Hex", 2002) on cell bitsets, for one colour at a time.

A *virtual connection* (VC) between two nodes x and y, with carrier C (empty cells),
is a guarantee that the colour joins x and y even when the opponent moves first, using
only cells of C. A *semi-connection* (SC) gives the same guarantee when the colour
moves first (its key, the cell to play, is inside C). Nodes are the colour's two edges,
its groups of stones and the empty cells. H-search derives them from adjacency with:

- AND: VC(x, z) with carrier A and VC(z, y) with carrier B, A and B disjoint and
  neither holding the other's endpoint: if z is a group of the colour, VC(x, y) with
  A + B; if z is an empty cell, SC(x, y) with A + B + {z} (the colour must play z);
- OR: SCs between x and y whose carriers have an empty intersection give VC(x, y)
  with their union (whatever the opponent plays, one SC is untouched).

A bridge is the OR of the two SCs through the two empty cells between two stones;
the edge templates II (a stone on the second row) and IIIa (the ziggurat) come out the
same way, between a group and an edge node. The solver uses the edge-to-edge pair
only: a VC there is a win even with the opponent to move, an SC a win for the side
to move, and the carriers of the opponent's SCs bound the mover's useful moves (its
mustplay).

The work-list version: each new VC is combined once, as an AND operand, with the VCs
that meet it and were found before it (read from one flat row per midpoint);
lists are capped (``VC_CAP`` / ``SC_CAP`` carriers per pair, supersets of a kept
carrier dropped), so H-search is incomplete but every connection it reports is sound.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from games.hex import label_groups
from oracle_service.jit import refcount_free

EMPTY = 0
VC_CAP = 4  # carriers kept per pair of nodes
SC_CAP = 8
_OR_DEPTH = 4  # SCs combined at most by one OR
EMPTY_PAIR_CAP = 4  # the largest carrier kept between two empty cells


@njit(cache=True, inline="always")
def _popcount(x):
    c = 0
    while x:
        x &= x - np.uint64(1)
        c += 1
    return c


@njit(cache=True, inline="always")
def _cell_in(cell, lo, hi):
    if cell < 0:
        return False
    if cell < 64:
        return (lo >> np.uint64(cell)) & np.uint64(1) != 0
    return (hi >> np.uint64(cell - 64)) & np.uint64(1) != 0


@refcount_free
def _add(x, y, lo, hi, lists, counts, cap, node_cell, others, other_counts, other_cap):
    """Put carrier (lo, hi) into the list of pair (x, y) (both orders) unless a kept
    carrier is a subset of it (or one of ``others``, the pair's VCs, when adding an SC);
    kept supersets of it are dropped. Returns whether it was added."""
    if x == y or _cell_in(node_cell[x], lo, hi) or _cell_in(node_cell[y], lo, hi):
        return False
    if node_cell[x] >= 0 and node_cell[y] >= 0 and _popcount(lo) + _popcount(hi) > EMPTY_PAIR_CAP:
        return False  # between two empty cells only small carriers pay for their work
    for i in range(other_counts[x, y] if other_cap > 0 else 0):
        if others[x, y, i, 0] & lo == others[x, y, i, 0] and others[x, y, i, 1] & hi == others[x, y, i, 1]:
            return False
    n = counts[x, y]
    keep = 0
    for i in range(n):
        elo, ehi = lists[x, y, i, 0], lists[x, y, i, 1]
        if elo & lo == elo and ehi & hi == ehi:
            return False
        if not (lo & elo == lo and hi & ehi == hi):  # not a superset of the new one
            lists[x, y, keep, 0], lists[x, y, keep, 1] = elo, ehi
            keep += 1
    if keep == cap:  # full: replace the largest carrier if the new one is smaller
        size = _popcount(lo) + _popcount(hi)
        worst, worst_size = -1, size
        for i in range(keep):
            s = _popcount(lists[x, y, i, 0]) + _popcount(lists[x, y, i, 1])
            if s > worst_size:
                worst, worst_size = i, s
        if worst < 0:
            counts[x, y] = keep
            counts[y, x] = keep
            for i in range(keep):
                lists[y, x, i, 0], lists[y, x, i, 1] = lists[x, y, i, 0], lists[x, y, i, 1]
            return False
        lists[x, y, worst, 0], lists[x, y, worst, 1] = lo, hi
    else:
        lists[x, y, keep, 0], lists[x, y, keep, 1] = lo, hi
        keep += 1
    counts[x, y] = keep
    counts[y, x] = keep
    for i in range(keep):
        lists[y, x, i, 0], lists[y, x, i, 1] = lists[x, y, i, 0], lists[x, y, i, 1]
    return True


@refcount_free
def _dominated(x, y, lo, hi, lists, counts):
    """Whether a kept carrier of pair (x, y) is a subset of (lo, hi)."""
    for i in range(counts[x, y]):
        if lists[x, y, i, 0] & lo == lists[x, y, i, 0] and lists[x, y, i, 1] & hi == lists[x, y, i, 1]:
            return True
    return False


@refcount_free
def _push_vc(x, y, lo, hi, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy, qlo, qhi, tail):
    """Add a VC (x, y) and queue it for the AND rule; returns the new queue length."""
    if not _add(x, y, lo, hi, vc, vcn, VC_CAP, node_cell, sc, scn, 0):
        return tail
    # the AND rule's operands at each midpoint (an edge is none); a full row drops it,
    # which loses connections but no soundness
    for a, b in ((x, y), (y, x)):
        if a >= 2 and linkn[a] < links.shape[1]:
            k = linkn[a]
            links[a, k, 0], links[a, k, 1], links[a, k, 2] = np.uint64(b), lo, hi
            links[a, k, 3] = np.uint64(tail)  # its place in the queue (qx.shape[0]: none)
            linkn[a] = k + 1
    if tail < qx.shape[0]:
        qx[tail], qy[tail], qlo[tail], qhi[tail] = x, y, lo, hi
        tail += 1
    return tail


@refcount_free
def _push_templates(board, colour, templates, node_of, group_flags, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy,
                    qlo, qhi, tail):
    """Add the edge templates of ``colour`` that fit the board as VCs (cell node, edge);
    returns the new queue length."""
    n = board.shape[0]
    zero = np.uint64(0)
    tpl_colour, tpl_cell, tpl_side, tpl_lo, tpl_hi = templates
    elo, ehi, blo, bhi = zero, zero, zero, zero  # empty cells, blocked cells
    for p in range(n):
        if board[p] == EMPTY:
            if p < 64:
                elo |= np.uint64(1) << np.uint64(p)
            else:
                ehi |= np.uint64(1) << np.uint64(p - 64)
        elif board[p] != colour:
            if p < 64:
                blo |= np.uint64(1) << np.uint64(p)
            else:
                bhi |= np.uint64(1) << np.uint64(p - 64)
    for t in range(tpl_cell.shape[0]):
        p = tpl_cell[t]
        if tpl_colour[t] != colour or (board[p] != EMPTY and board[p] != colour):
            continue
        if tpl_lo[t] & blo or tpl_hi[t] & bhi:
            continue
        x = node_of[p]
        if board[p] == colour and group_flags[x] & (1 << tpl_side[t]):
            continue  # the group touches that edge already
        tail = _push_vc(x, tpl_side[t], tpl_lo[t] & elo, tpl_hi[t] & ehi, vc, vcn, sc, scn, node_cell, links, linkn,
                        qx, qy, qlo, qhi, tail)
    return tail


@njit(cache=True)
def hsearch(board, colour, neighbours, edges, templates, out_vc, out_sc):
    """H-search for ``colour`` on a flat board (0 empty, 1/2 stones, 3 dead = a wall).

    ``templates``: the edge templates (``hex_templates.EdgeTemplates.arrays``: colour,
    cell, edge side 0/1, carrier lo, hi per template), taken as base VCs where they fit.
    Writes the edge-to-edge connections: out_vc[0] = (lo, hi) of a VC's carrier, out_sc
    [i] = the SCs' carriers. Returns (has a VC, number of SCs written)."""
    n = board.shape[0]
    # nodes: 0 and 1 the colour's edges, then its groups, then the empty cells
    node_of = np.full(n, -1, np.int64)
    group_flags = np.zeros(n + 2, np.int64)
    stack = np.empty(n, np.int64)
    nodes = label_groups(board, colour, neighbours, edges, node_of, group_flags, stack, 2)
    groups_end = nodes
    for p in range(n):
        if board[p] == EMPTY:
            node_of[p] = nodes
            nodes += 1
    node_cell = np.full(nodes, -1, np.int64)
    for p in range(n):
        if board[p] == EMPTY:
            node_cell[node_of[p]] = p
    vc = np.empty((nodes, nodes, VC_CAP, 2), np.uint64)
    vcn = np.zeros((nodes, nodes), np.int64)
    sc = np.empty((nodes, nodes, SC_CAP, 2), np.uint64)
    scn = np.zeros((nodes, nodes), np.int64)
    # links[z, :linkn[z]]: (w, carrier lo, hi, place in the queue) of each VC (z, w) in
    # the order added, the supersets dropped later from vc too (they stay sound, and
    # skipping them costs less than removing them). One flat row per midpoint, so the
    # AND loop's work is a scan of its start: a VC is combined with those queued before
    # it, when it comes off the queue, and never again with those queued after it (their
    # own turn does it). 245 -> 165 us a call (--hsearch 300; 2 fewer edge-to-edge
    # connections of 600: a combination tried twice was a second chance to fit a capped
    # list). Rows of 4 x nodes and a queue of 2 x nodes^2: 1,000 random 7x7 boards of
    # 0-15 stones used at most 1.5 x nodes and 0.44 x nodes^2.
    links = np.empty((nodes, 4 * nodes, 4), np.uint64)
    linkn = np.zeros(nodes, np.int64)
    qcap = 2 * nodes * nodes
    qx = np.empty(qcap, np.int64)
    qy = np.empty(qcap, np.int64)
    qlo = np.empty(qcap, np.uint64)
    qhi = np.empty(qcap, np.uint64)
    head, tail = 0, 0
    zero = np.uint64(0)
    # base: adjacency
    for g in range(2, groups_end):
        for side in range(2):
            if group_flags[g] & (1 << side):
                tail = _push_vc(g, side, zero, zero, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy, qlo, qhi, tail)
    for p in range(n):
        if board[p] != EMPTY:
            continue
        x = node_of[p]
        for side in range(2):
            if edges[colour, p] & (1 << side):
                tail = _push_vc(x, side, zero, zero, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy, qlo, qhi, tail)
        for k in range(6):
            q = neighbours[p, k]
            if q < 0 or (board[q] != EMPTY and board[q] != colour) or (board[q] == EMPTY and q < p):
                continue
            y = node_of[q]
            tail = _push_vc(x, y, zero, zero, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy, qlo, qhi, tail)
    won = vcn[0, 1] > 0
    # The edge templates join only once the closure of the adjacencies is done without an
    # edge-to-edge VC: the first VC found ends the search, and the templates' carriers
    # are large, so the smaller VCs built from bridges come first.
    templates_added = False
    while not won:
        if head == tail:
            if templates_added:
                break
            tail = _push_templates(board, colour, templates, node_of, group_flags, vc, vcn, sc, scn, node_cell, links,
                                   linkn, qx, qy, qlo, qhi, tail)
            templates_added = True
            continue
        x, y, clo, chi = qx[head], qy[head], qlo[head], qhi[head]
        current = np.uint64(head)
        head += 1
        for turn in range(2):  # y as the midpoint, then x
            if turn == 1:
                x, y = y, x
            if y < 2:
                continue  # an edge is no midpoint
            z = y
            zcell = node_cell[z]
            for j in range(linkn[z]):
                if links[z, j, 3] >= current:
                    break  # this one and the rest were queued after the current VC
                dlo, dhi = links[z, j, 1], links[z, j, 2]
                if dlo & clo or dhi & chi:
                    continue
                w = np.int64(links[z, j, 0])
                if w == x:
                    continue
                if _cell_in(node_cell[x], dlo, dhi) or _cell_in(node_cell[w], clo, chi):
                    continue
                ulo, uhi = clo | dlo, chi | dhi
                if zcell < 0:  # a group: the AND gives a VC
                    tail = _push_vc(x, w, ulo, uhi, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy, qlo, qhi, tail)
                    continue
                if zcell < 64:
                    ulo |= np.uint64(1) << np.uint64(zcell)
                else:
                    uhi |= np.uint64(1) << np.uint64(zcell - 64)
                # an SC (x, w); first the OR with the SCs already kept
                a, b = x, w
                if _cell_in(node_cell[a], ulo, uhi) or _cell_in(node_cell[b], ulo, uhi):
                    continue
                if (node_cell[a] >= 0 and node_cell[b] >= 0
                        and _popcount(ulo) + _popcount(uhi) > EMPTY_PAIR_CAP):
                    continue  # neither kept nor part of a kept VC (an OR only grows it)
                if _dominated(a, b, ulo, uhi, vc, vcn) or _dominated(a, b, ulo, uhi, sc, scn):
                    continue  # a kept VC or SC needs no more than this one
                m = scn[a, b]
                found = False
                flo, fhi = zero, zero
                for i1 in range(m):
                    l1, h1 = ulo & sc[a, b, i1, 0], uhi & sc[a, b, i1, 1]
                    if l1 == ulo and h1 == uhi:
                        continue
                    if l1 == 0 and h1 == 0:
                        found, flo, fhi = True, ulo | sc[a, b, i1, 0], uhi | sc[a, b, i1, 1]
                        break
                    for i2 in range(i1 + 1, m):
                        l2, h2 = l1 & sc[a, b, i2, 0], h1 & sc[a, b, i2, 1]
                        if l2 == l1 and h2 == h1:
                            continue
                        if l2 == 0 and h2 == 0:
                            found = True
                            flo = ulo | sc[a, b, i1, 0] | sc[a, b, i2, 0]
                            fhi = uhi | sc[a, b, i1, 1] | sc[a, b, i2, 1]
                            break
                        for i3 in range(i2 + 1, m):
                            l3, h3 = l2 & sc[a, b, i3, 0], h2 & sc[a, b, i3, 1]
                            if l3 == 0 and h3 == 0:
                                found = True
                                flo = ulo | sc[a, b, i1, 0] | sc[a, b, i2, 0] | sc[a, b, i3, 0]
                                fhi = uhi | sc[a, b, i1, 1] | sc[a, b, i2, 1] | sc[a, b, i3, 1]
                                break
                        if found:
                            break
                    if found:
                        break
                if found:
                    tail = _push_vc(a, b, flo, fhi, vc, vcn, sc, scn, node_cell, links, linkn, qx, qy, qlo, qhi, tail)
                else:
                    _add(a, b, ulo, uhi, sc, scn, SC_CAP, node_cell, vc, vcn, VC_CAP)
            if vcn[0, 1] > 0:
                won = True
                break
    if vcn[0, 1] > 0:
        best, best_size = 0, 1 << 30
        for i in range(vcn[0, 1]):
            s = _popcount(vc[0, 1, i, 0]) + _popcount(vc[0, 1, i, 1])
            if s < best_size:
                best, best_size = i, s
        out_vc[0, 0], out_vc[0, 1] = vc[0, 1, best, 0], vc[0, 1, best, 1]
        return True, 0
    for i in range(scn[0, 1]):
        out_sc[i, 0], out_sc[i, 1] = sc[0, 1, i, 0], sc[0, 1, i, 1]
    return False, scn[0, 1]
