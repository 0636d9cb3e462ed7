"""Head-to-head matches of an experiment (launch/experiments/matches.py): each seed of an
arm plays the same seed of its opponent from real checkpoints; a checkpoint against
itself scores exactly 0 (each opening is played from both sides by the same
deterministic policy), the file's command replays the same score through ``launch
evaluate``, a played match is not played again unless a trial trained on since or its
policies changed, and the report pools the seeds. Each side plays its arm's evaluation
policy unless the match names one."""

from __future__ import annotations

import json

import pytest

import games
from launch.experiments.report import write_experiment_report
from evaluation.cli import evaluate_main
from launch.experiments.matches import match_path, play_matches
from launch.experiments.spec import SpecError
from launch.experiments.tune_run import DONE_FILE, EXPERIMENT_FILE, prepare
from learner.checkpoint import LearnerState, RunCheckpoint, save_run_checkpoint
from learner.learner import Learner
from inference.networks import NetworkConfig

# Chomp 3x4's two arms, shared with test_inference.py; a spec adds its entries and sizes.
CHOMP_ARMS = """
game = "chomp"
game_params = { rows = 3, cols = 4 }
[arms.avi]
algo = "avi"
label = "AVI"
[arms.az]
algo = "alphazero"
label = "AZ"
"""
SPEC = 'name = "h2h"' + CHOMP_ARMS + """
[[head_to_head]]
arm = "avi"
opponent = "az"
suite = "chomp-3x4-h2h"
[[head_to_head]]
arm = "avi"
opponent = "avi"
suite = "chomp-3x4-h2h"
[sizes.small]
updates = 32
seeds = 2
[sizes.full]
updates = 64
"""


def _checkpoint(run_dir, algo: str, seed: int, updates: int = 32):
    game = games.make("chomp", rows=3, cols=4)
    network = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16,
                            policy_head=algo != "avi")
    learner = Learner(game, network, device="cpu", seed=seed)
    save_run_checkpoint(run_dir / "checkpoints" / f"ckpt-{updates:09d}.pt",
                        RunCheckpoint(counters={"updates": updates}, learner=LearnerState(learner.state_dict(), {}),
                                      actors=[], config=json.dumps({"algo": algo, "game": "chomp", "gamma": 1.0}),
                                      faults={}))


def test_paired_seeds_play_their_matches_and_the_report_pools_them(tmp_path, capsys):
    spec = tmp_path / "h2h.toml"
    spec.write_text(SPEC)
    out = tmp_path / "exp"
    plan, manifest = prepare(str(spec), out, size="small", updates=None, resume=False, embedded=True)
    assert sorted(m["name"] for m in plan.matches) == ["avi-s0-vs-avi", "avi-s0-vs-az", "avi-s1-vs-avi", "avi-s1-vs-az"]
    for trial in manifest["trials"]:
        run_dir = out / trial["run_dir"]
        _checkpoint(run_dir, trial["config"]["algo"], trial["seed"])
        (run_dir / "metrics.jsonl").write_text(json.dumps({"updates": 32, "rows": 1024, "compute": 1.0}) + "\n")
        (run_dir / DONE_FILE).write_text(json.dumps({"final": {"updates": 32}}))  # finished
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))

    paths = play_matches(out, manifest, log=lambda line: None)
    results = {p.stem: json.loads(p.read_text()) for p in paths}
    key = "eval/chomp-3x4-h2h/score"
    for name, result in results.items():
        m = result["metrics"]
        assert m["eval/chomp-3x4-h2h/wins"] + m["eval/chomp-3x4-h2h/draws"] + m["eval/chomp-3x4-h2h/losses"] \
            == m["eval/chomp-3x4-h2h/games"] > 0
        if name.endswith("-vs-avi"):
            assert m[key] == 0.0  # the same checkpoint on both sides of every opening
    # The file's command replays the match through the command line, to the same score.
    command = results["avi-s1-vs-az"]["command"].split()
    assert evaluate_main(command[4:] + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)[key] == results["avi-s1-vs-az"]["metrics"][key]
    # Played matches are not played again.
    before = {p: p.stat().st_mtime_ns for p in paths}
    play_matches(out, manifest, log=lambda line: None)
    assert {p: p.stat().st_mtime_ns for p in paths} == before

    summary = write_experiment_report(out, figures=False).read_text()
    scores = [results[f"avi-s{s}-vs-az"]["metrics"][key] for s in (0, 1)]
    spread = " (all 2)" if scores[0] == scores[1] else " ± "  # equal scores have no interval
    # Each side with its policy: AVI's auto is greedy, AlphaZero's its policy head's argmax.
    assert f"| AVI, greedy | AZ, policy-head | chomp-3x4-h2h | 2 | {sum(scores) / 2:.4f}{spread}" in summary
    assert "| AVI, greedy | AVI, greedy | chomp-3x4-h2h | 2 | 0.0000 (all 2) |" in summary  # equal: no interval
    assert f"`{match_path(out, plan.matches[0]).relative_to(out)}`" in summary

    # A trial that trained on after its matches were played (an experiment stopped between
    # its trials and its matches) has them played again from its final checkpoint.
    trial = next(t for t in manifest["trials"] if t["name"] == "avi-s0")
    _checkpoint(out / trial["run_dir"], "avi", 7, updates=64)
    play_matches(out, manifest, log=lambda line: None)
    assert {p.stem for p in paths if p.stat().st_mtime_ns != before[p]} == {"avi-s0-vs-avi", "avi-s0-vs-az"}
    again = json.loads(match_path(out, next(m for m in plan.matches if m["name"] == "avi-s0-vs-az")).read_text())
    assert again["checkpoint"].endswith("ckpt-000000064.pt")


# AlphaZero twice: scored by its policy head (auto), and by greedy one-step values over
# the same network (as the hybrid arms of the sampled-AVI specs are).
POLICY_SPEC = 'name = "h2h-policies"' + CHOMP_ARMS + """
[arms.az_greedy]
algo = "alphazero"
label = "AZ greedy"
set = { evaluation = { policy = "greedy" } }
[[head_to_head]]
arm = "az"
opponent = "az_greedy"
suite = "chomp-3x4-h2h"
[[head_to_head]]
arm = "az_greedy"
opponent = "az"
suite = "chomp-3x4-h2h"
opponent_policy = "greedy"
[sizes.small]
updates = 32
[sizes.full]
updates = 64
"""


def _prepared(tmp_path, text: str):
    spec = tmp_path / "h2h.toml"
    spec.write_text(text)
    return prepare(str(spec), tmp_path / "exp", size="small", updates=None, resume=False, embedded=True)


def test_each_side_plays_its_arms_evaluation_policy_unless_the_match_names_one(tmp_path, capsys):
    plan, manifest = _prepared(tmp_path, POLICY_SPEC)
    policies = {m["name"]: (m["policy"], m["opponent_policy"]) for m in plan.matches}
    assert policies == {"az-s0-vs-az_greedy": ("policy-head", "greedy"), "az_greedy-s0-vs-az": ("greedy", "greedy")}
    out = tmp_path / "exp"
    for trial in manifest["trials"]:  # both arms' seed 0: the same network
        _checkpoint(out / trial["run_dir"], "alphazero", 0)
        (out / trial["run_dir"] / "metrics.jsonl").write_text(json.dumps({"updates": 32, "rows": 1024}) + "\n")
        (out / trial["run_dir"] / DONE_FILE).write_text(json.dumps({"final": {"updates": 32}}))
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    paths = play_matches(out, manifest, log=lambda line: None)
    results = {p.stem: json.loads(p.read_text()) for p in paths}
    key = "eval/chomp-3x4-h2h/score"
    # Greedy on both sides of one network: the same moves from both sides, a score of 0.
    assert results["az_greedy-s0-vs-az"]["metrics"][key] == 0.0
    # The policy head against greedy over the same network: another player. Both playing
    # auto (the policy head) on it would score 0 as well.
    mixed = results["az-s0-vs-az_greedy"]
    assert mixed["metrics"][key] != 0.0
    # Each side's trial and policy by name, as it played.
    assert mixed["sides"] == {"a": {"trial": "az-s0", "policy": "policy-head"},
                              "b": {"trial": "az_greedy-s0", "policy": "greedy"}}
    command = mixed["command"].split()
    assert command[command.index("--policy") + 1] == "policy-head"
    assert command[command.index("--opponent-policy") + 1] == "greedy"
    assert evaluate_main(command[4:] + ["--json"]) == 0  # the command replays it
    assert json.loads(capsys.readouterr().out)[key] == mixed["metrics"][key]
    assert evaluate_main(command[4:command.index("--opponent-policy")] + ["--json"]) == 0  # auto: the policy head
    assert json.loads(capsys.readouterr().out)[key] == 0.0
    summary = write_experiment_report(out, figures=False).read_text()
    assert f"| AZ, policy-head | AZ greedy, greedy | chomp-3x4-h2h | 1 | {mixed['metrics'][key]:.4f} |" in summary

    # A match whose plan now names other policies is played again; the others are kept.
    before = {p: p.stat().st_mtime_ns for p in paths}
    manifest["matches"][1]["opponent_policy"] = "policy-head"
    play_matches(out, manifest, log=lambda line: None)
    assert [p.stem for p in paths if p.stat().st_mtime_ns != before[p]] == ["az_greedy-s0-vs-az"]
    again = json.loads(paths[1].read_text())
    assert again["match"]["opponent_policy"] == "policy-head" and again["metrics"][key] == -mixed["metrics"][key]


@pytest.mark.parametrize("match,error", [
    ('opponent = "avi"\nopponent_policy = "policy-head"',
     r"head_to_head\[0\], opponent_policy of arm 'avi': policy-head needs a policy head"),
    ('opponent = "avi"\nopponent_policy = "sideways"',
     r"head_to_head\[0\], key 'opponent_policy': 'sideways' is not a policy"),
    ('opponent = "az"\npolicy = "policy-head"',
     r"head_to_head\[0\], policy of arm 'avi': policy-head needs a policy head"),
])
def test_a_policy_a_side_cannot_play_is_refused_when_the_plan_is_made(tmp_path, match, error):
    text = 'name = "h2h-bad"' + CHOMP_ARMS + f"""
[[head_to_head]]
arm = "avi"
suite = "chomp-3x4-h2h"
{match}
[sizes.small]
updates = 32
[sizes.full]
updates = 64
"""
    with pytest.raises(SpecError, match=error):
        _prepared(tmp_path, text)


SEARCH_SPEC = 'name = "h2h-search"' + CHOMP_ARMS + """
[[head_to_head]]
arm = "az"
opponent = "avi"
suite = "chomp-3x4-h2h"
policy = "mcts"
simulations = 6
opponent_policy = "minimax"
depth = 3
[sizes.small]
updates = 32
[sizes.full]
updates = 64
"""


def test_a_match_records_each_sides_search_and_its_budget(tmp_path):
    plan, manifest = _prepared(tmp_path, SEARCH_SPEC)
    out = tmp_path / "exp"
    for trial in manifest["trials"]:
        _checkpoint(out / trial["run_dir"], trial["config"]["algo"], 0)
        (out / trial["run_dir"] / "metrics.jsonl").write_text(json.dumps({"updates": 32, "rows": 1024}) + "\n")
        (out / trial["run_dir"] / DONE_FILE).write_text(json.dumps({"final": {"updates": 32}}))
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    [path] = play_matches(out, manifest, log=lambda line: None)
    result = json.loads(path.read_text())
    assert result["sides"] == {"a": {"trial": "az-s0", "policy": "mcts", "simulations": 6},
                               "b": {"trial": "avi-s0", "policy": "minimax", "depth": 3}}
    assert result["metrics"]["eval/chomp-3x4-h2h/games"] > 0
