"""Batched PUCT search: optimal moves over exact values (tic-tac-toe enumerated, Connect
Four endgames from the strong solver), the centre from the empty board by rollouts,
batched == single searches under per-tree generators, exact terminal values,
temperature and noise semantics, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import games
from evaluation.exact import enumerate_and_solve
from oracle_service.connect4_solver import Connect4Solver, score_to_value
from search import MCTS, MCTSConfig, RolloutEvaluator, UniformEvaluator

TTT = games.make("tictactoe")
C4 = games.make("connect4")


@pytest.fixture(scope="module")
def ttt_exact():
    """(labelled states, v*(states) as a lookup over the 9-bit boards)."""
    labels = enumerate_and_solve(TTT)
    table = np.full(512 * 512, np.nan, np.float32)  # [mine * 512 + theirs]
    table[labels.states.mine * 512 + labels.states.theirs] = labels.v_star

    def value_of(states):
        v = table[states.mine * 512 + states.theirs]
        assert not np.isnan(v).any(), "a state outside the enumeration"
        return v

    return labels, value_of


def hashed_evaluator(game):
    """A deterministic evaluator whose logits and value are pseudo-random functions of
    each state's bytes: the same row gets the same answer in any batch."""
    def evaluate(states):
        n = len(states[0])
        rows = np.concatenate([np.ascontiguousarray(f).reshape(n, -1).view(np.uint8) for f in states], axis=1)
        h = np.zeros(n, np.uint64)
        for col in rows.T.astype(np.uint64):
            h = (h ^ col) * np.uint64(0x100000001B3)  # FNV-1a
        mix = lambda x: ((x * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(11)).astype(np.float64) / 2.0**53
        values = (2 * mix(h) - 1).astype(np.float32)
        logits = np.stack([3 * mix(h + np.uint64(a + 1)) for a in range(game.num_actions)], axis=1)
        return logits.astype(np.float32), values
    return evaluate


def max_visit_moves(visits):
    return visits == visits.max(axis=1, keepdims=True)  # [B, A]


# ------------------------------------------------------------- optimal play


@pytest.mark.parametrize("config", [
    MCTSConfig(simulations=256, noise_fraction=0.0, temperature=0.0),  # Table 4: c_puct 3
    MCTSConfig(simulations=128, c_base=19652, c_init=1.25, noise_fraction=0.0, temperature=0.0),  # Table 6
], ids=["c_puct", "c_base"])
def test_tictactoe_exact_values_uniform_prior_pick_optimal_moves(ttt_exact, config):
    labels, value_of = ttt_exact
    optimal = labels.q_star == labels.v_star[:, None]  # [N, A]
    # Every position where some legal move is worse than the best: all 3191 of them.
    worse = np.isfinite(labels.q_star) & ~optimal
    rows = np.flatnonzero(worse.any(axis=1))
    assert len(rows) > 3000
    states = games.take(labels.states, rows)
    result = MCTS(TTT, config).search(states, UniformEvaluator(TTT, value_of), np.random.default_rng(0))
    wrong = np.flatnonzero((max_visit_moves(result.visits) & ~optimal[rows]).any(axis=1))
    assert wrong.size == 0, (f"{wrong.size} positions, first:\n{TTT.render(states, int(wrong[0]))}\n"
                             f"visits {result.visits[wrong[0]]}, q* {labels.q_star[rows[wrong[0]]]}")
    assert optimal[rows][np.arange(len(rows)), result.action].all()
    # Root values move toward v*: their signs agree wherever v* is decisive.
    decisive = labels.v_star[rows] != 0
    assert (np.sign(result.root_value[decisive]) == labels.v_star[rows][decisive]).mean() > 0.95


def connect4_endgames(count, seed):
    """Non-terminal Connect Four positions 20 to 28 plies deep from random play, with
    their move lists (the solver reads those)."""
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < count:
        moves, state = [], C4.init(1)
        target = int(rng.integers(20, 29))
        while len(moves) < target and not C4.terminal(state)[0]:
            a = int(games.random_legal_actions(C4.legal(state), rng)[0])
            state, _, _ = C4.step(state, np.array([a]))
            moves.append(a)
        if not C4.terminal(state)[0]:
            found.append(moves)
    return found


def test_connect4_endgames_exact_values_uniform_prior_pick_optimal_moves():
    solver = Connect4Solver(tt_log2_size=20)
    positions = connect4_endgames(150, seed=3)
    # Optimal moves by the oracle's analysis: those of the best outcome (win > draw > loss).
    outcome = np.array([[np.sign(s) if s is not None else -np.inf for s in solver.analyze(m)] for m in positions])
    optimal = outcome == outcome.max(axis=1, keepdims=True)  # [N, 7]
    legal_count = np.isfinite(outcome).sum(axis=1)
    keep = np.flatnonzero(optimal.sum(axis=1) < legal_count)  # some move is worse
    assert len(keep) >= 40
    states = C4.from_moves([positions[i] for i in keep])

    def exact_value(s):
        scores = solver.solve_states(s.current, s.mask, s.moves)
        return np.array([score_to_value(int(x), int(m)) for x, m in zip(scores, s.moves)], np.float32)

    config = MCTSConfig(simulations=256, noise_fraction=0.0, temperature=0.0)
    result = MCTS(C4, config).search(states, UniformEvaluator(C4, exact_value), np.random.default_rng(0))
    assert optimal[keep][np.arange(len(keep)), result.action].all()
    assert not (max_visit_moves(result.visits) & ~optimal[keep]).any()


@pytest.mark.parametrize("seed", [0, 1])
def test_rollouts_from_empty_tictactoe_prefer_the_centre(seed):
    config = MCTSConfig(simulations=800, noise_fraction=0.0, temperature=0.0)
    result = MCTS(TTT, config).search(TTT.init(1), RolloutEvaluator(TTT, rollouts=4, seed=seed),
                                      np.random.default_rng(seed))
    assert result.visits.sum() == 800
    assert int(np.argmax(result.visits[0])) == 4 and result.action[0] == 4
    # The root, then one leaf per simulation except those that end at a finished game.
    assert 400 < result.evaluations <= 1 + 800


# ------------------------------------------------------- batching and randomness


def test_batched_search_equals_single_searches_under_per_tree_generators():
    # Mixed positions: openings, middle games and endgames where terminal leaves are met.
    move_lists = [[], [3], [3, 3, 2], [0, 1, 2, 3, 4, 5, 6, 0, 1, 2]] + connect4_endgames(4, seed=11)
    states = C4.from_moves(move_lists)
    B = len(move_lists)
    config = MCTSConfig(simulations=48, noise_fraction=0.25, temperature=1.0)
    evaluate = hashed_evaluator(C4)
    mcts = MCTS(C4, config)
    batched = mcts.search(states, evaluate, np.random.default_rng(7).spawn(B))
    assert batched.visits.sum(axis=1).tolist() == [48] * B
    for i in range(B):
        single = mcts.search(games.take(states, [i]), evaluate, [np.random.default_rng(7).spawn(B)[i]])
        assert np.array_equal(single.visits[0], batched.visits[i]), i
        assert single.action[0] == batched.action[i], i
        assert single.root_value[0] == batched.root_value[i], i
    # One Generator for one tree is the same as a list of that one generator.
    one = mcts.search(games.take(states, [1]), evaluate, np.random.default_rng(5))
    listed = mcts.search(games.take(states, [1]), evaluate, [np.random.default_rng(5)])
    assert np.array_equal(one.visits, listed.visits) and np.array_equal(one.action, listed.action)


def test_noise_fraction_zero_is_deterministic_and_noise_changes_the_search():
    states = C4.from_moves([[3, 3], [2, 4, 3]])
    evaluate = hashed_evaluator(C4)
    quiet = MCTS(C4, MCTSConfig(simulations=64, noise_fraction=0.0))
    a = quiet.search(states, evaluate, np.random.default_rng(0))
    b = quiet.search(states, evaluate, np.random.default_rng(123))
    assert np.array_equal(a.visits, b.visits) and np.array_equal(a.root_value, b.root_value)
    noisy = MCTS(C4, MCTSConfig(simulations=64, noise_fraction=0.5))
    runs = [noisy.search(states, evaluate, np.random.default_rng(s)).visits for s in range(4)]
    assert any(not np.array_equal(r, a.visits) for r in runs)


def test_temperature_zero_plays_the_most_visited_move_with_random_ties():
    states = C4.from_moves([[3], [3, 3], [0, 6, 0]])
    evaluate = hashed_evaluator(C4)
    result = MCTS(C4, MCTSConfig(simulations=40, noise_fraction=0.0, temperature=0.0)).search(
        states, evaluate, np.random.default_rng(0))
    assert (result.visits[np.arange(3), result.action] == result.visits.max(axis=1)).all()
    # Ties: 2 simulations from the empty tic-tac-toe board with a flat evaluator visit two
    # cells once each; temperature 0 must pick both over many draws, and nothing else.
    flat = MCTS(TTT, MCTSConfig(simulations=2, noise_fraction=0.0, temperature=0.0))
    r = flat.search(TTT.init(400), UniformEvaluator(TTT), np.random.default_rng(1))
    tied = np.flatnonzero(r.visits[0] == 1)
    assert len(tied) == 2 and (r.visits == r.visits[0]).all()
    assert set(np.unique(r.action).tolist()) == set(tied.tolist())


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_the_move_is_drawn_from_visits_to_the_power_one_over_t(temperature):
    # 4000 copies of one position, no noise: identical visit counts in every tree, so
    # the actions are 4000 draws from visits ** (1/T), normalised.
    state = games.take(C4.from_moves([[3, 2, 3]]), np.zeros(4000, np.int64))
    config = MCTSConfig(simulations=30, noise_fraction=0.0, temperature=temperature)
    r = MCTS(C4, config).search(state, hashed_evaluator(C4), np.random.default_rng(2))
    assert (r.visits == r.visits[0]).all()
    np.testing.assert_allclose(r.policy[0], r.visits[0] / 30, rtol=1e-6)
    expected = r.visits[0].astype(float) ** (1 / temperature)
    expected /= expected.sum()
    freq = np.bincount(r.action, minlength=7) / 4000
    assert np.abs(freq - expected).max() < 4 * np.sqrt(0.25 / 4000)  # 4 sigma at worst
    assert (freq[r.visits[0] == 0] == 0).all()


@pytest.mark.parametrize("c_puct, c_init, c_base, second", [
    (3.0, 1.25, 0.0, 0),  # c = 3:  0.3 + 3 * 0.5 * sqrt(2) / 2 = 1.361 > 3 * 0.3 * sqrt(2) = 1.273
    (5.0, 1.25, 0.0, 1),  # c = 5:  2.068 < 2.121
    (1.0, 3.0, 19652.0, 0),  # c = 3 + log(19655 / 19652) = 3.0002
    (1.0, 0.0, 0.01, 1),  # c = log(3.01 / 0.01) = 5.71
])
def test_second_simulation_follows_the_puct_formula(c_puct, c_init, c_base, second):
    # Empty tic-tac-toe board, priors 0.5 on cell 0, 0.3 on cell 1, the rest spread thin;
    # every position after the root is worth -0.3 to its mover, so Q(root, 0) = 0.3 after
    # one visit. Simulation 1 takes cell 0 (highest prior); simulation 2 compares, with
    # N(root) = 2 (the root's evaluation and one backup):
    #   cell 0: 0.3 + c * 0.5 * sqrt(2) / (1 + 1)   against   cell 1: 0 + c * 0.3 * sqrt(2) / 1
    prior = np.full(9, 0.2 / 7)
    prior[0], prior[1] = 0.5, 0.3

    def evaluate(states):
        n = len(states[0])
        return np.tile(np.log(prior).astype(np.float32), (n, 1)), np.where(states.moves == 0, 0.0, -0.3)

    config = MCTSConfig(simulations=2, c_puct=c_puct, c_init=c_init, c_base=c_base, noise_fraction=0.0)
    r = MCTS(TTT, config).search(TTT.init(1), evaluate, np.random.default_rng(0))
    expected = np.zeros(9, np.int32)
    expected[0] += 1
    expected[second] += 1
    np.testing.assert_array_equal(r.visits[0], expected)
    # Root value: its evaluation 0, then 0.3 from the first leaf, then 0.3 again from a
    # new leaf below the root, or -0.3 from a leaf two plies down (the reply to cell 0
    # is worth -0.3 to its mover: +0.3 to the opponent, -0.3 to the root's mover).
    assert r.root_value[0] == pytest.approx((0.0 + 0.3 + (0.3 if second == 1 else -0.3)) / 3)


# -------------------------------------------------------------- terminal nodes


def test_a_forced_winning_move_gets_the_exact_value():
    # X to move on an almost full board, one empty cell, playing it wins:
    #   X O X / O X O / O X .   (moves 0 1 2 3 4 5 7 6, then 8 completes the diagonal)
    state = TTT.from_moves([[0, 1, 2, 3, 4, 5, 7, 6]])
    assert TTT.legal(state).sum() == 1
    for S in (1, 5, 50):
        r = MCTS(TTT, MCTSConfig(simulations=S)).search(state, UniformEvaluator(TTT), np.random.default_rng(0))
        # The root's own evaluation (0) and S backups of the exact win (+1).
        assert r.root_value[0] == pytest.approx(S / (S + 1))
        assert r.visits[0, 8] == S and r.action[0] == 8
        assert r.evaluations == 1  # the terminal leaf is never sent to the evaluator


def test_an_immediate_win_among_other_moves_is_found_and_valued():
    # X (to move) has 0 and 1; 2 wins at once; 6 other cells are open.
    state = TTT.from_moves([[0, 4, 1, 8]])
    config = MCTSConfig(simulations=1000, c_puct=1.0, noise_fraction=0.0, temperature=0.0)
    r = MCTS(TTT, config).search(state, UniformEvaluator(TTT), np.random.default_rng(0))
    assert r.action[0] == 2
    assert r.root_value[0] > 0.95


def test_connect4_double_threat_is_seen_as_lost_from_the_root():
    # X holds c1 d1 e1 with b1 and f1 open, O (to move) holds c2 d2: whatever O plays,
    # X completes four next move. Only terminal leaves carry that news (the evaluator
    # says 0 everywhere), so the root value must come from exact terminal backups.
    moves = [2, 2, 3, 3, 4]
    assert all(s is not None and s < 0 for s in Connect4Solver(tt_log2_size=16).analyze(moves))
    config = MCTSConfig(simulations=2000, c_puct=1.0, noise_fraction=0.0)
    r = MCTS(C4, config).search(C4.from_moves([moves]), UniformEvaluator(C4), np.random.default_rng(0))
    assert r.root_value[0] < -0.8


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize("field, value", [
    ("simulations", 0), ("simulations", 2.5), ("c_puct", 0.0), ("c_puct", float("nan")), ("c_base", -1.0),
    ("dirichlet_alpha", 0.0), ("noise_fraction", 1.5), ("noise_fraction", -0.1), ("temperature", -1.0),
])
def test_bad_config_fields_are_named(field, value):
    with pytest.raises(ValueError, match=f"MCTSConfig.{field}"):
        MCTSConfig(**{field: value})


def test_terminal_root_is_refused_naming_the_element():
    states = TTT.from_moves([[4], [0, 3, 1, 4, 2]])  # element 1: X has won the top row
    with pytest.raises(ValueError, match="root state 1"):
        MCTS(TTT, MCTSConfig(simulations=4)).search(states, UniformEvaluator(TTT), np.random.default_rng(0))


@pytest.mark.parametrize("bad, match", [
    (lambda s: (np.zeros((len(s[0]), 6), np.float32), np.zeros(len(s[0]), np.float32)), "logits"),
    (lambda s: (np.zeros((len(s[0]), 7), np.float32), np.zeros((len(s[0]), 1), np.float32)), "values"),
    (lambda s: (np.zeros((len(s[0]), 7), np.float32), np.full(len(s[0]), np.nan, np.float32)), "non-finite"),
    (lambda s: np.zeros((len(s[0]), 7), np.float32), "tuple"),
])
def test_evaluator_answers_of_the_wrong_shape_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        MCTS(C4, MCTSConfig(simulations=4)).search(C4.init(3), bad, np.random.default_rng(0))


def test_wrong_number_of_tree_generators_is_refused():
    with pytest.raises(ValueError, match="sequence of 3 Generators"):
        MCTS(C4, MCTSConfig(simulations=4)).search(C4.init(3), UniformEvaluator(C4), np.random.default_rng(0).spawn(2))
