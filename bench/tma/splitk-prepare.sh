#!/usr/bin/env bash
# splitk-prepare.sh - stages, on the build machine, what bench/tma/
# splitk-device.sh needs on the GPU machine (split-K by thread-block
# clusters for the TMA-fed bf16/f16 GEMM, kernels/handwritten/
# gemm_wgmma_tma.py `splitk`; issue 16 point 2, issue 15's small GEMMs):
#
#   STAGE/cases.json                 the cases and their built variants
#   STAGE/<case>/<sg>/plan.json ...  the default MLIR lowering of the case's
#                                    subgraph (the verifier's reference)
#   STAGE/<case>/<sg>/v-<tag>/       each kernel variant (kernel.cubin +
#                                    result.json), llm-fuse-build-kernel sm_90a
#   STAGE/libllm_fuse_rt.so, STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1
#
#   bash bench/tma/splitk-prepare.sh [STAGE] [BUILD]   (.device/splitk, build)
# then carry STAGE and run there: bash bench/tma/splitk-device.sh STAGE $OUT
# (SPLITK_BENCH: the case script, default bench/tma/splitk_bench.py;
# bench/tma/f32-splitk-prepare.sh sets it. A failing prepare still stages
# what it built, and the exit status says so.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/splitk}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
stage=$(cd "$stage" && pwd)
rc=0
python3 "$root/${SPLITK_BENCH:-bench/tma/splitk_bench.py}" prepare "$stage" "$bin" || rc=$?
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
cp "$build/lib/libllm_fuse_rt.so" "$stage/"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
rm -rf "$stage"/*/tmp-build
du -sh "$stage"
exit $rc
