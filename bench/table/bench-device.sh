# bench-device.sh - sourced by rows-device.sh and attn-device.sh: the body
# they share. Expects $root, $out and $bench (a bench/table module with the
# commands gen, torch and summarize) and $torch_timeout; compiles each of the
# module's models with the pass on the offline default (every candidate
# verified and timed against the default lowering), times torch, and prints
# the summary. QUICK=1, NO_TORCH=1 and TABLE=DIR as the callers say.
[ -x "$root/.device/loop/bin/llm-fuse-opt" ] || { echo "no stage in .device/loop (bench/loop/prepare.sh)" >&2; exit 2; }
. "$root/bench/loop/device-env.sh"
[ -z "${TABLE:-}" ] || export LLM_FUSE_TABLE_DIR=$TABLE
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 "$root/bench/table/$bench" gen "$out" ${QUICK:+--quick} || exit 1
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
[ -n "${NO_TORCH:-}" ] || timeout "$torch_timeout" python3 "$root/bench/table/$bench" torch "$out" > "$out/torch.log" 2>&1
tail -3 "$out/torch.log" 2>/dev/null
python3 "$root/bench/table/$bench" summarize "$out"
