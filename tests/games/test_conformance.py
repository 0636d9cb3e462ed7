"""One conformance suite run over every registered game (and a few parameter sets).

Each test plays random games through the public, checked API and asserts the
contract of docs/design.md: legal masks, reward/done separation, batched == per-element,
determinism, ``from_moves`` round trips, ``expand`` == stepping each action,
symmetries, and clear errors on bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

import games
from games import IllegalMoveError, random_legal_actions, step_live, take
from games.testing import assert_expand_matches_step, assert_states_equal

CONFIGS = [
    ("connect4", {}),
    ("tictactoe", {}),
    ("hex", {}),
    ("hex", {"size": 4, "swap": True}),
    ("othello", {}),
    ("go", {"size": 5}),
    ("go", {}),
    ("chomp", {"rows": 4, "cols": 5}),
    ("chomp", {"rows": 4, "cols": 4}),
    ("chomp", {"rows": 4, "cols": 4, "frames": 3}),
    ("fgame", {"depth": 6, "branching": 3, "seed": 1}),
    ("fgame", {"depth": 20, "branching": 2, "seed": 2}),
]
IDS = [name + "".join(f"-{k}{v}" for k, v in params.items()) for name, params in CONFIGS]


def test_every_registered_game_is_covered():
    assert {name for name, _ in CONFIGS} == set(games.names())


@pytest.fixture(params=CONFIGS, ids=IDS, scope="module")
def game(request):
    name, params = request.param
    return games.make(name, **params)


def play_random(game, batch, seed):
    """Random games to the end: per-ply lists of (state, legal, actions, reward, done, live)."""
    rng = np.random.default_rng(seed)
    state = game.init(batch)
    live = np.ones(batch, bool)
    history = []
    for _ in range(game.max_length + 1):
        legal = game.legal(state)
        if not live.any():
            history.append((state, legal, None, None, None, live.copy()))
            break
        actions = random_legal_actions(legal, rng)
        nxt, reward, done = step_live(game, state, actions, live)
        history.append((state, legal, actions, reward, done, live.copy()))
        state = nxt
        live = live & ~done
    return history


def test_metadata_and_encoding(game):
    assert game.num_actions >= 2 and game.max_length >= 1
    state = game.init(3)
    obs = game.encode(state)
    assert obs.dtype == np.float32 and obs.shape == (3, *game.obs_shape)
    assert all(np.asarray(f).shape[0] == 3 for f in state)
    assert isinstance(game.render(state, 1), str) and game.render(state, 1).strip()
    assert repr(game).startswith("games.make(")


def test_random_play_invariants(game):
    history = play_random(game, 48, seed=0)
    final_state, final_legal, *_ , final_live = history[-1]
    assert not final_live.any(), "some games did not end within max_length"
    assert final_legal.sum() == 0
    for ply, (state, legal, actions, reward, done, live) in enumerate(history[:-1]):
        terminal = game.terminal(state)
        np.testing.assert_array_equal(terminal, ~live, err_msg=f"ply {ply}: terminal flag")
        # Legal masks are never empty before the end, and empty after it.
        assert legal[live].any(axis=1).all(), f"ply {ply}: empty legal mask in a live game"
        assert not legal[~live].any()
        # Rewards for the mover lie in [-1, 1] and only arrive with done: the two are
        # separate, never one value with two meanings.
        assert np.all(np.abs(reward) <= 1.0)
        assert np.all(reward[~done] == 0.0), f"ply {ply}: reward without done"
        obs = game.encode(state)
        assert np.isfinite(obs).all()
    # done is what terminal says on the next state.
    for (state, *_rest), (_s, _l, _a, reward, done, live) in zip(history[1:], history[:-1]):
        np.testing.assert_array_equal(game.terminal(state)[live], done[live])


def test_zero_sum_outcomes(game):
    """The final reward is the mover's; the other player's is its negation, so along
    any game the players' returns sum to zero. Checked by replaying each finished game
    through ``expand``: the winning move's reward seen from the parent equals the step's."""
    history = play_random(game, 24, seed=5)
    for state, legal, actions, reward, done, live in history[:-1]:
        if not done.any():
            continue
        exp = game.expand(state)
        rows = np.flatnonzero(done)
        np.testing.assert_array_equal(exp.reward[rows, actions[rows]], reward[rows])
        np.testing.assert_array_equal(exp.done[rows, actions[rows]], done[rows])
        # A finished game's outcome is the same number of opposite sign for the two
        # players: the mover gets r, so the player to move at the end faces -r.
        assert set(np.unique(reward[rows])) <= {-1.0, 0.0, 1.0}


def test_batched_equals_per_element(game):
    history = play_random(game, 12, seed=1)
    for b in range(12):
        state = game.init(1)
        for ply, (full_state, legal, actions, reward, done, live) in enumerate(history[:-1]):
            if not live[b]:
                break
            assert_states_equal(state, take(full_state, [b]), f"element {b} ply {ply}")
            np.testing.assert_array_equal(game.legal(state)[0], legal[b])
            np.testing.assert_array_equal(game.encode(state)[0], game.encode(take(full_state, [b]))[0])
            state, r, d = game.step(state, actions[[b]])
            assert r[0] == reward[b] and d[0] == done[b]


def test_determinism_under_seed(game):
    first = play_random(game, 16, seed=7)
    second = play_random(game, 16, seed=7)
    assert len(first) == len(second)
    for x, y in zip(first, second):
        assert_states_equal(x[0], y[0])
        if x[2] is not None:
            np.testing.assert_array_equal(x[2], y[2])
            np.testing.assert_array_equal(x[3], y[3])


def test_from_moves_round_trip(game):
    history = play_random(game, 10, seed=2)
    moves = [[] for _ in range(10)]
    for _state, _legal, actions, _r, _d, live in history[:-1]:
        for b in np.flatnonzero(live):
            moves[b].append(int(actions[b]))
    assert_states_equal(game.from_moves(moves), history[-1][0], "full games")
    # Prefixes of different lengths reproduce the states met along the way.
    cut = [len(m) // (b % 3 + 1) for b, m in enumerate(moves)]
    rebuilt = game.from_moves([m[:c] for m, c in zip(moves, cut)])
    for b, c in enumerate(cut):
        assert_states_equal(take(rebuilt, [b]), take(history[c][0], [b]), f"prefix of game {b}")


def test_expand_equals_stepping_each_action(game):
    history = play_random(game, 6, seed=3)
    for ply, h in enumerate(history[:: max(1, len(history) // 6)]):
        assert_expand_matches_step(game, h[0], f"state {ply}")


def test_symmetries(game):
    syms = game.symmetries()
    assert syms[0].name == "identity"
    A = game.num_actions
    for sym in syms:
        assert sorted(sym.action.tolist()) == list(range(A)), f"{sym.name} is not a permutation"
    start = game.encode(game.init(1))
    history = play_random(game, 8, seed=4)
    moves = [[] for _ in range(8)]
    for _state, _legal, actions, _r, _d, live in history[:-1]:
        for b in np.flatnonzero(live):
            moves[b].append(int(actions[b]))
    prefixes = [m[: len(m) // 2] for m in moves]
    state = game.from_moves(prefixes)
    for sym in syms:
        obs = game.encode(state)
        assert sym.obs(obs).shape == obs.shape
        if not np.array_equal(sym.obs(start), start):
            continue  # the start is not fixed: the game's own tests cover this symmetry
        image = game.from_moves([[int(sym.action[a]) for a in m] for m in prefixes])
        np.testing.assert_array_equal(game.encode(image), sym.obs(obs), err_msg=sym.name)
        legal, legal_image = game.legal(state), game.legal(image)
        np.testing.assert_array_equal(legal_image[:, sym.action], legal, err_msg=sym.name)


def test_illegal_actions_raise_clear_errors(game):
    history = play_random(game, 4, seed=6)
    state, legal = history[len(history) // 2][:2]
    live = np.flatnonzero(legal.any(axis=1))
    state, legal = take(state, live), legal[live]
    b = len(live) - 1
    actions = random_legal_actions(legal, np.random.default_rng(0))
    if (~legal[b]).any():
        actions[b] = int(np.flatnonzero(~legal[b])[0])
        with pytest.raises(IllegalMoveError, match=rf"batch element {b}: action {actions[b]}\b"):
            game.step(state, actions)
    actions[b] = game.num_actions
    with pytest.raises(IllegalMoveError, match=rf"batch element {b}: action {game.num_actions} .*out of range"):
        game.step(state, actions)
    with pytest.raises(ValueError, match="shape"):
        game.step(state, actions[:-1] if len(actions) > 1 else np.zeros(2, np.int64))
    finished = history[-1][0]
    with pytest.raises(IllegalMoveError, match="over"):
        game.step(take(finished, [0]), np.array([0]))


def test_illegal_move_list_names_list_and_ply(game):
    history = play_random(game, 2, seed=8)
    played = []
    for ply, (state, legal, actions, _r, _d, live) in enumerate(history[:-1]):
        if not live[1]:
            break
        bad = np.flatnonzero(~legal[1])
        if len(bad):
            with pytest.raises(IllegalMoveError, match=rf"move list 1, ply {ply}: action {bad[0]}\b"):
                game.from_moves([[], played + [int(bad[0])]])
            return
        played.append(int(actions[1]))
    assert game.name == "fgame", f"{game.name}: no illegal action met along a random game"
    pytest.skip("F-Games: every action is legal in every live state, so no move list holds an illegal one")


def test_unknown_game_and_parameter():
    with pytest.raises(ValueError, match="known games: chomp, connect4, fgame, go, hex, othello, tictactoe"):
        games.make("chess")
    with pytest.raises(ValueError, match="no parameter 'colour'"):
        games.make("connect4", colour="red")
