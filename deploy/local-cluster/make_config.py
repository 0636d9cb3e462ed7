"""The `ray up` config of the simulated hosts (hosts.sh): deploy/cluster-local.yaml with
the hosts' addresses, the generated SSH key and secrets, and the few changes these hosts
need, each stated here with its reason. Printed to stdout.

    python deploy/local-cluster/make_config.py STATE_DIR [SOURCE_DIR] > cluster.yaml

SOURCE_DIR is the tree `ray up` syncs to each host's ~/selfplay (default: this checkout).
check.sh passes a copy of the checkout's own files (tracked, and untracked but not
ignored), since `ray up` reads every file under the mount's source to hash it (its
rsync_filter does not apply to the hash): the checkout's .venv and runs/ are gigabytes,
and a file a running training deletes meanwhile (an old checkpoint) failed `ray up` with
FileNotFoundError.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
# Small on purpose: 4 hosts share the 2 cores and the memory of one machine.
OBJECT_STORE_BYTES = 150 * 1024 * 1024
# Two CPUs a worker: an actor host can take the actor of a lost host, so actors move.
WORKER_CPUS = 2
# Ray 2.60's `ray up` starts autoscaler v2 by default. With the local provider it brought
# up two of three workers and then logged "Adding 1 node(s)" every 5 s without launching
# the third (its cluster state listed it as terminated); check.sh runs `ray up` with
# RAY_UP_enable_autoscaler_v2=0, the v1 autoscaler, which starts all and restarts lost ones.


def _offline_setup(python: str, packages: str) -> list[str]:
    """The hosts reach nothing beyond their bridge, so `pip install` from PyPI cannot run
    there. Instead each host's ~/selfplay/.venv is a real venv whose third-party packages
    come from one read-only directory every host sees (as a pre-built image would carry
    them), and whose `selfplay` code is the checkout ray up synced to ~/selfplay."""
    site = "~/selfplay/.venv/lib/python3.11/site-packages"
    return [
        f"test -x ~/selfplay/.venv/bin/python || {python} -m venv --without-pip ~/selfplay/.venv",
        # Path lines, not `addsitedir`: the shared directory's own .pth files (its editable
        # install of the operator's checkout) are not run, so `launch` is ~/selfplay's.
        f"printf '%s\\n' \"$HOME/selfplay\" {packages} > {site}/selfplay-local.pth",
        "printf '#!%s\\nfrom ray.scripts.scripts import main\\nmain()\\n' ~/selfplay/.venv/bin/python"
        " > ~/selfplay/.venv/bin/ray && chmod +x ~/selfplay/.venv/bin/ray",
        "~/selfplay/.venv/bin/python -c 'import launch, ray, torch'",
    ]


def _setup(base: list[str], python: str, packages: str) -> list[str]:
    # The base config's commands after its pip install (the PATH for `ray down`) stay.
    rest = base[[i for i, c in enumerate(base) if "pip install" in c][0] + 1:]
    return _offline_setup(python, packages) + rest


def _start(command: str, extra: str, shared: Path) -> str:
    # No default route on these hosts: Ray's own guess of its address (a UDP socket towards
    # 8.8.8.8) fails there, so each node names its bridge address itself. ``shared`` is the
    # directory every host sees (hosts.sh), declared so (SELFPLAY_SHARED_DIRS): a run there
    # passes a cluster run's check that its directory is shared, as one on NFS would.
    node_ip = "--node-ip-address=$(hostname -I | awk '{print $1}')"
    if "ray start" not in command:
        return command
    return command.replace("ray start", f"SELFPLAY_SHARED_DIRS={shared} RAY_USAGE_STATS_ENABLED=0 ray start "
                           f"{node_ip} --object-store-memory={OBJECT_STORE_BYTES} {extra}", 1)


def make_config(state: Path, source: Path = REPO) -> dict:
    base = yaml.safe_load((REPO / "deploy" / "cluster-local.yaml").read_text())
    hosts = [line.split() for line in (state / "hosts").read_text().splitlines() if line.strip()]
    if len(hosts) < 2:
        raise SystemExit(f"make_config: {state / 'hosts'} lists {len(hosts)} hosts; need a head and a worker")
    python = os.path.realpath(sys.executable)
    packages = str(Path(sys.executable).parent.parent / "lib" / "python3.11" / "site-packages")
    config = dict(base)
    config["cluster_name"] = "selfplay-localcheck"
    config["provider"] = {"type": "local", "head_ip": hosts[0][1], "worker_ips": [h[1] for h in hosts[1:]]}
    config["auth"] = {"ssh_user": "root", "ssh_private_key": str(state / "id_ed25519")}
    config["file_mounts"] = {"~/selfplay": f"{source}/", "~/.ray/auth_token": str(state / "auth_token"),
                             "~/.selfplay/redis_password": str(state / "redis_password")}
    config["setup_commands"] = _setup(base["setup_commands"], python, packages)
    config["head_start_ray_commands"] = [_start(c, "", state / "shared") for c in base["head_start_ray_commands"]]
    config["worker_start_ray_commands"] = [_start(c, f"--num-cpus={WORKER_CPUS}", state / "shared")
                                           for c in base["worker_start_ray_commands"]]
    return config


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    yaml.safe_dump(make_config(*map(Path, sys.argv[1:])), sys.stdout, sort_keys=False, width=200)
