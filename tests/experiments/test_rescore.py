"""An AlphaZero run's kept checkpoints scored afterwards by its training search
(launch/experiments/rescore.py): the scores are what ``launch evaluate`` gives each
checkpoint with MCTS at the run's S, they sit at the run's own counters for that
checkpoint, a second rescore scores nothing again, and the trial data takes them in."""

from __future__ import annotations

import json

import pytest

from evaluation.cli import evaluate_main
from launch.config import resolve
from launch.experiments.layout import DONE_FILE, EXPERIMENT_FILE
from launch.experiments.rescore import SEARCH_SCORES, read_search_scores, rescore_experiment, rescore_run
from launch.results.record import experiment_tables
from launch.run_dir import write_run_config
from learner.checkpoint import LearnerState, RunCheckpoint, save_run_checkpoint
from learner.learner import Learner

SIMULATIONS = 8


def _run(run_dir, algo: str = "alphazero"):
    """A run of Chomp 3x4 with two kept checkpoints (untrained networks of two seeds) and
    a metrics record at each, as a training run leaves them."""
    config = resolve("chomp", overrides=['game_params={"rows": 3, "cols": 4}', "network.width=16", "network.blocks=1",
                                         "network.layers_per_block=1", "network.head_width=16",
                                         f"actors.mcts.simulations={SIMULATIONS}"], algo=algo, seed=0)
    run_dir.mkdir(parents=True)
    write_run_config(run_dir, config)
    game = config.game_network.make_game()
    records = []
    for seed, updates in ((1, 32), (2, 64)):
        learner = Learner(game, config.network, device="cpu", seed=seed)
        save_run_checkpoint(run_dir / "checkpoints" / f"ckpt-{updates:09d}.pt",
                            RunCheckpoint(counters={"updates": updates}, learner=LearnerState(learner.state_dict(), {}),
                                          actors=[], config=config.to_json(), faults={}))
        records.append({"time": 1.8e9 + updates, "updates": updates, "rows": 32 * updates, "compute": 10.0 * updates})
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return config


def test_each_kept_checkpoint_is_scored_as_launch_evaluate_scores_it_with_the_runs_search(tmp_path, capsys):
    run_dir = tmp_path / "run"
    config = _run(run_dir)
    records = rescore_run(run_dir, log=lambda line: None)
    assert [(r["updates"], r["rows"], r["compute"], r["scored_from"]) for r in records] == [
        (32, 1024, 320.0, "checkpoints/ckpt-000000032.pt"), (64, 2048, 640.0, "checkpoints/ckpt-000000064.pt")]
    tag = f"@mcts{SIMULATIONS}"
    for record in records:
        assert record.keys() >= {f"eval/chomp-3x4-states{tag}/policy_regret"}
        assert not [k for k in record if k.startswith("eval/") and tag not in k]  # the search's runs only
        # The same checkpoint through launch evaluate, by MCTS at the run's S and c_puct.
        capsys.readouterr()
        assert evaluate_main(["--checkpoint", str(run_dir / record["scored_from"]), "--game", "chomp",
                              "--suite", "chomp-3x4-states", "--policy", "mcts", "--simulations", str(SIMULATIONS),
                              "--json"]) == 0
        alone = json.loads(capsys.readouterr().out)
        assert record[f"eval/chomp-3x4-states{tag}/policy_regret"] == pytest.approx(
            alone["eval/chomp-3x4-states/policy_regret"])
    assert config.actors.mcts.c_puct == resolve("chomp", algo="alphazero").actors.mcts.c_puct  # evaluate's own
    # Nothing is scored twice; the file keeps one record per checkpoint.
    assert rescore_run(run_dir, log=lambda line: None) == []
    assert len(read_search_scores(run_dir)) == 2


def test_a_run_that_searches_no_tree_is_left_as_it_is(tmp_path):
    run_dir = tmp_path / "avi"
    _run(run_dir, algo="avi")
    assert rescore_run(run_dir, log=lambda line: None) == []
    assert not (run_dir / SEARCH_SCORES).exists()


def test_the_trial_data_takes_the_search_scores_in_at_the_runs_counters(tmp_path):
    exp = tmp_path / "exp"
    _run(exp / "t-az-s0")
    (exp / "t-az-s0" / DONE_FILE).write_text(json.dumps({"final": {"updates": 64}}))
    (exp / EXPERIMENT_FILE).write_text(json.dumps({
        "spec": "t", "game": "chomp", "size": "small", "arms": {"az": {"algo": "alphazero", "label": "AZ"}},
        "trials": [{"name": "az-s0", "arm": "az", "group": "chomp 3x4", "seed": 0, "updates": 64, "run_dir": "t-az-s0",
                    "config": {}, "stop_when": {}, "hold": 3}], "matches": [], "commands": []}))
    with pytest.raises(ValueError, match="not an arm of t"):
        rescore_experiment(exp, ["az64"], log=lambda line: None)
    assert rescore_experiment(exp, log=lambda line: None) == 2
    rows = experiment_tables(exp, "t", stated={"commit": "abc", "machine": "m"})["evaluations"].to_pylist()
    regret = [(r["updates"], r["rows"], r["compute"]) for r in rows
              if r["metric"] == f"eval/chomp-3x4-states@mcts{SIMULATIONS}/policy_regret"]
    assert regret == [(32, 1024, 320.0), (64, 2048, 640.0)]


def test_the_command_line_scores_an_experiment_and_names_a_directory_that_is_none(tmp_path, capsys):
    from launch.cli import main

    assert main(["rescore", str(tmp_path / "nothing")]) == 2
    assert "no experiment.json, not an experiment directory" in capsys.readouterr().err
    exp = tmp_path / "exp"
    _run(exp / "t-az-s0")
    (exp / EXPERIMENT_FILE).write_text(json.dumps({
        "spec": "t", "arms": {"az": {"algo": "alphazero"}},
        "trials": [{"name": "az-s0", "arm": "az", "run_dir": "t-az-s0"}]}))
    assert main(["rescore", str(exp), "--arm", "az"]) == 0
    assert "2 checkpoint(s) scored" in capsys.readouterr().out
    assert len(read_search_scores(exp / "t-az-s0")) == 2
