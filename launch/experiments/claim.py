"""One process at a time runs an experiment directory: two drivers resuming the same
directory would train the same trial twice, interleaving its checkpoints and metrics.

The running driver holds ``CLAIM_FILE`` (its host, pid and the process's start time). A new
driver refuses a directory whose claim names a live process of this host, or any process of
another host (whose life it cannot see: the message says how to release it); a claim left
by a driver that died on this host is taken over, and said so."""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from launch.experiments.spec import SpecError

CLAIM_FILE = "running.json"  # in the experiment directory while a driver runs it


def _started(pid: int):
    """The process's start (its clock ticks after boot, from /proc), None when it does not
    run; where /proc is absent, whether it runs at all."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except FileNotFoundError:
        if not Path("/proc").is_dir():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                pass
            return "running"
        return None


def _holder_alive(claim: dict) -> bool:
    """Whether the claim's process still runs (a pid reused by another process does not count)."""
    started = _started(int(claim["pid"]))
    return started is not None and started == claim["started"]


@contextmanager
def claimed(out: Path, log=print):
    """Hold ``out`` for this process while the block runs; refuse it if another holds it."""
    out = Path(out)
    path = out / CLAIM_FILE
    if path.exists():
        claim = json.loads(path.read_text())
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(claim["time"]))
        if claim["host"] != socket.gethostname():
            raise SpecError(f"{out} is being run by pid {claim['pid']} on host {claim['host']} since {since} UTC; "
                            f"if that driver has ended, remove {path}")
        if _holder_alive(claim):
            raise SpecError(f"{out} is being run by pid {claim['pid']} on this host since {since} UTC; stop it "
                            f"(kill -INT {claim['pid']}) or wait for it, then resume")
        log(f"{out}: the driver that held it (pid {claim['pid']}, since {since} UTC) is gone; taking it over")
    out.mkdir(parents=True, exist_ok=True)
    mine = {"host": socket.gethostname(), "pid": os.getpid(), "started": _started(os.getpid()), "time": time.time()}
    path.write_text(json.dumps(mine))
    try:
        yield
    finally:
        try:
            if json.loads(path.read_text()).get("pid") == mine["pid"]:
                path.unlink()
        except FileNotFoundError:
            pass
