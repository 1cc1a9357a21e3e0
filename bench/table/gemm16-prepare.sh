#!/usr/bin/env bash
# gemm16-prepare.sh - stages, on the build machine, what bench/table/
# gemm16-device.sh needs on the GPU machine (issue 15 point 7's 16-bit
# GEMMs: bench/table/gemm16_bench.py): every admitted tune variant of the
# table entry that answers each case's contractions now and before
# (TODAY: a copy of kernels/table taken before the change, a folder with
# v1/), the default lowerings, the torch translations, llm-fuse-verify and
# the runtime. The tree that travels is close to the 64 MiB limit, so the
# stage is packed: STAGE/stage.tar.xz (+ the tools beside it).
#
#   bash bench/table/gemm16-prepare.sh STAGE BUILD TODAY [HELDOUT_DIR]
# HELDOUT_DIR: `python3 bench/table/heldout.py gen DIR --seed 1 --count 50`
# (default /tmp/gemm16-ho); session 27: two draws, colon-separated,
# e.g. /tmp/ho1:/tmp/ho7 (the seed-1 and the seed-7 `--count 60` draw). Then carry STAGE and run there:
#   bash bench/table/gemm16-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:?usage: gemm16-prepare.sh STAGE BUILD TODAY [HELDOUT_DIR]}
build=${2:?}
today=$(cd "${3:?}" && pwd)
bin=$build/bin
rm -rf "$stage" && mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
work=$(mktemp -d)
rc=0
python3 "$root/bench/table/gemm16_bench.py" prepare "$work" "$bin" "$today" ${4:-} || rc=$?
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
