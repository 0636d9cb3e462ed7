"""Gumbel AlphaZero's search pieces (search/gumbel.py, issue 40) against mctx, the paper's
own implementation: answers computed by mctx 0.0.71 on seeded random inputs and committed
in data/gumbel_mctx.npz (tests/search/gumbel_reference.py computes them again)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from search.gumbel import (
    GumbelConfig,
    completed_q,
    considered_visit_table,
    considered_visits,
    improved_policy,
    interior_choice,
    masked_logits,
    root_scores,
)

DATA = np.load(Path(__file__).with_name("data") / "gumbel_mctx.npz")


def test_sequential_halving_schedule_is_mctx_s():
    names = [k for k in DATA.files if k.startswith("schedule/")]
    assert len(names) == 160
    for name in names:
        m, n = (int(part[1:]) for part in name.split("/")[1].split("_"))
        assert considered_visits(m, n) == tuple(DATA[name]), name
    table = considered_visit_table(4, 8)
    assert table.shape == (5, 8) and tuple(table[4]) == considered_visits(4, 8)
    # 16 actions, 64 simulations: each of 16 gets visits before the first halving.
    assert considered_visits(16, 64)[:16] == (0,) * 16


def edges():
    """The reference node's edges, Q(s, a) = reward - value(child) as our search keeps them
    (mctx: reward + discount * value with discount -1)."""
    return DATA["q/rewards"] - DATA["q/values"], DATA["q/visits"], ~DATA["q/invalid"]


def test_completed_q_values_are_mctx_s():
    q, visits, legal = edges()
    prior = np.where(legal, np.exp(DATA["q/logits"]), 0.0)
    prior = prior / prior.sum(1, keepdims=True)
    got = completed_q(q, visits, prior, DATA["q/raw_value"], GumbelConfig())
    np.testing.assert_allclose(got, DATA["q/completed"], rtol=2e-5, atol=2e-5)
    # The transform's scale: (c_visit + max N) c_scale, over Q-values rescaled to [0, 1]
    # (a node whose completed values are all equal, e.g. unvisited, maps them all to 0).
    scale = (50 + visits.max(1)) * 0.1
    varied = visits.max(1) > 0
    assert varied.sum() > 50 and np.allclose(got.min(1), 0, atol=1e-6)
    assert np.allclose(got.max(1)[varied], scale[varied], rtol=1e-5)


def test_root_scores_and_the_final_choice_are_mctx_s():
    q, visits, legal = edges()
    logits = DATA["q/logits"].astype(np.float64)
    completed = DATA["q/completed"].astype(np.float64)
    gumbel = DATA["q/gumbel"].astype(np.float64)
    for v, expected in enumerate(DATA["q/root_scores"]):
        got = root_scores(gumbel, logits, completed, visits, np.full(len(q), v), legal)
        allowed = np.isfinite(expected)
        # mctx leaves invalid actions with the right count competing (masked later by its
        # argmax); ours masks them here: compare where both are legal candidates.
        both = allowed & legal
        np.testing.assert_array_equal(np.isfinite(got), both)
        np.testing.assert_allclose(got[both], expected[both], rtol=1e-5, atol=1e-5)
    most = visits.max(1)
    action = root_scores(gumbel, logits, completed, visits, most, legal).argmax(1)
    np.testing.assert_array_equal(action, DATA["policy/action"])
    weights = improved_policy(logits, completed, legal)
    np.testing.assert_allclose(weights, DATA["policy/weights"], rtol=1e-5, atol=1e-6)
    assert np.all(weights[~legal] == 0)


def test_interior_selection_is_mctx_s():
    q, visits, legal = edges()
    prior = np.where(legal, np.exp(DATA["q/logits"].astype(np.float64)), 0.0)
    prior = prior / prior.sum(1, keepdims=True)
    completed = DATA["q/completed"].astype(np.float64)
    got = [interior_choice(prior[b], completed[b], visits[b], legal[b]) for b in range(len(q))]
    np.testing.assert_array_equal(got, DATA["q/interior_action"])
    assert len(set(got)) > 3  # the cases exercise several actions


def test_masked_logits():
    prior = np.array([[0.5, 0.25, 0.25, 0.0]])
    legal = np.array([[True, True, True, False]])
    got = masked_logits(prior, legal)
    assert got[0, 0] == 0 and got[0, 3] == -np.inf
    np.testing.assert_allclose(got[0, 1], np.log(0.5))


def test_config_is_checked():
    with pytest.raises(ValueError, match="max_considered must be >= 1"):
        GumbelConfig(max_considered=0)
    with pytest.raises(ValueError, match="value_scale must be a finite number"):
        GumbelConfig(value_scale=float("nan"))


# ---------------------------------------------------------------- the whole search

def prior_policy_values(game, labels, logits_of):
    """v_pi and q_pi of every labelled state (tic-tac-toe, small Chomp: all of them) for the
    policy pi = softmax(logits_of(state)) over the legal moves, by backward induction
    (as negamax, with pi's average for the max)."""
    import games as games_mod
    from games import one_step_q, state_keys

    value_of: dict[bytes, float] = {}
    q_of = {}
    keys = state_keys(labels.states)
    for i in range(len(keys) - 1, -1, -1):  # the labels come level by level: deepest first
        state = games_mod.take(labels.states, np.array([i]))
        exp = game.expand(state)
        child_v = np.array([value_of.get(k, 0.0) for k in state_keys(exp.children)], np.float64).reshape(1, -1)
        q = one_step_q(exp, child_v, 1.0)[0]  # [A], -inf or masked where illegal
        pi = softmax_legal(logits_of(keys[i]), exp.legal[0])
        q_of[keys[i]] = np.where(exp.legal[0], q, 0.0)
        value_of[keys[i]] = float((pi * q_of[keys[i]]).sum())
    return value_of, q_of


def softmax_legal(logits, legal):
    z = np.where(legal, logits, -np.inf)
    e = np.exp(z - z.max())
    return e / e.sum()


@pytest.mark.parametrize("name,params", [("tictactoe", {}), ("chomp", {"rows": 4, "cols": 5})])
def test_the_improved_policy_is_never_worse_than_the_prior(name, params):
    """The paper's guarantee: with the action values of the visited root actions exact for
    the prior policy pi, and the others completed by v_pi (``mixed_value=False``), the
    improved policy's expected value is at least pi's. An evaluator answering pi's exact
    v_pi makes the search's Q-values exact whenever each simulation visits a new root
    action (at most as many simulations as considered actions); checked on every position."""
    import games
    from evaluation.exact import exact_labels
    from games import state_keys
    from search.gumbel import GumbelMCTS
    from search.mcts import MCTSConfig

    game = games.make(name, **params)
    labels = exact_labels(game)

    def logits_of(key: bytes) -> np.ndarray:  # a fixed prior per position
        return np.random.default_rng(list(key)).normal(0, 1.5, game.num_actions)

    value_of, q_of = prior_policy_values(game, labels, logits_of)

    def evaluate(states):
        keys = state_keys(states)
        return (np.array([logits_of(k) for k in keys], np.float32), np.array([value_of[k] for k in keys], np.float32))

    keys = state_keys(labels.states)
    legal = game.legal(labels.states)
    q = np.array([q_of[k] for k in keys])
    prior = np.array([softmax_legal(logits_of(k), lg) for k, lg in zip(keys, legal)])
    for simulations, considered in [(2, 2), (2, 16), (4, 4), (4, 16)]:
        search = GumbelMCTS(game, MCTSConfig(simulations=simulations),
                            GumbelConfig(max_considered=considered, mixed_value=False))
        result = search.search(labels.states, evaluate, np.random.default_rng(simulations))
        gain = (result.policy * q).sum(1) - (prior * q).sum(1)
        # Where a position has fewer legal moves than simulations, some action is visited
        # twice and its Q-value mixes in a deeper one: no longer exact, no guarantee.
        exact = legal.sum(1) >= simulations
        assert exact.sum() > 500
        assert gain[exact].min() > -1e-5, (simulations, considered, gain[exact].min())
        assert gain[exact].mean() > 0.01  # and it improves
        assert legal[np.arange(len(keys)), result.action].all()
