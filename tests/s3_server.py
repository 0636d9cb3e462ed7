"""A real S3-protocol server for the tests of runs on an object store: moto's server
mode, in its own process on 127.0.0.1, with the bucket ``runs``. Stopping it (by its
pid) makes the storage unreachable, as a lost network or endpoint would."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BUCKET = "runs"


class S3Server:
    def __init__(self, port: int, log: Path):
        self.port, self.log = port, log
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = shutil.which("moto_server", path=os.path.dirname(sys.executable))
        if command is None:
            raise RuntimeError("moto_server is not installed (the test extra's moto[server])")
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen([command, "-H", "127.0.0.1", "-p", str(self.port)],
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"moto_server exited with {self.process.returncode}; see {self.log}")
                time.sleep(0.2)
        else:
            raise RuntimeError(f"moto_server did not listen on {self.endpoint} within 30 s; see {self.log}")
        import pyarrow.fs as pafs

        pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{self.port}", scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir(BUCKET)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
