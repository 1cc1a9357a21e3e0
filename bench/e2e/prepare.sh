#!/bin/bash
# prepare.sh - the build-machine half of bench/e2e/run-device.sh: the CPU
# reference of the full-size MiniGPT block (mlir-runner-22, through
# bench/aot/prepare.py), the SHA-256 of its inputs (the GPU machine
# regenerates them), stripped tools, the runtime library and the MLIR
# runtime pack, in STAGE (default .device/e2e), small enough to carry.
#   bash bench/e2e/prepare.sh [BUILD] [STAGE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
stage=${2:-$root/.device/e2e}
rm -rf "$stage" && mkdir -p "$stage/bin"
python3 "$root/bench/aot/prepare.py" --build "$build" --out "$stage" \
  --size full --compile-args=--no-llm-fuse
(cd "$stage" && sha256sum in*.bin > inputs.sha256 && rm -f in*.bin model.o model.h)
for t in llm-fuse-compile llm-fuse-build-kernel llm-fuse-verify; do
  strip -o "$stage/bin/$t" "$build/bin/$t"
done
[ -f "$root/.device/mlir-runtime.tar.xz" ] ||
  (cd "$root" && bash "$root/../shared/device/pack-mlir-runtime.sh" .device)
cp "$root/.device/mlir-runtime.tar.xz" "$stage/"
du -sh "$stage"
