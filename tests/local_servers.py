"""What the tests that start their own servers (Redis, an S3-protocol server) share: a free
port on 127.0.0.1, and the mark that skips a Redis test where redis-server is missing."""

from __future__ import annotations

import shutil
import socket

import pytest

NEEDS_REDIS = pytest.mark.skipif(shutil.which("redis-server") is None or shutil.which("redis-cli") is None,
                                 reason="redis-server is not on PATH: Redis is an optional store (SQLite is the "
                                        "default); make test installs it (.ci/system-deps)")


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
