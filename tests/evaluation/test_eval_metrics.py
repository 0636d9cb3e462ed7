"""Metrics on hand-made cases whose answers are known: t quantiles from the published
table, regrets computed by hand, a hand-traced Chomp game, and a game that is always a
draw."""

from typing import NamedTuple

import numpy as np
import pytest

import games
from evaluation.labels import LabelledStates
from evaluation.metrics import Trace, mean_ci, regrets, state_metrics, t_cdf, t_quantile, trace_metrics
from evaluation.oracles import Analysis, ChompOracle, FGameOracle, Oracle
from evaluation.play import head_to_head, play_vs_oracle, self_play_traces
from games.base import Game


@pytest.mark.parametrize("p, df, expected", [
    (0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 4, 2.776), (0.975, 9, 2.262), (0.975, 19, 2.093),
    (0.975, 30, 2.042), (0.95, 5, 2.015), (0.995, 10, 3.169), (0.975, 1e6, 1.960)])
def test_t_quantiles_match_the_table(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-3)
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-3)


def test_mean_ci_by_hand():
    # mean 2, sd 1, sem 1/sqrt(3), t(0.975, 2) = 4.3027
    m, h = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and h == pytest.approx(4.302653 / np.sqrt(3), rel=1e-5)
    assert mean_ci([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError):
        mean_ci([])


def _hand_labels():
    # Three states of tic-tac-toe stand in (only their count matters); q* by hand.
    states = games.make("tictactoe").init(3)
    q = np.full((3, 9), -np.inf, np.float32)
    q[0, :3] = [1, 0, -1]  # won: best 1, worst -1 -> regret 2
    q[1, 3:5] = [0, -1]  # drawn: worst -1 -> regret 1
    q[2, 5:8] = [-1, -1, -1]  # lost whatever: regret 0
    return LabelledStates(states, q.max(axis=1), q)


def test_regret_of_best_and_worst_policies():
    labels = _hand_labels()
    best = np.where(np.isfinite(labels.q_star), labels.q_star, -9).argmax(axis=1)
    worst = np.where(np.isfinite(labels.q_star), labels.q_star, 9).argmin(axis=1)
    np.testing.assert_array_equal(regrets(labels, best), [0, 0, 0])
    np.testing.assert_array_equal(regrets(labels, worst), [2, 1, 0])
    groups = np.array(["easy-opening", "easy-opening", "easy-endgame"], dtype=object)
    m = state_metrics(labels, choose=lambda s: worst, value=lambda s: np.array([0.5, 0.0, -1.0], np.float32),
                      groups=groups)
    assert m["policy_regret"] == pytest.approx(1.0)
    assert m["value_mae"] == pytest.approx(0.5 / 3)  # |0.5 - 1| + 0 + 0
    assert m["easy-opening/policy_regret"] == pytest.approx(1.5)
    assert m["endgame/policy_regret"] == 0.0 and m["opening/states"] == 2
    assert m["optimal_move_rate"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="illegal action 8 in state 0"):
        regrets(labels, np.array([8, 3, 5]))


def test_trace_metrics_by_hand():
    t1 = Trace(np.array([0, 1, 0, 1, 0], np.int8), np.array([1, 1, 1, 0, 1], bool),
               np.array([1, 0, 1, 0, 1], bool), np.array([0, 0, 0, 1, 0], bool), winner=1)
    t2 = Trace(np.array([0, 1, 0], np.int8), np.array([1, 1, 1], bool), np.array([1, 1, 1], bool),
               np.array([0, 1, 0], bool), winner=0)
    m = trace_metrics([t1, t2])
    assert m["perfect"] == 0.5 and m["match"] == pytest.approx(6 / 7) and m["labelled"] == 7
    # t1: labelled plies 0,1,2,4 matched 1,0,1,1 -> longest run 2 (ply 3 is unlabelled); t2: 3.
    assert m["chain"] == 2.5 and m["first_fail"] == 1.0
    assert m["match_p1"] == 1.0 and m["perfect_p1"] == 1.0 and np.isnan(m["first_fail_p1"])
    assert m["match_p2"] == pytest.approx(1 / 2) and m["first_fail_p2"] == 1.0 and m["chain_p2"] == 0.5
    # Losing plies: t1 ply 3 (seat 1, who won), t2 ply 1 (seat 1, who lost).
    assert (m["losing_plies"], m["losing_but_won"], m["losing_but_won_rate"]) == (2, 1, 0.5)


def test_known_chomp_trace():
    # Chomp 1 x 4 is a Nim heap of 3: from [n] the only winning move takes square 1.
    # An agent that always takes the last square plays [4] -> [3] -> [2] -> [1]:
    # ply 0 (g 3) misses the win, ply 1 (g 2) misses, ply 2 (g 1) takes square 1 and wins.
    game = games.make("chomp", rows=1, cols=4)
    oracle = ChompOracle(game)
    last = lambda s: (s.profile[:, 0].astype(np.int64) - 1)
    (trace,) = self_play_traces(game, last, oracle, game.init(1))
    np.testing.assert_array_equal(trace.seat, [0, 1, 0])
    np.testing.assert_array_equal(trace.labelled, [True, True, True])
    np.testing.assert_array_equal(trace.matched, [False, False, True])
    assert trace.winner == 0 and not trace.losing.any()
    m = trace_metrics([trace])
    assert (m["perfect"], m["match"], m["chain"], m["first_fail"]) == (0.0, 1 / 3, 1.0, 0.0)
    assert (m["match_p1"], m["first_fail_p1"], m["match_p2"], m["first_fail_p2"]) == (0.5, 0.0, 0.0, 1.0)


def _chomp_openings(game):
    root = game.init(1)
    exp = game.expand(root)
    return games.take(exp.children, np.flatnonzero((exp.legal & ~exp.done)[0]))


def test_oracle_best_agent_has_no_error_and_worst_is_counted():
    game = games.make("chomp", rows=4, cols=5)
    oracle = ChompOracle(game)
    openings = _chomp_openings(game)
    m = play_vs_oracle(game, oracle.choose, oracle, openings)
    assert m["error_rate"] == 0.0 and m["blunder_rate"] == 0.0 and m["move_error_rate"] == 0.0
    assert m["move_match_rate"] == 1.0 and m["games"] == 2 * 19  # 20 squares, P excluded

    # The worst agent: a losing move wherever there is one. It errs in exactly the games
    # whose value for it is a win: openings lost for the mover, the oracle moving first
    # (oracle-first games start at the opening with the oracle to move), and vice versa.
    def worst(states):
        return np.where(np.isfinite(oracle.analyze(states).q), oracle.analyze(states).q, 9).argmin(axis=1)

    v = oracle.analyze(openings).value
    expected_errors = (v > 0).sum() + (v < 0).sum()  # agent-first won ones, oracle-first lost ones
    m = play_vs_oracle(game, worst, oracle, openings)
    assert m["error_rate"] == pytest.approx(expected_errors / (2 * len(v)))
    assert m["blunder_rate"] == m["error_rate"]  # every error here is a win thrown to a loss
    assert m["score"] == -1.0


def test_head_to_head_exchanges_roles():
    # Chomp 2 x 2 after one ply: [1,1] and [2,0] are won for the mover, [2,1] lost, and every
    # move there is forced or equivalent, so each side wins three of the six games.
    game = games.make("chomp", rows=2, cols=2)
    oracle = ChompOracle(game)
    rng = np.random.default_rng(0)
    rand = lambda s: games.random_legal_actions(game.legal(s), rng)
    m = head_to_head(game, oracle.choose, rand, _chomp_openings(game))
    assert (m["score"], m["wins"], m["losses"], m["games"]) == (0.0, 3, 3, 6)
    g5 = games.make("fgame", depth=6, branching=3, beta=0.0, seed=2)
    o5 = FGameOracle(g5)
    assert head_to_head(g5, o5.choose, o5.choose, _chomp_openings(g5))["score"] == 0.0


class DrawState(NamedTuple):
    ply: np.ndarray  # int64[B]


class AlwaysDraw(Game):
    """Three plies of two moves each; every game is a draw."""

    def __init__(self):
        self.name, self.params, self.num_actions, self.obs_shape, self.max_length = "draw", {}, 2, (1,), 3

    def _init(self, batch):
        return DrawState(np.zeros(batch, np.int64))

    def _legal(self, state):
        return np.ones((len(state.ply), 2), bool)

    def _step(self, state, actions):
        ply = state.ply + 1
        return DrawState(ply), np.zeros(len(ply), np.float32), ply >= 3

    def _encode(self, state):
        return state.ply[:, None].astype(np.float32)

    def terminal(self, state):
        return state.ply >= 3

    def render_one(self, state, i):
        return f"ply {state.ply[i]}"


class DrawOracle(Oracle):
    strong = False

    def __init__(self, game):
        self.game, self.order = game, np.arange(2)

    def analyze(self, states):
        n = len(states.ply)
        q = np.zeros((n, 2), np.float32)
        return Analysis(np.zeros(n, np.float32), q, q, np.ones((n, 2), bool), np.ones(n, bool))


def test_always_draw_game():
    game = AlwaysDraw()
    oracle = DrawOracle(game)
    starts = game.init(4)
    for agent in (lambda s: np.zeros(len(s.ply), np.int64), lambda s: np.ones(len(s.ply), np.int64)):
        m = play_vs_oracle(game, agent, oracle, starts)
        assert (m["error_rate"], m["blunder_rate"], m["score"], m["games"]) == (0.0, 0.0, 0.0, 8)
        assert head_to_head(game, agent, oracle.choose, starts)["draws"] == 8
    a = oracle.analyze(starts)
    labels = LabelledStates(starts, a.value, a.q)
    m = state_metrics(labels, choose=lambda s: np.ones(len(s.ply), np.int64),
                      value=lambda s: np.full(len(s.ply), 0.25, np.float32))
    assert m["policy_regret"] == 0.0 and m["value_mae"] == 0.25
