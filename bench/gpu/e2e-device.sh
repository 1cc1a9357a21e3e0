#!/usr/bin/env bash
# e2e-device.sh - on the GPU machine, before bench/gpu/run.py: compiles the
# MiniGPT block staged by prepare.sh (DIR/e2e) with llm-fuse-compile twice,
# as bench/e2e/run-device.sh does, and links each object into a shared
# library that run.py loads with ctypes (the block-end-to-end case):
#
#   DIR/e2e/swapped.so   the llm-fuse pass on (arch=sm_90, offline, the
#                        shipped replay set): every subgraph acquired,
#                        built, verified on this GPU and swapped
#   DIR/e2e/default.so   --no-llm-fuse: the upstream default GPU lowering
#
# Both link against DIR/libllm_fuse_rt.so, the runtime run.py loads, so
# the model and the suite share one runtime and the primary context.
#
#   bash bench/gpu/e2e-device.sh DIR [OUT]    (OUT gets the pass's report)
set -euo pipefail
dir=$(cd "${1:?usage: e2e-device.sh DIR [OUT]}" && pwd)
out=${2:-$dir/e2e}
root=$(cd "$(dirname "$0")/../.." && pwd)
e=$dir/e2e
work=/tmp/lf-gpu-e2e
rm -rf "$work" && mkdir -p "$work/mlir" "$out"
pack=$e/mlir-runtime.tar.xz
[ -f "$pack" ] || pack=$root/.device/loop/mlir-runtime.tar.xz  # LF_BENCH_E2E_LEAN=1
tar -xJf "$pack" -C "$work/mlir"
lib="$work/mlir/lib:/usr/local/nvidia/lib64"
entry=$(cat "$e/entry")
for v in swapped default; do
  if [ $v = swapped ]; then
    opts=(--llm-fuse-options "arch=sm_90 offline=true cache-dir=$work/cache report=$out/e2e-$v.report.json")
  else
    opts=(--no-llm-fuse)
  fi
  t0=$EPOCHREALTIME
  env LD_LIBRARY_PATH="$lib" PATH="$work/mlir/bin:$PATH" \
    LLM_FUSE_REPLAY_DIR="$root/kernels/replay" \
    LLM_FUSE_PROMPTS_DIR="$root/llm_client/prompts" \
    CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    "$e/bin/llm-fuse-compile" "$e/model.mlir" -o "$work/$v.o" --chip sm_90 "${opts[@]}" \
    2> >(tee "$out/e2e-$v.compile.log" >&2)
  echo "e2e-device: $v compiled in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
  gcc -std=c17 -O2 -Wall -Wextra -Werror -shared -fPIC -I"$work" -I"$e" \
    -DENTRY="$entry" -DHEADER="\"$v.h\"" "$root/bench/gpu/aot_shim.c" "$work/$v.o" \
    -L"$dir" -lllm_fuse_rt -Wl,-rpath,"$dir" -o "$e/$v.so"
done
if [ -f "$out/e2e-swapped.report.json" ]; then
  python3 -c "import json, sys; print('e2e-device: swapped:', json.load(open(sys.argv[1]))['summary'])" \
    "$out/e2e-swapped.report.json"
fi
