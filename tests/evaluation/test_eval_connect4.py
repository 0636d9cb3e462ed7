"""The Connect Four oracle of evaluation: hand-known positions, the store round trip,
and play / traces from late positions (cheap to solve) with known answers."""

import numpy as np
import pytest

import games
from evaluation.config import EvaluationConfig
from evaluation.datasets import GROUPS, DatasetError
from evaluation.metrics import trace_metrics
from evaluation.oracles import Connect4Oracle
from evaluation.play import play_vs_oracle, self_play_traces
from evaluation.runner import SuiteRunner
from games.testing import random_move_lists
from learner.learner import Learner
from inference.networks import NetworkConfig
from oracle_service.service import OracleClient
from oracle_service.store import EmbeddedStore


@pytest.fixture(scope="module")
def game():
    return games.make("connect4")


def test_immediate_wins_are_the_best_moves(game):
    # A move that completes a four at once (found by the engine, not the solver) scores
    # (43 - plies) // 2, the highest score possible there, so the best moves are exactly
    # the immediate wins.
    starts = _late_positions(game, n=40, plies=24, seed=11)
    exp = game.expand(starts)
    wins = exp.legal & exp.done & (exp.reward > 0)  # [B, 7]
    rows = np.flatnonzero(wins.any(axis=1))
    assert rows.size >= 3
    states = games.take(starts, rows)
    oracle = Connect4Oracle(game, tt_log2_size=20)
    a = oracle.analyze(states)
    np.testing.assert_array_equal(a.best, wins[rows])
    np.testing.assert_array_equal(a.score.max(axis=1), (43 - states.moves) // 2)
    assert (a.value == 1).all() and wins[rows, oracle.choose(states)].all()


def test_store_round_trip(game, tmp_path):
    states = _late_positions(game, n=2, plies=20)
    store = EmbeddedStore(tmp_path / "oracle.sqlite")
    first = Connect4Oracle(game, store=store, tt_log2_size=20)
    a = first.analyze(states)
    assert first.solves > 0
    again = Connect4Oracle(game, store=EmbeddedStore(tmp_path / "oracle.sqlite"), tt_log2_size=20)
    b = again.analyze(states)
    assert again.solves == 0  # everything came from the store
    np.testing.assert_array_equal(a.score, b.score)
    plain = Connect4Oracle(game, tt_log2_size=20).analyze(states)
    np.testing.assert_array_equal(a.score, plain.score)


def _late_positions(game, n=6, plies=30, seed=3):
    """Live positions ``plies`` deep from random play (the solver answers them at once)."""
    rng = np.random.default_rng(seed)
    return game.from_moves(random_move_lists(game, n, rng, max_plies=plies, min_plies=plies))


def test_perfect_agent_against_the_oracle(game):
    starts = _late_positions(game)
    oracle = Connect4Oracle(game, tt_log2_size=20)
    m = play_vs_oracle(game, oracle.choose, oracle, starts)
    assert (m["error_rate"], m["blunder_rate"], m["move_error_rate"], m["move_match_rate"]) == (0, 0, 0, 1)
    assert (m["error_games"], m["blunder_games"], m["games"]) == (0, 0, 2 * 6)
    # The oracle plays both sides of each opening: the scores cancel out exactly.
    assert m["score"] == pytest.approx(0.0)
    t = trace_metrics(self_play_traces(game, oracle.choose, oracle, starts))
    assert (t["perfect"], t["match"], t["losing_but_won"]) == (1.0, 1.0, 0)


def test_worst_agent_against_the_oracle(game):
    starts = _late_positions(game, seed=5)
    oracle = Connect4Oracle(game, tt_log2_size=20)

    def worst(states):
        s = oracle.analyze(states).score
        return np.where(np.isfinite(s), s, np.inf).argmin(axis=1)

    v = oracle.analyze(starts).value
    m = play_vs_oracle(game, worst, oracle, starts)
    assert m["games"] == 2 * len(v) and m["error_games"] == round(m["error_rate"] * m["games"])
    # Against a perfect oracle a blunder (won to lost) loses the game: an error too.
    assert 0 < m["blunder_games"] <= m["error_games"] and m["blunder_games"] == round(m["blunder_rate"] * m["games"])
    # Each game whose value for the agent is not a loss ends worse for it: the worst move
    # from a won or drawn position late in the game loses when one exists (it does in
    # these positions unless the board is nearly full; checked through the count).
    possible = np.concatenate([v, -v]) > -1
    assert m["error_rate"] <= possible.mean() and m["error_rate"] > 0
    assert m["score"] < 0


def test_evaluator_on_the_committed_sets(game):
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16, symmetrize=True)
    try:  # the default suites, games from the first openings only (the whole protocol takes minutes)
        ev = SuiteRunner(game, config, evaluation=EvaluationConfig(max_openings=3), oracle_store=None)
    except DatasetError as e:
        pytest.fail(f"committed Connect Four sets are missing or corrupt: {e}")
    assert [s.name for s in ev.suites] == ["connect4-uniform", "connect4-eps-optimal", "connect4-play"]
    m = ev.evaluate(Learner(game, config, device="cpu").get_weights())
    assert m["eval/connect4-play/games"] == 6
    assert 0 <= m["eval/connect4-play/blunder_games"] <= m["eval/connect4-play/error_games"] <= 6
    for suite in ("connect4-uniform", "connect4-eps-optimal"):
        assert m[f"eval/{suite}/states"] == 1500
        counts = [m.get(f"eval/{suite}/{g}/states", 0) for g in GROUPS]
        assert sum(counts) == 1500
        phases = sum(m[f"eval/{suite}/{p}/states"] for p in ("opening", "midgame", "endgame"))
        assert phases == 1500
        # Regret is between 0 and 2 (win given away for a loss), and so is the MAE here.
        assert 0 <= m[f"eval/{suite}/policy_regret"] <= 2
        assert m[f"eval/{suite}/inference_evals"] > 1500  # about 6 children x 2 images per state


def test_the_oracle_service_answers_as_the_solver_here(game, ray_session, tmp_path):
    """Evaluation's Connect Four oracle through the oracle service (Ray replicas, their
    store): the same analyses and play metrics as the solver in this process, and a
    second evaluation is answered from the store without solving again."""
    starts = _late_positions(game, n=8, plies=26, seed=21)
    here = Connect4Oracle(game, tt_log2_size=20)
    client = OracleClient(num_replicas=2, store=str(tmp_path / "shared.sqlite"),
                          replica_options={"num_cpus": 0}, tt_log2_size=20)
    try:
        served = Connect4Oracle(game, client=client)
        a, b = here.analyze(starts), served.analyze(starts)
        for field in ("value", "q", "score", "best"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert served.service_queries > 0 and served.solves == 0
        m_here = play_vs_oracle(game, here.choose, here, starts)
        m_served = play_vs_oracle(game, served.choose, served, starts)
        assert m_served == m_here
        solved = client.stats_summary()["oracle/solved"]
        assert solved > 0
        again = Connect4Oracle(game, client=client)
        assert play_vs_oracle(game, again.choose, again, starts) == m_here
        assert client.stats_summary()["oracle/solved"] == solved  # all from the store
    finally:
        client.close()
