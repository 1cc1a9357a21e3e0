#!/bin/bash
# rows-device.sh - the general row templates (kernels/table/rows_any.py) on
# the GPU machine: bench/table/rows_bench.py's models compiled by the pass on
# the offline default (the replay set misses, the table answers), each
# candidate verified and timed against the default lowering; then the same
# math in torch eager and torch.compile, and the summary table.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop:
#   bash bench/table/rows-device.sh OUT
# QUICK=1 fewer models; TABLE=DIR another table (e.g. only the general
# entries, to time them where a size-specific entry would win).
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: rows-device.sh OUT}" && cd "$1" && pwd)
[ -x "$root/.device/loop/bin/llm-fuse-opt" ] || { echo "no stage in .device/loop (bench/loop/prepare.sh)" >&2; exit 2; }
. "$root/bench/loop/device-env.sh"
[ -z "${TABLE:-}" ] || export LLM_FUSE_TABLE_DIR=$TABLE
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 "$root/bench/table/rows_bench.py" gen "$out" ${QUICK:+--quick}
mkdir -p "$out/reports" "$out/logs"
start=$(date +%s)
for f in "$out"/models/*.mlir; do
  name=$(basename "$f" .mlir)
  t0=$(date +%s%N)
  llm-fuse-opt --llm-fuse="arch=sm_90a max-refinements=0 cache-dir=$out/cache report=$out/reports/$name.json remarks=false" \
    "$f" -o /dev/null 2> "$out/logs/$name.err"
  echo "== $name: exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
echo "== pass: all models in $(( $(date +%s) - start )) s"
[ -n "${NO_TORCH:-}" ] || timeout 300 python3 "$root/bench/table/rows_bench.py" torch "$out" > "$out/torch.log" 2>&1
tail -3 "$out/torch.log" 2>/dev/null
python3 "$root/bench/table/rows_bench.py" summarize "$out"
