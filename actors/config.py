"""The self-play actors' configuration: what each actor reads, validated here.

A run hands every ``SelfPlayActor`` this record whole (``launch/train.py``), and its
inference servers the fields under "Shared inference servers". ``--set actors.KEY=VALUE``
sets one field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.avi import SAMPLE_BY
from inference.compiled import check_compile
from inference.precision import check_dtype
from inference.machine import threads_here, threads_value
from search.cache import EVAL_CACHE_MODES
from search.gumbel import GumbelConfig
from search.mcts import MCTSConfig

SEARCHES = ("puct", "gumbel")


@dataclass(frozen=True)
class SelfPlayConfig:
    """Self-play (AVI paper, Algorithm 1): N_envs environments in all, K collection steps each."""

    num_envs: int = 128  # N_envs, split evenly over the actors
    collect_steps: int = 128  # K, steps per environment per iteration
    epsilon: float = 0.3  # AVI: probability of a uniformly random legal move
    num_actors: int = 1  # self-play actor processes (one CPU each)
    # Torch threads per actor (and per inference server, which then evaluates for the actors).
    # auto: under the synchronous schedule, the node's cores over the processes that evaluate
    # (the actors, or the servers), since the learner is idle while they collect; 1 under
    # the asynchronous one, where they share the cores with the learner.
    threads: int | str = "auto"

    # AlphaZero and AZAL (Table 4; Table 6 for F-Games; AZAL paper B.3).
    mcts: MCTSConfig = field(default_factory=MCTSConfig)  # the self-play search (training values)
    # The search's root and interior rules: "puct" (AlphaZero's) or "gumbel" (Gumbel
    # AlphaZero: Sequential Halving at the root, the improved policy as target; its
    # parameters in `gumbel`, e.g. --set actors.gumbel.max_considered=4).
    search: str = "puct"
    gumbel: GumbelConfig = field(default_factory=GumbelConfig)  # the Gumbel search's parameters (search=gumbel)

    # AVI's sampled children (DAVI, Tian et al. 2022; actors/avi.py): the one-step maximum and
    # the greedy move over k legal moves per state drawn without replacement, only those
    # children evaluated (0: every legal move). The exploring move stays uniform over all.
    sample_actions: int = 0
    # How AVI's k moves are drawn: "uniform", or "prior" (by the policy head's prior,
    # Gumbel-top-k; needs network.policy_head=true and no inference server).
    sample_by: str = "uniform"
    # Archive starts (Go-Exploit, Trudeau and Bowling 2023; actors/archive.py), any
    # algorithm: the probability that a finished game restarts at a state the actor played
    # earlier, drawn uniformly from a reservoir sample of archive_size of them (0: always
    # the initial position). With AZAL each state's moves are kept beside it (its oracle
    # reads a position from its moves).
    archive_start: float = 0.0
    archive_size: int = 10_000  # states in each actor's archive (kept in checkpoints)

    # The network's inference path for self-play; fp32 keeps a run bitwise reproducible
    # (auto's timed choice may differ between runs), and on AVX2 CPUs no reduced-precision
    # path of the MLP presets stays within tolerance (docs/benchmarks.md).
    inference_dtype: str = "fp32"  # auto, fp32, bf16 or int8 (inference/precision.py)
    # The fp32 network's forward compiled by torch.compile (inference/compiled.py): "off",
    # "on", or "auto": compiled once an actor's network has answered 2,000 calls of 64 rows
    # or more (a run long enough to win back a compile of about 2 minutes; tests and quick runs never
    # reach it). Eager where the C++ toolchain is missing, with a warning. Off by default: the
    # compiled kernels' sums need not equal eager's bit for bit, so a run would no longer
    # repeat exactly, and the compile is measured in one process, not yet in Ray's actors.
    compile: str = "off"
    # The evaluation cache (search/cache.py): "cache" evaluates each distinct input once
    # per weight version, "batch" once per call, "off" every time; "auto" is cache for AVI
    # (about half of Connect Four's children repeat within a phase) and off for AlphaZero
    # and AZAL (not shown to pay there). Only evaluations actually run count in the compute proxy.
    eval_cache: str = "auto"

    # Shared inference servers (actors/inference_server.py). 0: every actor evaluates with
    # its own copy of the network. N > 0: N servers, actor i asks server i % N, so that the
    # actors of a node share one large batch (on a GPU, SEED RL's and KataGo's design) and
    # one cache. AVI only: a server answers values, and MCTS needs priors too.
    inference_servers: int = 0
    inference_device: str = "auto"  # the servers': auto (cuda where Ray offers a GPU), cpu or cuda

    def __post_init__(self):
        object.__setattr__(self, "threads", threads_value(self.threads, type(self).__name__))
        for name in ("num_envs", "collect_steps", "num_actors"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {self.epsilon}")
        if self.search not in SEARCHES:
            raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {self.search!r}")
        if self.sample_actions < 0:
            raise ValueError(f"sample_actions must be >= 0 (0: every legal move), got {self.sample_actions}")
        if self.sample_by not in SAMPLE_BY:
            raise ValueError(f"sample_by must be one of {', '.join(SAMPLE_BY)}, got {self.sample_by!r}")
        if not 0.0 <= self.archive_start <= 1.0:
            raise ValueError(f"archive_start must lie in [0, 1], got {self.archive_start}")
        if self.archive_size < 1:
            raise ValueError(f"archive_size must be >= 1, got {self.archive_size}")
        check_dtype(self.inference_dtype, type(self).__name__)
        check_compile(self.compile, type(self).__name__)
        if self.eval_cache not in ("auto", *EVAL_CACHE_MODES):
            raise ValueError(f"eval_cache must be one of auto, {', '.join(EVAL_CACHE_MODES)}, got {self.eval_cache!r}")
        if self.inference_servers < 0:
            raise ValueError(f"inference_servers must be >= 0, got {self.inference_servers}")
        if self.inference_device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"inference_device must be auto, cpu or cuda, got {self.inference_device!r}")

    @property
    def reads_puct_constants(self) -> bool:
        """Whether the self-play search reads mcts.c_puct, c_init and c_base: PUCT's root and
        interior rules do, Gumbel AlphaZero's (Sequential Halving, its mixed value) do not."""
        return self.search == "puct"

    def check(self) -> None:
        """The checks across fields (each field alone is checked on construction)."""
        if self.num_envs % self.num_actors:
            raise ValueError(f"num_envs ({self.num_envs}) must be a multiple of num_actors ({self.num_actors})")
        if self.sample_by == "prior" and self.sample_actions and self.inference_servers:
            raise ValueError("sample_by=prior needs the policy head's priors, and an inference server answers "
                             "values only: set inference_servers=0")
        if self.inference_servers > self.num_actors:
            raise ValueError(f"inference_servers ({self.inference_servers}) must not exceed num_actors "
                             f"({self.num_actors}): a server without actors idles")

    @property
    def torch_threads(self) -> int:
        """The torch threads of an actor or server: ``threads``, or 1 where the run left it
        ``auto`` (a pool built without a run), capped at this node's cores."""
        return threads_here(self.threads)

    @property
    def envs_per_actor(self) -> int:
        return self.num_envs // self.num_actors

    def resolved_cache(self, algo) -> str:
        """``eval_cache`` with ``auto`` made concrete for ``algo``, the run's
        ``AlgorithmDescriptor``: its ``eval_cache``."""
        return algo.eval_cache if self.eval_cache == "auto" else self.eval_cache
