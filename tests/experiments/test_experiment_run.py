"""Experiments on Ray Tune end to end (launch/experiments/tune_run.py), on the session's Ray.

The smoke spec at its test size (one seed per arm, one iteration each) is started by
``python -m launch experiment`` in a subprocess joined to the session's Ray, killed
(SIGKILL) once its first trial has finished, and resumed in this process with
``--resume``: the finished trial is not rerun (its files are untouched), the other one
runs, nothing of either is left on the cluster afterwards, and ``launch report`` draws
the experiment. A trial that cannot be placed is refused before anything starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.experiments.report import report_main
from launch.experiment import experiment_main
from launch.experiments.spec import SpecError
from launch.experiments.tune_run import DONE_FILE, EXPERIMENT_FILE, run_experiment

ROOT = Path(__file__).resolve().parents[2]


def _files(run_dir: Path) -> dict:
    return {str(p.relative_to(run_dir)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def _wait(condition, timeout: float, what: str):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.5)


def test_a_spec_the_cluster_cannot_place_is_refused_before_anything_starts(ray_session, tmp_path, capsys):
    spec = tmp_path / "big.toml"
    spec.write_text((ROOT / "experiments" / "smoke.toml").read_text().replace(
        'label = "AVI"', 'label = "AVI"\nset = { actors = { num_actors = 4 } }'))
    out = tmp_path / "exp"
    with pytest.raises(SpecError, match=r"trial avi-s0 \(arm avi\) needs 5 CPU \(4 self-play actors and a CPU "
                                        r"learner\); the cluster has 2 CPU: missing 3 CPU"):
        run_experiment(str(spec), out, size="test", wandb_mode="disabled")
    assert not (out / EXPERIMENT_FILE).exists()
    # The command line says the same, with exit status 2.
    assert experiment_main([str(spec), "--out", str(out), "--size", "test"]) == 2
    assert "missing 3 CPU" in capsys.readouterr().err


def test_smoke_killed_after_its_first_trial_resumes_without_rerunning_it_and_reports(ray_session, tmp_path):
    ray = ray_session
    out = tmp_path / "smoke"
    total_cpus = ray.cluster_resources()["CPU"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "WANDB_MODE": "disabled"}
    command = [sys.executable, "-m", "launch", "experiment", "smoke", "--size", "test", "--out", str(out),
               "--address", ray.get_runtime_context().gcs_address, "--wandb", "disabled"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first, second = out / "smoke-avi-s0", out / "smoke-az16-s0"
    try:
        _wait(lambda: (first / DONE_FILE).exists() or proc.poll() is not None, 150, "the first trial to finish")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the experiment's driver, mid-way
        proc.wait()
    assert (first / DONE_FILE).exists(), "the subprocess ended before its first trial finished"
    assert not (second / DONE_FILE).exists(), "the subprocess finished both trials before it was killed"
    before = _files(first)
    # The killed driver's trials and their placement groups go with it.
    _wait(lambda: ray.available_resources().get("CPU", 0) == total_cpus, 60, "the killed experiment's CPUs")

    # The size is the experiment's, read back from its directory.
    argv = ["python", "-m", "launch", "experiment", "smoke", "--out", str(out), "--resume"]
    outcome = run_experiment("smoke", out, resume=True, wandb_mode="disabled", argv=argv)
    assert outcome == {"avi-s0": "done", "az16-s0": "done"}
    assert _files(first) == before  # not rerun: every file as it was
    assert (second / DONE_FILE).exists()
    # Each finished trial wrote the experiment's trial data, with where each trial ran.
    import pyarrow.parquet as pq

    trials = {t["trial"]: t for t in pq.read_table(out / "data" / "trials.parquet").to_pylist()}
    assert set(trials) == {"avi-s0", "az16-s0"} and all(t["finished"] for t in trials.values())
    assert all(t["commit"] != "unknown" and t["machine"] != "unknown" for t in trials.values()), trials
    evaluated = pq.read_table(out / "data" / "evaluations.parquet").to_pylist()
    assert {e["trial"] for e in evaluated if e["metric"] == "eval/value_mae"} == {"avi-s0", "az16-s0"}
    records = [json.loads(line) for line in (second / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["updates"] == 64 and "eval/value_mae" in records[-1]
    resumed_trials = [p for p in (out / "tune" / "smoke-2").iterdir() if p.is_dir()]
    assert len(resumed_trials) == 1  # only the unfinished trial ran again
    manifest = json.loads((out / EXPERIMENT_FILE).read_text())
    assert [c["argv"].split()[4:5] for c in manifest["commands"]] == [["smoke"], ["smoke"]]

    # Nothing leaks: the trials' CPUs are back and their actors are gone. The trial had
    # reserved both CPUs of the cluster in its placement group, so its 1-CPU learner and
    # actor could only have run inside it (captured as the group's children).
    _wait(lambda: ray.available_resources().get("CPU", 0) == total_cpus, 30, "the trials' CPUs")
    from ray.util import placement_group_table
    groups = list(placement_group_table().values())
    trial_groups = [g for g in groups if sorted(b.get("CPU", 0) for b in g["bundles"].values())[-2:] == [1.0, 1.0]]
    assert trial_groups and all(g["state"] == "REMOVED" for g in trial_groups), groups
    for name in ("smoke-az16-s0-learner", "smoke-az16-s0-selfplay-0", "smoke-az16-s0-replay-shard-0"):
        assert (second / "logs" / f"{name}.log").exists()  # the actor ran under this name (lifecycle's log)
        with pytest.raises(ValueError):
            ray.get_actor(name)

    assert report_main([str(out)]) == 0
    summary = (out / "report" / "summary.md").read_text()
    assert "| AVI | 1 | 64 | 4,096 |" in summary and "| AlphaZero S=16 | 1 | 64 |" in summary
    assert "smoke-avi-s0/metrics.jsonl" in summary and f"--out {out} --resume" in summary
    assert "± 0.0000" not in summary  # one seed: values without an interval
    assert "python -m launch experiment smoke --size test" in summary
    figures = sorted(p.name for p in (out / "report").glob("*.png"))  # a few figures, not one per metric
    assert figures == ["figure_vs_compute.png", "figure_vs_forward.png", "figure_vs_updates.png", "figure_vs_wall.png"]
    for figure in figures:
        assert (out / "report" / figure).read_bytes()[:4] == b"\x89PNG"


def test_a_trial_tune_gives_back_without_its_done_file_is_not_finished(tmp_path):
    """Ray Tune answers an interrupted experiment (Ctrl-C) with results that carry no error:
    only the trial's DONE_FILE says it finished, so the other trial is reported as not
    finished, and the matches and the inference study after the trials do not run."""
    from launch.experiments.spec import load_spec, plan
    from launch.experiments.tune_run import NOT_FINISHED, run_dir_name, trial_outcomes

    smoke = plan(load_spec("smoke"), "test")
    first, second = smoke.trials
    (tmp_path / run_dir_name(smoke, first)).mkdir()
    (tmp_path / run_dir_name(smoke, first) / DONE_FILE).write_text("{}")
    (tmp_path / run_dir_name(smoke, second)).mkdir()  # started, interrupted
    assert trial_outcomes(smoke, tmp_path, {}) == {first.name: "done", second.name: NOT_FINISHED}
    assert trial_outcomes(smoke, tmp_path, {second.name: "RuntimeError: lost"})[second.name] == "RuntimeError: lost"


def test_a_failed_match_is_named_as_such_and_not_counted_as_a_trial(tmp_path, capsys, monkeypatch):
    """The command's last line counts trials only: with both trials done and the matches
    after them failed, it says 2 of 2 trials done, names the matches' error, and exits 1."""
    import launch.experiments.tune_run as tune_run

    outcome = {"a-s0": "done", "b-s0": "done", tune_run.MATCHES: "ValueError: no checkpoint"}
    monkeypatch.setattr(tune_run, "run_experiment", lambda *args, **kwargs: dict(outcome))
    assert experiment_main(["smoke", "--out", str(tmp_path / "x")]) == 1
    captured = capsys.readouterr()
    assert "(2 of 2 trials done)" in captured.out
    assert "head-to-head matches: ValueError: no checkpoint" in captured.err and "trial head-to-head" not in captured.err
