"""Go: hand-built positions with known outcomes, and a slow pure-Python reference
(captures, suicide, positional superko by a set of positions, Tromp-Taylor score)
played against the engine on random games, step by step.

Boards in the drawings are printed as a Go player sees them: the top line is the
highest row, 'X' black, 'O' white, '.' empty; moves are named like "D4" (columns
A..T without I, rows from the bottom).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import games
from games.testing import assert_expand_matches_step, random_playout, symmetric_play
from games.base import IllegalMoveError, random_legal_actions, take

COLUMNS = "ABCDEFGHJKLMNOPQRST"


def make(size=9, komi=7.0, max_length=None):
    return games.make("go", size=size, komi=komi, max_length=max_length)


def action(size, name):
    if name == "pass":
        return size * size
    return (int(name[1:]) - 1) * size + COLUMNS.index(name[0])


def play(game, names):
    """State of one game after the moves ``names`` (a space-separated string)."""
    return game.from_moves([[action(game.size, n) for n in names.split()]])


def drawn(picture):
    """int8[N] board of a drawing (top line = highest row)."""
    rows = [r.split() for r in textwrap.dedent(picture).strip().splitlines()]
    size = len(rows)
    board = np.zeros(size * size, np.int8)
    for i, r in enumerate(rows):
        assert len(r) == size
        for j, ch in enumerate(r):
            board[(size - 1 - i) * size + j] = ".XO".index(ch)
    return board


def legal_names(game, state):
    mask = game.legal(state)[0]
    return {game.action_name(a) for a in np.flatnonzero(mask)}


# ------------------------------------------------------------- the reference


class RefGo:
    """Slow, obvious Go: boards as tuples, flood fills by recursion-free BFS."""

    def __init__(self, size, komi, max_length):
        self.size, self.komi, self.max_length = size, komi, max_length
        self.N = size * size
        self.board = (0,) * self.N
        self.to_play, self.passes, self.moves, self.over = 1, 0, 0, False
        self.seen = {self.board}  # every position of the game so far
        self.history = [self.board]

    def neighbours(self, p):
        r, c = divmod(p, self.size)
        out = []
        if r > 0:
            out.append(p - self.size)
        if r < self.size - 1:
            out.append(p + self.size)
        if c > 0:
            out.append(p - 1)
        if c < self.size - 1:
            out.append(p + 1)
        return out

    def group(self, board, p):
        colour, stones, libs, todo = board[p], {p}, set(), [p]
        while todo:
            x = todo.pop()
            for y in self.neighbours(x):
                if board[y] == 0:
                    libs.add(y)
                elif board[y] == colour and y not in stones:
                    stones.add(y)
                    todo.append(y)
        return stones, libs

    def after(self, p):
        """The board after the mover places on the empty cell p and captures."""
        c, o = self.to_play, 3 - self.to_play
        board = list(self.board)
        board[p] = c
        for q in self.neighbours(p):
            if board[q] == o:
                stones, libs = self.group(board, q)
                if not libs:
                    for x in stones:
                        board[x] = 0
        return tuple(board)

    def place(self, p):
        """(board after placing on p, why it is illegal or None)."""
        if self.board[p] != 0:
            return None, "occupied"
        board = self.after(p)
        if not self.group(board, p)[1]:
            return None, "suicide"
        if board in self.seen:
            return None, "superko"
        return board, None

    def legal(self):
        if self.over:
            return [False] * (self.N + 1)
        return [self.place(p)[0] is not None for p in range(self.N)] + [True]

    def area(self):
        """Black's area minus White's."""
        diff, visited = 0, set()
        for p in range(self.N):
            v = self.board[p]
            if v:
                diff += 1 if v == 1 else -1
            elif p not in visited:
                region, touch, todo = {p}, set(), [p]
                while todo:
                    x = todo.pop()
                    for y in self.neighbours(x):
                        if self.board[y] == 0 and y not in region:
                            region.add(y)
                            todo.append(y)
                        elif self.board[y]:
                            touch.add(self.board[y])
                visited |= region
                if touch == {1}:
                    diff += len(region)
                elif touch == {2}:
                    diff -= len(region)
        return diff

    def step(self, a):
        mover = self.to_play
        if a == self.N:
            self.passes += 1
        else:
            board, why = self.place(a)
            assert why is None, why
            self.board, self.passes = board, 0
        self.seen.add(self.board)
        self.history.append(self.board)
        self.moves += 1
        self.to_play = 3 - mover
        if self.passes == 2 or self.moves >= self.max_length:
            self.over = True
            margin = self.area() - self.komi
            if mover == 2:
                margin = -margin
            return float(np.sign(margin)), True
        return 0.0, False


# --------------------------------------------------------- contract basics


def test_registry_metadata_and_defaults():
    g = games.make("go")
    assert (g.size, g.komi, g.num_actions, g.obs_shape) == (9, 7.0, 82, (3, 9, 9))
    assert g.max_length == 162  # 2 * 9 * 9
    g = make(size=5, komi=0.5, max_length=40)
    assert (g.num_actions, g.obs_shape, g.max_length) == (26, (3, 5, 5), 40)
    assert g.params == {"size": 5, "komi": 0.5, "max_length": 40}


@pytest.mark.parametrize("kwargs, word", [
    ({"size": 1}, "size"), ({"size": 20}, "size"), ({"size": 9.0}, "size"),
    ({"size": True}, "size"),
    ({"komi": float("nan")}, "komi"), ({"komi": "seven"}, "komi"),
    ({"max_length": 0}, "max_length"), ({"max_length": 2.5}, "max_length"),
])
def test_invalid_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        make(**kwargs)


def test_action_names_and_render():
    g = make()
    names = [g.action_name(a) for a in (0, 8, 9, 72, 80, 81)]
    assert names == ["A1", "J1", "A2", "A9", "J9", "pass"]
    big = make(size=19)
    assert big.action_name(8) == "J1" and big.action_name(360) == "T19"
    s = play(g, "D4 E5")
    text = g.render(s)
    lines = text.splitlines()
    assert "A B C D E F G H J" in lines[0]
    row4 = next(line for line in lines if line.strip().startswith("4 "))
    assert row4.split()[1:10] == [".", ".", ".", "X", ".", ".", ".", ".", "."]
    row5 = next(line for line in lines if line.strip().startswith("5 "))
    assert row5.split()[5] == "O"


def test_encode_from_the_movers_view():
    g = make(size=5)
    s = play(g, "B2 D4")  # black to move again
    obs = g.encode(s)[0]
    assert obs.shape == (3, 5, 5)
    assert obs[0, 1, 1] == 1 and obs[0].sum() == 1  # black B2 = row 1, col 1
    assert obs[1, 3, 3] == 1 and obs[1].sum() == 1  # white D4
    assert (obs[2] == 1).all()
    obs = g.encode(play(g, "B2"))[0]  # white to move
    assert obs[0].sum() == 0 and obs[1, 1, 1] == 1 and (obs[2] == 0).all()


# ------------------------------------------------------------------ captures


def test_single_stone_captures():
    g = make(size=5)
    # Centre: white C3 surrounded by B3 D3 C4 C2.
    s = play(g, "B3 C3 D3 pass C4 pass C2")
    assert (s.board[0] == drawn("""
        . . . . .
        . . X . .
        . X . X .
        . . X . .
        . . . . .""")).all()
    # Corner: white A1 taken by B1 and A2; edge: white C1 taken by B1, D1, C2.
    s = play(g, "B1 A1 A2 pass")
    assert (s.board[0] == drawn("""
        . . . . .
        . . . . .
        . . . . .
        X . . . .
        . X . . .""")).all()
    s = play(g, "B1 C1 D1 pass C2")
    assert (s.board[0] == drawn("""
        . . . . .
        . . . . .
        . . . . .
        . . X . .
        . X . X .""")).all()


def test_group_capture_on_the_edge():
    g = make(size=5)
    # White A3 A2 A1 B1 (one group) dies when black fills its last liberty C1.
    s = play(g, "B3 A3 B2 A2 A4 A1 pass B1 C1")
    assert (s.board[0] == drawn("""
        . . . . .
        X . . . .
        . X . . .
        . X . . .
        . . X . .""")).all()
    assert s.to_play[0] == 1 and s.moves[0] == 9  # white to move


def test_several_groups_captured_at_once_by_a_move_with_no_liberty():
    g = make(size=5)
    # White B1 and A2 are two groups, each with the single liberty A1. Black A1
    # has no empty neighbour, so it lives only by capturing both.
    s = play(g, "C1 B1 B2 A2 A3 pass")
    assert "A1" in legal_names(g, s)
    s = play(g, "C1 B1 B2 A2 A3 pass A1")
    assert (s.board[0] == drawn("""
        . . . . .
        . . . . .
        X . . . .
        . X . . .
        X . X . .""")).all()


def test_capture_of_three_groups_at_once():
    g = make(size=5)
    # White B3, C2 and C4 each have only C3 left; black C3 takes all three.
    s = play(g, "A3 B3 B2 C2 B4 C4 C1 pass D2 pass D4 pass C5 pass D3 pass C3")
    assert (s.board[0] == drawn("""
        . . X . .
        . X . X .
        X . X X .
        . X . X .
        . . X . .""")).all()


# ------------------------------------------------------------------- suicide


def test_suicide_is_illegal_but_a_capturing_fill_is_legal():
    g = make(size=5)
    # White A2 has the single liberty A1. White A1 would leave {A1, A2} with no
    # liberty and captures nothing (black B1 keeps C1): suicide.
    s = play(g, "B1 A2 B2 pass A3")
    assert s.to_play[0] == 1  # white
    assert "A1" not in legal_names(g, s)
    with pytest.raises(IllegalMoveError, match="A1"):
        play(g, "B1 A2 B2 pass A3 A1")
    # For black, A1 captures A2 and is legal.
    s = play(g, "B1 A2 B2 pass A3 pass")
    assert "A1" in legal_names(g, s)
    # A single stone's suicide: white E5 inside black D5, E4.
    s = play(g, "D5 pass E4")
    assert "E5" not in legal_names(g, s)
    # An occupied cell is never legal.
    with pytest.raises(IllegalMoveError):
        play(g, "C3 C3")


# ------------------------------------------------------------- ko, superko


KO = "B1 C1 A2 D2 B3 C3 pass B2 C2"  # black C2 takes the white stone on B2
KO_BOARD = """
    . . . . .
    . . . . .
    . X O . .
    X . X O .
    . X O . ."""


def test_simple_ko():
    g = make(size=5)
    s = play(g, KO)
    assert (s.board[0] == drawn(KO_BOARD)).all()
    assert "B2" not in legal_names(g, s)  # the immediate recapture repeats the board
    with pytest.raises(IllegalMoveError, match="B2"):
        play(g, KO + " B2")
    # After an exchange elsewhere the recapture makes a new position: legal.
    s = play(g, KO + " E5 E4")
    assert "B2" in legal_names(g, s)
    s = play(g, KO + " E5 E4 B2")
    assert (s.board[0] == drawn("""
        . . . . O
        . . . . X
        . X O . .
        X O . O .
        . X O . .""")).all()


def test_positional_superko_beyond_simple_ko():
    """On 2x2: black A1, white B2, black B1, white A2 takes two, black A1, white B1
    takes one. Black A1 would now take three and leave a lone black stone on A1:
    the position after the first move, six plies back. A simple-ko rule allows it,
    positional superko forbids it."""
    g = make(size=2)
    s = play(g, "A1 B2 B1 A2 A1 B1")
    assert (s.board[0] == drawn("""
        O O
        . O""")).all()
    assert s.to_play[0] == 0  # black
    assert legal_names(g, s) == {"pass"}
    # The same board reached without that history: A1 captures and is legal.
    s2 = play(g, "pass A2 pass B1 pass B2")
    assert (s2.board[0] == s.board[0]).all() and s2.to_play[0] == 0
    assert legal_names(g, s2) == {"A1", "pass"}
    s2 = play(g, "pass A2 pass B1 pass B2 A1")
    assert (s2.board[0] == drawn("""
        . .
        X .""")).all()


def test_superko_on_3x3_a_placement_that_captures_nothing():
    """Black C3, White A3, Black A2, White B2, Black pass, White C2 (the position
    P6), Black B3 takes one stone (A3), White A3 takes two (B3, C3). Black C3
    would capture nothing and recreate P6, three plies back: no ko recapture at
    all, yet superko forbids it."""
    g = make(size=3, komi=0.5)
    moves = "C3 A3 A2 B2 pass C2 B3 A3"
    p6 = play(g, "C3 A3 A2 B2 pass C2")
    assert (p6.board[0] == drawn("""
        O . X
        X O O
        . . .""")).all()
    s = play(g, moves)
    assert (s.board[0] == drawn("""
        O . .
        X O O
        . . .""")).all()
    assert s.to_play[0] == 0
    assert "C3" not in legal_names(g, s) and "B3" in legal_names(g, s)
    ref = RefGo(3, 0.5, 18)
    for n in moves.split():
        ref.step(action(3, n))
    assert ref.place(action(3, "C3"))[1] == "superko"
    # The same board and mover without P6 in the history: C3 is legal.
    s2 = play(g, "A2 A3 pass B2 pass C2")
    assert (s2.board[0] == s.board[0]).all() and s2.to_play[0] == 0
    assert "C3" in legal_names(g, s2)


# --------------------------------------------------------- end of the game


def test_two_passes_end_the_game_and_the_second_passer_is_scored():
    g = make(size=5)
    s = play(g, "pass")
    assert not g.terminal(s)[0]
    s, reward, done = g.step(s, np.array([25]))
    assert done[0] and g.terminal(s)[0]
    assert reward[0] == 1.0  # empty board: White wins by komi, and White moved last
    assert not g.legal(s).any()
    with pytest.raises(IllegalMoveError):
        g.step(s, np.array([25]))
    # A pass, a move, a pass: not over.
    s = play(g, "pass C3 pass")
    assert not g.terminal(s)[0]


def test_max_length_ends_the_game():
    g = make(size=3, max_length=4)
    s = play(g, "B2 pass A1")
    assert not g.terminal(s)[0]
    s, reward, done = g.step(s, np.array([9]))
    # 4 plies: over. Black B2 A1 own all 9 points; White has komi 7: Black +2, and
    # White made the last move.
    assert done[0] and s.moves[0] == 4
    assert reward[0] == -1.0
    assert g.score(s)[0] == 2.0
    assert s.hashes.shape == (1, 5)


def test_area_scoring_with_komi():
    # 3x3, black wall on column B: all 9 points are black's.
    for komi, expected in ((7.0, 1.0), (9.0, 0.0), (9.5, -1.0)):
        g = make(size=3, komi=komi)
        s, reward, done = g.step(play(g, "B1 pass B2 pass B3 pass"), np.array([9]))
        assert done[0]  # Black passed last
        assert g.score(s)[0] == 9 - komi
        assert reward[0] == expected

    # 5x5: black column B, white column D, column C touches both (neutral).
    # Black: 5 stones + column A (5) = 10; White: 5 + column E (5) = 10.
    walls = " ".join(f"B{r} D{r}" for r in range(1, 6))
    for komi, expected in ((0.0, 0.0), (0.5, 1.0), (-1.0, -1.0)):
        g = make(size=5, komi=komi)
        s, reward, done = g.step(play(g, walls + " pass"), np.array([25]))  # white passes last
        assert done[0] and g.score(s)[0] == 0 - komi
        assert reward[0] == expected

    # 4x4 with a region touching both colours and a region touching one:
    #   4  . X O .
    #   3  X X O .
    #   2  . . O O
    #   1  . . . .
    # Black: 3 stones + {A4} (only black) = 4. White: 4 stones + {D4, D3} (only
    # white) = 6. The region {A2 B2 A1 B1 C1 D1} touches both: nobody's.
    g = make(size=4, komi=0.5)
    s = play(g, "A3 C4 B3 C3 B4 C2 pass D2 pass pass")
    assert (s.board[0] == drawn("""
        . X O .
        X X O .
        . . O O
        . . . .""")).all()
    assert g.terminal(s)[0]
    assert g.score(s)[0] == 4 - 6 - 0.5
    s, reward, _ = g.step(play(g, "A3 C4 B3 C3 B4 C2 pass D2 pass"), np.array([16]))
    assert reward[0] == 1.0  # White, who passed last, wins by 2.5


# --------------------------------------------------------- random play


def random_game_states(game, B, plies, seed):
    """States along B random games (stopped where they end), for batch tests."""
    return [ply.state for ply in games.random_play(game, game.init(B), np.random.default_rng(seed), plies)]


def check_caches(game, s):
    """The packed group caches agree with groups recomputed from the board."""
    N = game.size * game.size
    ref = RefGo(game.size, game.komi, game.max_length)

    def fields(word):  # label, n, s, q of a groups word (bit layout in games/go.py)
        word = int(word)
        return word & 511, (word >> 9) & 1023, (word >> 19) & (2**18 - 1), word >> 37

    for b in range(s.board.shape[0]):
        board = tuple(int(v) for v in s.board[b])
        seen = set()
        for p in range(N):
            if board[p] == 0:
                assert s.groups[b, p] == 0
                continue
            if p in seen:
                continue
            stones, _ = ref.group(board, p)
            seen |= stones
            labels = {fields(s.groups[b, x])[0] for x in stones}
            assert len(labels) == 1
            root = labels.pop() - 1
            assert root in stones
            pseudo = [y for x in stones for y in ref.neighbours(x) if board[y] == 0]
            expected = (len(pseudo), sum(pseudo), sum(y * y for y in pseudo))
            assert fields(s.groups[b, root])[1:] == expected
            for x in stones - {root}:
                assert fields(s.groups[b, x])[1:] == (0, 0, 0)
        # the Bloom filter holds every position after a ply
        mask = 64 * s.bloom.shape[1] - 1
        for h in s.hashes[b, 1:s.moves[b] + 1]:
            h = int(h)
            b1, b2 = h & mask, (h >> 32) & mask
            assert (int(s.bloom[b, b1 >> 6]) >> (b1 & 63)) & 1
            assert (int(s.bloom[b, b2 >> 6]) >> (b2 & 63)) & 1


@pytest.mark.parametrize("size, B, seed, max_length", [
    (2, 40, 1, None), (3, 40, 2, None), (4, 24, 3, None), (5, 32, 4, None), (9, 8, 5, None),
    (19, 2, 6, 200),
])
def test_random_games_match_the_reference(size, B, seed, max_length):
    game = make(size=size, komi=0.5 if size < 5 else 7.0, max_length=max_length)
    refs = [RefGo(size, game.komi, game.max_length) for _ in range(B)]
    rng = np.random.default_rng(seed)
    s = game.init(B)
    superko_beyond_simple = 0
    for ply in range(game.max_length + 1):
        legal = game.legal(s)
        for b, ref in enumerate(refs):
            assert legal[b].tolist() == ref.legal(), (size, b, ply)
            assert tuple(s.board[b]) == ref.board
            assert s.to_play[b] + 1 == ref.to_play and s.moves[b] == ref.moves
            if not ref.over:  # count superko bans that are not a simple-ko recapture
                superko_beyond_simple += sum(
                    ref.place(p)[1] == "superko" and ref.after(p) != ref.history[-2]
                    for p in range(ref.N))
        if ply % 8 == 0 and size >= 4:
            check_caches(game, s)
        if not legal.any():
            break
        a = random_legal_actions(legal, rng)
        live = legal.any(axis=1)
        s, reward, done = games.step_live(game, s, a, live)
        expected = [refs[b].step(int(a[b])) for b in np.flatnonzero(live)]
        assert reward[live].tolist() == [r for r, _ in expected]
        assert done[live].tolist() == [d for _, d in expected]
    assert game.terminal(s).all()  # every game ended, by passes or max_length
    assert s.moves.mean() > size * size / 2  # (and they were real games)
    if size in (2, 3):
        assert superko_beyond_simple > 0  # the random games met real superko cases


def test_expand_equals_stepping_each_action():
    for size, seed in ((5, 7), (9, 8)):
        game = make(size=size)
        states = random_game_states(game, 6, 3 * size * size, seed)
        s = games.concat([states[k] for k in range(0, len(states), max(1, len(states) // 6))])
        B, A = s.board.shape[0], game.num_actions
        assert_expand_matches_step(game, s, f"size {size}")
        ex = game.expand(s)
        legal = game.legal(s)
        assert ex.children.board.shape[0] == B * A
        assert game.terminal(s).any()  # finished parents are covered too
        # Rows of illegal actions hold a valid state: the initial one.
        illegal = np.flatnonzero(~legal.reshape(-1))
        for f1, f2 in zip(take(ex.children, illegal), game.init(len(illegal))):
            assert np.array_equal(f1, f2)


def test_expand_ends_games_by_passes_and_by_max_length():
    g = make(size=5)
    ex = g.expand(play(g, "C3 pass"))
    # Black's pass ends the game: 25 points against komi 7, Black moved last.
    assert ex.done[0, 25] and ex.reward[0, 25] == 1.0
    assert not ex.done[0, :25].any()
    g = make(size=3, max_length=3)
    ex = g.expand(play(g, "B2 pass"))
    # Ply 3 ends every game. Black owns all 9 points with any placement (+2 over
    # komi 7); after Black's pass too.
    assert ex.done[0, ex.legal[0]].all() and (ex.reward[0, ex.legal[0]] == 1.0).all()
    assert ex.legal[0].sum() == 9  # 8 empty points and pass


def test_step_leaves_its_input_alone():
    game = make(size=5)
    s = game.from_moves([[12, 7], [0]])
    before = [f.copy() for f in s]
    game.step(s, np.array([13, 25]))
    for f, g in zip(s, before):
        assert np.array_equal(f, g)


def test_symmetries_map_games_onto_games():
    game = make(size=5)
    syms = game.symmetries()
    assert len(syms) == 8 and syms[0].name == "identity"
    assert (syms[0].action == np.arange(26)).all()
    rng = np.random.default_rng(11)
    for sym in syms:
        # Encodings and legal masks of the mapped games are checked by symmetric_play.
        for s, t in symmetric_play(game, sym, rng, 3, 31):
            assert game.terminal(t)[0] == game.terminal(s)[0]


def test_random_play_ends_within_max_length():
    game = make()
    for s in random_playout(game, 64, np.random.default_rng(3)):
        pass
    assert game.terminal(s).all()
    assert (s.moves <= game.max_length).all()
