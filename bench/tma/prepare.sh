#!/bin/bash
# prepare.sh - the build-machine half of bench/tma/tma-device.sh's AOT step:
# swaps the tiny TMA kernel (lit_tests/builder/Inputs/ok-tma-copy.mlir) into
# bench/tma/copy-subgraph.mlir without verifying it (lf_swap_tool), compiles
# the result ahead of time (llm-fuse-compile: the host encodes the tensor
# map with lf_rt_tensor_map_encode and passes it by value), and stages
# model.o, model.h, libllm_fuse_rt.a and driver.c in .device/tma (carry it).
#   bash bench/tma/prepare.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$root/.device/tma
rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LLM_FUSE_BUILD_KERNEL=$build/bin/llm-fuse-build-kernel
"$build/bin/llm-fuse-opt" --llm-fuse-outline=remarks=false \
  "$root/bench/tma/copy-subgraph.mlir" -o "$tmp/outlined.mlir"
sg=$(grep -o 'func.func private @sg_[0-9a-f]*' "$tmp/outlined.mlir" | head -1 | sed 's/.*@//')
LF_SWAP_TOOL_FULL=1 "$build/passes/lf_swap_tool" "$tmp/outlined.mlir" "$sg" \
  "$root/lit_tests/builder/Inputs/ok-tma-copy.mlir" sm_90 > "$tmp/swapped.mlir"
grep -q 'call @lf_rt_tensor_map_encode' "$tmp/swapped.mlir"
"$build/bin/llm-fuse-compile" "$tmp/swapped.mlir" --no-llm-fuse --chip sm_90 \
  -o "$out/model.o" --header "$out/model.h"
cp "$build/lib/libllm_fuse_rt.a" "$root/runtime/mgpu/llm_fuse_rt.h" \
  "$root/bench/tma/driver.c" "$out/"
echo "staged in $out: $(ls "$out" | tr '\n' ' ')"
