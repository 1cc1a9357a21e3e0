#!/usr/bin/env bash
# gemm-prepare.sh - stages, on the build machine, what bench/tma/gemm-device.sh
# needs on the GPU machine (issue 16, point 2: the TMA-fed GEMM kernels):
#
#   STAGE/libllm_fuse_rt.so, STAGE/<sg>/plan.json + k<N>.cubin,
#   STAGE/<sg>/candidate-sm90a/      bench/gpu/prepare.sh's stage of the
#                                    swiglu and gemm_bias_gelu examples (the
#                                    default lowering, the shipped kernels)
#   STAGE/<sg>/plan.json ...         the same for bench/tma/gemm-odd.mlir
#                                    (the two subgraphs at 1000x1032, K 1000)
#   STAGE/<sg>/tma-<tag>/            each variant of
#                                    kernels/handwritten/tma/manifest-tma.json,
#                                    built by llm-fuse-build-kernel (sm_90a)
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1
#                                    the verification worker (links no MLIR)
#
#   bash bench/tma/gemm-prepare.sh [STAGE] [BUILD]   (.device/tma-gemm, build)
# then carry STAGE and run there: bash bench/tma/gemm-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/tma-gemm}
build=${2:-$root/build}
bin=$build/bin
LF_BENCH_EXAMPLES="swiglu bench/gemm_bias_gelu" LF_BENCH_E2E=0 \
  bash "$root/bench/gpu/prepare.sh" "$stage" sm_90 "$build"
stage=$(cd "$stage" && pwd)
"$bin/llm-fuse-opt" --llm-fuse-outline=remarks=false "$root/bench/tma/gemm-odd.mlir" \
  -o "$stage/gemm-odd.mlir" 2>/dev/null
"$bin/llm-fuse-reference" --build --chip sm_90 --out-dir "$stage" "$stage/gemm-odd.mlir" > /dev/null
python3 "$root/kernels/handwritten/tma/gen_tma.py" --check
python3 - "$root" "$stage" "$bin/llm-fuse-build-kernel" <<'PY'
import json, os, subprocess, sys
root, stage, tool = sys.argv[1:4]
bad = 0
for e in json.load(open(os.path.join(root, "kernels/handwritten/tma/manifest-tma.json"))):
    d = os.path.join(stage, e["subgraph"])
    if not os.path.isdir(d):
        print("gemm-prepare: %s not staged (no plan)" % e["subgraph"], file=sys.stderr)
        bad += 1
        continue
    out = os.path.join(d, e["tag"] if e["tag"].startswith("tma-") else "tma-" + e["tag"])
    r = subprocess.run([tool, "--signature", e["signature"], "--chip", "sm_90a", "--out-dir", out,
                        os.path.join(root, "kernels/handwritten/tma", e["file"])],
                       capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {"ok": False, "kind": "?", "message": r.stderr[-300:]}
    print("gemm-prepare: %-45s %s %s" % (e["file"], "built" if j.get("ok") else "FAILED " + j.get("kind", ""),
                                         j.get("ptxas_info") or j.get("message", "")[:200]))
    bad += not j.get("ok")
sys.exit(1 if bad else 0)
PY
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
