"""F-Game oracle against an exhaustive negamax over the engine's own moves and rewards."""

from __future__ import annotations

import numpy as np
import pytest

import games
from oracle_service.fgame_oracle import FGamePathOracle


def negamax_tree(game):
    """{path: negamax value} for every inner node, searched through `step` only: the
    value of a node is the max over actions of the reward on entering a leaf, or minus
    the child's value. Stored node values are never read."""
    out = {}

    def search(path):
        state = game.from_moves([path])
        best = -2
        for a in range(game.num_actions):
            _, reward, done = game.step(state, np.array([a]))
            v = float(reward[0]) if done[0] else -search(path + [a])
            best = max(best, v)
        out[tuple(path)] = best
        return best

    search([])
    return out


@pytest.mark.parametrize("seed,beta", [(0, 0.0), (1, 0.3), (1, 0.5)])
def test_values_and_optimal_actions_equal_exhaustive_negamax(seed, beta):
    oracle = FGamePathOracle(depth=5, branching=3, beta=beta, seed=seed)
    game = games.make("fgame", depth=5, branching=3, beta=beta, seed=seed)
    tree = negamax_tree(game)
    assert tree[()] == 1  # the root is a first-player win by construction
    paths = [list(p) for p in tree]
    values = oracle.values(paths)
    assert values.tolist() == [tree[tuple(p)] for p in paths]
    best = oracle.optimal_actions_batch(paths)  # [N, A]
    child = oracle.child_values_batch(paths)  # [N, A]
    for i, p in enumerate(paths):
        # Each child's value, for the player to move there, equals the search: the
        # leaf's value is minus the reward for entering it.
        for a in range(3):
            state = game.from_moves([p])
            _, reward, done = game.step(state, np.array([a]))
            expect = -reward[0] if done[0] else tree[tuple(p) + (a,)]
            assert child[i, a] == expect
        expect_best = [a for a in range(3) if -child[i, a] == tree[tuple(p)]]
        assert np.flatnonzero(best[i]).tolist() == expect_best != []
        assert oracle.value(p) == values[i]
        assert oracle.optimal_actions(p) == expect_best
        assert oracle.child_values(p) == child[i].tolist()
    assert len(paths) > 20  # the tree is not trivially small


def test_leaves_have_a_value_and_no_optimal_action():
    oracle = FGamePathOracle(depth=3, branching=2, beta=0.0, seed=3)
    leaf = [0, 1, 1]
    assert oracle.over([leaf]).tolist() == [True]
    assert oracle.value(leaf) in (-1, 0, 1)
    assert oracle.optimal_actions(leaf) == []


@pytest.mark.parametrize("path,problem", [([0, 5], "out of range"), ([0, 0, 0, 0], "over")])
def test_bad_paths_raise(path, problem):
    oracle = FGamePathOracle(depth=3, branching=2, beta=0.0, seed=3)
    with pytest.raises(ValueError, match=problem):
        oracle.value(path)
