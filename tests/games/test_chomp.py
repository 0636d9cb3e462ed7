"""Chomp engine: move effects on profiles by hand, the end of the game, known winners
(strategy stealing on rectangles, 2-row and L-shaped P-positions) from an exhaustive
solver over the engine and an independent one, expand == stepping, from_profiles
errors, the transpose symmetry, names, drawing and parameter errors; the multi-frame
input (``frames``): stacked planes against a reference built on squares, rules that
do not depend on it, expand == stepping and the transpose of every frame."""

import itertools
from functools import lru_cache

import numpy as np
import pytest

import games
from games.base import IllegalMoveError, random_legal_actions, take
from games.testing import assert_expand_matches_step, random_playout, symmetric_play


def game_of(rows, cols):
    return games.make("chomp", rows=rows, cols=cols)


def after(game, profile, square):
    """(profile after taking square (r, c), reward, done), through the public API."""
    state = game.profile_to_state(profile)
    r, c = square
    nxt, reward, done = game.step(state, np.array([r * game.cols + c]))
    return nxt.profile[0].tolist(), float(reward[0]), bool(done[0])


# ------------------------------------------------ slow, independent reference


def ref_moves(profile):
    """Successor profiles of a profile (tuple), from the rule written on squares:
    taking (r, c) removes every square (r', c') with r' >= r and c' >= c."""
    squares = {(r, c) for r, n in enumerate(profile) for c in range(n)}
    out = {}
    for r, c in sorted(squares - {(0, 0)}):
        left = {(rr, cc) for rr, cc in squares if not (rr >= r and cc >= c)}
        out[(r, c)] = tuple(sum(1 for cc in range(len(left) + 1) if (rr, cc) in left) for rr in range(len(profile)))
    return out


@lru_cache(maxsize=None)
def ref_wins(profile):
    """Negamax: True if the player to move wins. With only P left there is no move
    and the player to move has lost."""
    return any(not ref_wins(child) for child in ref_moves(profile).values())


def all_profiles(rows, cols):
    """Every non-increasing profile with row 0 >= 1."""
    out = []
    for p in itertools.product(range(cols + 1), repeat=rows):
        if p[0] >= 1 and all(a >= b for a, b in zip(p, p[1:])):
            out.append(p)
    return out


def engine_wins(game):
    """Negamax over every profile of the board, one batched ``expand`` for all of
    them, processed from small to large: {profile: player to move wins}."""
    profiles = all_profiles(game.rows, game.cols)
    exp = game.expand(game.from_profiles(profiles))
    A = game.num_actions
    children = exp.children.profile.reshape(len(profiles), A, game.rows)
    wins = {}
    for i in sorted(range(len(profiles)), key=lambda i: sum(profiles[i])):
        wins[profiles[i]] = any(
            exp.done[i, a] or not wins[tuple(children[i, a].tolist())]
            for a in np.flatnonzero(exp.legal[i]))
    return wins


# ---------------------------------------------------------------- metadata


def test_metadata_and_parameters():
    g = games.make("chomp")
    assert (g.rows, g.cols) == (9, 10)
    assert (g.num_actions, g.obs_shape, g.max_length) == (90, (1, 9, 10), 89)
    assert game_of(1, 2).max_length == 1
    for bad in ({"rows": 0}, {"rows": 17}, {"cols": 17}, {"cols": 2.0}):
        with pytest.raises(ValueError, match=r"parameter (rows|cols) must be an integer in 1\.\.16"):
            games.make("chomp", **bad)
    with pytest.raises(ValueError, match="at least 2 squares"):
        games.make("chomp", rows=1, cols=1)


def test_names_and_render():
    g = game_of(3, 4)
    assert g.action_name(6) == "r1c2" and g.action_name(11) == "r2c3"
    text = g.render(g.profile_to_state([4, 2, 1]), 0)
    lines = text.splitlines()
    assert lines[0].split() == ["0", "1", "2", "3"]
    assert lines[1].split() == ["r0", "P", "#", "#", "#"]
    assert lines[2].split() == ["r1", "#", "#", ".", "."]
    assert lines[3].split() == ["r2", "#", ".", ".", "."]
    assert "profile 4,2,1" in text


# ---------------------------------------------------------- move effects


def test_move_effects_by_hand():
    g = game_of(3, 4)
    assert after(g, [4, 4, 4], (1, 2)) == ([4, 2, 2], 0.0, False)
    assert after(g, [4, 4, 4], (0, 2)) == ([2, 2, 2], 0.0, False)  # a move on row 0
    assert after(g, [4, 4, 4], (2, 3)) == ([4, 4, 3], 0.0, False)  # the last column
    assert after(g, [4, 4, 4], (1, 0)) == ([4, 0, 0], 0.0, False)  # whole rows go
    assert after(g, [4, 4, 4], (0, 1)) == ([1, 1, 1], 0.0, False)
    assert after(g, [4, 2, 1], (0, 3)) == ([3, 2, 1], 0.0, False)  # shorter rows untouched
    assert after(g, [4, 2, 1], (1, 1)) == ([4, 1, 1], 0.0, False)
    assert after(g, [3, 3, 0], (1, 2)) == ([3, 2, 0], 0.0, False)
    # The last squares: the mover leaves only P and wins.
    assert after(g, [1, 1, 0], (1, 0)) == ([1, 0, 0], 1.0, True)
    assert after(g, [2, 0, 0], (0, 1)) == ([1, 0, 0], 1.0, True)
    assert after(g, [4, 3, 3], (0, 1)) == ([1, 1, 1], 0.0, False)
    assert after(game_of(1, 5), [5], (0, 1)) == ([1], 1.0, True)


def test_legal_moves_by_hand():
    g = game_of(3, 4)
    legal = g.legal(g.profile_to_state([4, 2, 1]))[0].reshape(3, 4)
    np.testing.assert_array_equal(legal, [[0, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    assert not g.legal(g.init(5))[:, 0].any(), "P is never a legal action"
    with pytest.raises(IllegalMoveError, match=r"action 0 \(r0c0\) is illegal"):
        g.step(g.init(1), np.array([0]))
    with pytest.raises(IllegalMoveError, match="is illegal"):
        g.step(g.profile_to_state([4, 2, 1]), np.array([6]))  # (1, 2) was taken


@pytest.mark.parametrize("shape", [(4, 5), (1, 6), (6, 1), (3, 3)])
def test_game_ends_exactly_at_the_poison(shape):
    g = game_of(*shape)
    poison_only = [1] + [0] * (g.rows - 1)
    rng = np.random.default_rng(1)
    B = 64
    state = g.init(B)
    lengths = np.zeros(B, int)
    for ply in range(g.max_length):
        legal = g.legal(state)
        live = legal.any(axis=1)
        np.testing.assert_array_equal(live, ~g.terminal(state))
        if not live.any():
            break
        state, reward, done = games.step_live(g, state, random_legal_actions(legal, rng), live)
        at_poison = live & (state.profile == poison_only).all(axis=1)  # the games that just ended
        np.testing.assert_array_equal(done, at_poison, err_msg=f"ply {ply}")
        np.testing.assert_array_equal(reward, at_poison.astype(np.float32))
        lengths[live] += 1
    assert g.terminal(state).all() and (state.profile == poison_only).all()
    assert lengths.max() <= g.max_length
    finished = g.profile_to_state(poison_only)
    assert g.terminal(finished)[0] and not g.legal(finished).any()


# ----------------------------------------------------------- known winners


def test_reference_moves_agree_with_engine_expand():
    g = game_of(4, 5)
    profiles = all_profiles(4, 5)
    assert len(profiles) == 125  # C(9, 4) non-increasing profiles, minus the empty board
    exp = g.expand(g.from_profiles(profiles))
    for i, p in enumerate(profiles):
        ref = ref_moves(p)
        got = {divmod(int(a), 5): tuple(exp.children.profile[i * g.num_actions + a].tolist())
               for a in np.flatnonzero(exp.legal[i])}
        assert got == ref, f"profile {p}"


@pytest.mark.parametrize("rows,cols", [(1, 2), (1, 7), (2, 2), (2, 6), (3, 3), (3, 5), (4, 4), (4, 5), (5, 4)])
def test_first_player_wins_every_rectangle(rows, cols):
    """Strategy stealing: every rectangle larger than 1 x 1 is a first-player win;
    checked with the engine-driven solver and with the independent reference."""
    wins = engine_wins(game_of(rows, cols))
    full = (cols,) * rows
    assert wins[full] and ref_wins(full)
    assert not wins[(1,) + (0,) * (rows - 1)]
    # The two solvers agree on every position of the board.
    assert all(wins[p] == ref_wins(p) for p in wins)


def test_two_row_losing_positions():
    """On two rows the player to move loses exactly at [a, a-1]."""
    wins = engine_wins(game_of(2, 10))
    for (a, b), w in wins.items():
        assert w == (b != a - 1), f"profile [{a}, {b}]"


def test_l_shapes_lose_with_equal_arms():
    """An L (row 0 of length a, column 0 of height h) is two Nim heaps of a-1 and h-1
    squares: a loss for the mover exactly when the arms are equal. The square
    board's winning first move (1, 1) leaves such an L."""
    g = game_of(6, 6)
    wins = engine_wins(g)
    for a in range(1, 7):
        for h in range(1, 7):
            p = (a,) + (1,) * (h - 1) + (0,) * (6 - h)
            assert wins[p] == (a != h), f"L {p}"
    child, _, _ = g.step(g.init(1), np.array([1 * 6 + 1]))
    assert not wins[tuple(child.profile[0].tolist())]


# ------------------------------------------------------- expand == stepping


@pytest.mark.parametrize("shape", [(3, 4), (4, 4), (1, 5), (9, 10)])
def test_expand_equals_stepping(shape):
    g = game_of(*shape)
    for ply, state in enumerate(random_playout(g, 6, np.random.default_rng(5))):
        assert_expand_matches_step(g, state, f"ply {ply}")
    assert g.terminal(state).all()


# ---------------------------------------------------------- from_profiles


def test_from_profiles():
    g = game_of(3, 4)
    state = g.from_profiles([[4, 4, 4], [4, 2, 0], [1, 0, 0], (3, 3, 3)])
    np.testing.assert_array_equal(state.profile, [[4, 4, 4], [4, 2, 0], [1, 0, 0], [3, 3, 3]])
    np.testing.assert_array_equal(state.over, [False, False, True, False])
    np.testing.assert_array_equal(g.encode(state)[1, 0], [[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(g.from_profiles([[4, 4, 4]]).profile, g.init(1).profile)
    assert g.from_profiles([np.array([2, 1, 1])]).profile.tolist() == [[2, 1, 1]]


@pytest.mark.parametrize("profile,message", [
    ([4, 4], r"profile 1 \[4, 4\]: needs 3 row lengths, got 2"),
    ([2, 3, 1], r"profile 1 \[2, 3, 1\]: row lengths must be non-increasing"),
    ([5, 4, 4], r"profile 1 \[5, 4, 4\]: row lengths must lie in 0\.\.4"),
    ([3, 2, -1], r"row lengths must lie in 0\.\.4"),
    ([0, 0, 0], r"row 0 must keep the poisoned square"),
    ([3, 2.5, 1], r"row lengths must be integers"),
])
def test_from_profiles_errors(profile, message):
    g = game_of(3, 4)
    with pytest.raises(ValueError, match=message):
        g.from_profiles([[4, 4, 4], profile])
    with pytest.raises(ValueError, match="at least one profile"):
        g.from_profiles([])


# ---------------------------------------------------------------- symmetry


def test_symmetries():
    assert [s.name for s in game_of(4, 5).symmetries()] == ["identity"]
    g = game_of(5, 5)
    ident, tr = g.symmetries()
    assert tr.name == "transpose"
    assert tr.action[1] == 5 and tr.action[5 * 2 + 3] == 3 * 5 + 2 and tr.action[0] == 0
    rng = np.random.default_rng(2)
    for s, image in symmetric_play(g, tr, rng, 20, 8):
        # The transposed profile is the conjugate partition.
        conj = [sum(1 for n in s.profile[0] if n > c) for c in range(5)]
        assert image.profile[0].tolist() == conj


# ------------------------------------------------------------ multi-frame input


def ref_planes(rows, cols, frames, moves):
    """float32[frames, rows, cols] after playing ``moves`` from the full board, from the
    rule on squares: plane j is the board j plies ago, empty before the first ply."""
    squares = {(r, c) for r in range(rows) for c in range(cols)}
    boards = [squares]
    for a in moves:
        r, c = divmod(a, cols)
        squares = {(rr, cc) for rr, cc in squares if not (rr >= r and cc >= c)}
        boards.append(squares)
    out = np.zeros((frames, rows, cols), np.float32)
    for j in range(min(frames, len(boards))):
        for r, c in boards[len(moves) - j]:
            out[j, r, c] = 1.0
    return out


def random_move_lists(game, count, rng):
    """Move lists of ``count`` whole random games (each ends with only P left)."""
    out = [[] for _ in range(count)]
    for ply in games.random_play(game, game.init(count), rng):
        for b in np.flatnonzero(ply.moving):
            out[b].append(int(ply.actions[b]))
    return out


def test_frames_parameter():
    g = games.make("chomp", rows=5, cols=6, frames=3)
    assert (g.obs_shape, g.num_actions, g.max_length) == ((3, 5, 6), 30, 29)
    assert g.params == {"rows": 5, "cols": 6, "frames": 3}
    assert repr(g) == "games.make('chomp', rows=5, cols=6, frames=3)"
    assert games.make("chomp", **g.params).obs_shape == (3, 5, 6)
    # One frame is the default, with the parameters single-frame games always had.
    one = games.make("chomp", rows=5, cols=6, frames=1)
    assert one.params == {"rows": 5, "cols": 6} and one.obs_shape == (1, 5, 6)
    assert games.make("chomp", frames=8).obs_shape == (8, 9, 10)
    for bad in (0, 9, -1, 2.0, True, "3", None):
        with pytest.raises(ValueError, match=r"chomp: parameter frames must be an integer in 1\.\.8"):
            games.make("chomp", rows=3, cols=4, frames=bad)


def test_stacked_planes_by_hand():
    g = games.make("chomp", rows=3, cols=4, frames=3)
    # Take (1, 2), then (0, 3), then (2, 0): profiles [4,2,2], [3,2,2], [3,2,0].
    state = g.init(1)
    state, _, _ = g.step(state, np.array([1 * 4 + 2]))
    np.testing.assert_array_equal(g.encode(state)[0], [
        [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]],  # now
        [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]],  # the start
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],  # before the start: empty
    ])
    for a in (0 * 4 + 3, 2 * 4 + 0):
        state, _, _ = g.step(state, np.array([a]))
    np.testing.assert_array_equal(g.encode(state)[0], [
        [[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]],
        [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 0, 0]],
        [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]],
    ])
    assert state.history.tolist() == [[[3, 2, 2], [4, 2, 2]]]
    assert g.from_moves([[6, 3, 8]]).history.tolist() == [[[3, 2, 2], [4, 2, 2]]]
    assert "earlier profiles (1..2 plies ago): 3,2,2 | 4,2,2" in g.render(state, 0)
    assert "earlier profiles (1..2 plies ago): 4,4,4 | -" in g.render(g.from_moves([[6]]), 0)


@pytest.mark.parametrize("rows,cols,frames", [(3, 4, 3), (4, 4, 2), (1, 5, 3), (5, 3, 5)])
def test_stacked_planes_match_reference(rows, cols, frames):
    """Every prefix of random games, stepped one move at a time and rebuilt by
    ``from_moves``, encodes as the reference's stack of the last boards."""
    g = games.make("chomp", rows=rows, cols=cols, frames=frames)
    rng = np.random.default_rng(rows * 10 + frames)
    for moves in random_move_lists(g, 6, rng):
        state = g.init(1)
        prefixes = [moves[:t] for t in range(len(moves) + 1)]
        rebuilt = g.encode(g.from_moves(prefixes))
        for t, prefix in enumerate(prefixes):
            expected = ref_planes(rows, cols, frames, prefix)
            np.testing.assert_array_equal(g.encode(state)[0], expected, err_msg=f"{prefix} stepped")
            np.testing.assert_array_equal(rebuilt[t], expected, err_msg=f"{prefix} from_moves")
            if t < len(moves):
                state, _, _ = g.step(state, np.array([moves[t]]))


def test_one_frame_encodes_as_before():
    g, g3 = game_of(4, 5), games.make("chomp", rows=4, cols=5, frames=3)
    moves = random_move_lists(g, 8, np.random.default_rng(3))
    prefixes = [m[: len(m) // 2] for m in moves]
    state = g.from_moves(prefixes)
    assert type(state).__name__ == "ChompState" and state._fields == ("profile", "moves", "over")
    obs = g.encode(state)
    assert obs.shape == (8, 1, 4, 5) and obs.dtype == np.float32
    for b, prefix in enumerate(prefixes):
        np.testing.assert_array_equal(obs[b], ref_planes(4, 5, 1, prefix))
    np.testing.assert_array_equal(g3.encode(g3.from_moves(prefixes))[:, :1], obs)


def test_rules_do_not_depend_on_frames():
    """The same random moves through 1, 2, 3 and 8 frames: the same legal masks,
    rewards, done flags, positions and expansions at every ply."""
    variants = [games.make("chomp", rows=4, cols=5, frames=k) for k in (1, 2, 3, 8)]
    assert {v.num_actions for v in variants} == {20}
    assert {v.max_length for v in variants} == {19}
    rng = np.random.default_rng(4)
    states = [v.init(32) for v in variants]
    while not variants[0].terminal(states[0]).all():
        base = variants[0]
        legal = base.legal(states[0])
        live = legal.any(axis=1)
        actions = random_legal_actions(legal, rng)
        exp = base.expand(states[0])
        out = [games.step_live(v, s, actions, live) for v, s in zip(variants, states)]
        for v, s, (nxt, reward, done) in zip(variants[1:], states[1:], out[1:]):
            np.testing.assert_array_equal(v.legal(s), legal)
            np.testing.assert_array_equal(reward, out[0][1])
            np.testing.assert_array_equal(done, out[0][2])
            np.testing.assert_array_equal(nxt.profile, out[0][0].profile)
            e = v.expand(s)
            for x, y in ((e.legal, exp.legal), (e.reward, exp.reward), (e.done, exp.done),
                         (e.children.profile, exp.children.profile)):
                np.testing.assert_array_equal(x, y)
        states = [nxt for nxt, _, _ in out]
    for v, s in zip(variants, states):
        assert v.terminal(s).all() and not v.legal(s).any()


@pytest.mark.parametrize("rows,cols,frames", [(3, 4, 3), (4, 4, 3), (1, 5, 2), (9, 10, 3)])
def test_expand_equals_stepping_with_frames(rows, cols, frames):
    g = games.make("chomp", rows=rows, cols=cols, frames=frames)
    A = g.num_actions
    for ply, state in enumerate(random_playout(g, 6, np.random.default_rng(6))):
        assert_expand_matches_step(g, state, f"ply {ply}")
        # Each child's frame 1 is its parent's board; older frames shift by one.
        exp = g.expand(state)
        b, a = np.nonzero(exp.legal)
        children = exp.children.history[b * A + a]  # [n, k-1, rows]
        np.testing.assert_array_equal(children[:, 0], state.profile[b])
        np.testing.assert_array_equal(children[:, 1:], state.history[b, :-1])
    assert g.terminal(state).all()


def test_from_profiles_with_frames_have_no_past():
    g = games.make("chomp", rows=3, cols=4, frames=3)
    state = g.from_profiles([[4, 2, 1], [1, 0, 0]])
    assert state.history.shape == (2, 2, 3) and not state.history.any()
    obs = g.encode(state)
    np.testing.assert_array_equal(obs[0, 0], [[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    assert not obs[:, 1:].any()
    np.testing.assert_array_equal(state.over, [False, True])
    nxt, _, _ = g.step(take(state, [0]), np.array([1 * 4 + 1]))
    assert nxt.history.tolist() == [[[4, 2, 1], [0, 0, 0]]]


def test_transpose_acts_on_every_frame():
    g = games.make("chomp", rows=5, cols=5, frames=3)
    _, tr = g.symmetries()
    obs = g.encode(g.from_moves([[7, 3, 16]]))
    np.testing.assert_array_equal(tr.obs(obs), obs.transpose(0, 1, 3, 2))
    rng = np.random.default_rng(7)
    for s, image in symmetric_play(g, tr, rng, 20, 8):
        # Each earlier board of the image is the conjugate partition (empty stays empty).
        for j in range(2):
            conj = [sum(1 for n in s.history[0, j] if n > c) for c in range(5)]
            assert image.history[0, j].tolist() == conj
