"""Our Connect Four engine against BitBully (the optional extra ``selfplay[bitbully]``,
an independent C++ solver): equal scores, --analyze scores of every column and weak
answers on positions of every ply from 0 to 42, from random play, epsilon-optimal
play and play that keeps the game going to the last cell; the same answers for a
``Board`` and its moves; the same error lines on the command line; one store for
both. The tests that need BitBully are skipped only where the extra is not installed
(CI installs it: ``make setup``); those of the default path run without it."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from games.connect4 import WIDTH
from oracle_service.connect4_engines import make_engine
from oracle_service.connect4_solver import Board, Connect4Solver, parse_moves
from oracle_service.store import open_store
from tests.oracle.test_oracle_cli import REPO, check_errors, run

# Without the book our engine needs seconds to minutes a position before ply ~10: it is
# compared from this ply on only (its scores before are pinned by test_connect4_book12).
NO_BOOK_FROM_PLY = 10
CELLS = 42


@pytest.fixture(scope="module")
def bitbully():
    pytest.importorskip("bitbully", reason="the optional extra selfplay[bitbully] is not installed")
    return make_engine("bitbully")


@pytest.fixture(scope="module")
def ours():
    return Connect4Solver(tt_log2_size=22)


def _over(moves: str) -> bool:
    try:
        parse_moves(moves)
    except ValueError:
        return True
    return False


def mirror(moves: str) -> str:
    return "".join(str(8 - int(d)) for d in moves)


def _legal(moves: str) -> list[int]:
    return [c for c in range(WIDTH) if moves.count(str(c + 1)) < 6]


def games(reference, seed: int = 0) -> dict[str, list[str]]:
    """Move strings of every position reached, per kind of play: ``random`` (uniform over
    the legal columns), ``epsilon`` (a best move by ``reference``'s analysis, a random
    one with probability 0.25) and ``long`` (uniform over the moves that do not end the
    game, which reaches the last cells). Positions already over are left out."""
    rng = random.Random(seed)
    found: dict[str, list[str]] = {"random": [], "epsilon": [], "long": []}
    for kind, count in (("random", 8), ("epsilon", 6), ("long", 8)):
        for _ in range(count):
            moves = ""
            while len(moves) < CELLS and not _over(moves):
                found[kind].append(moves)
                if kind == "random" or (kind == "epsilon" and rng.random() < 0.25):
                    column = rng.choice(_legal(moves))
                elif kind == "epsilon":
                    scores = reference.analyze(moves)
                    best = max(s for s in scores if s is not None)
                    column = rng.choice([c for c, s in enumerate(scores) if s == best])
                else:
                    going = [c for c in _legal(moves) if not _over(moves + str(c + 1))]
                    if not going:
                        break
                    column = rng.choice(going)
                moves += str(column + 1)
    return found


@pytest.fixture(scope="module")
def positions(bitbully):
    return sorted({m for ms in games(bitbully).values() for m in ms}, key=len)


def test_the_positions_cover_every_ply(positions):
    plies = {len(m) for m in positions}
    assert plies == set(range(CELLS)), sorted(set(range(CELLS)) - plies)
    assert len(positions) >= 300


@pytest.mark.slow
def test_ours_equals_bitbully_at_every_ply(ours, bitbully, positions):
    for moves in positions:
        expected = bitbully.analyze(moves)
        assert ours.analyze(moves) == expected, moves
        assert ours.solve(moves) == bitbully.solve(moves) == max(s for s in expected if s is not None), moves
        assert ours.solve(moves, weak=True) == bitbully.solve(moves, weak=True), moves
        assert ours.analyze(moves, weak=True) == bitbully.analyze(moves, weak=True), moves


@pytest.mark.slow
def test_ours_without_the_book_equals_bitbully_from_ply_10(bitbully, positions):
    searched = make_engine("ours", use_book=False, tt_log2_size=22)
    late = [m for m in positions if len(m) >= NO_BOOK_FROM_PLY]
    assert len(late) >= 200
    for moves in late:
        assert searched.solve(moves) == bitbully.solve(moves), moves
    for moves in late[::4]:
        assert searched.analyze(moves) == bitbully.analyze(moves), moves


def test_the_full_board_and_a_won_game_are_the_same_errors(ours, bitbully, positions):
    last = [m + str(_legal(m)[0] + 1) for m in positions if len(m) == CELLS - 1]
    assert last
    for moves in last:  # the last stone fills the board, or completes a four
        errors = []
        for engine in (ours, bitbully):
            with pytest.raises(ValueError, match="full|won") as error:
                engine.solve(moves)
            errors.append(str(error.value))
        assert errors[0] == errors[1]


def test_boards_and_states_answer_as_their_moves(ours, bitbully, positions):
    sample = positions[::25]
    parsed = [parse_moves(m) for m in sample]
    cur, mask, plies = (np.array([p[j] for p in parsed], dtype=dt)
                        for j, dt in ((0, np.uint64), (1, np.uint64), (2, np.int64)))
    expected = [bitbully.solve(m) for m in sample]
    assert bitbully.solve_states(cur, mask, plies).tolist() == expected
    assert ours.solve_states(cur, mask, plies).tolist() == expected
    for moves, (c, m, _) in zip(sample, parsed):
        board = Board(c, m)
        assert bitbully.solve(board) == ours.solve(board) == bitbully.solve(moves)
        assert bitbully.analyze(board) == bitbully.analyze(moves)
    with pytest.raises(ValueError, match="over"):
        ours.solve_states(np.array([0], np.uint64), np.array([0b1111], np.uint64), np.array([4]))
    with pytest.raises(ValueError, match="stones"):
        bitbully.solve_states(np.array([0], np.uint64), np.array([0b1111], np.uint64), np.array([4]))


@pytest.mark.slow
def test_the_command_line_answers_and_errors_alike(bitbully, positions):
    lines = [positions[40], "1111111", "4484", positions[300], "1212121", "-"]
    answers = {}
    for engine in ("ours", "bitbully"):
        for mode in ([], ["--analyze"], ["--weak"]):
            proc = run(["--game", "connect4", "--engine", engine, *mode], lines)
            assert proc.returncode == 1
            check_errors(proc.stderr, [(2, "full"), (3, "8"), (5, "won")])
            answers[engine, tuple(mode)] = (proc.stdout, proc.stderr)
    for mode in ([], ["--analyze"], ["--weak"]):
        assert answers["ours", tuple(mode)] == answers["bitbully", tuple(mode)]
    scores = bitbully.analyze(positions[40])
    assert answers["bitbully", ("--analyze",)][0].splitlines()[0].split()[1:] == \
        ["-" if s is None else str(s) for s in scores]


def test_a_position_solved_by_either_engine_is_stored_once_with_its_mirror(bitbully, positions, tmp_path):
    from oracle_service.service import OracleWorker

    store = str(tmp_path / "oracle.sqlite")
    sample = [m for m in positions if len(m) >= 6][::40]
    mirrors = [mirror(m) for m in sample]
    # What the store should hold: each position and its live children, a board and its
    # mirror image being one entry.
    def board(moves):
        return parse_moves(moves)[:2]

    expected = {min(board(m + c), board(mirror(m + c)))
                for m in sample for c in ["", *"1234567"]
                if len(m) + len(c) < CELLS and not _over(m + c)}
    by_bitbully = OracleWorker(store, engine="bitbully", tt_log2_size=16)
    first = by_bitbully.connect4_analyze(sample)
    assert by_bitbully.stats()["solved"] == len(sample)
    assert len(open_store(store)) == len(expected)
    by_ours = OracleWorker(store, tt_log2_size=16)
    again = by_ours.connect4_analyze(mirrors)
    stats = by_ours.stats()
    assert (stats["store_hits"], stats["solved"]) == (len(sample), 0)
    assert len(open_store(store)) == len(expected)
    assert [a.value for a in again] == [a.value[::-1] for a in first]
    assert [a.value for a in first] == [bitbully.analyze(m) for m in sample]


def test_an_unknown_engine_is_named():
    with pytest.raises(ValueError, match="unknown connect4 engine 'pons'"):
        make_engine("pons")
    proc = run(["--game", "connect4", "--engine", "pons"], ["4"])
    assert proc.returncode == 2 and "invalid choice: 'pons'" in proc.stderr


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)


@pytest.mark.slow
def test_the_default_path_does_not_import_bitbully():
    proc = _python(
        "import io, sys\n"
        "from oracle_service.cli import main\n"
        "from oracle_service.service import OracleWorker\n"
        "from oracle_service.store import NullStore\n"
        "out = io.StringIO()\n"
        "assert main(['solve', '--game', 'connect4'], stdin=io.StringIO('4453\\n'), stdout=out) == 0\n"
        "assert out.getvalue() == '4453 -2\\n', out.getvalue()\n"
        "OracleWorker(NullStore(), tt_log2_size=16).connect4_solve(['44'])\n"
        "assert 'bitbully' not in sys.modules\n")
    assert proc.returncode == 0, proc.stderr


def test_bitbully_missing_names_the_extra():
    # sys.modules[name] = None makes the import fail as for a package not installed.
    proc = _python(
        "import sys\n"
        "sys.modules['bitbully'] = None\n"
        "from oracle_service.cli import main\n"
        "main(['solve', '--game', 'connect4', '--engine', 'bitbully'])\n")
    assert proc.returncode == 2
    assert "selfplay[bitbully]" in proc.stderr and "AGPL-3.0" in proc.stderr, proc.stderr
