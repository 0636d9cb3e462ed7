"""Two fixed-seed runs compared bitwise: their end records, final weights and actors' state.

    python -m benchmarks.end_records BEFORE_RUN_DIR AFTER_RUN_DIR [--json]

Each run directory is one ``python -m launch ... --seed S --json --run-dir DIR`` of the same
command, from two trees of the code (docs/benchmarks.md, "Fixed-seed end records before
and after"). The end record is the last row of ``metrics.jsonl`` (the command's ``--json``
line), compared on every field but those of time (names holding ``seconds``, ``_s``,
``per_s``, ``elapsed``, ``actor_time/``, ``wait_fraction``; ``time``) and the checkpoint's
path. The weights are the sha256 (first 16 hex digits) of the newest checkpoint's network
tensors, the actors' state that of every self-play actor's saved state (environments,
trajectories, generators), each hashed over its arrays' dtypes, shapes and bytes and its
other values' reprs, keys sorted. Prints one row of the page's table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import torch

from learner.checkpoint import latest_checkpoint, load_run_checkpoint

TIME_MARKS = ("seconds", "_s", "per_s", "elapsed", "actor_time/", "wait_fraction")


def end_record(run_dir) -> dict:
    """The run's last metrics row without its time fields and its checkpoint's path."""
    rows = Path(run_dir, "metrics.jsonl").read_text().splitlines()
    last = json.loads(rows[-1])
    return {k: v for k, v in last.items()
            if k not in ("checkpoint", "time") and not any(mark in k for mark in TIME_MARKS)}


def _feed(h, obj) -> None:
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, np.ndarray):
        h.update(repr((obj.dtype.str, obj.shape)).encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, dict):
        for key in sorted(obj, key=str):
            h.update(repr(key).encode())
            _feed(h, obj[key])
    elif isinstance(obj, (list, tuple)):
        h.update(f"[{len(obj)}".encode())
        for item in obj:
            _feed(h, item)
    else:
        h.update(repr(obj).encode())


def digest(obj) -> str:
    """sha256 of a tree of arrays, tensors and plain values, first 16 hex digits."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()[:16]


def state_hashes(run_dir) -> tuple[str, str]:
    """(network tensors, actors' state) of the run's newest checkpoint."""
    checkpoint = load_run_checkpoint(latest_checkpoint(Path(run_dir, "checkpoints")))
    return digest(checkpoint.learner.learner["net"]), digest(checkpoint.actors)


def compare(before, after) -> dict:
    a, b = end_record(before), end_record(after)
    keys = sorted(set(a) | set(b))
    differ = [k for k in keys if a.get(k) != b.get(k)]
    weights, actors = zip(state_hashes(before), state_hashes(after))
    return {"fields": len(keys), "differ": differ, "loss": [a.get("loss"), b.get("loss")],
            "weights": list(weights), "actors": list(actors),
            "bitwise": not differ and len(set(weights)) == 1 and len(set(actors)) == 1}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    out = compare(args.before, args.after)
    if args.json:
        print(json.dumps(out))
        return
    loss = " / ".join(f"{x:.6f}" for x in out["loss"])
    print(f"| {out['fields']} | {len(out['differ'])} | {loss} | "
          f"`{out['weights'][0]}` / `{out['weights'][1]}` | `{out['actors'][0]}` / `{out['actors'][1]}` | "
          f"{'yes' if out['bitwise'] else 'no: ' + ', '.join(out['differ'])} |")


if __name__ == "__main__":
    main()
