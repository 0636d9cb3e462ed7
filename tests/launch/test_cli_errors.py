"""Bad input to ``python -m launch`` stops at start-up with a message naming it."""

import json
import subprocess
import sys

import pytest

from launch.cli import main
from launch.config import ConfigError, apply_overrides, resolve
from launch.run_budget import check_budget


def run_cli(args, capsys):
    code = main(args)
    err = capsys.readouterr().err
    return code, err


@pytest.mark.slow
def test_help_works():
    out = subprocess.run([sys.executable, "-m", "launch", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--algo" in out.stdout and "--resume" in out.stdout


def test_unknown_algorithm_and_game(capsys):
    with pytest.raises(SystemExit):
        main(["--algo", "dqn", "--game", "connect4", "--updates", "1"])
    assert "invalid choice: 'dqn'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--algo", "avi", "--game", "chess", "--updates", "1"])
    assert "invalid choice: 'chess'" in capsys.readouterr().err


def test_malformed_set(capsys):
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe", "--set", "lr", "--updates", "1"], capsys)
    assert code == 2 and "--set 'lr' is not of the form key=value" in err
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe", "--set", "learning_rate=1", "--updates", "1"], capsys)
    assert code == 2 and "unknown config key 'learning_rate'" in err
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe", "--set", "learner.lr=fast", "--updates", "1"], capsys)
    assert code == 2 and "--set 'learner.lr=fast'" in err
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe", "--set", "actors.epsilon=2", "--updates", "1"], capsys)
    assert code == 2 and "epsilon must lie in [0, 1]" in err
    code, err = run_cli(["--algo", "avi", "--game", "connect4", "--set", "oracle.engine=pons", "--updates", "1"], capsys)
    assert code == 2 and "--set 'oracle.engine=pons': engine must be one of ours, bitbully, got 'pons'" in err


def test_an_unknown_preset_is_named_with_the_presets(capsys):
    code, err = run_cli(["--algo", "avi", "--game", "hex", "--preset", "huge", "--updates", "1"], capsys)
    assert code == 2 and "no preset 'huge' for game 'hex'; presets: paper, small, node" in err


def test_resume_of_a_run_of_another_game(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(resolve("tictactoe").to_json())
    code, err = run_cli(["--algo", "avi", "--game", "connect4", "--resume", str(run_dir), "--updates", "1"], capsys)
    assert code == 2 and f"--resume {run_dir}: that run trains avi on tictactoe" in err
    code, err = run_cli(["--resume", str(tmp_path / "nothing"), "--updates", "1"], capsys)
    assert code == 2 and "no config.json there" in err


def test_budget_is_required(capsys):
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe"], capsys)
    assert code == 2 and "--updates N, --minutes M (the wall clock) or --train-minutes M" in err
    with pytest.raises(SystemExit):  # argparse: one budget
        main(["--algo", "avi", "--game", "tictactoe", "--minutes", "1", "--train-minutes", "1"])
    assert "not allowed with argument --minutes" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="give one budget, not --minutes and --train-minutes"):
        check_budget(None, 1.0, 1.0)  # the same check for train() called from Python


def test_nested_override_and_types():
    config = resolve("connect4", overrides=["network.width=64", "actors.epsilon=0.1", "game_params={}"])
    assert config.network.width == 64 and config.actors.epsilon == 0.1
    with pytest.raises(ConfigError, match="unknown config key 'network.depth'; keys of network: blocks, channels"):
        apply_overrides(config, ["network.depth=3"])
    with pytest.raises(ConfigError, match="unknown config key 'learner.mcts'; keys of learner: augment_symmetries"):
        apply_overrides(config, ["learner.mcts.simulations=3"])
    with pytest.raises(ConfigError, match=r"set the fields of 'actors.mcts' one by one \(actors.mcts.FIELD=...\)"):
        apply_overrides(config, ["actors.mcts=3"])
    with pytest.raises(ConfigError, match="game_params"):
        resolve("hex", overrides=['game_params={"size": 1}'])
    assert json.loads(config.to_json())["network"]["width"] == 64


def test_precision_settings_are_checked_by_name():
    config = resolve("tictactoe", overrides=["actors.inference_dtype=auto", "learner.precision=bf16"])
    assert (config.actors.inference_dtype, config.learner.precision) == ("auto", "bf16")
    default = resolve("tictactoe")
    assert (default.actors.inference_dtype, default.evaluation.inference_dtype, default.learner.precision) == (
        "fp32", "fp32", "auto")
    with pytest.raises(ConfigError, match="inference_dtype must be one of auto, fp32, bf16, int8, got 'fp16'"):
        resolve("tictactoe", overrides=["evaluation.inference_dtype=fp16"])
    with pytest.raises(ConfigError, match="precision must be one of auto, fp32, tf32, bf16, got 'int8'"):
        resolve("tictactoe", overrides=["learner.precision=int8"])
    assert resolve("tictactoe", overrides=["actors.eval_cache=batch"]).actors.eval_cache == "batch"
    with pytest.raises(ConfigError, match="eval_cache must be one of auto, off, batch, cache, got 'lru'"):
        resolve("tictactoe", overrides=["actors.eval_cache=lru"])


def test_inference_servers_are_checked():
    assert resolve("connect4", overrides=["actors.num_actors=4", "actors.num_envs=128", "actors.inference_servers=2"]).actors.inference_servers == 2
    with pytest.raises(ConfigError, match="answers values only, and alphazero's MCTS needs priors"):
        resolve("tictactoe", overrides=["actors.inference_servers=1"], algo="alphazero")
    with pytest.raises(ConfigError, match=r"inference_servers \(2\) must not exceed num_actors \(1\)"):
        resolve("tictactoe", overrides=["actors.inference_servers=2"])
    with pytest.raises(ConfigError, match="inference_device must be auto, cpu or cuda, got 'tpu'"):
        resolve("tictactoe", overrides=["actors.inference_servers=1", "actors.inference_device=tpu"])


def test_resume_refuses_what_would_change_the_run(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(resolve("tictactoe").to_json())
    for flags, named in ((["--seed", "3"], "--seed"), (["--preset", "small"], "--preset"),
                         (["--seed", "0", "--preset", "small"], "--seed and --preset")):
        code, err = run_cli(["--resume", str(run_dir), "--updates", "1", *flags], capsys)
        assert code == 2 and f"{named} cannot change a resumed run; --resume {run_dir} keeps its config.json" in err
    # --set by name: what it trains is refused, the bounds of its waits are not.
    code, err = run_cli(["--resume", str(run_dir), "--updates", "1", "--set", "learner.lr=0.1",
                         "--set", "learner.restart_wait_s=60", "--set", "actors.epsilon=0.2"], capsys)
    assert code == 2 and (f"--set learner.lr=0.1, actors.epsilon=0.2 cannot change a resumed run; --resume {run_dir} "
                          "keeps its config.json. A resume may lengthen the run (--updates, --minutes) and set "
                          "learner.wait_for_gpu_s, learner.restart_wait_s, storage_outage_s") in err


def test_resume_takes_the_bounds_of_its_waits_and_keeps_the_rest(tmp_path):
    from launch.run_dir import prepare_run_dir, resume_changes, resumed_config

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    saved = resolve("tictactoe", overrides=["learner.lr=0.01", "learner.restart_wait_s=180"])
    (run_dir / "config.json").write_text(saved.to_json())
    given = apply_overrides(resumed_config(run_dir), resume_changes(run_dir, ["learner.restart_wait_s=1800",
                                                                                "storage_outage_s=900"]))
    config, _ = prepare_run_dir(given, None, run_dir)
    assert (config.learner.restart_wait_s, config.storage_outage_s, config.learner.lr) == (1800.0, 900.0, 0.01)


def test_resume_lengthens_a_run_or_says_by_how_much(tmp_path, capsys):
    """--updates on --resume is the run's total: at or below the newest pair's it is refused."""
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "config.json").write_text(resolve("tictactoe").to_json())
    (run_dir / "checkpoints" / "pair-000000040.json").write_text("{}")
    code, err = run_cli(["--resume", str(run_dir), "--updates", "40"], capsys)
    assert code == 2 and (f"--updates 40 is the run's total, and {run_dir} holds 40 updates already: give more to "
                          "lengthen it (--updates N, N > 40), or --minutes M") in err


def test_a_cluster_run_refuses_a_directory_its_nodes_do_not_share(tmp_path, capsys, monkeypatch):
    from launch.run_dir import SHARED_DIRS_ENV, check_shared

    monkeypatch.delenv(SHARED_DIRS_ENV, raising=False)
    local = tmp_path / "run"
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe", "--address", "auto", "--run-dir", str(local),
                         "--updates", "1"], capsys)
    assert code == 2 and f"--run-dir {local} is on the driver's own disk" in err
    assert ("give an object store's URI (--run-dir s3://BUCKET/RUN, gs://BUCKET/RUN) or a path on a filesystem every "
            "node mounts") in err
    assert not local.exists()  # refused before anything is written, or Ray joined
    code, err = run_cli(["--algo", "avi", "--game", "tictactoe", "--address", "auto", "--updates", "1"], capsys)
    assert code == 2 and "no --run-dir: the default (runs/...) is on the driver's own disk" in err
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "config.json").write_text(resolve("tictactoe").to_json())
    code, err = run_cli(["--resume", str(saved), "--address", "auto", "--updates", "1"], capsys)
    assert code == 2 and f"--resume {saved} is on the driver's own disk" in err  # a resumed run's, as well
    # What every node reads and writes: an object store, a directory the nodes declare shared.
    check_shared("s3://bucket/run", "auto")
    check_shared("gs://bucket/run", "auto")
    monkeypatch.setenv(SHARED_DIRS_ENV, f"/elsewhere,{tmp_path}")
    check_shared(local, "auto")
    check_shared(local, None)  # the embedded Ray: one machine
