"""deploy/local-cluster/hosts.sh, for real (root: network namespaces, a bridge, sshd): the
hosts belong to the process that made them. While it runs, a second `up` is refused naming
it; once it has ended without its cleanup (a check killed mid-way), the next `up` removes
its hosts and makes its own, so that a later cluster check is not stopped by a dead one."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

HOSTS = Path(__file__).resolve().parents[2] / "deploy" / "local-cluster" / "hosts.sh"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="hosts.sh needs root (run as .ci/run does)")


def hosts(state: Path, *args: str, owner: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "LOCAL_CLUSTER_STATE": str(state)}
    if owner is not None:
        env["LOCAL_CLUSTER_OWNER"] = str(owner)
    return subprocess.run(["bash", str(HOSTS), *args], env=env, capture_output=True, text=True, timeout=60)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("sp-h")]


@pytest.fixture
def state():
    """Outside /tmp, which each host replaces with its own."""
    parent = Path(tempfile.mkdtemp(prefix="hosts-owner-", dir="/var/tmp"))
    yield parent / "cluster"
    shutil.rmtree(parent, ignore_errors=True)


@pytest.mark.slow
def test_hosts_of_a_running_owner_are_kept_and_those_of_an_ended_one_are_replaced(state):
    assert not namespaces(), "hosts of another check are up; this test would take their names"
    first = subprocess.Popen(["sleep", "120"])
    second = subprocess.Popen(["sleep", "120"])
    try:
        made = hosts(state, "up", "1", owner=first.pid)
        assert made.returncode == 0, made.stderr
        first_init = int((state / "sp-h1" / "pid").read_text())

        refused = hosts(state, "up", "1", owner=second.pid)
        assert refused.returncode != 0
        assert f"made by pid {first.pid}" in refused.stderr and "still running" in refused.stderr
        assert alive(first_init) and (state / "sp-h1" / "pid").read_text() == f"{first_init}\n"

        first.kill()
        first.wait()
        remade = hosts(state, "up", "1", owner=second.pid)
        assert remade.returncode == 0, remade.stderr
        assert f"left by pid {first.pid}, which has ended" in remade.stderr
        assert not alive(first_init)  # the ended owner's host was killed, not left beside the new one
        second_init = int((state / "sp-h1" / "pid").read_text())
        assert second_init != first_init and alive(second_init)
        assert (state / "owner").read_text().split()[0] == str(second.pid)
        reach = subprocess.run(["ip", "netns", "exec", "sp-h1", "bash", "-c", "exec 3<>/dev/tcp/10.77.0.11/22"],
                               capture_output=True, timeout=10)
        assert reach.returncode == 0  # the new host's sshd listens
    finally:
        down = hosts(state, "down")
        for sleeper in (first, second):
            sleeper.kill()
            sleeper.wait()
    assert down.returncode == 0, down.stderr
    assert not state.exists() and not namespaces()
