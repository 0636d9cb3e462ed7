"""The self-play actor pool on Ray: thin actors around :class:`AviCollector`.

Each actor owns ``num_envs`` environments and a CPU copy of the value network. It
takes new weights only at the start of a collection call (the paper's frozen
parameters during collection), pushes its rows straight into its replay shard and
returns small statistics. Actors restart when their process or node dies
(``max_restarts=-1``) and the interrupted call is retried, so a run goes on.
"""

from __future__ import annotations

import time

import numpy as np
import ray

import games
from actors.avi import AviCollector
from learner.learner import ValueFunction
from learner.weights import WeightVersion


class SelfPlayWorker:
    """The plain logic of one actor: environments, a value function, the replay target."""

    def __init__(self, *, game: str, game_params: dict, network, num_envs: int, epsilon: float,
                 gamma: float, seed: int, index: int, replay, threads: int = 1):
        import torch

        torch.set_num_threads(threads)
        self.index, self.replay = index, replay
        self.game = games.make(game, **game_params)
        self.value_fn = ValueFunction(self.game, network)
        self.collector = AviCollector(self.game, num_envs, epsilon=epsilon, gamma=gamma,
                                      seed=np.random.SeedSequence([seed, index]).generate_state(1)[0])
        self.version = -1
        self.calls = 0  # rotates the replay shard this actor writes to

    def collect(self, weights: list[WeightVersion], steps: int, deadline: float | None = None) -> dict:
        """``steps`` steps of every environment with the weights of ``weights[0]``
        (wrapped in a list so Ray hands over the reference, fetched only when new);
        fewer when the run's time budget ends at ``deadline``."""
        latest = weights[0]
        if latest.version != self.version:
            self.value_fn.set_weights(ray.get(latest.ref), latest.version)
            self.version = latest.version
        before = dict(self.collector.timings)
        games_before, forward_before = self.collector.games_finished, self.collector.forward_samples
        start = time.perf_counter()
        rows = self.collector.collect(self.value_fn, steps, deadline)
        collected = time.perf_counter()
        rows["version"] = np.full(len(rows["target"]), self.version, np.int64)
        # Actor i writes to shards i, i+1, ... in turn: every shard fills, deterministically.
        ray.get(self.replay.add(rows, shard=self.index + self.calls))
        self.calls += 1
        end = time.perf_counter()
        timings = {k: self.collector.timings[k] - before[k] for k in before}
        timings["transport"] = end - collected
        # Counts of this call only: an actor that restarts starts its totals again.
        return {"index": self.index, "rows": len(rows["target"]), "version": self.version,
                "games_finished": self.collector.games_finished - games_before, "seconds": end - start,
                "forward_samples": self.collector.forward_samples - forward_before, "timings": timings,
                "target_mean": float(rows["target"].mean()), "target_std": float(rows["target"].std())}

    def get_state(self) -> dict:
        return {"collector": self.collector.get_state(), "calls": self.calls}

    def set_state(self, saved: dict) -> None:
        self.collector.set_state(saved["collector"])
        self.calls = int(saved["calls"])

    def ping(self) -> int:
        return self.index


SelfPlayActor = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(SelfPlayWorker)
