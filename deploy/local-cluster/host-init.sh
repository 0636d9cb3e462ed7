#!/usr/bin/env bash
# PID 1 of one simulated host (run by hosts.sh inside the host's own network, PID, mount
# and UTS namespaces). Gives the host its own /tmp, /dev/shm (Ray's object store) and
# home directory, then runs its sshd; killing this process kills every process of the
# host (the kernel ends a PID namespace with its init), which is how hosts.sh cuts a host.
set -euo pipefail
name=$1 state=$2
hostname "$name"
mount -t tmpfs -o size=2g tmpfs /tmp
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
