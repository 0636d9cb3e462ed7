#!/usr/bin/env bash
# Simulated hosts on this machine, as root: each has its own network namespace with one
# address on a private bridge (no route beyond it), its own PID, mount and UTS
# namespaces (own /tmp, /dev/shm, home, hostname) and a real sshd reached with a
# generated key. Used by check.sh and the soak; see docs/cluster.md.
#
#   hosts.sh up N          make hosts sp-h1..sp-hN at 10.77.0.11.. (bridge spbr0, 10.77.0.1)
#   hosts.sh kill NAME     kill every process of a host (its PID namespace dies)
#   hosts.sh start NAME    start a killed host again (same address, same home)
#   hosts.sh down          remove every host, the bridge and the state
#
# The hosts belong to the process that made them ($LOCAL_CLUSTER_OWNER, else the caller,
# e.g. check.sh). `up` refuses while that process runs; hosts whose owner has ended (a
# check killed before its cleanup) are removed first, so the next check starts clean.
# State (keys, homes, shared storage) lives in $LOCAL_CLUSTER_STATE (default
# /var/tmp/selfplay-cluster); "shared/" there is storage every host sees, as NFS would be.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${LOCAL_CLUSTER_STATE:-/var/tmp/selfplay-cluster}
bridge=spbr0
subnet=10.77.0

die() { echo "hosts.sh: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "must run as root (network namespaces, bridges and mounts need it)"
for tool in ip unshare /usr/sbin/sshd ssh-keygen; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install -y iproute2 util-linux openssh-server)"
done

address() { echo "$subnet.$((10 + ${1#sp-h}))"; }

start_host() {
    local name=$1
    local dir="$state/$name"
    # Its own PID/mount/UTS namespaces inside its network namespace. --kill-child: killing
    # the unshare process (whose pid we keep) kills the host's init, hence the whole host.
    setsid ip netns exec "$name" unshare --pid --fork --kill-child --mount --uts --propagation private \
        --mount-proc bash "$here/host-init.sh" "$name" "$state" "$(cd "$here/../.." && pwd)" </dev/null >>"$dir/init.log" 2>&1 &
    echo $! >"$dir/pid"
    for _ in $(seq 100); do
        if ip netns exec "$name" bash -c "exec 3<>/dev/tcp/$(address "$name")/22" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    die "$name: sshd did not listen on $(address "$name"):22 within 10 s; see $dir/sshd.log and $dir/init.log"
}

make_host() {
    local name=$1 addr
    addr=$(address "$name")
    local dir="$state/$name"
    mkdir -p "$dir/home/.ssh"
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" <<<y >/dev/null
    cat >"$dir/sshd_config" <<CONF
ListenAddress $addr
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $state/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
CONF
    ip netns add "$name"
    ip link add "$name-br" type veth peer name eth0 netns "$name"
    ip link set "$name-br" master "$bridge" up
    ip -n "$name" addr add "$addr/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" link set lo up
    # No default route: the host reaches the bridge's subnet and nothing else.
    start_host "$name"
}

kill_host() {
    local name=$1 pid
    pid=$(cat "$state/$name/pid" 2>/dev/null) || return 0
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$state/$name/pid"
}

# "PID START": a process and its start time (clock ticks since boot), so that a later
# process given the same PID is not taken for the owner.
process_id() { [[ -r /proc/$1/stat ]] && echo "$1 $(sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f20)"; }

up() {
    local n=$1 owner
    [[ $n -ge 1 && $n -le 40 ]] || die "up: want 1..40 hosts, got $n"
    if [[ -e "$state/owner" || -e "$state/hosts" ]]; then
        owner=$(cat "$state/owner" 2>/dev/null || true)
        if [[ -n $owner && "$(process_id "${owner%% *}")" == "$owner" ]]; then
            die "hosts already exist ($state/hosts), made by pid ${owner%% *} ($(tr '\0' ' ' <"/proc/${owner%% *}/cmdline")), which is still running; run hosts.sh down first to take them"
        fi
        if [[ -n $owner ]]; then owner="pid ${owner%% *}, which has ended"; else owner="a process that recorded no pid"; fi
        echo "hosts.sh: hosts left by $owner; removing them first" >&2
        down
    fi
    mkdir -p "$state/shared"
    process_id "${LOCAL_CLUSTER_OWNER:-$PPID}" >"$state/owner" || die "up: no process ${LOCAL_CLUSTER_OWNER:-$PPID} to own the hosts"
    chmod 755 "$state"
    ssh-keygen -q -t ed25519 -N '' -C selfplay-local-cluster -f "$state/id_ed25519" <<<y >/dev/null
    cp "$state/id_ed25519.pub" "$state/authorized_keys"
    ip link add "$bridge" type bridge
    ip addr add "$subnet.1/24" dev "$bridge"
    ip link set "$bridge" up
    : >"$state/hosts"
    for i in $(seq "$n"); do
        make_host "sp-h$i"
        echo "sp-h$i $(address "sp-h$i")" >>"$state/hosts"
    done
}

down() {
    if [[ -f "$state/hosts" ]]; then
        while read -r name _; do kill_host "$name"; done <"$state/hosts"
    fi
    for ns in $(ip netns list 2>/dev/null | awk '/^sp-h[0-9]+/ {print $1}'); do
        [[ -f "$state/$ns/pid" ]] && kill_host "$ns"
        ip netns delete "$ns" 2>/dev/null || true
    done
    ip link delete "$bridge" 2>/dev/null || true
    rm -rf "$state"
}

case "${1:-}" in
    up) up "${2:?hosts.sh up N}" ;;
    down) down ;;
    kill) kill_host "${2:?hosts.sh kill NAME}" ;;
    start) start_host "${2:?hosts.sh start NAME}" ;;
    *) die "usage: hosts.sh up N | kill NAME | start NAME | down" ;;
esac
