"""Weights published with ray.put reach a task in another process and give the same
values there as here."""

from __future__ import annotations

import os

import numpy as np
import pytest

import games
from learner.learner import Learner
from inference.network import ValueFunction
from inference.networks import NetworkConfig
from learner.weights import WeightVersion, publish

CONFIG = NetworkConfig("mlp", width=32, head_width=16, symmetrize=True)


def test_published_weights_give_the_same_values_in_a_remote_task(ray_session):
    ray = ray_session
    game = games.make("connect4")
    learner = Learner(game, CONFIG, device="cpu", seed=0)
    rng = np.random.default_rng(0)
    learner.train_step({"obs": rng.integers(0, 2, size=(16, *game.obs_shape), dtype=np.uint8),
                        "target": rng.uniform(-1, 1, 16).astype(np.float32)})
    published = publish(learner.get_weights(), version=learner.updates)
    assert isinstance(published, WeightVersion) and published.version == 1

    obs = rng.integers(0, 2, size=(50, *game.obs_shape)).astype(np.float32)

    @ray.remote
    def evaluate(record, obs):
        import games as remote_games
        from inference.network import ValueFunction as RemoteValueFunction

        # The record's ref is nested, so Ray hands it over unresolved, as to an actor.
        values = RemoteValueFunction(remote_games.make("connect4"), CONFIG)
        values.set_weights(ray.get(record.ref), record.version)  # read-only arrays from the store
        return os.getpid(), values.version, values(obs)

    pid, version, remote_values = ray.get(evaluate.remote(published, obs))
    local = ValueFunction(game, CONFIG)
    local.set_weights(learner.get_weights(), 1)
    assert pid != os.getpid()
    assert version == 1
    np.testing.assert_allclose(remote_values, local(obs), rtol=1e-5, atol=1e-6)
    # Another learner's weights give other values: the comparison can fail.
    local.set_weights(Learner(game, CONFIG, device="cpu", seed=1).get_weights(), 0)
    assert not np.allclose(remote_values, local(obs), rtol=1e-3)


def test_publish_checks_its_input():
    with pytest.raises(ValueError, match="version must be an integer >= 0"):
        publish({}, version=-1)
    with pytest.raises(TypeError, match="'w' is a list"):
        publish({"w": [1.0]}, version=0)
