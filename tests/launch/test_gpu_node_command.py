"""``python -m benchmarks.gpu_node`` in its small size: the command prepared for a
GPU node runs every phase on a CPU machine, writes its JSON summary and a training run
whose newest checkpoint ``launch evaluate`` scores here, as a checkpoint trained on the
node is scored."""

from __future__ import annotations

import json

from benchmarks import gpu_node
from evaluation.cli import evaluate_main
from learner.checkpoint import latest_checkpoint


def test_small_gpu_node_command_runs_every_phase_and_its_checkpoint_scores(ray_session, tmp_path, capsys):
    status = gpu_node.main(["--minutes", "0.15", "--out", str(tmp_path), "--size", "small"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert status == 0 and summary["errors"] == {}, summary["errors"]
    assert summary["size"] == "small" and summary["environment"]["device"] == "cpu"
    learner = {(r["game"], r["precision"]): r for r in summary["learner"]}
    assert set(learner) == {("connect4", "fp32"), ("othello", "fp32")}
    assert all(r["updates_per_s"] > 0 and r["updates"] >= 8 for r in learner.values())
    assert learner[("othello", "fp32")]["augment"] is True  # Othello's preset trains on symmetric images
    assert [s["eval_cache"] for s in summary["inference"]["server"]] == ["off", "cache"]
    assert all(s["positions_per_s"] > 0 for s in summary["inference"]["network"] + summary["inference"]["server"])
    assert summary["mcts"]["processes"]["processes"] == 2 and summary["mcts"]["processes"]["simulations_per_s"] > 0
    train = summary["train"]
    # Rows and updates at the paper's replay ratio: 4 gradient samples per row, batch 256.
    assert train["updates"] > 0 and train["rows"] > 0 and train["rows_per_s"] > 0
    assert 32 <= train["rows_per_update"] <= 128, train["rows_per_update"]
    assert train["config"]["learner"]["batches_per_request"] == 8
    run_dir = tmp_path / "run"
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["updates"] == train["updates"]
    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    assert checkpoint is not None
    capsys.readouterr()
    assert evaluate_main(["--checkpoint", str(checkpoint), "--game", "connect4", "--suite", "connect4-uniform",
                          "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert 0 <= scores["eval/connect4-uniform/value_mae"] <= 2, scores
