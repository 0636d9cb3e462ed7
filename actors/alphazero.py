"""AlphaZero self-play (AVI paper Section 3.4 and A.2; AZAL paper B.1 and B.4).

Per step, for every environment at once: one batched PUCT search (``search.mcts``) from
the current states gives the visit distribution (the policy target) and the move, drawn
from the visits at the search's temperature. The step's observation and policy are
kept in the environment's trajectory. When a game ends, every state of its trajectory
becomes a row whose value target is the final outcome from the point of view of the
player to move in that state (``z = +r`` for the states of the player who made the last
move, ``-r`` for the others: players alternate, passes being moves). Games still running
when a collection call ends keep their trajectories for the next call (and in
checkpoints), so rows are only ever complete.

AZAL: the rows of finished games also get the oracle's smoothed target (``aux_policy``,
see ``actors/labels.py``), fetched in one batch per call.
"""

from __future__ import annotations

import time

import numpy as np

import games
from actors import collect_steps
from actors.labels import OracleLabeler
from games import Game
from search.evaluators import Evaluator
from search.gumbel import GumbelConfig, GumbelMCTS
from search.mcts import MCTS, MCTSConfig


class AlphaZeroCollector:
    """A batch of environments played by MCTS; yields the rows of finished games."""

    def __init__(self, game: Game, num_envs: int, *, mcts: MCTSConfig, seed: int,
                 labeler: OracleLabeler | None = None, search: str = "puct", gumbel: GumbelConfig | None = None):
        """``search``: ``puct`` (AlphaZero's: the visit distribution as target, the move drawn
        from it) or ``gumbel`` (Gumbel AlphaZero, ``search.gumbel``: the improved policy as
        target, the Sequential Halving winner played; ``gumbel`` its parameters)."""
        self.game, self.num_envs, self.labeler = game, num_envs, labeler
        if search not in ("puct", "gumbel"):
            raise ValueError(f"AlphaZeroCollector: search must be puct or gumbel, got {search!r}")
        self.search = MCTS(game, mcts) if search == "puct" else GumbelMCTS(game, mcts, gumbel or GumbelConfig())
        self.rng = np.random.default_rng(seed)
        self.fresh = game.init(num_envs)
        self.state = self.fresh
        B, L, A = num_envs, game.max_length, game.num_actions
        self.traj_obs = np.zeros((B, L, *game.obs_shape), np.uint8)  # the trajectories so far
        self.traj_policy = np.zeros((B, L, A), np.float32)
        self.traj_actions = np.zeros((B, L), np.int64)
        self.traj_len = np.zeros(B, np.int64)
        self.games_finished = 0
        self.positions = 0  # states searched: the rows that finished games will give
        self.evaluations = 0  # leaf evaluations of all searches (compute proxy)
        self.timings = {"search": 0.0, "engine": 0.0, "labels": 0.0}

    def step(self, evaluate: Evaluator) -> dict[str, np.ndarray]:
        """One move in every environment; the rows of the games that ended (maybe none)."""
        B = self.num_envs
        t0 = time.perf_counter()
        result = self.search.search(self.state, evaluate, self.rng)
        t1 = time.perf_counter()
        rows_b, t = np.arange(B), self.traj_len
        self.traj_obs[rows_b, t] = self.game.encode(self.state).astype(np.uint8)
        self.traj_policy[rows_b, t] = result.policy
        self.traj_actions[rows_b, t] = result.action
        self.traj_len += 1
        self.state, reward, done = self.game.step(self.state, result.action, check=False)
        rows = self._finish(np.flatnonzero(done), reward)
        self.state = games.where(done, self.fresh, self.state)
        self.traj_len[done] = 0
        self.positions += B
        self.evaluations += result.evaluations
        t2 = time.perf_counter()
        self.timings["search"] += t1 - t0
        self.timings["engine"] += t2 - t1
        return rows

    def _finish(self, ended: np.ndarray, reward: np.ndarray) -> dict[str, np.ndarray]:
        """The rows of the trajectories of the environments ``ended``, oldest first."""
        obs, policy, target, envs, plies = [], [], [], [], []
        for b in ended:
            n = int(self.traj_len[b])
            # The last mover (ply n-1) gets reward[b]; the sign alternates back to ply 0.
            sign = np.where((n - 1 - np.arange(n)) % 2 == 0, 1.0, -1.0)
            obs.append(self.traj_obs[b, :n])
            policy.append(self.traj_policy[b, :n])
            target.append((sign * reward[b]).astype(np.float32))
            envs.append(np.full(n, b))
            plies.append(np.arange(n))
        self.games_finished += len(ended)
        if not obs:
            out = {"obs": np.zeros((0, *self.game.obs_shape), np.uint8), "target": np.zeros(0, np.float32),
                   "policy": np.zeros((0, self.game.num_actions), np.float32)}
        else:
            out = {"obs": np.concatenate(obs), "target": np.concatenate(target), "policy": np.concatenate(policy)}
        if self.labeler is not None:
            t0 = time.perf_counter()
            env, ply = (np.concatenate(envs), np.concatenate(plies)) if obs else (np.zeros(0, int), np.zeros(0, int))
            histories = [self.traj_actions[b, :p].tolist() for b, p in zip(env, ply)]
            out["aux_policy"] = self._labels(histories)
            self.timings["labels"] += time.perf_counter() - t0
        return out

    def _labels(self, histories: list[list[int]]) -> np.ndarray:
        A = self.game.num_actions
        if not histories:
            return np.zeros((0, A), np.float32)
        return self.labeler.label(self.game.from_moves(histories), histories)

    def collect(self, evaluate: Evaluator, steps: int, deadline: float | None = None) -> dict[str, np.ndarray]:
        """``steps`` moves of every environment (fewer past ``deadline``, at least one):
        the rows of every game that ended meanwhile, in the order they ended."""
        return collect_steps(lambda: self.step(evaluate), steps, deadline)

    # Resume support: environments, their trajectories so far, the search's generator.
    def get_state(self) -> dict:
        return {"envs": {name: np.asarray(f) for name, f in zip(self.state._fields, self.state)},
                "traj_obs": self.traj_obs.copy(), "traj_policy": self.traj_policy.copy(),
                "traj_actions": self.traj_actions.copy(), "traj_len": self.traj_len.copy(),
                "rng": self.rng.bit_generator.state, "games_finished": self.games_finished}

    def set_state(self, saved: dict) -> None:
        self.state = type(self.state)(*(np.asarray(saved["envs"][name]) for name in self.state._fields))
        for name in ("traj_obs", "traj_policy", "traj_actions", "traj_len"):
            setattr(self, name, np.array(saved[name]))
        self.rng.bit_generator.state = saved["rng"]
        self.games_finished = int(saved["games_finished"])
