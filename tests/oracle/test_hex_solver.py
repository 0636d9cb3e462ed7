"""The Hex solver against an exhaustive negamax written here, independently of the solver
(its own neighbours, its own chain test, no carriers, no pruning): every position of the
3x3 board, every 4x4 position up to 3 stones plus a seeded random sample of deeper
ones, and random positions of 5x5 and 6x6 boards; value and the full winning set each
time. Then each technique on hand-built positions (a bridge chain, an edge template, a
dead cell, a captured pair), and on random positions their soundness against the same
reference: every dead cell and captured pair the solver fills leaves the value unchanged,
every virtual connection H-search reports holds with every cell outside its carrier
given to the opponent. Consistency on 7x7 middle games, limits and errors close the
file. Two of the published 7x7 openings (Hayward et al. 2003) that this solver proves in
seconds are checked here; all 20 are checked by ``benchmarks/hex_solver_speed.py --sets
empty`` (every first move, about 6 minutes) and ``--sets first-moves``."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from oracle_service.hex_solver import (
    BLACK,
    DEAD,
    WHITE,
    HexPositionError,
    HexResult,
    HexSolver,
    _dead,
    _drop_vulnerable,
    _fill_inferior,
    _tables,
    _useless_table,
    edge_templates,
)
from oracle_service.hex_templates import no_templates
from oracle_service.hex_vc import hsearch

# ------------------------------------------------ the independent reference

_STEPS = np.array([(-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0)], np.int64)


@njit(cache=True)
def ref_connected(board, size, colour):
    """Flood from the colour's first edge (Black: row 0, White: column 0)."""
    n = size * size
    seen = np.zeros(n, np.bool_)
    stack = np.empty(n, np.int64)
    top = 0
    for i in range(size):
        p = i if colour == 1 else i * size
        if board[p] == colour:
            seen[p] = True
            stack[top] = p
            top += 1
    while top > 0:
        top -= 1
        p = stack[top]
        r, c = p // size, p % size
        if (colour == 1 and r == size - 1) or (colour == 2 and c == size - 1):
            return True
        for k in range(6):
            rr, cc = r + _STEPS[k, 0], c + _STEPS[k, 1]
            if 0 <= rr < size and 0 <= cc < size:
                q = rr * size + cc
                if board[q] == colour and not seen[q]:
                    seen[q] = True
                    stack[top] = q
                    top += 1
    return False


@njit(cache=True)
def ref_wins(board, size, mover, memo):
    """Whether ``mover`` wins: some empty cell completes its chain or leaves the
    opponent losing. memo: (keys int64[2^k], values int8[2^k]), an open-addressing table
    from the base-3 index of the board and the side to move (which the stones alone do
    not fix when a test gives its own) to 1 win / 0 loss."""
    keys, values = memo
    key = 0
    for p in range(size * size):
        key = key * 3 + board[p]
    key = key * 2 + (mover - 1)
    mask = keys.shape[0] - 1
    slot = (key * 0x9E3779B97F4A7C15) >> 20 & mask
    while keys[slot] != -1 and keys[slot] != key:
        slot = (slot + 1) & mask
    if keys[slot] == key:
        return values[slot] == 1
    won = False
    for p in range(size * size):
        if board[p] == 0:
            board[p] = mover
            if ref_connected(board, size, mover) or not ref_wins(board, size, 3 - mover, memo):
                won = True
            board[p] = 0
            if won:
                break
    slot = (key * 0x9E3779B97F4A7C15) >> 20 & mask  # the table may have grown around it
    while keys[slot] != -1 and keys[slot] != key:
        slot = (slot + 1) & mask
    keys[slot] = key
    values[slot] = 1 if won else 0
    return won


@njit(cache=True)
def ref_winning(board, size, mover, memo):
    """int64[k]: every empty cell where ``mover`` wins by playing."""
    out = np.empty(size * size, np.int64)
    k = 0
    for p in range(size * size):
        if board[p] == 0:
            board[p] = mover
            if ref_connected(board, size, mover) or not ref_wins(board, size, 3 - mover, memo):
                out[k] = p
                k += 1
            board[p] = 0
    return out[:k]


def new_memo(log2=22):
    """One per board size (the keys do not hold the size); 2^log2 slots, more than the
    positions any test here reaches."""
    return np.full(1 << log2, -1, np.int64), np.zeros(1 << log2, np.int8)


def random_cells(rng, size, stones):
    """A random move list of ``stones`` cells after which nobody is connected (retried
    until so), with its board int8[N] and the side to move."""
    while True:
        cells = [int(p) for p in rng.permutation(size * size)[:stones]]
        board = np.zeros(size * size, np.int8)
        for ply, p in enumerate(cells):
            board[p] = 1 + ply % 2
        if not ref_connected(board, size, 1) and not ref_connected(board, size, 2):
            return cells, board, 1 + stones % 2


def check_against_reference(solver, board, mover, memo):
    size = solver.size
    expected = tuple(int(p) for p in ref_winning(board.copy(), size, mover, memo))
    got = solver.solve_board(board.reshape(size, size), mover)
    assert got.value == (1 if expected else -1), (board.reshape(size, size), mover, got)
    assert got.winning == expected, (board.reshape(size, size), mover, got)


# ----------------------------------------------------------- exactness


def test_every_3x3_position():
    solver = HexSolver(3)
    memo = new_memo()
    boards = (np.arange(3**9)[:, None] // 3 ** np.arange(9) % 3).astype(np.int8)  # [19683, 9]
    lead = (boards == 1).sum(axis=1) - (boards == 2).sum(axis=1)
    checked = 0
    for board, black_ahead in zip(boards[(lead == 0) | (lead == 1)], lead[(lead == 0) | (lead == 1)]):
        if ref_connected(board, 3, 1) or ref_connected(board, 3, 2):
            continue
        check_against_reference(solver, board, 2 if black_ahead else 1, memo)
        checked += 1
    assert checked == 4520  # every legal position nobody has won yet


@pytest.mark.slow
def test_4x4_positions():
    """Every position with up to 3 stones (1,937), then 150 random ones of 4 to 12
    stones (seeded)."""
    solver = HexSolver(4)
    memo = new_memo(24)
    boards = {(0,) * 16: 1}
    for a in range(16):
        for b in range(16):
            for c in range(16):
                for cells in ((a,), (a, b), (a, b, c)):
                    if len(set(cells)) == len(cells):
                        board = [0] * 16
                        for ply, p in enumerate(cells):
                            board[p] = 1 + ply % 2
                        boards[tuple(board)] = 1 + len(cells) % 2
    assert len(boards) == 1937
    for board, mover in boards.items():
        check_against_reference(solver, np.array(board, np.int8), mover, memo)
    rng = np.random.default_rng(4)
    for _ in range(150):
        _, board, mover = random_cells(rng, 4, int(rng.integers(4, 13)))
        check_against_reference(solver, board, mover, memo)


@pytest.mark.parametrize("size,stones,count", [(5, 12, 30), (6, 23, 20)])
def test_random_positions_5x5_6x6(size, stones, count):
    solver = HexSolver(size)
    memo = new_memo()
    rng = np.random.default_rng(size)
    for _ in range(count):
        _, board, mover = random_cells(rng, size, stones + int(rng.integers(0, 3)))
        check_against_reference(solver, board, mover, memo)


@pytest.mark.parametrize("size,stones,count", [(4, 1, 30), (5, 12, 30), (6, 23, 15)])
def test_solve_value_against_the_reference(size, stones, count):
    """The value alone: it equals the reference's, and the one winning move given is one
    of the reference's winning moves (none when the mover loses)."""
    solver = HexSolver(size)
    memo = new_memo()
    rng = np.random.default_rng(100 + size)
    for _ in range(count):
        cells, board, mover = random_cells(rng, size, stones + int(rng.integers(0, 3)))
        expected = {int(p) for p in ref_winning(board.copy(), size, mover, memo)}
        got = solver.solve_value(cells)
        assert got.value == (1 if expected else -1), (cells, got)
        assert len(got.winning) == (1 if expected else 0) and set(got.winning) <= expected, (cells, got)


def test_small_boards_empty():
    """Sizes 1 and 2, and the known openings: on 3x3 the short diagonal (0,2) (1,1)
    (2,0) and the two cells beside the centre, (1,0) and (1,2); on 4x4 the short
    diagonal (0,3)-(3,0)."""
    assert HexSolver(1, tt_log2=12).solve([]).winning == (0,)
    assert HexSolver(2, tt_log2=12).solve([]).winning == (1, 2)
    assert HexSolver(3, tt_log2=12).solve([]).winning == (2, 3, 4, 5, 6)
    assert HexSolver(4, tt_log2=12).solve([]).winning == (3, 6, 9, 12)


def test_symmetric_positions_search_one_move_of_each_rotation_pair(monkeypatch):
    """A position that is its own 180-degree rotation (the empty board, or stones in
    pairs p, N-1-p of one colour) gives a move and its image one value, so ``solve``
    searches only one of them; the answer still equals the reference's (5x5, 12 stones
    in 6 pairs, Black to move; and the empty 4x4 board)."""
    searched = []

    def counting(solver):
        reply = solver._reply

        def search(board, mover, m, stats, deadline):
            searched.append(m)
            return reply(board, mover, m, stats, deadline)

        monkeypatch.setattr(solver, "_reply", search)
        return solver

    def one_of_each_pair(last):
        return not any(last - m in searched[:i] for i, m in enumerate(searched))

    solver = counting(HexSolver(4, tt_log2=12))
    assert solver.solve([]).winning == (3, 6, 9, 12)
    assert searched and one_of_each_pair(15)
    solver, memo, rng, checked = counting(HexSolver(5)), new_memo(), np.random.default_rng(55), 0
    while checked < 8:
        pairs = rng.permutation(12)[:6]
        board = np.zeros(25, np.int8)
        for k, p in enumerate(pairs):
            board[p] = board[24 - p] = 1 + k % 2
        if ref_connected(board, 5, 1) or ref_connected(board, 5, 2):
            continue
        searched.clear()
        check_against_reference(solver, board, 1, memo)
        assert one_of_each_pair(24), (board.reshape(5, 5), searched)
        checked += 1


@pytest.mark.slow
@pytest.mark.parametrize("opening,black_wins", [("b1", False), ("b3", True)])
def test_published_7x7_openings(opening, black_wins):
    """Hayward et al. (2003): Black's b1 (column b, row 1: cell 1) loses, b3 (cell 15)
    wins. White is to move after it, so its value is the opposite of Black's."""
    cell = (int(opening[1]) - 1) * 7 + "abcdefg".index(opening[0])
    result = HexSolver(7).solve_value([cell], time_limit=300)
    assert result.value == (-1 if black_wins else 1), (opening, result)


# ------------------------------------------------------- the techniques


def flat(rows):
    """A flat board from strings of '.', 'x' (Black) and 'o' (White)."""
    return np.array([".xo".index(ch) for row in rows for ch in row.replace(" ", "")], np.int8)


def hsearch_of(board, colour, size):
    neighbours, _, edges = _tables(size)
    vc = np.zeros((1, 2), np.uint64)
    sc = np.zeros((16, 2), np.uint64)
    has_vc, nsc = hsearch(board.copy(), colour, neighbours, edges, edge_templates(size).arrays, vc, sc)
    return has_vc, cells_of(vc[0]), [cells_of(sc[i]) for i in range(nsc)]


def cells_of(words):
    bits = int(words[0]) | int(words[1]) << 64
    return {p for p in range(128) if bits >> p & 1}


def test_bridge_chain_is_a_virtual_connection():
    # Black's five stones on the long diagonal, each bridged to the next
    board = flat(["x....", ".x...", "..x..", "...x.", "....x"])
    has_vc, carrier, _ = hsearch_of(board, BLACK, 5)
    # two cells per link (a bridge's pair, or template II's for the end stones)
    assert has_vc and len(carrier) == 8 and {7, 11, 13, 17} <= carrier
    assert_vc_holds(board, BLACK, carrier, 5)
    assert HexSolver(5, tt_log2=12).solve_board(board.reshape(5, 5), WHITE).value == -1
    # White intrudes into one bridge, Black restores it: a VC again, through (2,1)
    board[7], board[11] = WHITE, BLACK
    has_vc, carrier, _ = hsearch_of(board, BLACK, 5)
    assert has_vc and not carrier & {7, 11}
    assert_vc_holds(board, BLACK, carrier, 5)


def assert_vc_holds(board, colour, carrier, size):
    """The reference agrees: the opponent to move loses with every empty cell outside
    the carrier given to it."""
    outside = board.copy()
    outside[[p for p in range(size * size) if board[p] == 0 and p not in carrier]] = 3 - colour
    assert not ref_wins(outside, size, 3 - colour, new_memo())


def test_edge_templates():
    # template II: a stone on the second row, its two cells on the edge row free
    board = flat(["....", ".x..", ".x..", ".x.."])
    has_vc, carrier, _ = hsearch_of(board, BLACK, 4)
    assert has_vc and carrier == {1, 2}
    # template IIIa (the ziggurat): a stone on the third row reaches the edge
    board = flat([".....", ".....", "..x..", "..x..", "..x.."])
    has_vc, carrier, _ = hsearch_of(board, BLACK, 5)
    # its eight cells: the one beside the stone, three on the second row, four on the edge row
    assert has_vc and len(carrier) == 8 and carrier <= set(range(15)) and len(carrier & {0, 1, 2, 3, 4}) == 4
    assert_vc_holds(board, BLACK, carrier, 5)
    assert HexSolver(5, tt_log2=12).solve_board(board.reshape(5, 5), WHITE).value == -1


def template_board(size, colour, cell, side, carrier):
    """The board on which a template of ``colour`` from ``cell`` to edge ``side`` is a
    win for it with the opponent to move: its stone on ``cell``, a straight line of its
    stones from there to its other edge, every other cell but the carrier's the
    opponent's."""
    board = np.full(size * size, 3 - colour, np.int8)
    board[sorted(carrier)] = 0
    r, c = divmod(cell, size)
    line = range(r, size) if side == 0 else range(r, -1, -1)  # towards the other edge
    if colour == WHITE:  # White's edges are the columns: the line runs along the row
        line = range(c, size) if side == 0 else range(c, -1, -1)
    for k in line:
        board[k * size + c if colour == BLACK else r * size + k] = colour
    return board


@pytest.mark.parametrize("size", [5, 7])
def test_edge_templates_found_by_search(size):
    """The search finds template II on every second-row cell with room for it (its two
    edge cells), the ziggurat IIIa (8 cells) on the third row, for both colours and all
    four edges, and each holds by the reference with everything else the opponent's.
    (The 4th row's, 19 cells on 7x7, were checked so once, outside the suite: 68M
    positions, 100 s.)"""
    templates = edge_templates(size)
    for colour in (BLACK, WHITE):
        for side in (0, 1):
            found = {}
            for cell in range(size * size):
                for carrier in templates.carriers(colour, cell, side):
                    found.setdefault(cell, []).append(carrier)
                    if len(carrier) > 8:
                        continue  # the 4th row's 19 cells: 68M positions for an exhaustive proof
                    board = template_board(size, colour, cell, side, carrier)
                    assert not ref_wins(board, size, 3 - colour, new_memo(16)), (colour, side, cell, carrier)
            # rows (Black) or columns (White) counted from the edge: the template's depth
            depth = {cell: (cell // size if colour == BLACK else cell % size) for cell in found}
            if side == 1:
                depth = {cell: size - 1 - d for cell, d in depth.items()}
            assert sorted(depth.values()).count(1) == size - 1  # II: every second-row cell but the obtuse corner's
            assert all(len(c) == 2 for cell, d in depth.items() if d == 1 for c in found[cell])
            assert all(len(c) == 8 for cell, d in depth.items() if d == 2 for c in found[cell])
            assert sum(d == 2 for d in depth.values()) == size - 2


def test_fourth_row_templates_7x7():
    """On 7x7 the 4th row from Black's top edge has a template (a 19-cell carrier) from
    (3,1) and (3,2) only: the board is too narrow for one from a more central cell.
    H-search takes it as a base VC: a Black line from (3,2) to the bottom edge is
    connected to the top with it, not without it, and not once White holds a cell of
    its carrier."""
    templates = edge_templates(7)
    assert [cell for cell in range(21, 28) if templates.carriers(BLACK, cell, 0)] == [22, 23]
    (carrier,) = templates.carriers(BLACK, 23, 0)
    assert len(carrier) == 19 and max(carrier) < 28 and 23 not in carrier
    board = np.zeros(49, np.int8)
    board[[23, 30, 37, 44]] = BLACK  # (3,2) down to the bottom row
    has_vc, vc_carrier, _ = hsearch_of(board, BLACK, 7)
    assert has_vc and vc_carrier <= carrier
    neighbours, _, edges = _tables(7)
    vc, sc = np.zeros((1, 2), np.uint64), np.zeros((16, 2), np.uint64)
    assert not hsearch(board.copy(), BLACK, neighbours, edges, no_templates().arrays, vc, sc)[0]
    board[3] = WHITE  # on the top row, inside the carrier
    assert not hsearch_of(board, BLACK, 7)[0]


@pytest.mark.parametrize("without_it,seed,skipped", [({"templates": False}, 4, 1), ({"prune": False}, 5, 0),
                                                      ({"ordering": "paths", "widen": 0}, 6, 0)])
def test_an_option_keeps_the_value_and_saves_nodes(without_it, seed, skipped):
    """The solver with and without the edge templates (H-search's own VCs only), with
    and without dropping vulnerable moves, and with the resistance ordering and widening
    or the shortest-path ordering of every move, agrees on the value and every winning
    move of random 7x7 middle games; the option was used, and it pays in nodes."""
    rng = np.random.default_rng(seed)
    for _ in range(skipped):  # (the first draw of seed 4 is an 8-stone position neither solves in 30 s)
        rng.permutation(49)
    with_it, without = HexSolver(7, tt_log2=18), HexSolver(7, tt_log2=18, **without_it)
    nodes = [0, 0]
    for stones in (11, 12, 12, 13, 14, 14):
        _, board, mover = random_cells(rng, 7, stones)
        a = with_it.solve_board(board.reshape(7, 7), mover)
        b = without.solve_board(board.reshape(7, 7), mover)
        assert a.value is not None and (a.value, a.winning) == (b.value, b.winning), board.reshape(7, 7)
        nodes[0], nodes[1] = nodes[0] + a.nodes, nodes[1] + b.nodes
    assert nodes[0] < nodes[1]


def test_dead_cell():
    neighbours, ring_own, _ = _tables(4)
    useless = _useless_table()
    # cell (1,1) = 5: its neighbours (0,1) (0,2) (1,2) (2,1) are Black, four in a row
    # around it: a White stone there is useless, so the cell is dead
    board = flat([".xx.", "..x.", ".x..", "...."])
    assert _dead(board, 5, neighbours, ring_own, useless)
    assert not _dead(board, 9 + 3, neighbours, ring_own, useless)
    empty = np.zeros(16, np.int8)
    assert not any(_dead(empty, p, neighbours, ring_own, useless) for p in range(16))
    # an edge cell walled by the opponent: (0,0) with White at (0,1) and (1,0) and the
    # left edge: Black could only use the top edge through it
    board = flat([".o..", "o...", "....", "...."])
    assert _dead(board, 0, neighbours, ring_own, useless)


def test_captured_pair():
    neighbours, ring_own, _ = _tables(4)
    useless = _useless_table()
    # (0,1) and (0,2) on Black's top edge, both next to Black's (1,1): whichever White
    # takes, Black takes the other and White's stone is dead. Filled for Black.
    board = flat(["....", ".x..", "....", "...."])
    filled = np.empty(16, np.int64)
    work = board.copy()
    count, lo, hi = _fill_inferior(work, neighbours, ring_own, useless, filled)
    captured = cells_of(np.array([lo, hi], np.uint64))
    assert {1, 2} <= captured and work[1] == work[2] == BLACK
    assert all(work[p] in (BLACK, WHITE) for p in captured)  # captured cells go to an owner
    # White's stone on (0,2) breaks the pattern: nothing captured for Black there
    board[2] = WHITE
    work = board.copy()
    count, lo, hi = _fill_inferior(work, neighbours, ring_own, useless, filled)
    assert 1 not in cells_of(np.array([lo, hi], np.uint64))


def test_vulnerable_move_is_dropped_for_its_killer():
    neighbours, ring_own, _ = _tables(4)
    useless = _useless_table()
    # White to move. Cell (1,1) = 5 has Black on three ring neighbours in a row, (0,1)
    # (0,2) (1,2); a Black stone on (2,1) = 9 or on (1,0) = 4 makes four in a row, and
    # White's stone on 5 would be dead: White's 5 is vulnerable, dominated by 9 and by 4.
    # White's 4 is vulnerable too (Black's 5 leaves it between Black's 1 and 5 and
    # White's own edge), so it goes first, for 5; then 5 goes for 9, not for 4, which is
    # dropped already: no two moves drop each other.
    board = flat([".xx.", "..x.", "....", "o..o"])
    moves = np.flatnonzero(board == 0).astype(np.int64)
    kept = moves[:_drop_vulnerable(board, WHITE, neighbours, ring_own, useless, moves, len(moves))]
    assert 4 not in kept and 5 not in kept and 9 in kept
    assert (board == flat([".xx.", "..x.", "....", "o..o"])).all()  # the board is left as it was
    # On the empty board only the two acute corners go, for either colour: the opponent's
    # stone next to a1 along the mover's edge leaves a1 touching nothing but that edge and
    # one cell that touches it too.
    empty = np.zeros(16, np.int8)
    for colour in (BLACK, WHITE):
        moves = np.arange(16, dtype=np.int64)
        kept = moves[:_drop_vulnerable(empty, colour, neighbours, ring_own, useless, moves, 16)]
        assert set(range(16)) - set(kept.tolist()) == {0, 15}


@pytest.mark.slow
@pytest.mark.parametrize("size,count", [(4, 300), (5, 120)])
def test_vulnerable_moves_are_dominated(size, count):
    """On random positions, against the reference: wherever an opponent's stone on q
    would make the mover's cell p dead, the mover's p wins only if its q wins; and the
    moves _drop_vulnerable keeps win whenever some move wins."""
    neighbours, ring_own, _ = _tables(size)
    useless = _useless_table()
    memo = new_memo()
    rng = np.random.default_rng(size + 70)
    pairs = dropped_total = 0
    for _ in range(count):
        _, board, mover = random_cells(rng, size, int(rng.integers(2, size * size - 6)))
        if size * size - np.count_nonzero(board) > 14:  # beyond what the reference does quickly
            continue
        winning = set(ref_winning(board.copy(), size, mover, memo).tolist())
        for p in np.flatnonzero(board == 0):
            for q in neighbours[p]:
                if q < 0 or board[q] != 0:
                    continue
                board[q] = 3 - mover
                killed = _dead(board, p, neighbours, ring_own, useless)
                board[q] = 0
                if killed:
                    pairs += 1
                    assert p not in winning or q in winning, (board.reshape(size, size), mover, p, q)
        moves = np.flatnonzero(board == 0).astype(np.int64)
        kept = moves[:_drop_vulnerable(board, mover, neighbours, ring_own, useless, moves, len(moves))]
        dropped_total += len(moves) - len(kept)
        assert bool(winning) == bool(winning & set(kept.tolist())), (board.reshape(size, size), mover)
    assert pairs > 50 and dropped_total > 50  # the rule is exercised


@pytest.mark.parametrize("size,count", [(4, 400), (5, 150)])
def test_inferior_cells_keep_the_value(size, count):
    """Every cell _fill_inferior fills (dead: either colour; captured: its owner), on
    random positions, leaves the reference value of the position unchanged."""
    neighbours, ring_own, _ = _tables(size)
    useless = _useless_table()
    memo = new_memo()
    rng = np.random.default_rng(size + 40)
    filled = np.empty(size * size, np.int64)
    seen_dead = seen_captured = 0
    for _ in range(count):
        _, board, mover = random_cells(rng, size, int(rng.integers(size * size - 12, size * size - 4)))
        value = ref_wins(board.copy(), size, mover, memo)
        work = board.copy()
        n, lo, hi = _fill_inferior(work, neighbours, ring_own, useless, filled)
        dead = [int(p) for p in filled[:n] if work[p] == DEAD]
        captured = [int(p) for p in filled[:n] if work[p] != DEAD]
        seen_dead += len(dead)
        seen_captured += len(captured)
        for colour in (BLACK, WHITE):  # every dead cell gets this colour at once
            variant = work.copy()
            variant[variant == DEAD] = colour
            if ref_connected(variant, size, 1) or ref_connected(variant, size, 2):
                winner = 1 if ref_connected(variant, size, 1) else 2
                assert (winner == mover) == value
                continue
            assert ref_wins(variant, size, mover, memo) == value, (board.reshape(size, size), mover)
    assert seen_dead > 20 and seen_captured > 10  # the analysis is exercised


@pytest.mark.parametrize("size,count", [(4, 300), (5, 100)])
def test_virtual_connections_hold(size, count):
    """Every VC H-search reports holds with the opponent to move and every empty cell
    outside its carrier given to the opponent; every SC with the colour to move."""
    neighbours, _, edges = _tables(size)
    memo = new_memo()
    rng = np.random.default_rng(size + 50)
    vcs = scs = 0
    for _ in range(count):
        _, board, _ = random_cells(rng, size, int(rng.integers(size * size - 14, size * size - 4)))
        for colour in (BLACK, WHITE):
            has_vc, carrier, sc_carriers = hsearch_of(board, colour, size)
            claims = [(carrier, 3 - colour)] if has_vc else [(c, colour) for c in sc_carriers]
            for cells, to_move in claims:
                work = board.copy()
                for p in range(size * size):
                    if work[p] == 0 and p not in cells:
                        work[p] = 3 - colour
                if ref_connected(work, size, colour):
                    continue
                assert not ref_connected(work, size, 3 - colour)
                wins = ref_wins(work, size, to_move, memo)
                assert wins == (to_move == colour), (board.reshape(size, size), colour, cells)
                vcs += has_vc
                scs += not has_vc
    assert vcs > 20 and scs > 20


# ------------------------------------------------------------ 7x7


def test_7x7_middle_games_consistent():
    """Every listed winning move leaves the opponent lost; every other one leaves it
    winning (each child solved on its own by a fresh solver)."""
    rng = np.random.default_rng(77)
    solver = HexSolver(7)
    for _ in range(2):
        _, board, mover = random_cells(rng, 7, 26)
        result = solver.solve_board(board.reshape(7, 7), mover)
        assert result.value in (1, -1)
        check = HexSolver(7, tt_log2=16)
        for p in np.flatnonzero(board == 0):
            child = board.copy()
            child[p] = mover
            if ref_connected(child, 7, mover):
                assert p in result.winning
                continue
            reply = check.solve_board(child.reshape(7, 7), 3 - mover)
            assert (reply.value == -1) == (p in result.winning), (board.reshape(7, 7), p)


# ------------------------------------------------------- limits, errors


def test_limits_report_unknown():
    solver = HexSolver(7)
    result = solver.solve([], node_limit=50)
    assert isinstance(result, HexResult) and result.value is None and result.winning == ()
    assert 50 <= result.nodes <= 60
    assert solver.solve([], time_limit=0.2).value is None
    values = solver.analyze([], node_limit=50)
    assert len(values) == 49 and None in values


def test_table_kept_across_calls():
    solver = HexSolver(5)
    first = solver.solve([12, 6])
    again = solver.solve([12, 6])
    assert again == HexResult(first.value, first.winning, again.nodes, again.seconds)
    assert again.nodes < first.nodes


def test_analyze_matches_solve():
    solver = HexSolver(4)
    values = solver.analyze([5, 10])
    result = solver.solve([5, 10])
    assert values[5] is None and values[10] is None
    assert tuple(p for p, v in enumerate(values) if v == 1) == result.winning
    assert all(v == -1 for p, v in enumerate(values) if v is not None and p not in result.winning)


def test_errors():
    solver = HexSolver(3)
    with pytest.raises(HexPositionError, match="off the board"):
        solver.solve([9])
    with pytest.raises(HexPositionError, match="repeated"):
        solver.solve([4, 4])
    with pytest.raises(HexPositionError, match="already won"):
        solver.solve([0, 1, 3, 2, 6])  # Black's column 0 joins top and bottom
    for size in (0, 10, 2.5, True):
        with pytest.raises(HexPositionError, match="size"):
            HexSolver(size)
    with pytest.raises(ValueError, match="ordering must be one of"):
        HexSolver(3, ordering="random")
    for widen in (-1, 101, 2.5, True):
        with pytest.raises(ValueError, match="widen must be a percentage"):
            HexSolver(3, widen=widen)
    for tt_log2 in (0, 31, 2.5, True):  # 31 would ask for 220 GB before any search
        with pytest.raises(ValueError, match="tt_log2 must be an integer in 1..30"):
            HexSolver(3, tt_log2=tt_log2)
    with pytest.raises(HexPositionError, match="already won"):
        solver.solve_board(np.array([[2, 2, 2], [0, 1, 0], [1, 0, 0]]), 1)
    with pytest.raises(HexPositionError, match="to_move"):
        solver.solve_board(np.zeros((3, 3)), 3)
