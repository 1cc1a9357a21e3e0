#!/usr/bin/env bash
# final-device.sh - one device call for the end of a session's GPU work:
# KernelBench L3 P44 in both precision modes (bench/gpu/tf32-p44-device.sh:
# AOT, every subgraph verified, against torch eager / torch.compile with and
# without TF32, what each subgraph kept), then issue 15's held-out models and
# synthesized kernels (bench/table/issue15-device.sh). Carry .device/loop
# (tools and packed table) and .device/heldout.
#   bash bench/gpu/final-device.sh OUT ["32 128"]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: final-device.sh OUT [BATCHES]}" && cd "$1" && pwd)
cd "$root"
t0=$SECONDS
bash bench/gpu/tf32-p44-device.sh "$out/p44" "${2:-32 128}" > "$out/p44.log" 2>&1
echo "== tf32-p44-device.sh: exit $? in $((SECONDS - t0)) s"
grep -A20 '^KernelBench L3 P44' "$out/p44/p44.log" | head -20
sed -n '/^== what each subgraph kept/,$p' "$out/p44.log" | grep -v '^      '
t0=$SECONDS
bash bench/table/issue15-device.sh "$out/i15" > "$out/i15.log" 2>&1
echo "== issue15-device.sh: exit $? in $((SECONDS - t0)) s"
tail -60 "$out/i15.log"
