"""Training configuration: one frozen dataclass, presets with the papers' values,
``--set key=value`` overrides, and the checks that run before anything starts.

Presets (AVI paper, Appendix C): Table 3 for Connect Four and Hex, Table 5 for
F-Games, C.2 for Othello and Go (Table 3 with epsilon 0.15). Tic-tac-toe and Chomp
have no paper preset; theirs are small versions of Table 3 sized for a laptop.
AlphaZero and AZAL (``--algo alphazero|azal``) start from the same preset with a policy
head on the network and Table 4's search and schedule (Table 6 for F-Games); AZAL adds
the auxiliary loss weight lambda_aux = 1.0 of the AZAL paper, and labels every ply.
Connect Four's presets run the evaluator's game suites (play against the oracle and
traces, 1,136 and 568 games; traces for AlphaZero and AZAL only) at every 10th
evaluation (``eval_play_every``), its labelled states at every one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields, replace

import games
from actors.labels import LABELLED_GAMES
from evaluation.policies import POLICIES
from learner.inference import INFERENCE_DTYPES
from learner.learner import ALGOS, PRECISIONS
from learner.networks import PRESET_NETWORKS, NetworkConfig
from oracle_service.connect4_engines import ENGINES
from search.cache import EVAL_CACHE_MODES
from search.gumbel import GumbelConfig
from search.mcts import MCTSConfig


class ConfigError(ValueError):
    """A configuration that cannot run; the message names the field."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs; written to ``config.json`` in the run directory."""

    algo: str = "avi"  # avi, alphazero or azal
    game: str = "connect4"  # a name of games.names()
    game_params: dict = field(default_factory=dict)  # keyword arguments of games.make
    preset: str = "paper"  # the name of the preset these values started from
    seed: int = 0  # seeds games, exploration, sampling and network initialisation

    # Self-play (Algorithm 1): N_envs environments in all, K collection steps each.
    num_envs: int = 128  # N_envs, split evenly over the actors
    collect_steps: int = 128  # K, steps per environment per iteration
    epsilon: float = 0.3  # probability of a uniformly random legal move
    gamma: float = 1.0  # discount of eq. 1 (the paper does not state it; 1 gives V* in {-1, 0, 1})
    num_actors: int = 1  # self-play actor processes (one CPU each)
    actor_threads: int = 1  # torch threads per actor

    # AlphaZero and AZAL self-play (Table 4; Table 6 for F-Games; AZAL paper B.3).
    mcts: MCTSConfig = field(default_factory=MCTSConfig)  # the self-play search (training values)
    # The search's root and interior rules: "puct" (AlphaZero's) or "gumbel" (Gumbel
    # AlphaZero: Sequential Halving at the root, the improved policy as target; its
    # parameters in `gumbel`, e.g. --set gumbel.max_considered=4). AlphaZero and AZAL only.
    search: str = "puct"
    gumbel: GumbelConfig = field(default_factory=GumbelConfig)
    aux_weight: float = 1.0  # AZAL: lambda_aux of the oracle cross-entropy
    label_min_ply: int = 0  # AZAL Connect Four: positions with fewer stones get no label (0: every ply)
    oracle_replicas: int = 1  # AZAL: oracle service actors answering the labels
    oracle_store: str = ""  # AZAL: solved-position store, a path or redis:// URL ("" = the default file)
    oracle_engine: str = "ours"  # the Connect Four oracle's engine: ours, or bitbully (the optional AGPL extra)

    # Optimisation.
    lr: float = 3e-4  # Adam learning rate
    batch_size: int = 256  # minibatch rows
    epochs_per_iteration: float = 4.0  # replay ratio: gradient samples per row collected
    network: NetworkConfig = field(default_factory=lambda: NetworkConfig(kind="mlp", blocks=4, layers_per_block=4))
    augment_symmetries: bool = False  # random symmetry per sampled row (Othello, Go; paper C.2)

    # Replay service.
    replay_capacity: int = 1_000_000  # rows over all shards
    replay_shards: int = 2  # ring-buffer actors
    prefetch: int = 4  # sample requests in flight ahead of the learner
    # Batches per sample request (ReplaySampler.next_block): a GPU learner takes thousands of
    # batches a second, which one round trip to the shards each would not feed. 1 keeps
    # the draws of runs and checkpoints made before blocks existed.
    batches_per_request: int = 1

    # Schedule: "sync" is the paper's (collect, then train, with frozen weights while
    # collecting); "async" lets actors collect continuously while the learner is held
    # to samples_per_insert and actors wait when they get max_policy_lag versions behind.
    schedule: str = "sync"
    samples_per_insert: float = 4.0  # async only: gradient samples per row inserted
    max_policy_lag: int = 4  # async only: weight versions an actor may run behind

    # Bookkeeping.
    checkpoint_every: int = 1  # iterations between checkpoints (and replay snapshots)
    keep_checkpoints: int = 3
    eval_every: int = 1  # iterations between evaluations (built-in exact labels and the evaluator's suites)
    eval_play_every: int = 1  # evaluations between the evaluator's game suites (play, traces; launch/evaluator.py)
    eval_suites: str = "auto"  # the evaluator actor's suites: auto, default, none or a comma list (launch/evaluator.py)
    eval_policy: str = "auto"  # its policy: auto (greedy or policy head), greedy, policy-head, mcts, minimax
    eval_simulations: int = 64  # its MCTS budget (eval_policy=mcts)
    eval_max_openings: int = 0  # play and trace suites from the first N openings only (0: all)
    device: str = "auto"  # learner device: auto (cuda when Ray offers a GPU), cpu or cuda
    # Precision (README, Inference precision). fp32 by default: it keeps a run bitwise
    # reproducible (auto's timed choice may differ between runs), and on the AVX2 CPUs
    # measured here no reduced-precision path of the MLP presets stays within tolerance.
    inference_dtype: str = "fp32"  # self-play, evaluator and exact-metric networks: auto, fp32, bf16 or int8
    # The self-play actors' evaluation cache (search.cache; README, Benchmarks): "cache"
    # evaluates each distinct input once per weight version, "batch" once per call, "off"
    # every time; "auto" is cache for AVI (about half of Connect Four's children repeat
    # within a phase) and off for AlphaZero and AZAL (the gain is not yet shown there).
    # Only evaluations actually run count in the compute proxy.
    eval_cache: str = "auto"
    learner_precision: str = "fp32"  # the learner's forward and backward passes: fp32, tf32 (CUDA) or bf16 (autocast)
    # Shared batched inference actors (actors/inference_server.py; README, Inference server).
    # 0: every self-play actor evaluates with its own copy of the network. N > 0: N servers,
    # actor i asks server i % N, so that the actors of a node share one large batch (on a GPU,
    # SEED RL's and KataGo's design) and one cache. AVI only: a server answers values, and
    # MCTS needs priors too.
    inference_servers: int = 0
    inference_device: str = "auto"  # the servers': auto (cuda when Ray offers a GPU, shared with the learner's), cpu or cuda

    @property
    def rows_per_iteration(self) -> int:
        return self.num_envs * self.collect_steps

    @property
    def updates_per_iteration(self) -> int:
        """Gradient steps per iteration: epochs over the rows of one iteration."""
        return max(1, round(self.epochs_per_iteration * self.rows_per_iteration / self.batch_size))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainConfig":
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        data = dict(data)
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"config has unknown fields: {', '.join(sorted(unknown))}")
        nested = {"network": NetworkConfig, "mcts": MCTSConfig, "gumbel": GumbelConfig}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name in nested:
                if not isinstance(value, dict):
                    raise ConfigError(f"config field {f.name!r} must be an object, got {value!r}")
                try:
                    data[f.name] = nested[f.name](**value)
                except (TypeError, ValueError) as err:
                    raise ConfigError(f"config field {f.name!r}: {err}") from None
            elif not _has_type(value, f.type):
                raise ConfigError(f"config field {f.name!r} must be of type {f.type}, got {value!r}")
        return cls(**data)


def _has_type(value, type_name: str) -> bool:
    """Whether a JSON value fits a field annotated ``type_name`` (int, float, str, bool, dict)."""
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "dict": dict}[type_name])


def _table3(game: str, **changes) -> TrainConfig:
    return replace(TrainConfig(game=game, network=PRESET_NETWORKS[game]), **changes)


# (game, preset name) -> config. "paper" is the default preset of each game.
PRESETS: dict[tuple[str, str], TrainConfig] = {
    # Play and traces from every opening take minutes (launch/evaluator.py; README,
    # Evaluation): every 10th evaluation, so that they cost a fraction of the run.
    ("connect4", "paper"): _table3("connect4", eval_play_every=10),
    ("hex", "paper"): _table3("hex"),
    ("othello", "paper"): _table3("othello", epsilon=0.15, augment_symmetries=True),
    ("go", "paper"): _table3("go", epsilon=0.15, augment_symmetries=True),
    ("fgame", "paper"): _table3("fgame", num_envs=4096, epochs_per_iteration=1.0),
    # No paper preset: Table 3 scaled down so that one iteration takes about a second.
    ("tictactoe", "paper"): _table3("tictactoe", num_envs=256, collect_steps=16, epsilon=0.5,
                                   replay_capacity=100_000, checkpoint_every=10, eval_every=5),
    ("chomp", "paper"): _table3("chomp"),
}
# Smaller variants of every preset for smoke runs and tests on a laptop; and the paper's
# values sized for the node the run finds (for_node, applied by `resolved` once Ray is up).
for (_game, _name), _cfg in list(PRESETS.items()):
    PRESETS[(_game, "small")] = replace(_cfg, preset="small", num_envs=min(_cfg.num_envs, 64),
                                        collect_steps=min(_cfg.collect_steps, 16),
                                        replay_capacity=min(_cfg.replay_capacity, 100_000))
    PRESETS[(_game, "node")] = replace(_cfg, preset="node")


# AlphaZero's changes to a game's preset: Table 4 (Connect Four, Hex; used for every game
# without a table of its own) keeps Table 3's schedule, 256 gradient steps per iteration
# of 128 x 128 positions; Table 6 (F-Games): 4096 x 32 positions, batches of 1024, 200
# steps per iteration, and the c_init / c_base schedule of PUCT.
ALPHAZERO_CHANGES: dict[str, dict] = {
    # The AZAL paper's trace metrics (Tables 1 and 2) beside play, for AlphaZero and AZAL alike.
    "connect4": dict(eval_suites="connect4-uniform,connect4-eps-optimal,connect4-play,connect4-traces"),
    "fgame": dict(num_envs=4096, collect_steps=32, batch_size=1024, epochs_per_iteration=200 * 1024 / (4096 * 32),
                  mcts=MCTSConfig(c_init=1.25, c_base=19652.0)),
}
# AZAL on Connect Four labels every ply, the opening included, where the AZAL paper finds
# the oracle's guidance matters most: the solver's 12-ply book answers a position before
# ply 12 in milliseconds (it took seconds to minutes without it).
AZAL_CHANGES: dict[str, dict] = {"connect4": dict(label_min_ply=0)}


def for_algo(config: TrainConfig, algo: str) -> TrainConfig:
    """A game's preset made for ``algo`` (see ALPHAZERO_CHANGES and AZAL_CHANGES)."""
    config = replace(config, algo=algo)
    if algo == "avi":
        return config
    changes = dict(ALPHAZERO_CHANGES.get(config.game, {}))
    if config.preset == "small":  # keep the small preset small
        changes = {k: v for k, v in changes.items() if k not in ("num_envs", "collect_steps")}
    if algo == "azal":
        changes.update(AZAL_CHANGES.get(config.game, {}))
    return replace(config, network=replace(config.network, policy_head=True), **changes)


# The roles' sizes on one GPU node (issue 36): the learner and two inference servers share
# the GPU (launch/placement.py), every other CPU steps games; the papers' hyperparameters
# (batch, replay ratio, epsilon, replay capacity) do not change.
NODE_ENVS_PER_ACTOR = 1024  # an actor's environments: one request of ~6k children per step
NODE_RESERVED_CPUS = 4  # for the driver, the learner's loop, the inference servers and the evaluator


def for_node(config: TrainConfig, cpus: float, gpus: float) -> TrainConfig:
    """``config`` sized for a node with ``cpus`` CPUs and ``gpus`` GPUs, as Ray reports them.

    With a GPU: one self-play actor per CPU left beside NODE_RESERVED_CPUS, NODE_ENVS_PER_ACTOR
    environments each; for AVI two inference servers on the GPU (no evaluation cache: the GPU
    evaluates a repeat faster than a hash finds it; AlphaZero's search needs priors, which the
    servers do not answer, so its actors keep their own networks); the asynchronous schedule
    at the config's replay ratio (``samples_per_insert`` = epochs per iteration), so that the
    learner trains while the actors play; 64 batches per sample request. Evaluations and
    checkpoints come every 200 learner chunks instead of every one (the run ends with both).
    Without a GPU the config is returned unchanged: the CPU presets are already sized."""
    if gpus < 1:
        return config
    actors = max(1, int(cpus) - NODE_RESERVED_CPUS)
    serving = (dict(inference_servers=min(2, actors), inference_device="cuda", eval_cache="off")
               if config.algo == "avi" else {})
    return replace(config, num_actors=actors, num_envs=actors * NODE_ENVS_PER_ACTOR, collect_steps=32, **serving,
                   schedule="async", samples_per_insert=config.epochs_per_iteration,
                   replay_shards=max(config.replay_shards, 4), batches_per_request=64, device="cuda",
                   eval_every=200, checkpoint_every=200)


def resolved(config: TrainConfig, *, cpus: float, gpus: float) -> TrainConfig:
    """``config`` with every ``auto`` made concrete for a Ray cluster of ``cpus`` CPUs and
    ``gpus`` GPUs, before any actor starts (the run writes the result to ``config.json``):

    - ``preset="node"``: the roles sized for the node by :func:`for_node`;
    - ``device``: cuda where the cluster has a GPU, else cpu;
    - ``inference_device``: the servers' (``launch.placement.inference_device``);
    - ``eval_cache``: ``cache`` for AVI (about half of Connect Four's children repeat within
      a phase) and for its inference servers, ``off`` for AlphaZero and AZAL (not yet shown
      to pay there).

    Explicit values are kept; a ``cuda`` the cluster cannot honour is the run's error
    (``launch.train.Run``)."""
    from launch.placement import inference_device, learner_device

    if config.preset == "node":
        config = for_node(config, cpus, gpus)
    device = learner_device(config.device, gpus) if config.device == "auto" else config.device
    serving = (inference_device(config.inference_device, config.inference_servers, gpus, device)
               if config.inference_device == "auto" else config.inference_device)
    cache = ("cache" if config.algo == "avi" else "off") if config.eval_cache == "auto" else config.eval_cache
    return replace(config, device=device, inference_device=serving, eval_cache=cache)


def preset_names(game: str) -> list[str]:
    return sorted(name for g, name in PRESETS if g == game)


def parse_value(raw: str, current):
    """Parse ``raw`` to the type of the field's current value."""
    if isinstance(current, bool):
        if raw.lower() in ("true", "1", "yes"):
            return True
        if raw.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"expected true or false, got {raw!r}")
    if isinstance(current, int):
        return int(raw)
    if isinstance(current, float):
        return float(raw)
    if isinstance(current, dict):
        value = json.loads(raw)
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {raw!r}")
        return value
    return raw


def apply_overrides(config: TrainConfig, overrides: list[str]) -> TrainConfig:
    """``["lr=1e-3", "network.width=128"]`` applied to ``config``; errors name the key."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r} is not of the form key=value")
        target, _, sub = key.partition(".")
        names = {f.name for f in fields(TrainConfig)}
        if target not in names:
            raise ConfigError(f"--set {item!r}: unknown config key {target!r}; keys: {', '.join(sorted(names))}")
        try:
            if sub:
                inner = getattr(config, target)
                if not dataclasses.is_dataclass(inner) or sub not in {f.name for f in fields(inner)}:
                    raise ConfigError(f"--set {item!r}: {target!r} has no field {sub!r}")
                value = replace(inner, **{sub: parse_value(raw, getattr(inner, sub))})
            else:
                if dataclasses.is_dataclass(getattr(config, target)):
                    raise ConfigError(f"--set {item!r}: set the fields of {target!r} one by one ({target}.FIELD=...)")
                value = parse_value(raw, getattr(config, target))
        except ValueError as err:
            if isinstance(err, ConfigError):
                raise
            raise ConfigError(f"--set {item!r}: {err}") from None
        config = replace(config, **{target: value})
    return config


def resolve(game: str, preset: str | None = None, overrides: list[str] = (), algo: str = "avi",
            seed: int | None = None) -> TrainConfig:
    """The preset for ``game`` with ``overrides`` applied, checked."""
    if game not in games.names():
        raise ConfigError(f"unknown game {game!r}; known games: {', '.join(games.names())}")
    preset = preset or "paper"
    if (game, preset) not in PRESETS:
        other = sorted(g for g, name in PRESETS if name == preset)
        hint = f" (it exists for {', '.join(other)})" if other else ""
        raise ConfigError(f"no preset {preset!r} for game {game!r}{hint}; "
                          f"presets for {game}: {', '.join(preset_names(game))}")
    if algo not in ALGOS:
        raise ConfigError(f"unknown algo {algo!r}; known: {', '.join(ALGOS)}")
    config = for_algo(PRESETS[(game, preset)], algo)
    if seed is not None:
        config = replace(config, seed=seed)
    config = apply_overrides(config, list(overrides))
    validate(config)
    return config


def validate(config: TrainConfig) -> None:
    """Checks at start-up, so that nothing is discovered an hour into a run."""
    if config.algo not in ALGOS:
        raise ConfigError(f"unknown algo {config.algo!r}; known: {', '.join(ALGOS)}")
    if config.algo != "avi" and not config.network.policy_head:
        raise ConfigError(f"algo {config.algo} trains a policy: network.policy_head must be true")
    if config.algo == "azal" and config.game not in LABELLED_GAMES:
        raise ConfigError(f"algo azal needs an oracle that labels optimal moves: games "
                          f"{', '.join(LABELLED_GAMES)}, not {config.game!r}")
    if config.eval_policy not in POLICIES:
        raise ConfigError(f"eval_policy must be one of {', '.join(POLICIES)}, got {config.eval_policy!r}")
    if config.eval_simulations < 1 or config.eval_max_openings < 0:
        raise ConfigError("eval_simulations must be >= 1 and eval_max_openings >= 0")
    if config.oracle_engine not in ENGINES:
        raise ConfigError(f"oracle_engine must be one of {', '.join(ENGINES)}, got {config.oracle_engine!r}")
    if config.label_min_ply < 0 or config.oracle_replicas < 1:
        raise ConfigError("label_min_ply must be >= 0 and oracle_replicas >= 1")
    if config.game not in games.names():
        raise ConfigError(f"unknown game {config.game!r}; known games: {', '.join(games.names())}")
    try:
        games.make(config.game, **config.game_params)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"game_params {config.game_params}: {err}") from None
    positive = ["num_envs", "collect_steps", "num_actors", "actor_threads", "batch_size", "replay_capacity",
                "replay_shards", "prefetch", "batches_per_request", "checkpoint_every", "keep_checkpoints", "eval_every", "eval_play_every"]
    for name in positive:
        if getattr(config, name) < 1:
            raise ConfigError(f"{name} must be >= 1, got {getattr(config, name)}")
    for name in ("lr", "epochs_per_iteration", "samples_per_insert"):
        if not getattr(config, name) > 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(config, name)}")
    if not 0.0 <= config.epsilon <= 1.0:
        raise ConfigError(f"epsilon must lie in [0, 1], got {config.epsilon}")
    if not 0.0 <= config.gamma <= 1.0:
        raise ConfigError(f"gamma must lie in [0, 1], got {config.gamma}")
    if config.num_envs % config.num_actors:
        raise ConfigError(f"num_envs ({config.num_envs}) must be a multiple of num_actors ({config.num_actors})")
    if config.replay_capacity < config.replay_shards:
        raise ConfigError("replay_capacity must be at least replay_shards")
    if config.schedule not in ("sync", "async"):
        raise ConfigError(f"schedule must be sync or async, got {config.schedule!r}")
    if config.device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"device must be auto, cpu or cuda, got {config.device!r}")
    if config.inference_dtype not in INFERENCE_DTYPES:
        raise ConfigError(f"inference_dtype must be one of {', '.join(INFERENCE_DTYPES)}, got {config.inference_dtype!r}")
    if config.eval_cache not in ("auto", *EVAL_CACHE_MODES):
        raise ConfigError(f"eval_cache must be one of auto, {', '.join(EVAL_CACHE_MODES)}, got {config.eval_cache!r}")
    if config.learner_precision not in PRECISIONS:
        raise ConfigError(f"learner_precision must be one of {', '.join(PRECISIONS)}, "
                          f"got {config.learner_precision!r}")
    if config.inference_servers < 0:
        raise ConfigError(f"inference_servers must be >= 0, got {config.inference_servers}")
    if config.inference_servers and config.algo != "avi":
        raise ConfigError(f"inference_servers={config.inference_servers}: an inference server answers values "
                          f"only, and {config.algo}'s MCTS needs priors; set inference_servers=0")
    if config.inference_servers > config.num_actors:
        raise ConfigError(f"inference_servers ({config.inference_servers}) must not exceed num_actors "
                          f"({config.num_actors}): a server without actors idles")
    if config.inference_device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"inference_device must be auto, cpu or cuda, got {config.inference_device!r}")
    if config.search not in ("puct", "gumbel"):
        raise ConfigError(f"search must be puct or gumbel, got {config.search!r}")
    if config.search == "gumbel" and config.algo == "avi":
        raise ConfigError("search=gumbel is a search for AlphaZero and AZAL; AVI searches one step (algo avi)")
    if config.max_policy_lag < 1:
        raise ConfigError(f"max_policy_lag must be >= 1, got {config.max_policy_lag}")
