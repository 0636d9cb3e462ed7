"""The one JSON line of check.sh, from the run's metrics.jsonl (read from the run's
storage: a path, or an object store's URI); exit status 1 when the job did not succeed,
did not train, or the host loss was not counted in faults/*; with the run on an object
store and the learner's host lost, also when the learner did not come back on another
host with the updates of a checkpoint; with the lone learner node down for a while, also
when the learner did not come back with a checkpoint's updates or no wait for it was
recorded; with the store cut off for a while (no host lost), when the outage lost replay
rows or no checkpoint saw it; with the head lost, also when the resumed job did not restore
the newest pair the store held at the loss."""

from __future__ import annotations

import argparse
import json
import sys

import storage
from evaluation.run_metrics import read_metrics


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("run", type=storage.location)
    p.add_argument("--storage", default="shared", help="shared (a directory every host sees) or s3")
    p.add_argument("--learner-host-after", default="",
                   help="where the learner ran after its host was lost (none: nowhere); checked when given")
    for name in ("--hosts", "--ray-up-seconds", "--nodes-after-return", "--workers-left-running", "--seconds"):
        p.add_argument(name, type=int, default=0)
    p.add_argument("--job-status", required=True)
    p.add_argument("--lost-host", required=True)
    p.add_argument("--job-at-loss", default="RUNNING", help="the job's status just after the host was lost")
    p.add_argument("--storage-outage", type=int, default=0, help="seconds the store was cut off (no host lost)")
    p.add_argument("--head-lost", type=int, default=0,
                   help="1: the head was lost, and the run resumed on a new cluster (--job-status: the resumed job's)")
    for name in ("--updates-at-loss", "--pair-at-loss", "--resumed-from-updates"):
        p.add_argument(name, type=int, default=0)
    p.add_argument("--down-s", type=int, default=0,
                   help="seconds the learner's host, the lone learner node, was down (--lose gpu-node-for S)")
    a = p.parse_args()
    try:
        records = read_metrics(a.run)
    except FileNotFoundError:
        records = []
    last = next((r for r in reversed(records) if "updates" in r), {})
    faults = {k.removeprefix("faults/").removesuffix("_total"): v for k, v in last.items()
              if k.startswith("faults/") and k.endswith("_total")}
    restarts = sum(v for k, v in faults.items() if k.endswith("restarts"))
    out = {"hosts": a.hosts, "storage": a.storage, "ray_up_seconds": a.ray_up_seconds, "job_status": a.job_status,
           "updates": last.get("updates", 0), "faults": faults, "restarts": restarts,
           "rows_lost_counted": faults.get("replay_rows_lost", 0), "lost_host": a.lost_host,
           "learner_restarts": faults.get("learner_restarts", 0),
           "learner_restored_updates": faults.get("learner_restored_updates", 0),
           "learner_host_after": a.learner_host_after or None,
           "job_at_loss": a.job_at_loss,
           "nodes_after_return": a.nodes_after_return, "workers_left_running_after_down": a.workers_left_running,
           "seconds": a.seconds}
    if a.storage_outage:  # the checkpoints the outage refused, tried again; the rows it lost
        out.update(storage_outage_s=a.storage_outage, storage_retries=last.get("checkpoints_failed", 0),
                   rows_lost=faults.get("replay_rows_lost", 0))
    if a.head_lost:  # the run's records then, its newest pair, and what the resumed job restored
        out.update(head_lost=True, updates_at_loss=a.updates_at_loss, pair_at_loss=a.pair_at_loss,
                   resumed_from_updates=a.resumed_from_updates,
                   updates_lost=max(0, a.updates_at_loss - a.resumed_from_updates))
    if a.down_s:  # the lone learner node lost for a while: what the run waited for its learner
        out.update(down_s=a.down_s, learner_wait_s=round(faults.get("learner_wait_s", 0), 1))
    print(json.dumps(out), flush=True)
    problems = []
    if a.job_status != "SUCCEEDED":
        problems.append(f"job {a.job_status}")
    if not out["updates"]:
        problems.append("no updates in metrics.jsonl")
    if a.job_at_loss != "RUNNING":
        what = "the store was cut off" if a.storage_outage else f"{a.lost_host} was lost"
        problems.append(f"{what} when the job was {a.job_at_loss}, not under it: "
                        "a budget too short for this machine (--updates makes it wait)")
    elif a.storage_outage:
        if out["rows_lost"]:
            problems.append(f"the storage outage lost {out['rows_lost']} replay rows")
        if out["storage_retries"] < 1:
            problems.append(f"no checkpoint was refused during the {a.storage_outage} s outage: it was not seen")
    elif a.head_lost:
        if a.resumed_from_updates < 1:
            problems.append("the resumed job restored no checkpoint's updates (its log names none)")
        elif a.resumed_from_updates != a.pair_at_loss:
            problems.append(f"the resume restored {a.resumed_from_updates} updates, not the newest pair's "
                            f"({a.pair_at_loss}) at the head's loss")
    elif restarts < 1:
        problems.append(f"losing {a.lost_host} was not counted in faults/* ({faults})")
    if a.down_s and a.job_at_loss == "RUNNING":
        if out["learner_restarts"] < 1 or out["learner_restored_updates"] < 1:
            problems.append(f"the learner did not come back with a checkpoint's updates ({faults})")
        if out["learner_wait_s"] <= 0:
            problems.append(f"no wait for the learner was recorded while {a.lost_host} was down {a.down_s} s")
    if a.learner_host_after and a.job_at_loss == "RUNNING":
        if out["learner_restarts"] < 1 or out["learner_restored_updates"] < 1:
            problems.append(f"the learner did not come back with a checkpoint's updates ({faults})")
        if a.learner_host_after in ("none", a.lost_host):
            problems.append(f"the learner did not come back on another host than {a.lost_host} "
                            f"(found on: {a.learner_host_after})")
    if a.nodes_after_return != a.hosts:
        problems.append(f"{a.nodes_after_return} of {a.hosts} nodes alive after {a.lost_host} returned")
    for problem in problems:
        print(f"check.sh: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
