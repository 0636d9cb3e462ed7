"""A soak: one training run on embedded Ray for a given time, with a random fault every
N seconds, then the checks of issue 39 (docs/cluster.md), printed as one JSON line.

    python -m launch.soak --minutes 30 --fault-every 120 [--game connect4] [--run-dir DIR]

Faults, one at random each time (hard kills, Ray restarts the process): a self-play
actor, a replay shard, the learner, an oracle replica, the Redis store of solved
positions (its server SIGKILLed, started again 5 s later on the same port and data).
A whole host is lost only on the local cluster (deploy/local-cluster/check.sh).

Checks at the end: the run spent its budget; the rows lost equal the rows counted lost
(rows the run counted inserted, minus the rows the shards say they were ever given, is
``faults/replay_rows_lost_total``); every role's memory (RSS summed over its processes) at
the end is within 20% of its memory after the first 5 minutes (or the first quarter of a
shorter soak); every checkpoint verifies and the newest snapshot/checkpoint pair is
complete; a resume continues from the last pair. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import ray

from launch.config import resolve
from launch.run_dir import latest_pair, prepare_run_dir, resumed_config
from learner.checkpoint import CorruptCheckpointError, list_checkpoints, verify_checkpoint
from lifecycle.ray_start import start_ray

FAULTS = ("actor", "replay", "learner", "oracle", "redis")
MEMORY_TOLERANCE = 0.20
SOAK_CPUS = 6
BASELINE_SECONDS = 300.0  # "after the first five minutes"
# The evaluator plays the oracle on a few openings (the play suite uses the oracle
# replicas, so their faults matter) rather than scoring the large state datasets.
SETTINGS = ["actors.num_actors=2", "evaluation.every=5", "evaluation.play_every=1", "evaluation.suites=connect4-play",
            "evaluation.max_openings=8", "checkpoint_every=2", "oracle.replicas=1",
            # A ring that is full within the first minutes: its memory is flat from then on,
            # so growth after the 5-minute baseline is a leak, not the buffer filling.
            "replay.capacity=20000"]


class Redis:
    """A password-protected redis-server of our own, which the soak can kill and restart."""

    def __init__(self, directory: Path):
        self.directory, self.password = directory, secrets.token_hex(16)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        conf = f"port {self.port}\nbind 127.0.0.1\nrequirepass {self.password}\ndir {self.directory}\nsave 60 1\n"
        self.proc = subprocess.Popen(["redis-server", "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, text=True)
        self.proc.stdin.write(conf)
        self.proc.stdin.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"redis-server did not listen on port {self.port} within 10 s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def _processes() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command line, RSS bytes) of every process /proc shows."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
        except OSError:  # ended meanwhile
            continue
        rss = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
        out[int(entry.name)] = (int(fields["PPid"]), cmdline, rss)
    return out


def _role(cmdline: str) -> str | None:
    """The role of a Ray process: a worker's title ``ray::ClassName...``, or Ray's daemons."""
    if cmdline.startswith("ray::"):
        return cmdline[5:].split(".")[0].split(" ")[0]
    program = cmdline.split(" ")[0]
    return next((name for name in ("raylet", "gcs_server", "redis-server") if program.endswith(name)), None)


def memory_by_role() -> dict[str, int]:
    """RSS in bytes summed per role over this process's descendants, and the driver's."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out = {"driver": procs.get(os.getpid(), (0, "", 0))[2]}
    stack = list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        role = _role(procs[pid][1])
        if role is not None and role != "IDLE":
            out[role] = out.get(role, 0) + procs[pid][2]
    return out


class Injector(threading.Thread):
    """Every ``every`` seconds, one fault at random, recorded with its time."""

    def __init__(self, run, redis: Redis, every: float, seed: int):
        super().__init__(daemon=True)
        self.run_, self.redis, self.every = run, redis, every
        self.rng, self.done = random.Random(seed), threading.Event()
        self.injected: list[dict] = []
        self.errors: list[str] = []

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(self.every):
            kind = self.rng.choice(FAULTS)
            try:
                target = self.inject(kind)
            except Exception as e:  # noqa: BLE001 - an injection that failed is reported, not fatal
                self.errors.append(f"{kind}: {type(e).__name__}: {e}")
                continue
            self.injected.append({"at_s": round(time.monotonic() - start), "fault": kind, "target": target})
            print(f"soak: injected {kind} fault ({target})", flush=True)

    def inject(self, kind: str) -> str:
        run = self.run_
        if kind == "actor":
            i = self.rng.randrange(len(run.actors))
            ray.kill(run.actors[i], no_restart=False)
            return f"self-play actor {i}"
        if kind == "replay":
            i = self.rng.randrange(run.replay.num_shards)
            ray.kill(run.replay.shards[i], no_restart=False)
            return f"replay shard {i}"
        if kind == "learner":
            ray.kill(run.link.learner, no_restart=False)
            return "learner"
        if kind == "oracle":
            if run.oracle is None:
                raise RuntimeError("this run has no oracle service")
            name = self.rng.choice(run.oracle.replica_names)
            ray.kill(ray.get_actor(name), no_restart=False)
            return name
        self.redis.kill()
        time.sleep(5)
        self.redis.start()
        return f"redis-server :{self.redis.port}"


class MemoryWatch(threading.Thread):
    """Memory by role every 15 s; the baseline is the sample at ``baseline_s``."""

    def __init__(self, baseline_s: float):
        super().__init__(daemon=True)
        self.baseline_s, self.done = baseline_s, threading.Event()
        self.baseline: dict[str, int] | None = None
        self.last: dict[str, int] = {}

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(15):
            self.last = memory_by_role()
            if self.baseline is None and time.monotonic() - start >= self.baseline_s:
                self.baseline = dict(self.last)


def memory_check(baseline: dict[str, int] | None, end: dict[str, int]) -> dict:
    """Each role's RSS at the end against the baseline (MiB and ratio); roles over the
    tolerance are named in "over"."""
    if not baseline:
        return {"over": ["no baseline sample was taken"]}
    roles = {}
    for role, before in baseline.items():
        after = end.get(role)
        if after is not None and before > 0:
            roles[role] = {"mib_baseline": round(before / 2**20, 1), "mib_end": round(after / 2**20, 1),
                           "ratio": round(after / before, 3)}
    over = [r for r, v in roles.items() if abs(v["ratio"] - 1) > MEMORY_TOLERANCE]
    return {"roles": roles, "over": over}


def checkpoints_check(run_dir: Path) -> dict:
    bad = []
    checkpoints = list_checkpoints(run_dir / "checkpoints")
    for path in checkpoints:
        try:
            verify_checkpoint(path)
        except CorruptCheckpointError as e:
            bad.append(str(e))
    pair = latest_pair(run_dir)
    return {"checkpoints": len(checkpoints), "corrupt": bad, "newest_pair": pair.updates if pair else None}


def soak(args) -> dict:
    run_dir = Path(args.run_dir or tempfile.mkdtemp(prefix="soak-", dir="runs" if Path("runs").is_dir() else None))
    store_dir = Path(tempfile.mkdtemp(prefix="soak-redis-"))
    redis = Redis(store_dir)
    os.environ["SELFPLAY_REDIS_PASSWORD"] = redis.password  # the replicas' store client reads it
    try:
        config = resolve(args.game, args.preset, [*SETTINGS, f"oracle.store={redis.url}", *args.set])
        config, run_dir = prepare_run_dir(config, run_dir, None)
        # Logical CPUs for every role at once (2 actors, learner, oracle replica, evaluator);
        # they share the machine's cores.
        start_ray(None, num_cpus=SOAK_CPUS)
        from launch.train import Run  # after Ray: its actors' classes need a live Ray to register

        run = Run(config, run_dir, wandb_mode="disabled", resume=False, fixed_cluster=True)
        watch = MemoryWatch(min(BASELINE_SECONDS, args.minutes * 60 / 4))
        injector = Injector(run, redis, args.fault_every, args.seed)
        watch.start()
        injector.start()
        began = time.monotonic()
        try:
            last = run.run(minutes=args.minutes)
            injector.done.set()
            end_memory = memory_by_role()
            counted = run.counters.rows
            given = sum(s.total_added for s in run.replay.stats())
        finally:
            injector.done.set()
            watch.done.set()
            run.close()
        out = {"minutes": args.minutes, "fault_every_s": args.fault_every, "wall_s": round(time.monotonic() - began),
               "run_dir": str(run_dir), "completed": bool(last.get("end")), "updates": last["updates"],
               "faults_injected": len(injector.injected), "injected_by_kind": _by_kind(injector.injected),
               "injection_errors": injector.errors,
               "faults_counted": {k.removeprefix("faults/"): v for k, v in last.items()
                                  if k.startswith("faults/") and k.endswith("_total")},
               "rows_counted": counted, "rows_in_replay_history": given, "rows_lost": counted - given,
               "rows_lost_counted": last.get("faults/replay_rows_lost_total"),
               "memory": memory_check(watch.baseline, end_memory), "checkpoints": checkpoints_check(run_dir)}
        out["resume"] = resume_check(run_dir)
        return out
    finally:
        redis.kill()
        shutil.rmtree(store_dir, ignore_errors=True)


def _by_kind(injected: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for item in injected:
        counts[item["fault"]] = counts.get(item["fault"], 0) + 1
    return counts


def resume_check(run_dir: Path) -> dict:
    """Resume the soaked run for one more iteration: it must start from the newest pair."""
    from launch.train import Run

    pair = latest_pair(run_dir)
    config = resumed_config(run_dir)
    run = Run(config, run_dir, wandb_mode="disabled", resume=True, fixed_cluster=True)
    try:
        started = run.counters.updates
        last = run.run(updates=started + config.updates_per_iteration)
    finally:
        run.close()
    return {"from_pair": pair.updates if pair else None, "started_at": started, "ended_at": last["updates"],
            "ok": pair is not None and started == pair.updates and last["updates"] > started}


def verdict(out: dict) -> list[str]:
    problems = []
    if not out["completed"]:
        problems.append("the run did not complete")
    if out["rows_lost"] != out["rows_lost_counted"]:
        problems.append(f"{out['rows_lost']} rows lost, {out['rows_lost_counted']} counted lost")
    if out["memory"]["over"]:
        problems.append(f"memory beyond {MEMORY_TOLERANCE:.0%} of its baseline: {out['memory']['over']}")
    if out["checkpoints"]["corrupt"] or out["checkpoints"]["newest_pair"] is None:
        problems.append(f"checkpoints: {out['checkpoints']}")
    if not out["resume"]["ok"]:
        problems.append(f"resume: {out['resume']}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m launch.soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, required=True, help="training time (evaluations not counted)")
    p.add_argument("--fault-every", type=float, default=120.0, help="seconds between faults")
    p.add_argument("--game", default="connect4")
    p.add_argument("--preset", default="small")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override; repeatable")
    p.add_argument("--run-dir")
    p.add_argument("--seed", type=int, default=0, help="of the fault sequence")
    args = p.parse_args(argv)
    out = soak(args)
    out["problems"] = verdict(out)
    print("SOAK " + json.dumps(out), flush=True)
    return 1 if out["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
