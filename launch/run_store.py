"""What a run keeps so that ``--resume`` can continue it: a replay snapshot and a
checkpoint of one moment, committed as one pair, and the newest whole pair read back.

A pair is committed in three writes: the shards snapshot into their own directory
``replay/pair-<updates>/``, the checkpoint ``checkpoints/ckpt-<updates>.pt`` is written
(``learner/checkpoint.py``: atomic, with its SHA-256 beside it), and last a manifest
``checkpoints/pair-<updates>.json`` naming both, with their SHA-256, is written
atomically and durably. A crash before the manifest leaves the previous pair whole, so
``--resume`` takes the newest manifest whose files all verify and never pairs a learner
with a replay of another moment. A committed pair's snapshot files then become the live
ones (``replay/<shard>.parquet``) that a restarting shard reloads, and old pairs are
pruned with old checkpoints. A run directory written before pairs (no manifest) resumes
from its newest good checkpoint and the live snapshots.

The locations are those of the run's storage (``storage``): a path or an object
store's URI.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import storage
from launch.config import ConfigError
from launch.restarts import replay_call
from launch.run_dir import run_location
from learner.checkpoint import (
    CorruptCheckpointError,
    RunCheckpoint,
    checkpoint_path,
    latest_checkpoint,
    load_run_checkpoint,
    prune,
    recorded_sha256,
    save_run_checkpoint,
    verify_checkpoint,
)

log = logging.getLogger(__name__)

PAIR_NAME = re.compile(r"pair-(\d{9,})\.json")


@dataclass(frozen=True)
class Pair:
    """A committed pair: its manifest, its checkpoint and its replay snapshot directory."""

    manifest: Path | str
    updates: int
    checkpoint: Path | str
    replay_dir: Path | str


@dataclass(frozen=True)
class Saved:
    """The moment ``--resume`` continues from: the checkpoint read back, its location, the
    replay snapshot directory of the same moment and the pair naming both (None for a run
    directory from before pairs)."""

    checkpoint: RunCheckpoint
    path: Path | str
    replay_dir: Path | str
    pair: Pair | None


class RunStore:
    """The run directory's pairs: :meth:`commit` one, :meth:`newest` to resume from it."""

    def __init__(self, run_dir, replay, keep: int, keep_every: int = 0):
        self.run_dir, self.replay, self.keep, self.keep_every = run_location(run_dir), replay, keep, keep_every

    def commit(self, updates: int, checkpoint_of: Callable[[], RunCheckpoint]):
        """Snapshot the replay into the pair of ``updates``, write ``checkpoint_of()``
        (called after the snapshot, so that the learner's state is of the same moment) and
        the manifest naming both; make the pair's snapshots the live ones and prune old
        pairs. Returns the checkpoint's location."""
        replay_dir = pair_replay_dir(self.run_dir, updates)
        snapshots = replay_call(lambda: self.replay.snapshot(str(replay_dir)))
        checkpoint = checkpoint_of()
        checkpoints = storage.join(self.run_dir, "checkpoints")
        # Named by the checkpoint's own counters: those of the learner's state, which a
        # learner restarted during checkpoint_of() took back to its newest checkpoint.
        path = save_run_checkpoint(checkpoint_path(checkpoints, checkpoint.counters["updates"]), checkpoint)
        manifest = commit_pair(self.run_dir, updates, path, snapshots)
        self._make_live(Pair(manifest, updates, path, replay_dir))
        prune(checkpoints, keep=self.keep, every=self.keep_every)  # the pairs' snapshots: the newest alone
        prune_pairs(self.run_dir, keep=self.keep)
        return path

    def newest(self) -> Saved:
        """The newest pair whose files all verify, read back; a run directory from before
        pairs gives its newest good checkpoint and the live snapshots. ``ConfigError``
        when there is no checkpoint to resume from."""
        pair = latest_pair(self.run_dir)
        if pair is not None:
            path, replay_dir = pair.checkpoint, pair.replay_dir
        else:
            if list_pairs(self.run_dir):
                print(f"--resume {self.run_dir}: no snapshot/checkpoint pair verifies; falling back to the "
                      f"newest checkpoint and the live replay snapshots, which may be of different moments")
            path = latest_checkpoint(storage.join(self.run_dir, "checkpoints"))
            replay_dir = storage.join(self.run_dir, "replay")
        if path is None:
            raise ConfigError(f"--resume {self.run_dir}: no readable checkpoint in "
                              f"{storage.join(self.run_dir, 'checkpoints')}")
        return Saved(load_run_checkpoint(path), path, replay_dir, pair)

    def restore_replay(self, saved: Saved) -> None:
        """The shards back at ``saved``'s snapshot. They reloaded the live snapshots when
        they started; restoring again makes a missing or foreign snapshot an error here
        rather than an empty buffer."""
        self.replay.restore(str(saved.replay_dir))
        if saved.pair is not None:
            self._make_live(saved.pair)

    def _make_live(self, pair: Pair) -> None:
        live = self.replay.snapshot_dir
        shards = [f"{self.replay.name}-shard-{i}" for i in range(self.replay.num_shards)]
        publish_snapshots(pair, [storage.join(live, f"{shard}.parquet") for shard in shards])


def pair_replay_dir(run_dir, updates: int):
    """Where the shards write the replay snapshot of the pair of ``updates`` updates."""
    return storage.join(run_location(run_dir), "replay", f"pair-{int(updates):09d}")


def _manifest_path(run_dir, updates: int):
    return storage.join(run_location(run_dir), "checkpoints", f"pair-{int(updates):09d}.json")


def _outside(files, directory) -> list[str]:
    """Those of ``files`` that are not inside ``directory``."""
    if storage.is_remote(directory):
        return [str(f) for f in files if str(f).rsplit("/", 1)[0] != str(directory).rstrip("/")]
    return [str(f) for f in files if Path(f).parent.resolve() != Path(directory).resolve()]


def commit_pair(run_dir, updates: int, checkpoint, snapshots):
    """Write the manifest naming ``checkpoint`` and the replay ``snapshots`` (files inside
    :func:`pair_replay_dir`), atomically and durably: the pair exists once this returns,
    and not at all before. The checkpoint's SHA-256 is the one written beside it."""
    run_dir = run_location(run_dir)
    files = [run_location(s) for s in snapshots]
    outside = _outside(files, pair_replay_dir(run_dir, updates))
    if outside:
        raise ValueError(f"commit_pair: snapshots {outside} are not in {pair_replay_dir(run_dir, updates)}")
    manifest = {
        "updates": int(updates),
        "checkpoint": {"name": storage.basename(checkpoint), "sha256": recorded_sha256(checkpoint)},
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


def check_lengthens(run_dir, updates: int | None) -> None:
    """``--updates`` on ``--resume`` is the run's total: more than its newest pair's."""
    pairs = list_pairs(run_location(run_dir)) if updates is not None else []
    done = int(PAIR_NAME.fullmatch(storage.basename(pairs[0])).group(1)) if pairs else 0
    if updates is not None and updates <= done:
        raise ConfigError(f"--updates {updates} is the run's total, and {run_dir} holds {done:,} updates already: "
                          f"give more to lengthen it (--updates N, N > {done}), or --minutes M")
