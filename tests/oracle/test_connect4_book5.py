"""The 5-ply book: the committed file is what its generator writes (all of it, about 2 s),
it lists each mirror class up to ply 5 once (counted here by an independent enumeration),
its scores equal BitBully's (an independent solver) and the published first-move scores,
the solver answers these positions from it without searching, and a missing or altered
file is refused with one warning."""

from __future__ import annotations

import hashlib
import shutil
import warnings

import numpy as np
import pytest

from oracle_service.connect4_book5 import BOOK5_PLY, BOOK5_SHA256, book5_path, load_book5
from oracle_service.connect4_book5_build import generate
from oracle_service.connect4_engines import make_engine
from oracle_service.connect4_solver import Board, Connect4Solver, parse_moves


def lines() -> dict[str, int]:
    out = {}
    for line in book5_path().read_text().splitlines():
        moves, score = line.split()
        out["" if moves == "-" else moves] = int(score)
    return out


@pytest.fixture(scope="module")
def solver():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the packaged file must load without a warning
        return Connect4Solver(tt_log2_size=20)


def test_the_file_is_what_the_generator_writes():
    assert hashlib.sha256(book5_path().read_bytes()).hexdigest() == BOOK5_SHA256
    assert generate() == book5_path().read_text()


def test_one_line_per_mirror_class_at_each_ply():
    # Independent count: positions as tuples of column contents, a class as the smaller of
    # a position and its reversal, grown ply by ply from the empty board.
    level = {((),) * 7}
    expected = [1]
    for ply in range(BOOK5_PLY):
        level = {tuple(col + (ply % 2,) if i == c else col for i, col in enumerate(pos))
                 for pos in level for c in range(7)}
        expected.append(len({min(pos, pos[::-1]) for pos in level}))
    listed = lines()
    assert [sum(len(m) == p for m in listed) for p in range(BOOK5_PLY + 1)] == expected
    assert expected == [1, 4, 25, 121, 568, 2144]
    assert load_book5().keys.size == len(listed) == sum(expected)


def test_the_first_move_scores_are_the_published_ones(solver):
    # Pons and BitBully: -2 -1 0 1 0 -1 -2 for columns 1..7, the centre wins (+1).
    listed = lines()
    assert listed[""] == 1
    assert [-listed[str(min(c, 8 - c))] for c in range(1, 8)] == [-2, -1, 0, 1, 0, -1, -2]
    before = solver.nodes
    assert solver.analyze("") == [-2, -1, 0, 1, 0, -1, -2]
    assert solver.solve("") == 1 and solver.solve("", weak=True) == 1
    assert solver.nodes == before  # read, not searched


def test_every_score_equals_bitbully():
    pytest.importorskip("bitbully", reason="the optional extra selfplay[bitbully] is not installed")
    reference = make_engine("bitbully")
    wrong = {m: (s, reference.solve(m)) for m, s in lines().items() if reference.solve(m) != s}
    assert not wrong, list(wrong.items())[:10]


def test_the_solver_reads_every_path_and_the_mirror(solver):
    listed = lines()
    sample = [m for i, m in enumerate(listed) if i % 97 == 0]  # about 30, every ply
    mirror = str.maketrans("1234567", "7654321")
    before, leaves = solver.nodes, solver.book_leaves
    for moves in sample:
        score = listed[moves]
        cur, mask, _ = parse_moves(moves)
        assert solver.solve(moves) == solver.solve(moves.translate(mirror)) == score, moves
        assert solver.solve(Board(cur, mask)) == score
        assert solver.solve(moves, weak=True) == np.sign(score)
    assert solver.solve_many(sample) == [listed[m] for m in sample]
    assert solver.nodes == before and solver.book_leaves == leaves + 4 * len(sample) + len(sample)
    # Past ply 5 the solver searches (down to the 12-ply book).
    solver.solve("4444443")
    assert solver.nodes > before


def test_without_the_file_the_search_gives_the_same_scores():
    searched = Connect4Solver(tt_log2_size=20, use_book5=False)
    assert searched.book5.keys.size == 0
    listed = lines()
    sample = ["4", "17", "444", "1234", "12345", "44444"]
    assert all(m in listed for m in sample)
    assert [searched.solve(m) for m in sample] == [listed[m] for m in sample]
    assert searched.nodes > 0


def test_an_altered_or_missing_file_warns_once_and_gives_the_empty_book(tmp_path):
    altered = tmp_path / "altered.txt"
    shutil.copyfile(book5_path(), altered)
    text = altered.read_text()
    altered.write_text(text.replace("- 1\n", "- 2\n", 1))  # the empty board's score
    for path, words in ((altered, "sha256"), (tmp_path / "none.txt", "cannot be read")):
        with pytest.warns(RuntimeWarning, match=words) as caught:
            empty = load_book5(path)
        assert len(caught) == 1 and "searches" in str(caught[0].message)
        assert empty.keys.size == 0
