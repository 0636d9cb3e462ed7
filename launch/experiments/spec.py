"""An experiment spec (``experiments/NAME.toml``): read, checked, and planned for one size.

A spec is the protocol of one of the papers' results: a game, its arms (an algorithm and
the ``TrainConfig`` fields it changes), and per size (``small`` for this machine,
``full`` for the papers' budget) the seeds, the budget in gradient updates and the
evaluation cadence. Everything is checked when the spec is read, before Ray starts, and
an error names the file, the arm or size and the key, because a typo found an hour into
a grid of 50 trials costs that hour 50 times.

The plan of a spec for one size is its trials: one per instance (the game's parameters:
F-Game shapes and seeds, Chomp boards), arm and seed, each an ordinary training run
with its own resolved config. Two checks run on the plan:

- **Matched budgets** (AVI paper, section 4.5): the arms of one instance make the same
  number of gradient updates on the same number of collected rows. Rows follow from
  the config: a synchronous run stops at ``updates``, after ``ceil(updates /
  updates_per_iteration)`` iterations of ``num_envs x collect_steps`` rows each. A spec
  whose arms differ is refused unless it says ``matched_budget = false``.
- **Placement**: each trial reserves its roles' resources as the bundles of one
  placement group (:func:`trial_bundles`, from ``launch/placement.py``'s rule), so a
  trial that fits on no node, or needs more than the cluster has, is refused with
  what is missing (:func:`check_placement`).

The schema, every key with its default, is written once, on docs/experiments.md ("The
schema"); this module checks it.
"""

from __future__ import annotations

import fnmatch
import json
import heapq
import math
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import algorithms
from evaluation import policy_registry
from evaluation.config import EVALUATE_OPTIONS, EvaluationConfig
from evaluation.datasets import COMMITTED, committed_file_present, game_of
from evaluation.suites import suites_for
from launch.config import ConfigError, TrainConfig, apply_overrides, resolve, validate
from launch.evaluator import chosen_suites, evaluated_suites, evaluator_needs_oracle
from launch.placement import gpu_shares, inference_device, learner_device, role_options, run_options

SIZES = ("small", "full")
SPEC_DIR = Path(__file__).resolve().parents[2] / "experiments"
DEFAULT_OVERHEAD_SECONDS = 30.0

_NUMBER = (int, float)
TOP_KEYS = {"name": str, "description": str, "game": str, "preset": str, "game_params": dict,
            "matched_budget": bool, "reference_arm": str, "arms": dict, "instances": list, "sizes": dict,
            "head_to_head": list, "inference": list}
# A match's and an inference point's evaluation settings are launch evaluate's: the
# fields of EvaluationConfig, with its types, checked by it when the spec is read.
EVALUATION_KEYS = {name: type(getattr(EvaluationConfig(), name)) for name in EVALUATE_OPTIONS}
# ``policy`` is the arm's and ``opponent_policy`` the opponent's; each defaults to its
# arm's own evaluation.policy, so that a match plays the arms as their curves were scored.
MATCH_KEYS = {"arm": str, "opponent": str, "suite": str, "opponent_policy": str, **EVALUATION_KEYS}
INFERENCE_KEYS = {"name": str, "policy": str, "budgets": list, "arms": list, "prior": str, "suite": str,
                  "max_openings": int}
ARM_KEYS = {"algo": str, "label": str, "game_params": dict, "set": dict, "compare_to": str}
INSTANCE_KEYS = {"name": str, "group": str, "params": dict, "game": str, "arms": list}
SIZE_KEYS = {"updates": (int, dict), "rows": int, "seeds": (int, list, dict), "evaluation": dict, "set": dict, "instances": list, "arms": dict, "updates_per_second": dict,
             "overhead_seconds": _NUMBER, "after_seconds": _NUMBER, "only": list, "stop_when": dict, "hold": int,
             "order": str, "tune": dict}
# A size's tuning step (``tune``): each arm's exploration parameter tuned on each instance
# before that instance's trials (launch/experiments/tuning.py), on seeds the comparison does
# not use, each tuning trial at ``updates``, or at a ``share`` of the trial's budget, ASHA
# stopping the poor ones; the chosen value is then the arm's on that instance. A value
# chosen at an end of the range is tried against ``beyond`` more values past that end, on
# the same grid's spacing, up to the parameter's limit (tuning.py: Space.beyond); 0: never.
TUNE_KEYS = {"samples": int, "updates": int, "share": _NUMBER, "arms": list, "instances": list, "grace": int,
             "beyond": int}
TUNE_BEYOND = 2
# A goal (``stop_when``) is met when it holds at this many evaluations in a row, not at its
# first: one evaluation at error rate 0 can be luck, and a trial that stopped there would
# never show the games it loses afterwards. A size may ask for more, never fewer.
MIN_HOLD = 3
# How the trials of a size run, one after another: in the spec's order (every seed of an
# instance's arms before the next instance), or every instance and arm at one seed before
# the next seed (a ladder stopped by its clock then spans its boards, its seeds come later).
# "boards" runs a board's seeds in turn, every arm at one seed before the next, and the
# boards one after another: a study stopped by its clock has whole boards, and on the board
# it stopped in the same seeds of every arm.
RUN_ORDERS = ("spec", "seeds", "boards")
SIZE_ARM_KEYS = {"set": dict, "game_params": dict, "seeds": (int, list), "updates": int}
# Fields an arm may not set: they are the spec's (game) or the trial's (seed).
SPEC_OWNED = {"game": "the spec's top-level 'game'", "game_params": "'game_params' of the spec, arm or instance",
              "seed": "the size's 'seeds'", "algo": "the arm's 'algo'"}


class SpecError(ConfigError):
    """A spec that cannot run; the message names the file, the arm or size, and the key."""


@dataclass(frozen=True)
class Arm:
    name: str
    algo: str
    label: str
    game_params: dict
    overrides: dict  # flattened TrainConfig overrides, "mcts.simulations" -> 32
    compare_to: str | None = None  # the arm its paired differences are to (None: the spec's reference arm)


@dataclass(frozen=True)
class Instance:
    name: str
    group: str
    params: dict
    game: str  # the instance's game: its own ``game`` or the spec's
    arms: tuple = ()  # the arms that run on it (empty: every arm)


@dataclass(frozen=True)
class Spec:
    path: Path
    name: str
    description: str
    game: str  # the spec's game; where instances name their own, those games, comma-separated
    preset: str
    game_params: dict
    matched_budget: bool
    reference_arm: str
    arms: dict  # name -> Arm, in the file's order
    instances: tuple  # of Instance; one unnamed instance ("") when the spec lists none
    sizes: dict  # size name -> its raw table, checked
    head_to_head: tuple = ()  # of dicts (MATCH_KEYS): matches between two arms' paired seeds
    inference: tuple = ()  # of dicts (INFERENCE_KEYS, with its name): search with the arms' values (Figure 2)


@dataclass(frozen=True)
class Trial:
    """One training run of the plan: its run directory is ``DIR/<name>``."""

    name: str
    arm: str
    instance: str
    group: str
    seed: int
    config: TrainConfig
    updates: int
    rows: int  # rows it collects to reach ``updates`` (sync schedule; nominal for async)
    bundles: tuple  # placement group bundles of its roles (trial_bundles)
    stop_when: dict = None  # record key -> value: the goal, every key at most its value
    hold: int = MIN_HOLD  # the trial ends early once the goal holds at this many evaluations in a row
    tuned: dict = None  # config key -> value its arm's tuning on the instance chose (size 'tune')

    def to_dict(self) -> dict:
        return {"name": self.name, "arm": self.arm, "instance": self.instance, "group": self.group,
                "seed": self.seed, "updates": self.updates, "rows": self.rows, "bundles": list(self.bundles),
                "config": json_config(self.config), "stop_when": dict(self.stop_when or {}), "hold": self.hold,
                "tuned": dict(self.tuned or {})}


@dataclass(frozen=True)
class TuningStep:
    """One arm's exploration parameter tuned on one instance before its trials (size 'tune')."""

    instance: str
    arm: str
    samples: int
    updates: int  # each tuning trial's budget
    grace: int | None  # ASHA's grace period, in evaluations that carry its metric (None: tuning's default)
    estimated_seconds: float | None  # at most: every sample and every value past an end run to its budget
    beyond: int = TUNE_BEYOND  # values tried past an end of the range when the end is chosen

    @property
    def name(self) -> str:
        """Its directory under the experiment's ``tuning/``."""
        return "-".join(p for p in (self.instance, self.arm) if p)


def reached(stop_when: dict, record: dict) -> bool:
    """Whether ``record`` (one of a run's records) has every key of ``stop_when`` at most
    its value: the trial's goal is reached and its budget need not be spent. A key may hold
    ``*`` (``eval/*-play/error_rate``: the play suite of whichever board the trial is on);
    every record key it matches counts, and it must match one."""
    def at_most(pattern: str, value: float) -> bool:
        keys = [k for k in record if fnmatch.fnmatchcase(k, pattern)]
        return bool(keys) and all(isinstance(record[k], (int, float)) and record[k] <= value for k in keys)

    return bool(stop_when) and all(at_most(k, v) for k, v in stop_when.items())


def evaluates(stop_when: dict, record: dict) -> bool:
    """Whether ``record`` is an evaluation of the goal's keys (each pattern matches a key
    of it): only such records advance or break a goal's run of evaluations."""
    return bool(stop_when) and all(any(fnmatch.fnmatchcase(k, pattern) for k in record) for pattern in stop_when)


class GoalWatch:
    """A trial's goal as its records arrive: met once ``stop_when`` holds at ``hold``
    evaluations of its keys in a row (records that do not evaluate them leave the run as
    it is). ``observe`` each record in order, those of the run before a resume first: a
    resumed run logs again the evaluations after its checkpoint, and an evaluation at
    updates already seen replaces those from there on rather than counting twice."""

    def __init__(self, stop_when: dict, hold: int = MIN_HOLD):
        self.stop_when, self.hold = dict(stop_when or {}), hold
        self.seen: list[tuple[float, bool]] = []  # (updates, goal met) of each evaluation of the goal's keys

    def observe(self, record: dict) -> bool:
        """Take one record; whether the goal is now met."""
        if evaluates(self.stop_when, record):
            updates = record.get("updates", self.seen[-1][0] + 1 if self.seen else 0)
            self.seen = [s for s in self.seen if s[0] < updates] + [(updates, reached(self.stop_when, record))]
        return bool(self.stop_when) and self.streak >= self.hold

    @property
    def streak(self) -> int:
        """Evaluations in a row, the latest last, at which the goal held."""
        count = 0
        for _, met in reversed(self.seen):
            if not met:
                break
            count += 1
        return count


@dataclass(frozen=True)
class Plan:
    spec: Spec
    size: str
    trials: tuple  # of Trial
    budgets: dict  # (instance, arm) -> (updates, rows)
    estimated_seconds: dict  # trial name -> estimated wall seconds (None when the spec gives no rate)
    matches: tuple = ()  # of dicts: a head-to-head between two trials of one seed (launch/experiments/matches.py)
    inference: tuple = ()  # of dicts: one trial's network in one search at one budget (launch/experiments/inference.py)
    after_seconds: float = 0.0  # the estimated matches and inference study, after the trials
    order: str = "spec"  # one of RUN_ORDERS: the order the trials run in; reports keep the spec's
    tuning: tuple = ()  # of TuningStep: each runs before its instance's trials

    def in_run_order(self) -> list:
        """The trials in the order they run (``order``)."""
        if self.order == "seeds":
            return sorted(self.trials, key=lambda t: t.seed)  # stable: the spec's order within a seed
        if self.order == "boards":
            boards = list(dict.fromkeys(t.instance for t in self.trials))
            return sorted(self.trials, key=lambda t: (boards.index(t.instance), t.seed))
        return list(self.trials)

    def phases(self) -> list[tuple[list, list]]:
        """The run as (tuning steps, trials) phases in order: a board's tuning, then its
        trials, board after board; where the trials interleave boards (order "seeds"), every
        tuning step first."""
        trials = self.in_run_order()
        if self.order == "seeds" or not self.tuning:
            return [(list(self.tuning), trials)]
        boards = list(dict.fromkeys(t.instance for t in trials))
        return [([s for s in self.tuning if s.instance == b], [t for t in trials if t.instance == b])
                for b in boards]

    def wall_seconds(self, concurrent: int) -> float | None:
        """The estimated wall time with ``concurrent`` trials at a time (longest first),
        after the tuning steps (one after another, each at most its samples' budgets), then
        the matches and the inference study."""
        times = list(self.estimated_seconds.values())
        tuning = [s.estimated_seconds for s in self.tuning]
        if any(t is None for t in times + tuning):
            return None
        slots = [0.0] * max(1, concurrent)
        for t in sorted(times, reverse=True):  # each to the slot that frees first
            heapq.heapreplace(slots, slots[0] + t)
        return sum(tuning) / max(1, concurrent) + max(slots) + self.after_seconds


def json_config(config: TrainConfig) -> dict:
    return json.loads(config.to_json())


# ------------------------------------------------------------------ reading


def spec_path(name_or_path: str) -> Path:
    """A named spec (``experiments/NAME.toml``) or a file."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise SpecError(f"spec {name_or_path}: no such file")
        return path
    named = SPEC_DIR / f"{name_or_path}.toml"
    if not named.is_file():
        known = ", ".join(sorted(p.stem for p in SPEC_DIR.glob("*.toml")))
        raise SpecError(f"no spec named {name_or_path!r} in {SPEC_DIR}; named specs: {known}")
    return named


def _check_keys(where: str, table: dict, schema: dict, required: tuple = ()) -> None:
    unknown = sorted(set(table) - set(schema))
    if unknown:
        raise SpecError(f"{where}: unknown key{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(sorted(schema))}")
    for key in required:
        if key not in table:
            raise SpecError(f"{where}: missing key {key!r}")
    for key, value in table.items():
        want = schema[key]
        wants = want if isinstance(want, tuple) else (want,)
        bad_bool = isinstance(value, bool) and bool not in wants
        if bad_bool or not isinstance(value, wants):
            names = " or ".join({int: "an integer", float: "a number", str: "a string", bool: "true or false",
                                 dict: "a table", list: "an array"}[w] for w in dict.fromkeys(wants))
            raise SpecError(f"{where}: key {key!r} must be {names}, got {value!r}")


def flatten(table: dict, prefix: str = "") -> dict:
    """``{"mcts": {"simulations": 32}}`` -> ``{"mcts.simulations": 32}`` (TOML's nested
    tables and dotted keys give the first); ``game_params``-like dict fields stay whole."""
    dict_fields = {f.name for f in fields(TrainConfig) if f.type == "dict"}
    out = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict) and full not in dict_fields:
            out.update(flatten(value, f"{full}."))
        else:
            out[full] = value
    return out


def _as_override(key: str, value) -> str:
    """A spec value as a ``--set KEY=VALUE`` string (``apply_overrides`` parses it to the
    field's type and names the key on error)."""
    if isinstance(value, bool):
        return f"{key}={'true' if value else 'false'}"
    if isinstance(value, (dict, list)):
        return f"{key}={json.dumps(value)}"
    return f"{key}={value}"


def load_spec(name_or_path: str) -> Spec:
    """Read and check a spec (the name of one in ``experiments/`` or a path)."""
    path = spec_path(name_or_path)
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise SpecError(f"{where}: not valid TOML: {err}") from None
    _check_keys(where, raw, TOP_KEYS, required=("name", "arms", "sizes"))
    if not raw["arms"]:
        raise SpecError(f"{where}: 'arms' is empty")
    arms = _read_arms(where, raw["arms"])
    instances = _read_instances(where, raw.get("instances", []), raw.get("game"), arms)
    game = raw.get("game") or ", ".join(dict.fromkeys(i.game for i in instances))
    names = [i.name for i in instances]
    reference = raw.get("reference_arm", next(iter(arms)))
    if reference not in arms:
        raise SpecError(f"{where}: key 'reference_arm': {reference!r} is not an arm; arms: {', '.join(arms)}")
    missing = [s for s in SIZES if s not in raw["sizes"]]
    if missing:
        raise SpecError(f"{where}: sizes: missing {', '.join(missing)} (every spec has {' and '.join(SIZES)})")
    for size, table in raw["sizes"].items():
        _check_size(f"{where}: size {size!r}", size, table, arms, names)
    matches = []
    for i, table in enumerate(raw.get("head_to_head", [])):
        at = f"{where}: head_to_head[{i}]"
        if not isinstance(table, dict):
            raise SpecError(f"{at}: must be a table ([[head_to_head]])")
        _check_keys(at, table, MATCH_KEYS, required=("arm", "opponent", "suite"))
        _check_evaluation(at, table)
        if table.get("opponent_policy", policy_registry.AUTO) not in policy_registry.choices():
            raise SpecError(f"{at}, key 'opponent_policy': {table['opponent_policy']!r} is not a policy; "
                            f"policies: {', '.join(policy_registry.choices())}")
        for key in ("arm", "opponent"):
            if table[key] not in arms:
                raise SpecError(f"{at}, key {key!r}: {table[key]!r} is not an arm; arms: {', '.join(arms)}")
        matches.append(dict(table))
    studies = [_inference_entry(f"{where}: inference[{i}]", table, arms) for i, table in
               enumerate(raw.get("inference", []))]
    names = [entry["name"] for entry in studies]
    if len(set(names)) != len(names):
        raise SpecError(f"{where}: two [[inference]] entries share the name "
                        f"{next(n for n in names if names.count(n) > 1)!r}; give each its own 'name'")
    return Spec(path=path, name=raw["name"], description=raw.get("description", ""), game=game,
                preset=raw.get("preset", "paper"), game_params=dict(raw.get("game_params", {})),
                matched_budget=raw.get("matched_budget", True), reference_arm=reference, arms=arms,
                instances=tuple(instances) or (Instance("", game, {}, game),), sizes=dict(raw["sizes"]),
                head_to_head=tuple(matches), inference=tuple(studies))


def _read_arms(where: str, tables: dict) -> dict:
    """The spec's arms by name, each checked."""
    arms = {}
    for name, table in tables.items():
        at = f"{where}: arm {name!r}"
        if not isinstance(table, dict):
            raise SpecError(f"{at}: must be a table ([arms.{name}])")
        _check_keys(at, table, ARM_KEYS, required=("algo",))
        overrides = flatten(table.get("set", {}))
        _check_owned(f"{at}, key 'set'", overrides)
        arms[name] = Arm(name, table["algo"], table.get("label", name), dict(table.get("game_params", {})),
                         overrides, table.get("compare_to"))
    for arm in arms.values():
        if arm.compare_to is not None and (arm.compare_to not in arms or arm.compare_to == arm.name):
            raise SpecError(f"{where}: arm {arm.name!r}, key 'compare_to': {arm.compare_to!r} is not another arm; "
                            f"arms: {', '.join(arms)}")
    return arms


def _read_instances(where: str, tables: list, game: str | None, arms: dict) -> list:
    """The spec's instances, each checked, their names distinct; each plays its own
    ``game`` or the spec's, and a spec without a ``game`` needs instances that each name one."""
    import games

    instances = []
    if game is None and not tables:
        raise SpecError(f"{where}: missing key 'game' (or instances that each name their game)")
    for i, table in enumerate(tables):
        at = f"{where}: instances[{i}]"
        if not isinstance(table, dict):
            raise SpecError(f"{at}: must be a table ([[instances]])")
        _check_keys(at, table, INSTANCE_KEYS, required=("name",))
        own = table.get("game", game)
        if own is None:
            raise SpecError(f"{at}: no 'game': the spec names none, so each instance names its own")
        if own not in games.names():
            raise SpecError(f"{at}, key 'game': {own!r} is not a game; games: {', '.join(games.names())}")
        instances.append(Instance(table["name"], table.get("group", table["name"]), dict(table.get("params", {})),
                                  own, tuple(table.get("arms", ()))))
    for instance in instances:
        unknown = [a for a in instance.arms if a not in arms]
        if unknown:
            raise SpecError(f"{where}: instance {instance.name!r}, key 'arms': {', '.join(map(repr, unknown))} "
                            f"{'is not an arm' if len(unknown) == 1 else 'are not arms'}; arms: {', '.join(arms)}")
    names = [i.name for i in instances]
    if len(set(names)) != len(names):
        raise SpecError(f"{where}: instances: names repeat ({', '.join(sorted({n for n in names if names.count(n) > 1}))})")
    return instances


# The size keys of specs written before the evaluation settings were one table.
OLD_SIZE_KEYS = {"eval_every": "every", "eval_play_every": "play_every", "eval_suites": "suites"}


def _check_size(at: str, size: str, table, arms: dict, names: list) -> None:
    """One ``[sizes.SIZE]`` table checked against the spec's arms and instances."""
    if not isinstance(table, dict):
        raise SpecError(f"{at}: must be a table ([sizes.{size}])")
    for old, new in OLD_SIZE_KEYS.items():
        if old in table:
            raise SpecError(f"{at}: key {old!r} is now 'evaluation.{new}' (evaluation = {{ {new} = ... }})")
    _check_keys(at, table, SIZE_KEYS, required=("updates",))
    # A budget for every board, or one per board: {instance name: updates}.
    per_board = table["updates"] if isinstance(table["updates"], dict) else {None: table["updates"]}
    for name, updates in per_board.items():
        if name is not None and name not in names:
            raise SpecError(f"{at}, key 'updates': {name!r} is not an instance; instances: {', '.join(names)}")
        if isinstance(updates, bool) or not isinstance(updates, int) or updates < 1:
            raise SpecError(f"{at}: key 'updates'{'.' + name if name else ''} must be an integer >= 1, got {updates!r}")
    missing = [n for n in table.get("instances", names) if isinstance(table["updates"], dict) and n not in per_board]
    if missing:
        raise SpecError(f"{at}, key 'updates': no budget for instance{'s' * (len(missing) > 1)} {', '.join(missing)}")
    for arm_name, arm_table in table.get("arms", {}).items():
        if arm_name not in arms:
            raise SpecError(f"{at}: arms: {arm_name!r} is not an arm of the spec; arms: {', '.join(arms)}")
        _check_keys(f"{at}, arm {arm_name!r}", arm_table, SIZE_ARM_KEYS)
        _check_owned(f"{at}, arm {arm_name!r}, key 'set'", flatten(arm_table.get("set", {})))
    _check_owned(f"{at}, key 'set'", flatten(table.get("set", {})))
    for key in ("seeds", "updates_per_second"):
        for arm_name in (table.get(key) if isinstance(table.get(key), dict) else {}):
            if arm_name not in arms:
                raise SpecError(f"{at}, key {key!r}: {arm_name!r} is not an arm; arms: {', '.join(arms)}")
    for arm_name, rate in table.get("updates_per_second", {}).items():
        if isinstance(rate, bool) or not isinstance(rate, _NUMBER) or rate <= 0:
            raise SpecError(f"{at}, key 'updates_per_second.{arm_name}' must be a number > 0, got {rate!r}")
    for key in ("overhead_seconds", "after_seconds"):
        if key in table and table[key] < 0:
            raise SpecError(f"{at}, key {key!r} must be >= 0, got {table[key]!r}")
    for arm_name in table.get("only", []):
        if arm_name not in arms:
            raise SpecError(f"{at}, key 'only': {arm_name!r} is not an arm; arms: {', '.join(arms)}")
    if table.get("order", "spec") not in RUN_ORDERS:
        raise SpecError(f"{at}, key 'order': {table['order']!r}; one of {', '.join(map(repr, RUN_ORDERS))}")
    if "hold" in table and (isinstance(table["hold"], bool) or table["hold"] < MIN_HOLD):
        raise SpecError(f"{at}, key 'hold': {table['hold']!r}; a goal must hold at {MIN_HOLD} or more evaluations "
                        f"in a row to count as met")
    if "hold" in table and not table.get("stop_when"):
        raise SpecError(f"{at}, key 'hold' is given without a goal (stop_when) to hold")
    for key, value in table.get("stop_when", {}).items():
        if not key.startswith("eval/") or isinstance(value, bool) or not isinstance(value, _NUMBER):
            raise SpecError(f"{at}, key 'stop_when': {key!r} = {value!r}; give evaluation records' keys "
                            f"(eval/<suite>/<metric>) and the number each must reach or go below")
    for name in table.get("instances", []):
        if name not in names:
            raise SpecError(f"{at}, key 'instances': {name!r} is not an instance; instances: {', '.join(names)}")
    if "tune" in table:
        _check_tune(f"{at}, key 'tune'", table["tune"], arms, names)


def _check_tune(at: str, tune: dict, arms: dict, names: list) -> None:
    """A size's tuning step: its keys, counts and the arms and instances it names."""
    _check_keys(at, tune, TUNE_KEYS, required=("samples",))
    if ("updates" in tune) == ("share" in tune):
        raise SpecError(f"{at}: give the tuning trials' budget as 'updates' or as a 'share' of the trial's, one of them")
    if tune.get("beyond", 0) < 0:
        raise SpecError(f"{at}, key 'beyond' must be >= 0, got {tune['beyond']}")
    for key in ("samples", "updates", "grace"):
        if key in tune and tune[key] < 1:
            raise SpecError(f"{at}, key {key!r} must be >= 1, got {tune[key]}")
    if "share" in tune and not 0 < tune["share"] <= 1:
        raise SpecError(f"{at}, key 'share' must be in (0, 1], got {tune['share']!r}")
    for arm_name in tune.get("arms", []):
        if arm_name not in arms:
            raise SpecError(f"{at}, key 'arms': {arm_name!r} is not an arm; arms: {', '.join(arms)}")
    for name in tune.get("instances", []):
        if name not in names:
            raise SpecError(f"{at}, key 'instances': {name!r} is not an instance; instances: {', '.join(names)}")


def _inference_entry(at: str, table, arms: dict) -> dict:
    if not isinstance(table, dict):
        raise SpecError(f"{at}: must be a table ([[inference]])")
    _check_keys(at, table, INFERENCE_KEYS, required=("policy", "budgets", "arms", "suite"))
    _check_evaluation(at, table)
    searches = policy_registry.searches()
    if table["policy"] not in searches:
        raise SpecError(f"{at}, key 'policy': {table['policy']!r} is not a search; one of "
                        f"{', '.join(searches)}")
    budgets = table["budgets"]
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
        raise SpecError(f"{at}, key 'budgets': a non-empty list of integers >= 1 "
                        f"({searches[table['policy']]}), got {budgets!r}")
    for arm in [*table["arms"], *([table["prior"]] if "prior" in table else [])]:
        if arm not in arms:
            raise SpecError(f"{at}: {arm!r} is not an arm; arms: {', '.join(arms)}")
    if "prior" in table and not policy_registry.entry(table["policy"]).takes_prior:
        takers = [n for n in searches if policy_registry.entry(n).takes_prior]
        raise SpecError(f"{at}, key 'prior': {table['policy']!r} takes no second network's prior; "
                        f"{', '.join(takers)} {'does' if len(takers) == 1 else 'do'}")
    name = table.get("name", "-".join([table["policy"], *([table["prior"]] if "prior" in table else [])]))
    return {**table, "name": name, "budgets": sorted(set(budgets))}


def _check_evaluation(at: str, table: dict) -> None:
    """The evaluation settings of a match or an inference point, checked as
    ``launch evaluate`` will check them, when the spec is read rather than after the trials."""
    try:
        EvaluationConfig(**{k: v for k, v in table.items() if k in EVALUATION_KEYS})
    except ValueError as err:
        raise SpecError(f"{at}: {err}") from None


def _check_owned(where: str, overrides: dict) -> None:
    for key in overrides:
        if key in SPEC_OWNED:
            raise SpecError(f"{where}: {key!r} is set by {SPEC_OWNED[key]}, not here")


# ------------------------------------------------------------------ planning


def _seeds(where: str, value) -> list[int]:
    if value is None:
        return [0]
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise SpecError(f"{where}: seeds must be >= 1, got {value}")
        return list(range(value))
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                 for s in value):
        if len(set(value)) != len(value):
            raise SpecError(f"{where}: seeds repeat: {value}")
        return list(value)
    raise SpecError(f"{where}: seeds must be a count >= 1 or a list of distinct integers >= 0, got {value!r}")


def rows_for(config: TrainConfig, updates: int) -> int:
    """Rows a synchronous run collects to make ``updates`` gradient steps."""
    return math.ceil(updates / config.updates_per_iteration) * config.rows_per_iteration


def arm_config(spec: Spec, size: str, arm: Arm, instance: Instance, seed: int, tuned: dict | None = None) -> TrainConfig:
    """The resolved config of one trial: the game's preset for the arm's algorithm, then
    the size's, the arm's and the arm-at-size's overrides, then the size's evaluation
    cadence, then the values its arm's tuning chose on the instance (``tuned``), checked
    (launch.config.validate)."""
    table = spec.sizes[size]
    at = f"{spec.path}: size {size!r}, arm {arm.name!r}"
    size_arm = table.get("arms", {}).get(arm.name, {})
    params = {**spec.game_params, **instance.params, **arm.game_params, **size_arm.get("game_params", {})}
    layers = [("size 'set'", flatten(table.get("set", {}))), (f"arm {arm.name!r} 'set'", arm.overrides),
              (f"size arm {arm.name!r} 'set'", flatten(size_arm.get("set", {}))),
              ("size 'evaluation'", flatten({"evaluation": table.get("evaluation", {})})),
              ("the tuned values", dict(tuned or {}))]
    try:
        # The preset of the trial's board (a game descriptor's preset_at), then the layers.
        board = [f"game_params={json.dumps(params)}"] if params else []
        config = resolve(instance.game, spec.preset, board, algo=arm.algo, seed=seed)
    except ConfigError as err:
        raise SpecError(f"{at}: {err}") from None
    config = replace(config, game_params=params)
    for layer, overrides in layers:
        try:
            config = apply_overrides(config, [_as_override(k, v) for k, v in overrides.items()])
        except ConfigError as err:
            raise SpecError(f"{at}, {layer}: {err}") from None
    where = f"{at}{', instance ' + repr(instance.name) if instance.name else ''}"
    try:
        validate(config)
    except ConfigError as err:
        raise SpecError(f"{where}: {err}") from None  # the board's suites included (check_evaluation)
    return config


def _bundle(options: dict) -> dict:
    bundle = {"CPU": options.get("num_cpus", 0), "GPU": options.get("num_gpus", 0), **options.get("resources", {})}
    return {k: float(v) for k, v in bundle.items() if v}


def trial_bundles(config: TrainConfig, *, embedded: bool, offered=(), gpus: float = 0) -> tuple:
    """The placement group bundles of one run: its learner, each self-play actor, the
    replay shards, oracle replicas, inference servers and the evaluator where they take resources
    (``launch/placement.py``: on an embedded Ray the shards, the oracle, a CPU inference
    server and the evaluator take none, so they need no bundle; they still run inside the
    trial's group). The trial's driver itself (the Tune function) takes none: the empty
    head bundle of ``tune.PlacementGroupFactory``. The devices and GPU shares are chosen
    as ``Run`` does (a learner and two servers sharing one GPU: 0.5, 0.25 and 0.25)."""
    actors = config.actors
    learner = learner_device(config.learner.device, gpus)
    serving = inference_device(actors.inference_device, actors.inference_servers, gpus, learner)
    learner_gpus, inference_gpus = gpu_shares(learner, serving, actors.inference_servers, gpus)
    options = run_options(embedded=embedded, offered=offered, device=learner, inference_device=serving,
                          learner_gpus=learner_gpus, inference_gpus=inference_gpus)
    bundles = [_bundle(options["learner"])] + [_bundle(options["actor"])] * actors.num_actors
    if actors.inference_servers and not (embedded and serving == "cpu"):
        bundles += [_bundle(options["inference"])] * actors.inference_servers
    bundles += [_bundle(options["replay"])] * config.replay.shards
    game = config.game_network.make_game()  # auto's suites are those of the trial's board
    if chosen_suites(game, config.evaluation.suites) is not False:
        bundles.append(_bundle(options["evaluator"]))  # a marker on a cluster (the head), nothing embedded
    if algorithms.descriptor(config.algo).labels_while_collecting or evaluator_needs_oracle(
            game, config.evaluation.suites):
        oracle = role_options("oracle", embedded=embedded, offered=offered, cpus=0 if embedded else 1)
        bundles += [_bundle(oracle)] * config.oracle.replicas
    return tuple(b for b in bundles if b)


def plan(spec: Spec, size: str, *, updates: int | None = None, embedded: bool = True, offered=(),
         gpus: float = 0, tuned: dict | None = None) -> Plan:
    """The trials of ``spec`` at ``size``; ``updates`` replaces the size's budget (tests,
    quick looks: the spec's ``rows`` check is then skipped). ``tuned`` gives the values the
    size's tuning steps chose, ``{(instance, arm): {key: value}}``: a trial whose step has
    not chosen yet has the arm's untuned config. Refuses unmatched budgets."""
    if size not in spec.sizes:
        raise SpecError(f"{spec.path}: no size {size!r}; sizes: {', '.join(spec.sizes)}")
    table = spec.sizes[size]
    if updates is not None and updates < 1:
        raise SpecError(f"--updates must be >= 1, got {updates}")
    chosen = table.get("instances")
    instances = [i for i in spec.instances if chosen is None or i.name in chosen]
    rates = table.get("updates_per_second", {})
    overhead = float(table.get("overhead_seconds", DEFAULT_OVERHEAD_SECONDS))
    trials, budgets, estimates = [], {}, {}
    for instance in instances:
        budget = updates if updates is not None else (
            table["updates"][instance.name] if isinstance(table["updates"], dict) else table["updates"])
        for arm in spec.arms.values():
            if ("only" in table and arm.name not in table["only"]) or (instance.arms and arm.name not in instance.arms):
                continue
            where = f"{spec.path}: size {size!r}, arm {arm.name!r}"
            per_arm = table.get("arms", {}).get(arm.name, {}).get("seeds")
            seeds = table.get("seeds")
            seeds = per_arm if per_arm is not None else (seeds.get(arm.name) if isinstance(seeds, dict) else seeds)
            arm_budget = budget if updates is not None else table.get("arms", {}).get(arm.name, {}).get(
                "updates", budget)
            chosen = (tuned or {}).get((instance.name, arm.name))
            for seed in _seeds(where, seeds):
                config = arm_config(spec, size, arm, instance, seed, chosen)
                rows = rows_for(config, arm_budget)
                if updates is None and "rows" in table and rows != table["rows"]:
                    raise SpecError(f"{where}, key 'rows': {table['rows']} rows stated, but {arm_budget} updates at "
                                    f"{config.updates_per_iteration} per iteration of {config.rows_per_iteration} "
                                    f"rows collect {rows}")
                budgets[(instance.name, arm.name)] = (arm_budget, rows)
                name = "-".join(p for p in (instance.name, arm.name, f"s{seed}") if p)
                trials.append(Trial(name, arm.name, instance.name, instance.group, seed, config, arm_budget, rows,
                                    trial_bundles(config, embedded=embedded, offered=offered, gpus=gpus),
                                    dict(table.get("stop_when", {})), int(table.get("hold", MIN_HOLD)),
                                    dict(chosen or {})))
                estimates[name] = arm_budget / rates[arm.name] + overhead if arm.name in rates else None
    names = [t.name for t in trials]
    if len(set(names)) != len(names):
        raise SpecError(f"{spec.path}: two trials share a name; arm and instance names must be distinct")
    if spec.matched_budget:
        check_matched(spec, budgets)
    return Plan(spec, size, tuple(trials), budgets, estimates, _matches(spec, trials), _inference(spec, trials),
                float(table.get("after_seconds", 0.0)), table.get("order", "spec"),
                _tuning_steps(table, trials, rates, overhead))


def _tuning_steps(table: dict, trials: list, rates: dict, overhead: float) -> tuple:
    """The size's tuning steps: each tuned arm on each tuned instance it has trials on."""
    tune = table.get("tune")
    if not tune:
        return ()
    steps = []
    budgets = {(t.instance, t.arm): t.updates for t in trials}
    for (instance, arm), budget in budgets.items():
        if arm not in tune.get("arms", [arm]) or instance not in tune.get("instances", [instance]):
            continue
        # A tuning trial never outspends the comparison's (a plan whose --updates is smaller).
        samples, beyond = tune["samples"], tune.get("beyond", TUNE_BEYOND)
        updates = min(tune["updates"], budget) if "updates" in tune else max(1, round(tune["share"] * budget))
        # At most: the values past an end of the range tried as well.
        seconds = (samples + beyond) * (updates / rates[arm] + overhead) if arm in rates else None
        steps.append(TuningStep(instance, arm, samples, updates, tune.get("grace"), seconds, beyond))
    return tuple(steps)


def _matches(spec: Spec, trials: list) -> tuple:
    """The head-to-head matches of the plan: per instance and seed that both arms have,
    the arm's trial against the opponent's; the suite must be an h2h suite of the game.
    Each side's policy, unless the match names it, is its trial's own evaluation.policy,
    resolved for its network (auto: the policy head's argmax, else greedy)."""
    by_key = {(t.instance, t.arm, t.seed): t for t in trials}
    out = []
    for i, match in enumerate(spec.head_to_head):
        for t in trials:
            other = by_key.get((t.instance, match["opponent"], t.seed))
            if t.arm != match["arm"] or other is None:
                continue
            kinds = {s.name: s.kind for s in suites_for(t.config.game_network.make_game())}
            suite = _suite_of_board(match["suite"], kinds)
            if kinds.get(suite) != "h2h":
                h2h = [n for n, k in kinds.items() if k == "h2h"]
                raise SpecError(f"{spec.path}: head_to_head[{i}], key 'suite': {match['suite']!r} is not a "
                                f"head-to-head suite of {t.config.game}; its: {', '.join(h2h) or 'none'}")
            policies = {}
            for key, trial, default in (("policy", t, t.config.evaluation.policy),
                                        ("opponent_policy", other, other.config.evaluation.policy)):
                name = policy_registry.resolve(match.get(key, default), trial.config.network.policy_head)
                try:  # the arm's policy may read the game's oracle (the suite runner has it); the opponent's not
                    policy_registry.check(name, has_policy_head=trial.config.network.policy_head,
                                          oracle=key == "policy")
                except policy_registry.PolicyUnavailable as err:
                    raise SpecError(f"{spec.path}: head_to_head[{i}], {key} of arm {trial.arm!r}: {err}") from None
                policies[key] = name
            out.append({**match, **policies, "suite": suite, "name": f"{t.name}-vs-{other.arm}", "trial": t.name,
                        "opponent_trial": other.name, "group": t.group, "seed": t.seed})
    return tuple(out)


def _inference(spec: Spec, trials: list) -> tuple:
    """The inference points of the plan: per entry, each trial of its arms (with the
    prior arm's trial of the same instance and seed; none when that arm lacks the seed)
    at each budget. The suite must be a play or states suite of the game, and a prior
    arm's network must have a policy head."""
    by_key = {(t.instance, t.arm, t.seed): t for t in trials}
    out = []
    for i, entry in enumerate(spec.inference):
        at = f"{spec.path}: inference[{i}]"
        for t in trials:
            if t.arm not in entry["arms"]:
                continue
            prior = by_key.get((t.instance, entry["prior"], t.seed)) if "prior" in entry else None
            if "prior" in entry and prior is None:
                continue
            if prior is not None and not prior.config.network.policy_head:
                raise SpecError(f"{at}, key 'prior': arm {entry['prior']!r} trains a value network, which has "
                                f"no policy to be a prior")
            kinds = {s.name: s.kind for s in suites_for(t.config.game_network.make_game())}
            suite = _suite_of_board(entry["suite"], kinds)
            if kinds.get(suite) not in ("play", "states"):
                usable = [n for n, k in kinds.items() if k in ("play", "states")]
                raise SpecError(f"{at}, key 'suite': {entry['suite']!r} is not a play or states suite of "
                                f"{t.config.game}; its: {', '.join(usable) or 'none'}")
            # The trial's own evaluation openings unless the entry says (0: all of them).
            openings = entry.get("max_openings", t.config.evaluation.max_openings)
            for budget in entry["budgets"]:
                out.append({"name": f"{entry['name']}-{t.name}-{budget}", "entry": entry["name"],
                            "policy": entry["policy"], "budget": budget, "suite": suite,
                            **({"max_openings": openings} if openings else {}),
                            "arm": t.arm, "trial": t.name, "group": t.group, "seed": t.seed,
                            # The prior arm's own network searches with its own values: native inference.
                            "prior_arm": prior.arm if prior is not None else None,
                            "prior_trial": prior.name if prior is not None and prior.name != t.name else None})
    return tuple(out)


def _suite_of_board(name: str, kinds: dict) -> str:
    """The suite an inference entry or a match names: ``play`` is the trial's board's own
    play suite (``connect4-5x4-play`` on 5x4, ``hex-play`` at 7x7) and ``h2h`` its own
    head-to-head suite, for the instances of a ladder of boards; any other name is the suite's."""
    if name not in ("play", "h2h"):
        return name
    own = [n for n, kind in kinds.items() if kind == name and (name == "h2h" or not n.endswith("-h2h"))]
    return own[0] if len(own) == 1 else name


def check_matched(spec: Spec, budgets: dict) -> None:
    """The arms of each instance collect the same rows and make the same updates."""
    for instance in {i for i, _ in budgets}:
        arms = {arm: b for (i, arm), b in budgets.items() if i == instance}
        if len(set(arms.values())) > 1:
            listing = "; ".join(f"{arm}: {u} updates, {r} rows" for arm, (u, r) in arms.items())
            raise SpecError(f"{spec.path}: the arms' budgets do not match{' on ' + instance if instance else ''} "
                            f"({listing}); make num_envs x collect_steps and updates per iteration equal "
                            f"(AVI paper 4.5), or say matched_budget = false")


# ------------------------------------------------------------------ placement


def _total(bundles) -> dict:
    total: dict = {}
    for b in bundles:
        for k, v in b.items():
            total[k] = total.get(k, 0.0) + v
    return total


def _fmt(resources: dict) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in sorted(resources.items())) or "nothing"


def check_placement(plan: Plan, nodes: list[dict]) -> int:
    """Refuse a plan whose trials the cluster (``nodes``: each node's resources) cannot
    place, saying what is missing; returns how many trials fit at once."""
    cluster = _total(nodes)
    fits_at_once = None
    for trial in plan.trials:
        need = _total(trial.bundles)
        short = {k: v - cluster.get(k, 0.0) for k, v in need.items() if v > cluster.get(k, 0.0) + 1e-9}
        cfg = trial.config
        roles = (f"{cfg.actors.num_actors} self-play actor{'s' * (cfg.actors.num_actors > 1)} and a "
                 f"{'GPU' if 'GPU' in trial.bundles[0] else 'CPU'} learner")
        if short:
            raise SpecError(f"{plan.spec.path}: trial {trial.name} (arm {trial.arm}) needs {_fmt(need)} "
                            f"({roles}); the cluster has {_fmt({k: cluster.get(k, 0.0) for k in need})}: "
                            f"missing {_fmt(short)}")
        for b in trial.bundles:
            if not any(all(node.get(k, 0.0) + 1e-9 >= v for k, v in b.items()) for node in nodes):
                raise SpecError(f"{plan.spec.path}: trial {trial.name} (arm {trial.arm}): no node has "
                                f"{_fmt(b)} for one of its roles (nodes: "
                                f"{'; '.join(_fmt(n) for n in nodes)})")
        at_once = min(int(cluster.get(k, 0.0) // v) for k, v in need.items()) if need else len(plan.trials)
        fits_at_once = at_once if fits_at_once is None else min(fits_at_once, at_once)
    return max(1, fits_at_once or 1)


def check_datasets(plan: Plan) -> None:
    """Refuse a plan that evaluates on a committed dataset whose file is not built (the
    Hex sets, hours of solver time), naming the suites, the dataset and the build
    command: the evaluator would stop the first trial at its first evaluation, and the
    matches and the inference study would fail after hours of training."""
    needs: dict[str, set] = {}  # dataset -> the suites that read it
    for trial in plan.trials:
        game = trial.config.game_network.make_game()
        after = {m["suite"] for m in plan.matches if m["trial"] == trial.name}
        after |= {p["suite"] for p in plan.inference if p["trial"] == trial.name}
        suites = evaluated_suites(game, trial.config.evaluation.suites) + [s for s in suites_for(game) if s.name in after]
        for suite in suites:
            if suite.dataset in COMMITTED and not committed_file_present(suite.dataset):
                needs.setdefault(suite.dataset, set()).add(suite.name)
    if needs:
        missing = "; ".join(f"suite{'s' * (len(s) > 1)} {', '.join(sorted(s))} read{'s' * (len(s) == 1)} dataset "
                            f"{d!r}, which is not built (`python -m evaluation build --game {game_of(d).name}`)"
                            for d, s in sorted(needs.items()))
        raise SpecError(f"{plan.spec.path}: size {plan.size!r}: {missing}")
