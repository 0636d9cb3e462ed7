"""Batched full-width negamax against a slow recursive one written here, and against the
exact values of tic-tac-toe."""

from __future__ import annotations

import numpy as np
import pytest

import games
from evaluation.exact import enumerate_and_solve
from games.testing import random_move_lists
from search import minimax, minimax_actions

TTT = games.make("tictactoe")
C4 = games.make("connect4")


def random_value_fn(game, seed=0):
    """A fixed random function of the encoding into (-1, 1)."""
    w = np.random.default_rng(seed).normal(size=int(np.prod(game.obs_shape))).astype(np.float32)
    calls = []

    def value_fn(obs):
        calls.append(len(obs))
        return np.tanh(obs.reshape(len(obs), -1) @ w).astype(np.float32)

    value_fn.calls = calls
    return value_fn


def slow_negamax(game, state, value_fn, depth, gamma):
    """(q list, value) of the one-element ``state`` by plain recursion, one state at a time."""
    legal = game.legal(state)[0]
    q = [-np.inf] * game.num_actions
    for a in np.flatnonzero(legal):
        child, reward, done = game.step(state, np.array([a]))
        if done[0]:
            q[a] = float(reward[0])
        elif depth == 1:
            q[a] = float(reward[0]) - gamma * float(value_fn(game.encode(child))[0])
        else:
            q[a] = float(reward[0]) - gamma * slow_negamax(game, child, value_fn, depth - 1, gamma)[1]
    return q, max(q)


def random_positions(game, count, max_plies, seed):
    return game.from_moves(random_move_lists(game, count, np.random.default_rng(seed), max_plies))


@pytest.mark.parametrize("game, count, max_plies", [(TTT, 12, 6), (C4, 6, 30)], ids=["tictactoe", "connect4"])
@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_minimax_equals_slow_recursive_negamax(game, count, max_plies, depth, gamma):
    states = random_positions(game, count, max_plies, seed=depth)
    value_fn = random_value_fn(game, seed=depth)
    q, value = minimax(game, states, value_fn, depth, gamma)
    assert q.dtype == np.float32 and q.shape == (count, game.num_actions) and value.shape == (count,)
    assert len(value_fn.calls) == 1  # one value call for all the leaves of all the roots
    for i in range(count):
        q_slow, v_slow = slow_negamax(game, games.take(states, [i]), value_fn, depth, gamma)
        np.testing.assert_allclose(q[i], np.array(q_slow, np.float32), rtol=1e-5, atol=1e-5)
        assert value[i] == pytest.approx(v_slow, abs=1e-5)


@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_depth_one_over_exact_values_gives_exact_q_and_optimal_moves(gamma):
    labels = enumerate_and_solve(TTT, gamma=gamma)
    obs = TTT.encode(labels.states)
    table = {row.tobytes(): v for row, v in zip(obs, labels.v_star)}

    def exact_value(o):
        return np.array([table[row.tobytes()] for row in o], np.float32)

    q, value = minimax(TTT, labels.states, exact_value, 1, gamma)
    np.testing.assert_allclose(q, labels.q_star, atol=1e-6)
    np.testing.assert_allclose(value, labels.v_star, atol=1e-6)
    actions = minimax_actions(TTT, labels.states, exact_value, 1, np.random.default_rng(0), gamma)
    assert actions.dtype == np.int64
    chosen = labels.q_star[np.arange(len(actions)), actions]
    np.testing.assert_allclose(chosen, labels.v_star, atol=1e-6)


def test_minimax_actions_break_ties_at_random():
    def zero(obs):
        return np.zeros(len(obs), np.float32)

    states = TTT.from_moves([[4]] * 400)  # 8 open cells, all worth 0 at depth 1
    actions = minimax_actions(TTT, states, zero, 1, np.random.default_rng(0))
    assert set(actions.tolist()) == {0, 1, 2, 3, 5, 6, 7, 8}


def test_minimax_errors():
    states = TTT.from_moves([[4], [0, 3, 1, 4, 2]])  # element 1 is over
    value_fn = random_value_fn(TTT)
    with pytest.raises(ValueError, match="depth"):
        minimax(TTT, TTT.init(1), value_fn, 0)
    with pytest.raises(ValueError, match="root state 1"):
        minimax(TTT, states, value_fn, 1)
    with pytest.raises(ValueError, match="value_fn returned shape"):
        minimax(TTT, TTT.init(2), lambda obs: np.zeros((len(obs), 1), np.float32), 1)
