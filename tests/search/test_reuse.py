"""Tree reuse between moves (search.reuse): the kept subtree is the next root with its
statistics; PUCT with reuse equals a fresh search given the reused simulations; Gumbel's
Sequential Halving shares out the new simulations as a fresh search does; the policies
of play reuse their trees through a whole suite."""

from __future__ import annotations

import numpy as np
import pytest

import games
from evaluation.play import play
from evaluation.policies import gumbel_policy, mcts_policy
from search import MCTS, MCTSConfig, UniformEvaluator
from search.gumbel import GumbelConfig, GumbelMCTS
from search.reuse import TreeReuse, state_keys

from tests.search.test_mcts import hashed_evaluator


def hashed_values(game):
    """Uniform priors and pseudo-random values of the states (a pure function of each
    state): with uniform priors the root's prior (computed outside the kernels) and a
    leaf's (inside) are the same float32, so a reused subtree and a fresh search can be
    compared visit for visit."""
    hashed = hashed_evaluator(game)
    return UniformEvaluator(game, lambda states: hashed(states)[1])


def after(game, state, *moves):
    for a in moves:
        state, _, _ = game.step(state, np.array([a], np.int64))
    return state


def reply_in_tree(tree, b, child):
    """The most visited expanded reply below ``child`` (a position the reuse kept)."""
    kids = tree.children[b, child]
    visits = np.where(kids >= 0, tree.visits[b, np.maximum(kids, 0)], -1)
    return int(visits.argmax())


class Recording(MCTS):
    """MCTS that hands back its last trees: the test reads the subtree it reuses."""

    def _planted(self, *args):
        self.last = super()._planted(*args)
        return self.last


@pytest.mark.parametrize("name", ["tictactoe", "connect4"])
def test_reused_root_has_the_child_s_visits_and_statistics(name):
    game = games.make(name)
    evaluate = hashed_evaluator(game)
    mcts = Recording(game, MCTSConfig(simulations=48, noise_fraction=0.0, temperature=0.0))
    reuse = TreeReuse()
    root = game.init(1)
    first = mcts.search(root, evaluate, np.random.default_rng(0), reuse=reuse)
    tree = mcts.last[0]
    a = int(first.action[0])
    child = int(tree.children[0, 0, a])
    reply = reply_in_tree(tree, 0, child)
    grandchild = int(tree.children[0, child, reply])
    before_visits = int(tree.visits[0, grandchild])
    kids = tree.children[0, grandchild]
    before_edges = np.where(kids >= 0, tree.visits[0, np.maximum(kids, 0)], 0)

    state = after(game, root, a, reply)
    found = reuse.find(state)
    assert found[0] is not None and found[0].nodes[0] == grandchild
    second = mcts.search(state, evaluate, np.random.default_rng(0), reuse=reuse)
    new_tree = mcts.last[0]
    # The planted tree (before its simulations) is the old subtree, renumbered.
    assert new_tree.count[0] - 48 == len(found[0].nodes)
    assert reuse.reused == 2 and reuse.reused_visits == 2 * before_visits  # found twice: the probe and the search
    assert second.visits[0].sum() == before_edges.sum() + 48  # the kept edges' visits, plus this search's
    assert second.evaluations <= 48  # its root was not evaluated again
    np.testing.assert_array_less(before_edges - 1, second.visits[0])  # no edge lost a visit


@pytest.mark.parametrize("name, first_sims, second_sims", [("tictactoe", 40, 16), ("connect4", 64, 32),
                                                            ("connect4", 100, 1)])
def test_puct_with_reuse_equals_a_fresh_search_given_the_reused_simulations(name, first_sims, second_sims):
    """PUCT's selection below the root depends on the subtree alone, so the subtree of a
    reply kept with V visits, searched ``n`` more times, is the fresh search of that
    position with V - 1 + n simulations (its root's evaluation is its first visit):
    the same root visits, edge for edge, and the same root value."""
    game = games.make(name)
    evaluate = hashed_values(game)
    rng = np.random.default_rng(1)
    noisy = MCTS(game, MCTSConfig(simulations=first_sims, temperature=0.0))  # the root's noise is no matter
    reuse = TreeReuse(history=100)  # every reply of the first search stays findable
    checked = 0
    for opening in ([], [0], [3, 4]):
        root = after(game, game.init(1), *opening)
        first = Recording(game, noisy.config)
        result = first.search(root, evaluate, rng, reuse=reuse)
        tree = first.last[0]
        child = int(tree.children[0, 0, int(result.action[0])])
        for reply in np.flatnonzero(tree.children[0, child] >= 0):
            node = int(tree.children[0, child, reply])
            if tree.terminal[0, node]:
                continue
            state = after(game, root, int(result.action[0]), int(reply))
            kept = int(tree.visits[0, node])
            config = MCTSConfig(simulations=second_sims, noise_fraction=0.0, temperature=0.0)
            reused = MCTS(game, config).search(state, evaluate, np.random.default_rng(7), reuse=reuse)
            fresh_config = MCTSConfig(simulations=kept - 1 + second_sims, noise_fraction=0.0, temperature=0.0)
            fresh = MCTS(game, fresh_config).search(state, evaluate, np.random.default_rng(7))
            np.testing.assert_array_equal(reused.visits, fresh.visits)
            np.testing.assert_allclose(reused.root_value, fresh.root_value, rtol=1e-6, atol=1e-7)
            assert reused.action[0] == fresh.action[0]  # the same draw among the most visited
            checked += 1
    assert checked >= 5


def test_gumbel_with_reuse_shares_out_its_new_simulations_by_sequential_halving():
    """With reuse, the visits a Gumbel search adds at its root follow its Sequential
    Halving schedule exactly as a fresh search's do (the same multiset of new visits), its
    root keeps the reused visits, and its improved policy is computed from all of them."""
    game = games.make("connect4")
    evaluate = hashed_evaluator(game)
    search = GumbelMCTS(game, MCTSConfig(simulations=32), GumbelConfig(max_considered=4, gumbel_scale=0.0))
    reuse = TreeReuse()
    rng = np.random.default_rng(0)
    state = game.init(1)
    reused = 0
    for ply in range(8):
        found = reuse.find(state)
        reuse.searches -= 1
        kept = np.zeros(game.num_actions, np.int64)
        if found[0] is not None:
            hit = found[0]
            kids = hit.tree.children[hit.b, hit.nodes[0]]
            kept = np.where(kids >= 0, hit.tree.visits[hit.b, np.maximum(kids, 0)], 0)
            reused += 1
        result = search.search(state, evaluate, rng, reuse=reuse)
        fresh = search.search(state, evaluate, rng)
        new = result.visits[0] - kept
        assert (new >= 0).all()
        assert sorted(new) == sorted(fresh.visits[0]), ply
        assert result.visits[0].sum() == kept.sum() + 32
        assert np.isclose(result.policy[0].sum(), 1.0)
        state = after(game, state, int(result.action[0]))
    assert reused >= 6  # the same policy plays both sides: its next root is its own move's child


@pytest.mark.parametrize("policy", [mcts_policy, gumbel_policy])
def test_policies_reuse_their_trees_through_a_lockstep_suite(policy):
    """Agent against agent from eight openings, the games batched in lockstep and the
    agent asked about a different subset of games at every ply: with reuse most PUCT
    searches after each game's first start from a kept subtree (Gumbel's, whose
    simulations go to a few root moves, fewer: the opponent's reply is less often in the
    tree); without, none; and the moves of a reusing policy are legal to the end
    (``play`` checks each)."""
    game = games.make("connect4")
    evaluate = hashed_evaluator(game)
    openings = games.concat([game.from_moves([[i % 7, (3 * i) % 7]]) for i in range(8)])
    first = np.arange(8) % 2
    a = policy(game, evaluate, simulations=24, reuse=True)
    b = policy(game, evaluate, simulations=24, reuse=False)
    result = play(game, openings, (a, b), first)
    assert b.reuse is None
    searches, hits = a.reuse.searches, a.reuse.reused
    assert hits >= (0.7 if policy is mcts_policy else 0.25) * (searches - 8), (hits, searches)
    assert a.reuse.reused_visits > hits  # reused roots bring visits, not just a node
    assert len(result.outcome) == 8


def test_reuse_keeps_a_bounded_history_of_searches():
    game = games.make("tictactoe")
    evaluate = hashed_evaluator(game)
    mcts = MCTS(game, MCTSConfig(simulations=16, noise_fraction=0.0, temperature=0.0))
    reuse = TreeReuse(history=2)
    children = []
    for i in range(4):
        start = game.from_moves([[i]])
        action = mcts.search(start, evaluate, np.random.default_rng(i), reuse=reuse).action
        children.append(after(game, start, int(action[0])))
    assert len(reuse._kept) == 2
    found = reuse.find(games.concat(children))
    assert [f is not None for f in found] == [False, False, True, True]  # the first two forgotten
    assert [len(k) for k in state_keys(games.concat(children))] == [len(state_keys(children[0])[0])] * 4
    assert all(f is None for f in reuse.find(game.init(3)))  # the empty board was never kept
    reuse.clear()
    assert all(f is None for f in reuse.find(games.concat(children)))
    with pytest.raises(ValueError, match="history must be >= 1"):
        TreeReuse(history=0)
