"""Othello: perft counts, random games against a slow reference, passes, endings,
expand, and the 8 symmetries of the square.

The perft counts from the start (4, 12, 56, 244, 1396, 8200, 55092, 390216) are the
published ones (Aart Bik's Reversi perft table, and many engines' test suites since).
"""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.testing import assert_expand_matches_step
from games import IllegalMoveError, random_legal_actions, take

PASS = 64
DIRECTIONS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


@pytest.fixture(scope="module")
def game():
    return games.make("othello")


def sq(name: str) -> int:
    """Action of a square name: "d3" -> row 2, col 3 -> 19; "pass" -> 64."""
    if name == "pass":
        return PASS
    return (int(name[1:]) - 1) * 8 + "abcdefgh".index(name[0])


def boards(rows: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(black, white) bool[8, 8] of a drawing: 8 strings of 8 of "X" black, "O" white, "."."""
    grid = np.array([list(r) for r in rows])
    assert grid.shape == (8, 8)
    return grid == "X", grid == "O"


# ----------------------------------------------------------- a slow reference


class Reference:
    """Othello from the rules, one square at a time: board[r][c] in {0, 1 black, 2 white}."""

    def __init__(self):
        self.board = [[0] * 8 for _ in range(8)]
        self.board[3][3] = self.board[4][4] = 2  # d4, e5 white
        self.board[3][4] = self.board[4][3] = 1  # e4, d5 black
        self.turn = 1
        self.over = False

    def flips(self, who, r, c):
        if self.board[r][c]:
            return []
        other = 3 - who
        out = []
        for dr, dc in DIRECTIONS:
            run = []
            rr, cc = r + dr, c + dc
            while 0 <= rr < 8 and 0 <= cc < 8 and self.board[rr][cc] == other:
                run.append((rr, cc))
                rr, cc = rr + dr, cc + dc
            if run and 0 <= rr < 8 and 0 <= cc < 8 and self.board[rr][cc] == who:
                out += run
        return out

    def placements(self, who):
        return [r * 8 + c for r in range(8) for c in range(8) if self.flips(who, r, c)]

    def legal_mask(self):
        mask = np.zeros(65, bool)
        if self.over:
            return mask
        moves = self.placements(self.turn)
        mask[moves] = True
        mask[PASS] = not moves
        return mask

    def play(self, action):
        """Returns (reward for the mover, done)."""
        who = self.turn
        if action != PASS:
            r, c = divmod(action, 8)
            for rr, cc in self.flips(who, r, c):
                self.board[rr][cc] = who
            self.board[r][c] = who
        self.turn = 3 - who
        if not self.placements(1) and not self.placements(2):
            self.over = True
            mine = sum(row.count(who) for row in self.board)
            theirs = sum(row.count(3 - who) for row in self.board)
            return float(np.sign(mine - theirs)), True
        return 0.0, False

    def planes(self):
        b = np.array(self.board)
        return np.stack([b == self.turn, b == 3 - self.turn]).astype(np.float32)


def assert_states_equal(a, b, msg=""):
    for field, x, y in zip(a._fields, a, b):
        np.testing.assert_array_equal(x, y, err_msg=f"{msg} field {field}")


def random_states(game, batch, seed, keep_every=1):
    """States met along random games (all their plies, or every ``keep_every``-th)."""
    plies = games.random_play(game, game.init(batch), np.random.default_rng(seed))
    return games.concat([p.state for i, p in enumerate(plies) if i % keep_every == 0])


# ------------------------------------------------------------------------ tests


def test_metadata_start_and_names(game):
    assert game.num_actions == 65 and game.obs_shape == (2, 8, 8) and game.max_length == 120
    legal = game.legal(game.init(1))[0]
    assert sorted(np.flatnonzero(legal).tolist()) == sorted(sq(n) for n in ["d3", "c4", "f5", "e6"])
    obs = game.encode(game.init(1))[0]
    black, white = boards(["........", "........", "........", "...OX...",
                           "...XO...", "........", "........", "........"])
    np.testing.assert_array_equal(obs, np.stack([black, white]).astype(np.float32))
    assert [game.action_name(a) for a in (0, 7, 19, 56, 63, 64)] == ["a1", "h1", "d3", "a8", "h8", "pass"]
    text = game.render(game.init(1), 0)
    assert "a b c d e f g h" in text and "black (X) to move" in text


@pytest.mark.parametrize("depth", range(1, 9))
def test_perft_from_the_start(game, depth):
    """Leaf counts of the move tree (passes are moves; none occur this shallow)."""
    expected = [4, 12, 56, 244, 1396, 8200, 55092, 390216][depth - 1]
    state = game.init(1)
    for _ in range(depth - 1):
        exp = game.expand(state)
        state = take(exp.children, exp.legal.reshape(-1))
    assert int(game.legal(state).sum()) == expected


def test_random_games_match_reference(game):
    """At every ply of 40 random games: legal masks, the board after each placement's
    flips, forced passes, the end and the winner, as the slow reference says."""
    B = 40
    rng = np.random.default_rng(11)
    state = game.init(B)
    refs = [Reference() for _ in range(B)]
    live = np.ones(B, bool)
    passes = 0
    while live.any():
        legal, obs = game.legal(state), game.encode(state)
        for b in range(B):
            np.testing.assert_array_equal(legal[b], refs[b].legal_mask(), err_msg=f"game {b}")
            np.testing.assert_array_equal(obs[b], refs[b].planes(), err_msg=f"game {b}")
        actions = random_legal_actions(legal, rng)
        state, reward, done = games.step_live(game, state, actions, live)
        for b in np.flatnonzero(live):
            r, d = refs[b].play(int(actions[b]))
            assert (reward[b], done[b]) == (r, d), f"game {b}, action {game.action_name(actions[b])}"
            passes += actions[b] == PASS
        live &= ~done
        assert (state.moves <= game.max_length).all()
    assert game.terminal(state).all() and not game.legal(state).any()
    # Forced passes are common enough in random play (16 here) to be exercised; games
    # ending before the board is full are rare, so hand-built positions below test them.
    assert passes > 0


def test_expand_equals_stepping_each_action(game):
    state = random_states(game, 16, seed=3)  # every ply: includes forced passes and ends
    assert state.over.any() and ((state.placements == 0) & ~state.over).any()
    assert_expand_matches_step(game, state)


def test_step_does_not_mutate_its_input(game):
    state = random_states(game, 8, seed=4, keep_every=10)
    state = take(state, ~state.over)
    before = [f.copy() for f in state]
    game.step(state, random_legal_actions(game.legal(state), np.random.default_rng(0)))
    game.expand(state)
    for x, y in zip(before, state):
        np.testing.assert_array_equal(x, y)


def test_forced_pass_then_the_end(game):
    """Black (to move) has no placement: its only move is pass; white then has only d1,
    which takes black's last disc and ends the game 4-0 with 60 empty squares."""
    black, white = boards(["OOX.....", "........", "........", "........",
                           "........", "........", "........", "........"])
    state = game.from_boards(black[None], white[None], to_play=0)
    legal = game.legal(state)[0]
    assert np.flatnonzero(legal).tolist() == [PASS] and not game.terminal(state)[0]
    assert "must pass" in game.render(state, 0)
    with pytest.raises(IllegalMoveError):
        game.step(state, np.array([sq("d1")]))
    state, reward, done = game.step(state, np.array([PASS]))
    assert reward[0] == 0 and not done[0] and state.to_play[0] == 1
    assert np.flatnonzero(game.legal(state)[0]).tolist() == [sq("d1")]
    state, reward, done = game.step(state, np.array([sq("d1")]))
    assert done[0] and reward[0] == 1.0  # white, who moved, wins 4-0 (empties count for no one)
    assert game.terminal(state)[0] and not game.legal(state).any()
    assert "white (O) wins" in game.render(state, 0)


def test_pass_is_illegal_while_a_placement_exists(game):
    with pytest.raises(IllegalMoveError, match="pass"):
        game.step(game.init(1), np.array([PASS]))


@pytest.mark.parametrize("white_discs, expected", [(33, 0.0), (32, 1.0), (40, -1.0)])
def test_last_square_decides(game, white_discs, expected):
    """Black fills a1, the last empty square, flipping a2 (white, closed by a3): black
    gains 2 discs, white loses 1; 30-33 becomes a 32-32 draw, 31-32 a 33-31 black win,
    23-40 a 25-39 black loss."""
    grid = np.full(64, "X")
    grid[[0, 1, 8, 9, 16]] = [".", "X", "O", "X", "X"]  # a1 b1 / a2 b2 / a3
    # a1 flips only a2: b1 and b2 are black. The other 59 squares: white first.
    others = [i for i in range(64) if i not in (0, 1, 8, 9, 16)]
    grid[others[:white_discs - 1]] = "O"
    black, white = boards(["".join(grid[r * 8:(r + 1) * 8]) for r in range(8)])
    assert white.sum() == white_discs and black.sum() == 63 - white_discs
    state = game.from_boards(black[None], white[None], to_play=0)
    assert np.flatnonzero(game.legal(state)[0]).tolist() == [0]
    state, reward, done = game.step(state, np.array([0]))
    assert done[0] and reward[0] == expected
    np.testing.assert_array_equal(game.encode(state)[0].sum(axis=(1, 2)),
                                  [white_discs - 1, 65 - white_discs])


def test_draw_with_empty_squares(game):
    """c1 makes 3-3 with no placement left for anyone: a draw, 58 squares empty."""
    black, white = boards(["XO......", "........", "........", "........",
                           "........", "........", "........", ".....OOO"])
    state = game.from_boards(black[None], white[None], to_play=0)
    assert np.flatnonzero(game.legal(state)[0]).tolist() == [sq("c1")]
    state, reward, done = game.step(state, np.array([sq("c1")]))
    assert done[0] and reward[0] == 0.0
    assert "draw" in game.render(state, 0)


def test_a_full_board_is_over(game):
    black, white = boards(["XXXXXXXX"] * 4 + ["OOOOOOOO"] * 4)
    state = game.from_boards(black[None], white[None])
    assert game.terminal(state)[0] and not game.legal(state).any()


def test_symmetries_fixing_the_start_by_play(game):
    syms = game.symmetries()
    assert syms[0].name == "identity" and len(syms) == 8
    start = game.encode(game.init(1))
    fixing = [s for s in syms if np.array_equal(s.obs(start), start)]
    assert sorted(s.name for s in fixing) == sorted(["identity", "rot180", "rot90_flip", "rot270_flip"])
    moves = [[] for _ in range(6)]
    for ply in games.random_play(game, game.init(6), np.random.default_rng(5), plies=game.max_length):
        for b in np.flatnonzero(ply.moving):
            moves[b].append(int(ply.actions[b]))
    for sym in fixing:
        assert sym.action[PASS] == PASS
        for cut in (5, 20, 45):
            original = game.from_moves([m[:cut] for m in moves])
            image = game.from_moves([[int(sym.action[a]) for a in m[:cut]] for m in moves])
            np.testing.assert_array_equal(game.encode(image), sym.obs(game.encode(original)), err_msg=sym.name)
            np.testing.assert_array_equal(game.legal(image)[:, sym.action], game.legal(original),
                                          err_msg=sym.name)


def test_every_symmetry_on_built_positions(game):
    """Every symmetry, including the 4 that do not fix the start (they map it to its
    colour swap, so no move sequence reaches the image): positions built directly
    from transformed discs have permuted legal masks, and permuted moves give
    transformed children with the same reward."""
    state = random_states(game, 8, seed=6, keep_every=7)
    state = take(state, ~state.over)
    obs = game.encode(state)
    legal = game.legal(state)
    actions = random_legal_actions(legal, np.random.default_rng(1))
    child, reward, done = game.step(state, actions)
    for sym in game.symmetries():
        t = sym.obs(obs)
        image = game.from_boards(t[:, 0], t[:, 1], to_play=state.to_play, moves=state.moves)
        np.testing.assert_array_equal(image.placements == 0, state.placements == 0, err_msg=sym.name)
        np.testing.assert_array_equal(game.legal(image)[:, sym.action], legal, err_msg=sym.name)
        t_child, t_reward, t_done = game.step(image, sym.action[actions])
        np.testing.assert_array_equal(game.encode(t_child), sym.obs(game.encode(child)), err_msg=sym.name)
        np.testing.assert_array_equal(t_reward, reward)
        np.testing.assert_array_equal(t_done, done)


def test_from_boards_rejects_overlap(game):
    black, white = boards(["X......."] + ["........"] * 7)
    with pytest.raises(ValueError, match="overlap"):
        game.from_boards(black[None], black[None])
