#!/bin/bash
# heldout-device.sh - bench/table/heldout.py's held-out models compiled on
# the GPU machine by the llm-fuse pass on the offline default (provider
# replay: the replay set, then the pattern table), with verification and
# timing on this GPU; then heldout.py summarize prints per model and
# subgraph where the candidate came from, kernel ms / fallback ms / speedup,
# and the verified counts. `heldout.py device-script` stages the models.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop and the models in .device/heldout (heldout.py device-script
# copies them there):
#   bash bench/table/heldout-device.sh [HELDOUT] OUT
# HELDOUT defaults to .device/heldout (models/ and models.json).
# ARCH (default sm_90a), OPTIONS (more --llm-fuse options) and ONLY (an
# extended regex: only the models whose names match, e.g. to split the run
# under a time limit; the cache and reports of earlier runs into OUT are
# kept then) may be set.
set -uo pipefail
root=$(pwd)
if [ $# -ge 2 ]; then held=$1; shift; else held=$root/.device/heldout; fi
held=$(cd "$held" && pwd)
out=$(mkdir -p "${1:?usage: heldout-device.sh [HELDOUT] OUT}" && cd "$1" && pwd)
[ -f "$held/models.json" ] || { echo "no $held/models.json" >&2; exit 2; }
[ -x "$root/.device/loop/bin/llm-fuse-opt" ] || { echo "no stage in .device/loop (bench/loop/prepare.sh)" >&2; exit 2; }
. "$root/bench/loop/device-env.sh"
arch=${ARCH:-sm_90a}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
mkdir -p "$out/models" "$out/reports" "$out/logs"
cp "$held/models.json" "$out/"
cp "$held"/models/*.mlir "$out/models/"
[ -n "${ONLY:-}" ] || rm -rf "$out/cache"
start=$(date +%s)
for f in "$out"/models/*.mlir; do
  name=$(basename "$f" .mlir)
  if [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]]; then continue; fi
  t0=$(date +%s%N)
  llm-fuse-opt --llm-fuse="arch=$arch max-refinements=0 cache-dir=$out/cache report=$out/reports/$name.json remarks=false ${OPTIONS:-}" \
    "$f" -o /dev/null 2> "$out/logs/$name.err"
  rc=$?
  echo "== $name: exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
echo "== all models in $(( $(date +%s) - start )) s"
python3 "$root/bench/table/heldout.py" summarize ${ONLY:+--present} "$out"
