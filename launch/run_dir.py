"""The run directory: ``config.json``, ``metrics.jsonl``, ``checkpoints/``, ``replay/``
snapshots and ``plots/``. A new run gets a fresh directory with its resolved config; a
resumed run keeps the config it was started with. What is saved in it to resume from
(snapshot and checkpoint pairs) is ``launch/run_store.py``'s.

The directory is a location of the run's storage (``storage``): a local or shared path,
or an object store's URI (``s3://bucket/run``), read and written the same way."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import storage
from evaluation.run_config import CONFIG_FILE
from launch.config import ConfigError, TrainConfig, changed

SUBDIRECTORIES = ("checkpoints", "replay", "plots")
# What ``--set`` may change on ``--resume``: the bounds of the run's waits, which belong to the
# cluster it runs on (a new one after a lost head), not to what it trains. Its budget
# (--updates, --minutes, --train-minutes) is given anew at every start.
RESUME_SETTABLE = ("learner.wait_for_gpu_s", "learner.restart_wait_s", "storage_outage_s")
# The filesystems a path every node of a cluster sees may be on (an NFS or EFS mount, a
# Filestore share, a Kubernetes ReadWriteMany volume, a FUSE bucket mount).
NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "gpfs", "beegfs")
# Directories a cluster's nodes declare that every node mounts (deploy/: KubeRay's runs claim,
# the local check's shared directory), comma-separated.
SHARED_DIRS_ENV = "SELFPLAY_SHARED_DIRS"
# One JSON line per start and resume of the run: the commit and the machine it ran on, so
# that a result drawn from the run names where it came from (launch/results/record.py).
PROVENANCE_FILE = "provenance.jsonl"


def read_run_config(run_dir) -> TrainConfig:
    """The config of the run in ``run_dir`` (a path or an object store's URI), read from
    its ``config.json``: the one reader of that file in the launcher. A config written
    before the roles owned their settings (flat keys such as ``lr``) reads with each key
    at its new place. (``evaluation``, below the launcher, reads the part it needs with
    ``evaluation.run_config.read_trained_with``.)"""
    path = storage.join(run_location(run_dir), CONFIG_FILE)
    if not storage.exists(path):
        raise ConfigError(f"{run_dir}: no {CONFIG_FILE} there, not a run directory")
    try:
        return TrainConfig.from_dict(json.loads(storage.read_text(path)))
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: not JSON ({err})") from None
    except ConfigError as err:  # the field it names, and the file
        raise ConfigError(f"{path}: {err}") from None


def resumed_config(run_dir, *, algo: str | None = None, game: str | None = None,
                   game_params: dict | None = None) -> TrainConfig:
    """The config of the run in ``run_dir``, which must train ``algo`` on ``game`` with
    ``game_params`` where they are given."""
    try:
        saved = read_run_config(run_dir)
    except ConfigError as err:
        raise ConfigError(f"--resume {err}") from None
    wanted = (algo or saved.algo, game or saved.game, saved.game_params if game_params is None else game_params)
    if (saved.algo, saved.game, saved.game_params) != wanted:
        raise ConfigError(f"--resume {run_dir}: that run trains {saved.algo} on {saved.game} "
                          f"{saved.game_params or ''}, "
                          f"not {wanted[0]} on {wanted[1]} {wanted[2] or ''}")
    return saved


def run_location(run_dir):
    """``run_dir`` as a location of the run's storage: a Path, or an object store's URI."""
    return storage.location(run_dir)


def actor_log_dir(run_dir, name: str) -> Path:
    """Where each actor of the run ``name`` writes its log file: the run's ``logs/`` on a
    path; on each node's own temporary space when the run is on an object store, which
    has no appending."""
    if storage.is_remote(run_dir):
        return Path(tempfile.gettempdir()) / "selfplay-logs" / name
    return Path(run_dir) / "logs"


def new_run_dir(config: TrainConfig, run_dir=None):
    """A fresh run directory (by default under ``runs/``, named by algorithm, game, time and
    seed), whose ``config.json`` the run writes as it starts (:func:`write_run_config`); one
    that already holds a run is refused."""
    if run_dir is None:
        run_dir = Path("runs") / f"{config.algo}-{config.game}-{time.strftime('%Y%m%d-%H%M%S')}-s{config.seed}"
    run_dir = run_location(run_dir)
    if storage.exists(storage.join(run_dir, CONFIG_FILE)):
        raise ConfigError(f"--run-dir {run_dir} already holds a run; use --resume {run_dir} to continue it")
    for name in SUBDIRECTORIES:
        storage.makedirs(storage.join(run_dir, name))
    return run_dir


def write_run_config(run_dir, config: TrainConfig) -> None:
    """The run's ``config.json``: its config as it runs, every ``auto`` made concrete for
    the cluster, written once per start (a resume writes the bounds of its waits anew) by
    the run itself; :func:`read_run_config` reads it back."""
    storage.write_atomic(storage.join(run_location(run_dir), CONFIG_FILE), config.to_json().encode())


def prepare_run_dir(config: TrainConfig, run_dir, resume):
    """The config to run and its directory: ``resume``'s own config (of the same algorithm
    and game as ``config``) with ``config``'s :data:`RESUME_SETTABLE` settings, or ``config``
    in a new directory; either way the start is added to the run's provenance."""
    if resume is not None:
        saved = resumed_config(resume, algo=config.algo, game=config.game, game_params=config.game_params)
        config, run_dir = changed(saved, **{key: _get(config, key) for key in RESUME_SETTABLE}), run_location(resume)
    else:
        config, run_dir = config, new_run_dir(config, run_dir)
    record_start(run_dir, resumed=resume is not None)
    return config, run_dir


def _get(config, key: str):
    for part in key.split("."):
        config = getattr(config, part)
    return config


def resume_changes(run_dir, overrides: list[str]) -> list[str]:
    """The ``--set`` pairs ``overrides`` a resume of ``run_dir`` takes (those of
    :data:`RESUME_SETTABLE`); any other is refused, by its key."""
    refused = [item for item in overrides if item.partition("=")[0].strip() not in RESUME_SETTABLE]
    if refused:
        raise ConfigError(f"--set {', '.join(refused)} cannot change a resumed run; --resume {run_dir} keeps its "
                          f"config.json. A resume may lengthen the run (--updates, --minutes) and set "
                          f"{', '.join(RESUME_SETTABLE)}")
    return list(overrides)


def check_shared(run_dir, address: str | None, flag: str = "--run-dir") -> None:
    """A run on a cluster (``address``) keeps its directory where every node reads and
    writes it: a learner restarted on another node reads its checkpoints there, the head's
    replay shards write their snapshots. An object store's URI is, and so is a path on a
    network filesystem or under a directory the nodes declare shared
    (``$SELFPLAY_SHARED_DIRS``); a path on the driver's own disk is refused, naming the fix
    (``flag``: the option that gave ``run_dir``, ``--run-dir`` or ``--resume``)."""
    if address is None or (run_dir is not None and storage.is_remote(run_location(run_dir))):
        return
    if run_dir is not None:
        path = Path(run_dir).resolve()
        declared = [Path(d.strip()).resolve() for d in os.environ.get(SHARED_DIRS_ENV, "").split(",") if d.strip()]
        if any(path == d or d in path.parents for d in declared) or _filesystem(path) in NETWORK_FILESYSTEMS \
                or _filesystem(path).startswith("fuse."):
            return
    where = f"{flag} {run_dir} is on the driver's own disk ({_filesystem(Path(run_dir).resolve())})" \
        if run_dir is not None else "no --run-dir: the default (runs/...) is on the driver's own disk"
    raise ConfigError(f"{where}, and --address {address} runs on a cluster whose other nodes do not see it (a "
                      f"learner restarted there could not read its checkpoints): give an object store's URI "
                      f"(--run-dir s3://BUCKET/RUN, gs://BUCKET/RUN) or a path on a filesystem every node mounts "
                      f"(NFS, EFS, Filestore, a ReadWriteMany volume; or a directory listed in ${SHARED_DIRS_ENV})")


def _filesystem(path: Path, mounts: str = "/proc/mounts") -> str:
    """The type of the filesystem ``path`` is on (its longest mount point), or ``unknown``."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return "unknown"
    best, kind = -1, "unknown"
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(fields[1].replace("\\040", " "))
        if (point == path or point in path.parents) and len(point.parts) > best:
            best, kind = len(point.parts), fields[2]
    return kind


def record_start(run_dir, *, resumed: bool) -> None:
    """Append this start of the run to its provenance file (a whole rewrite: an object
    store has no appending, and the file is a line per start)."""
    from evaluation.datasets import code_version
    from inference.machine import describe_machine

    path = storage.join(run_dir, PROVENANCE_FILE)
    before = storage.read_text(path) if storage.exists(path) else ""
    line = json.dumps({"time": time.time(), "resumed": resumed, "commit": code_version(),
                       "machine": describe_machine()}, sort_keys=True)
    storage.write_atomic(path, (before + line + "\n").encode())


def read_provenance(run_dir) -> list[dict]:
    """The run's starts, oldest first ([] for a run without a provenance file)."""
    path = storage.join(run_location(run_dir), PROVENANCE_FILE)
    if not storage.exists(path):
        return []
    return [json.loads(line) for line in storage.read_text(path).splitlines() if line.strip()]
