"""The evaluator actor inside a real training run: its suites' curves reach
``metrics.jsonl`` and the offline W&B run file, from the untrained network on."""

from __future__ import annotations

import dataclasses

import pytest

from launch.config import ConfigError, resolve
from launch.metrics import read_metrics
from launch.train import train

TINY = ['game_params={"rows": 4, "cols": 5}', "network.width=32", "actors.num_envs=32", "actors.collect_steps=4",
        "learner.epochs_per_iteration=2", "replay.capacity=4096", "learner.batch_size=64", "evaluation.every=2", "checkpoint_every=2"]


def test_evaluator_curves_reach_metrics_and_wandb(ray_session, tmp_path):
    config = resolve("chomp", "small", TINY, algo="avi")
    run_dir, _ = train(config, run_dir=tmp_path / "run", updates=6 * config.updates_per_iteration,
                       wandb_mode="offline")
    records = read_metrics(run_dir)
    key = "eval/chomp-4x5-states/value_mae"
    evaluated = [r["iteration"] for r in records if key in r]
    assert evaluated[:1] == [0] and len(evaluated) >= 3, evaluated  # untrained, then every 2 iterations
    assert not any("eval/value_mae" in r for r in records)  # one path: not the built-in labels again
    last = [r for r in records if key in r][-1]
    for suite_key in ("eval/chomp-4x5-play/error_rate", "eval/chomp-4x5-traces/match",
                      "eval/chomp-4x5-states/policy_regret", "eval/chomp-4x5-states/inference_evals"):
        assert suite_key in last
    assert 0 <= last["eval/chomp-4x5-play/error_rate"] <= 1
    assert not any("@" in k for r in records for k in r)  # AVI searches no tree: its policy alone is scored
    wandb_files = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert wandb_files and b"eval/chomp-4x5-traces/match" in wandb_files[0].read_bytes()


def test_alphazero_scores_its_suites_with_the_policy_head_and_its_training_search(ray_session, tmp_path):
    """Connect Four 4x4, a few updates: every evaluation holds each suite's policy-head
    keys and, under ``<suite>@mcts8``, those of PUCT at the actors' 8 simulations, the
    value head's metrics once; the run's records name no other search."""
    config = resolve("connect4", "paper", ['game_params={"width": 4, "height": 4}', "network.width=32",
                                           "network.head_width=32", "actors.num_envs=16", "actors.collect_steps=8",
                                           "actors.mcts.simulations=8", "learner.batch_size=64",
                                           "learner.epochs_per_iteration=1", "replay.shards=1",
                                           "evaluation.suites=connect4-4x4-uniform,connect4-4x4-play",
                                           "evaluation.max_openings=8"], algo="alphazero")
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=config.updates_per_iteration,
                          wandb_mode="disabled")
    records = read_metrics(run_dir)
    evaluations = [r for r in records if "eval/connect4-4x4-play/error_rate" in r]
    assert len(evaluations) == 2  # the untrained network's, and after training
    for r in evaluations:
        for kind in ("error_rate", "move_match_rate", "games"):
            assert f"eval/connect4-4x4-play@mcts8/{kind}" in r, kind
        # Every decision metric of the states suite, per subset too, by both; its value's once.
        states = {k.removeprefix("eval/connect4-4x4-uniform/") for k in r if k.startswith("eval/connect4-4x4-uniform/")}
        decisions = {k for k in states if k.endswith(("policy_regret", "optimal_move_rate", "/states"))}
        assert "policy_regret" in decisions and any("/" in k for k in decisions)
        assert {k.removeprefix("eval/connect4-4x4-uniform@mcts8/") for k in r
                if k.startswith("eval/connect4-4x4-uniform@mcts8/")} == decisions | {
                    "states", "inference_evals", "inference_evals_per_decision", "seconds"}
        assert "value_mae" in states
        # The policy head: one forward pass a decision (of both mirror images); the search: one a simulation.
        head = r["eval/connect4-4x4-play/inference_evals_per_decision"]
        assert head == 2.0 and r["eval/connect4-4x4-play@mcts8/inference_evals_per_decision"] > 2 * head
        assert r["eval/connect4-4x4-play@mcts8/games"] == r["eval/connect4-4x4-play/games"] == 2 * 8
    searched = {k.split("/")[1] for r in records for k in r if "@" in k}
    assert searched == {"connect4-4x4-uniform@mcts8", "connect4-4x4-play@mcts8"}


def test_an_unknown_suite_stops_the_run_at_start(ray_session, tmp_path):
    # Refused with the config, before Ray starts, naming the game's suites ...
    with pytest.raises(ConfigError, match="no-such-suite is not among the suites of .*chomp-4x5-states"):
        resolve("chomp", "small", TINY + ["evaluation.suites=chomp-4x5-states,no-such-suite"])
    # ... and by the evaluator where a config skipped that check.
    config = resolve("chomp", "small", TINY + ["evaluation.suites=chomp-4x5-states"])
    config = dataclasses.replace(config, evaluation=dataclasses.replace(
        config.evaluation, suites="chomp-4x5-states,no-such-suite"))
    with pytest.raises(Exception, match="no-such-suite"):
        train(config, run_dir=tmp_path / "run", updates=1, wandb_mode="disabled")
    with pytest.raises(ConfigError, match="evaluation.policy=telepathy.*policy must be one of"):
        resolve("chomp", "small", TINY + ["evaluation.policy=telepathy"])


def test_the_run_starts_the_oracle_service_for_connect4_play_and_traces():
    from launch.evaluator import evaluator_needs_oracle

    assert evaluator_needs_oracle("connect4", "connect4-uniform,connect4-play")
    assert evaluator_needs_oracle("connect4", "connect4-traces")
    assert evaluator_needs_oracle("connect4", "auto")  # the defaults include play and traces
    # Labelled states only, no suites, and games whose oracle is a table.
    assert not evaluator_needs_oracle("connect4", "connect4-uniform,connect4-eps-optimal")
    assert not evaluator_needs_oracle("connect4", "none")
    assert not evaluator_needs_oracle("chomp", "chomp-4x5-play")
