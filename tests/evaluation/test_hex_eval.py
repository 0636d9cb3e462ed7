"""Hex in the exact evaluation, on small boards against an independent negamax: the weak
oracle's analysis and play, the labelled columns and the balanced openings of the
builders (with the retry and the positions given up on), the metrics on a hand-computed
example, games against the oracle, and the runner's Hex suites."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hex_negamax import board_after, connects, value_after, winning_cells

import games
from evaluation.builders import balanced_hex_openings, hex_label_columns, hex_rotation_classes, solve_hex_moves
from evaluation import datasets
from evaluation.datasets import Dataset, DatasetError
from evaluation.metrics import state_metrics
from evaluation.oracles import HexOracle, HexUnsolvedError, Oracle, make_oracle
from evaluation.play import play_vs_oracle
from evaluation.runner import SuiteRunner
from evaluation.suites import suites_for
from launch.evaluator import chosen_suites, evaluator_needs_oracle
from learner.learner import Learner
from inference.networks import NetworkConfig
from oracle_service.hex_service import hex_preference_order
from oracle_service.store import HexSolved

NET = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16)


def _negamax_record(cells, size) -> HexSolved:
    win = winning_cells(board_after(cells, size), size)
    return HexSolved(1 if win else -1, win)


def _random_positions(size: int, count: int, min_stones: int, seed: int) -> list[list[int]]:
    """Distinct live positions with at least ``min_stones`` stones (negamax is quick there)."""
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    while len(out) < count:
        cells = rng.permutation(size * size)[: rng.integers(min_stones, size * size - 1)].tolist()
        while cells and any(connects(board_after(cells, size), size, colour) for colour in (1, 2)):
            cells.pop()  # played on past a win: cut it back
        if len(cells) >= min_stones and tuple(cells) not in seen:
            seen.add(tuple(cells))
            out.append(cells)
    return out


def test_preference_order_is_centre_first():
    assert hex_preference_order(3).tolist() == [4, 1, 2, 3, 5, 6, 7, 0, 8]
    order = hex_preference_order(7)
    assert order[0] == 24 and sorted(order[1:7].tolist()) == [17, 18, 23, 25, 30, 31]
    assert sorted(order.tolist()) == list(range(49))


def test_weak_oracle_analysis_and_moves_match_negamax():
    for size, positions in ((3, [[], [4], [0], [4, 2], [1, 7], [0, 1, 3]]), (4, _random_positions(4, 12, 7, 0))):
        g = games.make("hex", size=size)
        oracle = make_oracle(g)
        assert isinstance(oracle, HexOracle) and not oracle.strong
        states = g.from_moves(positions)
        a = oracle.analyze(states)
        order = hex_preference_order(size)
        chosen = oracle.choose(states)
        for i, cells in enumerate(positions):
            win = winning_cells(board_after(cells, size), size)
            legal = [c for c in range(size * size) if c not in cells]
            assert a.value[i] == (1 if win else -1), cells
            assert [c for c in legal if a.q[i, c] == 1] == list(win), cells
            assert all(a.q[i, c] == -1 for c in legal if c not in win) and np.isneginf(a.q[i, cells]).all()
            np.testing.assert_array_equal(a.score[i], a.q[i])  # weak: no ranking within an outcome
            assert a.labelled[i] == bool(win) and a.best[i].sum() == len(win)
            # Play: a winning cell (one proof's), else the first legal cell in preference order.
            if win:
                assert chosen[i] in win, cells
            else:
                assert chosen[i] == next(int(c) for c in order if c in legal), cells
    with pytest.raises(ValueError, match="swap"):
        make_oracle(games.make("hex", size=3, swap=True))


def test_weak_oracle_judges_a_move_as_its_full_analysis_does():
    """HexOracle.judge (two value-only proofs) against the verdict read from the full
    analysis (Oracle.judge) and the negamax, for every legal move of 4x4 positions."""
    g = games.make("hex", size=4)
    oracle = HexOracle(g)
    positions = _random_positions(4, 10, 4, 3)
    rows, actions = [], []
    for i, cells in enumerate(positions):
        for c in range(16):
            if c not in cells:
                rows.append(cells)
                actions.append(c)
    states = g.from_moves(rows)
    cheap = oracle.judge(states, np.array(actions))
    full = Oracle.judge(HexOracle(g), states, np.array(actions))
    for field in cheap._fields:
        np.testing.assert_array_equal(getattr(cheap, field), getattr(full, field), err_msg=field)
    for k, (cells, c) in enumerate(zip(rows, actions)):
        win = winning_cells(board_after(cells, 4), 4)
        assert cheap.value[k] == (1 if win else -1) and cheap.q[k] == (1 if c in win else -1)
        assert cheap.best[k] == (c in win) and cheap.labelled[k] == bool(win)
    assert cheap.best.any() and (~cheap.labelled).any()  # both kinds of state were judged
    np.testing.assert_array_equal(oracle.values(g.from_moves(positions)),
                                  [value_after(m, 4) for m in positions])


def test_label_columns_and_metrics_on_a_hand_computed_example():
    g = games.make("hex", size=3)
    moves = [[], [4], [4, 2]]  # Black wins (2..6 win), Black to move; White loses; Black wins by 0, 1, 3
    records = [_negamax_record(m, 3) for m in moves]
    assert [r.winning for r in records] == [(2, 3, 4, 5, 6), (), (0, 1, 3)]
    cols = hex_label_columns(g, moves, records)
    data = Dataset("hex-test", g, pa.table(cols), {}, None)
    labels = data.labels
    np.testing.assert_array_equal(labels.v_star, [1, -1, 1])
    np.testing.assert_array_equal(labels.q_star[0], [-1, -1, 1, 1, 1, 1, 1, -1, -1])
    assert np.isneginf(labels.q_star[2, [2, 4]]).all() and labels.q_star[2, 5] == -1
    assert data.column("winning_moves") == [[2, 3, 4, 5, 6], [], [0, 1, 3]]
    values = np.array([0.5, 0.2, -0.4], np.float32)
    actions = np.array([4, 0, 5])  # a winning move; any move of a lost state; a losing move from a won one
    m = state_metrics(labels, value=lambda s: values[: len(s.moves)], choose=lambda s: actions[: len(s.moves)],
                      sign_error=True)
    # |0.5 - 1| + |0.2 + 1| + |-0.4 - 1| = 3.1; 0.2 and -0.4 have the wrong sign; regrets 0, 0, 2.
    assert m["value_mae"] == pytest.approx(3.1 / 3)
    assert m["value_sign_error"] == pytest.approx(2 / 3)
    assert m["policy_regret"] == pytest.approx(2 / 3) and m["optimal_move_rate"] == pytest.approx(2 / 3)
    assert "value_sign_error" not in state_metrics(labels, value=lambda s: values[: len(s.moves)])


def test_an_openings_build_goes_on_from_its_progress_file(tmp_path):
    g = games.make("hex", size=3)
    progress = tmp_path / "progress.jsonl"
    first = balanced_hex_openings(g, HexOracle(g), 1, seed=0, log=lambda m: None, progress=progress, chunk=4)
    lines = progress.read_text().splitlines()
    assert len(lines) >= 2 and first[3] == len(lines)
    # Asked again, for more: the answers kept are read, not solved again, and the file grows.
    oracle = HexOracle(g)
    more = balanced_hex_openings(g, oracle, 2, seed=0, log=lambda m: None, progress=progress, chunk=4)
    assert more[0][:2] == first[0] and oracle.worker.stats()["queries"] == len(progress.read_text().splitlines()) \
        - len(lines)
    assert more[1] == balanced_hex_openings(g, HexOracle(g), 2, seed=0, log=lambda m: None)[1]


def test_builders_balance_the_openings_and_report_what_they_give_up():
    g = games.make("hex", size=3)
    oracle = HexOracle(g)
    classes = hex_rotation_classes(g, 2)
    assert len(classes) == 36  # 72 two-ply positions, none its own rotation
    lost = [m for m in classes if value_after(m, 3) < 0]
    assert len(lost) == 2  # Black, to move, loses only after a poor first move well answered
    moves, records, given_up, solved = balanced_hex_openings(g, oracle, 2, seed=0, log=lambda m: None)
    assert len(moves) == 4 and given_up == [] and solved >= 4 and all(m in classes for m in moves)
    assert sorted(r.value for r in records) == [-1, -1, 1, 1] and sorted(lost) == sorted(
        m for m, r in zip(moves, records) if r.value < 0)
    # Value-only records: the value, and one winning cell where the mover wins.
    for m, r in zip(moves, records):
        expected = _negamax_record(m, 3)
        assert r.value == expected.value and (r.move in expected.winning if r.value > 0 else r.move == -1), m
    assert [r.value for r in records] == [1, -1, 1, -1]  # alternately: any first rows are balanced
    with pytest.raises(ValueError, match="only 3 won and 2 lost"):
        balanced_hex_openings(g, oracle, 3, seed=0, log=lambda m: None)
    # A limit too small at first is retried larger; a position unknown at every limit is
    # given up on, named, and not labelled.
    g4 = games.make("hex", size=4)
    hard, other = [10, 5, 0, 15, 3, 12], [0, 1, 5, 2, 9, 3]
    retried = HexOracle(g4, node_limit=2, time_limit=None, retries=3, growth=100.0)
    records, given_up = solve_hex_moves(g4, retried, [hard, other], log=lambda m: None)
    assert records == [_negamax_record(hard, 4), _negamax_record(other, 4)] and given_up == []
    assert retried.unknown_queries >= 1  # unknown under 2 nodes, answered under 200
    stingy = HexOracle(g4, node_limit=1, time_limit=None, retries=1, growth=1.0)
    records, given_up = solve_hex_moves(g4, stingy, [other, hard], log=lambda m: None)
    assert records == [None, None] and given_up == [other, hard] and stingy.unknown_queries == 4
    with pytest.raises(HexUnsolvedError, match="1 of 1 positions unknown"):
        stingy.solve_states(g4.from_moves([hard]))


def test_play_against_the_weak_oracle_from_both_sides():
    g = games.make("hex", size=3)
    openings = [[4, 2], [0, 4], [1, 7], [8, 0]]
    starts = g.from_moves(openings)
    theory = np.array([value_after(m, 3) for m in openings])  # for Black, to move
    oracle = HexOracle(g)
    perfect = lambda s: HexOracle(g).choose(s)  # noqa: E731 (a second, independent oracle instance)
    first_legal = lambda s: g.legal(s).argmax(axis=1)  # noqa: E731
    games_out = []
    m = play_vs_oracle(g, perfect, oracle, starts, games_out=games_out)
    assert m["games"] == 8 and m["error_rate"] == 0 and m["blunder_rate"] == 0
    assert [r.agent_outcome for r in games_out] == theory.tolist() + (-theory).tolist()
    weak = play_vs_oracle(g, first_legal, oracle, starts, games_out=(played := []))
    # The oracle never lets a won game go: the agent wins only where it started won and
    # kept the win; every error is a game from a won start that it lost.
    for r, t in zip(played, np.concatenate([theory, -theory])):
        assert r.agent_outcome <= t and r.error == (r.agent_outcome < t)
    assert weak["error_games"] == sum(r.error for r in played) > 0
    assert weak["blunder_games"] >= weak["error_games"]


@pytest.mark.slow
def test_play_counts_apart_the_games_through_a_position_the_solver_left_unknown():
    """Under a limit too small for some positions, a lenient oracle (the evaluation's)
    plays on: the games through an unknown position are counted apart, the others scored
    exactly; a strict one names the position and stops."""
    g = games.make("hex", size=4)
    # 6-stone openings: from 4 stones, the reference negamax took about a minute
    openings = _random_positions(4, 8, 6, 11)
    openings = [m[:6] for m in openings]
    starts = g.from_moves(openings)
    theory = np.array([value_after(m, 4) for m in openings])
    first_legal = lambda s: g.legal(s).argmax(axis=1)  # noqa: E731
    tight = HexOracle(g, node_limit=2, time_limit=None, retries=0, lenient=True)
    played = []
    m = play_vs_oracle(g, first_legal, tight, starts, games_out=played)
    assert m["unsettled_games"] > 0 and m["games"] > 0 and m["games"] + m["unsettled_games"] == 16
    assert m["unsettled_games"] == sum(r.unsettled for r in played)
    for r, t in zip(played, np.concatenate([theory, -theory])):
        if not r.unsettled:
            assert r.error == (r.agent_outcome < t) and r.agent_outcome <= t
        else:
            assert not r.error and not r.blunder
    assert m["error_games"] == sum(r.error for r in played)
    with pytest.raises(HexUnsolvedError, match="unknown"):
        play_vs_oracle(g, first_legal, HexOracle(g, node_limit=2, time_limit=None, retries=0), starts)
    assert make_oracle(games.make("hex", size=4)).lenient  # the evaluation's is lenient


def _late_7x7_positions(count: int, seed: int, before_end: int) -> list[list[int]]:
    """Move lists ``before_end`` plies before the end of uniformly random 7x7 games."""
    g = games.make("hex", size=7)
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        cells = rng.permutation(49).tolist()
        state = g.init(1)
        for ply, c in enumerate(cells):
            state, _, done = g.step(state, np.array([c]))
            if done[0]:
                break
        if ply + 1 - before_end >= 2:
            out.append(cells[: ply + 1 - before_end])
    return out


def test_hex_suites_in_the_runner_at_gamma_below_one(tmp_path, monkeypatch):
    game = games.make("hex", size=7)
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "empty")
    names = {s.name: (s.kind, s.dataset, s.default) for s in suites_for(game)}
    # Without the committed labelled files, the oracle suites run only when named.
    assert names["hex-uniform"] == ("states", "hex-uniform", False)
    assert names["hex-play"] == ("play", "hex-openings", False)
    assert names["hex-random"] == ("random", "hex-random-openings", True)
    with pytest.raises(DatasetError, match="python -m evaluation build --game hex"):
        SuiteRunner(game, NET, suites=["hex-uniform"])
    # A training run that names Hex's play suite starts the oracle service for it.
    assert evaluator_needs_oracle("hex", "hex-uniform,hex-play")
    assert not evaluator_needs_oracle("hex", "hex-uniform") and not evaluator_needs_oracle("hex", "auto")
    assert chosen_suites("hex", "auto") is False  # no labelled file: no suite
    # Labelled files of a few late positions (quick to solve), built by the builders' own
    # functions and read where the committed ones are.
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    oracle = HexOracle(game)
    for name, moves in (("hex-uniform", _late_7x7_positions(6, 1, 4)), ("hex-openings", _late_7x7_positions(2, 2, 6))):
        records, given_up = solve_hex_moves(game, oracle, moves, log=lambda m: None)
        assert given_up == []
        datasets.write_dataset(tmp_path / f"{name}.parquet", hex_label_columns(game, moves, records),
                               datasets.dataset_meta(name, game, 0, "test"))
    names = {s.name: (s.dataset, s.default) for s in suites_for(game)}
    assert names["hex-uniform"][1] and names["hex-play"][1] and names["hex-random"] == ("hex-openings", True)
    # Training's auto suites: the labelled states (seconds), not play against the solver.
    assert chosen_suites("hex", "auto") == ["hex-uniform"] and not evaluator_needs_oracle("hex", "auto")
    assert evaluator_needs_oracle("hex", "default")
    runner = SuiteRunner(game, NET, suites=["hex-uniform", "hex-play"], gamma=0.9, oracle_store=None)
    labels, _ = runner._data["hex-uniform"]
    assert set(np.unique(labels.v_star)) <= {-1.0, 1.0}  # weak labels at gamma 0.9: still +-1
    np.testing.assert_array_equal(labels.v_star, [r.value for r in solve_hex_moves(
        game, oracle, datasets.load_dataset("hex-uniform").moves, log=lambda m: None)[0]])
    m = runner.evaluate(Learner(game, NET, device="cpu").get_weights())
    for key in ("value_mae", "value_sign_error", "policy_regret", "optimal_move_rate"):
        assert 0 <= m[f"eval/hex-uniform/{key}"] <= 2, key
    assert m["eval/hex-play/games"] == 4 and 0 <= m["eval/hex-play/error_rate"] <= 1
    assert m["eval/hex-play/error_games"] <= m["eval/hex-play/blunder_games"] + m["eval/hex-play/games"]


def test_an_openings_build_seeks_lost_ones_among_first_moves_proved_to_lose():
    # A two-ply position is lost for Black only after a losing first move, so once the won
    # ones are full the builder asks the classes whose first move has a lost reply first.
    # On 4x4 (13 of the 120 classes lost) that finds 4 lost ones in fewer questions than the
    # plain seeded order, which is counted here from the exact values of every class.
    g = games.make("hex", size=4)
    pool = hex_rotation_classes(g, 2)
    values = HexOracle(g).values(g.from_moves(pool))  # exact: the oracle's tests above
    seen = {1: 0, -1: 0}
    for asked, i in enumerate(np.random.default_rng(0).permutation(len(pool)), 1):
        seen[int(values[i])] += 1
        if min(seen.values()) >= 4:
            break
    oracle = HexOracle(g)
    moves, records, _, _ = balanced_hex_openings(g, oracle, 4, seed=0, log=lambda m: None, chunk=1)
    assert oracle.worker.stats()["queries"] < asked
    assert [r.value for r in records] == [1, -1] * 4
    assert [r.value for r in records] == [int(values[pool.index(m)]) for m in moves]


def test_an_openings_build_asks_an_unknown_position_again_only_under_a_larger_limit(tmp_path):
    g = games.make("hex", size=3)
    pool = hex_rotation_classes(g, 2)
    first = pool[int(np.random.default_rng(0).permutation(len(pool))[0])]
    progress = tmp_path / "progress.jsonl"
    progress.write_text(json.dumps({"moves": first, "unknown": True, "time_limit": 1000.0}) + "\n")
    oracle = HexOracle(g, time_limit=60.0)
    _, _, given_up, _ = balanced_hex_openings(g, oracle, 1, seed=0, log=lambda m: None, progress=progress, chunk=1)
    assert first in given_up
    assert all(json.loads(line)["moves"] != first for line in progress.read_text().splitlines()[1:])
    # Left unknown under a smaller limit than this build's: asked again, answered, recorded.
    progress.write_text(json.dumps({"moves": first, "unknown": True, "time_limit": 1.0}) + "\n")
    _, _, given_up, _ = balanced_hex_openings(g, HexOracle(g, time_limit=60.0), 2, seed=0, log=lambda m: None,
                                              progress=progress, chunk=1)
    answered = [json.loads(line) for line in progress.read_text().splitlines()[1:]]
    assert first not in given_up
    assert any(a["moves"] == first and a["value"] == value_after(first, 3) for a in answered)
