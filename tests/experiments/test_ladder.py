"""The ladder's report (launch/experiments/ladder.py): the compute each arm takes to reach a
play error rate, against the board's cells.

First on an experiment directory written here (two Connect Four boards, two arms, two
seeds), whose first crossings are chosen by hand and whose Kaplan-Meier medians follow from
them; then the ``ladder-connect4`` spec at its test size on the session's Ray, with a goal
its trials hold at every evaluation (``stop_when``, ``hold``), and its report.
"""

from __future__ import annotations

import json

import pytest

from launch.experiments.layout import DONE_FILE, EXPERIMENT_FILE
from launch.experiments.report import draw_experiment_figures, read_experiment, write_experiment_report


# (board, arm, seed) -> the play error rate at updates 0, 64, 128, ...: each trial stops at
# its first 0 (stop_when), or at its budget, the last value. The first crossings by hand:
#   4x4 AVI: <= 0.05 at 128 and 64; 0 at 192 and 128.
#   4x4 AZ:  <= 0.05 at 192 (0.05 itself counts) and 64; 0 at 128 for seed 1, never for
#            seed 0 (censored at its budget, 320).
#   5x4 AVI: both at 128 for both goals. 5x4 AZ: neither goal, both censored at 128.
ERROR_RATES = {("4x4", "avi", 0): [0.5, 0.2, 0.04, 0.0], ("4x4", "avi", 1): [0.5, 0.03, 0.0],
               ("4x4", "az", 0): [0.6, 0.3, 0.1, 0.05, 0.02, 0.01], ("4x4", "az", 1): [0.6, 0.04, 0.0],
               ("5x4", "avi", 0): [0.5, 0.1, 0.0], ("5x4", "avi", 1): [0.5, 0.1, 0.0],
               ("5x4", "az", 0): [0.7, 0.3, 0.2], ("5x4", "az", 1): [0.7, 0.4, 0.1]}
COMPUTE_PER_UPDATE = {"avi": 1000.0, "az": 4000.0}


def _write_finished_run(run_dir, records: list[dict]) -> None:
    """A trial's run directory as a finished trial leaves it: its records and its DONE_FILE."""
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (run_dir / DONE_FILE).write_text(json.dumps({"final": records[-1]}))


def _ladder(tmp_path, instance=True):
    """An experiment directory as ``launch experiment`` writes one; ``instance=False``: the
    same trials without an instance (a single-game spec), which has no ladder."""
    out = tmp_path / "ladder"
    trials = []
    for (board, arm, seed), rates in ERROR_RATES.items():
        width, height = map(int, board.split("x"))
        run_dir = f"ladder-{board}-{arm}-s{seed}"
        config = {"algo": "avi" if arm == "avi" else "alphazero", "game": "connect4",
                  "game_params": {"width": width, "height": height}}
        trials.append({"name": f"{board}-{arm}-s{seed}", "arm": arm, "group": f"connect4 {board}",
                       "instance": board if instance else "", "seed": seed, "updates": 320, "rows": 1000,
                       "bundles": [{"CPU": 1.0}], "config": config, "run_dir": run_dir})
        play = f"eval/connect4-{board}-play/error_rate"
        records = []
        for i, rate in enumerate(rates):
            u = 64 * i
            # A training record and the evaluation's record at the same update count, as a run logs them.
            records.append({"updates": u, "rows": 32 * u, "compute": COMPUTE_PER_UPDATE[arm] * u})
            records.append({"updates": u, play: rate, f"eval/connect4-{board}-uniform/value_mae": rate / 2})
        _write_finished_run(out / run_dir, records)
    manifest = {"spec": "ladder-test", "description": "a test", "game": "connect4", "size": "small", "updates_override": None,
                "reference_arm": "avi", "arms": {"avi": {"label": "AVI"}, "az": {"label": "AZ S=32"}},
                "trials": trials, "commands": [{"time": "now", "argv": "python -m launch experiment X --out Y"}]}
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    return out


def _row(summary: str, board: str, arm: str, goal: str) -> list[str]:
    rows = [line.split(" | ") for line in summary.splitlines()
            if line.startswith(f"| connect4 {board} |") and f" | {arm} | <= {goal} |" in line]
    assert len(rows) == 1, (board, arm, goal, rows)
    return [cell.strip(" |") for cell in rows[0]]


def test_the_ladder_table_gives_kaplan_meier_medians_over_every_seed(tmp_path):
    summary = write_experiment_report(_ladder(tmp_path), figures=False).read_text()
    assert "## Ladder: compute to reach the play error rate" in summary
    # Columns: board, cells, arm, goal, reached, updates, compute, not reached, files.
    avi = _row(summary, "4x4", "AVI", "0.05")
    assert avi[1] == "16" and avi[4] == "2 of 2"
    # Updates 128 and 64: the share of seeds at the goal is 1/2 from 64, so the median is 64
    # (a mean over the two would say 96); compute 1000 per update.
    assert avi[5].startswith("64 [") and avi[6].startswith(f"{64000:.3g} [") and avi[7] == "–"
    assert "`ladder-4x4-avi-s0/metrics.jsonl`" in avi[8]
    assert _row(summary, "4x4", "AVI", "0")[5].startswith("128 [")  # 192 and 128
    az = _row(summary, "4x4", "AZ S=32", "0.05")  # 192 and 64
    assert az[4] == "2 of 2" and az[5].startswith("64 [")
    # Error rate 0: seed 1 at 128 (compute 4000 x 128), seed 0 never, censored at its budget:
    # half the seeds are there from 128, the median; the mean over the reached seed alone
    # would also say 128 but claim both.
    az = _row(summary, "4x4", "AZ S=32", "0")
    assert az[4] == "1 of 2" and az[5].startswith("128 [") and az[6].startswith(f"{512000:.3g} [")
    assert az[7] == "320 (seed 0)"
    avi = _row(summary, "5x4", "AVI", "0")
    assert avi[1] == "20" and avi[4] == "2 of 2" and avi[5].startswith("128 [")
    az = _row(summary, "5x4", "AZ S=32", "0.05")
    assert az[4:8] == ["0 of 2", "not reached", "not reached", "128 (seed 0), 128 (seed 1)"]
    assert "mean ±" not in summary.split("## Ladder")[1].split("##")[0]
    # Boards by cells: 4x4 (16) before 5x4 (20).
    assert summary.index("| connect4 4x4 |") < summary.index("| connect4 5x4 |")


@pytest.mark.slow
def test_the_ladder_figure_is_drawn_and_an_experiment_without_instances_has_none(tmp_path):
    exp = read_experiment(_ladder(tmp_path))
    (tmp_path / "figures").mkdir()
    names = {p.name for p in draw_experiment_figures(exp, tmp_path / "figures")}
    assert "figure_ladder.png" in names and {"figure_vs_updates.png", "figure_vs_compute.png"} <= names
    assert (tmp_path / "figures" / "figure_ladder.png").read_bytes()[:4] == b"\x89PNG"
    # The same trials, not on instances: one game's boards by accident, not a ladder.
    plain = tmp_path / "plain"
    plain.mkdir()
    summary = write_experiment_report(_ladder(plain, instance=False), figures=False).read_text()
    assert "## Ladder" not in summary and "| connect4-4x4-play/error_rate |" in summary


def test_a_board_no_trial_has_finished_gets_no_figure_row_but_is_named(tmp_path):
    """A ladder stopped by its clock: 5x4's trials not run (no metrics) or cut short (no
    DONE file) leave 4x4 alone in the figures, and the summary names what is missing."""
    out = _ladder(tmp_path)
    (out / "ladder-5x4-avi-s0" / "metrics.jsonl").unlink()
    (out / "ladder-5x4-avi-s1" / "metrics.jsonl").unlink()
    for seed in (0, 1):
        (out / f"ladder-5x4-az-s{seed}" / DONE_FILE).unlink()
    exp = read_experiment(out)
    assert exp.groups == ["connect4 4x4"]
    (tmp_path / "figures").mkdir()
    assert "figure_vs_updates.png" in {p.name for p in draw_experiment_figures(exp, tmp_path / "figures")}
    summary = write_experiment_report(out, figures=False).read_text()
    assert "Not run yet (no metrics.jsonl): ladder-5x4-avi-s0, ladder-5x4-avi-s1" in summary
    assert "ladder-5x4-az-s0, ladder-5x4-az-s1" in summary and "| connect4 5x4 |" not in summary


def test_ladder_connect4_at_its_test_size_stops_at_its_goal_and_reports(ray_session, tmp_path):
    """The spec's test size with a goal every trial reaches at each evaluation (an error
    rate of at most 1), given a budget of four iterations: the goal holds at the first
    three iterations' evaluations, so both trials end after three."""
    from launch.experiments.report import report_main
    from launch.experiments.spec import SPEC_DIR
    from launch.experiments.tune_run import run_experiment

    text = (SPEC_DIR / "ladder-connect4.toml").read_text()
    test_size = text[text.index("[sizes.test]"):]
    assert 'stop_when = { "eval/*-play/error_rate" = 0.0 }' in test_size
    spec = tmp_path / "ladder-connect4.toml"
    assert "set = { replay = { shards = 1 } }" in test_size
    quick = test_size.replace('error_rate" = 0.0', 'error_rate" = 1.0').replace(
        "play_every = 1 }", "play_every = 1, max_openings = 8 }").replace(  # 16 games a play evaluation
        # Half the preset's 32 steps an iteration at half its batch: the same 64 updates an
        # iteration after half the searches (AlphaZero's collection is most of the test's
        # time, one search after the other); every 4x4 game still ends within the 16 steps.
        # Only the play suite, the goal's: AlphaZero's state suites scored by its search
        # would take 12 s an evaluation.
        "set = { replay = { shards = 1 } }",
        "set = { replay = { shards = 1 }, actors = { collect_steps = 16 }, learner = { batch_size = 128 }, "
        'evaluation = { suites = "connect4-4x4-play" } }')
    assert "updates = 128\n" in quick
    quick = quick.replace("updates = 128\n", "updates = 256\n")
    spec.write_text(text.replace(test_size, quick))
    out = tmp_path / "ladder-c4"
    argv = ["python", "-m", "launch", "experiment", str(spec), "--size", "test", "--out", str(out)]
    outcome = run_experiment(str(spec), out, size="test", wandb_mode="disabled", argv=argv)
    assert outcome == {"4x4-avi-s0": "done", "4x4-az32-s0": "done"}
    play = "eval/connect4-4x4-play/error_rate"
    for trial in ("4x4-avi-s0", "4x4-az32-s0"):
        records = [json.loads(line) for line in (out / f"ladder-connect4-{trial}" / "metrics.jsonl").read_text().splitlines()]
        assert play in records[-1] and records[-1][play] <= 1.0, records[-1]
        assert max(r["updates"] for r in records if "updates" in r) == 192  # held at 64, 128, 192: not the budget's 256
        assert records[-1]["end"] == "stopped"
    assert report_main([str(out)]) == 0
    report = out / "report"
    assert (report / "figure_ladder.png").read_bytes()[:4] == b"\x89PNG"
    summary = (report / "summary.md").read_text()
    assert "## Ladder: compute to reach the play error rate" in summary
    for arm in ("AVI", "AlphaZero S=32"):
        for goal in ("0.05", "0"):
            assert f"| connect4 4x4 | 16 | {arm} | <= {goal} | " in summary


def _hybrid_beside_the_ladder(tmp_path) -> tuple:
    """The ladder of ``_ladder`` and a second experiment whose size ran one arm alone
    (``only``): its hybrid at 4x4 with seeds 0 and 1 and at 5x4 with seed 0, each crossing
    both goals at 64 updates."""
    ladder = _ladder(tmp_path)
    out = tmp_path / "hybrid"
    trials = []
    for board, seed in (("4x4", 0), ("4x4", 1), ("5x4", 0)):
        run_dir = f"hybrid-{board}-s{seed}"
        trials.append({"name": f"{board}-hybrid-s{seed}", "arm": "hybrid", "group": f"connect4 {board}",
                       "instance": board, "seed": seed, "updates": 320, "rows": 1000, "bundles": [{"CPU": 1.0}],
                       "config": {"algo": "hybrid", "game": "connect4", "game_params": dict(zip(("width", "height"),
                                                                                                  map(int, board.split("x"))))},
                       "run_dir": run_dir})
        records = [{"updates": 0, "compute": 0.0}, {"updates": 0, f"eval/connect4-{board}-play/error_rate": 0.5},
                   {"updates": 64, "compute": 64 * 2000.0}, {"updates": 64, f"eval/connect4-{board}-play/error_rate": 0.0}]
        _write_finished_run(out / run_dir, records)
    manifest = {"spec": "hybrid-test", "description": "a test", "game": "connect4", "size": "ladder", "updates_override": None,
                "reference_arm": "avi", "arms": {"avi": {"label": "AVI"}, "hybrid": {"label": "Hybrid"}},
                "trials": trials, "commands": [{"time": "now", "argv": "python -m launch experiment H --size ladder"}]}
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    return out, ladder


@pytest.mark.slow
def test_an_experiment_of_one_arm_is_reported_beside_the_trials_it_left_to_another(tmp_path):
    """``report HYBRID --beside LADDER``: the ladder's AVI fills the arm the hybrid's size
    left out (and stays the reference of the paired differences), its AZ joins under its
    spec's name, and only at the boards and seeds the hybrid has: 5x4 takes seed 0 alone."""
    from launch.experiments.report import report_main

    hybrid, ladder = _hybrid_beside_the_ladder(tmp_path)
    assert report_main([str(hybrid), "--beside", str(ladder)]) == 0
    summary = (hybrid / "report" / "summary.md").read_text()
    assert f"python -m launch report {hybrid} --beside {ladder}" in summary
    assert "python -m launch experiment X --out Y" in summary  # the other experiment's commands too
    avi = _row(summary, "4x4", "AVI (ladder-test)", "0")
    assert avi[4] == "2 of 2" and avi[5].startswith("128 [")  # 192 and 128, as in the ladder alone
    assert avi[-1] == "`../ladder/ladder-4x4-avi-s0/metrics.jsonl`, `../ladder/ladder-4x4-avi-s1/metrics.jsonl`"
    hybrid_row = _row(summary, "4x4", "Hybrid", "0")
    assert hybrid_row[4] == "2 of 2" and hybrid_row[5].startswith("64 [")
    assert _row(summary, "4x4", "AZ S=32 (ladder-test)", "0")[4] == "1 of 2"
    for arm in ("AVI (ladder-test)", "AZ S=32 (ladder-test)", "Hybrid"):
        assert _row(summary, "5x4", arm, "0.05")[4].endswith("of 1")  # seed 1 of the ladder's 5x4 left out
    paired = summary[summary.index("## connect4 4x4"):].split("## connect4 5x4")[0]
    assert "| Hybrid − AVI (ladder-test) | connect4-4x4-play/error_rate | 2 |" in paired


def test_beside_refuses_another_game_and_a_directory_that_is_no_experiment(tmp_path, capsys):
    import pytest

    from launch.experiments.report import report_main

    hybrid, ladder = _hybrid_beside_the_ladder(tmp_path)
    manifest = json.loads((ladder / EXPERIMENT_FILE).read_text())
    (ladder / EXPERIMENT_FILE).write_text(json.dumps({**manifest, "game": "hex"}))
    with pytest.raises(ValueError, match="an experiment on 'hex', not on this one's game 'connect4'"):
        write_experiment_report(hybrid, figures=False, beside=[ladder])
    with pytest.raises(SystemExit):
        report_main([str(hybrid), "--beside", str(tmp_path)])
    assert f"--beside {tmp_path}: not an experiment directory (no {EXPERIMENT_FILE})" in capsys.readouterr().err
