"""A run at a board its evaluation or oracle cannot have is refused before Ray starts
(``launch.config.check_evaluation``), by the real command line; a board that has them
gets its own preset (the game descriptor's ``preset_at``)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from launch.config import ConfigError, resolve


def _launch(tmp_path, *args) -> subprocess.CompletedProcess:
    """``python -m launch`` with Ray's temporary directory in ``tmp_path/ray-tmp``: Ray
    makes it when it starts a node, so its absence says none was started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["RAY_TMPDIR"] = str(tmp_path / "ray-tmp")
    return subprocess.run([sys.executable, "-m", "launch", *args, "--minutes", "1", "--wandb", "disabled",
                           "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_hex_9x9_is_refused_before_ray_starts_naming_the_boards_with_sets(tmp_path):
    out = _launch(tmp_path, "--algo", "avi", "--game", "hex", "--set", 'game_params={"size": 9}')
    assert out.returncode == 2, out.stderr[-2000:]
    assert "no labelled Hex sets at 9x9" in out.stderr and "committed at 7x7" in out.stderr
    assert "3x3 to 6x6" in out.stderr and "evaluation.suites=none" in out.stderr
    assert "Traceback" not in out.stderr and "Started a local Ray instance" not in out.stderr
    assert not (tmp_path / "ray-tmp").exists() and not (tmp_path / "run").exists()


def test_the_check_names_suites_of_another_board_and_lets_a_run_without_them_through():
    with pytest.raises(ConfigError, match=r"hex-uniform is not among the suites of .*size=5.*hex-5x5-uniform"):
        resolve("hex", overrides=['game_params={"size": 5}', "evaluation.suites=hex-uniform"])
    # Without evaluation, AVI trains on any board the engine takes.
    assert resolve("hex", overrides=['game_params={"size": 9}', "evaluation.suites=none"]).game_params == {"size": 9}
    with pytest.raises(ConfigError, match="evaluation.suites=default needs the oracle's sets at this board"):
        resolve("hex", overrides=['game_params={"size": 8}', "evaluation.suites=default"])
    # Connect Four: boards the solver proves in seconds have sets, larger ones do not; AZAL's
    # labels come from the same solver, so AZAL trains where the sets exist, even without them.
    with pytest.raises(ConfigError, match="no labelled Connect Four sets at 7x5.*at most 30 cells"):
        resolve("connect4", overrides=['game_params={"width": 7, "height": 5}'])
    assert resolve("connect4", overrides=['game_params={"width": 5, "height": 4}']).game_params["width"] == 5
    assert resolve("connect4", overrides=['game_params={"width": 5, "height": 4}'], algo="azal").algo == "azal"
    with pytest.raises(ConfigError, match="AZAL's labels come from the oracle, which cannot label connect4 at 7x5"):
        resolve("connect4", overrides=['game_params={"width": 7, "height": 5}', "evaluation.suites=none"],
                algo="azal")


def _at(config, dotted: str):
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


def test_a_board_gets_its_preset_from_game_params_and_the_overrides_win():
    import games

    changes = games.descriptor("hex").piece("preset_at")({"size": 5})
    assert changes, "Hex 5x5 has a preset of its own"
    five, seven = resolve("hex", overrides=['game_params={"size": 5}']), resolve("hex")
    for key, value in changes.items():
        assert _at(five, key) == value and _at(seven, key) != value, key
    # 7x7 named keeps the paper's preset
    assert dataclasses.replace(resolve("hex", overrides=['game_params={"size": 7}']), game_params={}) == seven
    width = resolve("hex", overrides=["network.width=96", 'game_params={"size": 5}'])
    assert width.network.width == 96 and width.game_params == {"size": 5}
    small = resolve("hex", "small", overrides=['game_params={"size": 5}'], algo="alphazero")
    assert small.network.policy_head and all(_at(small, k) == v for k, v in changes.items() if k.startswith("network"))
