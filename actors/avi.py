"""AVI self-play (Algorithm 1, lines 5-11): epsilon-greedy one-step lookahead.

Per step, for every environment state s at once:
    one ``expand`` gives every child f(s, a) with its reward and done flag;
    one network call gives V(f(s, a)) for every live child;
    q(s, a) = r(s, a) - gamma * V(f(s, a))     (V = 0 past a terminal move)
    the row (s, max_a q(s, a)) is stored;
    the action is argmax_a q with probability 1 - epsilon, else uniformly random,
    and the chosen child becomes the next state (finished games restart).

Sampled actions (``sample_actions = k > 0``, as DAVI, Tian et al. 2022, for games with
many moves): the maximum and the greedy move run over k legal moves per state, sampled
without replacement (all of them where fewer are legal), and only those children are
evaluated. ``sample_by="uniform"`` samples uniformly; ``"prior"`` by the policy head's
prior over the legal moves (Gumbel-top-k on its logits, one more network call on the
parent states). A move that ends the game is a candidate like any other; it needs no
network call. The exploring move stays uniform over every legal move.

Archive starts (``archive_start > 0``, ``actors/archive.py``): a finished game restarts,
with that probability, at a state this collector played earlier.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

import games
from actors import collect_steps
from actors.archive import StateArchive
from games import Game, one_step_q, take

ValueFn = Callable[[np.ndarray], np.ndarray]  # float32[N, *obs_shape] -> float32[N]
SAMPLE_BY = ("uniform", "prior")  # how sampled children are drawn (sample_by)


def sample_actions(legal: np.ndarray, k: int, rng: np.random.Generator,
                   logits: np.ndarray | None = None) -> np.ndarray:
    """bool[B, A]: k of the legal actions of each row of ``legal[B, A]`` drawn without
    replacement (every legal one where fewer are legal), uniformly or, given policy
    ``logits[B, A]``, in proportion to their softmax over the legal actions: the k
    largest of logit + Gumbel noise (Gumbel-top-k; Kool et al. 2019)."""
    B, A = legal.shape
    if k >= A:
        return legal.copy()
    scores = rng.gumbel(size=(B, A))
    if logits is not None:
        scores += logits
    scores = np.where(legal, scores, -np.inf)
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]  # [B, k]; -inf (illegal) only where fewer are legal
    chosen = np.zeros((B, A), bool)
    np.put_along_axis(chosen, top, True, axis=1)
    return chosen & legal


class AviCollector:
    """A batch of environments played by the epsilon-greedy policy of a value function."""

    def __init__(self, game: Game, num_envs: int, *, epsilon: float, gamma: float, seed: int,
                 sample_actions: int = 0, sample_by: str = "uniform",
                 archive_start: float = 0.0, archive_size: int = 10_000):
        """``sample_actions``: k children per state (0: every legal one) chosen
        ``sample_by`` uniform or prior; ``archive_start``: the probability that a finished
        game restarts from the archive of ``archive_size`` states played."""
        if sample_actions < 0:
            raise ValueError(f"AviCollector: sample_actions must be >= 0 (0: every legal move), got {sample_actions}")
        if sample_by not in SAMPLE_BY:
            raise ValueError(f"AviCollector: sample_by must be one of {', '.join(SAMPLE_BY)}, got {sample_by!r}")
        self.game, self.num_envs = game, num_envs
        self.epsilon, self.gamma = epsilon, gamma
        self.sample_actions, self.sample_by = int(sample_actions), sample_by
        self.rng = np.random.default_rng(seed)
        # The archive's generator is its own (spawned from the seed), so the collector's stays as without it.
        self.archive = (StateArchive(probability=archive_start, capacity=archive_size,
                                     seed=np.random.SeedSequence(seed).spawn(1)[0])
                        if archive_start > 0 else None)
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
        if self.archive is not None:
            self.archive.add(self.state)  # every state played is live (finished games restart)
        exp = game.expand(self.state)  # children [B * A], reward/done/legal [B, A]
        obs = game.encode(self.state)  # [B, *obs_shape]
        candidates = exp.legal if not self.sample_actions else self._sampled(exp.legal, obs, value_fn)  # [B, A]
        needs_value = (candidates & ~exp.done).reshape(-1)  # [B * A]
        child_obs = game.encode(take(exp.children, needs_value))  # [M, *obs_shape]
        t1 = time.perf_counter()
        child_v = np.zeros(B * A, np.float32)
        if len(child_obs):
            child_v[needs_value] = value_fn(child_obs)
        t2 = time.perf_counter()
        q = one_step_q(exp, child_v, self.gamma)  # [B, A]
        if self.sample_actions:
            q[~candidates] = -np.inf  # the maximum runs over the sampled moves only
        target = q.max(axis=1).astype(np.float32)  # [B]

        greedy = q.argmax(axis=1)
        explore = self.rng.random(B) < self.epsilon
        actions = np.where(explore, games.random_legal_actions(exp.legal, self.rng), greedy)
        t3 = time.perf_counter()
        chosen = np.arange(B) * A + actions
        done = exp.done[np.arange(B), actions]
        starts = self.fresh if self.archive is None else self.archive.starts(self.fresh, done)
        self.state = games.where(done, starts, take(exp.children, chosen))
        self.games_finished += int(done.sum())
        t4 = time.perf_counter()
        self.timings["engine"] += (t1 - t0) + (t4 - t3)
        self.timings["network"] += t2 - t1
        self.timings["other"] += t3 - t2
        self.positions += B
        return self.rows(obs, target, q)

    def rows(self, obs: np.ndarray, target: np.ndarray, q: np.ndarray) -> dict:
        """The step's rows from its states' encodings ``obs`` [B, *obs_shape], targets [B] and
        one-step values ``q`` float32[B, A] (-inf where a move is illegal or not sampled): a
        collector that stores more of a step (a policy target beside the value's) extends this."""
        return {"obs": obs.astype(np.uint8), "target": target}

    def _sampled(self, legal: np.ndarray, obs: np.ndarray, value_fn: ValueFn) -> np.ndarray:
        """bool[B, A]: the moves whose children this step evaluates (``sample_actions``)."""
        logits = None
        if self.sample_by == "prior":
            forward = getattr(value_fn, "forward", None)
            logits = forward(obs, logits=True)[0] if forward is not None else None
            if logits is None:
                raise ValueError("AviCollector: sample_by='prior' samples moves by the policy head's prior: it needs "
                                 "a network with a policy head (network.policy_head=true) evaluated in the actor "
                                 "(not an inference server, which answers values only)")
        return sample_actions(legal, self.sample_actions, self.rng, logits)

    def collect(self, value_fn: ValueFn, steps: int, deadline: float | None = None) -> dict:
        """``steps`` steps of every environment: rows [steps * B], oldest first. Past
        ``deadline`` (a ``time.time()``) it stops early, after at least one step."""
        return collect_steps(lambda: self.step(value_fn), steps, deadline)

    # Resume support: the environments in mid-game, the exploration generator, the archive.
    def get_state(self) -> dict:
        saved = {"envs": {name: np.asarray(f) for name, f in zip(self.state._fields, self.state)},
                 "rng": self.rng.bit_generator.state, "games_finished": self.games_finished}
        if self.archive is not None:
            saved["archive"] = self.archive.get_state()
        return saved

    def set_state(self, saved: dict) -> None:
        self.state = type(self.state)(*(np.asarray(saved["envs"][name]) for name in self.state._fields))
        self.rng.bit_generator.state = saved["rng"]
        self.games_finished = int(saved["games_finished"])
        if self.archive is not None and "archive" in saved:  # else a run that had none: it starts empty
            self.archive.set_state(saved["archive"], like=self.state)
