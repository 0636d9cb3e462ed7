"""How a run appears in W&B (``launch/wandb_run.py``): a plain run and an experiment's
trial filed by group, job type, name, tags and config entries; ``updates``, ``compute``
and ``elapsed`` declared as x-axes; the rows of a trial's evaluation table. The filing
and the axes are read back from the file of a real offline W&B run."""

from __future__ import annotations

import json
import struct
import time

import pytest
from wandb.proto import wandb_internal_pb2

from launch import wandb_run
from launch.metrics import MetricsLogger

CONFIG = {"algo": "avi", "game": "connect4", "game_params": {"width": 5, "height": 4}, "seed": 1}


def wandb_records(path) -> list:
    """The records of a ``run-*.wandb`` file, as far as it is written: LevelDB's log format
    (32 KiB blocks of chunks, each a 7-byte header: checksum, length, kind) after a 7-byte
    file header."""
    data, block, records, chunks, at = path.read_bytes(), 32768, [], b"", 7
    while at + 7 <= len(data):
        if block - at % block < 7:  # a block's tail too short for a header is padding
            at += block - at % block
            continue
        _, length, kind = struct.unpack("<IHB", data[at:at + 7])
        if at + 7 + length > len(data):  # a chunk still being written
            break
        chunks += data[at + 7:at + 7 + length]
        at += 7 + length
        if kind in (1, 4):  # a whole record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunks)
            records.append(record)
            chunks = b""
    return records


@pytest.fixture
def wandb_home(tmp_path, monkeypatch):
    """W&B's own settings and caches in the test's directory, never the user's."""
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb-home"))
    monkeypatch.delenv("WANDB_RUN_GROUP", raising=False)
    monkeypatch.delenv("WANDB_PROJECT", raising=False)


def offline_run(run_dir, wandb_as=None) -> list:
    """The W&B records of a run that logs two records offline through ``MetricsLogger``."""
    run_dir.mkdir()
    logger = MetricsLogger(run_dir, CONFIG, wandb_mode="offline", wandb_as=wandb_as)
    logger.log({"updates": 0, "rows": 0, "compute": 0.0, "elapsed": 0.0, "eval/connect4-5x4-play/error_rate": 0.5})
    logger.log({"updates": 8, "rows": 512, "compute": 4096.0, "elapsed": 3.5, "loss": 0.25})
    logger.close()
    files = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1, files
    # W&B's service may still be writing the file when finish() returns: its last record
    # is the run's exit.
    deadline = time.monotonic() + 30
    while True:
        records = wandb_records(files[0])
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"{files[0]}: no exit record after 30 s"
        time.sleep(0.2)


def test_a_trial_is_filed_by_experiment_arm_instance_and_seed(tmp_path, wandb_home):
    trial = wandb_run.trial_run("ladder-connect4", "avi-s32", "5x4", 1, CONFIG)
    records = offline_run(tmp_path / "run", trial)
    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert (run.run_group, run.job_type, run.display_name) == ("ladder-connect4", "avi-s32", "avi-s32-5x4-s1")
    assert list(run.tags) == ["ladder-connect4", "avi-s32", "5x4", "seed1"]
    config = {u.key: u.value_json for u in run.config.update}
    assert (config["experiment"], config["arm"], config["instance"], config["seed"]) == (
        '"ladder-connect4"', '"avi-s32"', '"5x4"', "1")
    assert config["algo"] == '"avi"'  # the run's own config beside them
    # The x-axes: declared, and every other key plotted against updates.
    metrics = [r.metric for r in records if r.WhichOneof("record_type") == "metric"]
    assert {m.name for m in metrics if m.name} == set(wandb_run.X_AXES)
    assert [(m.glob_name, m.step_metric) for m in metrics if m.glob_name] == [("*", "updates")]
    # Offline: no evaluation table (it is uploaded only online).
    logged = {i.nested_key[0] if i.nested_key else i.key for r in records if r.WhichOneof("record_type") == "history"
              for i in r.history.item}
    assert "eval/connect4-5x4-play/error_rate" in logged and wandb_run.EVALUATION_TABLE not in logged


def test_a_plain_run_is_filed_by_algorithm_and_game(tmp_path, wandb_home):
    records = offline_run(tmp_path / "my-run")
    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert (run.run_group, run.job_type, run.display_name) == ("avi-connect4", "train", "my-run")
    assert list(run.tags) == ["avi", "connect4"]


def test_init_args_pass_the_filing_explicitly():
    trial = wandb_run.trial_run("fgames", "az", "", 2, {"algo": "alphazero", "game": "connect4", "game_params": {}})
    args = wandb_run.init_args(trial, run_id="abc", mode="offline", directory="/tmp/x", config={"lr": 0.1})
    assert (args["group"], args["job_type"], args["name"]) == ("fgames", "az", "az-connect4-s2")  # no instance: the board
    assert args["tags"] == ["fgames", "az", "connect4", "seed2"]
    assert args["config"] == {"lr": 0.1, "experiment": "fgames", "arm": "az", "instance": "connect4", "seed": 2}
    assert (args["id"], args["resume"], args["mode"], args["dir"]) == ("abc", "allow", "offline", "/tmp/x")
    assert trial.evaluation_table and not wandb_run.plain_run(CONFIG, "run").evaluation_table
    assert wandb_run.board_label("connect4", {"width": 5, "height": 4}) == "connect4-height4-width5"


def test_the_evaluation_table_has_a_row_per_evaluation():
    records = [
        {"updates": 0, "rows": 0, "compute": 0.0, "elapsed": 0.1, "eval/a/error_rate": 0.5, "eval/a/name": "x"},
        {"updates": 8, "rows": 512, "compute": 4096.0, "elapsed": 2.0, "loss": 0.3},  # no evaluation
        {"updates": 16, "rows": 1024, "compute": 8192.0, "elapsed": 4.0, "eval/b/value_mae": 0.2,
         "eval/a/error_rate": float("nan"), "eval/a/flag": True},
    ]
    columns, rows = wandb_run.evaluation_rows(records)
    assert columns == ["updates", "rows", "compute", "elapsed", "eval/a/error_rate", "eval/b/value_mae"]
    assert rows == [[0, 0, 0.0, 0.1, 0.5, None], [16, 1024, 8192.0, 4.0, None, 0.2]]
    assert wandb_run.evaluation_rows([{"updates": 1, "loss": 0.1}]) == (
        ["updates", "rows", "compute", "elapsed"], [])


def test_the_evaluation_table_is_a_wandb_table(tmp_path, wandb_home):
    """Logged by a real (offline) W&B run: the rows as :func:`evaluation_rows` gives them
    make a ``wandb.Table`` (the logger itself logs it only online)."""
    started = wandb_run.start(wandb_run.plain_run(CONFIG, "run"), run_id="table01", mode="offline",
                              directory=str(tmp_path), config=CONFIG)
    wandb_run.log_evaluation_table(started, [{"updates": 0, "rows": 0, "compute": 0.0, "elapsed": 0.1,
                                              "eval/a/error_rate": 0.5},
                                             {"updates": 8, "rows": 64, "compute": 512.0, "elapsed": 1.0,
                                              "eval/b/value_mae": 0.2}])
    started.finish()
    table = next((tmp_path / "wandb").glob(f"offline-run-*/files/media/table/{wandb_run.EVALUATION_TABLE}_*.table.json"))
    content = json.loads(table.read_text())
    assert content["columns"] == ["updates", "rows", "compute", "elapsed", "eval/a/error_rate", "eval/b/value_mae"]
    assert content["data"] == [[0, 0, 0.0, 0.1, 0.5, None], [8, 64, 512.0, 1.0, None, 0.2]]
