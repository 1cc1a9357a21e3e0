#!/usr/bin/env bash
# overflow-prepare.sh - stages, on the build machine, what bench/table/
# overflow-device.sh needs on the GPU machine (docs/verification.md, "The
# f16 overflow boundary"): the held-out SwiGLU f16 subgraphs (seed 1's 016,
# seed 7's 031) with their reference and wide plans and every admitted
# variant of the table entries the pass tried for them (overflow_stage.py),
# the bad-kernel corpus (scripts/stage-verify.py --corpus-only), the new
# llm-fuse-verify and, for the corpus's before/after comparison, the one
# built before the change (OLD_WORKER).
#
#   bash bench/table/overflow-prepare.sh STAGE BUILD OLD_WORKER HO1 HO7
# HO1, HO7: `python3 bench/table/heldout.py gen DIR --seed 1 --count 50`
# and `--seed 7 --count 60`. Then carry STAGE and run there:
#   bash bench/table/overflow-device.sh STAGE OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:?usage: overflow-prepare.sh STAGE BUILD OLD_WORKER HO1 HO7}
build=$(cd "${2:?}" && pwd)
old=${3:?}
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/overflow_stage.py" "$stage" "$build/bin" "${4:?}" "${5:?}"
python3 "$root/scripts/stage-verify.py" --corpus-only --stage "$stage/corpus" \
  --tools "$build/bin" --worker "$build/bin/llm-fuse-verify"
find "$stage/corpus" -name '*.mlir' -delete
strip -o "$stage/bin/llm-fuse-verify" "$build/bin/llm-fuse-verify"
strip -o "$stage/bin/llm-fuse-verify-old" "$old"
strip "$stage/corpus/bin/llm-fuse-verify"
cp -L "$(ldd "$build/bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
du -sh "$stage" "$stage"/*
