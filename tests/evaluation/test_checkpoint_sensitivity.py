"""The run report's checkpoint sensitivity (``python -m launch report RUN_DIR --last K``):
mean, min, max and standard deviation of each suite-level metric over the run's last K
evaluations, on a ``metrics.jsonl`` written here with values whose statistics are worked
out by hand below."""

from __future__ import annotations

import json

import pytest

from launch.experiments.report import report_main

# Evaluations at updates 0..6; updates 4 is logged twice (a resumed run logs again what it
# did after its last checkpoint): the later record, 0.3, is the run's.
VALUE_MAE = [(0, 0.6), (1, 0.5), (2, 0.2), (3, 0.4), (4, 9.9), (4, 0.3), (5, 0.1), (6, 0.5)]


def _run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"algo": "avi", "game": "chomp", "game_params": {}}))
    records = [{"updates": u, "eval/chomp-9x10/value_mae": v, "eval/chomp-9x10/early/value_mae": 2 * v} for u, v in VALUE_MAE]
    records.insert(3, {"updates": 2, "loss": 0.7})  # a training record: no evaluation
    # A play suite evaluated less often: its own last evaluations, here two.
    records += [{"updates": 3, "eval/chomp-play/error_rate": 0.25}, {"updates": 6, "eval/chomp-play/error_rate": 0.75}]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return run


def _rows(summary: str) -> dict:
    table = summary.split("## Checkpoint sensitivity", 1)[1]
    return {cells[1]: cells[2:] for line in table.splitlines()
            if line.startswith("| avi chomp") and (cells := [c.strip() for c in line.strip("|").split("|")])}


def test_the_last_k_evaluations_of_each_metric(tmp_path, capsys):
    run = _run(tmp_path)
    assert report_main([str(run), "--out", str(tmp_path / "out")]) == 0
    rows = _rows((tmp_path / "out" / "summary.md").read_text())
    # K = 5 (the default): 0.2, 0.4, 0.3, 0.1, 0.5. Mean 1.5 / 5 = 0.3; deviations -0.1, 0.1,
    # 0, -0.2, 0.2: squares sum to 0.1, sample variance 0.1 / 4 = 0.025, std 0.1581.
    assert rows["chomp-9x10/value_mae"] == ["5", "0.3000", "0.1000", "0.5000", "0.1581"]
    # Two evaluations only: mean 0.5, std |0.75 - 0.25| / sqrt(2) = 0.3536.
    assert rows["chomp-play/error_rate"] == ["2", "0.5000", "0.2500", "0.7500", "0.3536"]
    assert "chomp-9x10/early/value_mae" not in rows  # per subset: in the final values' table only

    assert report_main([str(run), "--out", str(tmp_path / "k2"), "--last", "2"]) == 0
    rows = _rows((tmp_path / "k2" / "summary.md").read_text())
    # K = 2: 0.1, 0.5: mean 0.3, std 0.4 / sqrt(2) = 0.2828.
    assert rows["chomp-9x10/value_mae"] == ["2", "0.3000", "0.1000", "0.5000", "0.2828"]

    assert report_main([str(run), "--out", str(tmp_path / "k1"), "--last", "1"]) == 0
    rows = _rows((tmp_path / "k1" / "summary.md").read_text())
    assert rows["chomp-9x10/value_mae"] == ["1", "0.5000", "0.5000", "0.5000", "–"]  # one value: no spread


def test_k_below_one_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        report_main([str(_run(tmp_path)), "--last", "0"])
    assert "--last: must be at least 1, got 0" in capsys.readouterr().err
