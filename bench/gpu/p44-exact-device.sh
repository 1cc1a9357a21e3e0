#!/usr/bin/env bash
# p44-exact-device.sh - KernelBench L3 P44 with the exact f32 path of
# sm_90a (the 3xTF32 importer entries, docs/verification.md "Exact f32 on
# sm_90a") in one device call: bench/gpu/p44-device.sh compiled for
# P44_CHIP=sm_90a (AOT, every subgraph verified, outputs against float64,
# torch eager and torch.compile with and without TF32), p44_gemms.py's
# per-GEMM table against cuBLAS for each batch, then, when its stage is
# carried, bench/gpu/p44-x3-device.sh (each GEMM in its own process, its
# phase printed). Carry .device/loop (table packed) and .device/p44x3.
#   bash bench/gpu/p44-exact-device.sh OUT ["32 128"]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: p44-exact-device.sh OUT [BATCHES]}" && cd "$1" && pwd)
batches=${2:-"32 128"}
cd "$root"
t0=$SECONDS
P44_CHIP=sm_90a bash bench/gpu/p44-device.sh "$out/p44" "$batches" > "$out/p44.log" 2>&1
echo "== p44-device.sh (sm_90a): exit $? in $((SECONDS - t0)) s"
grep -v '^  sg_\|UserWarning\|warnings.warn' "$out/p44.log" | tail -30
for b in $batches; do
  [ -f "$out/p44/p44_b$b-ours.report.json" ] || continue
  python3 bench/gpu/p44_gemms.py "$out/p44/p44_b$b-ours.report.json" --json "$out/p44_gemms_b$b.json" \
    > "$out/p44_gemms_b$b.log" 2>&1
  echo "== p44_gemms.py batch $b: exit $?"; tail -8 "$out/p44_gemms_b$b.log"
done
if [ -d .device/p44x3 ]; then
  t0=$SECONDS
  bash bench/gpu/p44-x3-device.sh .device/p44x3 "$out/p44x3" > "$out/p44x3.log" 2>&1
  echo "== p44-x3-device.sh: exit $? in $((SECONDS - t0)) s"; tail -25 "$out/p44x3.log"
fi
