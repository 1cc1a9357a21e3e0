#!/usr/bin/env bash
# skinny-prepare.sh - stages, on the build machine, what bench/table/
# skinny-device.sh needs on the GPU machine (kernels/table/skinny_any.py:
# the skinny-M f32 GEMM entries against the entries the table gave before):
#
#   STAGE/<sg>/plan.json + k<N>.cubin  the default lowering of each subgraph
#   STAGE/<sg>/{skinny,today}-v<k>/    each admitted tune variant of the entry
#                                      the table answers with, and of the one
#                                      it answered with before (sm_90a)
#   STAGE/cases.json                   the cases (bench/table/skinny_stage.py)
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1
#
#   bash bench/table/skinny-prepare.sh [STAGE] [BUILD]   (.device/skinny, build)
# then carry STAGE and run there: bash bench/table/skinny-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/skinny}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/skinny_stage.py" "$stage" "$bin"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
rm -rf "$stage/table-today" "$stage/empty" "$stage/models"/*.outlined.mlir
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
