#!/usr/bin/env bash
# vcond-prepare.sh - stages, on the build machine, what bench/table/
# vcond-device.sh needs on the GPU machine: the seed-23 one-row f16 SwiGLU
# (012_swiglu_r1_f13824_f16) with its reference plan and the variants of
# gemm_any_swiglu_f16_mma_row (vcond_stage.py), the bad-kernel corpus
# (scripts/stage-verify.py --corpus-only), llm-fuse-verify and libcjson, and
# (OLD_WORKER, optional) the worker built before the change.
#   bash bench/table/vcond-prepare.sh STAGE BUILD MODEL [OLD_WORKER]
# Then carry STAGE and run there: bash bench/table/vcond-device.sh STAGE OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:?usage: vcond-prepare.sh STAGE BUILD MODEL}
build=$(cd "${2:?}" && pwd)
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/vcond_stage.py" "$stage" "$build/bin" "${3:?}"
python3 "$root/scripts/stage-verify.py" --corpus-only --stage "$stage/corpus" \
  --tools "$build/bin" --worker "$build/bin/llm-fuse-verify"
find "$stage/corpus" -name '*.mlir' -delete
strip -o "$stage/bin/llm-fuse-verify" "$build/bin/llm-fuse-verify"
strip "$stage/corpus/bin/llm-fuse-verify"
[ -n "${4:-}" ] && strip -o "$stage/bin/llm-fuse-verify-old" "$4"
cp -L "$(ldd "$build/bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
du -sh "$stage" "$stage"/*
