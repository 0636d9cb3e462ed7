"""The run directory: ``config.json``, ``metrics.jsonl``, ``checkpoints/``, ``replay/``
snapshots and ``plots/``. A new run gets a fresh directory with its resolved config; a
resumed run keeps the config it was started with."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from launch.config import ConfigError, TrainConfig
from learner.checkpoint import CorruptCheckpointError, fsync_directory, verify_checkpoint, write_temporary

log = logging.getLogger(__name__)

SUBDIRECTORIES = ("checkpoints", "replay", "plots")


def resumed_config(run_dir, *, algo: str | None = None, game: str | None = None,
                   game_params: dict | None = None) -> TrainConfig:
    """The config of the run in ``run_dir``, which must train ``algo`` on ``game`` with
    ``game_params`` where they are given."""
    saved_path = Path(run_dir) / "config.json"
    if not saved_path.exists():
        raise ConfigError(f"--resume {run_dir}: no config.json there, not a run directory")
    saved = TrainConfig.from_dict(json.loads(saved_path.read_text()))
    wanted = (algo or saved.algo, game or saved.game, saved.game_params if game_params is None else game_params)
    if (saved.algo, saved.game, saved.game_params) != wanted:
        raise ConfigError(f"--resume {run_dir}: that run trains {saved.algo} on {saved.game} "
                          f"{saved.game_params or ''}, "
                          f"not {wanted[0]} on {wanted[1]} {wanted[2] or ''}")
    return saved


def new_run_dir(config: TrainConfig, run_dir=None) -> Path:
    """A fresh run directory holding ``config.json`` (by default under ``runs/``, named by
    algorithm, game, time and seed); one that already holds a run is refused."""
    if run_dir is None:
        run_dir = Path("runs") / f"{config.algo}-{config.game}-{time.strftime('%Y%m%d-%H%M%S')}-s{config.seed}"
    run_dir = Path(run_dir)
    if (run_dir / "config.json").exists():
        raise ConfigError(f"--run-dir {run_dir} already holds a run; use --resume {run_dir} to continue it")
    for name in SUBDIRECTORIES:
        (run_dir / name).mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(config.to_json())
    return run_dir


def prepare_run_dir(config: TrainConfig, run_dir, resume) -> tuple[TrainConfig, Path]:
    """The config to run and its directory: ``resume``'s own config (of the same algorithm
    and game as ``config``), or ``config`` in a new directory."""
    if resume is not None:
        return resumed_config(resume, algo=config.algo, game=config.game, game_params=config.game_params), Path(resume)
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

    manifest: Path
    updates: int
    checkpoint: Path
    replay_dir: Path


def pair_replay_dir(run_dir, updates: int) -> Path:
    """Where the shards write the replay snapshot of the pair of ``updates`` updates."""
    return Path(run_dir) / "replay" / f"pair-{int(updates):09d}"


def _manifest_path(run_dir, updates: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"pair-{int(updates):09d}.json"


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def commit_pair(run_dir, updates: int, checkpoint, snapshots) -> Path:
    """Write the manifest naming ``checkpoint`` and the replay ``snapshots`` (files inside
    :func:`pair_replay_dir`), atomically and durably: the pair exists once this returns,
    and not at all before the final rename."""
    run_dir, checkpoint = Path(run_dir), Path(checkpoint)
    files = [Path(s) for s in snapshots]
    outside = [str(f) for f in files if f.parent.resolve() != pair_replay_dir(run_dir, updates).resolve()]
    if outside:
        raise ValueError(f"commit_pair: snapshots {outside} are not in {pair_replay_dir(run_dir, updates)}")
    manifest = {
        "updates": int(updates),
        "checkpoint": {"name": checkpoint.name, "sha256": _sha256(checkpoint)},
        "replay_dir": pair_replay_dir(run_dir, updates).name,
        "snapshots": [{"name": f.name, "sha256": _sha256(f), "bytes": f.stat().st_size} for f in files],
    }
    path = _manifest_path(run_dir, updates)
    data = (json.dumps(manifest, indent=1) + "\n").encode()
    tmp = write_temporary(path.parent, f".{path.name}.", lambda f: f.write(data))
    os.replace(tmp, path)
    fsync_directory(path.parent)
    return path


def _check_pair(run_dir: Path, manifest_path: Path) -> Pair:
    """The pair of ``manifest_path``; ``CorruptCheckpointError`` naming what is missing or
    does not match its recorded SHA-256."""
    try:
        manifest = json.loads(manifest_path.read_text())
        checkpoint = run_dir / "checkpoints" / manifest["checkpoint"]["name"]
        replay_dir = run_dir / "replay" / manifest["replay_dir"]
        expected = [(checkpoint, manifest["checkpoint"]["sha256"])]
        expected += [(replay_dir / s["name"], s["sha256"]) for s in manifest["snapshots"]]
        updates = int(manifest["updates"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CorruptCheckpointError(f"pair manifest {manifest_path}: unreadable ({type(e).__name__}: {e})") from e
    for path, sha in expected:
        if not path.is_file():
            raise CorruptCheckpointError(f"pair manifest {manifest_path}: {path} is missing")
        if _sha256(path) != sha:
            raise CorruptCheckpointError(f"pair manifest {manifest_path}: {path} does not match its SHA-256")
    verify_checkpoint(checkpoint)
    return Pair(manifest_path, updates, checkpoint, replay_dir)


def list_pairs(run_dir) -> list[Path]:
    """Pair manifests of ``run_dir``, newest (most updates) first."""
    directory = Path(run_dir) / "checkpoints"
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := PAIR_NAME.fullmatch(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def latest_pair(run_dir) -> Pair | None:
    """The newest pair whose checkpoint and snapshots all verify; broken ones are skipped
    with a warning (a crash while writing falls back to the pair before)."""
    for manifest in list_pairs(run_dir):
        try:
            return _check_pair(Path(run_dir), manifest)
        except CorruptCheckpointError as e:
            log.warning("skipping incomplete snapshot/checkpoint pair: %s", e)
    return None


def publish_snapshots(pair: Pair, live_paths) -> None:
    """Make the pair's snapshot files the ones a restarting shard reloads (``live_paths``,
    in shard order), each by an atomic rename of a hard link: a shard that restarts
    before the next checkpoint then comes back with the replay of the learner's moment."""
    files = sorted(pair.replay_dir.glob("*.parquet"))
    live_paths = [Path(p) for p in live_paths]
    names = {f.name: f for f in files}
    for live in live_paths:
        source = names.get(live.name)
        if source is None:
            raise CorruptCheckpointError(f"pair {pair.manifest}: no snapshot {live.name} in {pair.replay_dir}")
        tmp = live.with_name(f".{live.name}.link.tmp")
        tmp.unlink(missing_ok=True)
        os.link(source, tmp)
        os.replace(tmp, live)
    if live_paths:
        fsync_directory(live_paths[0].parent)


def prune_pairs(run_dir, keep: int) -> None:
    """Keep the ``keep`` newest pairs; remove older manifests, their snapshot directories,
    and snapshot directories no kept manifest names (left by a crash before a commit)."""
    run_dir = Path(run_dir)
    manifests = list_pairs(run_dir)
    for manifest in manifests[keep:]:
        manifest.unlink(missing_ok=True)
    kept = {pair_replay_dir(run_dir, int(PAIR_NAME.fullmatch(m.name).group(1))).name for m in manifests[:keep]}
    for directory in (run_dir / "replay").glob("pair-*"):
        if directory.is_dir() and directory.name not in kept:
            shutil.rmtree(directory, ignore_errors=True)
