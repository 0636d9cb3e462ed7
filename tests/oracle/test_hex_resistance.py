"""The resistance evaluation that orders the Hex solver's moves, against circuits solved
by hand (Kirchhoff's laws on 1x1 and 2x2 boards), a cut-off colour, and its linear
solver against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from oracle_service.hex_resistance import _solve_spd, add_flows
from oracle_service.hex_solver import BLACK, WHITE, _tables


def flows(size, stones, colour):
    neighbours, _, edges = _tables(size)
    board = np.zeros(size * size, np.int8)
    for cell, owner in stones.items():
        board[cell] = owner
    out = np.zeros(size * size)
    add_flows(board, colour, neighbours, edges, out)
    return out


@pytest.mark.parametrize("colour", [BLACK, WHITE])
def test_the_only_cell_carries_all_the_current(colour):
    assert flows(1, {}, colour) == pytest.approx([1.0])


@pytest.mark.parametrize("colour", [BLACK, WHITE])
def test_empty_2x2_board(colour):
    """Cells 0 1 / 2 3, 1 and 2 adjacent. Black: 0 and 1 at 1 V (edge links of
    conductance 1, cell links 0.5); by the 180-degree symmetry V3 = 1 - V0 and
    V2 = 1 - V1, so node 0 gives V0 = 3/4 and node 1 V1 = 2/3; the current is
    (1 - V0) + (1 - V1) = 7/12; through cell 0 half its links' currents, 1/4, is 3/7 of
    it, through cell 1 3/8, 9/14 of it. White's circuit is Black's transposed."""
    assert flows(2, {}, colour) == pytest.approx([3 / 7, 9 / 14, 9 / 14, 3 / 7])


def test_a_stone_blocks_the_opponent_and_carries_nothing():
    """White on the 2x2 board with Black on cell 0: cell 2 (left edge) at V2 = 3/5, cells
    1 and 3 (right edge) at 1/5: all White's current passes cell 2 and splits between
    1 and 3."""
    assert flows(2, {0: BLACK}, WHITE) == pytest.approx([0, 0.5, 1, 0.5])


def test_a_cut_off_colour_has_no_current():
    """Black's column joins top and bottom: White has no path, so no flow anywhere."""
    assert flows(3, {0: BLACK, 3: BLACK, 6: BLACK}, WHITE) == pytest.approx(np.zeros(9))
    black = flows(3, {0: BLACK, 3: BLACK}, BLACK)  # one empty cell left on Black's best path
    assert black[6] == pytest.approx(black.max()) and black[6] > 0.5


@pytest.mark.parametrize("m,band", [(1, 1), (5, 5), (49, 49), (49, 7), (81, 9), (81, 2)])
def test_banded_cholesky_solve_agrees_with_numpy(m, band):
    rng = np.random.default_rng(m * 100 + band)
    x = rng.normal(size=(m, m))
    a = x @ x.T + m * np.eye(m)
    a[np.abs(np.subtract.outer(np.arange(m), np.arange(m))) > band] = 0  # still diagonally dominant enough
    a += np.diag(np.abs(a).sum(axis=1))
    b = rng.normal(size=m)
    expected = np.linalg.solve(a, b)
    work, v = np.tril(a), b.copy()  # the solver reads the lower triangle only
    _solve_spd(work, v, m, band)
    assert v == pytest.approx(expected, rel=1e-9, abs=1e-12)
