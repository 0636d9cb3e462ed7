"""The leaf evaluators: the network's against its torch module, random playouts against
the exact expectation of uniform play, priors and values crossed, and a full search
with a network counting its compute."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import games
from inference.tensors import numpy_weights
from inference.networks import PRESET_NETWORKS, NetworkConfig, build_network
from search import (
    MCTS,
    CrossEvaluator,
    MCTSConfig,
    RolloutEvaluator,
    UniformEvaluator,
)
from inference.network import NetworkEvaluator

TTT = games.make("tictactoe")
C4 = games.make("connect4")
SMALL_C4 = NetworkConfig("mlp", width=32, blocks=1, layers_per_block=1, head_width=16, policy_head=True,
                         symmetrize=True)


def trained_weights(game, config, seed=0):
    torch.manual_seed(seed)
    return numpy_weights(build_network(game, config))


def test_network_evaluator_matches_its_network_in_chunks_and_counts_symmetric_images():
    states = games.take(C4.from_moves([[], [3], [3, 3, 2, 4], [0, 1, 2, 3, 4, 5, 6]]), [0, 1, 2, 3, 1, 2, 0])
    weights = trained_weights(C4, SMALL_C4)
    reference = build_network(C4, SMALL_C4).eval()
    reference.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    with torch.no_grad():
        out = reference(torch.from_numpy(C4.encode(states)))
    evaluator = NetworkEvaluator(C4, SMALL_C4, max_batch=3)  # 7 states in chunks of 3, 3, 1
    with pytest.raises(RuntimeError, match="before set_weights"):
        evaluator(states)
    evaluator.set_weights(weights, version=5)
    logits, values = evaluator(states)
    assert evaluator.version == 5
    assert logits.dtype == np.float32 and logits.shape == (7, 7) and values.shape == (7,)
    np.testing.assert_allclose(logits, out.logits.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values, np.clip(out.value.numpy(), -1, 1), rtol=1e-5, atol=1e-6)
    assert evaluator.samples_forward == 7 * 2  # the board and its mirror image


def test_network_evaluator_needs_a_policy_head():
    with pytest.raises(ValueError, match="policy_head"):
        NetworkEvaluator(C4, PRESET_NETWORKS["connect4"])


def test_search_with_a_network_counts_one_evaluation_per_leaf():
    config = dataclasses.replace(PRESET_NETWORKS["tictactoe"], policy_head=True)
    evaluator = NetworkEvaluator(TTT, config)
    evaluator.set_weights(trained_weights(TTT, config), version=0)
    states = TTT.from_moves([[], [4], [0, 4, 8]])
    result = MCTS(TTT, MCTSConfig(simulations=32)).search(states, evaluator, np.random.default_rng(0))
    assert result.visits.sum(axis=1).tolist() == [32, 32, 32]
    np.testing.assert_allclose(result.policy.sum(axis=1), 1.0, rtol=1e-6)
    assert (result.visits[TTT.legal(states) == 0] == 0).all()
    assert evaluator.samples_forward == result.evaluations  # an unsymmetrized net: cost 1
    assert 3 < result.evaluations <= 3 * 33
    assert (np.abs(result.root_value) <= 1).all()


def uniform_play_value(game, state):
    """Exact expected outcome of uniformly random play from the one-element ``state``,
    for its player to move, by recursion over every move."""
    legal = np.flatnonzero(game.legal(state)[0])
    total = 0.0
    for a in legal:
        child, reward, done = game.step(state, np.array([a]))
        total += float(reward[0]) - (0.0 if done[0] else uniform_play_value(game, child))
    return total / len(legal)


def test_rollouts_estimate_the_uniform_play_value():
    positions = [[4, 0], [0, 4, 8, 2, 6], [4, 0, 8, 2, 1, 7], [0, 1, 2, 4, 3, 5], [4, 0, 2, 6, 3, 5, 1]]
    states = TTT.from_moves(positions)
    exact = np.array([uniform_play_value(TTT, games.take(states, [i])) for i in range(len(positions))])
    assert len(set(np.round(exact, 6))) >= 3  # positions of different values
    rollouts = 4000
    logits, values = RolloutEvaluator(TTT, rollouts=rollouts, seed=1)(states)
    assert logits.shape == (5, 9) and not logits.any()
    assert np.abs(values - exact).max() < 4 * np.sqrt(1.0 / rollouts)  # outcomes in [-1, 1]: sd <= 1
    again = RolloutEvaluator(TTT, rollouts=rollouts, seed=1)(states)[1]
    np.testing.assert_array_equal(values, again)


def test_a_single_rollout_of_a_forced_win_is_exact():
    state = TTT.from_moves([[0, 1, 2, 3, 4, 5, 7, 6]])  # one empty cell, and it wins
    assert RolloutEvaluator(TTT, rollouts=1)(state)[1].tolist() == [1.0]


def test_uniform_and_cross_evaluators():
    states = TTT.from_moves([[], [4], [4, 0]])
    logits, values = UniformEvaluator(TTT)(states)
    assert logits.shape == (3, 9) and not logits.any() and values.tolist() == [0, 0, 0]
    valued = UniformEvaluator(TTT, lambda s: s.moves.astype(np.float32) / 10)
    assert valued(states)[1].tolist() == pytest.approx([0.0, 0.1, 0.2])

    def prior(s):
        return np.tile(np.arange(9, dtype=np.float32), (len(s[0]), 1)), np.full(len(s[0]), 0.5, np.float32)

    logits, values = CrossEvaluator(prior, valued)(states)
    assert (logits == np.arange(9)).all() and values.tolist() == pytest.approx([0.0, 0.1, 0.2])
