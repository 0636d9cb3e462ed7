"""Figure 1, its tables and Table 2 drawn from a study's data (launch/results/figure1.py):
an experiment directory written here with values chosen by hand, its data recorded as
``results add`` records it, and the fragments' numbers checked against scipy's own
Student-t and Welch intervals of those values."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy import stats as st

from launch.experiments.layout import DONE_FILE, EXPERIMENT_FILE, match_path
from launch.results.data import load_study
from launch.results.fragments import KINDS, Context
from launch.results.pages import add
from launch.run_dir import PROVENANCE_FILE

BUDGET = 1000
UPDATES = [0, 200, 400, 600, 800, 1000]
# (arm, seed) -> value MAE at each evaluation; regret and error rates follow from it below.
VALUE_MAE = {("avi", 0): [0.8, 0.4, 0.2, 0.10, 0.10, 0.10], ("avi", 1): [0.8, 0.5, 0.3, 0.12, 0.11, 0.12],
             ("avi", 2): [0.8, 0.3, 0.2, 0.09, 0.08, 0.08],
             ("az8", 0): [0.8, 0.7, 0.6, 0.50, 0.45, 0.40], ("az8", 1): [0.8, 0.7, 0.65, 0.55, 0.50, 0.46],
             ("az8", 2): [0.8, 0.6, 0.55, 0.50, 0.48, 0.44]}
SCORES = {0: 0.5, 1: 0.5, 2: 0.75}  # AVI's score against AlphaZero S=8 per seed


def _metrics(arm: str, seed: int, i: int) -> dict:
    mae = VALUE_MAE[(arm, seed)][i]
    out = {"eval/hex-4x4-uniform/value_mae": mae, "eval/hex-4x4-uniform/policy_regret": mae / 2,
           "eval/hex-4x4-play/error_rate": min(1.0, mae / 4)}
    if arm == "az8":  # its search scores better than its policy head
        out.update({"eval/hex-4x4-uniform@mcts8/policy_regret": mae / 8, "eval/hex-4x4-play@mcts8/error_rate": mae / 16})
    return out


@pytest.fixture
def study(tmp_path):
    out = tmp_path / "exp"
    out.mkdir()
    trials, matches = [], []
    for (arm, seed), values in VALUE_MAE.items():
        run_dir = f"figure1-small-hex4-{arm}-s{seed}"
        config = {"algo": "avi" if arm == "avi" else "alphazero", "game": "hex", "game_params": {"size": 4}}
        trials.append({"name": f"hex4-{arm}-s{seed}", "arm": arm, "group": "hex 4x4", "instance": "hex4",
                       "seed": seed, "updates": BUDGET, "rows": 1000, "bundles": [], "config": config,
                       "stop_when": {}, "hold": 3, "run_dir": run_dir, "tuned": {}})
        records = []
        for i, u in enumerate(UPDATES):
            records.append({"time": 1.8e9 + u, "updates": u, "rows": 64 * u, "compute": (1 if arm == "avi" else 3) * u})
            records.append({"time": 1.8e9 + u + 1, "updates": u, **_metrics(arm, seed, i)})
        (out / run_dir).mkdir()
        (out / run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        (out / run_dir / "config.json").write_text(json.dumps(config))
        (out / run_dir / DONE_FILE).write_text(json.dumps({"final": records[-1]}))
        (out / run_dir / PROVENANCE_FILE).write_text(json.dumps({"time": 1.8e9, "resumed": False, "commit": "abc1234",
                                                                 "machine": "Test CPU, 2 cores, no GPU"}) + "\n")
    for seed, score in SCORES.items():
        match = {"arm": "avi", "opponent": "az8", "suite": "hex-4x4-h2h", "policy": "greedy",
                 "opponent_policy": "mcts", "simulations": 8, "name": f"hex4-avi-s{seed}-vs-az8",
                 "trial": f"hex4-avi-s{seed}", "opponent_trial": f"hex4-az8-s{seed}", "group": "hex 4x4", "seed": seed}
        matches.append(match)
        wins = int(round(8 * (1 + score) / 2))
        path = match_path(out, match)
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"match": match, "sides": {
            "a": {"trial": match["trial"], "policy": "greedy"},
            "b": {"trial": match["opponent_trial"], "policy": "mcts", "simulations": 8}},
            "metrics": {"eval/hex-4x4-h2h/wins": wins, "eval/hex-4x4-h2h/draws": 0,
                        "eval/hex-4x4-h2h/losses": 8 - wins, "eval/hex-4x4-h2h/score": score}}))
    (out / EXPERIMENT_FILE).write_text(json.dumps({
        "spec": "figure1-small", "game": "hex", "size": "small", "reference_arm": "avi",
        "arms": {"avi": {"algo": "avi", "label": "AVI"}, "az8": {"algo": "alphazero", "label": "AlphaZero S=8"}},
        "trials": trials, "matches": matches, "inference": [], "commands": []}))
    root = tmp_path / "results"
    add(out, "f1", commit=None, machine=None, data_root=root)
    return load_study("f1", root), Context(page=tmp_path / "docs" / "page.md", root=root)


def _row(text: str, *cells: str) -> list[str]:
    for line in text.splitlines():
        parts = [p.strip() for p in line.strip("|").split("|")]
        if parts[:len(cells)] == list(cells):
            return parts
    raise AssertionError(f"no row {cells} in\n{text}")


def _t(values, low=-np.inf, high=np.inf):
    mean = np.mean(values)
    lo, hi = st.t.interval(0.95, len(values) - 1, loc=mean, scale=st.sem(values))
    return f"{mean:.3f} [{max(low, lo):.3f}, {min(high, hi):.3f}]"


def test_the_final_table_gives_each_arm_by_its_policy_and_by_its_search_with_t_intervals(study):
    data, ctx = study
    text = KINDS["figure1-final"](data, {}, ctx)
    avi_mae = [VALUE_MAE[("avi", s)][-1] for s in range(3)]
    az_mae = [VALUE_MAE[("az8", s)][-1] for s in range(3)]
    avi = _row(text, "hex 4x4", "AVI")
    assert avi[2:5] == ["3", _t(avi_mae, 0, 2), _t([v / 2 for v in avi_mae], 0, 2)]
    assert avi[5] == "–"  # AVI has no search to score
    az = _row(text, "hex 4x4", "AlphaZero S=8")
    assert az[5] == _t([v / 8 for v in az_mae], 0, 2) and az[7] == _t([v / 16 for v in az_mae], 0, 1)
    assert az[8].startswith("3.00 ")  # three times AVI's compute at every seed


def test_the_flat_table_reads_the_change_over_the_last_fifth(study):
    data, ctx = study
    text = KINDS["figure1-flat"](data, {}, ctx)
    # From the evaluation at 800 (80% of 1000) to 1000.
    avi = [VALUE_MAE[("avi", s)][-1] - VALUE_MAE[("avi", s)][-2] for s in range(3)]
    az = [VALUE_MAE[("az8", s)][-1] - VALUE_MAE[("az8", s)][-2] for s in range(3)]
    assert _row(text, "hex 4x4", "AVI")[3].endswith(": flat")
    assert _row(text, "hex 4x4", "AlphaZero S=8")[3].endswith(": falling")
    lo, hi = st.t.interval(0.95, 2, loc=np.mean(az), scale=st.sem(az))
    assert _row(text, "hex 4x4", "AlphaZero S=8")[3] == f"{np.mean(az):+.3f} [{lo:+.3f}, {hi:+.3f}]: falling"
    assert abs(np.mean(avi)) < 0.01


def test_table2_names_each_sides_policy_and_budget_and_the_score_over_seeds(study):
    data, ctx = study
    text = KINDS["table2"](data, {}, ctx)
    row = _row(text, "hex 4x4", "AVI (greedy)", "AlphaZero S=8 (mcts, 8 simulations)")
    assert row[3:6] == ["3", "24", f"{sum(int(round(8 * (1 + s) / 2)) for s in SCORES.values())} / 0 / "
                                   f"{sum(8 - int(round(8 * (1 + s) / 2)) for s in SCORES.values())}"]
    assert row[6] == _t(list(SCORES.values()), -1, 1)


def test_the_verdict_states_each_claim_as_the_data_decides_it(study):
    data, ctx = study
    text = KINDS["figure1-verdict"](data, {}, ctx)
    avi_mae = [VALUE_MAE[("avi", s)][-1] for s in range(3)]
    az_mae = [VALUE_MAE[("az8", s)][-1] for s in range(3)]
    mae = _row(text, "hex 4x4", "AVI's value MAE is below AlphaZero's at every S")
    ci = st.ttest_ind(az_mae, avi_mae, equal_var=False).confidence_interval(0.95)
    assert mae[2] == "holds" and f"[{ci.low:.3f}, {ci.high:.3f}]" in mae[3]
    # Regret: AVI's is half its MAE, AlphaZero's search's an eighth of its own; the error
    # rate: a quarter against a sixteenth, where AlphaZero's search is clearly lower.
    for name, avi_share, az_share in (("regret", 2, 8), ("error rate", 4, 16)):
        ci = st.ttest_ind([v / avi_share for v in avi_mae], [v / az_share for v in az_mae],
                          equal_var=False).confidence_interval(0.95)
        word = "below" if ci.high < 0 else ("above" if ci.low > 0 else "close: the interval holds 0")
        row = _row(text, "hex 4x4", f"greedy AVI's {name} is close to or below the best AlphaZero's (search)")
        assert row[2] == word and f"[{ci.low:.3f}, {ci.high:.3f}]" in row[3]
    assert _row(text, "hex 4x4", "greedy AVI's error rate is close to or below the best AlphaZero's (search)")[2] \
        == "close: the interval holds 0"
    assert _row(text, "hex 4x4", "the gap grows over training")[2].startswith("holds")
    assert _row(text, "hex 4x4", "Table 2: greedy AVI scores above AlphaZero at its largest S")[2] == "holds"


def test_figure1_is_drawn_with_its_digest(study, tmp_path):
    data, ctx = study
    text = KINDS["figure"](data, {"kind": "figure1"}, ctx)
    path = tmp_path / "docs" / "figures" / "f1-figure1.png"
    assert path.is_file() and re.search(r"\(figures/f1-figure1\.png\)", text)
    from launch.results.figures import recorded_digest

    assert recorded_digest(path) is not None
