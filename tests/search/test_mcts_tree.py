"""The search's tree record and its selection rules (``search.mcts``): the kernels on a
tree small enough to follow by hand, the results pinned from before the tree became one
record, and rules passed as parameters (at the root, below it, and one that reads the
depth) changing the walk as they should."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

import games
from games.testing import random_move_lists
from search import MCTS, MCTSConfig, UniformEvaluator
from search.mcts import (
    Leaves,
    Tree,
    _backup_select_puct,
    _expand_and_backup,
    _select_puct,
    new_tree,
    no_leaves,
    puct,
    puct_params,
    walk_kernels,
)

TTT = games.make("tictactoe")
C4 = games.make("connect4")


@njit
def lowest_legal(tree, params, b, node, depth):
    """A rule that always takes the lowest legal action."""
    for a in range(tree.legal.shape[2]):
        if tree.legal[b, node, a]:
            return a
    return -1


@njit
def lowest_then_highest(tree, params, b, node, depth):
    """The lowest legal action at even depths, the highest at odd ones."""
    A = tree.legal.shape[2]
    for i in range(A):
        a = i if depth % 2 == 0 else A - 1 - i
        if tree.legal[b, node, a]:
            return a
    return -1


def test_new_tree_has_the_documented_shapes_and_an_unvisited_root():
    tree = new_tree(3, 5, 4)
    shapes = {"children": (3, 5, 4), "prior": (3, 5, 4), "legal": (3, 5, 4), "visits": (3, 5),
              "value_sum": (3, 5), "raw_value": (3, 5), "reward": (3, 5), "terminal": (3, 5), "parent_of": (3, 5), "count": (3,),
              "walk_parent": (3,), "walk_action": (3,), "walk_leaf": (3,)}
    assert set(Tree._fields) == set(shapes)
    for name, shape in shapes.items():
        field = getattr(tree, name)
        assert field.shape == shape and field.flags.c_contiguous, name
    assert (tree.children == -1).all() and (tree.parent_of == -1).all() and (tree.count == 1).all()
    assert not tree.visits.any() and not tree.legal.any()


def test_kernels_on_a_tree_followed_by_hand():
    # One tree, two actions, root prior (0.25, 0.75), root evaluated at 0 (one visit).
    tree = new_tree(1, 4, 2)
    tree.legal[0, 0], tree.prior[0, 0], tree.visits[0, 0] = True, (0.25, 0.75), 1
    params = puct_params(MCTSConfig(c_puct=3.0))
    # Simulation 1: both unvisited, the higher prior wins: edge (0, 1), no leaf yet.
    src, dst, action = _select_puct(tree, params)
    assert (tree.walk_parent[0], tree.walk_action[0], tree.walk_leaf[0]) == (0, 1, -1)
    assert src.tolist() == [0] and dst.tolist() == [1] and action.tolist() == [1]
    # The new node: prior softmax(0, log 3) = (0.25, 0.75), value 0.5 for its mover. Then
    # simulation 2 walks: N(root) = 2; action 0: 3 * sqrt(2) * 0.25 = 1.061, action 1:
    # (0 - 0.5) + 3 * sqrt(2) * 0.75 / 2 = 1.091, so down to node 1, whose unvisited
    # edges give its action 1.
    new = Leaves(np.array([[True, True]]), np.zeros(1, np.float32), np.zeros(1, bool),
                 np.array([[0.0, math.log(3.0)]], np.float32), np.array([0.5], np.float32))
    src, dst, action = _backup_select_puct(tree, new, params)
    assert tree.count[0] == 2 and tree.children[0, 0].tolist() == [-1, 1] and tree.parent_of[0, 1] == 0
    np.testing.assert_allclose(tree.prior[0, 1], [0.25, 0.75], rtol=1e-6)
    assert tree.visits[0, :2].tolist() == [2, 1] and tree.value_sum[0, :2].tolist() == [-0.5, 0.5]
    assert tree.raw_value[0, 1] == 0.5  # the evaluator's value of the new node, kept
    assert (tree.walk_parent[0], tree.walk_action[0], tree.walk_leaf[0]) == (1, 1, -1)
    assert src.tolist() == [1] and dst.tolist() == [2] and action.tolist() == [1]
    # The new node ends the game, won by the player who moved into it (node 1's mover):
    # worth 0 there, so node 1 gets reward(2) - 0 = +1 and the root reward(1) - 1 = -1.
    over = Leaves(np.zeros((1, 2), bool), np.ones(1, np.float32), np.ones(1, bool), np.zeros((0, 2), np.float32),
                  np.zeros(0, np.float32))
    _expand_and_backup(tree, over)
    assert tree.terminal[0, 2] and not tree.legal[0, 2].any() and tree.reward[0, 2] == 1
    assert tree.visits[0, :3].tolist() == [3, 2, 1]
    assert tree.value_sum[0, :3].tolist() == [-1.5, 1.5, 0.0]
    assert tree.raw_value[0, 1:3].tolist() == [0.5, 0.0]  # a terminal node has no evaluation
    # Simulation 4: action 0: 3 * sqrt(3) * 0.25 = 1.299, action 1: -0.75 + 1.299 * 1
    # = 0.549; the root's action 0, unexpanded.
    src, dst, action = _select_puct(tree, params)
    assert (tree.walk_parent[0], tree.walk_action[0], tree.walk_leaf[0]) == (0, 0, -1)


def test_a_walk_that_ends_on_a_terminal_node_adds_nothing():
    tree = new_tree(1, 3, 1)
    tree.legal[0, 0], tree.prior[0, 0], tree.visits[0, 0] = True, 1.0, 1
    tree.children[0, 0, 0], tree.parent_of[0, 1], tree.count[0] = 1, 0, 2
    tree.terminal[0, 1], tree.reward[0, 1], tree.visits[0, 1] = True, -1.0, 1
    src, dst, action = _select_puct(tree, puct_params(MCTSConfig()))
    assert tree.walk_leaf[0] == 1 and src.size == dst.size == action.size == 0
    _expand_and_backup(tree, no_leaves(1))
    assert tree.count[0] == 2 and tree.visits[0, :2].tolist() == [2, 2]
    assert tree.value_sum[0, 0] == -1.0  # the terminal child's exact reward


def hashed_evaluator(game):
    """Logits and values of each state in integer arithmetic (exact in any batch): the
    evaluator the pinned results below were computed with."""
    def evaluate(states):
        obs = game.encode(states).reshape(len(states[0]), -1).astype(np.int64)
        w = (np.arange(obs.shape[1] * game.num_actions).reshape(obs.shape[1], game.num_actions) * 7919) % 13
        logits = ((obs @ w) % 11).astype(np.float32) / 4
        values = (((obs * np.arange(1, obs.shape[1] + 1)).sum(axis=1) * 37) % 17 - 8).astype(np.float32) / 8
        return logits, values
    return evaluate


# Root visits and 264 x root values (values are eighths, averaged over 33 visits) of 32
# simulations without noise, from the search as it was before the tree became one record.
PINNED = {
    ("connect4", 0.0): ([[7, 7, 8, 4, 1, 4, 1], [1, 6, 5, 0, 1, 9, 10], [2, 1, 2, 2, 11, 13, 1],
                         [3, 4, 1, 22, 1, 0, 1], [7, 13, 3, 3, 1, 4, 1], [0, 1, 1, 14, 6, 8, 2]],
                        [12, 10, -25, 163, -34, 29], 175),
    ("connect4", 19652.0): ([[8, 12, 5, 4, 1, 1, 1], [0, 8, 4, 0, 1, 12, 7], [2, 1, 3, 5, 7, 13, 1],
                             [2, 3, 0, 27, 0, 0, 0], [1, 18, 3, 3, 1, 5, 1], [0, 1, 1, 14, 6, 8, 2]],
                            [35, 18, -36, 222, -64, 28], 169),
    ("tictactoe", 0.0): ([[0, 5, 0, 2, 0, 0, 6, 0, 19], [1, 1, 7, 6, 0, 11, 1, 1, 4], [0, 1, 11, 4, 2, 2, 0, 3, 9],
                          [5, 8, 1, 0, 2, 4, 2, 10, 0], [2, 0, 25, 0, 1, 0, 4, 0, 0], [3, 3, 0, 6, 1, 0, 0, 4, 15]],
                         [-152, -27, 33, -20, 183, -39], 136),
    ("tictactoe", 19652.0): ([[0, 6, 0, 3, 0, 0, 6, 0, 17], [1, 1, 9, 6, 0, 5, 1, 1, 8],
                              [0, 1, 12, 4, 1, 1, 0, 4, 9], [5, 3, 1, 0, 3, 6, 2, 11, 1],
                              [0, 0, 30, 0, 0, 0, 2, 0, 0], [14, 3, 0, 2, 1, 0, 0, 4, 8]],
                             [-184, -52, 28, -50, 245, -41], 129),
}


@pytest.mark.parametrize("name, c_base", sorted(PINNED))
def test_results_are_those_pinned_before_the_tree_record(name, c_base):
    game = games.make(name)
    roots = game.from_moves(random_move_lists(game, 6, np.random.default_rng(3), max_plies=14 if name == "connect4"
                                              else 5, min_plies=1))
    config = MCTSConfig(simulations=32, noise_fraction=0.0, c_base=c_base, c_init=1.25)
    r = MCTS(game, config).search(roots, hashed_evaluator(game), np.random.default_rng(0))
    visits, values, evaluations = PINNED[name, c_base]
    np.testing.assert_array_equal(r.visits, visits)
    np.testing.assert_allclose(r.root_value * 264, values, atol=1e-4)
    assert r.evaluations == evaluations


# ------------------------------------------------------------- rules as parameters


def chain_search(root_rule, interior_rule, simulations):
    return MCTS(TTT, MCTSConfig(simulations=simulations, noise_fraction=0.0), root_rule=root_rule,
                interior_rule=interior_rule).search(TTT.init(1), UniformEvaluator(TTT), np.random.default_rng(0))


def test_a_rule_taking_the_lowest_legal_action_walks_one_line_to_a_win():
    # Cells 0, 1, 2, ... in turn: X's 0, 2, 4, 6 make the diagonal 2-4-6 at the 7th move,
    # so simulations 1-7 build that line (the 7th leaf ends the game) and 8-10 walk it
    # again to the won position. Evaluations: the root and the 6 leaves before the end;
    # the root's mover gets +1 from each of the 4 walks to the win, 0 otherwise.
    r = chain_search(lowest_legal, lowest_legal, 10)
    assert r.visits[0].tolist() == [10, 0, 0, 0, 0, 0, 0, 0, 0]
    assert r.evaluations == 7
    assert r.root_value[0] == pytest.approx(4 / 11)
    # PUCT spreads the same simulations over the root's moves
    assert chain_search(None, None, 10).visits[0].tolist() == [2, 1, 1, 1, 1, 1, 1, 1, 1]


@pytest.mark.slow
def test_the_root_rule_and_the_interior_rule_are_separate_parameters():
    # Lowest action at the root only: every walk goes through cell 0, and PUCT below it
    # spreads over the replies (each a new live leaf: 1 + 10 evaluations).
    r = chain_search(lowest_legal, None, 10)
    assert r.visits[0].tolist() == [10, 0, 0, 0, 0, 0, 0, 0, 0] and r.evaluations == 11
    # PUCT at the root, lowest below: the root's 9 moves once each, then the 10th walk
    # goes on below cell 0 by the lowest reply.
    r = chain_search(None, lowest_legal, 10)
    assert r.visits[0].tolist() == [2, 1, 1, 1, 1, 1, 1, 1, 1] and r.evaluations == 11


def test_a_rule_is_given_the_depth_of_its_node():
    # Depths 0, 2, 4 (X) take cells 0, 1, 2 and win at the 5th move; depths 1, 3 (O)
    # take 8 and 7. Simulations 1-5 build the line, 6-8 walk it again to the win.
    r = chain_search(lowest_then_highest, lowest_then_highest, 8)
    assert r.visits[0].tolist() == [8, 0, 0, 0, 0, 0, 0, 0, 0]
    assert r.evaluations == 5 and r.root_value[0] == pytest.approx(4 / 9)


@pytest.mark.slow
def test_puct_passed_as_a_new_function_compiles_its_own_walk_with_the_same_results():
    copy = njit(puct.py_func)  # another function: the walk is compiled for it in this process
    select, backup_select = walk_kernels(copy, copy)
    assert select is not _select_puct and backup_select is not _backup_select_puct
    assert walk_kernels(puct, puct) == (_select_puct, _backup_select_puct)
    roots = C4.from_moves(random_move_lists(C4, 8, np.random.default_rng(1), max_plies=10))
    config = MCTSConfig(simulations=24, c_base=19652.0)
    a = MCTS(C4, config).search(roots, hashed_evaluator(C4), np.random.default_rng(5))
    b = MCTS(C4, config, root_rule=copy, interior_rule=copy).search(roots, hashed_evaluator(C4),
                                                                    np.random.default_rng(5))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_a_rule_that_is_not_jitted_is_refused():
    with pytest.raises(TypeError, match="root_rule must be a numba.njit function"):
        MCTS(TTT, MCTSConfig(), root_rule=lowest_legal.py_func)
