"""Reading and writing one location of the run's storage (see the package's doc).

A location is a local path (given and returned as a :class:`pathlib.Path`) or an object
store's URI (a ``str`` such as ``s3://bucket/run``); :func:`join` keeps the kind it is
given, so code that builds ``join(run_dir, "checkpoints", name)`` serves both.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

Location = str | Path
CONNECT_SECONDS = 5.0  # an object store that does not answer a connection within this is unreachable
REQUEST_SECONDS = 60.0  # nor one that does not answer a request (a checkpoint's upload included)
_ATTEMPTS = 3  # tries of a request before the storage counts as unreachable
_CHUNK = 1 << 20
_FILESYSTEMS: dict[tuple[str, str], pafs.FileSystem] = {}


class StorageError(OSError):
    """The run's storage could not be reached or refused a request; the message names the
    location and what was asked."""


def is_remote(location: Location) -> bool:
    """Whether ``location`` is an object store's URI (not a local or mounted path)."""
    if isinstance(location, Path):
        return False
    scheme = urlsplit(location).scheme
    return len(scheme) > 1 and scheme != "file"  # one letter: a Windows drive


def location(text: Location) -> Location:
    """``text`` as a location: the URI as given, a path as a Path (also a command line's
    argument ``type``)."""
    return str(text) if is_remote(str(text)) else Path(text)


def join(location: Location, *parts: str) -> Location:
    """``location`` with ``parts`` appended: a Path for a path, a URI for a URI."""
    if is_remote(location):
        return "/".join([str(location).rstrip("/"), *(str(p).strip("/") for p in parts)])
    return Path(location).joinpath(*parts)


def basename(location: Location) -> str:
    return str(location).rstrip("/").rsplit("/", 1)[-1] if is_remote(location) else Path(location).name


def local_path(location: Location) -> Path | None:
    """The local path of ``location``, or None for an object store's URI."""
    return None if is_remote(location) else Path(location)


def _s3_filesystem() -> pafs.S3FileSystem:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    options = {}
    if endpoint:
        parsed = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options.update(endpoint_override=parsed.netloc, scheme=parsed.scheme)
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    return pafs.S3FileSystem(connect_timeout=CONNECT_SECONDS, request_timeout=REQUEST_SECONDS,
                             retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=_ATTEMPTS), **options)


def _remote(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of ``location`` (one per scheme and bucket, kept for the process)
    and the path inside it."""
    parsed = urlsplit(location)
    key = (parsed.scheme, parsed.netloc)
    if key not in _FILESYSTEMS:
        try:
            if parsed.scheme == "s3":
                _FILESYSTEMS[key] = _s3_filesystem()
            else:
                _FILESYSTEMS[key] = pafs.FileSystem.from_uri(location)[0]
        except (pa.ArrowException, OSError, ValueError) as e:
            raise StorageError(f"run storage {location}: cannot open its filesystem ({e})") from e
    return _FILESYSTEMS[key], (parsed.netloc + parsed.path).rstrip("/")


def _failed(location: Location, what: str, error: Exception) -> StorageError:
    return StorageError(f"run storage {location}: {what} failed ({type(error).__name__}: {error}); "
                        f"is the storage reachable from this node (its endpoint and credentials)?")


def _info(location: str) -> pafs.FileInfo:
    filesystem, path = _remote(location)
    try:
        return filesystem.get_file_info(path)
    except (pa.ArrowException, OSError) as e:
        raise _failed(location, "looking it up", e) from e


def exists(location: Location) -> bool:
    if is_remote(location):
        return _info(location).type != pafs.FileType.NotFound
    return Path(location).exists()


def is_file(location: Location) -> bool:
    if is_remote(location):
        return _info(location).type == pafs.FileType.File
    return Path(location).is_file()


def is_dir(location: Location) -> bool:
    """A directory; on an object store, a prefix with something stored under it."""
    if is_remote(location):
        return _info(location).type == pafs.FileType.Directory
    return Path(location).is_dir()


def size(location: Location) -> int:
    if is_remote(location):
        info = _info(location)
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(f"run storage {location}: no such file")
        return info.size
    return Path(location).stat().st_size


def listdir(location: Location) -> list[str]:
    """The names directly inside ``location``, sorted; [] when it does not exist."""
    if not is_remote(location):
        directory = Path(location)
        return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    filesystem, path = _remote(location)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
    except (pa.ArrowException, OSError) as e:
        raise _failed(location, "listing it", e) from e
    return sorted(info.base_name for info in infos)


def _open_input(location: str) -> BinaryIO:
    filesystem, path = _remote(location)
    try:
        return filesystem.open_input_stream(path)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as e:
        if _info(location).type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"run storage {location}: no such file") from e
        raise _failed(location, "reading it", e) from e


def read_bytes(location: Location) -> bytes:
    if not is_remote(location):
        return Path(location).read_bytes()
    with _open_input(location) as f:
        try:
            return f.read()
        except (pa.ArrowException, OSError) as e:
            raise _failed(location, "reading it", e) from e


def read_text(location: Location) -> str:
    return read_bytes(location).decode()


def sha256(location: Location) -> str:
    """The SHA-256 of the file at ``location``, read in chunks."""
    digest = hashlib.sha256()
    with (_open_input(location) if is_remote(location) else open(location, "rb")) as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_directory(directory: Path) -> None:
    # Makes renames durable; some filesystems do not support it and need not.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_local(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """A temporary file beside ``path`` filled by ``write``, fsynced and renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(name, 0o644)  # mkstemp makes it owner-only; the run's files are ordinary files
        os.replace(name, path)
    except BaseException:
        if os.path.exists(name):
            os.unlink(name)
        raise
    fsync_directory(path.parent)


def write_atomic(location: Location, data: bytes | Callable[[BinaryIO], None]) -> Location:
    """Write ``data`` (bytes, or a function that writes to a binary file) to ``location``
    so that a reader finds the old file or the whole new one, never a part."""
    write = data if callable(data) else (lambda f: f.write(data))
    if not is_remote(location):
        _write_local(Path(location), write)
        return Path(location)
    if callable(data):  # an object is uploaded whole: gather it first
        buffer = io.BytesIO()
        write(buffer)
        data = buffer.getvalue()
    filesystem, path = _remote(location)
    try:
        with filesystem.open_output_stream(path, metadata={}) as f:
            f.write(data)
    except (pa.ArrowException, OSError) as e:
        raise _failed(location, f"writing {len(data)} bytes", e) from e
    return location


def makedirs(location: Location) -> None:
    """Make the directory ``location``; nothing on an object store, whose directories
    are made by writing inside them."""
    if not is_remote(location):
        Path(location).mkdir(parents=True, exist_ok=True)


def delete(location: Location) -> None:
    """Remove the file at ``location``; nothing when there is none."""
    if not is_remote(location):
        Path(location).unlink(missing_ok=True)
        return
    filesystem, path = _remote(location)
    _remove(location, lambda: filesystem.delete_file(path), "deleting it")


def delete_tree(location: Location) -> None:
    """Remove the directory ``location`` and everything in it; nothing when there is none."""
    if not is_remote(location):
        shutil.rmtree(location, ignore_errors=True)
        return
    filesystem, path = _remote(location)
    _remove(location, lambda: filesystem.delete_dir(path), "deleting what it holds")


def _remove(location: str, remove, what: str) -> None:
    """``remove()`` something of an object store; already gone is no error (a store may
    answer a missing key with an error of its own kind, so the key is looked up again)."""
    try:
        remove()
    except FileNotFoundError:
        pass
    except (pa.ArrowException, OSError) as e:
        if _info(location).type != pafs.FileType.NotFound:
            raise _failed(location, what, e) from e


def copy(source: Location, target: Location) -> None:
    """Make ``target`` hold the file ``source`` holds, replacing it atomically: a hard link
    where both are paths of one filesystem (no bytes copied), a server-side copy on an
    object store."""
    if is_remote(source) != is_remote(target):
        raise ValueError(f"storage.copy: {source} and {target} are not on one storage")
    if is_remote(source):
        filesystem, path = _remote(source)
        try:
            filesystem.copy_file(path, _remote(target)[1])
        except (pa.ArrowException, OSError) as e:
            raise _failed(source, f"copying it to {target}", e) from e
        return
    source, target = Path(source), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.link.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:  # another filesystem, or one without hard links
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
    fsync_directory(target.parent)
