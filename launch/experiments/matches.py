"""The head-to-head matches of an experiment (AVI paper, Table 2): after its trials, each
seed of one arm plays the same seed of another from the suite's openings, both sides,
with their final checkpoints (``launch evaluate --opponent``'s suite and code).

Each match writes ``DIR/matches/<trial>-vs-<arm>.json``: the score (in [-1, 1], positive
for the arm), its wins, draws and losses, both checkpoints and the ``launch evaluate``
command that replays it; the report pools the seeds of a pair of arms into a score with
its Student-t interval over the paired seeds. A match whose file exists is not played
again (``--resume``).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from evaluation.report import match_path


def evaluate_command(checkpoint, game: str, suite: str, options: dict) -> str:
    """The ``launch evaluate`` command line that replays one evaluation of ``checkpoint``:
    ``options`` are its keyword arguments (``opponent_checkpoint``, ``policy``, ...), each
    written as the flag of the same name."""
    flags = {"opponent_checkpoint": "opponent", "prior_checkpoint": "prior"}
    command = ["python", "-m", "launch", "evaluate", "--checkpoint", str(checkpoint), "--game", game, "--suite", suite]
    for key, value in options.items():
        if value is not None:
            command += [f"--{flags.get(key, key).replace('_', '-')}", str(value)]
    return shlex.join(command)


def final_checkpoint(out: Path, run_dir: str, what: str) -> Path:
    """The last checkpoint of the trial in ``out / run_dir``; ``what`` names the evaluation
    that needs it when there is none."""
    from learner.checkpoint import latest_checkpoint

    found = latest_checkpoint(Path(out) / run_dir / "checkpoints")
    if found is None:
        raise FileNotFoundError(f"{what}: no checkpoint in {Path(out) / run_dir / 'checkpoints'}")
    return found


def play_matches(out, manifest: dict, log=print) -> list[Path]:
    """Play the manifest's matches that have no result file yet; returns every result file."""
    from evaluation.runner import evaluate_checkpoint

    out = Path(out)
    run_dirs = {t["name"]: t["run_dir"] for t in manifest["trials"]}
    configs = {t["name"]: t["config"] for t in manifest["trials"]}
    paths = []
    for match in manifest.get("matches", []):
        path = match_path(out, match)
        paths.append(path)
        if path.exists():
            continue
        checkpoints = [final_checkpoint(out, run_dirs[name], f"match {match['name']}")
                       for name in (match["trial"], match["opponent_trial"])]
        game = configs[match["trial"]]["game"]
        options = {"opponent_checkpoint": checkpoints[1], "policy": match.get("policy", "auto"),
                   **{k: match[k] for k in ("max_openings", "simulations") if k in match}}
        start = time.time()
        metrics = evaluate_checkpoint(checkpoints[0], game, [match["suite"]], **options)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"match": match, "checkpoint": str(checkpoints[0]),
                                    "opponent_checkpoint": str(checkpoints[1]), "seconds": time.time() - start,
                                    "command": evaluate_command(checkpoints[0], game, match["suite"], options),
                                    "metrics": metrics}, indent=1))
        score = metrics.get("eval/" + match["suite"] + "/score", float("nan"))
        log(f"match {match['name']}: score {score:+.3f}")
    return paths
