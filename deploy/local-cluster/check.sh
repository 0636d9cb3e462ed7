#!/usr/bin/env bash
# The whole cluster path on this machine, for real (docs/cluster.md): make 4 hosts
# (hosts.sh), `ray up` the generated config, `ray job submit` a Connect Four AVI training,
# lose a worker host halfway (every process of it killed) and bring it back, wait for the
# job, keep `ray status` and the job's logs, `ray down`, remove the hosts. Prints one JSON
# line; exits non-zero when the job did not succeed or the lost host was not counted.
# The job's budget is --minutes of training, or --updates (CI's: a loaded machine then
# takes longer instead of ending the job before the host is lost).
# Cleans up (hosts, namespaces, port forward) even when a step fails. Root only.
#
# --storage shared (the default): the run directory is a directory every host sees, as an
# NFS mount would be. --storage s3: the hosts share no directory for the run: its storage
# is an S3-protocol server (moto's) on a fifth host of its own, and every role reads and
# writes the run there; two hosts declare `learner`, so a learner whose host is lost comes
# back on the other one, restored from the store (the lost host returns only after that).
# --storage-outage S (with --storage s3): no host is lost; instead the store's host is cut
# off the network halfway (its link down: every request to it times out, as in an object
# store's or a DNS outage) for S seconds and then comes back; the job must succeed, the JSON
# counting the checkpoints the outage refused (storage_retries) and the replay rows lost (0).
#
# --lose gpu-node-for S (with --storage s3): the learner's host, the only one declaring
# `learner` as a lone GPU node would, is cut off for S seconds (a spot reclaim, a GCP host
# maintenance; longer than the embedded Ray's 180 s) and then comes back; the learner waits
# for it within learner.restart_wait_s (a cluster's 1200 s) while the actors keep
# collecting, and restarts there from the store. The JSON adds learner_wait_s (what the run
# waited for its learner) and down_s.
# --lose head (with --storage s3): the head host (the driver, the replay shards, Redis, the
# autoscaler) is cut off halfway, and the job with it; then the operator's recovery of
# deploy/README.md ("After a lost head"): `ray down`, a new head (the host back, fresh), `ray
# up`, the job API's tunnel, and `python -m launch --resume s3://runs/check` submitted as a
# new job, which must succeed. The JSON adds head_lost, updates_at_loss (the run's last
# record then), pair_at_loss (the newest pair in the store), resumed_from_updates (what the
# resumed job's log says it restored) and updates_lost (the two's difference).
#
#   bash deploy/local-cluster/check.sh --minutes M | --updates U [--keep-logs DIR]
#                                      [--lose worker|learner|gpu-node-for S|head]
#                                      [--storage shared|s3] [--storage-outage S]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
minutes=1.5 updates="" logs="" lose=worker storage_mode=shared outage="" down_for=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --minutes) minutes=$2; shift 2 ;;
        --updates) updates=$2; shift 2 ;;
        --keep-logs) logs=$2; shift 2 ;;
        --lose) lose=$2; if [[ $2 == gpu-node-for ]]; then down_for=${3:-}; shift; fi; shift 2 ;;
        --storage) storage_mode=$2; shift 2 ;;
        --storage-outage) outage=$2; shift 2 ;;
        *) echo "check.sh: unknown argument $1 (--minutes M | --updates U, --keep-logs DIR, --lose worker|learner|gpu-node-for S|head, --storage shared|s3, --storage-outage S)" >&2; exit 2 ;;
    esac
done
case $lose in
    worker) role=SelfPlayWorker ;;
    learner) role=LearnerWorker ;;
    gpu-node-for) role=LearnerWorker
        if [[ $storage_mode != s3 || ! $down_for =~ ^[0-9]+$ ]]; then
            echo "check.sh: --lose gpu-node-for S (whole seconds) needs --storage s3" >&2; exit 2
        fi ;;
    head) role=""
        [[ $storage_mode == s3 ]] || { echo "check.sh: --lose head needs --storage s3" >&2; exit 2; } ;;
    *) echo "check.sh: --lose worker|learner|gpu-node-for S|head" >&2; exit 2 ;;
esac
case $storage_mode in shared|s3) ;; *) echo "check.sh: --storage shared|s3" >&2; exit 2 ;; esac
if [[ -n $outage && ( $storage_mode != s3 || ! $outage =~ ^[0-9]+$ ) ]]; then
    echo "check.sh: --storage-outage S (whole seconds) needs --storage s3" >&2; exit 2
fi
victim="" job_at_loss="" learner_host_after=""  # checked where given: --storage s3 --lose learner
job_id=check updates_at_loss=0 pair_at_loss=0 resumed_from=0  # --lose head: the resumed job's, and what it restored
if [[ -n $updates ]]; then budget="--updates $updates"; else budget="--minutes $minutes"; fi

export LOCAL_CLUSTER_STATE=${LOCAL_CLUSTER_STATE:-/var/tmp/selfplay-cluster}
state=$LOCAL_CLUSTER_STATE
py=$repo/.venv/bin/python
ray_cli=$repo/.venv/bin/ray
# The operator's Ray CLI authenticates with the cluster's own token, never ~/.ray/auth_token.
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=$state/auth_token RAY_UP_enable_autoscaler_v2=0
config=$state/cluster.yaml
port=$((20000 + RANDOM % 20000))
dashboard=http://127.0.0.1:$port
forward_pid="" cluster_up=0 t0=$(date +%s)

log() { echo "check.sh [$(($(date +%s) - t0)) s] $*" >&2; }
on_head() { ssh -i "$state/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o LogLevel=ERROR -o ConnectTimeout=10 root@10.77.0.11 "$@"; }

cleanup() {
    local rc=$?
    set +e
    trap '' INT TERM  # a second signal must not cut the cleanup short
    if [[ -n $forward_pid ]]; then  # the job's logs, also when a step failed before they were kept
        [[ -s $state/job_logs.txt ]] ||
            timeout 60 "$ray_cli" job logs --address "$dashboard" "$job_id" >"$state/job_logs.txt" 2>&1
        kill -- "-$forward_pid" 2>/dev/null
    fi
    if ((cluster_up)); then timeout 120 "$ray_cli" down -y "$config" >"$state/ray_down.log" 2>&1; fi
    [[ -n $logs && -d $state ]] && mkdir -p "$logs" && cp -r "$state"/*.log "$state"/*.txt "$logs"/ 2>/dev/null
    bash "$here/hosts.sh" down
    rm -f "/tmp/ray/cluster-selfplay-localcheck.state" "/tmp/ray/cluster-selfplay-localcheck.lock"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --storage s3: the store's host (not a Ray node), its endpoint and the check's own keys.
store_ip=10.77.0.15
store_endpoint=http://$store_ip:9000
store_env() { env AWS_ENDPOINT_URL=$store_endpoint AWS_ACCESS_KEY_ID=check AWS_SECRET_ACCESS_KEY="$(cat "$state/store_secret" 2>/dev/null)" AWS_REGION=us-east-1 "$@"; }

start_store() {  # moto's S3 server on sp-h5, and the bucket `runs`
    "$py" -c "import secrets; print(secrets.token_hex(16), end='')" >"$state/store_secret"
    ssh -i "$state/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
        root@$store_ip "setsid $repo/.venv/bin/moto_server -H $store_ip -p 9000 >/tmp/moto.log 2>&1 </dev/null &"
    for _ in $(seq 60); do curl -s -o /dev/null "$store_endpoint" && break; sleep 0.5; done
    store_env "$py" -c "import pyarrow.fs as f; f.S3FileSystem(endpoint_override='$store_ip:9000', scheme='http', allow_bucket_creation=True).create_dir('runs')"
}

make_cluster() {
    if [[ $storage_mode == s3 ]]; then
        bash "$here/hosts.sh" up 5
        mv "$state/hosts" "$state/hosts.all"
        head -n 4 "$state/hosts.all" >"$state/hosts"  # sp-h5 is the store's, not Ray's
        start_store
        if [[ $lose != gpu-node-for ]]; then  # a lone GPU node is waited for; else a second learner host
            mkdir -p "$state/sp-h3/home/.selfplay"
            touch "$state/sp-h3/home/.selfplay/learner-host"
        fi
    else
        bash "$here/hosts.sh" up 4
    fi
    "$py" -c "from ray._private.authentication.authentication_token_generator import generate_new_authentication_token as g; print(g(), end='')" >"$state/auth_token"
    "$py" -c "import secrets; print(secrets.token_hex(24))" >"$state/redis_password"
    chmod 600 "$state/auth_token" "$state/redis_password"
    mkdir -p "$state/sp-h2/home/.selfplay" "$state/shared/runs"
    touch "$state/sp-h2/home/.selfplay/learner-host"  # sp-h2 declares `learner`
    # What ray up syncs: the checkout's own files (tracked, and untracked but not ignored),
    # not its .venv and runs/, which ray up would read whole to hash (make_config.py).
    mkdir -p "$state/src"
    git -C "$repo" ls-files -co --exclude-standard -z |
        rsync -a --from0 --files-from=- --ignore-missing-args "$repo/" "$state/src/"
    "$py" "$here/make_config.py" "$state" "$state/src" >"$config"
}

alive_nodes() {
    on_head "RAY_AUTH_MODE=token ~/selfplay/.venv/bin/python -c 'import ray; ray.init(address=\"auto\", logging_level=\"ERROR\"); print(sum(n[\"Alive\"] for n in ray.nodes()))'" 2>/dev/null | tail -1
}

wait_nodes() {  # wait_nodes N SECONDS
    local deadline=$(($(date +%s) + $2))
    while (($(date +%s) < deadline)); do
        [[ $(alive_nodes) == "$1" ]] && return 0
        sleep 3
    done
    log "the cluster did not reach $1 live nodes within $2 s"; return 1
}

ray_status() { "$ray_cli" exec "$config" "RAY_AUTH_MODE=token ray status" >"$state/ray_status_$1.txt" 2>&1 || true; }

job_status() {  # RUNNING etc. while running: "Status for job ..."; at the end "Job 'check' succeeded"
    timeout 60 "$ray_cli" job status --address "$dashboard" "$job_id" 2>&1 | sed -n \
        -e "s/.*Status for job '$job_id': \([A-Z]*\).*/\1/p" \
        -e "s/.*Job '$job_id' \(succeeded\|failed\|stopped\).*/\U\1/p" | tail -1
}

last_record() {  # the run's last record, read from its storage as any role reads it
    store_env "$py" -c "import json, storage
from evaluation.run_metrics import read_metrics
print(json.dumps(read_metrics(storage.location('$run'))[-1]))" 2>/dev/null
}

halfway() {  # wait until the run has trained half its budget (its records' updates or "elapsed")
    local deadline=$(($(date +%s) + $1)) key half
    if [[ -n $updates ]]; then key=updates half=$((updates / 2)); else key=elapsed half=$("$py" -c "print($minutes * 30)"); fi
    while (($(date +%s) < deadline)); do
        if last_record | "$py" -c "import json, sys
last = json.loads(sys.stdin.read())
sys.exit(0 if last.get('$key', 0) >= $half and last.get('updates', 0) > 0 else 1)" 2>/dev/null; then return 0; fi
        [[ $(job_status) =~ ^(FAILED|STOPPED|SUCCEEDED)$ ]] && break
        sleep 2
    done
    log "the run in $run did not reach $half of its budget ($key) within $1 s (job $(job_status))"; return 1
}

host_of() {  # the host running a live actor of class $1 (Ray may pack both actors on one host)
    local ip
    ip=$(on_head "RAY_AUTH_MODE=token ~/selfplay/.venv/bin/python -c '
import ray
from ray.util.state import list_actors
ray.init(address=\"auto\", logging_level=\"ERROR\")
ips = {n[\"NodeID\"]: n[\"NodeManagerAddress\"] for n in ray.nodes()}
live = list_actors(filters=[(\"class_name\", \"=\", \"$1\"), (\"state\", \"=\", \"ALIVE\")])
print(ips[live[0].node_id] if live else \"none\")'" 2>/dev/null | tail -1)
    [[ $ip =~ ^10\.77\.0\.1[0-9]$ ]] || { log "no live $1 found (got '$ip')"; return 1; }
    echo "sp-h$((${ip##*.} - 10))"
}

lose_host() {
    victim=$(host_of "$role")
    log "cutting $victim off: every process of the host killed"
    bash "$here/hosts.sh" kill "$victim"
    job_at_loss=$(job_status)  # RUNNING, or the loss came too late to be under the job
    sleep "${down_for:-15}"
    if [[ $lose == learner && $storage_mode == s3 ]]; then  # back elsewhere before the host returns
        local deadline=$(($(date +%s) + 240))
        learner_host_after=none
        while (($(date +%s) < deadline)); do
            learner_host_after=$(host_of LearnerWorker 2>/dev/null) && [[ $learner_host_after != "$victim" ]] && break
            learner_host_after=none
            sleep 3
        done
        log "the learner is back on $learner_host_after"
    fi
    log "$victim back (sshd); Ray's autoscaler restarts Ray on it"
    bash "$here/hosts.sh" start "$victim"
}

cut_store() {  # the store's host off the network for $1 seconds: its link down, then up
    log "the store's host (sp-h5) cut off for $1 s"
    victim=none job_at_loss=$(job_status)
    ip link set sp-h5-br down
    sleep "$1"
    ip link set sp-h5-br up
    log "the store's host is back"
}

lose_head() {  # the head host cut off, the job with it; then the recovery, in the operator's order
    victim=sp-h1 job_at_loss=$(job_status)
    log "cutting the head ($victim) off: the driver, the replay shards, Redis and the autoscaler with it"
    bash "$here/hosts.sh" kill "$victim"
    kill -- "-$forward_pid" 2>/dev/null || true; forward_pid=""  # the job API's tunnel, gone with the head
    # What the run holds in its store now: its last record, and the pair --resume will take.
    updates_at_loss=$(last_record | "$py" -c "import json, sys; print(json.loads(sys.stdin.read()).get('updates', 0))")
    pair_at_loss=$(store_env "$py" -c "import storage
from launch.run_store import latest_pair
pair = latest_pair(storage.location('$run'))
print(pair.updates if pair else 0)" 2>/dev/null | tail -1)
    log "the store holds records to $updates_at_loss updates, its newest pair at $pair_at_loss"
    # 1. ray down: the workers the lost head left behind (the local provider stops nothing on
    # them, as at the end of this check: they are stopped over SSH, as an operator would).
    timeout 180 "$ray_cli" down -y "$config" >"$state/ray_down_lost_head.log" 2>&1 || log "ray down: see its log"
    local ip
    for ip in 10.77.0.12 10.77.0.13 10.77.0.14; do
        ssh -i "$state/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
            -o ConnectTimeout=10 root@$ip 'ray stop --force >/dev/null 2>&1' 2>/dev/null || true
    done
    # 2. a new head: the host back with nothing of the old one (a fresh /tmp), then ray up.
    bash "$here/hosts.sh" start "$victim"
    log "a new head; ray up"
    up_start=$(date +%s)
    if ! ray_up; then
        tail -n 30 "$state/ray_up.log" >&2
        log "ray up failed; once more"
        ray_up || { tail -n 30 "$state/ray_up.log" >&2; log "ray up failed twice"; exit 1; }
    fi
    wait_nodes 4 600 || true
    log "the new cluster up after $(($(date +%s) - up_start)) s; the job API's tunnel, then the resume"
    # 3. the job API's tunnel to the new head; 4. the documented resume, as a new job.
    forward
    job_id=check-resumed
    "$ray_cli" job submit --address "$dashboard" --submission-id "$job_id" --no-wait --runtime-env-json "$runtime_env" -- bash -c \
        "cd ~/selfplay && .venv/bin/python -m launch --resume $run --address auto --wandb disabled $budget" \
        >"$state/job_submit_resumed.log" 2>&1 || { log "the resume's ray job submit failed; see $state/job_submit_resumed.log"; exit 1; }
}

wait_job() {
    local deadline=$(($(date +%s) + $1)) status
    while (($(date +%s) < deadline)); do
        status=$(job_status)
        [[ $status =~ ^(FAILED|STOPPED|SUCCEEDED)$ ]] && { echo "$status"; return 0; }
        sleep 5
    done
    echo TIMEOUT
}

make_cluster
log "hosts up; ray up"
cluster_up=1
up_start=$(date +%s)
# A failed `ray up` shows its log's tail here (the state directory goes with the hosts) and
# is run once more, as an operator would: on one CI run under a heavy load it failed after
# 240 s, and its log was lost with the hosts.
ray_up() { "$ray_cli" up -y --no-config-cache "$config" >"$state/ray_up.log" 2>&1; }
if ! ray_up; then
    tail -n 30 "$state/ray_up.log" >&2
    log "ray up failed after $(($(date +%s) - up_start)) s (its log's tail above); once more"
    cp "$state/ray_up.log" "$state/ray_up_first.log"
    ray_up || { tail -n 30 "$state/ray_up.log" >&2; log "ray up failed twice; see above"; exit 1; }
fi
wait_nodes 4 600  # the autoscaler starts the workers one after another: minutes on a loaded machine
ray_up_seconds=$(($(date +%s) - up_start))
ray_status up
log "4 nodes alive after $ray_up_seconds s"
# What `ray dashboard` does, without its shared ControlMaster connection: started in the
# background, its forward died with the master connection of another `ray exec` (its
# ControlPersist is 10 s), and the job API with it.
forward() {
    setsid ssh -N -L "$port:127.0.0.1:8265" -i "$state/id_ed25519" -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o ExitOnForwardFailure=yes -o ServerAliveInterval=5 root@10.77.0.11 \
        >>"$state/dashboard.log" 2>&1 &
    forward_pid=$!
    for _ in $(seq 60); do curl -sf -o /dev/null "$dashboard" && break; sleep 1; done
}
forward
if [[ $storage_mode == s3 ]]; then
    run=s3://runs/check
    # The job's runtime environment carries the store's endpoint and keys to every role.
    runtime_env=$("$py" -c "import json, sys; print(json.dumps({'env_vars': {'AWS_ENDPOINT_URL': '$store_endpoint',
        'AWS_ACCESS_KEY_ID': 'check', 'AWS_SECRET_ACCESS_KEY': sys.argv[1], 'AWS_REGION': 'us-east-1'}}))" "$(cat "$state/store_secret")")
else
    run=$state/shared/runs/check runtime_env='{}'
fi
# One shell word after --: `ray job submit` quotes each word of the entrypoint separately.
"$ray_cli" job submit --address "$dashboard" --submission-id check --no-wait --runtime-env-json "$runtime_env" -- bash -c \
    "cd ~/selfplay && .venv/bin/python -m launch --algo avi --game connect4 --preset small $budget \
    --address auto --wandb disabled --run-dir $run --set actors.num_actors=2 --set evaluation.suites=none" \
    >"$state/job_submit.log" 2>&1 || { log "ray job submit failed; see $state/job_submit.log"; exit 1; }
halfway 600
if [[ -n $outage ]]; then cut_store "$outage"; elif [[ $lose == head ]]; then lose_head; else lose_host; fi
wait_nodes 4 $((down_for ? 420 : 180)) || true  # after a long loss the autoscaler first gives the node up
host_back_nodes=$(alive_nodes)
job=$(wait_job $(if [[ -n $updates ]]; then echo $((updates * 10 + 300)); else "$py" -c "print(round($minutes * 60 + 300))"; fi))
ray_status end
"$ray_cli" job logs --address "$dashboard" "$job_id" >"$state/job_logs.txt" 2>&1 || true
log "job $job"
if [[ $lose == head ]]; then  # what the resumed run says it restored: "resumed URI from pair-N.json: iteration I, U updates"
    resumed_from=$(sed -n 's/.*resumed .* from .*: iteration [0-9]*, \([0-9]*\) updates.*/\1/p' "$state/job_logs.txt" | head -1)
fi
timeout 120 "$ray_cli" down -y "$config" >"$state/ray_down.log" 2>&1 && cluster_up=0
# `ray down` with the local provider stops Ray on the head only (Ray's teardown runs one
# `ray stop`, on the head): count what it left on the workers, then stop those.
left=0
for ip in 10.77.0.12 10.77.0.13 10.77.0.14; do
    n=$(ssh -i "$state/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
        root@$ip 'n=$(pgrep -c raylet || true); ray stop --force >/dev/null 2>&1; echo $n' 2>/dev/null || echo 0)
    left=$((left + ${n:-0}))
done
store_env "$py" "$here/summary.py" "$run" --storage "$storage_mode" --learner-host-after "$learner_host_after" --hosts 4 --ray-up-seconds "$ray_up_seconds" --job-status "$job" \
    --lost-host "$victim" --job-at-loss "${job_at_loss:-none}" --storage-outage "${outage:-0}" --down-s "${down_for:-0}" \
    $(if [[ $lose == head ]]; then echo "--head-lost 1 --updates-at-loss $updates_at_loss --pair-at-loss $pair_at_loss --resumed-from-updates ${resumed_from:-0}"; fi) \
    --nodes-after-return "$host_back_nodes" --workers-left-running "$left" \
    --seconds $(($(date +%s) - t0))
