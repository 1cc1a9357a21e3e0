#!/usr/bin/env bash
# rows-speed-device.sh - on the GPU machine, one call: the row entries' tune
# variants (old = git REV, new = working tree) at the held-out sizes of
# issue 15 that were slower than torch.compile or under 90% of the copy
# bandwidth (bench/table/rows_tune.py CASES), each checked against torch
# eager, verified by llm-fuse-verify and timed beside torch eager,
# torch.compile, a copy of the same bytes and the 1 GiB copy (rows_tune.py
# run: OUT/rows-speed.log, .json); then bench/table/rows_evict.py (the row
# maxes and the small cases under a dirty and a clean L2 flush, a Triton
# row max with and without evict_first: OUT/rows-evict.log, .json).
# Stage on the build machine first:
#   bash bench/table/rows-tune-prepare.sh .device/ROWSPEED BUILD HEAD
# then (carry .device/ROWSPEED):
#   bash bench/table/rows-speed-device.sh .device/ROWSPEED $OUT [DEADLINE_S]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: rows-speed-device.sh STAGE OUT [DEADLINE_S]}" && pwd)
out=$(mkdir -p "${2:?usage: rows-speed-device.sh STAGE OUT [DEADLINE_S]}" && cd "$2" && pwd)
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv,noheader || true
cd "$root"
t0=$SECONDS
# TORCH_LOGS=output_code during the timing makes every torch.compile call
# CPU-bound (the first run of this script, 2026-11-25: 0.0325 ms for the
# 512-row max that takes 0.008-0.010 ms): set INDUCTOR_LOG=1 only to dump
# Inductor's kernels, and do not read its compile times then.
env PYTHONUNBUFFERED=1 ${INDUCTOR_LOG:+TORCH_LOGS=output_code} python3 bench/table/rows_tune.py run \
  "$stage" "$out/rows-speed.json" --deadline-s "${3:-200}" 2> "$out/stderr.log" \
  | tee "$out/rows-speed.log"
echo "== rows_tune.py run: exit ${PIPESTATUS[0]} in $((SECONDS - t0)) s"
grep -i "error\|traceback" "$out/stderr.log" | head -5
t0=$SECONDS
PYTHONUNBUFFERED=1 python3 bench/table/rows_evict.py "$stage" "$out/rows-evict.json" \
  2>> "$out/stderr.log" | tee "$out/rows-evict.log"
echo "== rows_evict.py: exit ${PIPESTATUS[0]} in $((SECONDS - t0)) s"
