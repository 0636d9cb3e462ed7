"""AVI self-play (Algorithm 1, lines 5-11): epsilon-greedy one-step lookahead.

Per step, for every environment state s at once:
    one ``expand`` gives every child f(s, a) with its reward and done flag;
    one network call gives V(f(s, a)) for every live child;
    q(s, a) = r(s, a) - gamma * V(f(s, a))     (V = 0 past a terminal move)
    the row (s, max_a q(s, a)) is stored;
    the action is argmax_a q with probability 1 - epsilon, else uniformly random,
    and the chosen child becomes the next state (finished games restart).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

import games
from actors import collect_steps
from games import Game, one_step_q, take

ValueFn = Callable[[np.ndarray], np.ndarray]  # float32[N, *obs_shape] -> float32[N]


class AviCollector:
    """A batch of environments played by the epsilon-greedy policy of a value function."""

    def __init__(self, game: Game, num_envs: int, *, epsilon: float, gamma: float, seed: int):
        self.game, self.num_envs = game, num_envs
        self.epsilon, self.gamma = epsilon, gamma
        self.rng = np.random.default_rng(seed)
        self.fresh = game.init(num_envs)
        self.state = self.fresh
        self.games_finished = 0
        self.timings = {"engine": 0.0, "network": 0.0, "other": 0.0}
        self.positions = 0  # states played, one row each

    def step(self, value_fn: ValueFn) -> dict:
        """One step of every environment; returns the rows ``obs`` uint8[B, *obs_shape]
        and ``target`` float32[B]."""
        game, B, A = self.game, self.num_envs, self.game.num_actions
        t0 = time.perf_counter()
        exp = game.expand(self.state)  # children [B * A], reward/done/legal [B, A]
        needs_value = (exp.legal & ~exp.done).reshape(-1)  # [B * A]
        child_obs = game.encode(take(exp.children, needs_value))  # [M, *obs_shape]
        obs = game.encode(self.state)  # [B, *obs_shape]
        t1 = time.perf_counter()
        child_v = np.zeros(B * A, np.float32)
        if len(child_obs):
            child_v[needs_value] = value_fn(child_obs)
        t2 = time.perf_counter()
        q = one_step_q(exp, child_v, self.gamma)  # [B, A]
        target = q.max(axis=1).astype(np.float32)  # [B]

        greedy = q.argmax(axis=1)
        explore = self.rng.random(B) < self.epsilon
        actions = np.where(explore, games.random_legal_actions(exp.legal, self.rng), greedy)
        t3 = time.perf_counter()
        chosen = np.arange(B) * A + actions
        done = exp.done[np.arange(B), actions]
        self.state = games.where(done, self.fresh, take(exp.children, chosen))
        self.games_finished += int(done.sum())
        t4 = time.perf_counter()
        self.timings["engine"] += (t1 - t0) + (t4 - t3)
        self.timings["network"] += t2 - t1
        self.timings["other"] += t3 - t2
        self.positions += B
        return {"obs": obs.astype(np.uint8), "target": target}

    def collect(self, value_fn: ValueFn, steps: int, deadline: float | None = None) -> dict:
        """``steps`` steps of every environment: rows [steps * B], oldest first. Past
        ``deadline`` (a ``time.time()``) it stops early, after at least one step."""
        return collect_steps(lambda: self.step(value_fn), steps, deadline)

    # Resume support: the environments in mid-game and the exploration generator.
    def get_state(self) -> dict:
        return {"envs": {name: np.asarray(f) for name, f in zip(self.state._fields, self.state)},
                "rng": self.rng.bit_generator.state, "games_finished": self.games_finished}

    def set_state(self, saved: dict) -> None:
        self.state = type(self.state)(*(np.asarray(saved["envs"][name]) for name in self.state._fields))
        self.rng.bit_generator.state = saved["rng"]
        self.games_finished = int(saved["games_finished"])
