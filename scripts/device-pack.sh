#!/usr/bin/env bash
# device-pack.sh - stage what the GPU machine needs to run our tools and the
# lit suite (it has no Debian LLVM/MLIR, no lit, no FileCheck):
#   .device/mlir-runtime.tar.xz   mlir-opt-22, libMLIR, libLLVM (shared script)
#   .device/tools/bin             our binaries + FileCheck, not, count, split-file
#   .device/tools/lib             libLLMFusePlugin.so
#   .device/tools/lit             the lit Python package
# Run from the project root after a build; carry ".device" to the device.
set -euo pipefail
build=${1:-build}
pack=${LF_PACK_SCRIPT:-../shared/device/pack-mlir-runtime.sh}
[[ -f .device/mlir-runtime.tar.xz ]] || bash "$pack" .device
rm -rf .device/tools
mkdir -p .device/tools/bin .device/tools/lib
cp "$build"/bin/* .device/tools/bin/
cp "$build"/lib/libLLMFusePlugin.so .device/tools/lib/
for t in FileCheck not count split-file; do
  cp /usr/lib/llvm-22/bin/$t .device/tools/bin/
done
cp -r /usr/lib/llvm-22/utils/lit/lit .device/tools/lit
find .device/tools/lit -name __pycache__ -prune -exec rm -rf {} +
du -sh .device
