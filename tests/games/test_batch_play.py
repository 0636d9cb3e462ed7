"""The helpers over a batch of games in ``games``: stepping only the live games,
uniformly random play, the one-step lookahead and row keys."""

from __future__ import annotations

import numpy as np
import pytest

import games
from games import IllegalMoveError, one_step_q, random_legal_actions, random_play, state_keys, step_live, take
from games.testing import assert_states_equal

TTT = games.make("tictactoe")
WON = [0, 3, 1, 4, 2]  # X completes the top row: the game is over
OPEN = [4, 0]


def test_step_live_moves_only_the_live_games():
    state = TTT.from_moves([WON, OPEN, [], WON])
    actions = np.array([5, 8, 4, 7])  # the moves of finished games are ignored, even illegal ones
    nxt, reward, done = step_live(TTT, state, actions)
    for b in (0, 3):
        assert_states_equal(take(nxt, [b]), take(state, [b]), f"finished game {b}")
    for b in (1, 2):
        one, r, d = TTT.step(take(state, [b]), actions[[b]])
        assert_states_equal(take(nxt, [b]), one, f"live game {b}")
        assert (reward[b], done[b]) == (r[0], d[0])
    assert reward.dtype == np.float32 and reward[[0, 3]].tolist() == [0.0, 0.0]
    assert done.tolist() == [False, False, False, False]


def test_step_live_reports_reward_and_done_per_game():
    state = TTT.from_moves([[0, 3, 1, 4], OPEN])
    nxt, reward, done = step_live(TTT, state, np.array([2, 1]))
    assert reward.tolist() == [1.0, 0.0] and done.tolist() == [True, False]
    assert TTT.terminal(nxt).tolist() == [True, False]


def test_step_live_takes_a_mask_and_checks_the_moves_it_plays():
    state = TTT.from_moves([OPEN, OPEN])
    nxt, _, _ = step_live(TTT, state, np.array([1, 1]), live=np.array([False, True]))
    assert nxt.moves.tolist() == [2, 3]
    with pytest.raises(IllegalMoveError, match="action 4"):
        step_live(TTT, state, np.array([1, 4]))  # cell 4 is taken in game 1
    nothing, reward, done = step_live(TTT, TTT.from_moves([WON]), np.array([0]))
    assert nothing.moves.tolist() == [5] and not reward.any() and not done.any()


@pytest.mark.parametrize("name,params", [("tictactoe", {}), ("connect4", {}), ("othello", {}),
                                         ("chomp", {"rows": 3, "cols": 4})])
def test_random_play_is_the_plain_loop_of_random_legal_moves(name, params):
    """The same games, draw for draw, as stepping the live games by hand, ending with
    every game over."""
    game = games.make(name, **params)
    plies = list(random_play(game, game.init(16), np.random.default_rng(3)))
    rng, state = np.random.default_rng(3), game.init(16)
    for ply in plies[:-1]:
        assert_states_equal(ply.state, state, name)
        live = ~game.terminal(state)
        np.testing.assert_array_equal(ply.moving, live)
        actions = random_legal_actions(game.legal(state), rng)
        np.testing.assert_array_equal(ply.actions[live], actions[live])
        assert game.legal(state)[live, actions[live]].all()
        nxt, _, _ = game.step(take(state, live), actions[live])
        state = games.put(state, live, nxt)
    assert_states_equal(plies[-1].state, state, name)
    assert game.terminal(plies[-1].state).all() and not plies[-1].moving.any()
    assert len(plies) - 1 <= game.max_length


def test_random_play_stops_after_the_plies_asked_for():
    plies = list(random_play(TTT, TTT.init(5), np.random.default_rng(0), plies=3))
    assert len(plies) == 4  # three plies, then the state after them
    assert plies[-1].state.moves.tolist() == [3] * 5 and not plies[-1].moving.any()
    again = list(random_play(TTT, TTT.init(5), np.random.default_rng(0), plies=3))
    assert_states_equal(again[-1].state, plies[-1].state, "same seed")


def test_one_step_q_reads_child_values_only_where_the_game_goes_on():
    state = TTT.from_moves([[0, 3, 1, 4]])  # X to move; 2 wins, cells 0, 1, 3, 4 are taken
    exp = TTT.expand(state)
    child_v = np.full((1, 9), 0.5, np.float32)
    q = one_step_q(exp, child_v, gamma=0.9)
    assert q[0, 2] == 1.0  # the win: reward 1, no value past the end
    assert np.isneginf(q[0, [0, 1, 3, 4]]).all()
    np.testing.assert_allclose(q[0, [5, 6, 7, 8]], -0.45)
    np.testing.assert_array_equal(one_step_q(exp, child_v.reshape(-1), 0.9), q)


def test_state_keys_are_equal_exactly_for_equal_states():
    state = TTT.from_moves([OPEN, [4, 0], [0, 4], []])
    keys = state_keys(state)
    assert keys[0] == keys[1] and len({keys[0], keys[2], keys[3]}) == 3
    assert state_keys(take(state, np.zeros(0, np.int64))) == []
