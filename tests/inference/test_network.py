"""A weight version's forward on game states (``inference.network``): the search reads
values clipped to the game's bounds, the value head's own values are left as they are,
and a network without a policy head gives the search uniform priors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import games
from inference.network import VALUE_BOUNDS, NetworkEvaluator, ValueFunction
from inference.networks import NetworkConfig, build_network
from inference.tensors import numpy_weights

TTT = games.make("tictactoe")
TINY = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=8)


def out_of_bounds(config: NetworkConfig, bias: float) -> dict:
    """Weights whose value head answers about ``bias`` everywhere: beyond [-1, 1]."""
    net = build_network(TTT, config)
    with torch.no_grad():
        for module in net.modules():
            head = getattr(module, "value_head", None)
            if head is not None:
                head[-1].weight.zero_()
                head[-1].bias.fill_(bias)
    return numpy_weights(net)


@pytest.mark.parametrize("policy_head", [False, True])
def test_evaluate_clips_the_values_it_gives_the_search_and_value_does_not(policy_head):
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=8, policy_head=policy_head)
    states = TTT.from_moves([[], [4], [4, 0, 8]])
    for bias in (3.0, -3.0):
        network = ValueFunction(TTT, config)
        network.set_weights(out_of_bounds(config, bias), version=0)
        logits, values = network.evaluate(states)
        assert values.dtype == np.float32 and values.shape == (3,)
        assert (values == (VALUE_BOUNDS[1] if bias > 0 else VALUE_BOUNDS[0])).all()
        np.testing.assert_allclose(network.value(states), bias, atol=1e-5)  # the head's own, unclipped
        assert logits.shape == (3, TTT.num_actions) and logits.dtype == np.float32
        if not policy_head:
            assert (logits == 0).all()  # uniform priors
        assert network.samples_forward == 6  # evaluate and value: 3 states each, cost 1


def test_the_search_evaluator_needs_a_policy_head_and_answers_evaluate():
    with pytest.raises(ValueError, match="policy_head must be True"):
        NetworkEvaluator(TTT, TINY)
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=8, policy_head=True)
    evaluator = NetworkEvaluator(TTT, config)
    evaluator.set_weights(out_of_bounds(config, 2.0), version=1)
    states = TTT.from_moves([[], [1, 2]])
    logits, values = evaluator(states)
    expected_logits, expected_values = ValueFunction.evaluate(evaluator, states)
    np.testing.assert_array_equal(logits, expected_logits)
    np.testing.assert_array_equal(values, expected_values)
    assert (values == 1.0).all()


def test_logits_without_a_policy_head_are_refused():
    network = ValueFunction(TTT, TINY)
    network.set_weights(numpy_weights(build_network(TTT, TINY)), version=0)
    with pytest.raises(ValueError, match="no policy head"):
        network.logits(TTT.init(1))
