"""The algorithm registry (algorithms/): every built-in descriptor names pieces that exist
and agree with each other, AZAL's presets build on AlphaZero's, and a bad descriptor is
refused naming the problem."""

from __future__ import annotations

import json

import pytest

import algorithms
from algorithms.descriptors import AlgorithmDescriptor
from algorithms.hybrid import HybridSettings
from launch.config import ConfigError, TrainConfig, resolve
from learner.losses import Loss
from replay.rows import AUX_POLICY, POLICY


@pytest.mark.parametrize("name", list(algorithms.BUILTIN))
def test_every_builtin_descriptor_names_pieces_that_exist(name):
    described = algorithms.descriptor(name)
    assert described.name == name and algorithms.descriptor(described) is described
    assert callable(described.piece("collector")) and isinstance(described.piece("loss"), Loss)
    assert set(described.policy_columns) <= {POLICY, AUX_POLICY}
    if described.builds_on:
        assert described.builds_on in algorithms.names()


def test_the_hybrid_trains_alphazero_s_loss_on_avi_s_collection():
    hybrid, avi, alphazero = map(algorithms.descriptor, ("hybrid", "avi", "alphazero"))
    assert hybrid.piece("loss") is alphazero.piece("loss") and hybrid.policy_columns == (POLICY,)
    assert hybrid.policy_head and not hybrid.rows_from_finished_games and not hybrid.gumbel
    assert (hybrid.eval_cache, hybrid.inference_server, hybrid.report_policy) == (
        avi.eval_cache, avi.inference_server, avi.report_policy)
    assert algorithms.preset_changes("avi", "fgame") == {}
    assert algorithms.preset_changes("hybrid", "fgame") == {"evaluation.policy": "greedy"}  # its value head, as AVI


def test_the_hybrid_owns_its_settings_and_takes_them_as_algorithm_keys():
    hybrid = algorithms.descriptor("hybrid")
    assert hybrid.settings == HybridSettings(temperature=0.1) and hybrid.setting_names() == ("temperature",)
    assert algorithms.configured("hybrid", {"temperature": 0.5}).settings.temperature == 0.5
    assert algorithms.configured("avi", {}) is algorithms.descriptor("avi")  # no settings of its own
    with pytest.raises(ValueError, match="no setting algorithm.temp"):
        hybrid.configured({"temp": 0.5})
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        hybrid.configured({"temperature": -1.0})
    # The config: algorithm.temperature, its defaults written out; the key it had before still works.
    assert resolve("tictactoe", "small", algo="hybrid").algorithm == {"temperature": 0.1}
    assert resolve("tictactoe", "small", algo="avi").algorithm == {}
    for key in ("algorithm.temperature", "actors.hybrid_temperature"):
        assert resolve("tictactoe", "small", [f"{key}=0.3"], algo="hybrid").algorithm == {"temperature": 0.3}
    with pytest.raises(ConfigError, match="is now algorithm.temperature, a setting of algo hybrid, not of avi"):
        resolve("tictactoe", "small", ["actors.hybrid_temperature=0.3"], algo="avi")
    with pytest.raises(ConfigError, match="unknown config key 'algorithm.temperature'; AVI's settings: none"):
        resolve("tictactoe", "small", ["algorithm.temperature=0.3"], algo="avi")
    with pytest.raises(ConfigError, match="temperature must be >= 0"):
        resolve("tictactoe", "small", ["algorithm.temperature=-1"], algo="hybrid")
    # A config.json written before: the hybrid's key moves into its settings, another's is dropped.
    old = json.loads(TrainConfig(algo="hybrid").to_json())
    del old["algorithm"]
    old["actors"]["hybrid_temperature"] = 0.25
    assert TrainConfig.from_dict(old).algorithm == {"temperature": 0.25}
    assert TrainConfig.from_dict({**old, "algo": "avi"}).algorithm == {}


def test_azal_s_presets_build_on_alphazero_s():
    alphazero = algorithms.preset_changes("alphazero", "connect4")
    azal = algorithms.preset_changes("azal", "connect4")
    assert azal == {**alphazero, "actors.label_min_ply": 0} and "evaluation.suites" in alphazero
    assert algorithms.preset_changes("azal", "fgame") == algorithms.preset_changes("alphazero", "fgame")
    assert algorithms.preset_changes("azal", "tictactoe") == {}


def test_a_bad_descriptor_is_refused_naming_the_problem():
    with pytest.raises(ValueError, match="set policy_head=True"):
        AlgorithmDescriptor(name="x", title="X", collector="m:f", policy_columns=("policy",))
    with pytest.raises(ValueError, match="report_policy must be one of greedy, policy-head"):
        AlgorithmDescriptor(name="x", title="X", collector="m:f", report_policy="mcts")
    with pytest.raises(ValueError, match="nonempty identifier"):
        AlgorithmDescriptor(name="x-y", title="X", collector="m:f")
