"""bf16 on Connect Four, where ``learner.precision=auto`` chooses it on a CPU with native
bf16 (its network is 256 wide): fixed-seed AVI runs of the learner in bf16 autocast reach
the exact metrics of fp32 runs on the oracle-labelled uniform states within the spread of
fp32's seeds, budgeted in updates.

The loop is Algorithm 1 in one process (no Ray) with the Connect Four preset's network,
epsilon, learning rate, batch and replay ratio (4 epochs per iteration), on a smaller
collection than the preset's (64 environments, 32 steps each: 2,048 rows and 32 updates an
iteration), 128 updates a run (the untrained network's value error 0.92 falls to 0.80-0.85
in every run): three fp32 seeds and one bf16 run, about 45 s in all.
Where the CPU emulates bf16 (AVX2 only) ``auto`` keeps fp32 and the test is skipped."""

from __future__ import annotations

import numpy as np
import pytest

import games
from actors.avi import AviCollector
from evaluation.runner import SuiteRunner
from learner.learner import Learner
from inference.network import ValueFunction
from inference.machine import this_cpu
from launch.config import resolve

GAME = games.make("connect4")
CONFIG = resolve("connect4")
UPDATES = 128
METRICS = ("value_mae", "policy_regret", "optimal_move_rate")


def avi_run(seed: int, precision: str, runner: SuiteRunner) -> dict[str, float]:
    """The exact metrics on connect4-uniform after UPDATES updates."""
    learner = Learner(GAME, CONFIG.network, lr=CONFIG.learner.lr, device="cpu", seed=seed, precision=precision)
    actor = ValueFunction(GAME, CONFIG.network)
    collector = AviCollector(GAME, 64, epsilon=CONFIG.actors.epsilon, gamma=CONFIG.gamma, seed=seed)
    rng = np.random.default_rng(seed)
    obs, target = np.zeros((0, *GAME.obs_shape), np.uint8), np.zeros(0, np.float32)
    batch = CONFIG.learner.batch_size
    while learner.updates < UPDATES:
        actor.set_weights(learner.get_weights(), learner.updates)
        rows = collector.collect(actor, 32)
        obs, target = np.concatenate([obs, rows["obs"]]), np.concatenate([target, rows["target"]])
        for _ in range(round(CONFIG.learner.epochs_per_iteration * len(rows["target"]) / batch)):
            pick = rng.integers(len(target), size=batch)
            learner.train_step({"obs": obs[pick], "target": target[pick]})
    metrics = runner.evaluate(learner.get_weights())
    return {k: metrics[f"eval/connect4-uniform/{k}"] for k in METRICS}


@pytest.mark.skipif(not this_cpu().native, reason="this CPU emulates bf16: learner.precision=auto keeps fp32 here")
def test_bf16_connect4_learning_matches_fp32_within_seed_noise():
    runner = SuiteRunner(GAME, CONFIG.network, suites=["connect4-uniform"])
    untrained = runner.evaluate(Learner(GAME, CONFIG.network, device="cpu", seed=0).get_weights())
    runs = {p: [avi_run(s, p, runner) for s in seeds] for p, seeds in (("fp32", (0, 1, 2)), ("bf16", (0,)))}
    final = {p: {k: np.array([r[k] for r in rs]) for k in METRICS} for p, rs in runs.items()}
    for k in METRICS:
        print(k, "fp32", final["fp32"][k].round(4), "bf16", final["bf16"][k].round(4))
    # It learns: every run's value error falls well below the untrained network's.
    assert final["fp32"]["value_mae"].max() < untrained["eval/connect4-uniform/value_mae"] - 0.05, final
    for k in METRICS:
        low, high = final["fp32"][k].min(), final["fp32"][k].max()
        margin = max(high - low, 0.01)
        assert np.all((final["bf16"][k] >= low - margin) & (final["bf16"][k] <= high + margin)), (k, final)
