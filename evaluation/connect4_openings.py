"""Counts of the Connect Four positions after 4 plies under each rule tried to reproduce
the AVI paper's "406 (after 4 plies)" (Table 1); the counts are quoted in
``evaluation.datasets``. Each 4-ply position is solved exactly (about 6 s for all).

    python -m evaluation.connect4_openings
"""

from __future__ import annotations

import numpy as np

import games
from evaluation.builders import distinct_after
from evaluation.connect4_data import canonical_keys
from games.connect4 import moves_to_digits
from oracle_service.connect4_solver import Connect4Solver, plies_to_end

PLIES = 4
TARGET = 406


def _columns(moves: list[int]) -> list[list[int]]:
    """Each column's stones bottom up, 0 for the first player's, 1 for the second's."""
    cols = [[] for _ in range(7)]
    for i, c in enumerate(moves):
        cols[c].append(i % 2)
    return cols


def rule_counts() -> list[tuple[str, int, int]]:
    """(rule, mirror classes kept, positions kept) for each rule, over the 568 classes
    (1120 positions) after 4 plies; the first player is to move in all of them."""
    game = games.make("connect4")
    classes = distinct_after(game, PLIES, canonical_keys)
    cols = [_columns(m) for m in classes]
    # A class holds one position when the position is its own mirror image, else two.
    weight = np.array([1 if k == k[::-1] else 2 for k in cols])
    solver = Connect4Solver(tt_log2_size=22)
    column_scores = np.array([[-999 if s is None else s for s in solver.analyze(moves_to_digits(m))]
                              for m in classes])
    score = column_scores.max(axis=1)
    remaining = np.array([plies_to_end(int(s), PLIES) for s in score])
    value_keeping = (np.sign(column_scores) == np.sign(score)[:, None]).sum(axis=1)
    forced = (score > 0) & (remaining <= 3)  # the mover's next-but-one stone completes a four
    rules = {
        "every class": np.ones(len(classes), bool),
        "the mover wins": score > 0,
        "a draw": score == 0,
        "the mover loses": score < 0,
        "not won by the side that just moved (mover not lost)": score >= 0,
        "not won by the mover": score <= 0,
        "not decided by a forced sequence (no win within 3 plies)": ~forced,
        "mover not lost, no win within 3 plies": (score >= 0) & ~forced,
        "the mover not lost within 30 plies": ~((score < 0) & (remaining <= 30)),
        "not decided within 35 plies": ~((score != 0) & (remaining <= 35)),
        "a unique best-score move": (column_scores == score[:, None]).sum(axis=1) == 1,
        "some move changes the value (a mistake is possible)": value_keeping < 7,
        "a mistake is possible, no win within 3 plies": (value_keeping < 7) & ~forced,
        "no column holds 3 stones": np.array([max(len(c) for c in k) < 3 for k in cols]),
        "stones in 3 or more columns": np.array([sum(1 for c in k if c) >= 3 for k in cols]),
        "no stone on one of its own colour": np.array([all(c[i] != c[i + 1] for c in k for i in range(len(c) - 1))
                                                       for k in cols]),
    }
    return [(rule, int(keep.sum()), int(weight[keep].sum())) for rule, keep in rules.items()]


def main() -> int:
    print(f"{'rule':60s} {'classes':>7s} {'positions':>9s}")
    for rule, classes, positions in rule_counts():
        mark = "  <- 406" if TARGET in (classes, positions) else ""
        print(f"{rule:60s} {classes:7d} {positions:9d}{mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
