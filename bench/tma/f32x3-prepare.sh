#!/usr/bin/env bash
# f32x3-prepare.sh - stages, on the build machine, what bench/tma/f32x3-device.sh
# needs on the GPU machine (issue 16 point 3: exact f32 GEMMs on 3xTF32 wgmma):
#
#   STAGE/libllm_fuse_rt.so, STAGE/<sg>/plan.json + k<N>.cubin, STAGE/<sg>/candidate/
#        bench/gpu/prepare.sh's stage of gemm_epilogue and bench/minigpt_mlp
#        (the default lowering, our SIMT kernels for sm_90)
#   STAGE/<sg>/plan.json ...   the same for bench/tma/f32x3.mlir (odd sizes, W [N, K])
#   STAGE/<sg>/tma-<tag>/      each variant of kernels/handwritten/tma/gen_f32x3.py,
#                              built by llm-fuse-build-kernel (sm_90a)
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1   the verification worker
#
#   bash bench/tma/f32x3-prepare.sh [STAGE] [BUILD]   (.device/f32x3, build)
# then carry STAGE and run there: bash bench/tma/f32x3-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/f32x3}
build=${2:-$root/build}
bin=$build/bin
LF_BENCH_EXAMPLES="gemm_epilogue bench/minigpt_mlp" LF_BENCH_E2E=0 \
  bash "$root/bench/gpu/prepare.sh" "$stage" sm_90 "$build"
stage=$(cd "$stage" && pwd)
"$bin/llm-fuse-opt" --llm-fuse-outline=remarks=false "$root/bench/tma/f32x3.mlir" \
  -o "$stage/f32x3.mlir" 2>/dev/null
"$bin/llm-fuse-reference" --build --chip sm_90 --out-dir "$stage" "$stage/f32x3.mlir" > /dev/null
gen=$(mktemp -d)
python3 "$root/kernels/handwritten/tma/gen_f32x3.py" "$gen"
python3 - "$gen" "$stage" "$bin/llm-fuse-build-kernel" <<'PY'
import json, os, subprocess, sys
gen, stage, tool = sys.argv[1:4]
bad = 0
for e in json.load(open(os.path.join(gen, "manifest-f32x3.json"))):
    d = os.path.join(stage, e["subgraph"])
    if not os.path.isdir(d):
        print("f32x3-prepare: %s not staged (no plan)" % e["subgraph"], file=sys.stderr)
        bad += 1
        continue
    out = os.path.join(d, "tma-" + e["tag"])
    r = subprocess.run([tool, "--signature", e["signature"], "--chip", "sm_90a", "--out-dir", out,
                        os.path.join(gen, e["file"])], capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {"ok": False, "kind": "?", "message": r.stderr[-300:]}
    print("f32x3-prepare: %-45s %s %s" % (e["file"], "built" if j.get("ok") else "FAILED " + j.get("kind", ""),
                                          j.get("ptxas_info") or j.get("message", "")[:200]))
    bad += not j.get("ok")
sys.exit(1 if bad else 0)
PY
rm -rf "$gen"
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
