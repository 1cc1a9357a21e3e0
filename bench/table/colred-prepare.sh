#!/usr/bin/env bash
# colred-prepare.sh - stages, on the build machine, what bench/table/
# colred-device.sh needs on the GPU machine (kernels/table/colred_any.py:
# reductions over the leading dimension(s)):
#
#   STAGE/<sg>/plan.json + k<N>.cubin  the default lowering of each subgraph
#                                      (and truth/ for 16-bit IR)
#   STAGE/<sg>/v<k>/                   each admitted tune variant of the
#                                      table entry that answers (sm_90a)
#   STAGE/<sg>/x<k>/                   experimental candidates (colred_stage.py)
#   STAGE/cases.json                   the cases (bench/table/colred_stage.py)
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1, libllm_fuse_rt.so
#
# all packed into STAGE/stage.tar.xz.
#
#   bash bench/table/colred-prepare.sh [STAGE] [BUILD] [CASES]
#     (.device/colred, build, heldout; CASES: heldout, held7, s25, big or
#      all; COLRED_EXPERIMENTS=0: the table's variants only; COLRED_OLD=
#      an earlier colred_any.py: its variants too, as o<k>)
# then carry STAGE and run there: bash bench/table/colred-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/colred}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/colred_stage.py" "$stage" "$bin" "${3:-heldout}"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
strip -o "$stage/lib/libllm_fuse_rt.so" "$build/lib/libllm_fuse_rt.so"
rm -rf "$stage/empty" "$stage/models"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
# one xz archive (5 MB of cubins and plans become ~0.3 MB: the tree and
# the carry share 64 MiB); colred-device.sh unpacks it
tar cJf "$stage.tar.xz" -C "$stage" .
rm -rf "$stage" && mkdir -p "$stage" && mv "$stage.tar.xz" "$stage/stage.tar.xz"
du -sh "$stage"
