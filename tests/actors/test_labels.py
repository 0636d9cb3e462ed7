"""AZAL's oracle labels (actors/labels.py) against the solver and the Grundy tables,
with the real oracle worker (the logic of the Ray replicas) and a real store file."""

from __future__ import annotations

import numpy as np
import pytest

import games
from actors.labels import SMOOTHING, OracleLabeler
from games.testing import random_move_lists
from oracle_service.chomp_grundy import ChompTable
from oracle_service.connect4_solver import Connect4Solver
from oracle_service.service import OracleWorker
from oracle_service.store import NullStore, Solved, connect4_key, open_store
from tests.oracle.test_connect4_solver_sizes import PlainNegamax, _drop


def smoothed(legal_row, optimal_cols):
    q = np.where(legal_row, SMOOTHING, 0.0)
    q[list(optimal_cols)] += 1.0
    return q / q.sum()


@pytest.mark.parametrize("width,height,min_plies", [(4, 4, 2), (5, 4, 10)])
def test_connect4_labels_at_a_small_board_are_the_plain_negamax_best_moves(width, height, min_plies):
    """Another board than 7x6 is labelled by the service's solver of that board, every ply
    (the 7x6 store and min_ply do not apply): the targets put their mass on the columns of
    maximal score by a memoised negamax over every move written for the tests."""
    game = games.make("connect4", width=width, height=height)
    worker = OracleWorker(store=NullStore(), tt_log2_size=20)
    labeler = OracleLabeler(game, worker, min_ply=12)
    histories = random_move_lists(game, 40, np.random.default_rng(1), max_plies=width * height - 2,
                                  min_plies=min_plies)
    states = game.from_moves(histories)
    q = labeler.label(states, histories)
    ref = PlainNegamax(width, height)
    for i, h in enumerate(histories):
        cols = ((),) * width
        for c in h:
            cols = _drop(cols, c, sum(map(len, cols)) % 2)
        scores = ref.column_scores(cols)
        best = max(v for v in scores if v is not None)
        expected = smoothed(game.legal(games.take(states, [i]))[0], [c for c, v in enumerate(scores) if v == best])
        np.testing.assert_allclose(q[i], expected, rtol=1e-6)
    assert labeler.stats().oracle_queries == 40 and labeler.stats().store_labels == 0
    # A position the board does not have is the oracle's error, not a label.
    answer = worker.connect4_board_best_moves(width, height, ["1" * (height + 1)])[0]
    assert not answer.ok and f"{width}x{height}" in answer.error


def test_connect4_labels_are_the_solver_best_moves(tmp_path):
    game = games.make("connect4")
    worker = OracleWorker(store=str(tmp_path / "store.sqlite"), tt_log2_size=20)
    labeler = OracleLabeler(game, worker, min_ply=12)
    histories = random_move_lists(game, 12, np.random.default_rng(0), max_plies=29, min_plies=12)
    histories.append(histories[0])  # a duplicate: asked once
    states = game.from_moves(histories)
    q = labeler.label(states, histories)
    solver = Connect4Solver(tt_log2_size=20)
    for i, h in enumerate(histories):
        analysis = solver.analyze(h)
        best = max(s for s in analysis if s is not None)
        expected = smoothed(game.legal(games.take(states, [i]))[0], [c for c, s in enumerate(analysis) if s == best])
        np.testing.assert_allclose(q[i], expected, rtol=1e-6)
    assert labeler.stats().oracle_queries == 13 and labeler.stats().oracle_unique == 12


def test_early_connect4_positions_come_from_the_store_only(tmp_path):
    game = games.make("connect4")
    store_path = str(tmp_path / "store.sqlite")
    worker = OracleWorker(store=store_path, tt_log2_size=20)
    labeler = OracleLabeler(game, worker, min_ply=12, store=store_path)
    early = [[3, 3, 2], [0, 1]]  # 3 and 2 stones: below min_ply, not sent to the solver
    q = labeler.label(game.from_moves(early), early)
    assert not q.any() and labeler.stats().oracle_queries == 0
    # An analysis in the store, written through the mirror image of the first position:
    # the label must come back in the position's own orientation.
    analysis = (-2, -1, 0, 1, 2, -1, -2)  # made up (the store is trusted): "3 3 4"'s best is column 4
    key, mirrored = connect4_key([3, 3, 4])  # the mirror of "3 3 2" (columns 6 - c)
    open_store(store_path).put_many([(key, Solved(2, analysis).oriented(mirrored))])
    q = labeler.label(game.from_moves(early), early)
    legal = game.legal(game.from_moves(early[:1]))[0]
    np.testing.assert_allclose(q[0], smoothed(legal, [2]), rtol=1e-6)  # its mirror image, column 2
    assert not q[1].any() and labeler.stats().store_labels == 1


def test_chomp_labels_are_the_moves_to_grundy_zero(tmp_path):
    game = games.make("chomp", rows=4, cols=5)
    labeler = OracleLabeler(game, OracleWorker(store=str(tmp_path / "s.sqlite"), chomp_cache_dir=str(tmp_path)))
    histories = random_move_lists(game, 40, np.random.default_rng(1), max_plies=5)
    states = game.from_moves(histories)
    q = labeler.label(states, histories)
    table = ChompTable(4, 5, cache_dir=str(tmp_path))
    legal = game.legal(states)
    grundy_zero = 0
    for i in range(len(histories)):
        profile = np.asarray(states.profile[i]).tolist()
        if table.grundy(profile) == 0:  # no winning move: unlabelled
            grundy_zero += 1
            assert not q[i].any()
        else:
            np.testing.assert_allclose(q[i], smoothed(legal[i], table.winning_actions(profile)), rtol=1e-6)
    assert 0 < grundy_zero < len(histories)


def test_games_without_an_oracle_are_refused():
    with pytest.raises(ValueError, match="AZAL labels exist for connect4, chomp, not for 'hex'"):
        OracleLabeler(games.make("hex"), client=None)
