"""The run directory: ``config.json``, ``metrics.jsonl``, ``checkpoints/``, ``replay/``
snapshots and ``plots/``. A new run gets a fresh directory with its resolved config; a
resumed run keeps the config it was started with.

The directory is a location of the run's storage (``storage``): a local or shared path,
or an object store's URI (``s3://bucket/run``), read and written the same way."""

from __future__ import annotations

import json
import logging
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import storage
from launch.config import ConfigError, TrainConfig
from learner.checkpoint import CorruptCheckpointError, verify_checkpoint

log = logging.getLogger(__name__)

SUBDIRECTORIES = ("checkpoints", "replay", "plots")


def read_run_config(run_dir) -> TrainConfig:
    """The config of the run in ``run_dir`` (a path or an object store's URI), read from
    its ``config.json``: the one reader of that file in the launcher. A config written
    before the roles owned their settings (flat keys such as ``lr``) reads with each key
    at its new place. (``evaluation``, below the launcher, reads the part it needs with
    ``evaluation.run_config.read_trained_with``.)"""
    path = storage.join(run_location(run_dir), "config.json")
    if not storage.exists(path):
        raise ConfigError(f"{run_dir}: no config.json there, not a run directory")
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
    """A fresh run directory holding ``config.json`` (by default under ``runs/``, named by
    algorithm, game, time and seed); one that already holds a run is refused."""
    if run_dir is None:
        run_dir = Path("runs") / f"{config.algo}-{config.game}-{time.strftime('%Y%m%d-%H%M%S')}-s{config.seed}"
    run_dir = run_location(run_dir)
    if storage.exists(storage.join(run_dir, "config.json")):
        raise ConfigError(f"--run-dir {run_dir} already holds a run; use --resume {run_dir} to continue it")
    for name in SUBDIRECTORIES:
        storage.makedirs(storage.join(run_dir, name))
    storage.write_atomic(storage.join(run_dir, "config.json"), config.to_json().encode())
    return run_dir


def prepare_run_dir(config: TrainConfig, run_dir, resume):
    """The config to run and its directory: ``resume``'s own config (of the same algorithm
    and game as ``config``), or ``config`` in a new directory."""
    if resume is not None:
        return (resumed_config(resume, algo=config.algo, game=config.game, game_params=config.game_params),
                run_location(resume))
    return config, new_run_dir(config, run_dir)


# ------------------------------------------------------------ snapshot + checkpoint pairs
#
# A replay snapshot and a learner checkpoint of one moment are committed as one pair: the
# shards snapshot into their own directory ``replay/pair-<updates>/``, the checkpoint is
# written, and last a manifest ``checkpoints/pair-<updates>.json`` naming both (with their
# SHA-256) is written to a temporary file, fsynced and renamed into place. A crash at any
# point before that rename leaves the previous pair intact and complete, so ``--resume``
# takes the newest manifest whose files all verify and never pairs a learner with a
# replay of another moment. Run directories written before pairs (no manifest) resume as
# before: the newest good checkpoint and the live snapshots in ``replay/``.

PAIR_NAME = re.compile(r"pair-(\d{9,})\.json")


@dataclass(frozen=True)
class Pair:
    """A committed pair: its manifest, its checkpoint and its replay snapshot directory."""

    manifest: Path | str  # locations of the run's storage
    updates: int
    checkpoint: Path | str
    replay_dir: Path | str


def pair_replay_dir(run_dir, updates: int):
    """Where the shards write the replay snapshot of the pair of ``updates`` updates."""
    return storage.join(run_location(run_dir), "replay", f"pair-{int(updates):09d}")


def _manifest_path(run_dir, updates: int):
    return storage.join(run_location(run_dir), "checkpoints", f"pair-{int(updates):09d}.json")


def _same_directory(files, directory) -> list[str]:
    """Those of ``files`` that are not inside ``directory``."""
    if storage.is_remote(directory):
        return [str(f) for f in files if str(f).rsplit("/", 1)[0] != str(directory).rstrip("/")]
    return [str(f) for f in files if Path(f).parent.resolve() != Path(directory).resolve()]


def commit_pair(run_dir, updates: int, checkpoint, snapshots):
    """Write the manifest naming ``checkpoint`` and the replay ``snapshots`` (files inside
    :func:`pair_replay_dir`), atomically and durably: the pair exists once this returns,
    and not at all before."""
    run_dir = run_location(run_dir)
    files = [run_location(s) for s in snapshots]
    outside = _same_directory(files, pair_replay_dir(run_dir, updates))
    if outside:
        raise ValueError(f"commit_pair: snapshots {outside} are not in {pair_replay_dir(run_dir, updates)}")
    manifest = {
        "updates": int(updates),
        "checkpoint": {"name": storage.basename(checkpoint), "sha256": storage.sha256(checkpoint)},
        "replay_dir": storage.basename(pair_replay_dir(run_dir, updates)),
        "snapshots": [{"name": storage.basename(f), "sha256": storage.sha256(f), "bytes": storage.size(f)}
                      for f in files],
    }
    path = _manifest_path(run_dir, updates)
    storage.write_atomic(path, (json.dumps(manifest, indent=1) + "\n").encode())
    return path


def _check_pair(run_dir, manifest_path) -> Pair:
    """The pair of ``manifest_path``; ``CorruptCheckpointError`` naming what is missing or
    does not match its recorded SHA-256. A storage that cannot be reached is no broken
    pair: its :class:`storage.StorageError` goes up."""
    try:
        manifest = json.loads(storage.read_text(manifest_path))
        checkpoint = storage.join(run_dir, "checkpoints", manifest["checkpoint"]["name"])
        replay_dir = storage.join(run_dir, "replay", manifest["replay_dir"])
        expected = [(checkpoint, manifest["checkpoint"]["sha256"])]
        expected += [(storage.join(replay_dir, s["name"]), s["sha256"]) for s in manifest["snapshots"]]
        updates = int(manifest["updates"])
    except storage.StorageError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CorruptCheckpointError(f"pair manifest {manifest_path}: unreadable ({type(e).__name__}: {e})") from e
    for path, sha in expected:
        if not storage.is_file(path):
            raise CorruptCheckpointError(f"pair manifest {manifest_path}: {path} is missing")
        if storage.sha256(path) != sha:
            raise CorruptCheckpointError(f"pair manifest {manifest_path}: {path} does not match its SHA-256")
    verify_checkpoint(checkpoint)
    return Pair(manifest_path, updates, checkpoint, replay_dir)


def list_pairs(run_dir) -> list:
    """Pair manifests of ``run_dir``, newest (most updates) first."""
    directory = storage.join(run_location(run_dir), "checkpoints")
    found = [(int(m.group(1)), name) for name in storage.listdir(directory) if (m := PAIR_NAME.fullmatch(name))]
    return [storage.join(directory, name) for _, name in sorted(found, reverse=True)]


def latest_pair(run_dir) -> Pair | None:
    """The newest pair whose checkpoint and snapshots all verify; broken ones are skipped
    with a warning (a crash while writing falls back to the pair before)."""
    for manifest in list_pairs(run_dir):
        try:
            return _check_pair(run_location(run_dir), manifest)
        except CorruptCheckpointError as e:
            log.warning("skipping incomplete snapshot/checkpoint pair: %s", e)
    return None


def publish_snapshots(pair: Pair, live_paths) -> None:
    """Make the pair's snapshot files the ones a restarting shard reloads (``live_paths``,
    in shard order), each replaced atomically (``storage.copy``: a hard link on a path): a
    shard that restarts before the next checkpoint then comes back with the replay of the
    learner's moment."""
    names = {name for name in storage.listdir(pair.replay_dir) if name.endswith(".parquet")}
    for live in map(run_location, live_paths):
        name = storage.basename(live)
        if name not in names:
            raise CorruptCheckpointError(f"pair {pair.manifest}: no snapshot {name} in {pair.replay_dir}")
        storage.copy(storage.join(pair.replay_dir, name), live)


def prune_pairs(run_dir, keep: int) -> None:
    """Keep the ``keep`` newest pairs; remove older manifests, their snapshot directories,
    and snapshot directories no kept manifest names (left by a crash before a commit)."""
    run_dir = run_location(run_dir)
    manifests = list_pairs(run_dir)
    for manifest in manifests[keep:]:
        storage.delete(manifest)
    kept = {storage.basename(pair_replay_dir(run_dir, int(PAIR_NAME.fullmatch(storage.basename(m)).group(1))))
            for m in manifests[:keep]}
    replay = storage.join(run_dir, "replay")
    for name in storage.listdir(replay):
        if name.startswith("pair-") and name not in kept and storage.is_dir(storage.join(replay, name)):
            storage.delete_tree(storage.join(replay, name))
