"""A new algorithm is one module: a toy algorithm (AVI whose row target is the value of its
own epsilon-greedy policy, expected SARSA's, trained by a Huber loss) written to a
temporary module with its collector, its loss and its descriptor, registered with
``algorithms.register``, then trained by ``launch.train`` on tic-tac-toe on a real Ray,
evaluated from its checkpoint and played on the board, with no edit anywhere else."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap

import numpy as np
import pytest

import algorithms
import games

TOY_MODULE = '''
"""Expected AVI: AVI's epsilon-greedy one-step lookahead, each row's target the value of
that policy, (1 - eps) max_a q(s, a) + eps mean_{legal a} q(s, a), not the greedy maximum;
trained by a Huber loss."""
import numpy as np
import torch.nn.functional as F

from actors.avi import AviCollector
from actors.collectors import avi_options, value_function
from algorithms.descriptors import AlgorithmDescriptor
from learner.losses import Loss


def expected_targets(q, epsilon):
    legal = np.isfinite(q)
    mean = np.where(legal, q, 0.0).sum(axis=1) / legal.sum(axis=1)
    return ((1 - epsilon) * q.max(axis=1) + epsilon * mean).astype(np.float32)


class ExpectedCollector(AviCollector):
    def rows(self, obs, target, q):
        return super().rows(obs, expected_targets(q, self.epsilon), q)


def expected_avi(setup):
    return value_function(setup), ExpectedCollector(setup.game, setup.num_envs, gamma=setup.gamma,
                                                    seed=setup.seed, **avi_options(setup.config))


def huber(value, logits, y, pi):
    loss = F.smooth_l1_loss(value, y)
    return loss, [loss.detach()]


DESCRIPTOR = AlgorithmDescriptor(
    name="expected_avi", title="Expected AVI", collector=expected_avi, loss=Loss(("huber_loss",), huber),
    eval_cache="cache", inference_server=True, report_policy="greedy")
'''

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64", "evaluation.every=1", "checkpoint_every=1"]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy algorithm's module, imported from a temporary file and registered; Ray's
    workers, which cannot import it, get its pieces by value with the run's descriptor."""
    from ray import cloudpickle

    (tmp_path / "expected_avi_algo.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("expected_avi_algo")
    cloudpickle.register_pickle_by_value(module)
    algorithms.register(module.DESCRIPTOR)
    yield module
    algorithms.unregister("expected_avi")
    cloudpickle.unregister_pickle_by_value(module)
    sys.modules.pop("expected_avi_algo", None)


def test_the_registry_names_its_algorithms_and_refuses_unknown_ones(toy):
    assert algorithms.names()[:3] == ["avi", "alphazero", "azal"] and "expected_avi" in algorithms.names()
    assert algorithms.descriptor("expected_avi") is toy.DESCRIPTOR
    with pytest.raises(ValueError, match="algorithm 'expected_avi' is already registered"):
        algorithms.register(toy.DESCRIPTOR)
    with pytest.raises(ValueError, match="unknown algorithm 'muzero'; known algorithms: avi, alphazero, azal"):
        algorithms.descriptor("muzero")
    with pytest.raises(ValueError, match="algorithm 'avi' was not added by algorithms.register"):
        algorithms.unregister("avi")


def test_the_toy_collector_stores_its_own_target(toy):
    """Built through the descriptor as an actor builds it: the rows' targets are the
    epsilon-greedy policy's value of the one-step values, computed here from the children."""
    from actors.collectors import CollectorSetup
    from actors.config import SelfPlayConfig
    from learner.learner import Learner
    from inference.networks import NetworkConfig

    game, network = games.make("tictactoe"), NetworkConfig(kind="mlp", width=16, blocks=1, layers_per_block=1)
    setup = CollectorSetup(game=game, network=network, config=SelfPlayConfig(epsilon=0.5), num_envs=8, seed=0,
                           gamma=1.0, eval_cache="off")
    value_fn, collector = algorithms.descriptor("expected_avi").piece("collector")(setup)
    value_fn.set_weights(Learner(game, network, seed=1).get_weights(), 0)
    states = collector.state
    rows = collector.step(value_fn)  # from the empty board: every move legal, none ends the game
    exp = game.expand(states)
    child_v = value_fn(game.encode(exp.children)).reshape(8, game.num_actions)
    q = -child_v  # r = 0, V of the child is the opponent's
    expected = 0.5 * q.max(axis=1) + 0.5 * q.mean(axis=1)
    np.testing.assert_allclose(rows["target"], expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(rows["target"], q.max(axis=1))  # not AVI's target


def test_the_toy_algorithm_trains_on_ray_is_evaluated_and_played_on_the_board(toy, ray_session, tmp_path):
    from board.agents import load_agent
    from board.session import Session, Table
    from evaluation.runner import evaluate_checkpoint
    from launch.config import resolve
    from launch.metrics import read_metrics
    from launch.train import train

    config = resolve("tictactoe", "small", TINY, algo="expected_avi")
    assert not config.network.policy_head  # its preset: the game's, as its descriptor changes nothing
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=2 * config.updates_per_iteration,
                          wandb_mode="disabled")
    assert last["updates"] == 2 * config.updates_per_iteration
    # The learner (in its own process) trained the toy's loss: its metric is the toy's.
    assert np.isfinite(last["huber_loss"]) and last["huber_loss"] == pytest.approx(last["loss"])
    records = read_metrics(run_dir)
    assert 0.0 <= records[-1]["eval/value_mae"] <= 2.0 and "eval/policy_regret" in records[-1]
    assert json.loads((run_dir / "config.json").read_text())["algo"] == "expected_avi"

    checkpoint = last["checkpoint"]
    metrics = evaluate_checkpoint(checkpoint, "tictactoe", algo="expected_avi", oracle_store=None)
    assert 0.0 <= metrics["eval/tictactoe-states/value_mae"] <= 2.0

    game, agent = load_agent(checkpoint, "tictactoe")
    session = Session(Table(game, agent), human=0)
    session.move(4)  # the centre; the agent answers
    assert len(session.moves) == 2 and session.moves[1] != 4
