#!/usr/bin/env bash
# Start the oracle store's Redis on the head node (deploy/cluster*.yaml run it there).
#
# Safe defaults: it listens on loopback and on this node's private address only
# (SELFPLAY_REDIS_BIND overrides the latter), port 6380 (6379 is Ray's GCS), and it
# requires the password in $SELFPLAY_REDIS_PASSWORD, which the cluster configs read
# from ~/.selfplay/redis_password, a file copied from the operator's machine, never
# committed. The password reaches redis-server on stdin, not on its command line.
# Idempotent: `ray up` reruns the start commands on a running head.
set -euo pipefail
: "${SELFPLAY_REDIS_PASSWORD:?is not set (the cluster configs read it from ~/.selfplay/redis_password)}"
port="${SELFPLAY_REDIS_PORT:-6380}"
private="${SELFPLAY_REDIS_BIND:-$(hostname -I | awk '{print $1}')}"
data="${SELFPLAY_REDIS_DIR:-$HOME/redis}"
mkdir -p "$data"
if REDISCLI_AUTH="$SELFPLAY_REDIS_PASSWORD" redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
    echo "redis already running on port $port"
    exit 0
fi
printf 'port %s\nbind 127.0.0.1 %s\nprotected-mode yes\nrequirepass %s\ndir %s\nsave 300 1\ndaemonize yes\nlogfile %s/redis.log\n' \
    "$port" "$private" "$SELFPLAY_REDIS_PASSWORD" "$data" "$data" | redis-server -
for _ in $(seq 50); do
    REDISCLI_AUTH="$SELFPLAY_REDIS_PASSWORD" redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && exit 0
    sleep 0.1
done
echo "redis did not start on port $port; see $data/redis.log" >&2
exit 1
