"""The labels of the Connect Four datasets' early states (plies 0-11, solved through the
12-ply book) against references that share nothing with the solver's search: the
published scores of the first move, a plain alpha-beta over the rules down to the
12-ply table, and the solver without the book on positions it decides quickly."""

import numpy as np
import pytest

from evaluation.datasets import load_dataset
from games.connect4 import moves_to_digits
from oracle_service.connect4_book12 import BOOK_PLY, NOT_IN_BOOK, book_score, load_book
from oracle_service.connect4_solver import Connect4Solver, parse_moves
from tests.oracle.test_connect4_solver import COLS, ROWS, _four_at, grid_of

# The published scores of the first move in each column (Pons' solver, the book's own
# tests): the centre wins with the first player's last stone, the edges lose.
FIRST_MOVE_SCORES = [-2, -1, 0, 1, 0, -1, -2]
ORDER = (3, 2, 4, 1, 5, 0, 6)  # centre first: alpha-beta cuts sooner, any order is exact


@pytest.fixture(scope="module")
def plain():
    return Connect4Solver(tt_log2_size=20, use_book=False)


def table_search(cols, moves: str, alpha: int, beta: int, book, plain) -> int:
    """The score of the position ``moves`` (its columns ``cols``, bottom first) by
    alpha-beta over the rules down to ply 12, where the table answers; positions the
    table leaves out are solved without the book (at 12 plies that takes milliseconds)."""
    ply = len(moves)
    if ply == BOOK_PLY:
        cur, mask, _ = parse_moves(moves)
        score = book_score(book.codes, book.scores, np.uint64(cur), np.uint64(mask))
        return plain.solve(moves) if score == NOT_IN_BOOK else int(score)
    who = ply % 2
    for c in range(COLS):  # a four at once is the best score there is
        if len(cols[c]) < ROWS:
            cols[c].append(who)
            won = _four_at(cols, c, len(cols[c]) - 1, who)
            cols[c].pop()
            if won:
                return 22 - (ply // 2 + 1)  # 22 minus the winner's stones
    for c in ORDER:
        if len(cols[c]) == ROWS:
            continue
        cols[c].append(who)
        score = -table_search(cols, moves + str(c + 1), -beta, -alpha, book, plain)
        cols[c].pop()
        if score >= beta:
            return score
        alpha = max(alpha, score)
    return alpha


def table_analysis(moves: str, book, plain) -> list:
    """Each column's exact score (None for a full one) of a position before ply 12."""
    cols = grid_of(moves)
    out = []
    for c in range(COLS):
        if len(cols[c]) == ROWS:
            out.append(None)
            continue
        cols[c].append(len(moves) % 2)
        if _four_at(cols, c, len(cols[c]) - 1, len(moves) % 2):
            out.append(22 - (len(moves) // 2 + 1))
        else:
            out.append(-table_search(cols, moves + str(c + 1), -100, 100, book, plain))
        cols[c].pop()
    return out


@pytest.mark.parametrize("name", ["connect4-uniform", "connect4-eps-optimal"])
def test_early_states_against_the_table_and_the_published_scores(name, plain):
    d = load_dataset(name)
    plies, moves, move_scores = d.plies, d.moves, d.column("move_scores")
    early = np.flatnonzero(plies < BOOK_PLY)
    assert set(plies[early].tolist()) >= set(range(3, BOOK_PLY)), "states of the plies before 12"
    for i in np.flatnonzero(plies <= 1):  # the empty board, then the first move's positions
        if plies[i] == 0:
            assert move_scores[i] == FIRST_MOVE_SCORES
        else:
            assert max(s for s in move_scores[i] if s is not None) == -FIRST_MOVE_SCORES[moves[i][0]]
    book = load_book()
    rng = np.random.default_rng(1)
    for ply in range(6, BOOK_PLY):  # from ply 6 on a plain search down to the table takes about a second
        at = np.flatnonzero(plies == ply)
        for i in rng.choice(at, size=min(2, at.size), replace=False):
            digits = moves_to_digits(moves[i])
            assert move_scores[i] == table_analysis(digits, book, plain), digits
    # The solver without the book, where its search is quick: opening states that end soon.
    soon = np.flatnonzero((plies >= 10) & (plies < BOOK_PLY) & (d.groups == "easy-opening"))
    assert soon.size >= 3
    for i in soon[:3]:
        digits = moves_to_digits(moves[i])
        assert plain.solve(digits) == d.column("score")[i], digits
