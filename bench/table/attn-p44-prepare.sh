#!/usr/bin/env bash
# attn-p44-prepare.sh - stages, on the build machine, what
# bench/table/attn-p44-device.sh needs on the GPU machine: KernelBench L3
# P44's causal attention (attn_any.py's importer form, H 8 x D 96, T 512) at
# batch 32 and 128, plus an odd size (B 9, T 40) and GPT-2 small's heads
# (H 12 x D 64, B 32, T 512), as prebuilt cubins (no MLIR on the GPU machine;
# bench/table/attn_p44.py CASES, ATTN_P44_CASES=h8_d96_b32_t512,... a subset):
#
#   STAGE/<case>/<sg>/plan.json, k<N>.cubin   the default MLIR lowering of the
#                                           attention subgraph (llm-fuse-reference
#                                           --build, sm_90): the verifier's reference
#   STAGE/<case>/<sg>/<variant>/              each kernel variant of
#                                           bench/table/attn_p44.py's VARIANTS (old:
#                                           the kernel shipped before; cp*, r64: the
#                                           exact f32 SIMT variants; tf*: the TF32
#                                           mma.sync ones), built for sm_90
#   STAGE/<case>/<sg>/table/, table-tf32/     what the pass gets from the shipped table
#                                           offline (verify=none) without and with
#                                           tf32=1: the kernels it would verify and swap
#   STAGE/<case>/<sg>/case.json               variants, precision, ptxas figures
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1, STAGE/libllm_fuse_rt.so
#
#   bash bench/table/attn-p44-prepare.sh [STAGE] [BUILD]   (.device/attn-p44, build)
# then carry STAGE and run there: bash bench/table/attn-p44-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/attn-p44}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage"
mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
python3 "$root/bench/table/attn_p44.py" stage "$stage" --bin "$bin" ${ATTN_P44_CASES:+--cases "$ATTN_P44_CASES"}
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
cp "$build/lib/libllm_fuse_rt.so" "$stage/"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
