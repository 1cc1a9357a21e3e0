#!/usr/bin/env bash
# verify-device.sh - the one device call for the verifier: the corpus table
# and the benchmark, from a directory staged by scripts/stage-verify.py.
#   (GPU machine) bash scripts/verify-device.sh [STAGE]
# Writes $OUT/table.txt, $OUT/verdicts.jsonl, $OUT/bench.txt.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=${1:-$root/.device/verify}
out=${OUT:-/tmp/verify-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$out/gpu.txt" 2>&1
PYTHONUNBUFFERED=1 python3 "$root/bench/verify_bench.py" "$stage" --repeat 5 > "$out/bench.txt" 2>&1
bash "$root/scripts/verify-corpus.sh" "$stage" "$out" > "$out/table.txt" 2>&1
rc=$?
cat "$out/gpu.txt" "$out/bench.txt" "$out/table.txt"
exit $rc
