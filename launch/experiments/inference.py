"""The inference study of an experiment (AVI paper, Figure 2): after its trials, each
trial's final network is put in a search at each budget of the spec's ``[[inference]]``
entries and evaluated on the entry's suite:

- MCTS with a ``prior`` arm: the search takes the prior arm's policy (the same seed's
  final checkpoint) and the trial's values at its leaves. For the prior arm itself that
  is native inference, (pi_AZ, V_AZ); for another arm it is cross-inference, (pi_AZ,
  V_AVI) (section 4.3). The search and its simulations are the same for both.
- minimax to each depth over the trial's values alone, no policy.

Each point writes ``DIR/inference/<point>.json``: the point, the checkpoints, the suite's
metrics and the ``launch evaluate`` command that replays it. The report draws each entry
as a curve per arm over the budgets, with a Student-t band over seeds. A point whose
file was made from the final checkpoints is not evaluated again (``--resume``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from evaluation import policy_registry
from launch.experiments.layout import inference_path
from launch.experiments.matches import evaluate_command, evaluate_with_options, final_checkpoint, made_from


def run_inference(out, manifest: dict, log=print) -> list[Path]:
    """Evaluate the manifest's inference points that have no result file from their trials'
    final checkpoints yet; returns every result file."""
    out = Path(out)
    run_dirs = {t["name"]: t["run_dir"] for t in manifest["trials"]}
    games = {t["name"]: t["config"]["game"] for t in manifest["trials"]}

    paths = []
    for point in manifest.get("inference", []):
        path = inference_path(out, point)
        paths.append(path)
        what = f"inference {point['name']}"
        checkpoint = final_checkpoint(out, run_dirs[point["trial"]], what)
        prior = final_checkpoint(out, run_dirs[point["prior_trial"]], what) if point.get("prior_trial") else None
        if made_from(path, {"checkpoint": checkpoint, "prior_checkpoint": prior}):
            continue
        options = {"policy": point["policy"], policy_registry.searches()[point["policy"]]: point["budget"],
                   "prior_checkpoint": prior,
                   **({"max_openings": point["max_openings"]} if "max_openings" in point else {})}
        start = time.time()
        metrics = evaluate_with_options(checkpoint, games[point["trial"]], point["suite"], options)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"point": point, "checkpoint": str(checkpoint),
                                    "prior_checkpoint": str(options["prior_checkpoint"] or ""),
                                    "seconds": time.time() - start,
                                    "command": evaluate_command(checkpoint, games[point["trial"]], point["suite"],
                                                                options),
                                    "metrics": metrics}, indent=1))
        log(f"inference {point['name']}: {time.time() - start:.0f} s")
    return paths
