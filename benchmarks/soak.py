"""A soak: one training run on embedded Ray for a given time, with a random fault every
N seconds, then the checks below (docs/cluster.md gives measured soaks), printed as one JSON line.

    python -m benchmarks.soak --minutes 30 --fault-every 120 [--game connect4] [--run-dir DIR] [--hosts N]

Faults, one at random each time (hard kills, Ray restarts the process): a self-play
actor, a replay shard, the learner, an oracle replica, the Redis store of solved
positions (its server SIGKILLed, started again 5 s later on the same port and data).

``--hosts N`` (N >= 2) runs on a multi-node Ray on this machine
(``ray.cluster_utils.Cluster``, :class:`Hosts`) instead of the embedded one: a head
declaring ``learner``, ``replay`` and ``oracle`` (the learner, the replay shards, the
oracle replica; the evaluator and the driver are there too) and N-1 hosts declaring
``actor``, each with CPUs enough for the self-play actors of a lost one
(``launch/placement.py`` confines each role by these resources). The faults then include
a whole ``host``: the node running a live self-play actor (or, with none, a random
host) is killed hard, every process of it (raylet, object store, workers), and 15 s
later a fresh node with the same resources joins (the host coming back). The head is
never lost: without GCS fault tolerance (an external Redis for the GCS), losing the head
ends any Ray cluster, so it is no fault a run could survive. Health checks are shortened
(:data:`HEALTH`) so that Ray notices a lost node in seconds. The local cluster
(``deploy/local-cluster/check.sh``) loses a host of a real ``ray up`` cluster.

Checks at the end: the run spent its budget; the rows lost equal the rows counted lost
(rows the run counted inserted, minus the rows the shards say they were ever given, is
``faults/replay_rows_lost_total``); memory against the sample after the first 5 minutes
(or the first quarter of a shorter soak): no role's RSS summed over its processes grew by
more than 20%, every role has as many processes at the end, and every process that lived
through is within 20% of itself both ways (:func:`memory_check`, :func:`lasting_check`);
every checkpoint verifies and the newest snapshot/checkpoint pair is complete; a resume
continues from the last pair. Exit status 1 when a check fails.

Memory with ``--hosts``: every node's processes are the driver's descendants (Cluster
starts each node's raylet, whose children are that node's workers and agents), so a role
sums over all nodes (N raylets, N dashboard agents, the self-play workers wherever they
run). A lost host's processes are all killed with it, its workers included (workers
whose raylet had died were seen still running minutes later, holding memory outside
the driver's tree, uncounted), and its raylet is reaped (``remove_node`` waits for it), so no
orphan or zombie is counted; the host that returns brings back one raylet and its agents,
and the self-play actors restart on whichever hosts have room, so each role has the same
processes at the end as at the baseline. The evaluator goes to the head, with the
replay shards (``launch/placement.py``), so a lost host never takes it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import ray
from ray._private import ray_constants

from launch.config import resolve
from launch.run_dir import prepare_run_dir, resumed_config
from launch.run_store import latest_pair
from learner.checkpoint import CorruptCheckpointError, list_checkpoints, verify_checkpoint
from lifecycle.ray_start import start_ray

FAULTS = ("actor", "replay", "learner", "oracle", "redis")
HOST_FAULT = "host"
HOST_DOWN_S = 15.0  # from a host's loss to a fresh node joining in its place
HEAD_CPUS = 3  # the learner's and the oracle replica's CPU, and one spare (the evaluator asks none)
STORE = 200 * 1024 * 1024  # object store of each node of --hosts
# Ray notices a lost node after ~3 s (3 missed checks of 1 s) rather than the default ~16 s.
HEALTH = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000, "health_check_timeout_ms": 1000,
          "health_check_failure_threshold": 3}
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

    def stored(self) -> dict | None:
        """The positions the store holds (keys) and their bytes (Redis's
        ``used_memory_dataset``), or None while the server is down."""
        import redis

        try:
            client = redis.Redis(port=self.port, password=self.password, socket_timeout=5)
            return {"keys": client.dbsize(), "dataset_bytes": client.info("memory")["used_memory_dataset"]}
        except redis.RedisError:
            return None

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
    """The role of a Ray process: a worker's title ``ray::ClassName...`` (``ray::name:ClassName...``
    while a named actor starts), or Ray's daemons."""
    if cmdline.startswith("ray::"):
        return cmdline[5:].split(" ")[0].rsplit(":", 1)[-1].split(".")[0]
    program = cmdline.split(" ")[0]
    return next((name for name in ("raylet", "gcs_server", "redis-server") if program.endswith(name)), None)


class MemorySample(NamedTuple):
    """One look at the run's processes: RSS summed per role, and each process's."""

    by_role: dict[str, int]  # role -> RSS bytes summed over its processes
    processes: dict[str, str]  # "pid@start time" -> its role (a pid is reused, a start time not)
    rss: dict[str, int]  # "pid@start time" -> its RSS bytes

    def counts(self) -> dict[str, int]:
        """role -> how many processes it has."""
        out: dict[str, int] = {}
        for role in self.processes.values():
            out[role] = out.get(role, 0) + 1
        return out


def memory_sample() -> MemorySample:
    """RSS per role (summed) and per process over this process's descendants, and the driver's."""
    procs = _processes()
    me = f"{os.getpid()}@{_start_time(os.getpid())}"
    by_role, processes, rss = {"driver": procs.get(os.getpid(), (0, "", 0))[2]}, {me: "driver"}, {}
    rss[me] = by_role["driver"]
    for pid in _descendants(os.getpid(), procs):
        role = _role(procs[pid][1])
        if role is not None and role != "IDLE":
            by_role[role] = by_role.get(role, 0) + procs[pid][2]
            key = f"{pid}@{_start_time(pid)}"
            processes[key], rss[key] = role, procs[pid][2]
    return MemorySample(by_role, processes, rss)


def fault_kinds(hosts: int) -> tuple[str, ...]:
    """The faults the soak draws from: a whole host too where there are hosts to lose."""
    return (*FAULTS, HOST_FAULT) if hosts >= 2 else FAULTS


def host_cpus(hosts: int, num_actors: int, actor_cpus: float = 1) -> float:
    """The CPUs of each of ``hosts - 1`` actor hosts: while one is lost, the others take its
    self-play actors (all of them where there is one actor host: they wait for it to return)."""
    survivors = max(1, hosts - 2)
    return math.ceil(num_actors / survivors) * actor_cpus


def _start_time(pid: int) -> str | None:
    """The start time of ``pid`` (field 22 of /proc/pid/stat): a pid is reused, a start time not."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _descendants(root: int, procs: dict[int, tuple[int, str, int]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


class Hosts:
    """A multi-node Ray on this machine (``ray.cluster_utils.Cluster``): the head with the
    roles that are never lost, and ``hosts - 1`` actor hosts, one of which :meth:`lose`
    kills and brings back. Token auth stays off for this in-process cluster."""

    def __init__(self, hosts: int, num_actors: int):
        from ray.cluster_utils import Cluster

        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        _sigterm_handlers_from_main_thread_only()
        self.host_args = {"num_cpus": host_cpus(hosts, num_actors), "resources": {"actor": 1},
                          "object_store_memory": STORE}
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": HEAD_CPUS, "resources": {"learner": 1, "replay": 1, "oracle": 1}, "object_store_memory": STORE,
            "include_dashboard": False, "_system_config": HEALTH})
        # Every host is started by one thread that lives as long as the cluster: Ray starts
        # a node's processes to die with the thread that started them (PR_SET_PDEATHSIG),
        # so a host started by the injector's thread would die when that thread ends.
        self.starter = ThreadPoolExecutor(1, thread_name_prefix="soak-hosts")
        self.nodes = [self._add() for _ in range(hosts - 1)]
        start_ray(self.cluster.address)
        self.cluster.wait_for_nodes()
        self.lost: list[dict] = []

    def _add(self):
        return self.starter.submit(self.cluster.add_node, **self.host_args).result(timeout=300)

    def names(self) -> dict[str, str]:
        """node id -> ``head`` or ``host<i>`` (its slot; a host that returns keeps it)."""
        return {self.cluster.head_node.node_id: "head", **{n.node_id: f"host{i}" for i, n in enumerate(self.nodes)}}

    def placement(self) -> dict[str, list[str]]:
        """Where each live actor of the run is: class name -> the names of their nodes."""
        from ray._private import state  # the GCS's actor table (no dashboard needed)

        names, out = self.names(), {}
        for actor in state.actors().values():
            if actor["State"] == "ALIVE":
                out.setdefault(actor["ActorClassName"], []).append(names.get(actor["Address"]["NodeID"], "gone"))
        return {k: sorted(v) for k, v in sorted(out.items())}

    def choose(self, rng: random.Random) -> int:
        """The slot of the host to lose: one running a live self-play actor, else any."""
        from ray._private import state

        ids = {n.node_id: i for i, n in enumerate(self.nodes)}
        busy = sorted({ids[a["Address"]["NodeID"]] for a in state.actors().values()
                       if a["State"] == "ALIVE" and "SelfPlay" in a["ActorClassName"] and a["Address"]["NodeID"] in ids})
        return rng.choice(busy or list(range(len(self.nodes))))

    def lose(self, rng: random.Random) -> str:
        """Kill a host hard, every process of it, and 15 s later start a fresh one in its place."""
        slot = self.choose(rng)
        node = self.nodes[slot]
        began = time.monotonic()
        raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
        # Its workers are the raylet's children, which remove_node does not know: killed
        # here with it (a lost host loses them all), not left to exit when they notice.
        workers = [(pid, _start_time(pid)) for pid in _descendants(raylet, _processes())]
        self.cluster.remove_node(node, allow_graceful=False)
        for pid, started in workers:
            if started is not None and _start_time(pid) == started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        wait_until_dead(node.node_id)
        noticed = time.monotonic() - began
        time.sleep(max(0.0, HOST_DOWN_S - noticed))
        self.nodes[slot] = self._add()
        self.lost.append({"host": f"host{slot}", "processes_killed": 1 + len(workers),
                          "noticed_s": round(noticed, 1), "back_s": round(time.monotonic() - began, 1)})
        item = self.lost[-1]
        return f"host{slot}: {item['processes_killed']} processes, dead to Ray after {item['noticed_s']} s, " \
               f"back after {item['back_s']:.0f} s"

    def shutdown(self) -> None:
        ray.shutdown()
        self.cluster.shutdown()
        self.starter.shutdown()


def _sigterm_handlers_from_main_thread_only() -> None:
    """Let a thread other than the main one start a node (:class:`Hosts`): Ray's ``Node``
    sets a SIGTERM handler, which Python allows from the main thread only (elsewhere a
    ValueError, and no node). A node started from another thread sets none; the head's
    handler and every node's atexit hook stay, and the soak shuts its cluster down itself."""
    from ray._private import utils

    original = getattr(utils.set_sigterm_handler, "__wrapped__", utils.set_sigterm_handler)

    def set_sigterm_handler(handler):
        if threading.current_thread() is threading.main_thread():
            original(handler)

    set_sigterm_handler.__wrapped__ = original
    utils.set_sigterm_handler = set_sigterm_handler


def wait_until_dead(node_id: str, timeout: float = 60.0) -> None:
    """Block until Ray's health checks mark ``node_id`` dead (a killed node's processes may
    answer for a moment; tests/faults/fault_cluster.py waits with it too)."""
    deadline = time.monotonic() + timeout
    while any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"Ray still reports node {node_id} alive {timeout:.0f} s after it was killed")
        time.sleep(0.2)


class Injector(threading.Thread):
    """Every ``every`` seconds, one fault at random, recorded with its time."""

    def __init__(self, run, redis: Redis, every: float, seed: int, hosts: Hosts | None = None):
        super().__init__(daemon=True)
        self.run_, self.redis, self.every, self.hosts = run, redis, every, hosts
        self.kinds = fault_kinds(len(hosts.nodes) + 1 if hosts else 1)
        self.deck: list[str] = []
        self.rng, self.done = random.Random(seed), threading.Event()
        self.injected: list[dict] = []
        self.errors: list[str] = []

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(self.every):
            kind = self.next_kind()
            try:
                target = self.inject(kind)
            except Exception as e:  # noqa: BLE001 - an injection that failed is reported, not fatal
                self.errors.append(f"{kind}: {type(e).__name__}: {e}")
                continue
            self.injected.append({"at_s": round(time.monotonic() - start), "fault": kind, "target": target})
            print(f"soak: injected {kind} fault ({target})", flush=True)

    def next_kind(self) -> str:
        """A kind drawn at random; with hosts, dealt from a shuffled deck of all kinds (each
        once per round), so that a 10-minute soak with a fault a minute loses a host."""
        if self.hosts is None:
            return self.rng.choice(self.kinds)
        if not self.deck:
            self.deck = self.rng.sample(self.kinds, len(self.kinds))
        return self.deck.pop()

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
        if kind == HOST_FAULT:
            return self.hosts.lose(self.rng)
        self.redis.kill()
        time.sleep(5)
        self.redis.start()
        return f"redis-server :{self.redis.port}"


class MemoryWatch(threading.Thread):
    """Takes the baseline sample once ``baseline_s`` seconds have passed (looking every 15 s),
    then ends."""

    def __init__(self, baseline_s: float, stored=None):
        """``stored()``: the Redis store's keys and data bytes, sampled with the baseline."""
        super().__init__(daemon=True)
        self.baseline_s, self.done, self.stored = baseline_s, threading.Event(), stored
        self.baseline: MemorySample | None = None
        self.stored_baseline: dict | None = None

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(15):
            if self.baseline is None and time.monotonic() - start >= self.baseline_s:
                sample = memory_sample()
                stored = self.stored() if self.stored else None
                if self.stored and stored is None:
                    continue  # Redis is down (a fault): the next sample is the baseline
                self.baseline, self.stored_baseline = sample, stored
                return


def settled_sample(baseline: MemorySample | None, timeout: float = 60.0) -> MemorySample:
    """The end's sample, once every role has as many processes as at the baseline (an
    actor killed in the last seconds is still restarting), or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    wanted = baseline.counts() if baseline else {}
    while True:
        sample = memory_sample()
        have = sample.counts()
        if all(have.get(role, 0) >= n for role, n in wanted.items()) or time.monotonic() > deadline:
            return sample
        time.sleep(2)


def memory_check(baseline: dict[str, int] | None, end: dict[str, int],
                 data: dict[str, tuple[int, int]] | None = None, *,
                 counts: tuple[dict[str, int], dict[str, int]] | None = None) -> dict:
    """Each role's RSS (summed over its processes) at the end against the baseline (MiB and
    ratio). Named in "over": a role that grew beyond the tolerance (a leak), a role missing at
    the end, or one with fewer processes than at the baseline (``counts``: role -> processes
    at the baseline, at the end; a role that did not come back). A role whose memory fell
    beyond the tolerance is named in "fell", not a failure: a process replaced by a fault
    starts afresh (a raylet's RSS holds the high-water mark of the objects it has pulled).
    ``data``: role -> (bytes of data it stores at the baseline, at the end), for a store
    whose job is to grow (Redis, the solved positions): such a role is judged on its memory
    apart from its data ("ratio_apart_from_data")."""
    if not baseline:
        return {"over": ["no baseline sample was taken"]}
    roles, missing = {}, []
    for role, before in baseline.items():
        after = end.get(role)
        if after is None:
            missing.append(f"{role} (no process at the end)")
        elif before > 0:
            roles[role] = {"mib_baseline": round(before / 2**20, 1), "mib_end": round(after / 2**20, 1),
                           "ratio": round(after / before, 3)}
            apart = _apart_from_data(role, before, after, data)
            if apart is not None:
                held_before, held_after = data[role]
                roles[role].update(data_mib_baseline=round(held_before / 2**20, 2),
                                   data_mib_end=round(held_after / 2**20, 2),
                                   ratio_apart_from_data=round(apart[1] / apart[0], 3))
    if counts is not None:
        before_n, after_n = counts
        for role, n in before_n.items():
            if role in roles:
                roles[role].update(processes_baseline=n, processes_end=after_n.get(role, 0))
            if role in end and after_n.get(role, 0) < n:
                missing.append(f"{role} ({after_n.get(role, 0)} of {n} processes at the end)")
    judged = {r: v.get("ratio_apart_from_data", v["ratio"]) for r, v in roles.items()}
    over = [r for r, ratio in judged.items() if ratio > 1 + MEMORY_TOLERANCE]
    fell = [r for r, ratio in judged.items() if ratio < 1 - MEMORY_TOLERANCE]
    return {"roles": roles, "over": over + missing, "fell": fell}


def _apart_from_data(role: str, before: int, after: int, data: dict[str, tuple[int, int]] | None):
    """``(before, after)`` less the data ``role`` stores at each point (``data``: role ->
    bytes of data at the baseline, at the end), or None for a role that stores none."""
    if data and role in data and before > data[role][0]:
        return before - data[role][0], after - data[role][1]
    return None


def lasting_check(baseline: MemorySample, end: MemorySample, data: dict[str, tuple[int, int]] | None = None) -> dict:
    """Every process alive at both points (the same pid and start time) against its own
    memory at the baseline, both ways: named in "over" beyond the tolerance. A store
    (``data``, as in :func:`memory_check`) is judged apart from its data."""
    over, lasting = [], 0
    for key, role in baseline.processes.items():
        if end.processes.get(key) != role or baseline.rss[key] <= 0:
            continue
        lasting += 1
        raw = baseline.rss[key], end.rss[key]
        before, after = _apart_from_data(role, *raw, data) or raw
        if abs(after / before - 1) > MEMORY_TOLERANCE:
            over.append(f"{role} {key.split('@')[0]}: x{after / before:.2f}")
    return {"processes": lasting, "over": over}


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
    hosts = None
    try:
        config = resolve(args.game, args.preset, [*SETTINGS, f"oracle.store={redis.url}", *args.set])
        config, run_dir = prepare_run_dir(config, run_dir, None)
        if args.hosts >= 2:
            hosts = Hosts(args.hosts, config.actors.num_actors)
        else:
            # Logical CPUs for every role at once (2 actors, learner, oracle replica,
            # evaluator); they share the machine's cores.
            start_ray(None, num_cpus=SOAK_CPUS)
        out = soaked(args, config, run_dir, redis, hosts)
        out["resume"] = resume_check(run_dir, fixed_cluster=hosts is None)
        return out
    finally:
        redis.kill()
        shutil.rmtree(store_dir, ignore_errors=True)
        if hosts is not None:
            hosts.shutdown()


def soaked(args, config, run_dir: Path, redis: Redis, hosts: Hosts | None) -> dict:
    """The run under faults, and what it counted (all but the resume)."""
    from launch.train import Run  # after Ray: its actors' classes need a live Ray to register

    run = Run(config, run_dir, wandb_mode="disabled", resume=False, fixed_cluster=hosts is None)
    watch = MemoryWatch(min(BASELINE_SECONDS, args.minutes * 60 / 4), stored=redis.stored)
    injector = Injector(run, redis, args.fault_every, args.seed, hosts)
    watch.start()
    injector.start()
    began = time.monotonic()
    try:
        last = run.run(train_minutes=args.minutes)
        injector.done.set()
        injector.join()  # a host fault under way ends with its host back
        end_memory, stored_end = settled_sample(watch.baseline), redis.stored()
        counted = run.counters.rows
        given = sum(s.total_added for s in run.replay.stats())
        placement = hosts.placement() if hosts else None
    finally:
        injector.done.set()
        watch.done.set()
        run.close()
    out = {"minutes": args.minutes, "fault_every_s": args.fault_every, "hosts": args.hosts,
           "wall_s": round(time.monotonic() - began), "run_dir": str(run_dir), "completed": bool(last.get("end")),
           "updates": last["updates"], "faults_injected": len(injector.injected),
           "injected_by_kind": _by_kind(injector.injected), "injected": injector.injected,
           "injection_errors": injector.errors,
           "faults_counted": {k.removeprefix("faults/"): v for k, v in last.items()
                              if k.startswith("faults/") and k.endswith("_total")},
           "rows_counted": counted, "rows_in_replay_history": given, "rows_lost": counted - given,
           "rows_lost_counted": last.get("faults/replay_rows_lost_total"),
           "memory": _memory(watch.baseline, end_memory, _store_data(watch.stored_baseline, stored_end)),
           "store": {"baseline": watch.stored_baseline, "end": stored_end}, "checkpoints": checkpoints_check(run_dir)}
    if hosts is not None:
        out["hosts_lost"], out["placement_end"] = hosts.lost, placement
    return out


def _memory(baseline: MemorySample | None, end: MemorySample, data) -> dict:
    """memory_check over the roles' sums, and lasting_check over the processes that lived through."""
    if baseline is None:
        return memory_check(None, end.by_role)
    out = memory_check(baseline.by_role, end.by_role, data, counts=(baseline.counts(), end.counts()))
    out["lasting"] = lasting_check(baseline, end, data)
    out["over"] = out["over"] + out["lasting"]["over"]
    return out


def _store_data(baseline: dict | None, end: dict | None) -> dict[str, tuple[int, int]] | None:
    """The Redis store's data bytes at the baseline and the end, for ``memory_check``."""
    if baseline is None or end is None:
        return None
    return {"redis-server": (baseline["dataset_bytes"], end["dataset_bytes"])}


def _by_kind(injected: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for item in injected:
        counts[item["fault"]] = counts.get(item["fault"], 0) + 1
    return counts


def resume_check(run_dir: Path, fixed_cluster: bool = True) -> dict:
    """Resume the soaked run for one more iteration: it must start from the newest pair."""
    from launch.train import Run

    pair = latest_pair(run_dir)
    config = resumed_config(run_dir)
    run = Run(config, run_dir, wandb_mode="disabled", resume=True, fixed_cluster=fixed_cluster)
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
        problems.append(f"memory beyond {MEMORY_TOLERANCE:.0%} of its baseline, or a role missing: {out['memory']['over']}")
    if out["checkpoints"]["corrupt"] or out["checkpoints"]["newest_pair"] is None:
        problems.append(f"checkpoints: {out['checkpoints']}")
    if not out["resume"]["ok"]:
        problems.append(f"resume: {out['resume']}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, required=True, help="training time (evaluations not counted)")
    p.add_argument("--fault-every", type=float, default=120.0, help="seconds between faults")
    p.add_argument("--game", default="connect4")
    p.add_argument("--preset", default="small")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override; repeatable")
    p.add_argument("--run-dir")
    p.add_argument("--seed", type=int, default=0, help="of the fault sequence")
    p.add_argument("--hosts", type=int, default=1,
                   help="Ray nodes on this machine: 1 = embedded Ray; N >= 2 = a head and N-1 actor hosts, "
                        "and a whole host among the faults")
    args = p.parse_args(argv)
    out = soak(args)
    out["problems"] = verdict(out)
    print("SOAK " + json.dumps(out), flush=True)
    return 1 if out["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
