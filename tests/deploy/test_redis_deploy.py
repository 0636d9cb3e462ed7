"""The oracle store's Redis as the cluster configs run it (deploy/start-redis.sh), for
real: loopback and one private address only, a password required and kept off the
command line, and the store reaching it with the password from the URL or the
environment, and refusing a wrong one clearly."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from oracle_service.store import Solved, open_store
from tests.local_servers import NEEDS_REDIS, free_port

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "start-redis.sh"
pytestmark = NEEDS_REDIS


def _cli(port: int, *args: str, password: str | None = None) -> str:
    env = {**os.environ, "REDISCLI_AUTH": password} if password else {
        k: v for k, v in os.environ.items() if k != "REDISCLI_AUTH"}
    return subprocess.run(["redis-cli", "-p", str(port), *args], env=env, capture_output=True, text=True,
                          timeout=10).stdout.strip()


@pytest.fixture
def deployed_redis(tmp_path, monkeypatch):
    """deploy/start-redis.sh's server, its private address 127.0.0.2 (a loopback alias)."""
    monkeypatch.delenv("SELFPLAY_REDIS_PASSWORD", raising=False)
    port, password = free_port(), secrets.token_hex(12)
    env = {**os.environ, "SELFPLAY_REDIS_PASSWORD": password, "SELFPLAY_REDIS_PORT": str(port),
           "SELFPLAY_REDIS_BIND": "127.0.0.2", "SELFPLAY_REDIS_DIR": str(tmp_path)}
    started = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert started.returncode == 0, started.stderr
    yield {"port": port, "password": password, "env": env}
    _cli(port, "shutdown", "nosave", password=password)


def test_start_redis_binds_privately_with_a_password(deployed_redis):
    port, password = deployed_redis["port"], deployed_redis["password"]
    assert _cli(port, "ping").startswith("NOAUTH")  # no password, no service
    assert _cli(port, "ping", password=password) == "PONG"
    assert _cli(port, "config", "get", "bind", password=password).splitlines()[1].split() == ["127.0.0.1", "127.0.0.2"]
    assert _cli(port, "config", "get", "protected-mode", password=password).splitlines()[1] == "yes"
    # The password went in on stdin: it is not in the server's command line.
    pid = _cli(port, "info", "server", password=password).split("process_id:")[1].split()[0]
    assert password not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    # `ray up` reruns the start commands: a second start leaves the server be.
    again = subprocess.run(["bash", str(SCRIPT)], env=deployed_redis["env"], capture_output=True, text=True,
                           timeout=30)
    assert again.returncode == 0 and "already running" in again.stdout


def test_start_redis_refuses_to_run_without_a_password(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SELFPLAY_REDIS_PASSWORD"}
    env.update(SELFPLAY_REDIS_PORT=str(free_port()), SELFPLAY_REDIS_DIR=str(tmp_path))
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "SELFPLAY_REDIS_PASSWORD" in done.stderr


def test_store_reaches_it_with_the_password_from_url_or_environment(deployed_redis, monkeypatch):
    port, password = deployed_redis["port"], deployed_redis["password"]
    store = open_store(f"redis://:{password}@127.0.0.1:{port}/0")
    store.put_many([(11, Solved(5)), (12, Solved(-2, (1, 0, -2, None, 3, 4, 5)))])
    assert store.get_many([12, 11, 13]) == [Solved(-2, (1, 0, -2, None, 3, 4, 5)), Solved(5), None]
    assert store.stats()["errors"] == 0
    monkeypatch.setenv("SELFPLAY_REDIS_PASSWORD", password)  # what the cluster configs export
    from_env = open_store(f"redis://127.0.0.2:{port}/0")  # the head's private address
    assert from_env.get_many([11]) == [Solved(5)] and from_env.stats()["errors"] == 0
    assert password not in repr(from_env.stats())


def test_store_refuses_a_wrong_password_clearly(deployed_redis):
    with pytest.raises(ValueError, match="password"):
        open_store(f"redis://:wrong@127.0.0.1:{deployed_redis['port']}/0")
