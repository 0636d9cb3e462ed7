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

A collector built on this one (AZAL's, ``algorithms/azal.py``) takes the rows of the games
that end in a step through :meth:`AlphaZeroCollector._finished`, with the environments and
plies they came from.

Archive starts (``archive_start > 0``, ``actors/archive.py``): a finished game restarts,
with that probability, at a state this collector searched earlier; its trajectory starts
there and its rows get that game's outcome like any other's. With ``keep_moves`` the archive
keeps each state's moves from the initial position, and a game started from it carries them
(``start_moves``; :meth:`AlphaZeroCollector.moves_of`): an oracle reads a position from its
moves since the empty board.
"""

from __future__ import annotations

import time

import numpy as np

import games
from actors import collect_steps
from actors.archive import StateArchive
from games import Game
from search.evaluators import Evaluator
from search.gumbel import GumbelConfig, GumbelMCTS
from search.mcts import MCTS, MCTSConfig


class AlphaZeroCollector:
    """A batch of environments played by MCTS; yields the rows of finished games."""

    def __init__(self, game: Game, num_envs: int, *, mcts: MCTSConfig, seed: int,
                 search: str = "puct", gumbel: GumbelConfig | None = None,
                 archive_start: float = 0.0, archive_size: int = 10_000, keep_moves: bool = False):
        """``search``: ``puct`` (AlphaZero's: the visit distribution as target, the move drawn
        from it) or ``gumbel`` (Gumbel AlphaZero, ``search.gumbel``: the improved policy as
        target, the Sequential Halving winner played; ``gumbel`` its parameters).
        ``archive_start``: the probability that a finished game restarts from the archive
        of ``archive_size`` states searched; ``keep_moves``: the archive keeps each state's
        moves from the initial position (a collector whose oracle reads positions from them)."""
        self.game, self.num_envs = game, num_envs
        if search not in ("puct", "gumbel"):
            raise ValueError(f"AlphaZeroCollector: search must be puct or gumbel, got {search!r}")
        self.search = MCTS(game, mcts) if search == "puct" else GumbelMCTS(game, mcts, gumbel or GumbelConfig())
        self.rng = np.random.default_rng(seed)
        B, L, A = num_envs, game.max_length, game.num_actions
        # The archive's generator is its own (spawned from the seed), so the search's stays as
        # without it; with keep_moves it keeps each state's moves, from which an oracle reads a position.
        self.archive = (StateArchive(probability=archive_start, capacity=archive_size,
                                     seed=np.random.SeedSequence(seed).spawn(1)[0],
                                     moves=L if keep_moves else 0)
                        if archive_start > 0 else None)
        self.fresh = game.init(num_envs)
        self.state = self.fresh
        self.traj_obs = np.zeros((B, L, *game.obs_shape), np.uint8)  # the trajectories so far
        self.traj_policy = np.zeros((B, L, A), np.float32)
        self.traj_actions = np.zeros((B, L), np.int64)
        self.traj_len = np.zeros(B, np.int64)
        # The moves from the initial position to each game's start, -1 after the last: none
        # unless the game started from the archive (keep_moves only: an oracle reads them).
        self.start_moves = (np.full((B, L), -1, np.int16)
                            if self.archive is not None and self.archive.moves is not None else None)
        self.games_finished = 0
        self.positions = 0  # states searched: the rows that finished games will give
        self.evaluations = 0  # leaf evaluations of all searches (compute proxy)
        # "labels": the time a collector built on this one spends labelling its rows (0 here).
        self.timings = {"search": 0.0, "engine": 0.0, "labels": 0.0}

    def step(self, evaluate: Evaluator) -> dict[str, np.ndarray]:
        """One move in every environment; the rows of the games that ended (maybe none), as
        :meth:`_finished` hands them on."""
        B = self.num_envs
        t0 = time.perf_counter()
        if self.archive is not None:  # every state searched is live (finished games restart)
            self.archive.add(self.state, None if self.start_moves is None else self._moves_so_far())
        result = self.search.search(self.state, evaluate, self.rng)
        t1 = time.perf_counter()
        rows_b, t = np.arange(B), self.traj_len
        self.traj_obs[rows_b, t] = self.game.encode(self.state).astype(np.uint8)
        self.traj_policy[rows_b, t] = result.policy
        self.traj_actions[rows_b, t] = result.action
        self.traj_len += 1
        self.state, reward, done = self.game.step(self.state, result.action, check=False)
        rows = self._finish(np.flatnonzero(done), reward)
        if self.start_moves is not None:
            starts, start_moves = self.archive.starts_with_moves(self.fresh, done)
            self.start_moves[done] = start_moves[done]
        else:
            starts = self.fresh if self.archive is None else self.archive.starts(self.fresh, done)
        self.state = games.where(done, starts, self.state)
        self.traj_len[done] = 0
        self.positions += B
        self.evaluations += result.evaluations
        t2 = time.perf_counter()
        self.timings["search"] += t1 - t0
        self.timings["engine"] += t2 - t1
        return rows

    def _moves_so_far(self) -> np.ndarray:
        """int16[B, L]: each environment's moves from the initial position to its current
        state (those to its game's start, then its trajectory's), -1 after the last."""
        L = self.game.max_length
        before = (self.start_moves >= 0).sum(axis=1)  # [B]
        ply = np.arange(L)[None, :] - before[:, None]  # [B, L]: the trajectory's ply at each place
        in_traj = (ply >= 0) & (ply < self.traj_len[:, None])
        played = np.take_along_axis(self.traj_actions, np.clip(ply, 0, L - 1), axis=1).astype(np.int16)
        return np.where(ply < 0, self.start_moves, np.where(in_traj, played, -1))

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
        out = (self._no_rows() if not obs else
               {"obs": np.concatenate(obs), "target": np.concatenate(target), "policy": np.concatenate(policy)})
        return self._finished(out, ended, np.concatenate(envs) if envs else np.zeros(0, np.int64),
                              np.concatenate(plies) if plies else np.zeros(0, np.int64))

    def _finished(self, rows: dict[str, np.ndarray], ended: np.ndarray, envs: np.ndarray,
                  plies: np.ndarray) -> dict[str, np.ndarray]:
        """The rows a step gives, from the ``rows`` of the games ``ended`` in it (each row's
        environment ``envs`` and ply ``plies``, int[N]): those rows themselves here."""
        return rows

    def moves_of(self, envs: np.ndarray, plies: np.ndarray) -> list[list[int]]:
        """The moves from the initial position to the state at ply ``plies[i]`` of the
        trajectory of environment ``envs[i]`` (those to its game's start first, with
        ``keep_moves``), for each i; read before the environment restarts."""
        ended = set(int(b) for b in envs)
        start = ({} if self.start_moves is None else
                 {b: [int(a) for a in self.start_moves[b] if a >= 0] for b in ended})
        return [start.get(int(b), []) + self.traj_actions[b, :p].tolist() for b, p in zip(envs, plies)]

    def _no_rows(self) -> dict[str, np.ndarray]:
        A = self.game.num_actions
        return {"obs": np.zeros((0, *self.game.obs_shape), np.uint8), "target": np.zeros(0, np.float32),
                "policy": np.zeros((0, A), np.float32)}

    def collect(self, evaluate: Evaluator, steps: int, deadline: float | None = None) -> dict[str, np.ndarray]:
        """``steps`` moves of every environment (fewer past ``deadline``, at least one):
        the rows of every game that ended meanwhile, in the order they ended."""
        return collect_steps(lambda: self.step(evaluate), steps, deadline)

    # Resume support: environments, their trajectories so far, the search's generator, the archive.
    def get_state(self) -> dict:
        saved = {"envs": {name: np.asarray(f) for name, f in zip(self.state._fields, self.state)},
                 "traj_obs": self.traj_obs.copy(), "traj_policy": self.traj_policy.copy(),
                 "traj_actions": self.traj_actions.copy(), "traj_len": self.traj_len.copy(),
                 "rng": self.rng.bit_generator.state, "games_finished": self.games_finished}
        if self.archive is not None:
            saved["archive"] = self.archive.get_state()
        if self.start_moves is not None:
            saved["start_moves"] = self.start_moves.copy()
        return saved

    def set_state(self, saved: dict) -> None:
        self.state = type(self.state)(*(np.asarray(saved["envs"][name]) for name in self.state._fields))
        for name in ("traj_obs", "traj_policy", "traj_actions", "traj_len"):
            setattr(self, name, np.array(saved[name]))
        self.rng.bit_generator.state = saved["rng"]
        self.games_finished = int(saved["games_finished"])
        if self.archive is not None and "archive" in saved:  # else a run that had none: it starts empty
            self.archive.set_state(saved["archive"], like=self.state)
        if self.start_moves is not None:  # a run that had none started every game from the empty board
            self.start_moves = (np.array(saved["start_moves"]) if "start_moves" in saved
                                else np.full_like(self.start_moves, -1))
