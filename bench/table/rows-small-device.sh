#!/usr/bin/env bash
# rows-small-device.sh - on the GPU machine, one call: the launch-bound row
# kernels of issue 15 point 7 (bench/table/rows_tune.py SMALL: the held-out
# sizes 12-41% slower than torch.compile in session 25, and mid / large
# sizes of the same entries), every tune variant of each case's entries
# before (--old-table) and after, checked against torch eager, the new ones
# verified by llm-fuse-verify, all timed beside torch eager, torch.compile
# and a copy of the same bytes in the same interleaved rounds (bench/gpu/
# run.py's method: a 256 MiB memset before each call, events, median), the
# whole timing done twice: run.py's timer, then (--repeat 2 --pad-us 200) the
# same with the GPU held busy 200 us before each sample (PadTimer), so that
# neither side's host launch cost (torch.compile's 20-35 us) shows in the events.
# Stage on the build machine first:
#   python3 bench/table/rows_tune.py prepare .device/rowsmall --build BUILD \
#       --set small --old-table OLD_V1_COPY [--new-table DIR]
# then (carry .device/rowsmall):
#   bash bench/table/rows-small-device.sh .device/rowsmall $OUT [DEADLINE_S]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: rows-small-device.sh STAGE OUT [DEADLINE_S]}" && pwd)
out=$(mkdir -p "${2:?usage: rows-small-device.sh STAGE OUT [DEADLINE_S]}" && cd "$2" && pwd)
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv,noheader || true
cd "$root"
t0=$SECONDS
env PYTHONUNBUFFERED=1 python3 bench/table/rows_tune.py run "$stage" "$out/rows-small.json" \
  --verify-new-only --repeat 2 --pad-us 200 --deadline-s "${3:-200}" 2> "$out/stderr.log" \
  | tee "$out/rows-small.log"
echo "== rows_tune.py run: exit ${PIPESTATUS[0]} in $((SECONDS - t0)) s"
grep -i "error\|traceback" "$out/stderr.log" | head -5
