#!/bin/bash
# prepare.sh - the build-machine half of bench/loop/run-device.sh: stripped
# tools and the MLIR runtime pack in .device/loop, small enough to carry.
#   bash bench/loop/prepare.sh [BUILD]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
stage=$root/.device/loop
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
for t in llm-fuse-opt llm-fuse-build-kernel llm-fuse-verify llm-fuse-device-info llm-fuse-cache llm-fuse-reference llm-fuse-compile; do
  strip -o "$stage/bin/$t" "$build/bin/$t"
done
# The runtime library, for the programs compiled ahead of time there
# (bench/gpu/p44-device.sh).
strip -o "$stage/lib/libllm_fuse_rt.so" "$build/lib/libllm_fuse_rt.so"
[ -f "$root/.device/mlir-runtime.tar.xz" ] ||
  (cd "$root" && bash "$root/../shared/device/pack-mlir-runtime.sh" .device)
# The runtime without mlir-opt (nothing here runs it on the GPU machine):
# the stage, the tracked tree and the models must fit the 64 MiB carry.
tmp=$(mktemp -d)
tar -xJf "$root/.device/mlir-runtime.tar.xz" -C "$tmp"
rm -f "$tmp"/bin/mlir-opt*
XZ_OPT=-9e tar -C "$tmp" -cJf "$stage/mlir-runtime.tar.xz" bin lib
rm -rf "$tmp"
# (The table's entries are gzip files since session 27: the tracked tree
# fits the carry limit with them, so no packed copy is staged any more.)
rm -f "$stage/table-v1.tar.xz"
du -sh "$stage"
