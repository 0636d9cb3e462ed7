"""Edge templates for the Hex solver, found by the solver itself.

An *edge template* is a virtual connection between one stone and its colour's edge:
with the opponent to move, the stone still reaches the edge using only the cells of the
template's carrier. H-search (``hex_vc.py``) derives the 2nd-row template (II) and the
3rd-row ziggurat (IIIa) from bridges, but not the 4th row's (IVa and friends), whose
proof needs an OR of threats that themselves need an OR. Those are what let a lone
stone four rows from an edge count as connected to it, and on 7x7 the 4th row is next
to the middle.

Rather than copy template pictures, each board size finds its own: for every cell on
rows 2 to 4 from Black's top edge, a position is built in which Black's stone there
reaches the bottom edge for free (a column of Black stones below it, every other cell
below its row White) and the rows between it and the top edge are empty. The solver
(without templates) proves whether Black, with White to move, still connects; the
proof's carrier is then shrunk one cell at a time (the cell given to White, the
position proved again) until no cell can go: a minimal carrier. Everything outside it
is White in the last proof, so the carrier is valid on any board where its cells are
empty or Black's, whatever stands outside it. The other three edges are the same
templates under the 180-degree rotation (Black's bottom edge) and the transposition
(White's edges: it swaps the colours' roles and keeps the hex adjacency).

Sizes up to 9 take about a second each, once per process
(``hex_solver.edge_templates`` keeps them per size; ``find_edge_templates`` here takes
the prover as an argument, so this module does not import the solver that uses it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_ROW = 3  # the stone's row from the edge row (0): 1 = template II, 2 = IIIa, 3 = the 4th row
EMPTY, BLACK, WHITE = 0, 1, 2  # hex_solver's cell values


@dataclass(frozen=True)
class EdgeTemplates:
    """The edge templates of one board size: template t joins a stone of ``colour[t]``
    on ``cell[t]`` to that colour's edge ``side[t]`` (0: row 0 / column 0, 1: the last)
    with the carrier ``carrier_lo[t]``, ``carrier_hi[t]`` (cells 0-63, 64-127)."""

    size: int
    colour: np.ndarray  # int64[T], 1 Black or 2 White
    cell: np.ndarray  # int64[T]
    side: np.ndarray  # int64[T]
    carrier_lo: np.ndarray  # uint64[T]
    carrier_hi: np.ndarray  # uint64[T]

    @property
    def arrays(self) -> tuple:
        """What ``hex_vc.hsearch`` takes."""
        return self.colour, self.cell, self.side, self.carrier_lo, self.carrier_hi

    def __len__(self) -> int:
        return len(self.cell)

    def carriers(self, colour: int, cell: int, side: int) -> list[set[int]]:
        """The carriers (sets of cells) of the templates of ``colour`` from ``cell`` to ``side``."""
        out = []
        for t in range(len(self)):
            if self.colour[t] == colour and self.cell[t] == cell and self.side[t] == side:
                bits = int(self.carrier_lo[t]) | int(self.carrier_hi[t]) << 64
                out.append({p for p in range(self.size * self.size) if bits >> p & 1})
        return out


def no_templates(size: int = 0) -> EdgeTemplates:
    empty = np.zeros(0, np.int64)
    return EdgeTemplates(size, empty, empty, empty, np.zeros(0, np.uint64), np.zeros(0, np.uint64))


# A prover: the cells of Black's winning carrier on a flat board int8[N] with White to
# move, or None where White is not lost (or already has its chain).
Prover = Callable[[np.ndarray], "frozenset[int] | None"]


def find_edge_templates(size: int, black_carrier: Prover) -> EdgeTemplates:
    """Every edge template of a ``size x size`` board with its stone on rows 2-4 from
    the edge (one or two minimal carriers per stone and edge), for both colours and
    all four edges, proved by ``black_carrier`` (a solver without templates)."""
    top = []  # (cell, carrier cells) of Black's top edge
    for row in range(1, min(MAX_ROW, size - 1) + 1):
        for col in range(size):
            for carrier in _minimal_carriers(size, row, col, black_carrier):
                top.append((row * size + col, carrier))
    n = size * size

    def rotate(p):  # 180 degrees: Black's top edge to its bottom edge
        return n - 1 - p

    def transpose(p):  # (r, c) -> (c, r): Black's edges to White's
        return (p % size) * size + p // size

    rows = []
    for cell, carrier in top:
        for colour, side, f in ((1, 0, lambda p: p), (1, 1, rotate), (2, 0, transpose),
                                (2, 1, lambda p: transpose(rotate(p)))):
            bits = sum(1 << f(p) for p in carrier)
            rows.append((colour, f(cell), side, bits & (2**64 - 1), bits >> 64))
    if not rows:
        return no_templates(size)
    colour, cell, side, lo, hi = zip(*rows)
    return EdgeTemplates(size, np.array(colour, np.int64), np.array(cell, np.int64), np.array(side, np.int64),
                         np.array(lo, np.uint64), np.array(hi, np.uint64))


def _minimal_carriers(size: int, row: int, col: int, black_carrier: Prover) -> list[frozenset[int]]:
    """The minimal carriers found for Black's stone at (row, col) to the top edge: the
    proof's carrier shrunk cell by cell, once from the left and once from the right
    (which finds a template and its mirror image where they differ); [] if none."""
    n = size * size
    base = np.zeros(n, np.int8)
    for r in range(row + 1, size):
        for c in range(size):
            base[r * size + c] = BLACK if c == col else WHITE
    base[row * size + col] = BLACK

    first = black_carrier(base)
    if first is None:
        return []
    found = []
    for descending in (False, True):
        carrier = first
        shrinking = True
        while shrinking:
            shrinking = False
            for x in sorted(carrier, reverse=descending):
                board = base.copy()
                keep = carrier - {x}
                board[[p for p in range(n) if board[p] == EMPTY and p not in keep]] = WHITE
                smaller = black_carrier(board)
                if smaller is not None:
                    carrier = smaller & keep
                    shrinking = True
                    break
        if carrier not in found:
            found.append(carrier)
    return found
