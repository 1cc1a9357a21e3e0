#!/usr/bin/env bash
# stage-compare.sh - builds, on this machine, what scripts/gpu_compare.py runs
# on the GPU machine: for every hand-written kernel listed in
# kernels/handwritten/manifest-*.json, the reference plan and cubins of its
# subgraph (llm-fuse-reference) and the kernel's cubin (llm-fuse-build-kernel),
# under DIR (default .device/compare). Only cubins, PTX and JSON: small, and
# no MLIR runtime is needed there.
#   scripts/stage-compare.sh [DIR] [CHIP]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.device/compare}
chip=${2:-sm_90}
bin=$root/build/bin
rm -rf "$dir"
mkdir -p "$dir/outlined"
for e in gemm_epilogue mlp_block swiglu rmsnorm layernorm layernorm_f32 softmax \
         minigpt_block tosa/mlp_block tosa/rmsnorm tosa/softmax; do
  m="$dir/outlined/${e//\//-}.mlir"
  "$bin/llm-fuse-opt" --llm-fuse-outline=remarks=false "$root/examples/$e.mlir" -o "$m" 2>/dev/null
  "$bin/llm-fuse-reference" --build --chip "$chip" --out-dir "$dir" "$m" > /dev/null
done
python3 - "$root" "$dir" "$chip" "$bin/llm-fuse-build-kernel" <<'PY'
import glob, json, os, subprocess, sys
root, out, chip, tool = sys.argv[1:5]
n = bad = 0
for m in sorted(glob.glob(os.path.join(root, "kernels/handwritten/manifest-*.json"))):
    for e in json.load(open(m)):
        if os.path.isdir(os.path.join(out, e["subgraph"], "candidate")):
            continue  # first variant listed per subgraph (sm_90 before sm_90a)
        c = chip if chip in e.get("chips", [chip]) else e["chips"][-1]
        d = os.path.join(out, e["subgraph"], "candidate")
        r = subprocess.run([tool, "--signature", e["signature"], "--chip", c,
                            "--out-dir", d, "--quiet",
                            os.path.join(root, "kernels/handwritten", e["file"])])
        n += 1
        if r.returncode:
            bad += 1
            print("stage-compare: %s does not build" % e["file"], file=sys.stderr)
print("stage-compare: %d kernel(s) staged, %d failed to build" % (n, bad))
PY
rm -rf "$dir/outlined"
du -sh "$dir"
