"""Running a script of this folder that starts a Ray of its own (a multi-node cluster, a
declared GPU): in its own process, so that it never meets the test session's Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def run_own_ray(script: str, timeout: float) -> dict:
    """Run ``script`` (a file beside this one) and return the JSON object of its last
    output line; its failure fails the test with its stderr."""
    path = Path(__file__).with_name(script)
    # A short temp dir: Ray's socket paths must stay under 108 bytes (pytest's tmp_path is too deep).
    with tempfile.TemporaryDirectory(prefix="rayd-", dir="/tmp", ignore_cleanup_errors=True) as tmp:
        env = {**os.environ, "RAY_TMPDIR": tmp, "RAY_AUTH_MODE": "disabled"}
        env.pop("SELFPLAY_PLACEMENT_RESOURCES", None)
        env.pop("RAY_ADDRESS", None)  # the Ray of the script, not one this process may know
        done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
