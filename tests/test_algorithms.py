"""The algorithm registry (algorithms/): every built-in descriptor names pieces that exist
and agree with each other, AZAL's presets build on AlphaZero's, and a bad descriptor is
refused naming the problem."""

from __future__ import annotations

import json

import pytest

import algorithms
from algorithms.descriptors import AlgorithmDescriptor
from algorithms.azal import AzalSettings
from algorithms.hybrid import HybridSettings
from launch.config import ConfigError, TrainConfig, resolve
from learner.losses import Loss
from replay.rows import AUX_POLICY, POLICY


@pytest.mark.parametrize("name", list(algorithms.BUILTIN))
def test_every_builtin_descriptor_names_pieces_that_exist(name):
    described = algorithms.descriptor(name)
    assert described.name == name and algorithms.descriptor(described) is described
    assert callable(described.piece("collector")) and isinstance(described.training_loss(), Loss)
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


def test_azal_owns_its_settings_and_its_loss_takes_them():
    azal = algorithms.descriptor("azal")
    assert azal.settings == AzalSettings(aux_weight=1.0, label_min_ply=0)
    assert azal.setting_names() == ("aux_weight", "label_min_ply")
    configured = algorithms.configured("azal", {"aux_weight": 0.5, "label_min_ply": 4})
    assert configured.settings == AzalSettings(0.5, 4) and azal.settings.aux_weight == 1.0  # the registry's unchanged
    assert AzalSettings(aux_weight=1).aux_weight == 1.0 and isinstance(AzalSettings(aux_weight=1).aux_weight, float)
    for values, message in [({"aux_weight": -0.5}, "aux_weight must be >= 0"),
                            ({"aux_weight": "1"}, "aux_weight must be a number"),
                            ({"label_min_ply": -1}, r"label_min_ply must be >= 0 \(0: every ply\)"),
                            ({"label_min_ply": 2.5}, "label_min_ply must be an integer"),
                            ({"min_ply": 2}, r"AZAL has no setting algorithm.min_ply \(its settings: aux_weight, label_min_ply\)")]:
        with pytest.raises(ValueError, match=message):
            azal.configured(values)
    # The config: algorithm.FIELD, its defaults written out; the keys they had before still work.
    assert resolve("chomp", "small", algo="azal").algorithm == {"aux_weight": 1.0, "label_min_ply": 0}
    for keys in (["algorithm.aux_weight=0.5", "algorithm.label_min_ply=3"],
                 ["learner.aux_weight=0.5", "actors.label_min_ply=3"]):
        assert resolve("chomp", "small", keys, algo="azal").algorithm == {"aux_weight": 0.5, "label_min_ply": 3}
    with pytest.raises(ConfigError, match="is now algorithm.aux_weight, a setting of algo azal, not of alphazero"):
        resolve("chomp", "small", ["learner.aux_weight=0.5"], algo="alphazero")
    with pytest.raises(ConfigError, match="unknown config key 'algorithm.aux'; AZAL's settings: algorithm.aux_weight, "
                                          "algorithm.label_min_ply"):
        resolve("chomp", "small", ["algorithm.aux=0.5"], algo="azal")
    with pytest.raises(ConfigError, match="'aux_weight' is now algorithm.aux_weight"):
        resolve("chomp", "small", ["aux_weight=0.5"], algo="azal")


def _old_azal_config(**changes) -> dict:
    """An AZAL run's config.json as written before lambda_aux and the first labelled ply
    were AZAL's own: learner.aux_weight and actors.label_min_ply, no algorithm section."""
    old = json.loads(resolve("chomp", "small", algo="azal").to_json())
    del old["algorithm"]
    old["learner"]["aux_weight"], old["actors"]["label_min_ply"] = 0.5, 2
    return {**old, **changes}


def test_an_old_azal_config_json_reads_and_resumes_with_its_settings_in_their_new_place(tmp_path):
    from launch.config import validate
    from launch.run_dir import resumed_config

    old = _old_azal_config()
    (tmp_path / "config.json").write_text(json.dumps(old, indent=2))
    config = resumed_config(tmp_path, algo="azal", game="chomp")
    assert config.algorithm == {"aux_weight": 0.5, "label_min_ply": 2}
    assert not hasattr(config.learner, "aux_weight") and not hasattr(config.actors, "label_min_ply")
    validate(config)
    assert algorithms.configured(config.algo, config.algorithm).settings == AzalSettings(0.5, 2)
    # Written again it is the new layout, and reads back the same, its settings typed.
    again = TrainConfig.from_dict(json.loads(config.to_json()))
    assert again == config and json.loads(config.to_json())["algorithm"] == {"aux_weight": 0.5, "label_min_ply": 2}
    with pytest.raises(ConfigError, match="config field 'algorithm': label_min_ply must be an integer"):
        TrainConfig.from_dict({**json.loads(config.to_json()), "algorithm": {"label_min_ply": "2"}})
    # Another algorithm's run of then held the same keys, which are not its own: dropped.
    other = TrainConfig.from_dict(_old_azal_config(algo="alphazero"))
    assert other.algorithm == {} and other.learner == config.learner and other.actors == config.actors
    # The flat layout of before the roles owned their fields: the same keys, at the top.
    flat = {k: v for k, v in old.items() if k not in ("learner", "actors")}
    flat.update(aux_weight=0.25, label_min_ply=6, lr=old["learner"]["lr"])
    assert TrainConfig.from_dict(flat).algorithm == {"aux_weight": 0.25, "label_min_ply": 6}


def test_azal_s_presets_build_on_alphazero_s():
    alphazero = algorithms.preset_changes("alphazero", "connect4")
    azal = algorithms.preset_changes("azal", "connect4")
    assert azal == {**alphazero, "algorithm.label_min_ply": 0} and "evaluation.suites" in alphazero
    assert algorithms.preset_changes("azal", "fgame") == algorithms.preset_changes("alphazero", "fgame")
    assert algorithms.preset_changes("azal", "tictactoe") == {}


def test_a_bad_descriptor_is_refused_naming_the_problem():
    with pytest.raises(ValueError, match="set policy_head=True"):
        AlgorithmDescriptor(name="x", title="X", collector="m:f", policy_columns=("policy",))
    with pytest.raises(ValueError, match="report_policy must be one of greedy, policy-head"):
        AlgorithmDescriptor(name="x", title="X", collector="m:f", report_policy="mcts")
    with pytest.raises(ValueError, match="nonempty identifier"):
        AlgorithmDescriptor(name="x-y", title="X", collector="m:f")
