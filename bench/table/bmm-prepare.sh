#!/usr/bin/env bash
# bmm-prepare.sh - stages, on the build machine, what bench/table/bmm-device.sh
# needs on the GPU machine (kernels/table/bmm_any.py: the batched-GEMM
# templates):
#
#   STAGE/<sg>/plan.json + k<N>.cubin  the default lowering of each subgraph
#   STAGE/<sg>/first-v<k>/             the tune variants of the entry the table
#                                      answers with (sm_90a): each tiling
#                                      alternative at the first variant's GROUP_M
#   STAGE/<sg>/x-v<k>/                 BMM_EXPLORE=1: the tilings of
#                                      bmm_any.EXPLORE (BMM_EXPLORE_SET=run2:
#                                      EXPLORE_RUN2) for the cases marked so
#   (BMM_TABLE=DIR: ask DIR/v1 instead of kernels/table; BMM_SET=all: the
#   session-25 cases too; BMM_SET=session27: the held-out cases of session
#   27, with BMM_EXPLORE=1 their EXPLORE27 tilings; BMM_SET=session29tn: the
#   16-bit A^T B mma.sync entries, CASES29TN; bench/table/bmm_stage.py)
#   STAGE/cases.json                   the cases (bench/table/bmm_stage.py)
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1
#
#   bash bench/table/bmm-prepare.sh [STAGE] [BUILD]   (.device/bmm, build)
# then carry STAGE and run there: bash bench/table/bmm-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/bmm}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/bmm_stage.py" "$stage" "$bin"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
rm -rf "$stage/empty" "$stage/models"/*.outlined.mlir
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
