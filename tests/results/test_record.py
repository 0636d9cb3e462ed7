"""An experiment directory's trial data as the results tables: every trial with where it
ran, every evaluation at its counters, and a run without provenance refused by ``add``."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from launch.results.pages import add
from launch.results.record import UNKNOWN, experiment_tables, write_experiment_data
from launch.results.schema import TABLES, table_from_rows
from tests.results.conftest import ERROR_RATES, write_experiment


def test_the_tables_hold_each_trial_and_each_evaluation(experiment_dir):
    tables = experiment_tables(experiment_dir, "study-a")
    trials = tables["trials"].to_pylist()
    assert len(trials) == len(ERROR_RATES)
    row = next(t for t in trials if t["trial"] == "3x3-avi-s1")
    assert (row["arm"], row["arm_label"], row["board"], row["seed"], row["hold"]) == ("avi", "AVI", "hex 3x3", 1, 3)
    assert (row["commit"], row["machine"], row["finished"]) == ("abc1234", "Test CPU, 2 cores, avx2, no GPU", True)
    assert row["final_updates"] == 128 * (len(ERROR_RATES[("3x3", "avi", 1)]) - 1)
    assert json.loads(row["goal"]) == {"eval/*-play/error_rate": 0.0}
    assert row["started"].startswith("2027-01-15T08:00")
    evals = [e for e in tables["evaluations"].to_pylist() if e["trial"] == "3x3-avi-s1"
             and e["metric"] == "eval/hex-3x3-play/error_rate"]
    assert [e["value"] for e in evals] == ERROR_RATES[("3x3", "avi", 1)]
    assert [e["updates"] for e in evals] == [128 * i for i in range(len(evals))]
    assert evals[2]["compute"] == 1000.0 * 256 and evals[2]["rows"] == 64 * 256
    assert not any(e["metric"] == "loss" for e in tables["evaluations"].to_pylist())  # evaluations only


def test_the_experiment_keeps_its_data_and_a_run_without_provenance_is_unknown_there(tmp_path):
    exp = write_experiment(tmp_path / "exp", provenance=False)
    path = write_experiment_data(exp)
    trials = pq.read_table(path / "trials.parquet").to_pylist()
    assert {t["commit"] for t in trials} == {UNKNOWN}
    assert {p.name for p in path.iterdir()} == {"trials.parquet", "evaluations.parquet", "matches.parquet",
                                                "study.json"}


def test_add_refuses_a_run_without_provenance_unless_it_is_stated(tmp_path):
    exp = write_experiment(tmp_path / "exp", provenance=False)
    with pytest.raises(ValueError, match="no provenance file.*--commit and --machine"):
        add(exp, "study-b", commit=None, machine=None, data_root=tmp_path / "results")
    assert not (tmp_path / "results").exists()  # nothing half-written
    out = add(exp, "study-b", commit="def5678", machine="Stated CPU", data_root=tmp_path / "results")
    assert {t["commit"] for t in pq.read_table(out / "trials.parquet").to_pylist()} == {"def5678"}
    with pytest.raises(ValueError, match="lower-case"):
        add(exp, "Bad Name", commit="x", machine="y", data_root=tmp_path / "results")


def test_a_row_that_misses_a_column_is_refused():
    columns = {c.name: 0 for c in TABLES["matches"]}
    del columns["score"]
    with pytest.raises(ValueError, match=r"missing \['score'\]"):
        table_from_rows("matches", [columns])
