"""Connect Four engine: Pons' bit layout, perft counts, win detection against a slow
reference, expand == stepping, the mirror symmetry, errors, move strings."""

import numpy as np
import pytest

import games
from games.testing import assert_expand_matches_step
from games.base import IllegalMoveError, random_legal_actions, step_live, take
from games.connect4 import moves_from_digits, moves_to_digits

ROWS, COLS = 6, 7


@pytest.fixture(scope="module")
def game():
    return games.make("connect4")


# ------------------------------------------------ slow, independent reference


class RefBoard:
    """A plain 6x7 grid (row 0 = bottom); 1 = first player, 2 = second."""

    def __init__(self):
        self.grid = [[0] * COLS for _ in range(ROWS)]
        self.ply = 0
        self.over = False

    def mover(self):
        return 1 + self.ply % 2

    def legal(self):
        return [not self.over and self.grid[ROWS - 1][c] == 0 for c in range(COLS)]

    def play(self, col):
        """Drop a stone: (reward for the mover, done, direction of the four or None)."""
        assert self.legal()[col]
        row = next(r for r in range(ROWS) if self.grid[r][col] == 0)
        p = self.mover()
        self.grid[row][col] = p
        self.ply += 1
        direction = None
        for name, (dr, dc) in {"horizontal": (0, 1), "vertical": (1, 0),
                               "diagonal/": (1, 1), "diagonal\\": (1, -1)}.items():
            run = 1  # the new stone, plus its line-mates on both sides
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < ROWS and 0 <= c < COLS and self.grid[r][c] == p:
                    run += 1
                    r, c = r + sign * dr, c + sign * dc
            if run >= 4:
                direction = name
                break
        self.over = direction is not None or self.ply == ROWS * COLS
        return (1.0 if direction else 0.0), self.over, direction

    def encode(self):
        g = np.array(self.grid)
        me = self.mover()
        return np.stack([g == me, (g != me) & (g != 0)]).astype(np.float32)


def ref_play(digits):
    board, results = RefBoard(), []
    for a in moves_from_digits(digits):
        results.append(board.play(a))
    return board, results


# ---------------------------------------------------------------- metadata


def test_metadata(game):
    assert game.num_actions == 7 and game.obs_shape == (2, 6, 7) and game.max_length == 42
    assert [game.action_name(a) for a in range(7)] == list("1234567")
    with pytest.raises(ValueError, match="no parameter 'rows'"):
        games.make("connect4", rows=6)


def test_bit_layout_is_pons(game):
    """bit = col * 7 + row, row 0 at the bottom; current = stones of the side to move."""
    s = game.from_moves([moves_from_digits(m) for m in ["", "4", "44", "17", "1111"]])
    assert s.mask.tolist() == [0, 1 << 21, (1 << 21) | (1 << 22), 1 | (1 << 42), 0b1111]
    # After "44" the first player is to move and owns the bottom stone of column 4.
    assert s.current.tolist() == [0, 0, 1 << 21, 1, 0b0101]
    assert s.moves.tolist() == [0, 1, 2, 2, 4]
    assert s.current.dtype == np.uint64 and s.mask.dtype == np.uint64


def test_encoding_row0_is_bottom_mover_first(game):
    s = game.from_moves([[3], [3, 3]])
    obs = game.encode(s)
    assert obs.shape == (2, 2, 6, 7) and obs.dtype == np.float32
    # One stone played: the second player is to move, the stone is the opponent's.
    assert obs[0, 1, 0, 3] == 1 and obs[0].sum() == 1
    assert obs[1, 0, 0, 3] == 1 and obs[1, 1, 1, 3] == 1 and obs[1].sum() == 2


# ------------------------------------------------------------------ golden


def test_perft_distinct_positions(game):
    """Distinct positions after n plies (OEIS A212693): 1, 7, 49, 238, 1120, 4263, 16422."""
    expected = [1, 7, 49, 238, 1120, 4263, 16422]
    level = game.init(1)
    for n, want in enumerate(expected):
        keys = np.stack([level.current, level.mask], axis=1)
        _, first = np.unique(keys, axis=0, return_index=True)
        level = take(level, np.sort(first))
        assert len(level.current) == want, f"ply {n}"
        assert not level.over.any()  # no game can end before ply 7
        ex = game.expand(level)
        level = take(ex.children, ex.legal.reshape(-1))


@pytest.mark.parametrize("digits, winner_ply, direction", [
    ("1122334", 7, "horizontal"),
    ("1212121", 7, "vertical"),
    ("12233434474", 11, "diagonal/"),
    ("76655454414", 11, "diagonal\\"),
    ("71122334", 8, "horizontal"),  # the second player wins
])
def test_hand_built_wins(game, digits, winner_ply, direction):
    board, results = ref_play(digits)
    assert results[-1] == (1.0, True, direction)  # the reference agrees with the test data
    moves = moves_from_digits(digits)
    s = game.init(1)
    for ply, a in enumerate(moves, 1):
        s, r, d = game.step(s, [a])
        assert bool(d[0]) == (ply == winner_ply) and r[0] == (1.0 if ply == winner_ply else 0.0)
    assert game.terminal(s)[0] and not game.legal(s).any()
    assert "wins" in game.render(s)


@pytest.mark.parametrize("digits, last_reward", [
    ("471741237552141345475541323223316267765666", 0.0),  # full board, no four: draw
    ("652153572666612223265315773745441347711434", 1.0),  # the 42nd stone makes four
])
def test_full_board(game, digits, last_reward):
    board, results = ref_play(digits)
    assert [d for _, d, _ in results] == [False] * 41 + [True] and results[-1][0] == last_reward
    s = game.init(1)
    for ply, a in enumerate(moves_from_digits(digits), 1):
        s, r, d = game.step(s, [a])
        assert bool(d[0]) == (ply == 42), f"ply {ply}"
    assert r[0] == last_reward
    assert s.mask[0] == sum(0b111111 << (7 * c) for c in range(7))
    assert ("draw" in game.render(s)) == (last_reward == 0.0)


# --------------------------------------------- random games vs the reference


def test_random_games_match_reference(game):
    """Every step of many random games: reward, done, legal mask and encoding agree
    with the grid reference; every direction of four gets exercised."""
    rng = np.random.default_rng(0)
    B = 600
    refs = [RefBoard() for _ in range(B)]
    state = game.init(B)
    seen = {}
    for _ in range(42):
        live = np.flatnonzero(~game.terminal(state))
        if len(live) == 0:
            break
        legal = game.legal(state)
        assert legal[live].tolist() == [refs[b].legal() for b in live]
        assert np.array_equal(game.encode(take(state, live)), np.stack([refs[b].encode() for b in live]))
        actions = random_legal_actions(legal, rng)
        state, reward, done = step_live(game, state, actions)
        for b in live:
            r, d, direction = refs[b].play(int(actions[b]))
            assert (reward[b], done[b]) == (r, d), f"game {b}"
            key = direction or ("draw" if d else None)
            seen[key] = seen.get(key, 0) + 1
    assert game.terminal(state).all()
    for direction in ("horizontal", "vertical", "diagonal/", "diagonal\\"):
        assert seen.get(direction, 0) >= 10, seen


def test_step_does_not_mutate_input(game):
    s = game.from_moves([[3, 3, 2], [0]])
    before = [f.copy() for f in s]
    game.step(s, [4, 4])
    for f, g in zip(s, before):
        assert np.array_equal(f, g)


# ---------------------------------------------------------------- expand


def random_states(game, rng, n):
    """States after random prefixes of random games, finished games included."""
    lists = []
    for _ in range(n):
        board, moves = RefBoard(), []
        length = rng.integers(0, 43)
        while len(moves) < length and not board.over:
            a = int(rng.choice(np.flatnonzero(board.legal())))
            board.play(a)
            moves.append(a)
        lists.append(moves)
    return game.from_moves(lists), lists


def test_expand_equals_stepping(game):
    rng = np.random.default_rng(1)
    state, _ = random_states(game, rng, 300)
    assert state.over.any() and (~state.over).any()
    assert_expand_matches_step(game, state)
    ex = game.expand(state)
    assert ex.reward.dtype == np.float32
    assert ex.done.any() and (ex.reward == 1).any()  # some children win


# ---------------------------------------------------------------- symmetry


def test_mirror_symmetry(game):
    syms = game.symmetries()
    assert [s.name for s in syms] == ["identity", "mirror"]
    mirror = syms[1]
    assert mirror.action.tolist() == [6, 5, 4, 3, 2, 1, 0]
    rng = np.random.default_rng(2)
    state, lists = random_states(game, rng, 200)
    mirrored = game.from_moves([[int(mirror.action[a]) for a in m] for m in lists])
    assert np.array_equal(game.encode(mirrored), mirror.obs(game.encode(state)))
    legal, legal_m = game.legal(state), game.legal(mirrored)
    expect = np.zeros_like(legal)
    expect[:, mirror.action] = legal
    assert np.array_equal(legal_m, expect)
    assert np.array_equal(game.terminal(mirrored), game.terminal(state))
    ex, ex_m = game.expand(state), game.expand(mirrored)
    assert np.array_equal(ex_m.reward[:, mirror.action], ex.reward)
    assert np.array_equal(ex_m.done[:, mirror.action], ex.done)


# ---------------------------------------------------------------- errors


def test_full_column_error_names_element_and_column(game):
    with pytest.raises(IllegalMoveError, match=r"move list 1, ply 6: action 2 \(3\) is illegal: column 3 is full"):
        game.from_moves([[2] * 6, [2] * 7])
    s = game.from_moves([[0], [4] * 6])
    with pytest.raises(IllegalMoveError, match=r"batch element 1: action 4 \(5\) is illegal: column 5 is full"):
        game.step(s, [4, 4])


def test_errors_out_of_range_and_finished(game):
    s = game.init(2)
    with pytest.raises(IllegalMoveError, match=r"batch element 1: action 7 is out of range 0..6"):
        game.step(s, [0, 7])
    done = game.from_moves([moves_from_digits("1212121")])
    with pytest.raises(IllegalMoveError, match="game that is over"):
        game.step(done, [3])


# ------------------------------------------------------- move strings, render


def test_moves_from_digits():
    assert moves_from_digits("4453") == [3, 3, 4, 2]
    assert moves_from_digits("") == []
    for s in ["1234567", "4444443", "71122334"]:
        assert moves_to_digits(moves_from_digits(s)) == s
    assert moves_from_digits(moves_to_digits([6, 0, 3])) == [6, 0, 3]
    for bad, ch in [("4405", "'0'"), ("48", "'8'"), ("4 4", "' '"), ("x", "'x'")]:
        with pytest.raises(ValueError, match=f"bad character {ch}"):
            moves_from_digits(bad)
    with pytest.raises(ValueError, match="out of range"):
        moves_to_digits([7])


def test_render(game):
    s = game.from_moves([moves_from_digits("445")])
    text = game.render(s)
    lines = text.splitlines()
    assert lines[-2].split() == list("1234567")
    assert lines[-3].split() == ["1", ".", ".", ".", "X", "X", ".", "."]
    assert lines[-4].split() == ["2", ".", ".", ".", "O", ".", ".", "."]
    assert "O to move" in lines[-1]
