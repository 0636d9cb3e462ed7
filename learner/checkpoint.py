"""Atomic, checksummed checkpoints, and finding the newest good one on resume.

A checkpoint ``ckpt-000001234.pt`` (named by update count) is a ``torch.save`` file
with a sidecar ``ckpt-000001234.pt.sha256`` in ``sha256sum`` format, so
``sha256sum -c`` checks it too. Both are written atomically through the run's storage
(``storage``: a local path or an object store's URI), the checksum first: a file under
a checkpoint's final name always has its checksum beside it, and a crash leaves at most
a stray temporary file or checksum, never a partial checkpoint.

Loading uses ``torch.load(weights_only=True)``, which refuses arbitrary pickled
objects; a payload may therefore hold only tensors, Python numbers, strings, bytes,
None, and lists, tuples and dicts of these (RNG states as tensors or plain dicts of
ints, as ``torch.get_rng_state()`` and ``Generator.bit_generator.state`` give).
:func:`save_checkpoint` checks that before writing anything.

A training run's checkpoint has one layout, :class:`RunCheckpoint`, written by the run
(``launch/train.py``) and read back by the restarted learner (``learner/actor.py``), by
``--resume`` and by evaluation (``evaluation/checkpoints.py``) through
:func:`save_run_checkpoint` and :func:`load_run_checkpoint`.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from dataclasses import dataclass, fields
from pathlib import Path

import torch

import storage

log = logging.getLogger(__name__)

CHECKPOINT_NAME = re.compile(r"ckpt-(\d{9,})\.pt")
_ALLOWED_LEAVES = (torch.Tensor, int, float, str, bytes, type(None))  # bool is an int


class CorruptCheckpointError(RuntimeError):
    """A checkpoint file that is missing its checksum, fails it, or cannot be read."""


def checkpoint_path(directory, updates: int):
    """Where the checkpoint after ``updates`` updates lives in ``directory`` (a path or a
    URI of the run's storage, ``storage``)."""
    return storage.join(directory, f"ckpt-{int(updates):09d}.pt")


def _checksum_path(path):
    return path.with_name(path.name + ".sha256") if isinstance(path, Path) else f"{path}.sha256"


def _check_payload(obj, where: str) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"{where}: key {k!r} is a {type(k).__name__}; checkpoint keys must be str or int")
            _check_payload(v, f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _check_payload(v, f"{where}[{i}]")
    elif not isinstance(obj, _ALLOWED_LEAVES):
        raise TypeError(f"{where} is a {type(obj).__module__}.{type(obj).__name__}, which "
                        f"torch.load(weights_only=True) refuses; store tensors, numbers, strings, "
                        f"lists and dicts only")


def save_checkpoint(path, payload: dict):
    """Write ``payload`` to ``path`` atomically, with its SHA-256 beside it (the checksum
    first: a checkpoint under its final name always has its checksum)."""
    path = _location(path)
    if not isinstance(payload, dict):
        raise TypeError(f"checkpoint {path}: payload must be a dict, got {type(payload).__name__}")
    _check_payload(payload, f"checkpoint {path}: payload")
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    name = storage.basename(path)
    storage.write_atomic(_checksum_path(path), f"{hashlib.sha256(data).hexdigest()}  {name}\n".encode())
    storage.write_atomic(path, data)
    return path


def _location(path):
    return path if storage.is_remote(path) else Path(path)


def verify_checkpoint(path) -> None:
    """Raise :class:`CorruptCheckpointError` unless ``path`` matches its checksum."""
    path = _location(path)
    if not storage.is_file(path):
        raise CorruptCheckpointError(f"checkpoint {path}: file not found")
    expected = recorded_sha256(path)
    actual = storage.sha256(path)
    if actual != expected:
        raise CorruptCheckpointError(
            f"checkpoint {path}: SHA-256 mismatch (file {actual[:16]}..., {storage.size(path)} bytes; "
            f"{storage.basename(_checksum_path(path))} says {expected[:16]}...): the file is truncated or corrupt")


def recorded_sha256(path) -> str:
    """The SHA-256 written beside the checkpoint at ``path`` when it was saved (read, not
    computed: the checkpoint itself is not read); :class:`CorruptCheckpointError` when
    there is no readable checksum file."""
    checksum = _checksum_path(_location(path))
    try:
        return storage.read_text(checksum).split()[0]
    except (FileNotFoundError, IndexError, UnicodeDecodeError) as e:
        raise CorruptCheckpointError(f"checkpoint {path}: no readable checksum file "
                                     f"{storage.basename(checksum)} ({e!r})") from e


def load_checkpoint(path, map_location="cpu") -> dict:
    """The payload saved at ``path``, after checking its checksum."""
    path = _location(path)
    verify_checkpoint(path)
    source = io.BytesIO(storage.read_bytes(path)) if storage.is_remote(path) else path
    try:
        return torch.load(source, map_location=map_location, weights_only=True)
    except Exception as e:  # a file that passed its checksum but is no checkpoint
        raise CorruptCheckpointError(f"checkpoint {path}: cannot be loaded ({type(e).__name__}: {e})") from e


@dataclass(frozen=True)
class LearnerState:
    """The learner actor's resumable state."""

    learner: dict  # Learner.state_dict(): weights, optimizer, counters, random states
    sampler_rng: dict  # its replay sampler's generator state


@dataclass(frozen=True)
class RunCheckpoint:
    """Everything ``--resume`` (and a restarted learner) needs to continue a run."""

    counters: dict  # the run's counters (launch.records.RunCounters as a dict)
    learner: LearnerState
    actors: list  # each self-play actor's get_state(), made loadable by launch.safe_tree.to_safe
    config: str  # the run's TrainConfig.to_json()
    faults: dict  # the run's fault totals (launch/faults.py); {} in checkpoints written before them

    def to_payload(self) -> dict:
        return {"counters": dict(self.counters), "actors": self.actors, "config": self.config,
                "faults": dict(self.faults),
                "learner": {"learner": self.learner.learner, "sampler_rng": self.learner.sampler_rng}}

    @classmethod
    def from_payload(cls, payload, path) -> "RunCheckpoint":
        """The record of a loaded ``payload``; :class:`CorruptCheckpointError` names the file
        and what is missing when it is not a run's checkpoint."""
        learner = payload.get("learner") if isinstance(payload, dict) else None
        if not isinstance(learner, dict) or not all(isinstance(learner.get(f.name), dict)
                                                    for f in fields(LearnerState)):
            keys = sorted(payload)[:6] if isinstance(payload, dict) else type(payload).__name__
            raise CorruptCheckpointError(f"checkpoint {path}: holds no learner state (keys {keys}); "
                                         f"is it a `python -m launch` training checkpoint?")
        missing = [f.name for f in fields(cls) if f.name not in payload and f.name != "faults"]
        if missing:
            raise CorruptCheckpointError(f"checkpoint {path}: holds no {', '.join(missing)}; "
                                         f"is it a `python -m launch` training checkpoint?")
        return cls(counters=payload["counters"], learner=LearnerState(learner["learner"], learner["sampler_rng"]),
                   actors=payload["actors"], config=payload["config"], faults=payload.get("faults", {}))


def save_run_checkpoint(path, checkpoint: RunCheckpoint) -> Path:
    return save_checkpoint(path, checkpoint.to_payload())


def load_run_checkpoint(path, map_location="cpu") -> RunCheckpoint:
    return RunCheckpoint.from_payload(load_checkpoint(path, map_location), path)


def _numbered_checkpoints(directory) -> list[tuple[int, object]]:
    """(updates, path) of each checkpoint file of ``directory``, newest (most updates) first."""
    found = [(int(m.group(1)), name) for name in storage.listdir(directory) if (m := CHECKPOINT_NAME.fullmatch(name))]
    return [(updates, storage.join(directory, name)) for updates, name in sorted(found, reverse=True)]


def list_checkpoints(directory) -> list:
    """Checkpoint files of ``directory`` (a path or a URI), newest (most updates) first."""
    return [path for _, path in _numbered_checkpoints(directory)]


def latest_checkpoint(directory):
    """The newest checkpoint of ``directory`` whose checksum holds; corrupt ones are
    skipped with a warning, so a crash while saving falls back to the one before.
    :class:`storage.StorageError` when the storage cannot be reached: a learner must not
    take an unreachable storage for an empty one."""
    for path in list_checkpoints(directory):
        try:
            verify_checkpoint(path)
        except CorruptCheckpointError as e:
            log.warning("skipping corrupt checkpoint: %s", e)
            continue
        return path
    return None


def prune(directory, keep: int = 3, every: int = 0) -> list:
    """Delete all but the ``keep`` newest checkpoints (and their checksums); with ``every``
    > 0, the oldest checkpoint at or past each multiple of ``every`` updates stays too, so
    that a run's weights at 0, ``every``, 2 ``every``, ... updates can be scored afterwards
    (what a kept one is depends on the names alone: a later prune keeps the same ones).
    Returns the deleted checkpoint paths, newest first."""
    if keep < 1:
        raise ValueError(f"prune: keep must be >= 1, got {keep}")
    if every < 0:
        raise ValueError(f"prune: every must be >= 0, got {every}")
    found = _numbered_checkpoints(directory)
    marks = {}
    if every:
        for updates, path in reversed(found):  # oldest first: the first of each multiple is the one kept
            marks.setdefault(updates // every, path)
    kept = {path for _, path in found[:keep]} | set(marks.values())
    removed = [path for _, path in found if path not in kept]
    for path in removed:
        storage.delete(_checksum_path(path))
        storage.delete(path)
    return removed
