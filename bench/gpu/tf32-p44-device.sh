#!/usr/bin/env bash
# tf32-p44-device.sh - KernelBench L3 P44 on sm_90a in both precision modes
# (issue 16 point 4) in one device call: bench/gpu/p44-exact-device.sh (AOT
# with every subgraph verified, outputs against float64, torch eager and
# torch.compile with and without TF32; per-GEMM table against cuBLAS), then
# what each subgraph kept and how its verification went
# (bench/gpu/p44_report_summary.py: the table entry, the worst
# error/tolerance, the elements that passed by the TF32 componentwise
# bound of docs/verification.md "TF32 mode"). Carry .device/loop.
#   bash bench/gpu/tf32-p44-device.sh OUT ["32 128"]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: tf32-p44-device.sh OUT [BATCHES]}" && cd "$1" && pwd)
batches=${2:-"32 128"}
cd "$root"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
bash bench/gpu/p44-exact-device.sh "$out" "$batches"
echo "== what each subgraph kept"
python3 bench/gpu/p44_report_summary.py "$out"/p44/*.report.json --json "$out/p44-kept.json"
# the reports themselves are large (verdicts of every trial): keep the summary
gzip -9 "$out"/p44/*.report.json 2>/dev/null || true
