"""The head-to-head matches of an experiment (AVI paper, Table 2): after its trials, each
seed of one arm plays the same seed of another from the suite's openings, both sides,
with their final checkpoints (``launch evaluate --opponent``'s suite and code), each side
with the policy the plan recorded (by default its arm's evaluation policy).

Each match writes ``DIR/matches/<trial>-vs-<arm>.json``: the score (in [-1, 1], positive
for the arm), its wins, draws and losses, both checkpoints, each side's trial and the
policy it played with its budget by name (``sides``: ``{"a": {"trial": ..., "policy":
"mcts", "simulations": 32}, "b": {...}}``, ``auto`` resolved) and the ``launch evaluate``
command that replays it; the report pools the seeds of a pair of arms into a score with
its Student-t interval over the paired seeds. A match whose file exists, made from the
same checkpoints with the same policies, is not played again (``--resume``).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from evaluation.config import EVALUATE_OPTIONS
from evaluation.policy_registry import AUTO
from launch.experiments.layout import match_path


def evaluate_command(checkpoint, game: str, suite: str, options: dict) -> str:
    """The ``launch evaluate`` command line that replays one evaluation of ``checkpoint``:
    ``options`` are its keyword arguments (``opponent_checkpoint``, ``policy``, ...), each
    written as the flag of the same name."""
    flags = {"opponent_checkpoint": "opponent", "prior_checkpoint": "prior"}
    command = ["python", "-m", "launch", "evaluate", "--checkpoint", str(checkpoint), "--game", game, "--suite", suite]
    for key, value in options.items():
        flag = f"--{flags.get(key, key).replace('_', '-')}"
        if isinstance(value, bool):  # a switch: --reuse or --no-reuse
            command.append(flag if value else f"--no-{flag[2:]}")
        elif value is not None:
            command += [flag, str(value)]
    return shlex.join(command)


def evaluate_with_options(checkpoint, game: str, suite: str, options: dict, sides_out: dict | None = None) -> dict:
    """``evaluate_checkpoint`` of ``checkpoint`` on ``suite`` with ``launch evaluate``'s
    ``options``: the evaluation settings (``policy``, ``simulations``, ``max_openings`` ...)
    make its EvaluationConfig, the checkpoints of an opponent or a prior pass as they are.
    ``sides_out`` receives the policy each side played (``evaluate_checkpoint``'s)."""
    from dataclasses import fields

    from evaluation.config import EvaluationConfig
    from evaluation.runner import evaluate_checkpoint

    settings = {f.name for f in fields(EvaluationConfig)}
    evaluation = EvaluationConfig(**{k: v for k, v in options.items() if k in settings})
    others = {k: v for k, v in options.items() if k not in settings}
    return evaluate_checkpoint(checkpoint, game, [suite], evaluation=evaluation, sides_out=sides_out, **others)


def final_checkpoint(out: Path, run_dir: str, what: str) -> Path:
    """The last checkpoint of the trial in ``out / run_dir``; ``what`` names the evaluation
    that needs it when there is none."""
    from learner.checkpoint import latest_checkpoint

    found = latest_checkpoint(Path(out) / run_dir / "checkpoints")
    if found is None:
        raise FileNotFoundError(f"{what}: no checkpoint in {Path(out) / run_dir / 'checkpoints'}")
    return found


def made_from(path: Path, checkpoints: dict) -> bool:
    """Whether the result file ``path`` exists and was made from ``checkpoints`` (its
    recorded fields: a checkpoint, or None for a field recorded as ""). A result made from
    an earlier checkpoint of a trial that trained on since (an experiment stopped between
    its trials and its matches) is made again. Checkpoints compare by their run directory
    and file name, so that a moved experiment directory keeps its results."""
    if not path.exists():
        return False
    recorded = json.loads(path.read_text())
    return all((Path(recorded.get(field) or "").parts[-3:] == checkpoint.parts[-3:]) if checkpoint is not None
               else not recorded.get(field) for field, checkpoint in checkpoints.items())


def played_policies(match: dict) -> dict:
    """The policies of a match's two sides: those its plan recorded; a match planned before
    they were recorded played both sides' auto. A result played with other policies than
    its plan's now is played again."""
    return {key: match.get(key, AUTO) for key in ("policy", "opponent_policy")}


def play_matches(out, manifest: dict, log=print) -> list[Path]:
    """Play the manifest's matches that have no result file from their trials' final
    checkpoints yet; returns every result file."""
    out = Path(out)
    run_dirs = {t["name"]: t["run_dir"] for t in manifest["trials"]}
    configs = {t["name"]: t["config"] for t in manifest["trials"]}
    paths = []
    for match in manifest.get("matches", []):
        path = match_path(out, match)
        paths.append(path)
        checkpoints = [final_checkpoint(out, run_dirs[name], f"match {match['name']}")
                       for name in (match["trial"], match["opponent_trial"])]
        policies = played_policies(match)
        if (made_from(path, {"checkpoint": checkpoints[0], "opponent_checkpoint": checkpoints[1]})
                and played_policies(json.loads(path.read_text())["match"]) == policies):
            continue
        game = configs[match["trial"]]["game"]
        options = {"opponent_checkpoint": checkpoints[1], **policies,
                   **{k: match[k] for k in EVALUATE_OPTIONS if k in match and k != "policy"}}
        start, played = time.time(), {}
        metrics = evaluate_with_options(checkpoints[0], game, match["suite"], options, sides_out=played)
        sides = {"a": {"trial": match["trial"], **played["agent"]},
                 "b": {"trial": match["opponent_trial"], **played["opponent"]}}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"match": match, "checkpoint": str(checkpoints[0]),
                                    "opponent_checkpoint": str(checkpoints[1]), "sides": sides,
                                    "seconds": time.time() - start,
                                    "command": evaluate_command(checkpoints[0], game, match["suite"], options),
                                    "metrics": metrics}, indent=1))
        score = metrics.get("eval/" + match["suite"] + "/score", float("nan"))
        log(f"match {match['name']}: score {score:+.3f}")
    return paths
