#!/usr/bin/env bash
# PID 1 of one simulated host (run by hosts.sh inside the host's own network, PID, mount
# and UTS namespaces). Gives the host its own /tmp, /dev/shm (Ray's object store) and
# home directory, then runs its sshd; killing this process kills every process of the
# host (the kernel ends a PID namespace with its init), which is how hosts.sh cuts a host.
set -euo pipefail
name=$1 state=$2 checkout=$3
hostname "$name"
# The hosts share the checkout's Python packages (make_config.py), as an image would carry
# them; a checkout under /tmp (a CI clone) would vanish under the host's own /tmp, so it is
# bound back at its path after the new /tmp is mounted.
if [[ $checkout == /tmp/* ]]; then
    kept="$state/$name/checkout"
    mkdir -p "$kept"
    mount --bind "$checkout" "$kept"
fi
mount -t tmpfs -o size=2g tmpfs /tmp
if [[ -n ${kept:-} ]]; then
    mkdir -p "$checkout"
    mount --bind "$kept" "$checkout"
fi
mount -t tmpfs -o size=2g tmpfs /dev/shm
# The host's home is its own directory; the Python interpreter (pyenv, under /root) is
# shared read-only into it, as an image would carry it.
home="$state/$name/home"
mkdir -p "$home/.pyenv"
touch "$home/.bashrc"  # ray up's shells source it
mount --bind -o ro /root/.pyenv "$home/.pyenv"
mount --rbind "$home" /root
mkdir -p /run/sshd
/usr/sbin/sshd -D -e -f "$state/$name/sshd_config" 2>>"$state/$name/sshd.log" &
sshd_pid=$!
# As PID 1, reap the orphans Ray's daemons leave (ray start exits, its children stay).
trap 'kill -TERM "$sshd_pid" 2>/dev/null; exit 0' TERM INT
while kill -0 "$sshd_pid" 2>/dev/null; do
    wait -n || true
done
echo "$name: sshd exited" >&2
