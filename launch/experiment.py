"""``python -m launch experiment SPEC --out DIR``: the trials of a spec on Ray Tune.

SPEC is a named spec of ``experiments/`` (``smoke``, ``avi-vs-az-connect4``, ...) or a
TOML file (the format: ``launch/experiments/spec.py``). The spec is read, planned and
checked (fields, matched budgets, placement on the cluster) before any trial starts;
``--dry-run`` stops there and prints the plan: the trials, each arm's budget, each
trial's placement bundles and the estimated wall time. ``--updates N`` replaces the
size's budget in updates (tests and quick looks; the arms stay matched). ``--resume``
continues the experiment in DIR (``launch/experiments/tune_run.py``). Then ``python -m
launch report DIR`` draws its figures.
"""

from __future__ import annotations

import argparse
import sys

from launch.config import ConfigError
from launch.experiments.spec import SIZES, check_datasets, check_placement, load_spec, plan as make_plan
from launch.experiments.tuning import TuningInterrupted


def experiment_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m launch experiment",
                                description="Run the trials of an experiment spec on Ray Tune.")
    p.add_argument("spec", help="a named spec of experiments/ (e.g. smoke) or a TOML file")
    p.add_argument("--out", required=True, help="the experiment directory (one run directory per trial)")
    p.add_argument("--size", help=f"the spec's size: {' or '.join(SIZES)} (default: small, or on --resume the "
                                  "experiment's; a spec may have more, such as smoke's test size for the tests)")
    p.add_argument("--address", help="Ray cluster to join (auto or ray://host:port); default: embedded Ray")
    p.add_argument("--max-concurrent", type=int, help="trials at a time (default: as many as the cluster places)")
    p.add_argument("--resume", action="store_true", help="continue the experiment in --out")
    p.add_argument("--updates", type=int, help="replace the size's budget in gradient updates (tests, quick looks)")
    p.add_argument("--wandb", choices=("offline", "online", "disabled"),
                   help="W&B mode of the trials (default: online with credentials, else offline)")
    p.add_argument("--dry-run", action="store_true", help="check and print the plan, run nothing")
    return p


def describe(plan, nodes: list[dict] | None = None, max_concurrent: int | None = None) -> str:
    """The plan as text: each arm's budget and trials, and the estimated wall time."""
    lines = [f"experiment {plan.spec.name} ({plan.size}): {len(plan.trials)} trials on {plan.spec.game}"]
    for (instance, arm), (updates, rows) in plan.budgets.items():
        trials = [t for t in plan.trials if t.arm == arm and t.instance == instance]
        bundles = trials[0].bundles
        lines.append(f"  {instance + ' ' if instance else ''}{arm}: seeds {', '.join(str(t.seed) for t in trials)}; "
                     f"{updates} updates, {rows} rows; bundles {list(bundles)}")
    if plan.order == "seeds":
        lines.append("  run order: every board and arm at one seed, then the next seed")
    if plan.order == "boards":
        lines.append("  run order: board by board, every arm at one seed, then the next seed")
    for step in plan.tuning:
        estimate = f", at most {step.estimated_seconds / 60:.0f} min" if step.estimated_seconds is not None else ""
        whose = f"{step.instance}'s" if step.instance else "the"
        lines.append(f"  tuning before {whose} trials: "
                     f"{step.arm}'s exploration parameter, {step.samples} trials of {step.updates} updates on seeds "
                     f"the comparison does not use (ASHA){estimate}")
    if plan.matches:
        lines.append(f"  head-to-head: {len(plan.matches)} matches after the trials "
                     f"({', '.join(sorted({m['arm'] + ' vs ' + m['opponent'] for m in plan.matches}))})")
    if plan.inference:
        planned = {p["entry"] for p in plan.inference}
        entries = [f"{e['name']} ({e['policy']} at {', '.join(map(str, e['budgets']))})"
                   for e in plan.spec.inference if e["name"] in planned]
        lines.append(f"  inference study: {len(plan.inference)} evaluations after the trials: {'; '.join(entries)}")
    if nodes is not None:
        at_once = check_placement(plan, nodes)
        concurrent = max(1, min(at_once, max_concurrent or at_once))
        lines.append(f"  placement: {at_once} trial(s) fit at once on this cluster; running {concurrent} at a time")
        wall = plan.wall_seconds(concurrent)
        after = f" ({plan.after_seconds / 60:.0f} of them after the trials)" if plan.after_seconds else ""
        if plan.tuning and wall is not None:
            tuning = sum(s.estimated_seconds for s in plan.tuning) / concurrent
            after += f" (the tuning steps at most {tuning / 60:.0f} of them)"
        lines.append(f"  estimated wall time: {wall / 60:.0f} min{after}" if wall is not None
                     else "  estimated wall time: unknown (the size gives no updates_per_second)")
    return "\n".join(lines)


def experiment_main(argv: list[str] | None = None) -> int:
    args = experiment_parser().parse_args(argv)
    if args.max_concurrent is not None and args.max_concurrent < 1:
        print("error: --max-concurrent must be >= 1", file=sys.stderr)
        return 2
    try:
        if args.dry_run:
            import ray

            from launch.placement import offered_resources
            from lifecycle.ray_start import start_ray

            spec = load_spec(args.spec)
            size = args.size or "small"
            check_datasets(make_plan(spec, size, updates=args.updates))  # a bad spec fails before Ray starts
            start_ray(args.address)
            plan = make_plan(spec, size, updates=args.updates, embedded=args.address is None,
                             offered=() if args.address is None else offered_resources(),
                             gpus=ray.cluster_resources().get("GPU", 0))
            print(describe(plan, [n["Resources"] for n in ray.nodes() if n.get("Alive")], args.max_concurrent))
            return 0
        from launch.experiments.tune_run import run_experiment

        outcome = run_experiment(args.spec, args.out, size=args.size, updates=args.updates, address=args.address,
                                 max_concurrent=args.max_concurrent, resume=args.resume, wandb_mode=args.wandb,
                                 argv=["python", "-m", "launch", "experiment", *(sys.argv[2:] if argv is None
                                                                                  else argv)])
    except ConfigError as err:  # SpecError, or a config the cluster refuses
        print(f"error: {err}", file=sys.stderr)
        return 2
    except TuningInterrupted as err:
        print(f"interrupted: {err}; --resume continues it: python -m launch experiment {args.spec} "
              f"--out {args.out} --resume", file=sys.stderr)
        return 1
    from launch.experiments.tune_run import STUDIES

    failed = {name: why for name, why in outcome.items() if why != "done"}
    for name, why in failed.items():
        print(f"{name if name in STUDIES else 'trial ' + name}: {why}", file=sys.stderr)
    trials = [name for name in outcome if name not in STUDIES]
    done = sum(outcome[name] == "done" for name in trials)
    print(f"experiment directory: {args.out} ({done} of {len(trials)} trials done); "
          f"python -m launch report {args.out}")
    return 1 if failed else 0
