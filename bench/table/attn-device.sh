#!/bin/bash
# attn-device.sh - the causal-attention templates (kernels/table/attn_any.py)
# on the GPU machine: bench/table/attn_bench.py's attention models (the
# attention subgraph of examples/minigpt_block.mlir at several S x H x D)
# compiled by the pass on the offline default (the replay set misses, the
# table answers; at 1024 x 12 x 64 the replay set's handwritten kernel
# answers, the reference point), each candidate verified and timed against
# the default lowering; then the same math in torch
# (scaled_dot_product_attention, causal: eager, torch.compile, bf16 flash
# attention for scale), and the summary table.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop:
#   bash bench/table/attn-device.sh OUT
# QUICK=1 fewer models; NO_TORCH=1 skips torch; TABLE=DIR another table.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: attn-device.sh OUT}" && cd "$1" && pwd)
[ -x "$root/.device/loop/bin/llm-fuse-opt" ] || { echo "no stage in .device/loop (bench/loop/prepare.sh)" >&2; exit 2; }
. "$root/bench/loop/device-env.sh"
[ -z "${TABLE:-}" ] || export LLM_FUSE_TABLE_DIR=$TABLE
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 "$root/bench/table/attn_bench.py" gen "$out" ${QUICK:+--quick} || exit 1
mkdir -p "$out/reports" "$out/logs"
start=$(date +%s)
for f in "$out"/models/*.mlir; do
  name=$(basename "$f" .mlir)
  t0=$(date +%s%N)
  # attention-like subgraphs are verified with lenient non-finite values
  # (the pass asks for it by class)
  llm-fuse-opt --llm-fuse="arch=sm_90a max-refinements=0 cache-dir=$out/cache report=$out/reports/$name.json remarks=false" \
    "$f" -o /dev/null 2> "$out/logs/$name.err"
  echo "== $name: exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
echo "== pass: all models in $(( $(date +%s) - start )) s"
[ -n "${NO_TORCH:-}" ] || timeout 420 python3 "$root/bench/table/attn_bench.py" torch "$out" > "$out/torch.log" 2>&1
tail -3 "$out/torch.log" 2>/dev/null
python3 "$root/bench/table/attn_bench.py" summarize "$out"
