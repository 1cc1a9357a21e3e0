#!/usr/bin/env bash
# keys-prepare.sh - stages, on the build machine, what bench/table/
# keys-device.sh needs on the GPU machine (session 27, issue 15 point 7:
# the attention template's special values and the new table keys;
# bench/table/keys_stage.py says which cases):
#
#   STAGE/<sg>/plan.json + k<N>.cubin  the default lowering of each subgraph
#                                      (and truth/ for 16-bit IR)
#   STAGE/<sg>/v<k>/, o<k>/            the table entry's variants, and the
#                                      earlier generator's (KEYS_OLD_GEN_ROWS)
#   STAGE/cases.json                   the cases
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1, libllm_fuse_rt.so
#
# all packed into STAGE/stage.tar.xz.
#
#   KEYS_OLD_GEN_ROWS=OLD/gen_rows.py bash bench/table/keys-prepare.sh [STAGE] [BUILD]
#     (.device/KEYS3, build; KEYS_ONLY=REGEX stages only the matching cases)
# then carry STAGE and run there: bash bench/table/keys-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/KEYS3}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/keys_stage.py" "$stage" "$bin"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
strip -o "$stage/lib/libllm_fuse_rt.so" "$build/lib/libllm_fuse_rt.so"
rm -rf "$stage/empty" "$stage/models"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
tar cJf "$stage.tar.xz" -C "$stage" .
rm -rf "$stage" && mkdir -p "$stage" && mv "$stage.tar.xz" "$stage/stage.tar.xz"
du -sh "$stage"
