#!/usr/bin/env bash
# bmm16-prepare.sh - stages, on the build machine, what bench/table/bmm16-device.sh
# needs on the GPU machine (kernels/table/bmm16_any.py, session 28):
#
#   STAGE/old/...   bench/table/bmm16_stage.py against OLD_TABLE (a folder
#                   holding v1/: the table before bmm16_any.py's entries)
#   STAGE/new/...   the same cases against the repository's table
#                   (each: <sg>/plan.json + k<N>.cubin, <sg>/first-v<k>/,
#                   cases.json; bench/table/bmm_stage.py)
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1
#
#   bash bench/table/bmm16-prepare.sh STAGE BUILD OLD_TABLE
# (BMM16_CASES="name ..." stages only those cases; BMM16_ONLY=new skips old/;
# every admitted tune variant of the answering entry is built)
# then carry STAGE and run there: bash bench/table/bmm16-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:?usage: bmm16-prepare.sh STAGE BUILD OLD_TABLE}
build=${2:?usage: bmm16-prepare.sh STAGE BUILD OLD_TABLE}
old=${3:?usage: bmm16-prepare.sh STAGE BUILD OLD_TABLE}
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
if [ "${BMM16_ONLY:-}" != new ]; then
  BMM16_SIDE=old BMM_TABLE=$old python3 "$root/bench/table/bmm16_stage.py" "$stage/old" "$bin"
fi
env -u BMM_TABLE BMM16_SIDE=new python3 "$root/bench/table/bmm16_stage.py" "$stage/new" "$bin"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
for s in old new; do
  [ -d "$stage/$s" ] || continue
  rm -rf "$stage/$s/empty" "$stage/$s/models"/*.outlined.mlir
done
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
