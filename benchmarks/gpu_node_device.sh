#!/usr/bin/env bash
# The GPU node's one prepared measurement (docs/benchmarks.md, One GPU node), as a device call runs it in the
# repository root with the wheels of `python -m benchmarks.node_wheels` carried in .whl:
#   bash benchmarks/gpu_node_device.sh [MINUTES]
# It installs Ray and the missing wheels, runs the CUDA tests of the learner, then
# `python -m benchmarks.gpu_node` with a MINUTES-minute (default 5) Connect Four AVI run,
# and leaves in $OUT (at most 8 files of 16 MB) the summary, metrics.jsonl, config.json,
# the log, and the newest checkpoint split in parts of 15 MB, which
# `cat ckpt-*.pt.part.* > ckpt.pt` joins on the machine that scores it.
set -uo pipefail
minutes=${1:-5}
out=${OUT:-/tmp/gpu_node_out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" >&2; exit 3; }
export PYTHONPATH=/tmp/site:$PWD RAY_AUTH_MODE=disabled PYTHONUNBUFFERED=1 HOME=/tmp/home
mkdir -p "$HOME"
log="$out/log.txt"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; df -h /dev/shm | tail -1; nproc; } | tee "$log"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/learner/test_learner_step.py 2>&1 | tail -4 | tee -a "$log"
# Past its limit the command is stopped and what it wrote still comes back.
limit=$(python3 -c "print(int(330 + 60 * float('$minutes')))")  # the phases before training, start, end
timeout "$limit" python3 -m benchmarks.gpu_node --minutes "$minutes" --out /tmp/gn > /tmp/gn.log 2>&1
echo "gpu_node exit status $?" | tee -a "$log"
grep -v -e '^\s*$' -e 'core_worker.cc' -e 'blocking ray.get' /tmp/gn.log | tail -200 >> "$log"
cp /tmp/gn/summary.json /tmp/gn/run/metrics.jsonl /tmp/gn/run/config.json "$out"/ 2>/dev/null
checkpoint=$(ls /tmp/gn/run/checkpoints/*.pt 2>/dev/null | tail -1)
if [ -n "$checkpoint" ]; then
    cp "$checkpoint.sha256" "$out"/ && split -b 15000000 "$checkpoint" "$out/$(basename "$checkpoint").part."
fi
ls -la "$out"
tail -c 4000 "$log"
