#!/usr/bin/env bash
# issue15-device.sh - issue 15's GPU checks in one device call: the held-out
# models (heldout-device.sh: offline default, every subgraph verified and
# timed, torch eager/compile, the point 7 totals), the synthesized
# elementwise kernels (synth-device.sh on examples/importer/ew_any.mlir) and
# the row templates' tune variants at the held-out sizes that missed
# (rows-tune-device.sh). Carry .device/loop (bench/loop/prepare.sh, tools
# and packed table), .device/heldout (heldout.py device-script) and
# .device/D-rows (rows-tune-prepare.sh); from the repository root:
#   bash bench/table/issue15-device.sh OUT
# Each part's full output is in OUT/<part>.log; this prints the summaries.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: issue15-device.sh OUT}" && cd "$1" && pwd)
cd "$root"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
t0=$SECONDS
bash bench/table/heldout-device.sh .device/heldout "$out/heldout" > "$out/heldout.log" 2>&1
echo "== heldout-device.sh: exit $? in $((SECONDS - t0)) s"
sed -n '/^targets (issue 15/,$p' "$out/heldout.log"
t0=$SECONDS
bash bench/table/synth-device.sh "$out/synth" > "$out/synth.log" 2>&1
echo "== synth-device.sh: exit $? in $((SECONDS - t0)) s"
tail -15 "$out/synth.log"
if [ -d .device/D-rows ]; then
  t0=$SECONDS
  bash bench/table/rows-tune-device.sh .device/D-rows "$out/rows" > "$out/rows.log" 2>&1
  echo "== rows-tune-device.sh: exit $? in $((SECONDS - t0)) s"
  tail -25 "$out/rows.log"
fi
