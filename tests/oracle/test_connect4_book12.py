"""The 12-ply book against our own search: its converted scores equal the solver's
without it, the solver with it answers as without it before ply 12 (and the published
first-move scores), and a missing or altered table is refused with one warning."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from oracle_service.connect4_book12 import (BOOK_PLY, NOT_IN_BOOK, book_score, load_book, read_table,
                                            table_path)
from oracle_service.connect4_solver import Connect4Solver, parse_moves, win_score
from oracle_service.service import OracleWorker
from tests.oracle.test_connect4_solver import random_position
from tests.oracle.test_oracle_cli import REPO, run



def test_the_table_is_installed():
    # bitbully-databases is a pinned dependency: without it the tests below fail, not skip.
    path = table_path()
    assert path is not None and path.is_file(), "bitbully-databases is not installed (pip install -c constraints.txt -e .)"


@pytest.fixture(scope="module")
def book():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the installed table must load without a warning
        return load_book()


@pytest.fixture(scope="module")
def searched():
    return Connect4Solver(tt_log2_size=22, use_book=False)


def lookup(book, moves):
    cur, mask, plies = parse_moves(moves)
    assert plies == BOOK_PLY
    return book_score(book.codes, book.scores, np.uint64(cur), np.uint64(mask))


@pytest.mark.slow
def test_book_scores_equal_the_search_on_random_12_ply_positions(book, searched):
    rng = random.Random(12)
    positions = [random_position(rng, BOOK_PLY) for _ in range(120)]  # about 0.1 s of search each
    found = {}
    for moves in positions:
        score = lookup(book, moves)
        exact = searched.solve(moves)
        if score == NOT_IN_BOOK:
            # The table leaves out what the search never asks it: the mover wins at once.
            assert exact == win_score(BOOK_PLY), moves
        else:
            assert score == exact, moves
            found[moves] = score
    assert len(found) > 60
    values = list(found.values())
    assert min(values) < 0 < max(values) and 0 in values  # losses, draws and wins all checked


def test_one_of_each_mirror_pair_is_found_from_either_side(book):
    rng = random.Random(7)
    mirror = str.maketrans("1234567", "7654321")
    checked = 0
    for _ in range(100):
        moves = random_position(rng, BOOK_PLY)
        score = lookup(book, moves)
        assert lookup(book, moves.translate(mirror)) == score
        checked += score != NOT_IN_BOOK
    assert checked > 50


def test_first_move_scores_are_the_published_ones():
    solver = Connect4Solver(tt_log2_size=22, use_book5=False)  # searched down to ply 12, not read
    t0 = time.perf_counter()
    assert solver.analyze("") == [-2, -1, 0, 1, 0, -1, -2]
    assert solver.solve("") == 1
    assert time.perf_counter() - t0 < 1.0  # 0.2 s here from an empty table; minutes without the book
    assert solver.book_leaves > 0


@pytest.mark.slow
@pytest.mark.parametrize("plies,count", [(6, 1), (7, 2), (8, 3), (9, 4), (10, 6), (11, 6)])
def test_the_book_changes_no_score_before_ply_12(searched, plies, count):
    rng = random.Random(plies)
    with_book = Connect4Solver(tt_log2_size=22)
    for _ in range(count):
        moves = random_position(rng, plies)
        assert with_book.solve(moves) == searched.solve(moves), moves
        if plies >= 9:  # every column's score too, where the search without the book is quick
            assert with_book.analyze(moves) == searched.analyze(moves), moves


@pytest.mark.slow
def test_cli_analyzes_the_empty_board_in_under_a_second():
    # The answer's time: the command's, less a process that only starts (Python, numba's
    # cached kernels, the table's checksum and load: about 1.5 s here).
    t0 = time.perf_counter()
    start = subprocess.run([sys.executable, "-c", "from oracle_service.connect4_solver import Connect4Solver; "
                            "Connect4Solver()"], cwd=REPO, timeout=300)
    started = time.perf_counter() - t0
    t0 = time.perf_counter()
    proc = run(["--game", "connect4", "--analyze"], ["-"])
    answered = time.perf_counter() - t0
    assert start.returncode == 0
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert proc.stdout.split() == ["-", "-2", "-1", "0", "1", "0", "-1", "-2"]
    # The answer takes 0.2 s (above); two process starts on shared cores differ by up to a second.
    assert answered - started < 2.0, (answered, started)


def test_an_altered_or_missing_table_warns_once_and_gives_the_empty_book(tmp_path):
    altered = tmp_path / "altered.dat"
    shutil.copyfile(table_path(), altered)
    with open(altered, "r+b") as f:
        f.seek(4)  # the first record's score byte
        changed = (f.read(1)[0] + 1) % 256
        f.seek(4)
        f.write(bytes([changed]))
    for path, words in ((altered, "sha256"), (tmp_path / "none.dat", "missing")):
        with pytest.warns(RuntimeWarning, match=words) as caught:
            empty = load_book(path)
        assert len(caught) == 1 and "without it" in str(caught[0].message)
        assert empty.codes.size == 0
    # The altered file still parses: the checksum, not the format, is what refuses it.
    assert read_table(altered).codes.size == load_book().codes.size


def test_the_service_counts_book_leaves(tmp_path):
    worker = OracleWorker(str(tmp_path / "store.sqlite"), tt_log2_size=20)
    assert worker.stats()["book_leaves"] == 0
    worker.connect4_solve(["4", "4444"])
    leaves = worker.stats()["book_leaves"]
    assert leaves > 0
    worker.connect4_solve(["4444"])  # from the store: no search, no new leaf
    assert worker.stats()["book_leaves"] == leaves
