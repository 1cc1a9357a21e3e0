#!/usr/bin/env bash
# skinny-mma-prepare.sh - stages, on the build machine, what bench/table/
# skinny-mma-device.sh needs on the GPU machine (issue 15 point 7: SwiGLU
# in 16 bits at 9-64 rows, bench/table/skinny_mma_bench.py): every admitted
# tune variant of the table entry that answers each case now and before
# (TODAY: a copy of kernels/table taken before the change, a folder with
# v1/), the default lowerings, the torch translations, llm-fuse-verify and
# the runtime, packed into STAGE/stage.tar.xz.
#
#   bash bench/table/skinny-mma-prepare.sh STAGE BUILD TODAY HO7 HO1
# HO7, HO1: `python3 bench/table/heldout.py gen DIR --seed 7 --count 60`
# and `--seed 1 --count 50`. Then carry STAGE and run there:
#   bash bench/table/skinny-mma-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:?usage: skinny-mma-prepare.sh STAGE BUILD TODAY HO7 HO1}
build=${2:?}
today=$(cd "${3:?}" && pwd)
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
work=$(mktemp -d)
rc=0
python3 "$root/bench/table/skinny_mma_bench.py" prepare "$work" "$bin" "$today" "${4:?}" "${5:?}" || rc=$?
rm -rf "$work/empty"
find "$work" \( -name '*.mlir' -o -name '*.ptx' -o -name 'report.*.json' \) -delete
tar -C "$work" -cJf "$stage/stage.tar.xz" .
rm -rf "$work"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
cp "$build/lib/libllm_fuse_rt.so" "$stage/"
du -sh "$stage" "$stage"/*
exit $rc
