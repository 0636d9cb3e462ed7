"""The oracle store's Redis of deploy/kuberay/redis.yaml, for real: its container's own
command run here (only its port and directories moved to free ones), reached by the
oracle store at the URL the RayCluster's pods get, with the password from the
environment as the pods get it from the Secret; the readiness probe's command answers;
the password is on no command line and in no file others can read."""

from __future__ import annotations

import os
import secrets
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from oracle_service.store import Solved, open_store
from tests.local_servers import NEEDS_REDIS, free_port

KUBERAY = Path(__file__).resolve().parents[2] / "deploy" / "kuberay"
pytestmark = NEEDS_REDIS


def _moved(command: str, port: int, tmp: Path, *, every: bool = True) -> str:
    """``command`` with the pod's port and paths replaced by this test's (``every``: each
    must be there)."""
    for pod, here in (("6380", str(port)), ("/tmp/redis.conf", str(tmp / "redis.conf")), ("/data", str(tmp / "data"))):
        assert pod in command or not every, f"{pod} is no longer in the manifest's command"
        command = command.replace(pod, here)
    return command


@pytest.fixture
def kuberay_redis(tmp_path):
    docs = {d["kind"]: d for d in yaml.safe_load_all((KUBERAY / "redis.yaml").read_text())}
    (container,) = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    shell, flag, script = container["args"]
    port, password = free_port(), secrets.token_hex(12)
    (tmp_path / "data").mkdir()
    env = {**os.environ, "SELFPLAY_REDIS_PASSWORD": password}
    probe = [_moved(word, port, tmp_path, every=False) for word in container["readinessProbe"]["exec"]["command"]]
    assert str(port) in probe[-1]
    server = subprocess.Popen([shell, flag, _moved(script, port, tmp_path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(100):
            if subprocess.run(probe, env=env, capture_output=True, timeout=10).returncode == 0:
                break
            assert server.poll() is None, server.stdout.read()
            time.sleep(0.1)
        else:
            pytest.fail("the readiness probe never answered")
        yield {"port": port, "password": password, "server": server, "dir": tmp_path}
    finally:
        # Whatever the test did: no Redis left behind. By the server's own command, so that
        # a shell that failed to exec (a broken manifest) does not leave its child running.
        if server.poll() is None:
            subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True, timeout=10,
                           env={**os.environ, "REDISCLI_AUTH": password})
            server.kill()
            server.wait()


def _pod_store_url(port: int) -> str:
    """The SELFPLAY_ORACLE_STORE of the RayCluster's head, pointed at this machine."""
    cluster = yaml.safe_load((KUBERAY / "raycluster.yaml").read_text())
    env = {e["name"]: e for e in cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]}
    service = next(d for d in yaml.safe_load_all((KUBERAY / "redis.yaml").read_text()) if d["kind"] == "Service")
    url = env["SELFPLAY_ORACLE_STORE"]["value"]
    return url.replace(f"{service['metadata']['name']}:{service['spec']['ports'][0]['port']}", f"127.0.0.1:{port}")


def test_the_manifests_redis_serves_the_pods_store_with_the_secrets_password(kuberay_redis, monkeypatch):
    port, password = kuberay_redis["port"], kuberay_redis["password"]
    monkeypatch.setenv("SELFPLAY_REDIS_PASSWORD", password)  # as the pods get it from the Secret
    store = open_store(_pod_store_url(port))
    store.put_many([(11, Solved(5)), (12, Solved(-2, (1, 0, -2, None, 3, 4, 5)))])
    assert open_store(_pod_store_url(port)).get_many([12, 11, 13]) == [
        Solved(-2, (1, 0, -2, None, 3, 4, 5)), Solved(5), None]
    assert store.stats()["errors"] == 0
    monkeypatch.delenv("SELFPLAY_REDIS_PASSWORD")
    with pytest.raises(ValueError, match="password"):
        open_store(f"redis://:wrong@127.0.0.1:{port}/0")


def test_the_password_is_on_no_command_line_and_its_file_is_private(kuberay_redis):
    pid = kuberay_redis["server"].pid  # the shell exec'd into redis-server: one process
    assert Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"redis-server")  # its title, not the shell
    assert kuberay_redis["password"].encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    conf = kuberay_redis["dir"] / "redis.conf"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600


def test_a_stop_signal_reaches_redis_which_saves_and_exits(kuberay_redis, monkeypatch):
    monkeypatch.setenv("SELFPLAY_REDIS_PASSWORD", kuberay_redis["password"])
    open_store(_pod_store_url(kuberay_redis["port"])).put_many([(7, Solved(1))])
    server = kuberay_redis["server"]
    server.send_signal(signal.SIGTERM)  # what tini passes on when Kubernetes stops the pod
    assert server.wait(timeout=30) == 0
    assert (kuberay_redis["dir"] / "data" / "dump.rdb").exists()
