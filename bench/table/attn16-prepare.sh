#!/usr/bin/env bash
# attn16-prepare.sh - stages, on the build machine, what bench/table/
# attn16-device.sh needs on the GPU machine (session 29, issue 15 point 7:
# the 16-bit attention entries; bench/table/attn16_bench.py's CASES):
#
#   STAGE/<case>/<sg>/plan.json + cubins   the default lowering (truth/: the
#                                          opmath truth of the 16-bit IR)
#   STAGE/<case>/<sg>/v-new0, v-old0       the entry the pass takes from
#                                          NEW_TABLE and from OLD_TABLE
#   STAGE/cases.json, bin/llm-fuse-verify, lib/libcjson.so.1, libllm_fuse_rt.so
#
# packed into STAGE/stage.tar.xz.
#
#   bash bench/table/attn16-prepare.sh STAGE BUILD [NEW_TABLE OLD_TABLE]
#     (NEW_TABLE, OLD_TABLE: folders holding v1/; by default OLD_TABLE is
#      kernels/table and NEW_TABLE a copy of it with attn_any.py's "-0mma"
#      entries added (attn16_bench.py newtable) in a temporary folder;
#      ATTN16_ONLY=REGEX: only the matching cases)
# then carry STAGE and run there: bash bench/table/attn16-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:?usage: attn16-prepare.sh STAGE BUILD [NEW_TABLE OLD_TABLE]}
build=${2:?}
bin=$build/bin
if [ -n "${3:-}" ]; then
  new=$(cd "$3" && pwd)
  old=$(cd "${4:?}" && pwd)
else
  old=$root/kernels/table
  new=$(mktemp -d)/table
  python3 "$root/bench/table/attn16_bench.py" newtable "$bin/llm-fuse-opt" "$old" "$new" 2>&1 \
    | grep -v '^llm-fuse: info'
fi
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
work=$(mktemp -d)
rc=0
python3 "$root/bench/table/attn16_bench.py" prepare "$work" "$bin" "$new" "$old" || rc=$?
rm -rf "$work/empty"
find "$work" \( -name '*.mlir' -o -name '*.ptx' -o -name 'report.*.json' \) -delete
tar -C "$work" -cJf "$stage/stage.tar.xz" .
rm -rf "$work"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
strip -o "$stage/libllm_fuse_rt.so" "$build/lib/libllm_fuse_rt.so"
du -sh "$stage" "$stage"/*
exit $rc
