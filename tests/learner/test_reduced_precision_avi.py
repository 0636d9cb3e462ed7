"""Reduced precision in a real AVI loop on tic-tac-toe: the learner's bf16 autocast
against fp32 across seeds, budgeted in updates.

``learner.precision=auto`` picks bf16 on a CPU with native bf16 (``learner.config.auto_precision``)
on the strength of this test: fixed-seed bf16 runs reach the exact metrics of fp32 runs
within the spread of fp32's seeds; Connect Four's, the network ``auto`` runs in bf16, in
``tests/learner/test_reduced_precision_connect4.py``, and its 10-minute runs in
docs/benchmarks.md, Precision and threads on the CPU. (A run whose actor evaluates in bf16 to the exact-values
thresholds of ``tests/launch/test_train.py`` takes minutes; docs/benchmarks.md, Inference
precision, has its result.)

The loop is Algorithm 1 in one process (no Ray) with the tic-tac-toe preset's values:
256 environments, 16 steps each per iteration, epsilon 0.5, Adam at 3e-4, batches of
256, 4 epochs (64 updates) per iteration, a replay of the last 100k rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import games
from actors.avi import AviCollector
from evaluation.exact import exact_labels, value_metrics
from learner.learner import Learner
from inference.network import ValueFunction
from inference.networks import PRESET_NETWORKS

GAME = games.make("tictactoe")
LABELS = exact_labels(GAME, 1.0)


def avi_run(*, seed: int, updates: int, precision: str = "fp32", inference_dtype: str = "fp32",
            eval_every: int = 320, stop=None):
    """(losses per iteration, exact metrics per evaluation, the actor's ValueFunction)."""
    config = PRESET_NETWORKS["tictactoe"]
    learner = Learner(GAME, config, lr=3e-4, device="cpu", seed=seed, precision=precision)
    actor = ValueFunction(GAME, config, inference_dtype=inference_dtype)
    collector = AviCollector(GAME, 256, epsilon=0.5, gamma=1.0, seed=seed)
    rng = np.random.default_rng(seed)
    obs, target = np.zeros((0, *GAME.obs_shape), np.uint8), np.zeros(0, np.float32)
    losses, metrics = [], []
    while learner.updates < updates:
        actor.set_weights(learner.get_weights(), learner.updates)
        rows = collector.collect(actor, 16)
        obs, target = np.concatenate([obs, rows["obs"]])[-100_000:], np.concatenate([target, rows["target"]])[-100_000:]
        step = []
        for _ in range(64):
            pick = rng.integers(len(target), size=256)
            step.append(learner.train_step({"obs": obs[pick], "target": target[pick]})["loss"])
        losses.append(float(np.mean(step)))
        if learner.updates % eval_every == 0:
            actor.set_weights(learner.get_weights(), learner.updates)
            metrics.append(value_metrics(GAME, LABELS, actor))
            if stop is not None and stop(metrics[-1]):
                break
    return losses, metrics, actor


METRICS = ("value_mae", "policy_regret", "optimal_move_rate")


@pytest.mark.slow
def test_bf16_learning_matches_fp32_within_seed_noise():
    """Same seeds, fp32 and bf16 autocast, 1,280 updates each: every exact metric of each
    bf16 run lies within the range of the fp32 runs over three seeds, widened by that
    range on either side (and a floor of 0.01, for seeds that happen to agree closely),
    and so do the loss curves, iteration by iteration."""
    runs = {p: [avi_run(seed=s, updates=1280, eval_every=1280, precision=p) for s in seeds]
            for p, seeds in (("fp32", (0, 1, 2)), ("bf16", (0, 1)))}
    curve = {p: np.array([r[0] for r in rs]) for p, rs in runs.items()}  # [seeds, iterations]
    final = {p: {k: np.array([r[1][-1][k] for r in rs]) for k in METRICS} for p, rs in runs.items()}
    for k in METRICS:
        print(k, "fp32", final["fp32"][k].round(4), "bf16", final["bf16"][k].round(4))
    untrained = ValueFunction(GAME, PRESET_NETWORKS["tictactoe"])
    untrained.set_weights(Learner(GAME, PRESET_NETWORKS["tictactoe"], device="cpu", seed=0).get_weights(), 0)
    assert final["fp32"]["value_mae"].max() < value_metrics(GAME, LABELS, untrained)["value_mae"] - 0.2  # it learns
    for k in METRICS:
        low, high = final["fp32"][k].min(), final["fp32"][k].max()
        margin = max(high - low, 0.01)
        assert np.all((final["bf16"][k] >= low - margin) & (final["bf16"][k] <= high + margin)), (k, final)
    low, high = curve["fp32"].min(0), curve["fp32"].max(0)  # [iterations]
    margin = np.maximum(high - low, 0.005)
    assert np.all((curve["bf16"] >= low - margin) & (curve["bf16"] <= high + margin)), curve
