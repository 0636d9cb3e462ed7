"""``python -m launch tune SPEC --arm ARM --out DIR``: one arm's exploration parameter,
tuned on Ray Tune before the comparison runs.

The AVI paper tuned each method's exploration parameter before comparing the methods:
epsilon for AVI's epsilon-greedy self-play, c_puct for AlphaZero at each search budget S.
A comparison is only fair when every arm was tuned by the same procedure, and only
honest when the tuning did not see the seeds the comparison reports. This module is
that procedure, for any arm of any experiment spec:

- **The trials are the experiment's.** Each tuning trial's ``TrainConfig`` is built by
  the spec's own planner (``spec.arm_config``: the game's preset for the arm's algorithm,
  then the size's, the arm's and the arm-at-size's overrides, then the size's evaluation
  cadence) for the arm on one instance (the size's first, or ``--instance``), at the
  arm's budget at that size; then the one parameter is set. Its placement bundles, goal
  (``stop_when``) and run directory layout are the experiment's too.
- **Its own seeds.** Trial ``i`` runs at seed ``--seed-base + i`` (10000 + i by
  default), and the command refuses a seed the spec's comparison uses at that size (any
  arm, any instance): tuning on the seeds that are then reported would select the value
  that happened to suit them.
- **One search space per algorithm** (:data:`SPACES_BY_KEY`): the config field the algorithm
  explores by and its default range. Ray Tune's ``BasicVariantGenerator`` draws the
  values (``--search grid``: evenly spaced on the range's scale, both ends included;
  ``random``: Tune's sampler on that scale).
- **ASHA stops the poor ones early** (``ray.tune.schedulers.ASHAScheduler``): its time is
  the run's gradient updates, its metric the play error rate against the oracle
  (``eval/<board>-play/error_rate``), or the value MAE where the trial's board has no play
  suite, minimised. Its rungs are at ``--grace`` evaluations' updates, then twice, four
  times as many, ...; at each it stops a trial in the worse half of those that reached
  it before. Each trial runs ``launch.train.train`` with a ``stop`` callback that
  reports each record carrying the metric to Tune, so a stop takes effect there.

It writes ``DIR/tune.json`` (the space, the search, the scheduler's settings, each
trial's value, seed, last metric, updates reached and whether ASHA stopped it) and
``DIR/tune.md`` (the trials sorted by the metric, the chosen value, the command), and
prints the chosen value as the ``--set KEY=VALUE`` and the arm's ``set`` table that give
it to the comparison.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import algorithms
from evaluation.exact import EXACT_LABELS
from evaluation.run_config import CONFIG_FILE
from launch.config import ConfigError, TrainConfig, apply_overrides, validate
from launch.evaluator import evaluated_suites
from launch.metrics import numbers
from launch.experiments.layout import DONE_FILE, TUNE_FILE, TUNE_REPORT
from launch.experiments.spec import (SIZES, GoalWatch, Plan, SpecError, Trial, arm_config, check_placement, check_datasets,
                                     load_spec)
from launch.experiments.spec import plan as make_plan

SEED_BASE = 10_000  # far above any spec's comparison seeds (0 .. seeds-1)
SEARCHES = ("grid", "random")
SCALES = ("log", "linear")
GRACE_EVALUATIONS = 3  # ASHA's grace period, in evaluations that carry the metric
# ASHA keeps the better half at each rung: with the handful of samples a 2-core machine
# affords, Tune's default of 4 would stop three trials in four at the first rung, on one
# noisy evaluation each.
REDUCTION_FACTOR = 2


@dataclass(frozen=True)
class Space:
    """The range one exploration parameter is searched over."""

    key: str  # the TrainConfig field, dotted as --set takes it
    scale: str  # "log" or "linear": the scale values are spread (grid) or drawn (random) on
    low: float
    high: float
    step: float  # values are rounded to multiples of it, so that the --set printed is the value tried
    limits: tuple = (-math.inf, math.inf)  # what the parameter can be at all: a range's extension stops there

    def domain(self):
        """Tune's sampler of the range (``--search random``)."""
        from ray import tune

        if self.scale == "log":
            return tune.qloguniform(self.low, self.high, self.step)
        return tune.quniform(self.low, self.high, self.step)

    def grid(self, n: int) -> list[float]:
        """``n`` values evenly spaced on the scale, both ends included (``--search grid``)."""
        if n == 1:
            fractions = [0.5]
        else:
            fractions = [i / (n - 1) for i in range(n)]
        if self.scale == "log":
            lo, hi = math.log(self.low), math.log(self.high)
            values = [math.exp(lo + f * (hi - lo)) for f in fractions]
        else:
            values = [self.low + f * (self.high - self.low) for f in fractions]
        return [self.rounded(v) for v in values]

    def beyond(self, chosen: float, samples: int, n: int) -> "Space | None":
        """The range past the end of this one that ``chosen`` lies at, holding ``n`` values
        on the spacing of this range's grid of ``samples`` (clipped to the parameter's
        limits, the values then spread evenly up to the limit); None when ``chosen`` is
        inside the range, at a limit already, or ``n`` is 0."""
        grid = self.grid(samples)
        if n < 1 or len(grid) < 2 or chosen not in (grid[0], grid[-1]):
            return None
        up = chosen == grid[-1]
        limit = self.limits[1] if up else self.limits[0]
        if (chosen >= limit) if up else (chosen <= limit):
            return None
        log = self.scale == "log"
        gap = (math.log(grid[1]) - math.log(grid[0])) if log else grid[1] - grid[0]
        start = math.log(chosen) if log else chosen
        end = start + (1 if up else -1) * n * gap
        bound = math.log(limit) if log and limit > 0 else (limit if not log else -math.inf)
        end = min(end, bound) if up else max(end, bound)
        first = start + (end - start) / n  # the first value past the end, n evenly up to ``end``
        low, high = sorted(math.exp(v) if log else v for v in (first, end))
        wider = replace(self, low=low, high=high)
        if len(set(wider.grid(n))) < n or chosen in wider.grid(n):
            return None  # the step leaves no room for n new values
        return wider

    def rounded(self, value: float) -> float:
        """``value`` at a multiple of ``step``, within the range, without the float noise of
        the multiplication (0.07 rather than 0.07000000000000001)."""
        digits = max(0, -math.floor(math.log10(self.step)))
        value = round(round(value / self.step) * self.step, digits)
        return min(max(value, self.rounded_bound(self.low, up=True)), self.rounded_bound(self.high, up=False))

    def rounded_bound(self, bound: float, *, up: bool) -> float:
        digits = max(0, -math.floor(math.log10(self.step)))
        steps = (math.ceil if up else math.floor)(round(bound / self.step, 9))
        return round(steps * self.step, digits)


# The exploration parameter of each algorithm, and the range it is searched over by
# default (--param, --low, --high and --scale change them for one run).
#
# epsilon (AVI and the algorithms that collect as it does: the probability of a uniformly
# random legal move in epsilon-greedy self-play): the presets use 0.1 (Hex boards), 0.15 (Othello and Go, AVI
# paper Table 3), 0.3 (Connect Four, the paper) and 0.5 (tic-tac-toe), so [0.02, 0.5]
# spans them with room below. The values worth trying span more than a factor of ten, so
# the range is searched on a log scale: each factor of 2 gets as many samples (a grid of
# 8 has four below 0.1), where a linear grid of 8 has two below 0.1 and five above 0.2.
# Above 0.5 most moves of a game are random and the values are learnt for states the
# greedy player seldom reaches. (F-Games' AVI collects with epsilon 1.0, uniform play:
# give --high 1.0 there.)
#
# c_puct (AlphaZero and AZAL, constant PUCT): the AVI paper's Table 4 uses 3.0, the AZAL
# paper 1.25 (AlphaZero's c_init), so [0.5, 5] brackets both by a factor of about 2.5. It
# scales the prior's bonus against Q in [-1, 1]: what matters is its ratio to the value
# range, a factor of ten across the range, hence the log scale again. A
# config with AlphaZero's c_init / c_base schedule (F-Games, Table 6) or the Gumbel search
# does not read c_puct and is refused (:func:`unused_reason`): tune its own parameter
# with --param.
# Keyed by the parameter: an algorithm names its own (its descriptor's ``exploration``).
SPACES_BY_KEY = {
    "actors.epsilon": Space("actors.epsilon", "log", 0.02, 0.5, 0.001, (0.001, 1.0)),
    "actors.mcts.c_puct": Space("actors.mcts.c_puct", "log", 0.5, 5.0, 0.01, (0.05, 50.0)),
}


def default_space(algo: str) -> Space | None:
    """The default space of ``algo``: that of its descriptor's exploration parameter, if
    the table has one (None for an unknown algorithm or parameter)."""
    try:
        return SPACES_BY_KEY.get(algorithms.descriptor(algo).exploration)
    except ValueError:
        return None


def space_for(algo: str, *, key: str | None = None, low: float | None = None, high: float | None = None,
              scale: str | None = None, step: float | None = None) -> Space:
    """The space of ``algo`` (:func:`default_space`), with any of its parts replaced; an
    algorithm without one needs ``key``, ``low`` and ``high``."""
    default = default_space(algo)
    if default is None and (key is None or low is None or high is None):
        raise SpecError(f"algorithm {algo!r} has no exploration parameter in the tuning table (known: "
                        f"{', '.join(SPACES_BY_KEY)}); give --param KEY --low L --high H")
    if default is not None and key is not None and key != default.key and (low is None or high is None):
        raise SpecError(f"--param {key}: give its range with --low and --high (the default range is "
                        f"{default.key}'s)")
    base = default or Space(key, "log", low, high, 0.001)
    chosen = replace(base, key=key or base.key, low=base.low if low is None else low,
                     high=base.high if high is None else high, scale=scale or base.scale,
                     step=step or base.step)
    if chosen.scale not in SCALES:
        raise SpecError(f"--scale {chosen.scale!r}: one of {', '.join(SCALES)}")
    # low == high is a range of one value (a grid of one, or one value past a range's end).
    if not 0 < chosen.step or chosen.low > chosen.high or (chosen.scale == "log" and chosen.low <= 0):
        raise SpecError(f"{chosen.key}: the range [{chosen.low}, {chosen.high}] on a {chosen.scale} scale is empty "
                        f"or reaches 0 on a log scale")
    if chosen.rounded_bound(chosen.low, up=True) > chosen.rounded_bound(chosen.high, up=False):
        raise SpecError(f"{chosen.key}: no multiple of the step {chosen.step} lies in [{chosen.low}, {chosen.high}]")
    return chosen


def field_value(config: TrainConfig, key: str):
    """The value of the dotted field ``key`` of ``config``."""
    record = config
    for part in key.split("."):
        record = getattr(record, part)
    return record


def with_value(config: TrainConfig, key: str, value) -> TrainConfig:
    """``config`` with the field ``key`` at ``value``, checked as a spec's config is
    (``launch.config.validate``): the one change a tuning trial makes to the arm's config."""
    config = apply_overrides(config, [f"{key}={value}"])
    validate(config)
    return config


def unused_reason(config: TrainConfig, key: str) -> str | None:
    """Why ``config`` would not read the field ``key`` (tuning it would compare noise), or None."""
    mcts = config.actors.mcts
    if key == "actors.mcts.c_puct" and mcts.c_base > 0:
        return (f"the arm's search uses AlphaZero's c_init / c_base schedule (c_base={mcts.c_base:g}), which does "
                f"not read c_puct; tune actors.mcts.c_init with --param, --low and --high")
    if key.startswith("actors.mcts.c_") and not config.actors.reads_puct_constants:
        return (f"the arm searches with {config.actors.search}, whose root and interior rules read no PUCT "
                f"constant; tune one of actors.gumbel's parameters with --param, --low and --high")
    return None


def objective(config: TrainConfig) -> tuple[str, int]:
    """The metric ASHA minimises for a trial of ``config``, and how many iterations apart
    it is evaluated: the error rate of play against the oracle from every opening of the
    board's play suite (the papers' headline measure) where one is evaluated, else the
    value MAE of its states suite, else the built-in exact value MAE (tic-tac-toe)."""
    game = config.game_network.make_game()
    suites = evaluated_suites(game, config.evaluation.suites)
    every = config.evaluation.every
    play = [s.name for s in suites if s.kind == "play" and not s.name.endswith("-h2h")]
    if play:
        return f"eval/{play[0]}/error_rate", every * config.evaluation.play_every
    states = [s.name for s in suites if s.kind == "states"]
    if states:
        return f"eval/{states[0]}/value_mae", every
    if EXACT_LABELS.get(config.game) is not None:
        return "eval/value_mae", every
    raise SpecError(f"{config.game}: the trial evaluates no play suite, no states suite and has no built-in exact "
                    f"labels (evaluation.suites={config.evaluation.suites!r}): nothing to tune on")


def comparison_seeds(plan) -> list[int]:
    """Every seed the spec's comparison runs at the plan's size, any arm and instance."""
    return sorted({t.seed for t in plan.trials})


def tuning_seeds(base: int, samples: int, comparison: list[int], where: str) -> list[int]:
    """Seeds ``base .. base + samples - 1``; refused where one is a comparison seed."""
    if base < 0:
        raise SpecError(f"--seed-base must be >= 0, got {base}")
    seeds = list(range(base, base + samples))
    clash = sorted(set(seeds) & set(comparison))
    if clash:
        raise SpecError(f"{where}: tuning seeds {', '.join(map(str, clash))} are seeds of the comparison "
                        f"(it runs seeds {', '.join(map(str, comparison))}); tuning on them would choose the value "
                        f"that suits the seeds then reported. Give a --seed-base beyond them (default {SEED_BASE})")
    return seeds


@dataclass(frozen=True)
class TuningPlan:
    """What one tuning run does, decided before Ray starts."""

    spec_name: str
    spec_path: str
    size: str
    arm: str
    algo: str
    instance: str
    space: Space
    search: str
    values: tuple  # the grid's values, one per trial; empty for random search
    seeds: tuple  # one per trial
    comparison_seeds: tuple
    metric: str
    scheduler: dict  # ASHAScheduler's arguments
    template: Trial  # the arm's trial of the experiment (at its comparison seed), whose roles and goal are kept
    comparison: Plan  # the experiment's plan at the size
    configs: tuple  # one TrainConfig per trial: the planner's, at the trial's seed, the parameter at its default

    def run_dir_name(self, index: int) -> str:
        """A trial's run directory name, also its actors' name prefix on the cluster."""
        parts = (self.spec_name, self.instance, self.arm, "tune", f"{index:02d}", f"s{self.seeds[index]}")
        return "-".join(p for p in parts if p)


def prepare_tuning(spec_name: str, arm: str, *, size: str | None = None, instance: str | None = None,
                   samples: int = 8, seed_base: int = SEED_BASE, updates: int | None = None, search: str = "grid",
                   grace: int = GRACE_EVALUATIONS, key: str | None = None, low: float | None = None,
                   high: float | None = None, scale: str | None = None, embedded: bool = True, offered=(),
                   gpus: float = 0) -> TuningPlan:
    """The tuning run of ``arm`` in the spec, planned and checked: every refusal (an unknown
    arm or instance, a seed of the comparison, a parameter the arm's config does not read,
    a value its config refuses) comes here, before anything runs."""
    spec = load_spec(spec_name)
    size = size or "small"
    if arm not in spec.arms:
        raise SpecError(f"{spec.path}: --arm {arm!r} is not an arm; arms: {', '.join(spec.arms)}")
    if samples < 1:
        raise SpecError(f"--samples must be >= 1, got {samples}")
    if search not in SEARCHES:
        raise SpecError(f"--search {search!r}: one of {', '.join(SEARCHES)}")
    if grace < 1:
        raise SpecError(f"--grace must be >= 1 evaluation, got {grace}")
    # The comparison's own plan: its seeds, and the arm's trial whose config is the template.
    comparison = make_plan(spec, size, updates=updates, embedded=embedded, offered=offered, gpus=gpus)
    arm_trials = [t for t in comparison.trials if t.arm == arm]
    if not arm_trials:
        raise SpecError(f"{spec.path}: size {size!r} runs no trial of arm {arm!r} (its 'only')")
    planned = list(dict.fromkeys(t.instance for t in arm_trials))
    name = planned[0] if instance is None else instance
    if name not in planned:
        raise SpecError(f"{spec.path}: --instance {instance!r} is not an instance size {size!r} runs "
                        f"arm {arm!r} on; those: {', '.join(planned)}")
    template = next(t for t in arm_trials if t.instance == name)
    where = f"{spec.path}: size {size!r}, arm {arm!r}"
    seeds = tuning_seeds(seed_base, samples, comparison_seeds(comparison), where)
    space = space_for(spec.arms[arm].algo, key=key, low=low, high=high, scale=scale)
    the_instance = next(i for i in spec.instances if i.name == name)
    # Exactly the planner's config, at the tuning seed (the seed is arm_config's argument).
    configs = tuple(arm_config(spec, size, spec.arms[arm], the_instance, seed) for seed in seeds)
    try:
        field_value(configs[0], space.key)
    except AttributeError:
        raise SpecError(f"{where}: --param {space.key!r} is not a field of the config") from None
    why = unused_reason(configs[0], space.key)
    if why:
        raise SpecError(f"{where}: {space.key}: {why}")
    try:
        for end in (space.low, space.high):  # every value of the range builds a config the run accepts
            with_value(configs[0], space.key, end)
    except ConfigError as err:
        raise SpecError(f"{where}: {err}") from None
    metric, cadence = objective(configs[0])
    max_t = template.updates
    # A few evaluations that carry the metric before ASHA may stop a trial: one evaluation
    # is too noisy to judge on, and early on every trial is poor.
    grace_t = min(max_t, grace * cadence * configs[0].updates_per_iteration)
    scheduler = {"time_attr": "updates", "metric": metric, "mode": "min", "max_t": max_t, "grace_period": grace_t,
                 "reduction_factor": REDUCTION_FACTOR,
                 # The run's own budget (or its goal) ends a trial that ASHA kept: a stop at
                 # the last evaluation would cut off its final checkpoint for nothing.
                 "stop_last_trials": False}
    return TuningPlan(spec.name, str(spec.path), size, arm, spec.arms[arm].algo, name, space, search,
                      tuple(space.grid(samples)) if search == "grid" else (), tuple(seeds),
                      tuple(comparison_seeds(comparison)), metric, scheduler, template, comparison, configs)


# ------------------------------------------------------------------ the trials


def _trainable(params: dict) -> None:
    """One tuning trial, in its Tune actor: the arm's run at the trial's seed with the
    parameter at the trial's value, reporting to Tune each record that carries the metric
    (ASHA's decisions need it, and Tune refuses a result without the scheduler's metric)."""
    from ray import tune

    from evaluation.run_metrics import read_metrics
    from launch.train import train
    from launch.wandb_run import trial_run
    from learner.checkpoint import latest_checkpoint

    trial = params["trial"]
    value = _clean(params["value"] if "value" in params else trial["value"])
    config = with_value(TrainConfig.from_dict(trial["config"]), trial["key"], value)
    metric = trial["metric"]
    reported = {"updates": -1}
    goal = GoalWatch(trial["stop_when"], trial["hold"])

    def report(record: dict) -> bool:
        if metric in record:
            reported.update(numbers(record))
            tune.report({**numbers(record), "value": value})
        return goal.observe(record)  # the spec's goal, held, ends the run, as in the experiment

    # A tuning run started again (an experiment's tuning step, resumed): a trial that
    # finished gives Tune its records again, as it gave them (ASHA decides on the same
    # reports), and one with a checkpoint goes on from it after giving its records so far.
    run_dir = Path(trial["run_dir"])
    finished = (run_dir / DONE_FILE).exists()
    resume = not finished and (run_dir / CONFIG_FILE).exists() and latest_checkpoint(run_dir / "checkpoints")
    if not finished and not resume and run_dir.exists():
        shutil.rmtree(run_dir)  # started but never checkpointed: nothing to continue from
    for record in read_metrics(run_dir) if finished or resume else []:
        if record.get("iteration", 0) > 0:  # the untrained network's evaluation was never reported
            report(record)
    if finished:
        return
    start = time.time()
    run_dir, last = train(config, run_dir=None if resume else run_dir, resume=run_dir if resume else None,
                          updates=trial["updates"], address=trial["address"],
                          wandb_mode=trial["wandb_mode"], stop=report,
                          wandb_as=trial_run(trial["group"], trial["arm"], trial["instance"], trial["seed"],
                                             trial["config"]))
    # The final evaluation, when the last iteration's record did not carry one.
    if metric in last and last.get("updates") != reported["updates"]:
        tune.report({**numbers(last), "value": value})
    Path(run_dir, DONE_FILE).write_text(json.dumps(
        {"trial": trial["name"], "value": value, "end": last.get("end"), "wall_seconds": time.time() - start,
         "final": numbers(last)}, indent=1, sort_keys=True))


def _say(line: str) -> None:
    """``print``, looked up when called: Tune pickles its callbacks, and a builtin is
    pickled by name, which fails once something has replaced ``builtins.print``."""
    print(line, flush=True)


def _progress_class():
    """A Tune callback of one line per trial started and ended (Tune's tables are off)."""
    from ray import tune

    class Progress(tune.Callback):
        def __init__(self, log):
            self.log = log

        def on_trial_start(self, iteration, trials, trial, **info):
            self.log(f"trial {trial.config['trial']['name']} started")

        def on_trial_complete(self, iteration, trials, trial, **info):
            last, metric = trial.last_result or {}, trial.config["trial"]["metric"]
            score = f"{last[metric]:.4f}" if isinstance(last.get(metric), (int, float)) else "no"
            self.log(f"trial {trial.config['trial']['name']} ended: {last.get('updates', '?')} updates, "
                     f"{score} {metric}")

        def on_trial_error(self, iteration, trials, trial, **info):
            self.log(f"trial {trial.config['trial']['name']} failed (its error is in {trial.local_path})")

    return Progress


def _scheduler_class():
    """ASHAScheduler that remembers the trials it stopped: Tune ends a stopped trial as it
    ends a finished one, and the report must tell them apart."""
    from ray.tune.schedulers import ASHAScheduler, TrialScheduler

    class RecordingASHA(ASHAScheduler):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.stopped_at: dict = {}  # trial id -> the updates at which it was stopped

        def on_trial_result(self, tune_controller, trial, result):
            decision = super().on_trial_result(tune_controller, trial, result)
            if decision == TrialScheduler.STOP:
                self.stopped_at[trial.trial_id] = result.get(self._time_attr)
            return decision

    return RecordingASHA


def run_tuning(spec_name: str, arm: str, out, *, size: str | None = None, instance: str | None = None,
               samples: int = 8, seed_base: int = SEED_BASE, updates: int | None = None, search: str = "grid",
               grace: int = GRACE_EVALUATIONS, key: str | None = None, low: float | None = None,
               high: float | None = None, scale: str | None = None, address: str | None = None,
               max_concurrent: int | None = None, wandb_mode: str | None = None, argv: list[str] | None = None,
               log=print) -> dict:
    """Tune ``arm``'s exploration parameter into ``out`` (``tune.json``, ``tune.md``, one run
    directory per trial, ``tune/`` for Tune's records); returns tune.json's content."""
    import ray
    from ray import tune
    from ray.tune.search.basic_variant import BasicVariantGenerator

    from launch.placement import offered_resources
    from lifecycle.ray_start import start_ray

    out = Path(out).resolve()
    if (out / TUNE_FILE).exists():
        raise SpecError(f"--out {out} already holds a tuning run ({TUNE_FILE}); give another directory")
    options = dict(size=size, instance=instance, samples=samples, seed_base=seed_base, updates=updates,
                   search=search, grace=grace, key=key, low=low, high=high, scale=scale)
    plan = prepare_tuning(spec_name, arm, **options)  # a bad spec or flag costs nothing
    check_datasets(replace(plan.comparison, trials=(plan.template,), matches=(), inference=()))
    start_ray(address)
    embedded = address is None
    plan = prepare_tuning(spec_name, arm, embedded=embedded, offered=() if embedded else offered_resources(),
                          gpus=ray.cluster_resources().get("GPU", 0), **options)
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    # The tuning trials take the roles of the arm's trial (a seed and a parameter change none).
    at_once = check_placement(replace(plan.comparison, trials=(plan.template,)), nodes)
    concurrent = max(1, min(at_once, max_concurrent or at_once, samples))
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(argv if argv is not None else sys.argv)
    log(f"tuning {plan.space.key} of {plan.spec_name} arm {plan.arm} ({plan.instance or plan.size}): {samples} "
        f"trials ({plan.search}), seeds {plan.seeds[0]}..{plan.seeds[-1]}, {plan.template.updates} updates each, "
        f"{concurrent} at a time, ASHA on {plan.metric}, in {out}")

    entries = _trial_entries(plan, out, address, wandb_mode)
    # One grid axis whose entries are the trials (a seed each, and in a grid search its
    # value); a random search adds the value's axis, which Tune samples once per trial.
    space = {"trial": tune.grid_search(entries)}
    if plan.search == "random":
        space["value"] = plan.space.domain()
    scheduler = _scheduler_class()(**plan.scheduler)
    trainable = tune.with_resources(
        _trainable, lambda p: tune.PlacementGroupFactory([{}, *p["trial"]["bundles"]], strategy="PACK"))
    tuner = tune.Tuner(
        trainable, param_space=space,
        tune_config=tune.TuneConfig(num_samples=1, search_alg=BasicVariantGenerator(random_state=seed_base),
                                    scheduler=scheduler, max_concurrent_trials=concurrent, reuse_actors=False),
        run_config=tune.RunConfig(name=f"tune-{plan.arm}", storage_path=str(out / "tune"),
                                  failure_config=tune.FailureConfig(max_failures=0), verbose=0,
                                  callbacks=[_progress_class()(_say if inspect.isbuiltin(log) else log)]))
    started = time.time()
    results = tuner.fit()
    wall = time.time() - started

    trials = _finished_trials(results, plan, scheduler)
    trials.sort(key=_rank)
    kept = [t for t in trials if t["end"] in ("budget", "goal") and t["metric"] is not None]
    chosen = kept[0] if kept else None
    record = {
        "spec": plan.spec_name, "spec_path": plan.spec_path, "size": plan.size, "arm": plan.arm, "algo": plan.algo,
        "instance": plan.instance, "command": command, "wall_seconds": round(wall, 1),
        "space": {"key": plan.space.key, "scale": plan.space.scale, "low": plan.space.low, "high": plan.space.high,
                  "step": plan.space.step, "limits": [v if math.isfinite(v) else None for v in plan.space.limits]},
        "search": {"algorithm": "BasicVariantGenerator", "kind": plan.search, "samples": samples,
                   "random_state": seed_base, **({"values": list(plan.values)} if plan.values else {})},
        "scheduler": {"name": "ASHAScheduler", **plan.scheduler},
        "seeds": {"tuning": list(plan.seeds), "comparison": list(plan.comparison_seeds)},
        "budget": {"updates": plan.template.updates, "rows": plan.template.rows,
                   "stop_when": dict(plan.template.stop_when or {}), "hold": plan.template.hold},
        "concurrent": concurrent, "trials": trials,
        "chosen": None if chosen is None else {
            "value": chosen["value"], "trial": chosen["name"], "metric": chosen["metric"],
            "updates": chosen["updates"], "set": f"{plan.space.key}={chosen['value']}",
            "arm_set": arm_set(load_spec(plan.spec_path).arms[plan.arm].overrides, plan.space.key, chosen["value"])}}
    (out / TUNE_FILE).write_text(json.dumps(record, indent=1))
    (out / TUNE_REPORT).write_text(tune_markdown(record))
    return record



def _trial_entries(plan, out: Path, address, wandb_mode) -> list[dict]:
    """What each tuning trial's Tune trial receives: its seed, config, run directory and,
    in a grid search, its value."""
    entries = []
    for i, (seed, config) in enumerate(zip(plan.seeds, plan.configs)):
        entries.append({"name": f"{plan.arm}-tune-{i:02d}-s{seed}", "index": i, "seed": seed,
                        "config": json.loads(config.to_json()), "key": plan.space.key, "metric": plan.metric,
                        "run_dir": str(out / plan.run_dir_name(i)), "updates": plan.template.updates,
                        "stop_when": dict(plan.template.stop_when or {}), "hold": plan.template.hold,
                        "arm": plan.arm, "instance": plan.template.instance, "bundles": list(plan.template.bundles),
                        "group": f"{plan.spec_name}-tune-{plan.arm}", "address": address, "wandb_mode": wandb_mode,
                        **({"value": plan.values[i]} if plan.values else {})})
    return entries


class TuningInterrupted(RuntimeError):
    """Tune returned before every trial ended (Ctrl-C, a stopped driver): nothing is chosen."""


def _finished_trials(results, plan, scheduler) -> list[dict]:
    """tune.json's entry of each trial: its value, seed, last metric, how it ended, its curve.
    Raises TuningInterrupted where a trial had not ended: Tune saves its state on an interrupt
    instead of raising, and a choice among the trials that had ended would be recorded as final."""
    trials, unfinished = [], 0
    for result in results:
        if result.config is None:  # a trial that never reported before the interrupt: Tune has no config of it
            unfinished += 1
            continue
        entry = result.config["trial"]
        metrics = result.metrics or {}
        done = Path(entry["run_dir"], DONE_FILE)
        finished = json.loads(done.read_text()) if done.exists() else None
        value = _clean(result.config.get("value", entry.get("value")))
        trial_id = metrics.get("trial_id")
        curve = []
        if result.metrics_dataframe is not None and plan.metric in result.metrics_dataframe:
            frame = result.metrics_dataframe[["updates", plan.metric]].dropna()
            curve = [[int(u), float(m)] for u, m in frame.itertuples(index=False)]
        trials.append({
            "name": entry["name"], "run_dir": Path(entry["run_dir"]).name, "value": _plain(value),
            "seed": entry["seed"], "metric": _plain(metrics.get(plan.metric)), "updates": _plain(metrics.get("updates")),
            "stopped_by_asha": trial_id in scheduler.stopped_at,
            "end": ("error" if result.error is not None else "stopped by ASHA" if trial_id in scheduler.stopped_at
                    else "goal" if finished and finished["end"] == "stopped" else
                    "budget" if finished else "not finished"),
            "error": f"{type(result.error).__name__}: {result.error}" if result.error is not None else None,
            "curve": curve})
    unfinished += sum(t["end"] == "not finished" for t in trials)
    if unfinished:
        raise TuningInterrupted(f"tuning of {plan.arm} stopped before {unfinished} of its {len(results)} trials "
                                f"ended; no value was chosen and {TUNE_FILE} was not written")
    return trials

def _plain(value):
    """A number of Tune's results as JSON writes it (numpy's scalars become Python's)."""
    return value.item() if hasattr(value, "item") else value


def _clean(value: float) -> float:
    """A sampled value without the float noise of Tune's quantised samplers
    (0.07 rather than 0.07000000000000001): the value the trial runs and reports."""
    return float(f"{value:.10g}")


def _rank(trial: dict) -> tuple:
    """Best first: the trials that ran to their budget or goal, by their last metric, then
    by the updates they took (of two that reached the spec's goal, the sooner); then those
    ASHA stopped, by their metric where they stopped; the failed last."""
    group = {"budget": 0, "goal": 0, "stopped by ASHA": 1}.get(trial["end"], 2)
    metric = trial["metric"] if trial["metric"] is not None else math.inf
    return group, metric, trial["updates"] if trial["updates"] is not None else math.inf, trial["value"] or 0


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)  # strings and arrays of them: JSON's are TOML's


def arm_set(overrides: dict, key: str, value) -> str:
    """The arm's ``set`` table with ``key`` at ``value`` (its other overrides kept), as a
    spec's arm writes it: ``set = { actors = { mcts = { simulations = 32, c_puct = 1.2 } } }``."""
    nested: dict = {}
    for dotted, v in {**overrides, key: value}.items():
        record = nested
        *parents, last = dotted.split(".")
        for part in parents:
            record = record.setdefault(part, {})
        record[last] = v
    return f"set = {_toml_value(nested)}"


def tune_markdown(record: dict) -> str:
    """``tune.md``: the trials sorted by the metric, the chosen value and how to use it."""
    key, metric, chosen = record["space"]["key"], record["scheduler"]["metric"], record["chosen"]
    space, sched = record["space"], record["scheduler"]
    lines = [f"# Tuning {key}: {record['spec']}, arm {record['arm']} ({record['algo']})", "",
             f"Instance {record['instance'] or '(the spec has one)'} at size {record['size']!r}: "
             f"{record['budget']['updates']:,} updates ({record['budget']['rows']:,} rows) a trial"
             + (f", ending early at {record['budget']['stop_when']}" if record['budget']['stop_when'] else "")
             + f"; {len(record['trials'])} trials in {record['wall_seconds'] / 60:.1f} min, "
               f"{record['concurrent']} at a time.", "",
             "```bash", record["command"], "```", "",
             f"- Space: {key} on a {space['scale']} scale over [{space['low']:g}, {space['high']:g}] (step "
             f"{space['step']:g}), {record['search']['kind']} search (Tune's BasicVariantGenerator).",
             f"- Scheduler: ASHA on {sched['time_attr']}, {metric} ({sched['mode']}), grace period "
             f"{sched['grace_period']:,} updates, reduction factor {sched['reduction_factor']:g}, max_t {sched['max_t']:,}.",
             f"- Seeds: tuning {', '.join(map(str, record['seeds']['tuning']))}; the comparison's "
             f"{', '.join(map(str, record['seeds']['comparison']))} are not used.", "",
             f"| rank | {key} | seed | {metric} | updates | ended |", "|---:|---:|---:|---:|---:|---|"]
    for rank, t in enumerate(record["trials"], 1):
        value = "" if t["metric"] is None else f"{t['metric']:.4f}"
        updates = "" if t["updates"] is None else f"{t['updates']:,.0f}"
        ended = t["end"] + (f" ({t['error']})" if t["error"] else "")
        lines.append(f"| {rank} | {t['value']:g} | {t['seed']} | {value} | {updates} | {ended} |")
    lines.append("")
    if chosen is None:
        lines.append("No trial ran to its budget: no value is chosen.")
    else:
        lines += [f"**Chosen: {key} = {chosen['value']:g}** ({metric} {chosen['metric']:.4f} at "
                  f"{chosen['updates']:,.0f} updates, trial {chosen['trial']}): the best trial that ASHA kept to "
                  f"the end of its budget (or the spec's goal). Give it to the comparison with",
                  "", "```bash", f"--set {chosen['set']}", "```", "",
                  f"or in the arm's table of the spec (`[arms.{record['arm']}]`):", "", "```toml",
                  chosen["arm_set"], "```"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the command line


def tune_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m launch tune",
        description="Tune one arm's exploration parameter (epsilon for AVI, c_puct for AlphaZero and AZAL) on "
                    "seeds the comparison does not use, with Ray Tune and the ASHA scheduler.")
    p.add_argument("spec", help="a named spec of experiments/ (e.g. ladder-hex) or a TOML file")
    p.add_argument("--arm", required=True, help="the spec's arm to tune")
    p.add_argument("--out", required=True, help="the tuning directory (tune.json, tune.md, a run directory per trial)")
    p.add_argument("--size", help=f"the spec's size whose budget and config the trials take ({' or '.join(SIZES)}, "
                                  "or another the spec has; default small)")
    p.add_argument("--instance", help="the instance to tune on (default: the first the size runs)")
    p.add_argument("--samples", type=int, default=8, help="trials (default 8)")
    p.add_argument("--search", choices=SEARCHES, default="grid",
                   help="grid: values evenly spaced on the range's scale; random: drawn by Tune (default grid)")
    p.add_argument("--seed-base", type=int, default=SEED_BASE,
                   help=f"trial i runs at seed BASE + i (default {SEED_BASE}); the comparison's seeds are refused")
    p.add_argument("--updates", type=int, help="replace the size's budget in gradient updates (quick looks)")
    p.add_argument("--grace", type=int, default=GRACE_EVALUATIONS,
                   help=f"evaluations a trial has before ASHA may stop it (default {GRACE_EVALUATIONS})")
    p.add_argument("--param", help="the config field to tune instead of the algorithm's (with --low and --high)")
    p.add_argument("--low", type=float, help="the range's low end (default: the algorithm's)")
    p.add_argument("--high", type=float, help="the range's high end (default: the algorithm's)")
    p.add_argument("--scale", choices=SCALES, help="the range's scale (default: the algorithm's)")
    p.add_argument("--address", help="Ray cluster to join (auto or ray://host:port); default: embedded Ray")
    p.add_argument("--max-concurrent", type=int, help="trials at a time (default: as many as the cluster places)")
    p.add_argument("--wandb", choices=("offline", "online", "disabled"),
                   help="W&B mode of the trials (default: online with credentials, else offline)")
    p.add_argument("--dry-run", action="store_true", help="check and print the tuning plan, run nothing")
    return p


def describe(plan: TuningPlan) -> str:
    space = plan.space
    values = (f"values {', '.join(f'{v:g}' for v in plan.values)}" if plan.values else
              f"values drawn by Tune on a {space.scale} scale")
    return "\n".join([
        f"tune {plan.spec_name} arm {plan.arm} ({plan.algo}) on {plan.instance or 'its game'} at size {plan.size!r}",
        f"  {space.key}: {space.scale} scale over [{space.low:g}, {space.high:g}], {plan.search} search, {values}",
        f"  seeds {', '.join(map(str, plan.seeds))} (the comparison's: {', '.join(map(str, plan.comparison_seeds))})",
        f"  budget {plan.template.updates:,} updates, {plan.template.rows:,} rows a trial"
        + (f", ending early at {plan.template.stop_when}" if plan.template.stop_when else ""),
        f"  ASHA: {plan.metric} (min) against updates, grace {plan.scheduler['grace_period']:,}, reduction factor "
        f"{plan.scheduler['reduction_factor']}, bundles {list(plan.template.bundles)}"])


def tune_main(argv: list[str] | None = None) -> int:
    args = tune_parser().parse_args(argv)
    options = dict(size=args.size, instance=args.instance, samples=args.samples, seed_base=args.seed_base,
                   updates=args.updates, search=args.search, grace=args.grace, key=args.param, low=args.low,
                   high=args.high, scale=args.scale)
    if args.max_concurrent is not None and args.max_concurrent < 1:
        print("error: --max-concurrent must be >= 1", file=sys.stderr)
        return 2
    try:
        if args.dry_run:
            print(describe(prepare_tuning(args.spec, args.arm, **options)))
            return 0
        record = run_tuning(args.spec, args.arm, args.out, address=args.address, max_concurrent=args.max_concurrent,
                            wandb_mode=args.wandb, argv=["python", "-m", "launch", "tune", *(
                                sys.argv[2:] if argv is None else argv)], log=_say, **options)
    except ConfigError as err:  # SpecError, a refused seed, or a config the cluster refuses
        print(f"error: {err}", file=sys.stderr)
        return 2
    except TuningInterrupted as err:
        print(f"interrupted: {err}; run it again with a new --out", file=sys.stderr)
        return 1
    for t in record["trials"]:
        if t["error"]:
            print(f"trial {t['name']}: {t['error']}", file=sys.stderr)
    chosen = record["chosen"]
    if chosen is None:
        print(f"no trial ran to its budget; see {Path(args.out) / TUNE_REPORT}", file=sys.stderr)
        return 1
    print(f"chosen {record['space']['key']} = {chosen['value']:g} ({record['scheduler']['metric']} "
          f"{chosen['metric']:.4f}); give the comparison --set {chosen['set']}, or in [arms.{record['arm']}]: "
          f"{chosen['arm_set']}")
    print(f"tuning directory: {args.out} ({Path(args.out) / TUNE_REPORT})")
    return 0
