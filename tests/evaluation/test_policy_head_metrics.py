"""The run's built-in policy-head metrics (``evaluation.exact.policy_head_metrics``, logged
as ``eval/policy_head/...`` on tic-tac-toe) agree with the suite runner playing the policy
head through the policy registry, a separate path to the same moves."""

from __future__ import annotations

import pytest

import algorithms
import games
from evaluation.config import EvaluationConfig
from evaluation.exact import exact_labels, policy_head_metrics
from evaluation.runner import SuiteRunner
from learner.learner import Learner
from inference.network import ValueFunction
from inference.networks import NetworkConfig


@pytest.mark.parametrize("seed", [0, 1])
def test_policy_head_metrics_agree_with_the_suite_runner(seed):
    game = games.make("tictactoe")
    network = NetworkConfig(kind="mlp", width=16, blocks=1, layers_per_block=1, policy_head=True)
    weights = Learner(game, network, loss=algorithms.descriptor("alphazero"), seed=seed).get_weights()
    value_fn = ValueFunction(game, network)
    value_fn.set_weights(weights, 0)
    ours = policy_head_metrics(game, exact_labels(game), value_fn.forward)
    runner = SuiteRunner(game, network, evaluation=EvaluationConfig(policy="policy-head"), oracle_store=None)
    theirs = runner.evaluate(weights)
    assert ours["policy_regret"] == pytest.approx(theirs["eval/tictactoe-states/policy_regret"], abs=1e-6)
    assert ours["optimal_move_rate"] == pytest.approx(theirs["eval/tictactoe-states/optimal_move_rate"], abs=1e-9)
    assert 0 < ours["optimal_move_rate"] < 1  # an untrained head: some moves right, some wrong
