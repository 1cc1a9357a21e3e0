#!/usr/bin/env bash
# suite-device.sh - the whole GPU suite in one device call (issue 8's cases,
# the MiniGPT block end to end, and KernelBench L3 P44 at batch 32 and 128,
# issue 16): table, JSON and PNG in OUT. Carry .device/loop
# (bench/loop/prepare.sh) and .device/gpu-bench, staged here with
#   LF_BENCH_E2E_LEAN=1 bash bench/gpu/prepare.sh .device/gpu-bench sm_90 build
# then, on the GPU machine, from the repository root:
#   bash bench/gpu/suite-device.sh OUT [P44_BATCHES]
# The whole of it runs past one 10-minute device call: P44_JSON=FILE takes
# P44 from an earlier call's p44-device.sh (its p44.json, carried) instead.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: suite-device.sh OUT [P44_BATCHES]}" && cd "$1" && pwd)
batches=${2:-"32 128"}
dir=$root/.device/gpu-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
bash "$root/bench/gpu/e2e-device.sh" "$dir" "$out/e2e" > "$out/e2e.log" 2>&1 ||
  { echo "suite-device: e2e-device.sh failed:"; tail -5 "$out/e2e.log"; }
grep '^e2e-device' "$out/e2e.log"
p44=${P44_JSON:-$out/p44/p44.json}
if [ -z "${P44_JSON:-}" ] && [ -n "$batches" ]; then
  bash "$root/bench/gpu/p44-device.sh" "$out/p44" "$batches" > "$out/p44.log" 2>&1 ||
    { echo "suite-device: p44-device.sh failed:"; tail -5 "$out/p44.log"; }
  grep -v '^  sg_\|UserWarning\|warnings.warn' "$out/p44.log" | tail -25
fi
python3 "$root/bench/gpu/run.py" "$dir" --json "$out/bench.json" --png "$out/bench.png" \
  --p44 "$p44" > "$out/run.log" 2>&1
rc=$?
grep -A40 '^ceilings: copy' "$out/run.log" | tail -40
echo "suite-device: run.py exit $rc"
exit $rc
