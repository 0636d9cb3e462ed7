"""Exact labels built into evaluation: enumeration, F-Game values, Chomp Grundy tables."""

import numpy as np

import games
from evaluation.exact import enumerate_and_solve, exact_labels, sample_random_play_states, value_metrics
from evaluation.labels import chomp_values, label_states


def test_tictactoe_enumeration():
    game = games.make("tictactoe")
    labels = enumerate_and_solve(game)
    assert len(labels.v_star) == 4520  # 5,478 positions less the 958 finished ones
    assert labels.v_star[0] == 0.0  # the empty board is a draw
    # The value is the best action value, and some move reaches it.
    np.testing.assert_array_equal(labels.v_star, labels.q_star.max(axis=1))
    # X to move with two in a row and the third cell free: a win.
    state = game.from_moves([[0, 3, 1, 4]])
    i = [k for k in range(len(labels.v_star))
         if labels.states.mine[k] == state.mine[0] and labels.states.theirs[k] == state.theirs[0]]
    assert labels.v_star[i[0]] == 1.0


def test_chomp_grundy_labels_agree_with_enumeration():
    game = games.make("chomp", rows=4, cols=5)
    enumerated = enumerate_and_solve(game)
    from_table = label_states(game, enumerated.states, chomp_values(game))
    np.testing.assert_array_equal(from_table.v_star, enumerated.v_star)
    np.testing.assert_array_equal(from_table.q_star, enumerated.q_star)


def test_random_play_labels_and_metrics():
    for game in (games.make("fgame", depth=6, branching=3, beta=0.0, seed=4), games.make("chomp", rows=9, cols=10)):
        labels = exact_labels(game)
        # The small tree (no early leaves) has 364 inner nodes: the sampler returns them all.
        assert len(labels.v_star) == (4096 if game.name == "chomp" else 1 + 3 + 9 + 27 + 81 + 243)
        assert not game.terminal(labels.states).any()
        np.testing.assert_array_equal(labels.v_star, labels.q_star.max(axis=1))
        # The exact value function has no error and no regret.
        oracle = {k: v for k, v in zip(map(bytes, game.encode(labels.states)), labels.v_star)}

        def exact(obs):
            return np.array([oracle.get(bytes(o), 0.0) for o in obs], np.float32)

        exp = game.expand(labels.states)
        live = (exp.legal & ~exp.done).reshape(-1)
        children = games.take(exp.children, live)
        oracle.update(zip(map(bytes, game.encode(children)), labels_v(game, children)))
        metrics = value_metrics(game, labels, exact)
        assert metrics["value_mae"] == 0.0 and metrics["policy_regret"] == 0.0


def labels_v(game, states):
    return game.value(states) if game.name == "fgame" else chomp_values(game)(states)


def test_sampled_states_are_distinct():
    game = games.make("fgame", depth=10, branching=5)
    states = sample_random_play_states(game, count=500, seed=1)
    keys = {bytes(p) + bytes([n]) for p, n in zip(states.path.view(np.uint8), states.length)}
    assert len(keys) == 500
