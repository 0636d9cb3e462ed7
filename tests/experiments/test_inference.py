"""The inference study of an experiment (launch/experiments/inference.py, the AVI paper's
Figure 2) on real checkpoints of Chomp 3x4, solved exactly: cross-inference searches
with one network's prior and another's values, and counts both networks; native
inference is the prior network alone; minimax to depth 1 over a value network is that
network's greedy policy; each point's command replays its number through ``launch
evaluate``; a point evaluated is not evaluated again unless a trial trained on since; the
report draws and tabulates the study."""

from __future__ import annotations

import json

import numpy as np
import pytest

import games
from evaluation.config import EvaluationConfig
from evaluation.network import NetworkModel
from evaluation.policies import cross_evaluator
from launch.experiments.report import inference_layout, write_experiment_report
from evaluation.checkpoints import read_checkpoint
from evaluation.cli import evaluate_main
from evaluation.runner import evaluate_checkpoint
from launch.experiments.inference import inference_path, run_inference
from launch.experiments.spec import SpecError
from launch.experiments.tune_run import DONE_FILE, EXPERIMENT_FILE, prepare
from inference.networks import NetworkConfig
from tests.experiments.test_matches import CHOMP_ARMS, _checkpoint

SPEC = 'name = "study"' + CHOMP_ARMS + """
[[inference]]
policy = "mcts"
budgets = [8, 2]
arms = ["az", "avi"]
prior = "az"
suite = "chomp-3x4-play"
[[inference]]
policy = "minimax"
budgets = [1, 2]
arms = ["avi"]
suite = "chomp-3x4-play"
[sizes.small]
updates = 32
seeds = 2
[sizes.full]
updates = 64
"""
PLAY = "eval/chomp-3x4-play"


def _experiment(tmp_path, spec_text=SPEC):
    spec = tmp_path / "study.toml"
    spec.write_text(spec_text)
    out = tmp_path / "exp"
    plan, manifest = prepare(str(spec), out, size="small", updates=None, resume=False, embedded=True)
    for trial in manifest["trials"]:
        run_dir = out / trial["run_dir"]
        # Seeded apart: the two arms' networks of one seed must not start equal.
        _checkpoint(run_dir, trial["config"]["algo"], trial["seed"] + 100 * (trial["arm"] == "avi"))
        (run_dir / "metrics.jsonl").write_text(json.dumps({"updates": 32, "rows": 1024, "compute": 1.0}) + "\n")
        (run_dir / DONE_FILE).write_text(json.dumps({"final": {"updates": 32}}))
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    return out, plan, manifest


def test_the_cross_evaluator_takes_the_priors_policy_and_the_other_networks_values(tmp_path):
    out, _, manifest = _experiment(tmp_path)
    game = games.make("chomp", rows=3, cols=4)
    models = {}
    for arm in ("avi", "az"):
        trial = next(t for t in manifest["trials"] if t["arm"] == arm and t["seed"] == 0)
        _, net, weights, _ = read_checkpoint(out / trial["run_dir"] / "checkpoints" / "ckpt-000000032.pt", "chomp")
        models[arm] = NetworkModel(game, NetworkConfig(**net), weights)
    states = game.from_moves([[], [5], [5, 2]])
    logits, values = cross_evaluator(models["avi"], models["az"])(states)
    np.testing.assert_array_equal(logits, models["az"].evaluate(states)[0])
    np.testing.assert_array_equal(values, models["avi"].evaluate(states)[1])
    assert not np.allclose(values, models["az"].evaluate(states)[1])  # the two networks do differ
    with pytest.raises(ValueError, match="prior network has no policy head"):
        cross_evaluator(models["az"], models["avi"])


def test_an_inference_study_is_planned_evaluated_replayed_and_reported(tmp_path, capsys):
    out, plan, manifest = _experiment(tmp_path)
    points = {p["name"]: p for p in plan.inference}
    assert sorted(points) == sorted([f"mcts-az-{arm}-s{s}-{b}" for arm in ("az", "avi") for s in (0, 1)
                                     for b in (2, 8)] + [f"minimax-avi-s{s}-{d}" for s in (0, 1) for d in (1, 2)])
    assert points["mcts-az-az-s1-8"]["prior_trial"] is None  # native: the prior network's own values
    assert points["mcts-az-avi-s1-8"]["prior_trial"] == "az-s1"  # cross: the same seed's prior

    paths = run_inference(out, manifest, log=lambda line: None)
    results = {p.stem: json.loads(p.read_text()) for p in paths}
    assert len(results) == 12
    # Cross-inference runs both networks at every leaf: about twice native's evaluations.
    for b in (2, 8):
        native = results[f"mcts-az-az-s0-{b}"]["metrics"][f"{PLAY}/inference_evals_per_decision"]
        cross = results[f"mcts-az-avi-s0-{b}"]["metrics"][f"{PLAY}/inference_evals_per_decision"]
        assert 1.5 * native < cross < 2.5 * native
    # Native inference is MCTS on the prior's checkpoint alone.
    az = results["mcts-az-az-s0-8"]
    alone = evaluate_checkpoint(az["checkpoint"], "chomp", ["chomp-3x4-play"],
                                evaluation=EvaluationConfig(policy="mcts", simulations=8))
    assert alone[f"{PLAY}/error_rate"] == az["metrics"][f"{PLAY}/error_rate"]
    # Minimax to depth 1 over AVI's values is AVI's greedy policy.
    greedy = evaluate_checkpoint(results["minimax-avi-s1-1"]["checkpoint"], "chomp", ["chomp-3x4-play"],
                                 evaluation=EvaluationConfig(policy="greedy"))
    assert greedy[f"{PLAY}/error_rate"] == results["minimax-avi-s1-1"]["metrics"][f"{PLAY}/error_rate"]
    # The file's command replays a cross-inference point through the command line.
    cross = results["mcts-az-avi-s1-8"]
    assert "--prior" in cross["command"]
    assert evaluate_main(cross["command"].split()[4:] + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)[f"{PLAY}/error_rate"] == cross["metrics"][f"{PLAY}/error_rate"]
    # Points evaluated are not evaluated again.
    before = {p: p.stat().st_mtime_ns for p in paths}
    run_inference(out, manifest, log=lambda line: None)
    assert {p: p.stat().st_mtime_ns for p in paths} == before

    summary = write_experiment_report(out).read_text()
    assert (out / "report" / "figure_inference.png").stat().st_size > 10_000
    errors = [results[f"mcts-az-avi-s{s}-2"]["metrics"][f"{PLAY}/error_rate"] for s in (0, 1)]
    spread = " (all 2)" if errors[0] == errors[1] else " ± "  # equal rates have no interval
    assert "| AZ prior, AVI values (2) | " + f"{np.mean(errors):.4f}{spread}" in summary
    assert "| AZ (native) (2) | " in summary and "| AVI values (2) | " in summary
    assert f"`{inference_path(out, plan.inference[0]).relative_to(out).parent}/" in summary

    # A prior trial that trained on since (an experiment stopped between its trials and its
    # study) has its own points and the points it is the prior of evaluated again.
    trial = next(t for t in manifest["trials"] if t["name"] == "az-s0")
    _checkpoint(out / trial["run_dir"], "alphazero", 7, updates=64)
    run_inference(out, manifest, log=lambda line: None)
    assert {p.stem for p in paths if p.stat().st_mtime_ns != before[p]} == {
        f"mcts-az-{arm}-s0-{b}" for arm in ("az", "avi") for b in (2, 8)}
    assert json.loads(inference_path(out, points["mcts-az-avi-s0-8"]).read_text())["prior_checkpoint"].endswith(
        "az-s0/checkpoints/ckpt-000000064.pt")


@pytest.mark.parametrize("entry, message", [
    ('policy = "greedy"\nbudgets = [1]\narms = ["avi"]\nsuite = "chomp-3x4-play"', "'greedy' is not a search"),
    ('policy = "mcts"\nbudgets = [0]\narms = ["avi"]\nsuite = "chomp-3x4-play"', "key 'budgets'"),
    ('policy = "minimax"\nbudgets = [1]\narms = ["avi"]\nprior = "az"\nsuite = "chomp-3x4-play"',
     "takes no second network.s prior; mcts does"),
    ('policy = "mcts"\nbudgets = [4]\narms = ["az"]\nprior = "avi"\nsuite = "chomp-3x4-play"',
     "trains a value network"),
    ('policy = "mcts"\nbudgets = [4]\narms = ["nope"]\nsuite = "chomp-3x4-play"', "'nope' is not an arm"),
    ('policy = "mcts"\nbudgets = [4]\narms = ["az"]\nsuite = "chomp-3x4-h2h"', "not a play or states suite"),
])
def test_a_bad_inference_entry_is_refused_naming_it(tmp_path, entry, message):
    spec = tmp_path / "bad.toml"
    spec.write_text(SPEC.split("[[inference]]")[0] + "[[inference]]\n" + entry + "\n[sizes.small]\nupdates = 32\n"
                    "[sizes.full]\nupdates = 64\n")
    with pytest.raises(SpecError, match=message) as err:
        prepare(str(spec), tmp_path / "exp", size="small", updates=None, resume=False, embedded=True)
    assert "inference[0]" in str(err.value)


def test_the_inference_figure_stacks_each_entrys_metrics_from_the_top():
    # A play entry and a states entry (AVI paper Figure 2 on Hex: error rate in play and
    # regret on the labelled states) share no metric; each column starts at the top row.
    keys = [("hex", "regret", "eval/hex-uniform/optimal_move_rate"), ("hex", "regret", "eval/hex-uniform/policy_regret"),
            ("hex", "play", "eval/hex-play/move_match_rate"), ("hex", "play", "eval/hex-play/error_rate"),
            ("hex", "play", "eval/hex-play/move_error_rate")]
    columns, row_of = inference_layout(keys)
    assert columns == [("hex", "regret"), ("hex", "play")]
    assert [row_of[k] for k in keys] == [1, 0, 2, 0, 1]
