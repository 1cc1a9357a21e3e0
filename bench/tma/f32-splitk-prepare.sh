#!/usr/bin/env bash
# f32-splitk-prepare.sh - stages, on the build machine, what bench/tma/
# f32-splitk-device.sh needs on the GPU machine (session 25: split-K and the
# 64-row A box for the exact-f32 3xTF32 TMA GEMM, and the table entries that
# offer them; bench/tma/f32_splitk_bench.py says what is built):
#
#   STAGE/cases.json                 the cases and their built variants
#   STAGE/<case>/<sg>/plan.json ...  the default MLIR lowering of the case's
#                                    subgraph (the verifier's reference)
#   STAGE/<case>/<sg>/v-<tag>/       each kernel variant (kernel.cubin +
#                                    result.json), llm-fuse-build-kernel sm_90a
#   STAGE/libllm_fuse_rt.so, STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1
#
#   bash bench/tma/f32-splitk-prepare.sh [STAGE] [BUILD]   (.device/f32splitk, build)
# then carry STAGE and run there: bash bench/tma/f32-splitk-device.sh STAGE $OUT
# (F32SK_ONLY=REGEX: only the cases whose name matches; F32SK_SET=confirm: the
# second run's cases, table variants only)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/f32splitk}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
stage=$(cd "$stage" && pwd)
rc=0
python3 "$root/bench/tma/f32_splitk_bench.py" prepare "$stage" "$bin" || rc=$?
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
cp "$build/lib/libllm_fuse_rt.so" "$stage/"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
rm -rf "$stage"/*/tmp-build
du -sh "$stage"
exit $rc
