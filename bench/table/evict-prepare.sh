#!/usr/bin/env bash
# evict-prepare.sh - stages, on the build machine, the streaming-load A/B
# (builder/streaming_loads.cpp) for bench/table/evict-device.sh: the
# memory-bound held-out models below, each table variant built as the table
# has it and with its global loads marked nontemporal
# (bench/table/evict_stage.py), plus llm-fuse-verify.
#
#   bash bench/table/evict-prepare.sh [STAGE] [BUILD]   (.device/evict, build)
# then carry STAGE and run there: bash bench/table/evict-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/evict}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
ho=$(mktemp -d)
python3 "$root/bench/table/heldout.py" gen "$ho" --seed 1 --count 50 --opt "$bin/llm-fuse-opt" >/dev/null
m=$ho/models
python3 "$root/bench/table/evict_stage.py" "$stage" "$bin" \
  "$m/049_rowmax_r7139.mlir" "$m/036_layernorm_f32_r19456_h5120.mlir" \
  "$m/031_bias_gelu_r21814.mlir" "$m/045_colmax_r3840_h8192.mlir" \
  "$m/006_colsum_bt_r640.mlir" "$m/004_add_rmsnorm_r2024_h8192.mlir" \
  "$m/009_rmsnorm_tosa_r3820.mlir"
rm -rf "$ho"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
rm -rf "$stage/empty" "$stage/models"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
