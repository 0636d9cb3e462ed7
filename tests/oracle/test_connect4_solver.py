"""Connect Four strong solver against an independent exhaustive search on a plain grid
(scores, per-column analysis, plies to the end, discounted values, and the same with
exact scores of descendants seeded in the table), hand-built positions, weak ==
sign(strong), solve == max(analyze) in the middle game, the engine's bitboards, and
errors."""

from __future__ import annotations

import random

import numpy as np
import pytest

import games
from games.testing import random_move_lists
from oracle_service.connect4_solver import (
    Board,
    Connect4Solver,
    descendants,
    parse_board,
    parse_moves,
    plies_to_end,
    score_to_value,
    win_score,
)

ROWS, COLS = 6, 7


# ---------------------------------------- independent reference: a plain grid


def _four_at(cols, c, r, who) -> bool:
    """Whether the stone of ``who`` at column c, row r is part of a four in ``cols``
    (a list of 7 column lists, bottom first)."""
    def at(cc, rr):
        return 0 <= cc < COLS and 0 <= rr < len(cols[cc]) and cols[cc][rr] == who
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        n = 1
        for sign in (1, -1):
            k = 1
            while at(c + sign * k * dc, r + sign * k * dr):
                n += 1
                k += 1
        if n >= 4:
            return True
    return False


def grid_of(moves: str):
    """Columns after the digit string ``moves``; None if someone has already won."""
    cols = [[] for _ in range(COLS)]
    for i, ch in enumerate(moves):
        c = int(ch) - 1
        cols[c].append(i % 2)
        if _four_at(cols, c, len(cols[c]) - 1, i % 2):
            return None
    return cols


def exhaustive(cols, ply, memo):
    """(score, plies to the end) under perfect play by plain negamax over every move,
    no pruning: the score by its definition, 22 minus the winner's stone count when it
    completes its four; among equal scores, the plies to the end are the same."""
    key = (tuple(tuple(c) for c in cols))
    if key in memo:
        return memo[key]
    who = ply % 2
    best = None
    for c in range(COLS):
        if len(cols[c]) == ROWS:
            continue
        cols[c].append(who)
        if _four_at(cols, c, len(cols[c]) - 1, who):
            stones = sum(col.count(who) for col in cols)
            result = (22 - stones, 1)
        elif ply + 1 == ROWS * COLS:
            result = (0, 1)
        else:
            s, p = exhaustive(cols, ply + 1, memo)
            result = (-s, p + 1)
        cols[c].pop()
        if best is None or result[0] > best[0]:
            best = result
    memo[key] = best
    return best


def exhaustive_value(cols, ply, gamma, memo):
    """V*(s) by its Bellman equation: max over moves of the reward (1 for completing a
    four) or, if the game goes on, -gamma times the value of the next position."""
    key = (tuple(tuple(c) for c in cols))
    if key in memo:
        return memo[key]
    who = ply % 2
    best = -2.0
    for c in range(COLS):
        if len(cols[c]) == ROWS:
            continue
        cols[c].append(who)
        if _four_at(cols, c, len(cols[c]) - 1, who):
            v = 1.0
        elif ply + 1 == ROWS * COLS:
            v = 0.0
        else:
            v = -gamma * exhaustive_value(cols, ply + 1, gamma, memo)
        cols[c].pop()
        best = max(best, v)
    memo[key] = best
    return best


def random_position(rng: random.Random, plies: int) -> str:
    """A digit string of ``plies`` random moves after which nobody has won."""
    while True:
        cols = [[] for _ in range(COLS)]
        moves = ""
        for i in range(plies):
            c = rng.choice([c for c in range(COLS) if len(cols[c]) < ROWS])
            cols[c].append(i % 2)
            moves += str(c + 1)
            if _four_at(cols, c, len(cols[c]) - 1, i % 2):
                break
        else:
            return moves


@pytest.fixture(scope="module")
def solver():
    return Connect4Solver(tt_log2_size=20)


@pytest.fixture(scope="module")
def endgames():
    """Random positions with 8 to 12 empty cells, with their exhaustive (score, plies)."""
    rng = random.Random(7)
    out = []
    for i in range(40):
        moves = random_position(rng, ROWS * COLS - rng.randint(8, 12))
        out.append((moves, exhaustive(grid_of(moves), len(moves), {})))
    return out


# ------------------------------------------------------------------ tests


def test_scores_and_analysis_match_exhaustive_search(solver, endgames):
    scores = set()
    for moves, (score, _) in endgames:
        assert solver.solve(moves) == score, moves
        scores.add(score)
        cols = grid_of(moves)
        expected = []
        for c in range(COLS):
            if len(cols[c]) == ROWS:
                expected.append(None)
                continue
            child = grid_of(moves + str(c + 1))
            if child is None:  # the move wins at once
                expected.append(22 - (len(moves) // 2 + 1))
            elif len(moves) + 1 == ROWS * COLS:
                expected.append(0)
            else:
                expected.append(-exhaustive(child, len(moves) + 1, {})[0])
        assert solver.analyze(moves) == expected, moves
    assert len(scores) >= 3  # wins, losses and draws were all exercised
    # The batch call gives the same scores.
    assert solver.solve_many([m for m, _ in endgames]) == [s for _, (s, _) in endgames]
    assert solver.nodes > 0


def live_descendants(moves: str, depth: int, memo: dict) -> dict[tuple[int, int], tuple[int, int]]:
    """{(current, mask): (plies, exhaustive score)} of the positions 1..depth plies after
    ``moves`` that are not over, enumerated on the plain grid."""
    out, level = {}, [moves]
    for _ in range(depth):
        nxt = []
        for m in level:
            cols = grid_of(m)
            for c in range(COLS):
                child = m + str(c + 1)
                if len(cols[c]) == ROWS or grid_of(child) is None or len(child) == ROWS * COLS:
                    continue  # full column, a won game, a full board
                cur, mask, plies = parse_moves(child)
                if (cur, mask) not in out:
                    out[(cur, mask)] = (plies, exhaustive(grid_of(child), plies, memo)[0])
                    nxt.append(child)
        level = nxt
    return out


def test_seeded_exact_scores_keep_every_answer_exact(endgames):
    """Descendants within 2 plies match the grid's; with the exhaustive scores of the
    children, or of the grandchildren only, entered in a fresh table, every score and
    analysis is still the exhaustive one, and the search stops at the seeded positions."""
    fresh_nodes = seeded_nodes = 0
    for moves, (score, _) in endgames[:24]:
        memo = {}
        expected = live_descendants(moves, 2, memo)
        cur, mask, plies = parse_moves(moves)
        dcur, dmask, dplies = descendants(np.array([cur]), np.array([mask]), np.array([plies]), 2)
        assert sorted(zip(dcur.tolist(), dmask.tolist(), dplies.tolist())) == \
            sorted((c, m, p) for (c, m), (p, _) in expected.items()), moves
        fresh = Connect4Solver(tt_log2_size=16)
        assert fresh.solve(moves) == score
        fresh_nodes += fresh.nodes
        for seeded_plies in ({plies + 1}, {plies + 2}):
            seeded = Connect4Solver(tt_log2_size=16)
            known = [(c, m, s) for (c, m), (p, s) in expected.items() if p in seeded_plies]
            if known:
                c, m, s = (np.array(x) for x in zip(*known))
                seeded.seed(c.astype(np.uint64), m.astype(np.uint64), s)
            assert seeded.solve(moves) == score, (moves, seeded_plies)
            if seeded_plies == {plies + 1}:
                seeded_nodes += seeded.nodes
            assert seeded.solve(moves, weak=True) == (score > 0) - (score < 0)
            assert seeded.analyze(moves) == Connect4Solver(tt_log2_size=16).analyze(moves), moves
    # With every child known, a null-window search visits the root and its children.
    assert seeded_nodes < fresh_nodes / 2, (seeded_nodes, fresh_nodes)
    with pytest.raises(ValueError, match="scores must lie in -18..18"):
        Connect4Solver(tt_log2_size=10).seed(np.array([0], np.uint64), np.array([0], np.uint64),
                                             np.array([19]))


def test_hand_built_positions(solver):
    # First player has 1, 2, 3 on the bottom row and moves: wins with its 4th stone.
    assert solver.solve("112233") == 18 == win_score(6)
    # The same after columns 6 and 7 were filled (no four): the 10th stone, 22 - 10.
    analysis = solver.analyze("776677667766112233")
    assert analysis[3] == 12 == win_score(18)
    assert analysis[5:] == [None, None] and max(analysis[:3] + analysis[4:5]) < 12
    assert solver.best_moves("776677667766112233") == [3]
    # First player has an open three 3-4-5 on the bottom row, second player to move:
    # it blocks one end, the other end wins with the first player's 4th stone.
    assert solver.solve("33445") == -18
    assert solver.solve([2, 2, 3, 3, 4]) == -18  # the same position as actions
    assert all(s == -18 for s in solver.analyze("33445") if s is not None)
    # Columns 6 and 7 full (no four), then the first player stacks three in column 1:
    # the second player must block; every other move loses to the first player's 10th
    # stone (22 - 10 = 12); None for the full columns.
    analysis = solver.analyze("77667766776612131")
    assert analysis[1:] == [-12, -12, -12, -12, None, None]
    assert analysis[0] > -12
    assert solver.best_moves("77667766776612131") == [0]


def test_weak_is_sign_of_strong(solver):
    rng = random.Random(11)
    for _ in range(30):
        moves = random_position(rng, rng.randint(18, 30))
        strong = solver.solve(moves)
        assert solver.solve(moves, weak=True) == (strong > 0) - (strong < 0), moves
        assert solver.analyze(moves, weak=True) == [
            None if s is None else (s > 0) - (s < 0) for s in solver.analyze(moves)]


def test_best_columns_match_exhaustive_search(endgames):
    """The best-column search (the position's score, then one null-window search per
    column) against plain exhaustive search: the columns of maximal exhaustive score."""
    solver = Connect4Solver(tt_log2_size=20)
    for moves, (score, _) in endgames:
        cols = grid_of(moves)
        child_scores = {}
        for c in range(COLS):
            if len(cols[c]) == ROWS:
                continue
            child = grid_of(moves + str(c + 1))
            child_scores[c] = (22 - (len(moves) // 2 + 1) if child is None else 0 if len(moves) + 1 == ROWS * COLS
                               else -exhaustive(child, len(moves) + 1, {})[0])
        best = max(child_scores.values())
        assert solver.best_columns(moves) == ([c for c, v in sorted(child_scores.items()) if v == best], score), moves


@pytest.mark.parametrize("plies", [4, 12, 13, 17])
def test_best_columns_are_those_of_the_analysis(plies):
    """At the plies where AZAL's labels cost most (12 stones: the book holds the
    position's score, not its children's) and around them, each solver with a table of
    its own: the same columns as the full analysis, and the position's score."""
    rng = random.Random(plies)
    analyzer, searcher = Connect4Solver(tt_log2_size=22), Connect4Solver(tt_log2_size=22)
    for _ in range(12):
        moves = random_position(rng, plies)
        analysis = analyzer.analyze(moves)
        best = max(s for s in analysis if s is not None)
        assert searcher.best_columns(moves) == ([c for c, s in enumerate(analysis) if s == best], best), moves


def test_middle_game_solve_equals_best_of_analysis():
    solver = Connect4Solver(tt_log2_size=22)
    rng = random.Random(5)
    for _ in range(4):
        moves = random_position(rng, 16)
        analysis = solver.analyze(moves)
        best = max(s for s in analysis if s is not None)
        assert solver.solve(moves) == best, moves
        assert solver.best_moves(moves) == [c for c, s in enumerate(analysis) if s == best]
        for c, s in enumerate(analysis):
            if s is not None and grid_of(moves + str(c + 1)) is not None:
                assert s == -solver.solve(moves + str(c + 1)), (moves, c)


def test_score_to_value_matches_exhaustive_discounted_search(endgames):
    for moves, (score, plies) in endgames:
        n = len(moves)
        assert plies_to_end(score, n) == plies, moves
        assert score_to_value(score, n, 1.0) == (score > 0) - (score < 0)
        for gamma in (0.9, 0.5):
            expected = exhaustive_value(grid_of(moves), n, gamma, {})
            assert score_to_value(score, n, gamma) == pytest.approx(expected, abs=1e-12), moves
    # Immediate win: worth 1 whatever gamma; a loss to the opponent's next stone: -gamma.
    assert score_to_value(win_score(6), 6, 0.9) == 1.0
    assert score_to_value(-18, 5, 0.9) == pytest.approx(-0.9)
    with pytest.raises(ValueError, match="gamma"):
        score_to_value(1, 10, 0.0)
    with pytest.raises(ValueError, match="impossible"):
        score_to_value(18, 30, 0.9)


def test_positions_are_the_engine_bitboards(solver):
    game = games.make("connect4")
    rng = random.Random(3)
    positions = [random_position(rng, rng.randint(22, 34)) for _ in range(10)]
    state = game.from_moves([[int(ch) - 1 for ch in m] for m in positions])
    for i, moves in enumerate(positions):
        cur, mask, plies = parse_moves(moves)
        assert (cur, mask, plies) == (int(state.current[i]), int(state.mask[i]), int(state.moves[i]))
    scores = solver.solve_states(state.current, state.mask, state.moves)
    assert scores.tolist() == solver.solve_many(positions)
    # A finished game is refused, naming its row.
    won = game.from_moves([[0, 1, 0, 1, 0, 1, 0]])
    with pytest.raises(ValueError, match=r"states \[0\] \(of 1\) are over"):
        solver.solve_states(won.current, won.mask, won.moves)


@pytest.mark.parametrize("moves, message", [
    ("4458", "bad character '8'"),
    ("44a", "bad character 'a'"),
    ([3, 7], "out of range"),
    ("1111111", "column 1, which is full"),
    ("1212121", "already won"),
    ("12121214", "move 8 comes after the game was won by move 7"),
])
def test_bad_input(solver, moves, message):
    with pytest.raises(ValueError, match=message):
        solver.solve(moves)
    with pytest.raises(ValueError, match=message):
        solver.analyze(moves)


def test_full_board_is_an_error(solver):
    moves = random_position(random.Random(1), ROWS * COLS)  # a full board, no four
    assert grid_of(moves) is not None
    with pytest.raises(ValueError, match="board is full"):
        solver.solve(moves)


# ---- positions given as bitboards (engine states carry no move list) ----------------


def _move_order(cur: int, mask: int) -> list[int] | None:
    """A move sequence that builds the board ``cur``/``mask`` (stones of the player to
    move / all stones), found by depth-first search over column heights, or None: an
    independent check of which boards a game can reach (no four is checked here; the
    parser of move sequences does that)."""
    from functools import lru_cache

    plies = mask.bit_count()
    mover_is_first = plies % 2 == 0  # the first player moves again after an even count
    first = cur if mover_is_first else cur ^ mask
    columns = []
    for c in range(7):
        bits = [(mask >> (c * 7 + r)) & 1 for r in range(7)]
        height = sum(bits)
        if bits[:height] != [1] * height:  # a gap below a stone, or the sentinel set
            return None
        columns.append([bool((first >> (c * 7 + r)) & 1) for r in range(height)])

    @lru_cache(maxsize=None)
    def search(heights: tuple[int, ...]) -> tuple[int, ...] | None:
        n = sum(heights)
        if n == plies:
            return ()
        for c in range(7):
            h = heights[c]
            if h < len(columns[c]) and columns[c][h] == (n % 2 == 0):
                rest = search(heights[:c] + (h + 1,) + heights[c + 1:])
                if rest is not None:
                    return (c,) + rest
        return None

    if mask >> 49 or cur & ~mask:
        return None
    order = search((0,) * 7)
    return None if order is None else list(order)


def _live_sequences(n: int, seed: int) -> list[list[int]]:
    return random_move_lists(games.make("connect4"), n, np.random.default_rng(seed), max_plies=39)


def test_boards_of_reached_positions_parse_as_their_moves():
    for moves in _live_sequences(200, seed=7):
        cur, mask, plies = parse_moves(moves)
        assert parse_board(Board(cur, mask)) == (cur, mask, plies)


@pytest.mark.slow
def test_a_flipped_bit_gives_a_reachable_board_or_a_named_error():
    """Every board one bit away from a reached one: accepted exactly when a move order
    builds it without a four (the independent search above, then the move parser)."""
    accepted = refused = 0
    for moves in _live_sequences(15, seed=8):  # 2,520 boards: over 100 accepted, 2,000 refused
        cur, mask, _ = parse_moves(moves)
        for bit in range(56):
            for board in (Board(cur ^ (1 << bit), mask), Board(cur, mask ^ (1 << bit)),
                          Board(cur ^ (1 << bit), mask ^ (1 << bit))):
                order = _move_order(*board)
                reachable = False
                if order is not None:
                    try:
                        reachable = parse_moves(order)[:2] == tuple(board)
                    except ValueError:  # a four on the way (or at the end): over
                        pass
                try:
                    got = parse_board(board)
                except ValueError as e:
                    assert not reachable, (board, order)
                    assert str(e).startswith("connect4 board")
                    refused += 1
                else:
                    assert reachable and got == parse_moves(order), (board, order)
                    accepted += 1
    assert accepted > 100 and refused > 1000


def test_the_solver_analyzes_a_board_as_its_moves():
    solver = Connect4Solver(tt_log2_size=18)
    for moves in _live_sequences(40, seed=9):
        if len(moves) < 24:
            continue
        cur, mask, _ = parse_moves(moves)
        assert solver.analyze(Board(cur, mask)) == solver.analyze(moves)
