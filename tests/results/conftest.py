"""An experiment directory as ``launch experiment`` leaves one, written here with values
chosen by hand, for the results tests: two Hex boards, two arms, three seeds."""

from __future__ import annotations

import json

import pytest

from launch.experiments.layout import DONE_FILE, EXPERIMENT_FILE
from launch.run_dir import PROVENANCE_FILE

PLAY = "eval/hex-{board}-play/error_rate"
MAE = "eval/hex-{board}-uniform/value_mae"
# (board, arm, seed) -> the play error rate at updates 0, 128, 256, ...: a trial stops once
# it holds 0 at 3 evaluations in a row, or at its budget (768: 7 evaluations).
ERROR_RATES = {
    ("3x3", "avi", 0): [0.5, 0.0, 0.0, 0.0],  # first 128, held from 128
    ("3x3", "avi", 1): [0.5, 0.1, 0.0, 0.02, 0.0, 0.0, 0.0],  # first 256, held from 512
    ("3x3", "avi", 2): [0.5, 0.2, 0.1, 0.0, 0.0, 0.0],  # first 384, held from 384
    ("3x3", "az", 0): [0.6, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01],  # never: censored at 768
    ("3x3", "az", 1): [0.6, 0.0, 0.1, 0.0, 0.0, 0.0],  # first 128, held from 384
    ("3x3", "az", 2): [0.6, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1],  # never
}
COMPUTE_PER_UPDATE = {"avi": 1000.0, "az": 4000.0}


def write_experiment(out, *, provenance: bool = True, rates=ERROR_RATES):
    out.mkdir(parents=True)
    trials = []
    for (board, arm, seed), values in rates.items():
        size = int(board[0])
        run_dir = f"ladder-{board}-{arm}-s{seed}"
        config = {"algo": "avi" if arm == "avi" else "alphazero", "game": "hex", "game_params": {"size": size},
                  "actors": {"epsilon": 0.3}}
        trials.append({"name": f"{board}-{arm}-s{seed}", "arm": arm, "group": f"hex {board}", "instance": board,
                       "seed": seed, "updates": 768, "rows": 1000, "bundles": [{"CPU": 1.0}], "config": config,
                       "stop_when": {"eval/*-play/error_rate": 0.0}, "hold": 3, "run_dir": run_dir})
        records = []
        for i, rate in enumerate(values):
            u = 128 * i
            records.append({"time": 1.8e9 + 10 * u, "updates": u, "rows": 64 * u, "compute": COMPUTE_PER_UPDATE[arm] * u})
            records.append({"time": 1.8e9 + 10 * u + 5, "updates": u, PLAY.format(board=board): rate,
                            MAE.format(board=board): 0.3 + rate / 2, "loss": 0.1})
        path = out / run_dir
        path.mkdir()
        (path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        (path / "config.json").write_text(json.dumps(config))
        (path / DONE_FILE).write_text(json.dumps({"final": records[-1]}))
        if provenance:
            (path / PROVENANCE_FILE).write_text(json.dumps({"time": 1.8e9, "resumed": False, "commit": "abc1234",
                                                            "machine": "Test CPU, 2 cores, avx2, no GPU"}) + "\n")
    manifest = {"spec": "ladder-hex", "description": "a test", "game": "hex", "size": "small-held",
                "reference_arm": "avi", "arms": {"avi": {"algo": "avi", "label": "AVI"},
                                                 "az": {"algo": "alphazero", "label": "AlphaZero S=32"}},
                "trials": trials, "matches": [], "inference": [],
                "commands": [{"time": "2027-01-15 08:00:00", "argv": "python -m launch experiment ladder-hex --out X"}]}
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    return out


@pytest.fixture
def experiment_dir(tmp_path):
    return write_experiment(tmp_path / "exp")
