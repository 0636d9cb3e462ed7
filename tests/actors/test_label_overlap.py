"""AZAL's labels asked without waiting (algorithms/azal.py, actors/labels.py): self-play
that searches on while Ray oracle replicas solve gives the rows, the order and the labels
of self-play labelled at once by an in-process worker."""

from __future__ import annotations

import numpy as np
import pytest

import games
from actors.labels import OracleLabeler
from algorithms.azal import AzalCollector
from oracle_service.service import OracleClient, OracleWorker
from search.evaluators import UniformEvaluator
from search.mcts import MCTSConfig

SEARCH = MCTSConfig(simulations=8)  # noise and temperature 1: varied games
ENVS, STEPS, SEED = 8, 26, 3


class QueueWatch:
    """The uniform evaluator, noting how many finished games wait for their labels at
    each of its calls, i.e. while the search runs."""

    def __init__(self, game):
        self.inner, self.collector, self.waiting = UniformEvaluator(game), None, []

    def __call__(self, states):
        self.waiting.append(len(self.collector.unlabelled))
        return self.inner(states)


def test_labels_asked_during_search_are_those_of_labelling_at_once(ray_session, tmp_path):
    game = games.make("connect4")
    at_once = AzalCollector(game, ENVS, mcts=SEARCH, seed=SEED, labeler=OracleLabeler(
        game, OracleWorker(store=str(tmp_path / "at_once.sqlite"), tt_log2_size=20)))
    expected = at_once.collect(UniformEvaluator(game), STEPS)

    client = OracleClient(num_replicas=2, store=str(tmp_path / "overlap.sqlite"), replica_options={"num_cpus": 0},
                          tt_log2_size=20)
    try:
        overlapped = AzalCollector(game, ENVS, mcts=SEARCH, seed=SEED, labeler=OracleLabeler(game, client))
        watch = QueueWatch(game)
        watch.collector = overlapped
        got = overlapped.collect(watch, STEPS)
    finally:
        client.close()

    assert max(watch.waiting) > 0, "the search never ran while labels were on their way"
    assert not overlapped.unlabelled  # collect returns every finished game's rows
    assert set(got) == set(expected) == {"obs", "target", "policy", "aux_policy"}
    assert len(expected["target"]) > 50 and overlapped.games_finished == at_once.games_finished
    for key in expected:  # the same rows, in the same order, with the same labels
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
    # Every ply is labelled (min_ply 0): a target over the legal moves, summing to 1.
    np.testing.assert_allclose(got["aux_policy"].sum(axis=1), 1.0, rtol=1e-5)
    overlapped.get_state()  # nothing waits between calls: a checkpoint loses no rows


@pytest.mark.slow
def test_a_checkpoint_refuses_rows_still_waiting_for_labels(tmp_path):
    game = games.make("connect4")
    collector = AzalCollector(game, 4, mcts=SEARCH, seed=SEED, labeler=OracleLabeler(
        game, OracleWorker(store=str(tmp_path / "s.sqlite"), tt_log2_size=20)))
    histories = [[3, 3, 2]]
    collector.unlabelled.append(({"target": np.zeros(1, np.float32)},
                                 collector.labeler.submit(game.from_moves(histories), histories)))
    with pytest.raises(RuntimeError, match="waiting for their labels"):
        collector.get_state()
