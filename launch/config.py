"""Training configuration: one frozen dataclass, presets with the papers' values,
``--set key=value`` overrides, and the checks that run before anything starts.

Presets (AVI paper, Appendix C; each game's changes in its descriptor, games/<game>.py): Table 3 for Connect Four and Hex, Table 5 for
F-Games, C.2 for Othello and Go (Table 3 with epsilon 0.15). Tic-tac-toe and Chomp
have no paper preset; theirs are small versions of Table 3 sized for a laptop.
Every algorithm starts from the same preset with the changes its descriptor makes
(``algorithms/<algo>.py``, :func:`for_algo`): AlphaZero and AZAL a policy head on the network and
Table 4's search and schedule (Table 6 for F-Games); AZAL labels every ply. An algorithm's
own settings (its descriptor's ``settings_record``, such as AZAL's auxiliary loss weight
lambda_aux = 1.0 of the AZAL paper) are the ``algorithm.FIELD`` keys.
Connect Four's presets run the evaluator's game suites (play against the oracle and
traces, 1,136 and 568 games; traces for AlphaZero and AZAL only) at every 10th
evaluation (``evaluation.play_every``), its labelled states at every one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields, replace

import algorithms
import games
from actors.config import SelfPlayConfig
from evaluation.config import EvaluationConfig
from learner.config import LearnerConfig
from inference.game_network import GameNetwork
from inference.networks import NetworkConfig
from oracle_service.config import OracleConfig
from replay.config import ReplayConfig
from search.gumbel import GumbelConfig
from search.mcts import MCTSConfig


class ConfigError(ValueError):
    """A configuration that cannot run; the message names the field."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs; written to ``config.json`` in the run directory.

    Each role owns its part (``actors``, ``learner``, ``replay``, ``evaluation``,
    ``oracle``), validated where it is defined and handed to that role whole; what more
    than one role reads (the game, the network, the discount) and the schedule stay here."""

    algo: str = "avi"  # a name of algorithms.names()
    # The algorithm's own settings, field -> value (its descriptor's settings_record, in its
    # module algorithms/<algo>.py; the fields not given keep their defaults). --set algorithm.FIELD=VALUE.
    algorithm: dict = field(default_factory=dict)
    game: str = "connect4"  # a name of games.names()
    game_params: dict = field(default_factory=dict)  # keyword arguments of games.make
    preset: str = "paper"  # the name of the preset these values started from
    seed: int = 0  # seeds games, exploration, sampling and network initialisation
    gamma: float = 1.0  # discount of eq. 1 (the paper does not state it; 1 gives V* in {-1, 0, 1})
    network: NetworkConfig = field(default_factory=lambda: NetworkConfig(kind="mlp", blocks=4, layers_per_block=4))

    actors: SelfPlayConfig = field(default_factory=SelfPlayConfig)  # self-play (actors/config.py)
    learner: LearnerConfig = field(default_factory=LearnerConfig)  # optimisation (learner/config.py)
    replay: ReplayConfig = field(default_factory=ReplayConfig)  # the replay service (replay/config.py)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)  # the evaluator (evaluation/config.py)
    oracle: OracleConfig = field(default_factory=OracleConfig)  # the oracle service (oracle_service/config.py)

    # Schedule: "sync" is the paper's (collect, then train, with frozen weights while
    # collecting); "async" lets actors collect continuously while the learner is held
    # to samples_per_insert and actors wait when they get max_policy_lag versions behind.
    schedule: str = "sync"
    samples_per_insert: float = 4.0  # async only: gradient samples per row inserted
    max_policy_lag: int = 4  # async only: weight versions an actor may run behind
    checkpoint_every: int = 1  # iterations between checkpoints (and replay snapshots)
    keep_checkpoints: int = 3  # the newest checkpoints (and snapshot pairs) kept; older ones are removed
    # Updates: the first checkpoint at or past each multiple is kept as well (its weights, not
    # its replay snapshot), to score the run afterwards at equal compute or over many
    # checkpoints; 0 keeps only the newest.
    keep_checkpoints_every: int = 0
    # Seconds a run goes on training while its storage cannot be written (an object store's
    # or a DNS outage): a failed checkpoint is tried again at the next one, the final one
    # every few seconds, and the run ends with the storage's error only once the writes have
    # failed for this long. 0: the first failed checkpoint ends the run.
    storage_outage_s: float = 600.0

    @property
    def game_network(self) -> GameNetwork:
        """The game and its network, the record every Ray worker of the run is built from."""
        return GameNetwork(game=self.game, game_params=self.game_params, network=self.network)

    @property
    def rows_per_iteration(self) -> int:
        return self.actors.num_envs * self.actors.collect_steps

    @property
    def updates_per_iteration(self) -> int:
        """Gradient steps per iteration: epochs over the rows of one iteration."""
        return max(1, round(self.learner.epochs_per_iteration * self.rows_per_iteration / self.learner.batch_size))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainConfig":
        """A config from its JSON object (``config.json``); one written before the roles
        owned their fields (flat keys such as ``lr``) is read with each key at its new place."""
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        data = _from_flat(data) if set(data) & set(FLAT_KEYS) else data
        data = _moved_to_algorithm(data)
        try:
            config = _build(cls, data, "")
        except (TypeError, ValueError) as err:
            if isinstance(err, ConfigError):
                raise
            raise ConfigError(f"config: {err}") from None
        if config.algo in algorithms.names():  # its own settings, checked by its record
            try:
                algorithms.configured(config.algo, config.algorithm)
            except (TypeError, ValueError) as err:
                raise ConfigError(f"config field 'algorithm': {err}") from None
        return config


# The nested records of a TrainConfig, by dotted path: built from JSON objects.
NESTED = {"network": NetworkConfig, "actors": SelfPlayConfig, "actors.mcts": MCTSConfig,
          "actors.gumbel": GumbelConfig, "learner": LearnerConfig, "replay": ReplayConfig,
          "evaluation": EvaluationConfig, "oracle": OracleConfig}

# Where each key of the flat configs written before the roles owned their fields went.
# An old key in --set is refused with its new name; an old config.json is read with them.
FLAT_KEYS = {
    "num_envs": "actors.num_envs", "collect_steps": "actors.collect_steps", "epsilon": "actors.epsilon",
    "num_actors": "actors.num_actors", "actor_threads": "actors.threads", "mcts": "actors.mcts",
    "search": "actors.search", "gumbel": "actors.gumbel", "label_min_ply": "actors.label_min_ply",
    "eval_cache": "actors.eval_cache", "inference_servers": "actors.inference_servers",
    "inference_device": "actors.inference_device",
    "lr": "learner.lr", "batch_size": "learner.batch_size", "epochs_per_iteration": "learner.epochs_per_iteration",
    "augment_symmetries": "learner.augment_symmetries", "aux_weight": "learner.aux_weight",
    "device": "learner.device", "learner_precision": "learner.precision", "prefetch": "learner.prefetch",
    "batches_per_request": "learner.batches_per_request",
    "replay_capacity": "replay.capacity", "replay_shards": "replay.shards",
    "eval_every": "evaluation.every", "eval_play_every": "evaluation.play_every", "eval_suites": "evaluation.suites",
    "eval_policy": "evaluation.policy", "eval_simulations": "evaluation.simulations",
    "eval_max_openings": "evaluation.max_openings",
    "oracle_replicas": "oracle.replicas", "oracle_store": "oracle.store", "oracle_engine": "oracle.engine",
    # One knob then, read by self-play and by the evaluator alike: now each role's own.
    "inference_dtype": ("actors.inference_dtype", "evaluation.inference_dtype"),
}


def _from_flat(data: dict) -> dict:
    """A flat config object (before the roles owned their fields) in today's nesting."""
    out: dict = {}
    for key, value in data.items():
        for path in _new_paths(key):
            node = out
            *parents, leaf = path.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
    return out


def _moved_to_algorithm(data: dict) -> dict:
    """A config object whose keys that are now its algorithm's own settings (the descriptors'
    ``moved_keys``, such as a role's field of one algorithm) moved into ``algorithm``."""
    algo = data.get("algo", TrainConfig.algo)
    moved = {old: new for old, (name, new) in algorithms.moved_keys().items() if name == algo}
    data = json.loads(json.dumps(data))  # a copy: the caller's stays as it was
    for old, new in moved.items():
        *parents, leaf = old.split(".")
        node = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            data.setdefault("algorithm", {}).setdefault(new, node.pop(leaf))
    for old, (name, new) in algorithms.moved_keys().items():  # another algorithm's: not read, dropped
        *parents, leaf = old.split(".")
        node = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return data


def _new_paths(key: str) -> tuple[str, ...]:
    moved = FLAT_KEYS.get(key, key)
    return moved if isinstance(moved, tuple) else (moved,)


def _build(cls, data: dict, prefix: str):
    """``cls`` from the JSON object ``data``; errors name the dotted key."""
    if not isinstance(data, dict):
        raise ConfigError(f"config field {prefix.rstrip('.')!r} must be an object, got {data!r}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"config has unknown fields: {', '.join(prefix + k for k in unknown)}")
    values = {}
    for name, value in data.items():
        path = prefix + name
        if path in NESTED:
            values[name] = _build(NESTED[path], value, path + ".")
        elif not _has_type(value, known[name].type):
            raise ConfigError(f"config field {path!r} must be of type {known[name].type}, got {value!r}")
        else:
            values[name] = value
    try:
        return cls(**values)
    except ValueError as err:
        raise ConfigError(f"config field {prefix.rstrip('.') or cls.__name__}: {err}") from None


def _has_type(value, type_name: str) -> bool:
    """Whether a JSON value fits a field annotated ``type_name`` (int, float, str, bool, dict,
    or a union of them such as ``int | str``: a count or ``auto``)."""
    if "|" in type_name:
        return any(_has_type(value, part.strip()) for part in type_name.split("|"))
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "dict": dict}[type_name])


def changed(config, **changes):
    """``config`` (a TrainConfig or a role's config) with dotted-key ``changes``:
    ``changed(c, **{"actors.num_envs": 64})``, or nested keyword tables."""
    for key, value in changes.items():
        config = _set_path(config, key.split("."), value)
    return config


def _set_path(record, parts: list[str], value):
    head, *rest = parts
    if isinstance(record, dict):  # a section of JSON values (``algorithm``: field -> value)
        return {**record, head: _set_path(record.get(head, {}), rest, value) if rest else value}
    if not rest:
        return replace(record, **{head: value})
    return replace(record, **{head: _set_path(getattr(record, head), rest, value)})


PRESET_NAMES = ("paper", "small", "node")
# What a game's AlphaZero changes of its "small" preset leave out: the small preset's sizes.
SMALL_SIZES = ("actors.num_envs", "actors.collect_steps")


def preset_config(game: str, name: str = "paper", game_params: dict | None = None) -> TrainConfig:
    """A game's preset, from its descriptor (``games/<game>.py``: ``preset``, the network,
    and ``preset_at``: the changes at the board ``game_params`` makes):

    - ``paper``: the AVI paper's Table 3 (the TrainConfig defaults) with the game's changes
      (Table 5 for F-Games, C.2 for Othello and Go, a scaled-down Table 3 for the games the
      papers do not train);
    - ``small``: the same with at most 64 environments, 16 steps and 100,000 replay rows,
      for smoke runs and tests on a laptop;
    - ``node``: the paper's values, sized for the node the run finds (``for_node``,
      applied by ``resolved`` once Ray is up)."""
    if name not in PRESET_NAMES:
        raise ConfigError(f"no preset {name!r} for game {game!r}; presets: {', '.join(PRESET_NAMES)}")
    described = games.descriptor(game)
    paper = changed(TrainConfig(game=game, network=NetworkConfig(**described.network)), **described.preset)
    if game_params:
        at_board = described.piece("preset_at")(dict(game_params)) if described.preset_at else {}
        paper = changed(replace(paper, game_params=dict(game_params)), **at_board)
    if name == "small":
        return changed(replace(paper, preset="small"), **{
            "actors.num_envs": min(paper.actors.num_envs, 64),
            "actors.collect_steps": min(paper.actors.collect_steps, 16),
            "replay.capacity": min(paper.replay.capacity, 100_000)})
    return replace(paper, preset=name)


def for_algo(config: TrainConfig, algo: str) -> TrainConfig:
    """A game's preset made for ``algo``: the changes its descriptor makes at this game
    (``algorithms.preset_changes``: AlphaZero's Table 4 search and schedule are the config's
    defaults, Table 6 for F-Games; AZAL's over AlphaZero's), and a policy head where its
    loss trains one. The small preset keeps its sizes."""
    described = algorithms.descriptor(algo)
    # Its own settings at their defaults, written out so that config.json shows them.
    config = replace(config, algo=algo, algorithm=dataclasses.asdict(described.settings) if described.settings else {})
    changes = algorithms.preset_changes(described, config.game)
    if config.preset == "small":  # keep the small preset small
        changes = {k: v for k, v in changes.items() if k not in SMALL_SIZES}
    if "evaluation.suites" in changes and config.game_params:
        changes["evaluation.suites"] = _suites_at_board(config, changes["evaluation.suites"])
    if described.policy_head:
        config = replace(config, network=replace(config.network, policy_head=True))
    return changed(config, **changes)


def _suites_at_board(config: TrainConfig, suites: str) -> str:
    """A preset's named suites (its game's committed board's) as they are named on the
    board ``config.game_params`` makes (``connect4-play`` -> ``connect4-5x4-play``)."""
    from evaluation.config import named_suites
    from evaluation.datasets import board_name

    game = config.game_network.make_game()
    return ",".join(board_name(game, name) for name in named_suites(suites)) or suites


# The roles' sizes on one GPU node: the learner and two inference servers share
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
    serving = ({"actors.inference_servers": min(2, actors), "actors.inference_device": "cuda",
                "actors.eval_cache": "off"} if algorithms.descriptor(config.algo).inference_server else {})
    return changed(config, **{
        "actors.num_actors": actors, "actors.num_envs": actors * NODE_ENVS_PER_ACTOR, "actors.collect_steps": 32,
        **serving, "schedule": "async", "samples_per_insert": config.learner.epochs_per_iteration,
        "replay.shards": max(config.replay.shards, 4), "learner.batches_per_request": 64, "learner.device": "cuda",
        "evaluation.every": 200, "checkpoint_every": 200})


def resolved(config: TrainConfig, *, cpus: float, gpus: float, gpu_wait: str = "") -> TrainConfig:
    """``config`` with every ``auto`` made concrete for a Ray cluster of ``cpus`` CPUs and
    ``gpus`` GPUs, before any actor starts (the run writes the result to ``config.json``):

    - ``preset="node"``: the roles sized for the node by :func:`for_node`;
    - ``learner.device``: cuda where the cluster has a GPU, else cpu; the reason in
      ``learner.device_note``, with ``gpu_wait``, what the run's wait for a GPU node found
      (``launch.run_placement.resources_after_gpu_wait``);
    - ``actors.inference_device``: the servers' (``launch.placement.inference_device``);
    - ``actors.eval_cache``: ``cache`` for AVI (about half of Connect Four's children repeat
      within a phase) and for its inference servers, ``off`` for AlphaZero and AZAL (not yet
      shown to pay there);
    - ``learner.precision``: ``learner.config.auto_precision`` for the learner's device and
      this process's CPU (``inference.machine``), the reason in ``learner.precision_note``; a
      learner whose node's CPU lacks the native bf16 the driver's has trains in fp32 and
      reports it (``learner_precision`` in the metrics);
    - ``learner.threads`` and ``actors.threads``: :func:`phase_threads`.

    Explicit values are kept; a ``cuda`` the cluster cannot honour is the run's error
    (``launch.train.Run``)."""
    from launch.placement import inference_device, learner_device
    from learner.config import auto_precision
    from inference.machine import this_cpu

    if config.preset == "node":
        config = for_node(config, cpus, gpus)
    actors, learner = config.actors, config.learner
    device = learner_device(learner.device, gpus) if learner.device == "auto" else learner.device
    device_note = (_auto_device_note(device, gpus) if learner.device == "auto"
                   else learner.device_note or "set in the config")
    device_note = f"{device_note}; {gpu_wait}" if gpu_wait else device_note
    serving = (inference_device(actors.inference_device, actors.inference_servers, gpus, device)
               if actors.inference_device == "auto" else actors.inference_device)
    precision, note = ((learner.precision, learner.precision_note or "set in the config")
                       if learner.precision != "auto" else auto_precision(device, this_cpu(), config.network))
    learner_threads, actor_threads = phase_threads(config, cpus, device, serving)
    return changed(config, **{"learner.device": device, "learner.device_note": device_note,
                              "actors.inference_device": serving,
                              "actors.eval_cache": actors.resolved_cache(algorithms.descriptor(config.algo)),
                              "learner.precision": precision, "learner.precision_note": note,
                              "learner.threads": learner_threads, "actors.threads": actor_threads})


def _auto_device_note(device: str, gpus: float) -> str:
    """Why ``learner.device=auto`` became ``device`` on a cluster of ``gpus`` GPUs."""
    if device == "cuda":
        return f"auto: cuda, the Ray cluster offers {gpus:g} GPU(s)"
    return "auto: cpu, the Ray cluster offers no GPU"


def phase_threads(config: TrainConfig, cpus: float, learner_device: str, inference_device: str) -> tuple[int, int]:
    """``(learner.threads, actors.threads)`` with ``auto`` made concrete for ``cpus`` CPUs.

    Under the synchronous schedule the learner and the actors take turns (collect, then
    train, then evaluate), so each uses every core in its phase: the learner all ``cpus``,
    each process that evaluates during collection (an actor, or an inference server when
    there are servers) its share. AZAL's oracle replicas solve during collection, on
    the cores the evaluating processes leave them: one core each is kept for them. Under
    the asynchronous schedule they all run at once, on the one CPU Ray gives each: 1. A GPU
    learner's host thread and a GPU server's need no more: 1. On a cluster ``cpus`` counts
    every node's; each worker caps its threads at its own node's cores
    (``inference.machine.usable_cores``)."""
    learner, actors = config.learner, config.actors
    sync = config.schedule == "sync"
    learner_threads = learner.threads
    if learner_threads == "auto":
        learner_threads = max(1, int(cpus)) if sync and learner_device == "cpu" else 1
    actor_threads = actors.threads
    if actor_threads == "auto":
        evaluating = actors.inference_servers or actors.num_actors
        on_cpu = not actors.inference_servers or inference_device == "cpu"
        labels = algorithms.descriptor(config.algo).labels_while_collecting
        solving = config.oracle.replicas if labels else 0  # the replicas label while the actors collect
        actor_threads = max(1, (int(cpus) - solving) // evaluating) if sync and on_cpu else 1
    return learner_threads, actor_threads


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
    """``["learner.lr=1e-3", "network.width=128"]`` applied to ``config``; errors name the key."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r} is not of the form key=value")
        key = _moved_key(item, key, config.algo)
        parts = key.split(".")
        if parts[0] == "algorithm":
            config = _set_setting(config, item, parts, raw)
            continue
        _check_key(item, parts)
        record = config
        for part in parts[:-1]:
            record = getattr(record, part)
        current = getattr(record, parts[-1])
        if dataclasses.is_dataclass(current):
            raise ConfigError(f"--set {item!r}: set the fields of {key!r} one by one ({key}.FIELD=...)")
        try:
            try:
                value = parse_value(raw, current)
            except ValueError:
                # A field of a number or a word (``float | str``: seconds or auto) takes either,
                # whichever it holds now; the field's own check refuses a wrong word.
                if "str" not in _union(record, parts[-1]):
                    raise
                value = raw
            config = changed(config, **{key: value})
        except ValueError as err:
            raise ConfigError(f"--set {item!r}: {err}") from None
    return config


def _moved_key(item: str, key: str, algo: str) -> str:
    """``key``, or where it went if it is now ``algo``'s own setting; a ConfigError if it
    is another algorithm's."""
    moved = algorithms.moved_keys().get(key)
    if moved is None:
        return key
    name, new = moved
    if name != algo:
        raise ConfigError(f"--set {item!r}: {key!r} is now algorithm.{new}, a setting of algo {name}, "
                          f"not of {algo}")
    return f"algorithm.{new}"


def _set_setting(config: TrainConfig, item: str, parts: list[str], raw: str) -> TrainConfig:
    """``config`` with the algorithm's own setting ``algorithm.FIELD`` of ``item`` set."""
    described = _check_algo(config.algo)
    if len(parts) != 2 or parts[1] not in described.setting_names():
        raise ConfigError(f"--set {item!r}: unknown config key {'.'.join(parts)!r}; {described.title}'s settings: "
                          f"{', '.join('algorithm.' + n for n in described.setting_names()) or 'none'}")
    name = parts[1]
    try:
        value = parse_value(raw, config.algorithm.get(name, getattr(described.settings, name)))
        described.configured({**config.algorithm, name: value})
    except ValueError as err:
        raise ConfigError(f"--set {item!r}: {err}") from None
    return replace(config, algorithm={**config.algorithm, name: value})


def _union(record, name: str) -> list[str]:
    """The types of the annotation of ``record``'s field ``name`` (``int | str``: int, str)."""
    annotation = {f.name: f.type for f in fields(record)}[name]
    return [part.strip() for part in str(annotation).split("|")]


def _check_key(item: str, parts: list[str]) -> None:
    """A ``--set`` key names a field: an old flat key gets its new name, another the keys
    of the record where it stopped."""
    old = ".".join(parts[:1])
    if old in FLAT_KEYS:
        rest = ".".join(parts[1:])
        moved = algorithms.moved_keys()  # a role's key then, an algorithm's own setting now
        now = [f"algorithm.{moved[p][1]}" if p in moved else p for p in _new_paths(old)]
        new = " and ".join(f"{p}{'.' + rest if rest else ''}" for p in now)
        raise ConfigError(f"--set {item!r}: {'.'.join(parts)!r} is now {new} (each role owns its settings)")
    record, where = TrainConfig, ""
    for part in parts:
        names = {f.name: f for f in fields(record)} if dataclasses.is_dataclass(record) else {}
        if part not in names:
            raise ConfigError(f"--set {item!r}: unknown config key {where + part!r}; "
                              f"keys{' of ' + where.rstrip('.') if where else ''}: {', '.join(sorted(names))}")
        record, where = NESTED.get(where + part, None), where + part + "."


def resolve(game: str, preset: str | None = None, overrides: list[str] = (), algo: str = "avi",
            seed: int | None = None) -> TrainConfig:
    """The preset for ``game`` with ``overrides`` applied, checked."""
    if game not in games.names():
        raise ConfigError(f"unknown game {game!r}; known games: {', '.join(games.names())}")
    _check_algo(algo)
    config = for_algo(preset_config(game, preset or "paper"), algo)
    params = apply_overrides(config, list(overrides)).game_params
    if params:  # the preset of the board the overrides ask for, then the overrides over it
        config = for_algo(preset_config(game, preset or "paper", params), algo)
    if seed is not None:
        config = replace(config, seed=seed)
    config = apply_overrides(config, list(overrides))
    validate(config)
    return config


def validate(config: TrainConfig) -> None:
    """Checks at start-up, so that nothing is discovered an hour into a run: each role's
    own (``check``), then those across roles."""
    for role in ("actors", "replay"):
        try:
            getattr(config, role).check()
        except ValueError as err:
            raise ConfigError(f"{role}.{err}") from None
    described = _check_algo(config.algo)
    try:
        described.configured(config.algorithm)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"algorithm: {err}") from None
    if described.policy_head and not config.network.policy_head:
        raise ConfigError(f"algo {config.algo} trains a policy: network.policy_head must be true")
    if config.actors.sample_by == "prior" and config.actors.sample_actions and not config.network.policy_head:
        raise ConfigError("actors.sample_by=prior samples AVI's moves by the policy head: "
                          "network.policy_head must be true")
    if described.labels_while_collecting and config.game in games.names():
        from actors.labels import LABELLERS  # where AZAL's labels are built (imported here: its store)

        if LABELLERS.get(config.game) is None:
            raise ConfigError(f"algo {config.algo} needs an oracle that labels optimal moves: games "
                              f"{', '.join(LABELLERS.names())}, not {config.game!r}")
    if config.game not in games.names():
        raise ConfigError(f"unknown game {config.game!r}; known games: {', '.join(games.names())}")
    try:
        config.game_network.make_game()
    except (TypeError, ValueError) as err:
        raise ConfigError(f"game_params {config.game_params}: {err}") from None
    for name in ("checkpoint_every", "keep_checkpoints", "max_policy_lag"):
        if getattr(config, name) < 1:
            raise ConfigError(f"{name} must be >= 1, got {getattr(config, name)}")
    if not config.storage_outage_s >= 0:
        raise ConfigError(f"storage_outage_s must be >= 0 (0: the first failed checkpoint ends the run), "
                          f"got {config.storage_outage_s}")
    if config.keep_checkpoints_every < 0:
        raise ConfigError(f"keep_checkpoints_every must be >= 0 (0 keeps only the newest), "
                          f"got {config.keep_checkpoints_every}")
    if not config.samples_per_insert > 0:
        raise ConfigError(f"samples_per_insert must be > 0, got {config.samples_per_insert}")
    if not 0.0 <= config.gamma <= 1.0:
        raise ConfigError(f"gamma must lie in [0, 1], got {config.gamma}")
    if config.schedule not in ("sync", "async"):
        raise ConfigError(f"schedule must be sync or async, got {config.schedule!r}")
    _validate_serving(config)
    check_evaluation(config)


def check_evaluation(config: TrainConfig) -> None:
    """The run's evaluation and oracle exist at its game's board, checked before Ray starts
    (the evaluator would otherwise stop the run from inside an actor): the suites it names
    are the game's at that board, the committed sets they read are there, and a board
    whose labelled sets cannot be built (Hex 9x9, a Connect Four board the solver does
    not take) is refused where the run would evaluate on them or label with the oracle,
    naming the missing piece and the boards that have it."""
    from evaluation.config import named_suites
    from evaluation.datasets import COMMITTED, board_gap, board_tag, committed_file_present
    from evaluation.suites import has_suites, suites_for

    game = config.game_network.make_game()
    tag, gap = board_tag(game), board_gap(game)
    described = algorithms.descriptor(config.algo)
    if described.labels_while_collecting and gap is not None:
        unlabelled = [n for n in algorithms.names() if not algorithms.descriptor(n).labels_while_collecting]
        raise ConfigError(f"game_params {config.game_params}: {described.title}'s labels come from the oracle, "
                          f"which cannot label {game.name} at {tag}: {gap}; train {' or '.join(unlabelled)} "
                          f"at this board, or choose one the solver takes")
    wanted = config.evaluation.suites.strip()
    if gap is not None and wanted in ("auto", "default"):
        raise ConfigError(f"game_params {config.game_params}: evaluation.suites={wanted} needs the oracle's sets at "
                          f"this board; {gap}. Choose such a board, or train without them (evaluation.suites=none)")
    names = named_suites(wanted)
    if not names:
        return
    known = {s.name: s for s in (suites_for(game) if has_suites(game) else [])}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"evaluation.suites: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                          f"among the suites of {game!r} ({', '.join(known) or 'none'})"
                          + (f"; {gap}" if gap else ""))
    missing = [known[n].dataset for n in names
               if known[n].dataset in COMMITTED and not committed_file_present(known[n].dataset)]
    if missing:
        raise ConfigError(f"evaluation.suites: the committed set(s) {', '.join(missing)} are missing from "
                          f"evaluation/data; build them with `python -m evaluation build --game {game.name}`")


def _validate_serving(config: TrainConfig) -> None:
    """The actors' settings that depend on the algorithm."""
    actors, described = config.actors, algorithms.descriptor(config.algo)
    if actors.inference_servers and not described.inference_server:
        raise ConfigError(f"actors.inference_servers={actors.inference_servers}: an inference server answers "
                          f"values only, and {config.algo}'s MCTS needs priors; set actors.inference_servers=0")
    if actors.search == "gumbel" and not described.gumbel:
        searching = [d.title for d in map(algorithms.descriptor, algorithms.names()) if d.gumbel]
        raise ConfigError(f"actors.search=gumbel is a search for {' and '.join(searching)}; {described.title} "
                          f"searches no tree (algo {config.algo})")


def _check_algo(algo: str):
    """The descriptor of ``algo``; a ConfigError naming the known algorithms when there is none."""
    try:
        return algorithms.descriptor(algo)
    except ValueError as err:
        raise ConfigError(str(err)) from None
