"""Every ``auto`` of a run's config made concrete once, from what Ray reports, before any
actor starts (the resolve step, ``launch.config.resolved``), and the ``node`` preset sized for
a GPU node there: the learner and two inference servers on the GPU, the other CPUs
stepping games, the papers' batch and replay ratio kept."""

from __future__ import annotations

import json

import pytest

from launch.config import ConfigError, TrainConfig, resolve, resolved, validate
from learner.config import auto_precision
from inference.machine import this_cpu


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
    with pytest.raises(ConfigError, match="keep_checkpoints_every must be >= 0"):
        resolve("connect4", overrides=["keep_checkpoints_every=-256"])


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


def test_precision_and_threads_are_resolved_for_the_machine_and_the_schedule():
    """auto precision: this CPU's check, the choice and its reason in config.json; auto
    threads: every core for each phase of the synchronous schedule, 1 under the
    asynchronous one or for a GPU learner; explicit values kept."""
    config = resolved(resolve("connect4"), cpus=2, gpus=0)
    expected = auto_precision("cpu", this_cpu(), config.network)
    assert (config.learner.precision, config.learner.precision_note) == expected
    assert config.learner.precision == ("bf16" if this_cpu().native else "fp32")
    assert json.loads(config.to_json())["learner"]["precision_note"] == expected[1]
    assert (config.learner.threads, config.actors.threads) == (2, 2)  # sync: the learner, then one actor
    four = resolved(resolve("connect4", overrides=["actors.num_actors=2"]), cpus=8, gpus=0)
    assert (four.learner.threads, four.actors.threads) == (8, 4)
    served = resolved(resolve("connect4", overrides=["actors.num_actors=4", "actors.inference_servers=1"]), cpus=8, gpus=0)
    assert served.actors.threads == 8  # the one server evaluates for every actor
    # AZAL's oracle replicas solve while the actors collect: a core each is left to them.
    azal = resolved(resolve("connect4", algo="azal"), cpus=2, gpus=0)
    assert (azal.learner.threads, azal.actors.threads) == (2, 2 - azal.oracle.replicas)
    assert resolved(resolve("connect4", algo="azal", overrides=["oracle.replicas=3"]), cpus=8,
                    gpus=0).actors.threads == 5
    assert resolved(resolve("tictactoe"), cpus=2, gpus=0).learner.precision == "fp32"  # width 64
    concurrent = resolved(resolve("connect4", overrides=["schedule=async"]), cpus=8, gpus=0)
    assert (concurrent.learner.threads, concurrent.actors.threads) == (1, 1)
    gpu = resolved(resolve("connect4"), cpus=8, gpus=1)
    assert (gpu.learner.precision, gpu.learner.threads) == ("fp32", 1)
    today = resolved(resolve("connect4", overrides=["learner.precision=fp32", "learner.threads=1", "actors.threads=1"]),
                     cpus=2, gpus=0)
    assert (today.learner.precision, today.learner.precision_note, today.learner.threads, today.actors.threads) == (
        "fp32", "set in the config", 1, 1)
    assert resolved(config, cpus=2, gpus=0) == config  # a resolved config resolves to itself
    assert TrainConfig.from_dict(json.loads(config.to_json())) == config  # and reads back from config.json
    assert TrainConfig.from_dict(json.loads(resolve("connect4").to_json())).actors.threads == "auto"
    with pytest.raises(ConfigError, match="threads must be auto or an integer >= 1"):
        resolve("connect4", overrides=["actors.threads=none"])
