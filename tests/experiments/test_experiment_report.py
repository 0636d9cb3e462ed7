"""The summary of an experiment directory (evaluation/report.py), on a directory written
here as ``launch experiment`` writes one: experiment.json, and a metrics.jsonl per trial.
The metric keys are a suite's that the report has never been told about (Hex's), so
they must be picked up by their ``eval/...`` names alone. The expected intervals come
from Student-t tables. (The figures are drawn and checked on the smoke experiment, in
test_experiment_run.py.)"""

from __future__ import annotations

import json

import pytest

from launch.experiments.layout import DONE_FILE
from launch.experiments.report import report_main, write_experiment_report

T_0975 = {1: 12.7062, 2: 4.3027}  # Student-t quantiles, from tables


def _experiment(tmp_path):
    out = tmp_path / "exp"
    trials = []
    # Two groups (figure rows): "hex" with several seeds, "hex-one" with one seed per arm.
    finals = {("hex", "avi", 0): 0.20, ("hex", "avi", 1): 0.30, ("hex", "avi", 2): 0.40, ("hex", "az", 0): 0.50,
              ("hex", "az", 1): 0.70, ("hex-one", "avi", 0): 0.25, ("hex-one", "az", 0): 0.45}
    for (group, arm, seed), final in finals.items():
        run_dir = f"demo-{group}-{arm}-s{seed}"
        evaluation = {"policy": "auto" if arm == "avi" else "mcts", "simulations": 32}
        config = {"algo": "avi" if arm == "avi" else "alphazero", "game": "hex", "game_params": {},
                  # config.json nests the roles' settings; the "hex-one" trials are of a run
                  # directory written before, whose evaluation settings were flat.
                  **({"eval_" + k: v for k, v in evaluation.items()} if group == "hex-one"
                     else {"evaluation": evaluation})}
        trials.append({"name": f"{group}-{arm}-s{seed}", "arm": arm, "group": group, "instance": group, "seed": seed,
                       "updates": 20, "rows": 640, "bundles": [{"CPU": 1.0}], "config": config, "run_dir": run_dir})
        (out / run_dir).mkdir(parents=True)
        compute = 1000.0 if arm == "avi" else 4000.0
        records = [{"updates": u, "time": 1.7e9 + 3.0 * u, "rows": 32 * u, "compute": compute * u, "actor_forward_samples": 10 * u,
                    "learner_forward_samples": u, "eval/hex-uniform/value_mae": v,
                    "eval/hex-uniform/policy_regret": v / 2, "eval/hex-openings/error_rate": v / 4,
                    # Per subset (Connect Four's phases, here made up): the breakdown figures.
                    "eval/hex-uniform/opening/value_mae": v * 1.2, "eval/hex-uniform/endgame/value_mae": v * 0.8,
                    "eval/hex-uniform/endgame/policy_regret": v * 0.3}
                   for u, v in ((0, 1.0), (10, 0.6), (20, final))]
        (out / run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        (out / run_dir / DONE_FILE).write_text(json.dumps({"final": records[-1]}))
    # A third AZ seed, cut short: it has metrics but never finished, and must not count.
    trials.append({**trials[4], "name": "hex-az-s2", "seed": 2, "run_dir": "demo-hex-az-s2"})
    (out / "demo-hex-az-s2").mkdir()
    (out / "demo-hex-az-s2" / "metrics.jsonl").write_text(json.dumps(
        {"updates": 10, "rows": 320, "compute": 40000.0, "eval/hex-uniform/value_mae": 9.0}) + "\n")
    manifest = {"spec": "demo", "description": "a test", "size": "small", "updates_override": None,
                "reference_arm": "avi", "arms": {"avi": {"label": "AVI"}, "az": {"label": "AZ S=32"}},
                "trials": trials, "commands": [{"time": "now", "argv": "python -m launch experiment demo --out X"}]}
    (out / "experiment.json").write_text(json.dumps(manifest))
    return out


def test_the_experiment_report_has_intervals_pairs_relative_compute_and_sources(tmp_path):
    out = _experiment(tmp_path)
    # The tables only: the figures are drawn (and checked) by the smoke experiment's test.
    summary, one_seed = write_experiment_report(out, figures=False).read_text().split("## hex-one")
    # AVI, 3 seeds: mean 0.3, half-width t(0.975, 2) * 0.1 / sqrt(3).
    half = T_0975[2] * 0.1 / 3 ** 0.5
    assert f"| hex-uniform/value_mae | 0.3000 ± {half:.4f} |" in summary
    # AlphaZero, 2 seeds: 0.6 ± t(0.975, 1) * sd(0.5, 0.7) / sqrt(2).
    assert f"0.6000 ± {T_0975[1] * 0.1414214 / 2 ** 0.5:.4f} |" in summary
    # Paired over seeds 0 and 1: differences 0.3 and 0.4.
    assert f"| AZ S=32 − AVI | hex-uniform/value_mae | 2 | 0.3500 ± {T_0975[1] * 0.0707107 / 2 ** 0.5:.4f} |" in summary
    # Compute relative to AVI: training 4x, inference 32 simulations against Hex's 49 children.
    assert "| AZ S=32 | 2 | 20 | 640 | 80,000 | 4 | 32 | 0.653 |" in summary
    assert "`demo-hex-az-s1/metrics.jsonl`" in summary and "python -m launch experiment demo --out X" in summary
    assert "hex-openings/error_rate" in summary
    assert "left out of the tables and figures: demo-hex-az-s2." in summary
    # One seed: the value alone, no interval (not "± 0.0000"), also for the one pair.
    assert "| hex-uniform/value_mae | 0.2500 | 0.4500 |" in one_seed
    assert "| AZ S=32 − AVI | hex-uniform/value_mae | 1 | 0.2000 |" in one_seed
    assert not [line for line in one_seed.splitlines() if "hex-" in line and "±" in line]


@pytest.mark.slow
def test_suites_with_subsets_get_breakdown_figures(tmp_path):
    from launch.experiments.report import draw_experiment_figures, read_experiment

    out = _experiment(tmp_path)
    exp = read_experiment(out)
    (tmp_path / "figures").mkdir()
    paths = draw_experiment_figures(exp, tmp_path / "figures")
    names = sorted(p.name for p in paths)
    # Two groups: one breakdown per group and x axis (updates, compute), named by group.
    assert [n for n in names if n.startswith("figure_breakdown_")] == sorted(
        f"figure_breakdown_{group}_hex-uniform_vs_{x}.png" for group in ("hex", "hex-one")
        for x in ("compute", "updates"))
    assert {"figure_vs_updates.png", "figure_vs_compute.png", "figure_vs_forward.png", "figure_vs_wall.png"} <= set(names)
    # The wall axis: seconds since each run's first record.
    assert [r["wall"] for r in exp.runs[("hex", "avi")][0][1]] == [0.0, 30.0, 60.0]
    assert all((tmp_path / "figures" / n).read_bytes()[:4] == b"\x89PNG" for n in names)
    # The subsets' keys are in the summary's tables, each traceable to its files.
    summary = write_experiment_report(out, figures=False).read_text()
    assert "| hex-uniform/endgame/policy_regret | " in summary


def test_equal_values_over_seeds_say_so_instead_of_a_zero_interval():
    from evaluation.report import fmt_ci

    assert fmt_ci([0.59375] * 3) == "0.5938 (all 3)"  # a saturated metric: no spread to estimate
    assert fmt_ci([0.25]) == "0.2500"
    assert fmt_ci([0.2, 0.4]) == f"0.3000 ± {T_0975[1] * 0.1414214 / 2 ** 0.5:.4f}"


def test_a_trial_config_written_flat_reads_its_evaluation_settings(tmp_path):
    # "hex-one"'s trials hold eval_policy=mcts, eval_simulations=32 as flat keys: the typed
    # config puts them in evaluation, so AZ evaluates 32 times per decision, AVI 49 (Hex's cells).
    one_seed = write_experiment_report(_experiment(tmp_path), figures=False).read_text().split("## hex-one")[1]
    assert "| AVI | 1 | 20 | 640 | 20,000 | 1 | 49 | 1 |" in one_seed
    assert "| AZ S=32 | 1 | 20 | 640 | 80,000 | 4 | 32 | 0.653 |" in one_seed


def test_each_arm_gets_the_mean_and_spread_of_its_trials_last_evaluations(tmp_path):
    out = _experiment(tmp_path)
    summary = write_experiment_report(out, figures=False, last=2).read_text().split("## hex-one")[0]
    table = summary.split("### Checkpoint sensitivity (each trial's last 2 evaluations)")[1].split("###")[0]
    # AVI's three seeds evaluate value_mae at 1.0, 0.6 and a final 0.2, 0.3, 0.4: their last
    # two are (0.6, 0.2), (0.6, 0.3), (0.6, 0.4), means 0.4, 0.45, 0.5: mean 0.45, sd 0.05,
    # half-width t(0.975, 2) * 0.05 / sqrt(3). Min 0.2, max 0.6; each trial's std is
    # |0.6 - final| / sqrt(2): 0.2828, 0.2121, 0.1414, mean 0.2121.
    half = T_0975[2] * 0.05 / 3 ** 0.5
    assert f"| hex-uniform/value_mae | AVI | 3 | 2 | 0.4500 ± {half:.4f} | 0.2000 | 0.6000 | 0.2121 |" in table
    # AZ's two seeds: (0.6, 0.5), (0.6, 0.7): means 0.55, 0.65, sd 0.0707, half-width
    # t(0.975, 1) * 0.0707 / sqrt(2); stds 0.0707 each.
    half = T_0975[1] * 0.1 / 2 ** 0.5 / 2 ** 0.5
    assert f"| hex-uniform/value_mae | AZ S=32 | 2 | 2 | 0.6000 ± {half:.4f} | 0.5000 | 0.7000 | 0.0707 |" in table
    assert "endgame" not in table  # per subset: in the final values' table only


@pytest.mark.slow
@pytest.mark.parametrize("named_by", ["spec", "command line"])
def test_an_arm_with_compare_to_is_paired_with_that_arm_seed_by_seed(tmp_path, named_by, capsys):
    out = _experiment(tmp_path)
    manifest = json.loads((out / "experiment.json").read_text())
    az = next(t for t in manifest["trials"] if t["run_dir"] == "demo-hex-az-s0")
    for seed, final in ((0, 0.40), (1, 0.65)):  # AZ's finals at these seeds: 0.5 and 0.7
        run_dir = f"demo-hex-az_more-s{seed}"
        manifest["trials"].append({**az, "name": f"hex-az_more-s{seed}", "arm": "az_more", "seed": seed,
                                   "run_dir": run_dir})
        (out / run_dir).mkdir()
        records = [{"updates": u, "rows": 32 * u, "compute": 4000.0 * u, "eval/hex-uniform/value_mae": v}
                   for u, v in ((0, 1.0), (10, 0.6), (20, final))]
        (out / run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        (out / run_dir / DONE_FILE).write_text(json.dumps({"final": records[-1]}))
    manifest["arms"]["az_more"] = {"label": "AZ more", **({"compare_to": "az"} if named_by == "spec" else {})}
    (out / "experiment.json").write_text(json.dumps(manifest))
    if named_by == "spec":
        summary = write_experiment_report(out, figures=False, last=2).read_text()
    else:
        assert report_main([str(out), "--last", "2", "--compare", "az_more=az"]) == 0
        summary = (out / "report" / "summary.md").read_text()
        assert f"python -m launch report {out} --compare az_more=az" in summary
    table = summary.split("## hex-one")[0].split("### Paired differences (same seeds, same files)")[1].split("###")[0]
    assert "else the reference arm AVI" in table
    # Finals against AZ's: -0.1 and -0.05, both lower; the last two evaluations' means
    # (0.5, 0.625) against AZ's (0.55, 0.65): -0.05 and -0.025.
    final_half = T_0975[1] * 0.0353553 / 2 ** 0.5
    late_half = T_0975[1] * 0.0176777 / 2 ** 0.5
    assert (f"| AZ more − AZ S=32 | hex-uniform/value_mae | 2 | -0.0750 ± {final_half:.4f} | 0, 0, 2 | "
            f"-0.0375 ± {late_half:.4f} | -0.0750 ± {final_half:.4f} at 20 |") in table
    assert "AZ more − AVI" not in table  # its base is AZ, not the reference arm
    assert "| AZ S=32 − AVI | hex-uniform/value_mae | 2 | 0.3500" in table  # AZ has no compare_to: AVI's


def test_a_pair_one_trial_of_which_stopped_early_is_also_compared_at_matched_updates(tmp_path):
    """A goal ended "az_goal" at 10 updates, its base AZ at 20: the final difference is of
    10 updates against 20; the matched one of both at 10."""
    out = _experiment(tmp_path)
    manifest = json.loads((out / "experiment.json").read_text())
    az = next(t for t in manifest["trials"] if t["run_dir"] == "demo-hex-az-s0")
    for seed, at_ten in ((0, 0.45), (1, 0.50)):  # AZ's at 10 updates: 0.6 in both seeds
        run_dir = f"demo-hex-az_goal-s{seed}"
        manifest["trials"].append({**az, "name": f"hex-az_goal-s{seed}", "arm": "az_goal", "seed": seed,
                                   "run_dir": run_dir})
        (out / run_dir).mkdir()
        records = [{"updates": u, "rows": 32 * u, "compute": 4000.0 * u, "eval/hex-uniform/value_mae": v}
                   for u, v in ((0, 1.0), (10, at_ten))]
        (out / run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        (out / run_dir / DONE_FILE).write_text(json.dumps({"final": records[-1]}))
    manifest["arms"]["az_goal"] = {"label": "AZ goal", "compare_to": "az"}
    (out / "experiment.json").write_text(json.dumps(manifest))
    table = write_experiment_report(out, figures=False, last=2).read_text().split("## hex-one")[0].split(
        "### Paired differences (same seeds, same files)")[1].split("###")[0]
    row = next(line for line in table.splitlines() if line.startswith("| AZ goal − AZ S=32 | hex-uniform/value_mae |"))
    # Finals 0.45 and 0.50 against AZ's 0.5 and 0.7 (at 20): -0.05, -0.2; at 10 updates
    # against AZ's 0.6 in both: -0.15, -0.1. The same mean (AZ's mean is 0.6 at both), but
    # the pairs differ by 0.15 at the end and by 0.05 at matched updates.
    cells = [c.strip() for c in row.strip("|").split("|")]
    final_half, matched_half = (T_0975[1] * sd / 2 ** 0.5 for sd in (0.1060660, 0.0353553))
    assert cells[3] == f"-0.1250 ± {final_half:.4f}", row
    assert cells[6] == f"-0.1250 ± {matched_half:.4f} at 10", row
    assert "the last column compares the two at the same updates" in table


@pytest.mark.parametrize("given, message", [
    ("az=nobody", "--compare az=nobody: 'nobody' is not an arm of this report; arms: avi, az"),
    ("az=az", "--compare az=az: an arm is not compared with itself")])
def test_a_compare_that_names_no_other_arm_is_refused_naming_it(tmp_path, capsys, given, message):
    out = _experiment(tmp_path)
    assert report_main([str(out), "--compare", given]) == 2
    assert message in capsys.readouterr().err
    assert not (out / "report" / "summary.md").exists()
