"""Tic-tac-toe read straight from its encoding, and solved by brute force, for the
collector tests: values and winners computed without the engine or evaluation/."""

from __future__ import annotations

import functools

import numpy as np

# Cells r*3+c as bits; the eight lines.
LINES = [sum(1 << c for c in line) for line in
         ([0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6])]
FULL = (1 << 9) - 1


def stones(obs: np.ndarray) -> tuple[int, int]:
    """(mover's, opponent's) stone bits of one encoding [2, 3, 3]."""
    bits = obs.reshape(2, 9) > 0
    return (int(sum(1 << c for c in np.flatnonzero(bits[0]))),
            int(sum(1 << c for c in np.flatnonzero(bits[1]))))


def makes_line(stones_bits: int) -> bool:
    return any(stones_bits & line == line for line in LINES)


@functools.cache
def negamax(mine: int, theirs: int, gamma: float) -> float:
    """V(s) = max_a r(s, a) - gamma V(s') for the player to move in the live position
    (``mine``, ``theirs``), by brute force over its game tree."""
    best = -np.inf
    for cell in range(9):
        if (mine | theirs) >> cell & 1:
            continue
        placed = mine | 1 << cell
        if makes_line(placed):
            q = 1.0
        elif placed | theirs == FULL:
            q = 0.0
        else:
            q = -gamma * negamax(theirs, placed, gamma)
        best = max(best, q)
    return best
