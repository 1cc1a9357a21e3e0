#!/bin/bash
# gemm-tma-device.sh - the pattern table's TMA-fed bf16 GEMM templates
# (kernels/table/gemm_any.py *_0tma, docs/pattern-table.md) on the GPU
# machine, at sizes the replay set never saw: each model is a shipped
# example with M, N and K changed (sed), so its fingerprints are new and
# its pattern keys the families'. The llm-fuse pass compiles each on the
# offline default (provider replay: the replay set misses, the table
# answers), builds, verifies against the subgraph's own lowering and times
# every candidate, and swaps what verified and is not slower. Then one line
# per subgraph (the entry that answered, verified or not, the decision,
# kernel and fallback ms, TFLOP/s and cuBLAS's time for the same GEMM and
# epilogue in torch eager), and the count of subgraphs a TMA template
# served, verified and swapped. Run from the repository root with
# bench/loop/prepare.sh's stage carried in .device/loop:
#   bash bench/table/gemm-tma-device.sh OUT
# TABLE (another table folder), STAGE (another stage folder) and
# NO_TORCH=1 (no cuBLAS column) may be set. Prints at the end
#   gemm-tma: N subgraph(s) answered by a TMA template (*_0tma), V verified,
#   S swapped, R rejected by the verifier
# (8 subgraphs in the 6 models) and exits 1 when R > 0.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: gemm-tma-device.sh OUT}" && cd "$1" && pwd)
stage=${STAGE:-$root/.device/loop}
[ -x "$stage/bin/llm-fuse-opt" ] || { echo "no stage in $stage (bench/loop/prepare.sh)" >&2; exit 2; }
. "$root/bench/loop/device-env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
n=$(ls "$LLM_FUSE_TABLE_DIR"/v1/*-gemm_any_*_0tma.json 2>/dev/null | wc -l)
echo "table $LLM_FUSE_TABLE_DIR: $n TMA GEMM template(s)"
[ "$n" -gt 0 ] || { echo "no *_0tma entries: rebuild the table (kernels/table/build.py)" >&2; exit 2; }
m=$out/models && rm -rf "$m" "$out/cache" && mkdir -p "$m" "$out/reports" "$out/logs"
# name|example|sed expressions (M, N, K: none a multiple of every tile unless said)
cases=(
  "swiglu_m3000_n5000_k2040|swiglu|s/8192x4096/3000x2040/g; s/4096x14336/2040x5000/g; s/8192x14336/3000x5000/g"
  "swiglu_m6144_n11008_k4096|swiglu|s/8192x4096/6144x4096/g; s/4096x14336/4096x11008/g; s/8192x14336/6144x11008/g"
  "gelu_m6000_n7000_k3000|bench/gemm_bias_gelu|s/16384x16384/6000x7000/g; s/16384x4096/6000x3000/g; s/4096x16384/3000x7000/g; s/16384xbf16/7000xbf16/g"
  "gelu_m8192_n6144_k2048|bench/gemm_bias_gelu|s/16384x16384/8192x6144/g; s/16384x4096/8192x2048/g; s/4096x16384/2048x6144/g; s/16384xbf16/6144xbf16/g"
  "mlp_m2000_d1000_h2600|mlp_block|s/4096x/2000x/g; s/768/1000/g; s/3072/2600/g"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name ex expr <<< "$c"
  sed "$expr" "$root/examples/$ex.mlir" > "$m/$name.mlir"
done
cp "$root/lit_tests/table/Inputs/gemm-tma-odd.mlir" "$m/odd_m1000_n1032_k776.mlir"
for f in "$m"/*.mlir; do
  name=$(basename "$f" .mlir)
  t0=$(date +%s%N)
  llm-fuse-opt --llm-fuse="arch=sm_90a max-refinements=0 cache-dir=$out/cache report=$out/reports/$name.json remarks=false" \
    "$f" -o "$out/$name.out.mlir" 2> "$out/logs/$name.err"
  echo "== $name: exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
python3 "$root/bench/table/gemm_tma_summary.py" "$out" ${NO_TORCH:+--no-torch}
