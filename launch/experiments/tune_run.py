"""The trials of a plan on Ray Tune, each one ordinary training run.

Each trial is a Tune function trainable that calls ``launch.train.train`` on its own run
directory ``DIR/<spec>-<trial>`` (``config.json``, ``metrics.jsonl``, checkpoints, its
W&B run in the experiment's group), and reports every record to Tune. It reserves its
roles' resources as one placement group (``tune.PlacementGroupFactory``: an empty head
bundle for the trial's driver, then the bundles of ``spec.trial_bundles``). Tune starts
the trial's function with ``placement_group_capture_child_tasks``, so the learner, the
actors, the replay shards and the evaluator the run creates land inside that group,
and Tune's removal of the group when the trial ends frees whatever is left of them:
trials never take each other's CPUs, and nothing leaks.

The experiment directory holds ``experiment.json`` (the plan: trials, configs, budgets,
the commands that ran it), ``spec.toml`` (the spec as it was read) and ``tune/`` (Tune's
own records). A trial that finishes writes ``trial.json`` into its run directory.
``--resume`` reads the saved spec, skips the trials that have ``trial.json`` (their files
are not touched), resumes the others from their newest checkpoint with the run
directory's own ``--resume`` (exact: learner, optimiser, replay, actors' random states),
and starts afresh those that never wrote one. Resuming by the run directories rather
than Tune's experiment state keeps one mechanism, the one the runs already test.
"""

from __future__ import annotations

import inspect
import json
import shlex
import shutil
import sys
import time
from pathlib import Path

from evaluation.run_config import CONFIG_FILE
from evaluation.run_metrics import read_metrics
from launch.experiments.claim import claimed
from launch.experiments.layout import BEYOND, DONE_FILE, EXPERIMENT_FILE, TUNE_FILE, TUNING_DIR
from launch.config import TrainConfig
from launch.metrics import numbers
from launch.experiments.spec import (MIN_HOLD, GoalWatch, SpecError, Plan, check_datasets, check_placement, flatten,
                                     load_spec)
from launch.experiments.spec import plan as make_plan

SPEC_COPY = "spec.toml"


def run_dir_name(plan: Plan, trial) -> str:
    """The trial's run directory name, also the prefix of its actors' names on the cluster
    (launch/train.py): the spec's name keeps two experiments' actors apart."""
    return f"{plan.spec.name}-{trial.name}"


def _trainable(params: dict) -> None:
    """One trial, in the Tune actor: its run from the start, from its checkpoint, or not at
    all when it finished before (``--resume``)."""
    from ray import tune

    from launch.train import train
    from launch.wandb_run import trial_run
    from learner.checkpoint import latest_checkpoint

    trial = params["trial"]
    run_dir = Path(trial["run_dir"])
    done = run_dir / DONE_FILE
    if done.exists():  # finished before the experiment was interrupted
        tune.report(json.loads(done.read_text())["final"])
        return
    config = TrainConfig.from_dict(trial["config"])
    resume = (run_dir / CONFIG_FILE).exists() and latest_checkpoint(run_dir / "checkpoints") is not None
    if (run_dir / CONFIG_FILE).exists() and not resume:
        shutil.rmtree(run_dir)  # started but never checkpointed: nothing to continue from
    start = time.time()
    goal = GoalWatch(trial.get("stop_when") or {}, trial.get("hold", MIN_HOLD))
    # The evaluations before the resume count, as the run's stop callback saw them: the
    # untrained network's (iteration 0) is logged but never given to it.
    for record in read_metrics(run_dir) if resume else []:
        if record.get("iteration", 0) > 0:
            goal.observe(record)

    def report(record: dict) -> bool:
        tune.report(numbers(record))
        return goal.observe(record)  # the budget, or the spec's goal held, ends the run

    _, last = train(config, run_dir=None if resume else run_dir, resume=run_dir if resume else None,
                    updates=trial["updates"], address=trial["address"], wandb_mode=trial["wandb_mode"],
                    stop=report, wandb_as=trial_run(trial["group"], trial["arm"], trial["instance"], trial["seed"],
                                                    trial["config"]))
    summary = {"trial": trial["name"], "finished": time.time(), "wall_seconds": time.time() - start,
               "resumed": resume, "final": numbers(last)}
    done.write_text(json.dumps(summary, indent=1, sort_keys=True))


def _say(line: str) -> None:
    """``print``, looked up when called: Tune pickles its callbacks, and a builtin is
    pickled by name, which fails once something has replaced ``builtins.print`` (the
    command line's progress output does)."""
    print(line, flush=True)


def _progress_callback():
    from ray import tune

    class Progress(tune.Callback):
        """One line per trial started and ended (Tune's own tables are off: verbose=0)."""

        def __init__(self, log, out: Path):
            self.log, self.out = log, out

        def on_trial_start(self, iteration, trials, trial, **info):
            self.log(f"trial {trial.config['trial']['name']} started")

        def on_trial_complete(self, iteration, trials, trial, **info):
            last = trial.last_result or {}
            self.log(f"trial {trial.config['trial']['name']} done: {last.get('updates', '?')} updates, "
                     f"{last.get('rows', '?')} rows")
            # The experiment's trial data grows with each finished trial (launch/results/record.py):
            # a study stopped by its clock still has the data of what it ran.
            from launch.results.record import write_experiment_data

            try:
                write_experiment_data(self.out)
            except (OSError, ValueError) as err:
                self.log(f"trial data of {self.out} not written: {err}")

        def on_trial_error(self, iteration, trials, trial, **info):
            self.log(f"trial {trial.config['trial']['name']} failed (its error is in {trial.local_path})")

    return Progress


def _manifest(plan: Plan, updates: int | None) -> dict:
    return {"spec": plan.spec.name, "description": plan.spec.description, "game": plan.spec.game,
            "size": plan.size, "updates_override": updates, "reference_arm": plan.spec.reference_arm,
            "tuning": [{"instance": s.instance, "arm": s.arm, "samples": s.samples, "updates": s.updates,
                        "dir": f"{TUNING_DIR}/{s.name}"} for s in plan.tuning],
            "arms": {a.name: {"algo": a.algo, "label": a.label,
                              **({"compare_to": a.compare_to} if a.compare_to else {})}
                     for a in plan.spec.arms.values()},
            "trials": [{**t.to_dict(), "run_dir": run_dir_name(plan, t)} for t in plan.trials],
            "matches": list(plan.matches), "inference": list(plan.inference), "commands": []}


def tuned_values(out: Path) -> dict:
    """``{(instance, arm): {key: value}}``: the value each ended tuning step of the
    experiment in ``out`` chose (``TUNING_DIR/<step>/tune.json``)."""
    chosen = {}
    records = [json.loads(p.read_text()) for p in sorted((Path(out) / TUNING_DIR).glob(f"*/{TUNE_FILE}"))]
    # A step's range extended past its chosen end (BEYOND): the choice over both ranges wins.
    for record in sorted(records, key=lambda r: "extends" in r):
        best = record.get("chosen_overall", record.get("chosen"))
        if best is not None:
            chosen[(record["instance"], record["arm"])] = {record["space"]["key"]: best["value"]}
    return chosen


def better_of(base: dict, wider: dict) -> dict | None:
    """The better chosen trial of a tuning step and of its range's extension past the
    chosen end (tuning's ranking: ran to its end, then the lower metric, then fewer
    updates); None when neither chose."""
    from launch.experiments.tuning import _rank

    def entry(record):
        chosen = record.get("chosen")
        if chosen is None:
            return None
        trial = next(t for t in record["trials"] if t["name"] == chosen["trial"])
        return _rank(trial), chosen

    ranked = [e for e in (entry(base), entry(wider)) if e is not None]
    return min(ranked, key=lambda e: e[0])[1] if ranked else None


def prepare(spec_name: str, out: Path, *, size: str | None, updates: int | None, resume: bool,
            embedded: bool, offered=(), gpus: float = 0) -> tuple[Plan, dict]:
    """The plan to run in ``out`` and its manifest: a new experiment (``out`` must not
    hold one), or the one ``out`` holds (``resume``: its saved spec, size and budget, the
    values its tuning steps chose so far). ``size`` None: small for a new experiment, the
    saved one on resume."""
    out = Path(out)
    saved = out / EXPERIMENT_FILE
    if resume:
        if not saved.exists():
            raise SpecError(f"--resume {out}: no {EXPERIMENT_FILE} there, not an experiment directory")
        manifest = json.loads(saved.read_text())
        spec = load_spec(str(out / SPEC_COPY))
        if spec_name not in (manifest["spec"], str(out / SPEC_COPY)) and load_spec(spec_name).name != spec.name:
            raise SpecError(f"--resume {out}: that directory holds experiment {manifest['spec']!r}, not {spec_name!r}")
        if (size is not None and size != manifest["size"]) or (updates is not None
                                                                 and updates != manifest["updates_override"]):
            raise SpecError(f"--resume {out}: the experiment runs size {manifest['size']!r}"
                            f"{' with --updates ' + str(manifest['updates_override']) if manifest['updates_override'] else ''}"
                            f"; --size and --updates cannot change on resume")
        plan = make_plan(spec, manifest["size"], updates=manifest["updates_override"], embedded=embedded,
                         offered=offered, gpus=gpus, tuned=tuned_values(out))
        planned = [{**t.to_dict(), "run_dir": run_dir_name(plan, t)} for t in plan.trials]
        # A trial that has started runs as it was planned; one that has not may have a value
        # its tuning step chose since.
        started = {t["name"] for t in manifest["trials"] if (out / t["run_dir"]).exists()}
        if [t["name"] for t in planned] != [t["name"] for t in manifest["trials"]]:
            raise SpecError(f"--resume {out}: the saved spec now plans other trials than {EXPERIMENT_FILE} "
                            f"lists (the code's presets changed?); start a new experiment directory")
        for p, m in zip(planned, manifest["trials"]):
            changes = config_changes(m["config"], p["config"]) if p["name"] in started else []
            if changes:
                raise SpecError(f"--resume {out}: trial {p['name']} has started, and the saved spec now plans it "
                                f"with {'; '.join(changes)} (the code's presets changed?); start a new experiment "
                                f"directory")
        manifest["trials"] = planned
        manifest["matches"], manifest["inference"] = list(plan.matches), list(plan.inference)
        check_datasets(plan)
        return plan, manifest
    if saved.exists():
        raise SpecError(f"--out {out} already holds an experiment; use --resume to continue it")
    spec = load_spec(spec_name)
    plan = make_plan(spec, size or "small", updates=updates, embedded=embedded, offered=offered, gpus=gpus)
    check_datasets(plan)
    return plan, _manifest(plan, updates)


def run_experiment(spec_name: str, out, *, size: str | None = None, updates: int | None = None,
                   address: str | None = None, max_concurrent: int | None = None, resume: bool = False,
                   wandb_mode: str | None = None, argv: list[str] | None = None, log=print) -> dict:
    """Run (or resume) an experiment in ``out``: board by board, its tuning steps, then its
    trials with the values they chose (``Plan.phases``); then its head-to-head matches and
    its inference study. Returns ``{trial name: "done" | error}`` (and, under the names of
    ``STUDIES``, the matches' or the study's error, if any). One driver at a time runs
    ``out`` (claim.py)."""
    out = Path(out).resolve()
    # The spec is read and planned before Ray starts: a bad field costs nothing.
    prepare(spec_name, out, size=size, updates=updates, resume=resume, embedded=True)
    with claimed(out, log):
        return _run_claimed(spec_name, out, size=size, updates=updates, address=address,
                            max_concurrent=max_concurrent, resume=resume, wandb_mode=wandb_mode, argv=argv, log=log)


def _run_claimed(spec_name: str, out: Path, *, size, updates, address, max_concurrent, resume, wandb_mode, argv,
                 log) -> dict:
    import ray

    from launch.placement import offered_resources
    from lifecycle.ray_start import start_ray

    start_ray(address)
    embedded = address is None
    resources = ray.cluster_resources()
    where = dict(embedded=embedded, offered=() if embedded else offered_resources(), gpus=resources.get("GPU", 0))
    plan, manifest = prepare(spec_name, out, size=size, updates=updates, resume=resume, **where)
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    at_once = check_placement(plan, nodes)
    out.mkdir(parents=True, exist_ok=True)
    if not resume:
        shutil.copyfile(plan.spec.path, out / SPEC_COPY)
    command = argv if argv is not None else sys.argv
    manifest["commands"].append({"time": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": shlex.join(command)})
    # In the spec's order (arms, trials): the report draws and tabulates in it.
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest, indent=1))

    def finished(trial) -> bool:
        return (out / run_dir_name(plan, trial) / DONE_FILE).exists()

    trials = [t for t in plan.in_run_order() if not finished(t)]
    kept = len(plan.trials) - len(trials)
    concurrent = max(1, min(at_once, max_concurrent or at_once))
    log(f"experiment {plan.spec.name} ({plan.size}): {len(plan.trials)} trials, {kept} finished before, "
        f"{len(trials)} to run, {concurrent} at a time, in {out}")
    failed = {}
    for phase, (steps, phase_trials) in enumerate(plan.phases()):
        if not any(not finished(t) for t in phase_trials):
            continue
        untuned = _tune(plan, steps, out, address, max_concurrent, wandb_mode, log)
        if steps:  # the trials of the phase with the values their steps chose
            commands = manifest["commands"]
            plan, manifest = prepare(str(out / SPEC_COPY), out, size=None, updates=None, resume=True, **where)
            manifest["commands"] = commands
            (out / EXPERIMENT_FILE).write_text(json.dumps(manifest, indent=1))
        names = {t.name for t in phase_trials}
        todo = [t for t in plan.in_run_order() if t.name in names and not finished(t)]
        for t in [t for t in todo if (t.instance, t.arm) in untuned]:
            failed[t.name] = untuned[(t.instance, t.arm)]
        todo = [t for t in todo if t.name not in failed]
        if todo:
            failed.update(_run_trials(plan, todo, out, manifest, address, wandb_mode, concurrent, log, phase))
    outcome = trial_outcomes(plan, out, failed)
    if plan.matches and all(v == "done" for v in outcome.values()):
        from launch.experiments.matches import play_matches

        try:
            play_matches(out, manifest, log)
        except Exception as err:  # a match that cannot be played leaves the trials as they are
            outcome[MATCHES] = f"{type(err).__name__}: {err}"
    if plan.inference and all(v == "done" for k, v in outcome.items() if k != MATCHES):
        from launch.experiments.inference import run_inference

        try:
            run_inference(out, manifest, log)
        except Exception as err:  # as a match: the trials stay as they are, --resume retries
            outcome[INFERENCE] = f"{type(err).__name__}: {err}"
    return outcome


# The entries of run_experiment's outcome that are not trials: the steps after them.
MATCHES, INFERENCE = "head-to-head matches", "inference study"
STUDIES = (MATCHES, INFERENCE)

# A trial Tune gave back without an error but without its DONE_FILE: the experiment was
# interrupted (Ctrl-C, a stopped driver) and Tune saved its state instead of raising.
NOT_FINISHED = "not finished: the experiment stopped before it did (--resume continues it)"


def config_changes(saved: dict, planned: dict) -> list[str]:
    """``"key: saved -> planned"`` for each field where a trial's config as ``experiment.json``
    saved it, read by this code (a field added since at its default, one moved since at its
    new place), differs from its plan now: a started trial resumes only where there is none."""
    before = flatten(json.loads(TrainConfig.from_dict(saved).to_json()))
    after = flatten(json.loads(TrainConfig.from_dict(planned).to_json()))
    return [f"{key}: {before.get(key)!r} -> {after.get(key)!r}" for key in sorted(set(before) | set(after))
            if before.get(key) != after.get(key)]


def trial_outcomes(plan: Plan, out: Path, failed: dict) -> dict:
    """``{trial name: "done" | error}``: a trial is done when its run directory holds its
    DONE_FILE, failed with Tune's error, and otherwise ``NOT_FINISHED``; the matches and the
    inference study after the trials run only when every one is done."""
    return {t.name: failed.get(t.name) or ("done" if (out / run_dir_name(plan, t) / DONE_FILE).exists()
                                           else NOT_FINISHED)
            for t in plan.trials}


def _tune(plan: Plan, steps: list, out: Path, address, max_concurrent, wandb_mode, log) -> dict:
    """Run the tuning ``steps`` that have not ended (a step interrupted before its
    ``tune.json`` runs again: its finished trials give Tune their records again, the others
    go on from their checkpoints); returns ``{(instance, arm): why}`` for the steps that
    chose no value."""
    from launch.experiments.tuning import GRACE_EVALUATIONS, SEED_BASE, prepare_tuning, run_tuning

    def run(step, where: Path, **range_) -> None:
        if (where / TUNE_FILE).exists():
            return
        shutil.rmtree(where / "tune", ignore_errors=True)  # Tune's own records of the interrupted run
        run_tuning(str(out / SPEC_COPY), step.arm, where, size=plan.size, instance=step.instance,
                   updates=step.updates, grace=step.grace or GRACE_EVALUATIONS, address=address,
                   max_concurrent=max_concurrent, wandb_mode=wandb_mode, log=log,
                   argv=["python", "-m", "launch", "experiment", str(out / SPEC_COPY), "--out", str(out), "--resume"],
                   **range_)

    untuned = {}
    for step in steps:
        where = out / TUNING_DIR / step.name
        try:
            if not (where / TUNE_FILE).exists():
                log(f"tuning {step.arm} on {step.instance or plan.spec.game}: {step.samples} trials of "
                    f"{step.updates} updates")
            run(step, where, samples=step.samples)
            base = json.loads((where / TUNE_FILE).read_text())
            chosen = base.get("chosen")
            space = prepare_tuning(str(out / SPEC_COPY), step.arm, size=plan.size, instance=step.instance,
                                   samples=step.samples, updates=step.updates).space
            wider = None if chosen is None else space.beyond(chosen["value"], step.samples, step.beyond)
            if wider is not None:
                # The best value lies at an end of the range: the values past it, on new seeds.
                beyond = out / TUNING_DIR / f"{step.name}{BEYOND}"
                if not (beyond / TUNE_FILE).exists():
                    log(f"tuning {step.arm} on {step.instance or plan.spec.game} past {chosen['value']:g}, the end "
                        f"of its range: {step.beyond} trials over [{wider.low:g}, {wider.high:g}]")
                run(step, beyond, samples=step.beyond, seed_base=SEED_BASE + step.samples, low=wider.low,
                    high=wider.high)
                record = json.loads((beyond / TUNE_FILE).read_text())
                if "extends" not in record:
                    record["extends"] = {"step": step.name, "chosen": chosen}
                    record["chosen_overall"] = better_of(base, record)
                    (beyond / TUNE_FILE).write_text(json.dumps(record, indent=1))
        except SpecError as err:
            untuned[(step.instance, step.arm)] = f"its tuning step could not run: {err}"
            continue
        if chosen is None:
            untuned[(step.instance, step.arm)] = (f"its tuning step chose no value: no tuning trial ran to its "
                                                  f"budget (see {where / 'tune.md'}); remove {where} to tune again")
    return untuned


def _run_trials(plan: Plan, trials: list, out: Path, manifest: dict, address, wandb_mode, concurrent: int,
                log, phase: int = 0) -> dict:
    """The ``trials`` on Ray Tune; returns ``{trial name: error}`` for those that failed."""
    from ray import tune

    # One grid axis whose values are the trials: Tune runs one trial per entry.
    params = [{**t.to_dict(), "run_dir": str(out / run_dir_name(plan, t)), "group": plan.spec.name,
               "address": address, "wandb_mode": wandb_mode} for t in trials]
    trainable = tune.with_resources(
        _trainable, lambda p: tune.PlacementGroupFactory([{}, *p["trial"]["bundles"]], strategy="PACK"))
    tuner = tune.Tuner(
        trainable, param_space={"trial": tune.grid_search(params)},
        tune_config=tune.TuneConfig(max_concurrent_trials=concurrent, reuse_actors=False),
        run_config=tune.RunConfig(name=f"{plan.spec.name}-{len(manifest['commands'])}" + (f"-{phase}" if phase else ""),
                                  storage_path=str(out / "tune"),
                                  failure_config=tune.FailureConfig(max_failures=0), verbose=0,
                                  callbacks=[_progress_callback()(_say if inspect.isbuiltin(log) else log, out)]))
    failed = {}
    for result in tuner.fit():
        if result.error is not None:
            failed[result.config["trial"]["name"]] = f"{type(result.error).__name__}: {result.error}"
    return failed
