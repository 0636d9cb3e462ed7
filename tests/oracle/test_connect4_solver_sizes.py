"""The strong solver on Connect Four boards other than 7x6, checked by independent means:
every position of 4x4 against a plain memoised negamax over lists of columns (scores,
win/draw/loss counts per ply, and the position count of Tromp's table), the empty boards
against Tromp's values, random positions of 5x4, 6x4, 5x5 and of the boards whose keys
exceed 52 bits against the same negamax, plies to the end, the books being 7x6's only,
size errors, and the command line at sizes."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import games
from oracle_service import cli
from oracle_service.connect4_engines import make_engine
from oracle_service.connect4_solver import Connect4Solver, parse_moves, plies_to_end, score_bounds

REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------- independent reference: lists of columns
#
# A position is a tuple of columns, each a tuple of stones from the bottom up (0 = the
# first player's, 1 = the second's). Nothing here shares code with the bitboards.


def _completes_four(cols, c, who, width, height) -> bool:
    """Whether the top stone of column ``c`` (``who``'s) is part of a four."""
    r = len(cols[c]) - 1
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            k = 1
            while True:
                cc, rr = c + sign * k * dc, r + sign * k * dr
                if 0 <= cc < width and 0 <= rr < len(cols[cc]) and cols[cc][rr] == who:
                    run += 1
                    k += 1
                else:
                    break
        if run >= 4:
            return True
    return False


def _drop(cols, c, who):
    return cols[:c] + (cols[c] + (who,),) + cols[c + 1:]


class PlainNegamax:
    """Exact scores by negamax over every move, memoised per position, no pruning. Score
    of the side to move after ``n`` plies: a win with its next stone is worth
    ``(cells + 1 - n) // 2`` (one less for each later move of the winner's, as the
    recursion subtracts nothing: the deeper win has the larger n), a draw 0, a loss the
    negative of the opponent's win."""

    def __init__(self, width: int, height: int):
        self.width, self.height, self.cells = width, height, width * height
        self.memo: dict = {}

    def moves(self, cols):
        """(column, child, the move ends the game, the mover's score if it does)."""
        n = sum(map(len, cols))
        who = n % 2
        for c in range(self.width):
            if len(cols[c]) < self.height:
                child = _drop(cols, c, who)
                if _completes_four(child, c, who, self.width, self.height):
                    yield c, child, True, (self.cells + 1 - n) // 2
                else:
                    yield c, child, n + 1 == self.cells, 0

    def score(self, cols) -> int:
        found = self.memo.get(cols)
        if found is None:
            found = max(s if over else -self.score(child) for _, child, over, s in self.moves(cols))
            self.memo[cols] = found
        return found

    def column_scores(self, cols) -> list[int | None]:
        out: list[int | None] = [None] * self.width
        for c, child, over, s in self.moves(cols):
            out[c] = s if over else -self.score(child)
        return out

    def length(self, cols) -> int:
        """Plies to the end under play that keeps the score: along a best column."""
        scores = self.column_scores(cols)
        best = max(s for s in scores if s is not None)
        c, child, over, _ = next(m for m in self.moves(cols) if scores[m[0]] == best)
        return 1 if over else 1 + self.length(child)


def enumerate_positions(width: int, height: int) -> list[dict]:
    """Per ply, every reachable position (won and full ones included) -> whether it is over."""
    level = {((),) * width: False}
    plies = [level]
    ref = PlainNegamax(width, height)
    while True:
        nxt = {}
        for cols, over in level.items():
            if not over:
                for _, child, ends, _ in ref.moves(cols):
                    nxt.setdefault(child, ends)
        if not nxt:
            return plies
        plies.append(nxt)
        level = nxt


def bitboards(positions, height):
    """(current uint64[B], mask uint64[B], plies int64[B]) of column tuples, in the layout
    of games.connect4 (bit = col * (height + 1) + row)."""
    cur, mask, plies = [], [], []
    for cols in positions:
        n = sum(map(len, cols))
        c_bits = m_bits = 0
        for c, col in enumerate(cols):
            for r, who in enumerate(col):
                bit = 1 << (c * (height + 1) + r)
                m_bits |= bit
                if who == n % 2:
                    c_bits |= bit
        cur.append(c_bits)
        mask.append(m_bits)
        plies.append(n)
    return np.array(cur, np.uint64), np.array(mask, np.uint64), np.array(plies, np.int64)


def random_position(ref: PlainNegamax, plies: int, rng: random.Random):
    """A position after ``plies`` random moves that ended nothing: (columns, digits)."""
    while True:
        cols, digits = ((),) * ref.width, ""
        for _ in range(plies):
            c, child, over, _ = rng.choice(list(ref.moves(cols)))
            if over:
                break
            cols, digits = child, digits + str(c + 1)
        else:
            return cols, digits


def outcome(score: int) -> str:
    return "win" if score > 0 else "loss" if score < 0 else "draw"


# --------------------------------------------------------------------- 4x4, whole


@pytest.fixture(scope="module")
def four_by_four():
    return enumerate_positions(4, 4)


def test_4x4_has_tromps_161029_positions(four_by_four):
    """Tromp's count of 4x4 positions is every position a game reaches, the empty board and
    the finished ones (won or full) included; 134,289 of them are still to be played."""
    assert [len(level) for level in four_by_four[:3]] == [1, 4, 16]  # nothing repeats before ply 3
    assert sum(len(level) for level in four_by_four) == 161_029
    assert sum(not over for level in four_by_four for over in level.values()) == 134_289


def test_engine_reaches_the_positions_of_the_enumeration(four_by_four):
    """The engine's children, ply by ply, are the enumeration's positions: the same bitboards."""
    game = games.make("connect4", width=4, height=4)
    level = game.init(1)
    for n, expected in enumerate(four_by_four):
        cur, mask, _ = bitboards(expected, 4)
        assert sorted(zip(level.current.tolist(), level.mask.tolist())) == sorted(zip(cur.tolist(), mask.tolist())), n
        over = dict(zip(zip(cur.tolist(), mask.tolist()), expected.values()))
        assert [over[k] for k in zip(level.current.tolist(), level.mask.tolist())] == level.over.tolist(), n
        ex = game.expand(games.take(level, np.flatnonzero(~level.over)))
        children = games.take(ex.children, np.flatnonzero(ex.legal.reshape(-1)))
        _, first = np.unique(np.stack([children.current, children.mask], 1), axis=0, return_index=True)
        level = games.take(children, np.sort(first))
    assert level.current.size == 0


def test_every_4x4_position_scores_as_the_plain_negamax(four_by_four):
    ref = PlainNegamax(4, 4)
    solver = Connect4Solver(tt_log2_size=20, width=4, height=4)
    counts_ref, counts_ours = [], []
    for level in four_by_four:
        live = [cols for cols, over in level.items() if not over]
        if not live:
            break
        expected = [ref.score(cols) for cols in live]
        ours = solver.solve_states(*bitboards(live, 4)).tolist()
        mismatch = [(cols, e, o) for cols, e, o in zip(live, expected, ours) if e != o]
        assert not mismatch, (len(mismatch), mismatch[:3])
        counts_ref.append({k: sum(outcome(s) == k for s in expected) for k in ("win", "draw", "loss")})
        counts_ours.append({k: sum(outcome(s) == k for s in ours) for k in ("win", "draw", "loss")})
    assert counts_ours == counts_ref
    assert counts_ref[0] == {"win": 0, "draw": 1, "loss": 0}  # Tromp: 4x4 is a draw
    assert all(sum(c.values()) for c in counts_ref) and len(counts_ref) == 16


# ------------------------------------------------------------- empty boards, Tromp


@pytest.mark.parametrize("width, height, value", [
    (4, 4, "draw"), (5, 4, "draw"), (6, 4, "loss"), (5, 5, "draw"), (6, 5, "draw"),
])
def test_empty_boards_have_tromps_values(width, height, value):
    """John Tromp's table of solved sizes: 6x4 is won by the second player (a loss for
    the side to move), the others drawn. 6x5, the longest, takes about a second."""
    solver = Connect4Solver(tt_log2_size=22, width=width, height=height)
    assert outcome(solver.solve("")) == value
    assert solver.solve("", weak=True) == {"win": 1, "draw": 0, "loss": -1}[value]
    assert solver.book_leaves == 0 and solver.nodes > 0  # searched: no book at this size


# ---------------------------------------------------- random positions, every score


@pytest.mark.parametrize("width, height, plies, count", [
    (5, 4, 8, 25), (6, 4, 12, 25), (5, 5, 13, 25),
    (9, 6, 41, 12), (8, 7, 44, 12), (7, 7, 37, 12),  # keys of 63, 64 and 56 bits
])
def test_random_positions_match_the_plain_negamax(width, height, plies, count):
    """solve, analyze and best_columns of random positions deep enough for the plain
    negamax, one table across positions (as the oracle keeps it)."""
    rng = random.Random(width * 100 + height)
    ref = PlainNegamax(width, height)
    solver = Connect4Solver(tt_log2_size=16, width=width, height=height)
    seen = set()
    for _ in range(count):
        cols, digits = random_position(ref, plies, rng)
        expected = ref.column_scores(cols)
        best = max(s for s in expected if s is not None)
        assert solver.solve(digits) == ref.score(cols), digits
        assert solver.analyze(digits) == expected, digits
        assert solver.best_columns(digits) == ([c for c, s in enumerate(expected) if s == best], best), digits
        seen.add(outcome(best))
    assert len(seen) >= 2, seen  # not one kind of answer only


@pytest.mark.parametrize("width, height, plies", [(4, 4, 4), (5, 4, 9), (7, 4, 18)])
def test_plies_to_end_follow_the_score(width, height, plies):
    rng = random.Random(plies)
    ref = PlainNegamax(width, height)
    solver = Connect4Solver(tt_log2_size=16, width=width, height=height)
    for _ in range(15):
        cols, digits = random_position(ref, plies, rng)
        assert plies_to_end(solver.solve(digits), plies, width, height) == ref.length(cols), digits


# ------------------------------------------------------------- books, sizes, errors


def test_the_books_are_of_7x6_only():
    """Another size searches even the positions the books would answer on 7x6 (up to ply
    5, and at ply 12); asking for the books there is an error. (The books on 7x6:
    test_connect4_book5.py, test_connect4_book12.py.)"""
    small = Connect4Solver(tt_log2_size=16, width=5, height=4)
    assert small.book.codes.size == 0 and small.book5.keys.size == 0
    cols, digits = random_position(PlainNegamax(5, 4), 12, random.Random(3))
    assert small.solve(digits) == PlainNegamax(5, 4).score(cols)
    searched = small.nodes
    small.solve("333")  # a 5-ply book position on 7x6: searched here
    assert small.book_leaves == 0 and small.nodes > searched > 0
    with pytest.raises(ValueError, match="books hold 7x6 positions only"):
        Connect4Solver(tt_log2_size=16, use_book=True, width=5, height=4)


def test_size_errors():
    with pytest.raises(ValueError, match=r"width must be an integer in 4..9, got 10"):
        Connect4Solver(width=10)
    with pytest.raises(ValueError, match=r"9x7: \(height \+ 1\) \* width = 72 bits"):
        Connect4Solver(width=9, height=7)
    with pytest.raises(ValueError, match=r"keys of 64 bits need tt_log2_size >= 12"):
        Connect4Solver(tt_log2_size=11, width=8, height=7)
    with pytest.raises(ValueError, match=r"bad character '6'.*column digits 1..5"):
        parse_moves("16", width=5, height=4)
    with pytest.raises(ValueError, match=r"column 1, which is full"):
        parse_moves("11111", width=5, height=4)
    assert score_bounds(5, 4) == (-7, 7) and score_bounds() == (-18, 18)
    with pytest.raises(ValueError, match=r"bitbully connect4 engine plays 7x6 only, not 5x4"):
        make_engine("bitbully", width=5, height=4)
    assert make_engine("ours", tt_log2_size=12, width=5, height=4).width == 5


# ------------------------------------------------------------------ command line


def _solve_lines(argv: list[str], lines: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["solve", "--game", "connect4", *argv], stdin=io.StringIO(lines), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_command_line_6x4_first_moves_all_win_for_the_side_to_move():
    """The acceptance line, as a user types it: the second player wins 6x4, so after any
    first move the side to move (the second player) wins."""
    run = subprocess.run([sys.executable, "-m", "oracle_service", "solve", "--game", "connect4", "--width", "6",
                          "--height", "4", "--weak"], input="1\n2\n3\n4\n5\n6\n", capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n") == [f"{c} 1" for c in range(1, 7)] + [""]


@pytest.mark.parametrize("width", [4, 5])
def test_command_line_first_moves_of_4_and_5_wide(width):
    """4x4 and 5x4 are draws: no first move wins (every answer, for the second player to
    move, is a draw or a win) and some first move keeps the draw."""
    digits = "".join(str(c) for c in range(1, width + 1))
    code, out, err = _solve_lines(["--width", str(width), "--height", "4", "--weak"], "\n".join(digits) + "\n")
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == list(digits)
    answers = [int(line.split()[1]) for line in out.splitlines()]
    assert set(answers) <= {0, 1} and 0 in answers, answers
    if width == 4:  # the plain negamax is quick enough here
        expected = [int(np.sign(PlainNegamax(4, 4).score(_drop(((),) * 4, c, 0)))) for c in range(4)]
        assert answers == expected


def test_command_line_analyze_and_errors_at_a_size():
    cols, digits = random_position(PlainNegamax(5, 4), 10, random.Random(5))
    code, out, err = _solve_lines(["--width", "5", "--height", "4", "--analyze"], f"{digits}\n6\n")
    assert code == 1
    expected = PlainNegamax(5, 4).column_scores(cols)
    assert out.split() == [digits, *("-" if s is None else str(s) for s in expected)]
    assert "line 2: '6'" in err and "column digits 1..5" in err
    with pytest.raises(SystemExit):
        _solve_lines(["--width", "10", "--height", "4"], "1\n")
    with pytest.raises(SystemExit):
        cli.main(["solve", "--game", "chomp", "--rows", "2", "--cols", "2", "--width", "5"], stdin=io.StringIO(""),
                 stdout=io.StringIO(), stderr=io.StringIO())
