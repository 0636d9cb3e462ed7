"""The one JSON line of check.sh, from the run's metrics.jsonl; exit status 1 when the
job did not succeed, did not train, or the host loss was not counted in faults/*."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("metrics", type=Path)
    for name in ("--hosts", "--ray-up-seconds", "--nodes-after-return", "--workers-left-running", "--seconds"):
        p.add_argument(name, type=int, default=0)
    p.add_argument("--job-status", required=True)
    p.add_argument("--lost-host", required=True)
    p.add_argument("--job-at-loss", default="RUNNING", help="the job's status just after the host was lost")
    a = p.parse_args()
    records = [json.loads(line) for line in a.metrics.read_text().splitlines()] if a.metrics.exists() else []
    last = next((r for r in reversed(records) if "updates" in r), {})
    faults = {k.removeprefix("faults/").removesuffix("_total"): v for k, v in last.items()
              if k.startswith("faults/") and k.endswith("_total")}
    restarts = sum(v for k, v in faults.items() if k.endswith("restarts"))
    out = {"hosts": a.hosts, "ray_up_seconds": a.ray_up_seconds, "job_status": a.job_status,
           "updates": last.get("updates", 0), "faults": faults, "restarts": restarts,
           "rows_lost_counted": faults.get("replay_rows_lost", 0), "lost_host": a.lost_host,
           "job_at_loss": a.job_at_loss,
           "nodes_after_return": a.nodes_after_return, "workers_left_running_after_down": a.workers_left_running,
           "seconds": a.seconds}
    print(json.dumps(out), flush=True)
    problems = []
    if a.job_status != "SUCCEEDED":
        problems.append(f"job {a.job_status}")
    if not out["updates"]:
        problems.append("no updates in metrics.jsonl")
    if a.job_at_loss != "RUNNING":
        problems.append(f"{a.lost_host} was lost when the job was {a.job_at_loss}, not under it: "
                        "a budget too short for this machine (--updates makes it wait)")
    elif restarts < 1:
        problems.append(f"losing {a.lost_host} was not counted in faults/* ({faults})")
    if a.nodes_after_return != a.hosts:
        problems.append(f"{a.nodes_after_return} of {a.hosts} nodes alive after {a.lost_host} returned")
    for problem in problems:
        print(f"check.sh: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
