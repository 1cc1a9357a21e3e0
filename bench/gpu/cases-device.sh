#!/usr/bin/env bash
# cases-device.sh - some of the suite's cases in one device call (the whole
# suite is suite-device.sh): bench/gpu/run.py over the stage that
#   LF_BENCH_E2E_LEAN=1 bash bench/gpu/prepare.sh .device/gpu-bench sm_90 BUILD
# made (carry .device/gpu-bench), each case's variants timed side by side,
# the table printed, JSON and PNG in OUT. Then, when a rows-tune stage is
# carried (ROWS_STAGE, bench/table/rows-tune-prepare.sh), the row templates'
# variants at the held-out sizes (bench/table/rows-tune-device.sh).
#   bash bench/gpu/cases-device.sh CASE[,CASE] OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cases=${1:?usage: cases-device.sh CASE[,CASE] OUT}
out=$(mkdir -p "${2:?usage: cases-device.sh CASE[,CASE] OUT}" && cd "$2" && pwd)
cd "$root"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 bench/gpu/run.py .device/gpu-bench --cases "$cases" --json "$out/bench.json" \
  --png "$out/bench.png" > "$out/run.log" 2>&1
echo "== run.py: exit $?"
grep -A30 '^ceilings: copy' "$out/run.log" | tail -30
rows=${ROWS_STAGE:-.device/D-rows}
if [ -d "$rows" ]; then
  bash bench/table/rows-tune-device.sh "$rows" "$out/rows" > "$out/rows.log" 2>&1
  echo "== rows-tune-device.sh: exit $?"
  tail -25 "$out/rows.log"
fi
