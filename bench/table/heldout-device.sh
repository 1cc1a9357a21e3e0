#!/bin/bash
# heldout-device.sh - bench/table/heldout.py's held-out models compiled on
# the GPU machine by the llm-fuse pass on the offline default (provider
# replay: the replay set, then the pattern table), with verification and
# timing on this GPU; then heldout.py summarize prints per model and
# subgraph where the candidate came from, kernel ms / fallback ms / speedup,
# and the verified counts. `heldout.py device-script` stages the models.
# Then, in the same run, bench/table/torch_time.py times every subgraph's
# torch translation (HELDOUT/torch/manifest.json, made by device-script
# with bench/table/torch_ref.py) in torch eager and torch.compile on the
# same sizes and element types, and the copy bandwidth once; summarize
# adds the table against torch and the totals against issue 15 point 7's
# targets. A torch failure never stops the run: it is a row's note.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop and the models in .device/heldout (heldout.py device-script
# copies them there):
#   bash bench/table/heldout-device.sh [HELDOUT] OUT
# HELDOUT defaults to .device/heldout (models/ and models.json).
# ARCH (default sm_90a), OPTIONS (more --llm-fuse options) and ONLY (an
# extended regex: only the models whose names match, e.g. to split the run
# under a time limit; the cache and reports of earlier runs into OUT are
# kept then) may be set. TORCH=0 skips the torch part;
# TORCH_COMPILE_BUDGET_S (default 180) stops compiling once the compiles
# took that long in all (later subgraphs: eager only; the subgraphs the
# pass swapped are compiled first); TORCH_TIMEOUT_S (default 360) bounds
# the whole torch part; TORCH_BUDGET_MS (default 100) is the timing budget
# per variant and subgraph; TORCH_PAD_US (default 200) the GPU sleep before
# each timing sample (run.py's PadTimer: GPU time only, for torch.compile's
# calls as for ours); TORCH_FLUSH (memset, the default; clean; both) the L2
# flush before each sample (torch_time.py --flush: clean adds a read-only
# sweep after the memset, both times everything under each, and the summary
# then gives the memory-bound target under the clean flush too). The kernels the pass swapped are rebuilt from its cache
# (heldout_ours.py) and timed by torch_time.py too, in the same rounds as
# eager and torch.compile: the summary's ratio uses that time (one harness),
# and keeps the pass's own timing beside it.
set -uo pipefail
root=$(pwd)
if [ $# -ge 2 ]; then held=$1; shift; else held=$root/.device/heldout; fi
held=$(cd "$held" && pwd)
out=$(mkdir -p "${1:?usage: heldout-device.sh [HELDOUT] OUT}" && cd "$1" && pwd)
[ -f "$held/models.json" ] || { echo "no $held/models.json" >&2; exit 2; }
[ -x "$root/.device/loop/bin/llm-fuse-opt" ] || { echo "no stage in .device/loop (bench/loop/prepare.sh)" >&2; exit 2; }
ld0=${LD_LIBRARY_PATH:-}  # torch runs with the machine's own libraries
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
# The swapped kernels, rebuilt from the pass's cache, for torch_time.py to
# time beside torch in one process (heldout_ours.py).
python3 "$root/bench/table/heldout_ours.py" "$out" --arch "$arch" > "$out/logs/ours.log" 2>&1
tail -1 "$out/logs/ours.log"
if [ "${TORCH:-1}" != 0 ] && [ -f "$held/torch/manifest.json" ]; then
  mkdir -p "$out/torch" && cp "$held/torch/manifest.json" "$out/torch/"
  t0=$(date +%s)
  env LD_LIBRARY_PATH="$ld0" timeout -k 20 "${TORCH_TIMEOUT_S:-360}" \
    python3 "$root/bench/table/torch_time.py" "$held/torch/manifest.json" "$out/torch.json" \
      --compile-budget-s "${TORCH_COMPILE_BUDGET_S:-180}" --budget-ms "${TORCH_BUDGET_MS:-100}" \
      --reports "$out/reports" --ours "$out/ours" --rt "$stage/lib/libllm_fuse_rt.so" \
      --pad-us "${TORCH_PAD_US:-200}" --flush "${TORCH_FLUSH:-memset}" \
      ${ONLY:+--only "$ONLY"} > "$out/logs/torch.log" 2>&1
  rc=$?
  grep -E "^copy bandwidth|^torch:|^torch_time:" "$out/logs/torch.log" || tail -3 "$out/logs/torch.log"
  echo "== torch eager / torch.compile: exit $rc in $(( $(date +%s) - t0 )) s (log: logs/torch.log)"
elif [ "${TORCH:-1}" != 0 ]; then
  echo "== no $held/torch/manifest.json (heldout.py device-script makes it): no torch timings"
fi
python3 "$root/bench/table/heldout.py" summarize ${ONLY:+--present} "$out" | tee "$out/summary.txt"
