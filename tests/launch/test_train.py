"""End-to-end AVI training on a real Ray: actors, replay shards and learner in their
own processes, with the run directory, resume and actor restarts."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

from launch.config import resolve
from launch.metrics import read_metrics
from launch.train import train

TINY = ["network.width=32", "actors.num_envs=32", "actors.collect_steps=4", "learner.epochs_per_iteration=2",
        "replay.capacity=4096", "replay.shards=2", "learner.batch_size=64", "evaluation.every=1", "checkpoint_every=1"]


def tiny_config(*extra):
    return resolve("tictactoe", "small", TINY + list(extra))


def train_killing(config, run_dir, budget, actor_name) -> None:
    """Train ``config`` for ``budget`` updates in a thread, kill the actor named
    ``actor_name(run_dir)`` (Ray restarts it) once two records are logged, and check that
    the run finishes."""
    import ray

    result = {}

    def run():
        result["out"] = train(config, run_dir=run_dir, updates=budget, wandb_mode="disabled")

    thread = threading.Thread(target=run)
    thread.start()
    metrics = run_dir / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (metrics.exists() and len(metrics.read_text().splitlines()) >= 2):
        time.sleep(0.2)
    ray.kill(ray.get_actor(actor_name(run_dir)), no_restart=False)
    thread.join(timeout=300)
    assert not thread.is_alive() and "out" in result


def test_rows_flow_weights_reach_actors_and_resume_is_exact(ray_session, tmp_path):
    per_iteration = tiny_config().updates_per_iteration
    config = tiny_config("keep_checkpoints=2", f"keep_checkpoints_every={2 * per_iteration}")
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=3 * per_iteration, wandb_mode="disabled")
    records = read_metrics(run_dir)
    assert records[0]["iteration"] == 0 and records[0]["updates"] == 0 and "eval/value_mae" in records[0]
    assert records[-1]["end"] == f"{3 * per_iteration} updates" and records[-1]["updates"] == 3 * per_iteration
    records = records[1:-1]  # the iterations, without the end row
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert last["updates"] == 3 * per_iteration
    # Rows went from the actor through the shards to the learner.
    assert last["rows"] == 3 * config.rows_per_iteration
    assert last["replay_size"] == 3 * config.rows_per_iteration
    shard_sizes = [last[f"replay/shard{i}_size"] for i in range(config.replay.shards)]
    assert sum(shard_sizes) == last["replay_size"] and min(shard_sizes) > 0  # rows spread over shards
    sampled = sum(last[f"replay/shard{i}_total_sampled"] for i in range(config.replay.shards))
    assert sampled >= last["updates"] * config.learner.batch_size  # the learner drew its batches from them
    assert all(np.isfinite(r["loss"]) for r in records)
    # AVI's actors cache their evaluations by default: tic-tac-toe's openings repeat.
    assert all(0.0 < r["cache_hit_rate"] < 1.0 for r in records), [r.get("cache_hit_rate") for r in records]
    # Weights reached the actors: each iteration collected with the previous version.
    assert [r["version"] for r in records] == [1, 2, 3]
    assert records[-1]["sample_age"] > 0 and records[-1]["policy_lag"] == 0  # frozen weights in sync mode
    assert json.loads((run_dir / "config.json").read_text())["game"] == "tictactoe"
    assert list((run_dir / "checkpoints").glob("ckpt-*.pt"))
    assert len(list((run_dir / "replay").glob("*.parquet"))) == config.replay.shards

    # Resume for two more iterations, and compare with a run that never stopped.
    _, resumed = train(config, resume=run_dir, updates=5 * per_iteration, wandb_mode="disabled")
    _, straight = train(config, run_dir=tmp_path / "straight", updates=5 * per_iteration, wandb_mode="disabled")
    after = [r for r in read_metrics(run_dir)[5:] if "end" not in r]
    assert [r["iteration"] for r in after] == [4, 5]
    assert after[0]["rows"] == 4 * config.rows_per_iteration  # counters continue
    assert after[0]["replay_size"] == 4 * config.rows_per_iteration  # replay contents restored
    reference = [r for r in read_metrics(tmp_path / "straight")[4:] if "end" not in r]
    for mine, ref in zip(after, reference):
        assert mine["loss"] == ref["loss"] and mine["target_mean"] == ref["target_mean"]
        assert mine["eval/value_mae"] == ref["eval/value_mae"]
    assert resumed["eval/value_mae"] == straight["eval/value_mae"]
    # The newest 2 checkpoints (iterations 4 and 5), and the first at or past each multiple
    # of 2 iterations' updates (iterations 1, 2 and 4): iteration 3's is gone.
    for run in (run_dir, tmp_path / "straight"):
        kept = sorted(int(p.name[5:14]) for p in (run / "checkpoints").glob("ckpt-*.pt"))
        assert kept == [i * per_iteration for i in (1, 2, 4, 5)], kept


def test_killed_actor_restarts_and_the_run_completes(ray_session, tmp_path):
    config = tiny_config("actors.num_actors=1")
    budget = 8 * config.updates_per_iteration
    train_killing(config, tmp_path / "run", budget, lambda run: f"{run.name}-selfplay-0")
    records = read_metrics(tmp_path / "run")
    assert records[-1]["updates"] == budget
    assert records[-1]["rows"] == 8 * config.rows_per_iteration


# Budgets in updates, not minutes: a loaded machine takes longer instead of failing.
# docs/results/index.md gives a measured run.
@pytest.mark.parametrize("budget_updates", [20_000])
def test_avi_learns_tictactoe_exactly(ray_session, tmp_path, budget_updates):
    """Value MAE below 0.05 against exhaustive negamax over all 4,520 non-terminal
    positions, and an optimal greedy move in at least 99% of them, within the budget."""
    # The paper preset on one torch thread for the learner and the actor: tic-tac-toe's 64-wide
    # MLP gains nothing from a second (docs/benchmarks.md, Precision and threads on the CPU),
    # and beside the run's other processes on 2 cores a second thread slows every update.
    # Batches come 16 to a request to the shards: drawn as one at a time would draw them
    # (ReplaySampler.next_block), with 15 round trips fewer.
    config = resolve("tictactoe", "paper", ["learner.threads=1", "actors.threads=1", "learner.batches_per_request=16"])
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=budget_updates, wandb_mode="disabled",
                          stop=lambda r: r.get("eval/value_mae", 1) < 0.05 and r["eval/optimal_move_rate"] >= 0.99)
    assert last["eval/eval_states"] == 4520
    assert last["eval/value_mae"] < 0.05, last
    assert last["eval/optimal_move_rate"] >= 0.99, last


@pytest.mark.parametrize("depth,branching,updates,bound", [(4, 3, 1500, 0.1)])
def test_avi_learns_a_small_fgame_exactly(ray_session, tmp_path, depth, branching, updates, bound):
    """On a tree small enough to visit, the values known by construction are learned."""
    params = json.dumps({"depth": depth, "branching": branching, "seed": 3})
    config = resolve("fgame", "small", [f"game_params={params}", "network.width=64", "actors.num_envs=64",
                                        "learner.epochs_per_iteration=4", "actors.epsilon=0.5", "checkpoint_every=50",
                                        "evaluation.suites=none",  # eval/value_mae: the run's built-in labels
                                        "learner.threads=1", "actors.threads=1"])  # a 64-wide MLP: as above
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=updates, wandb_mode="disabled",
                          stop=lambda r: r.get("eval/value_mae", 1) < bound)
    assert last["eval/value_mae"] < bound, last


# The balanced F-Game needs about 30 minutes on 2 cores before its curve clearly leaves
# the trivial predictors behind: too long for CI, so it runs when asked, e.g.
# SELFPLAY_FGAME_UPDATES=120000 pytest tests/launch/test_train.py -k balanced
FGAME_UPDATES = int(os.environ.get("SELFPLAY_FGAME_UPDATES", "0"))


@pytest.mark.skipif(FGAME_UPDATES <= 0, reason="about 30 minutes: set SELFPLAY_FGAME_UPDATES=120000 to run it")
@pytest.mark.timeout(0)
def test_avi_value_error_falls_on_the_balanced_fgame(ray_session, tmp_path):
    """F-Game h=10, b=5 (Appendix F, beta 0.05): values are drawn node by node, so the
    network learns them node by node, from the leaves up. On the 4096 random-play states
    of the built-in evaluation, the value MAE falls from the untrained network's, below
    both trivial predictors (0 everywhere, and the best constant for each depth, computed
    from the labels here), and the greedy policy's regret falls with it. Not the paper's
    Table 5: uniform exploration (epsilon 1, the evaluation's own distribution), 4
    epochs per iteration and lr 1e-3 learn fastest on 2 cores."""
    import games
    from evaluation.exact import exact_labels

    config = resolve("fgame", "paper", ["actors.num_envs=1024", "actors.collect_steps=16", "evaluation.every=20", "actors.epsilon=1.0",
                                        "learner.epochs_per_iteration=4", "learner.lr=1e-3", "checkpoint_every=100",
                                        "evaluation.suites=none"])  # the built-in labels, as below
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=FGAME_UPDATES, wandb_mode="disabled")
    curve = [r for r in read_metrics(run_dir) if "eval/value_mae" in r]
    labels = exact_labels(games.make("fgame"))
    v, depth = labels.v_star, np.asarray(labels.states.length)
    zero = float(np.abs(v).mean())
    per_depth = sum(min(float(np.abs(v[depth == d] - c).sum()) for c in (-1.0, 0.0, 1.0))
                    for d in np.unique(depth)) / len(v)
    end = float(np.mean([r["eval/value_mae"] for r in curve[-3:]]))
    print(f"value MAE {curve[0]['eval/value_mae']:.4f} -> {end:.4f} (mean of the last 3 evaluations); "
          f"predicting 0: {zero:.4f}, the best constant per depth: {per_depth:.4f}")
    assert end < min(zero, per_depth) - 0.01
    assert end < curve[0]["eval/value_mae"] - 0.025
    regret = float(np.mean([r["eval/policy_regret"] for r in curve[-3:]]))
    assert regret < curve[0]["eval/policy_regret"] - 0.04


def test_async_schedule_respects_the_rate_limiter_and_logs_to_wandb(ray_session, tmp_path):
    config = tiny_config("schedule=async", "samples_per_insert=2", "max_policy_lag=2", "actors.num_envs=64",
                         "actors.collect_steps=8", "learner.epochs_per_iteration=4")
    budget = 6 * config.updates_per_iteration
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=budget, wandb_mode="offline")
    records = [r for r in read_metrics(run_dir) if "loss" in r and "end" not in r]
    assert last["updates"] == budget
    for r in records:
        # Gradient samples never ran ahead of samples_per_insert times the rows inserted
        # when the chunk started (rows only grow afterwards).
        assert r["updates"] * config.learner.batch_size <= config.samples_per_insert * r["rows"] + 1e-9
        assert r["policy_lag"] <= config.max_policy_lag
    assert [r["version"] for r in records] == list(range(1, len(records) + 1))
    # The W&B run's files stay in the run directory.
    assert (run_dir / "wandb_id.txt").exists()
    assert list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))


def test_a_pool_that_cannot_be_placed_is_refused_at_start(ray_session, tmp_path):
    from launch.config import ConfigError

    config = tiny_config("actors.num_actors=2", "actors.num_envs=64")  # 2 actors + a CPU learner > 2 CPUs
    with pytest.raises(ConfigError, match="need 3 CPUs; the Ray cluster has 2"):
        train(config, run_dir=tmp_path / "run", updates=1, wandb_mode="disabled")


def test_a_shared_inference_server_answers_the_actor_and_survives_a_kill(ray_session, tmp_path):
    """actors.inference_servers=1: the actor's values come from the server (the same targets as
    the actor's own network), its work enters the compute proxy, and a killed server is
    restarted, given the weights again, and the run completes."""
    plain = tiny_config()
    _, alone = train(plain, run_dir=tmp_path / "alone", updates=plain.updates_per_iteration, wandb_mode="disabled")
    config = tiny_config("actors.inference_servers=1")
    budget = 4 * config.updates_per_iteration
    train_killing(config, tmp_path / "served", budget, lambda run: f"{run.name}-inference-0")
    records = [r for r in read_metrics(tmp_path / "served") if "loss" in r and "end" not in r]
    assert records[-1]["updates"] == budget and records[-1]["rows"] == 4 * config.rows_per_iteration
    # The first iteration's targets are those of the actor's own network (batch rounding only).
    assert records[0]["target_mean"] == pytest.approx(alone["target_mean"], abs=1e-5)
    assert records[0]["inference/rows"] > records[0]["inference/evaluated"] > 0  # repeats answered by the cache
    assert 0 < records[0]["cache_hit_rate"] < 1
    assert records[0]["actor_forward_samples"] == records[0]["inference/evaluated"]  # the proxy counts what ran
    logs = (tmp_path / "served" / "logs").glob("*inference*.log")
    assert any("restarted by Ray" in p.read_text() for p in logs)
