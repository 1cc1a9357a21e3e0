#!/bin/sh
# gpu_build.sh BUILD_DIR OUT_DIR - builds the positive lit inputs with
# llm-fuse-build-kernel into OUT_DIR/<case>/ for gpu_run.py, which runs them
# on a GPU (the machine with the GPU needs no LLVM, only the products).
set -eu
tool="$1/bin/llm-fuse-build-kernel"
in="$(dirname "$0")/../../lit_tests/builder/Inputs"
out="$2"
build() { # case input signature [options]
  name=$1 input=$2 sig=$3
  shift 3
  "$tool" --quiet --out-dir "$out/$name" --signature "$sig" "$@" "$in/$input"
}
build add_relu ok-elementwise.mlir '(tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>'
build add_relu_ptx ok-elementwise.mlir '(tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>' --no-cubin
build scale_bf16 ok-vector.mlir '(tensor<4096xbf16>) -> tensor<4096xbf16>'
build row_sum ok-shuffle.mlir '(tensor<64x32xf32>) -> tensor<64xf32>'
build mma ok-mma.mlir '(tensor<16x16xf16>, tensor<16x8xf16>) -> tensor<16x8xf32>'
build rmsnorm ok-rmsnorm.mlir '(tensor<16384x4096xbf16>, tensor<4096xbf16>) -> tensor<16384x4096xbf16>'
build features ok-features.mlir '(tensor<1024xf32>) -> tensor<1024xf32>'
build axpy ok-scalar.mlir '(tensor<4xf32>, f32, index) -> tensor<4xf32>'
build wgmma wgmma.mlir '(tensor<1024xf32>) -> tensor<1024xf32>'
build tma_copy ok-tma-copy.mlir '(tensor<256x256xbf16>) -> tensor<256x256xbf16>'
build tma_copy_ptx ok-tma-copy.mlir '(tensor<256x256xbf16>) -> tensor<256x256xbf16>' --no-cubin
# The tensor-map example of the prompt (llm_client/prompts/tma.v1.md).
sed -n '/^```mlir$/,/^```$/p' "$(dirname "$0")/../../llm_client/prompts/tma.v1.md" |
  sed '1d;$d' >"$out/tma_row_sum.mlir"
"$tool" --quiet --out-dir "$out/tma_row_sum" \
  --signature '(tensor<1024x64xbf16>) -> tensor<1024xf32>' "$out/tma_row_sum.mlir"
echo "built into $out"
