"""An experiment directory's layout (``python -m launch experiment DIR``): written by the
trials (``tune_run.py``), the matches (``matches.py``) and the inference study
(``inference.py``), read by the report (``report.py``)."""

from __future__ import annotations

from pathlib import Path

EXPERIMENT_FILE = "experiment.json"  # the plan and the commands that ran it (tune_run.py)
DONE_FILE = "trial.json"  # in a trial's run directory once the trial has finished (tune_run.py)
MATCH_DIR = "matches"  # the head-to-head results (matches.py)
INFERENCE_DIR = "inference"  # the inference study's results (inference.py)
TUNING_DIR = "tuning"  # one launch tune directory per tuning step of the size, TUNING_DIR/<instance>-<arm>
# A step whose value was chosen at an end of its range tunes again past that end, in
# TUNING_DIR/<instance>-<arm>-beyond; its tune.json names the step it extends and the choice over both.
BEYOND = "-beyond"
TUNE_FILE = "tune.json"  # in a launch tune directory once the tuning has ended (tuning.py)
TUNE_REPORT = "tune.md"  # its report (tuning.py)


def match_path(exp_dir, match: dict) -> Path:
    """Where a head-to-head match's result is kept (launch/experiments/matches.py)."""
    return Path(exp_dir) / MATCH_DIR / f"{match['name']}.json"


def inference_path(exp_dir, point: dict) -> Path:
    """Where an inference point's result is kept (launch/experiments/inference.py)."""
    return Path(exp_dir) / INFERENCE_DIR / f"{point['name']}.json"
