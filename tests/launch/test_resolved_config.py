"""Every ``auto`` of a run's config made concrete once, from what Ray reports, before any
actor starts (issue 37 point 1's resolve step), and the ``node`` preset sized for a GPU node
there (issue 36): the learner and two inference servers on the GPU, the other CPUs
stepping games, the papers' batch and replay ratio kept."""

from __future__ import annotations

import json

import pytest

from launch.config import ConfigError, resolve, resolved, validate


def test_autos_on_a_cpu_machine():
    config = resolved(resolve("connect4"), cpus=2, gpus=0)
    assert (config.learner.device, config.actors.inference_device, config.actors.eval_cache) == ("cpu", "cpu", "cache")
    az = resolved(resolve("connect4", algo="alphazero"), cpus=2, gpus=0)
    assert az.actors.eval_cache == "off"  # not yet shown to pay for the search's leaves
    # Nothing else changes, and a resolved config resolves to itself.
    assert resolved(config, cpus=2, gpus=0) == config
    assert config.actors.num_envs == resolve("connect4").actors.num_envs


def test_autos_with_a_gpu_and_explicit_values_kept():
    config = resolved(resolve("connect4", overrides=["actors.num_actors=2", "actors.inference_servers=2"]), cpus=8, gpus=1)
    assert (config.learner.device, config.actors.inference_device) == ("cuda", "cuda")  # the servers share the learner's GPU
    kept = resolved(resolve("connect4", overrides=["learner.device=cpu", "actors.eval_cache=batch"]), cpus=8, gpus=1)
    assert (kept.learner.device, kept.actors.eval_cache) == ("cpu", "batch")


def test_the_node_preset_sizes_a_gpu_node_from_its_resources():
    paper = resolve("connect4")
    node = resolved(resolve("connect4", "node"), cpus=16, gpus=1)
    validate(node)
    assert node.preset == "node" and node.actors.num_actors == 12 and node.actors.num_envs == 12 * 1024
    assert (node.actors.inference_servers, node.actors.inference_device, node.actors.eval_cache) == (2, "cuda", "off")
    assert node.schedule == "async" and node.learner.batches_per_request == 64 and node.learner.device == "cuda"
    # The paper's learning hyperparameters: batch 256, 64 rows per update (4 samples per row).
    assert (node.learner.batch_size, node.learner.lr, node.actors.epsilon) == (
        paper.learner.batch_size, paper.learner.lr, paper.actors.epsilon)
    assert node.learner.batch_size / node.samples_per_insert == 64
    # AlphaZero's actors need priors: no inference servers for it.
    az = resolved(resolve("connect4", "node", algo="alphazero"), cpus=16, gpus=1)
    validate(az)
    assert az.actors.inference_servers == 0 and az.actors.num_actors == 12
    # Without a GPU the node preset is the paper's.
    cpu = resolved(resolve("connect4", "node"), cpus=2, gpus=0)
    assert cpu.actors.num_envs == paper.actors.num_envs and cpu.schedule == paper.schedule


def test_an_impossible_count_is_refused():
    with pytest.raises(ConfigError, match="batches_per_request must be >= 1"):
        resolve("connect4", overrides=["learner.batches_per_request=0"])


def test_the_search_is_chosen_by_name_with_gumbel_parameters_nested():
    from launch.config import TrainConfig

    config = resolve("connect4", overrides=["actors.search=gumbel", "actors.gumbel.max_considered=4"], algo="alphazero")
    assert (config.actors.search, config.actors.gumbel.max_considered) == ("gumbel", 4)
    assert TrainConfig.from_dict(json.loads(config.to_json())) == config  # config.json round trip
    with pytest.raises(ConfigError, match="search must be one of puct, gumbel, got 'mcts'"):
        resolve("connect4", overrides=["actors.search=mcts"], algo="alphazero")
    with pytest.raises(ConfigError, match="actors.search=gumbel is a search for AlphaZero and AZAL"):
        resolve("connect4", overrides=["actors.search=gumbel"])
    with pytest.raises(ConfigError, match="max_considered must be >= 1"):
        resolve("connect4", overrides=["actors.gumbel.max_considered=0"], algo="alphazero")
