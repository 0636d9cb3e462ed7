"""The resistance evaluation of Hex (Anshelevich 2002; the move ordering of MoHex's
solver): how much of each player's edge-to-edge current flows through each empty cell.

For one colour the board is a circuit: an empty cell has resistance 1, the colour's
stones almost none (``_STONE``), the opponent's stones and dead cells none at all (they
conduct nothing). Two adjacent cells are joined with the sum of their resistances, and a
cell on the colour's edge is joined to that edge the same way. One edge is held at 1 V,
the other at 0 V. The current through an empty cell is how much of the colour's
connection runs through it: a cell carrying much of both players' currents is where both
want to play, so the solver searches it first.

The circuit's node equations (Kirchhoff) are a symmetric positive definite system whose
unknowns are the cells in row-major order: a cell's neighbours are at most ``size``
apart, so the matrix is a band of that half-width and its Cholesky factorisation costs
about cells x size^2 operations (a few microseconds on 7x7).
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = 0
_STONE = 0.01  # the resistance of a colour's own stone: a group conducts almost freely
_LEAK = 1e-9  # to ground from every cell: keeps cut-off parts of the circuit solvable


@njit(cache=True)
def _solve_spd(a, b, m, band):
    """Solve a[:m, :m] x = b[:m] in place (x in b) for a symmetric positive definite a
    whose entries vanish more than ``band`` off the diagonal; a's lower band is
    overwritten by its Cholesky factor (which keeps the band)."""
    for j in range(m):
        d = a[j, j]
        for k in range(max(0, j - band), j):
            d -= a[j, k] * a[j, k]
        d = np.sqrt(d)
        a[j, j] = d
        for i in range(j + 1, min(m, j + band + 1)):
            s = a[i, j]
            for k in range(max(0, i - band), j):
                s -= a[i, k] * a[j, k]
            a[i, j] = s / d
    for i in range(m):  # L y = b
        s = b[i]
        for k in range(max(0, i - band), i):
            s -= a[i, k] * b[k]
        b[i] = s / a[i, i]
    for i in range(m - 1, -1, -1):  # L^T x = y
        s = b[i]
        for k in range(i + 1, min(m, i + band + 1)):
            s -= a[k, i] * b[k]
        b[i] = s / a[i, i]


@njit(cache=True)
def add_flows(board, colour, neighbours, edges, flow):
    """Add to ``flow[p]`` the share of ``colour``'s edge-to-edge current through each
    empty cell p (0..1; nothing where no current flows: the colour is cut off)."""
    n = board.shape[0]
    band = 1
    while band * band < n:  # the board's side
        band += 1
    r = np.empty(n)  # resistance per cell, -1 where nothing conducts
    for p in range(n):
        r[p] = 1.0 if board[p] == EMPTY else _STONE if board[p] == colour else -1.0
    a = np.zeros((n, n))
    v = np.zeros(n)
    for p in range(n):
        a[p, p] += _LEAK
        if r[p] < 0:
            continue
        for k in range(6):
            q = neighbours[p, k]
            if q <= p or r[q] < 0:
                continue
            g = 1.0 / (r[p] + r[q])
            a[p, p] += g
            a[q, q] += g
            a[q, p] -= g  # the lower triangle is all the factorisation reads
        if edges[colour, p] & 1:  # the 1 V edge
            a[p, p] += 1.0 / r[p]
            v[p] += 1.0 / r[p]
        if edges[colour, p] & 2:  # the 0 V edge
            a[p, p] += 1.0 / r[p]
    _solve_spd(a, v, n, band)
    current = 0.0
    for p in range(n):
        if r[p] > 0 and edges[colour, p] & 1:
            current += (1.0 - v[p]) / r[p]
    if current <= 1e-12:
        return
    for p in range(n):
        if board[p] != EMPTY:
            continue
        through = 0.0
        for k in range(6):
            q = neighbours[p, k]
            if q >= 0 and r[q] >= 0:
                through += abs(v[p] - v[q]) / (1.0 + r[q])
        if edges[colour, p] & 1:
            through += 1.0 - v[p]
        if edges[colour, p] & 2:
            through += v[p]
        flow[p] += 0.5 * through / current
