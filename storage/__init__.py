"""The run's storage: a local path, a shared mount, or an object store at a URI.

A run directory (its config, metrics, checkpoints and their pairs, replay snapshots) is
named by one string, a *location*: a local or shared path (``runs/x``, ``/mnt/efs/x``:
NFS, EFS and Filestore are paths too) or a URI of an object store (``s3://bucket/x``,
``gs://bucket/x``) read through pyarrow's filesystems. Every role that reads or writes
the run goes through these functions, so a learner restarted on another node finds the
checkpoints the driver wrote wherever it lands.

What differs between the two, and why the callers need not care:

- Writing is atomic either way: a path gets a temporary file, fsynced, renamed into
  place; an object store's PUT makes the whole object appear at once (it has no rename).
- Directories: a path's exist; an object store's are only key prefixes, so a directory
  is made implicitly by writing inside it, and an empty one does not exist.
- A hard link (a path's way to publish one file under two names without copying) is a
  server-side copy on an object store.

S3 reads its endpoint and credentials from the environment as the AWS tools do
(``AWS_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL_S3`` for an S3-protocol server such as MinIO,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``); on a cluster the job's
runtime environment carries them to every node. A storage that cannot be reached raises
:class:`StorageError` naming the location, after a bounded wait (``CONNECT_SECONDS``).
"""

from storage.location import (
    CONNECT_SECONDS,
    StorageError,
    basename,
    copy,
    delete,
    delete_tree,
    exists,
    is_dir,
    is_file,
    is_remote,
    join,
    listdir,
    local_path,
    location,
    makedirs,
    read_bytes,
    read_text,
    sha256,
    size,
    write_atomic,
)

__all__ = ["CONNECT_SECONDS", "StorageError", "basename", "copy", "delete", "delete_tree", "exists", "is_dir",
           "is_file", "is_remote", "join", "listdir", "local_path", "location", "makedirs", "read_bytes", "read_text", "sha256",
           "size", "write_atomic"]
