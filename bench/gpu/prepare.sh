#!/usr/bin/env bash
# prepare.sh - stages, on the build machine, everything bench/gpu/run.py
# needs on the GPU machine (issue 8's benchmark suite), under DIR (default
# .device/gpu-bench, gitignored):
#
#   DIR/libllm_fuse_rt.so            the project's runtime (needs only libc)
#   DIR/<sg>/plan.json, k<N>.cubin   the default MLIR lowering of each
#                                    subgraph (llm-fuse-reference --build)
#   DIR/<sg>/candidate/              our kernel: kernel.cubin + result.json
#                                    (llm-fuse-build-kernel, from the
#                                    manifests' first variant for CHIP)
#   DIR/<sg>/candidate-sm90a/        the sm_90a (wgmma) variant, if any
#
# Only cubins and JSON travel (a few MB). Then, on the GPU machine:
#   python3 bench/gpu/run.py DIR --json $OUT/bench.json --png $OUT/bench.png
#
#   bench/gpu/prepare.sh [DIR] [CHIP] [BUILD]    (CHIP sm_90, BUILD build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.device/gpu-bench}
chip=${2:-sm_90}
build=${3:-$root/build}
bin=$build/bin
examples="rmsnorm layernorm layernorm_f32 softmax tosa/softmax swiglu gemm_epilogue
          bench/rowsum bench/rowmax bench/add_rmsnorm bench/bias_gelu bench/gemm_bias_gelu"
rm -rf "$dir"
mkdir -p "$dir/outlined"
for e in $examples; do
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
        d = os.path.join(out, e["subgraph"])
        # Only subgraphs of the staged examples: the first variant listed
        # that runs on CHIP (sm_90 mma.sync) as candidate/, and an sm_90a
        # (wgmma) variant, where there is one, as candidate-sm90a/.
        if not os.path.isdir(d):
            continue
        if chip in e.get("chips", [chip]):
            c, sub = chip, "candidate"
        elif chip == "sm_90" and "sm_90a" in e.get("chips", []):
            c, sub = "sm_90a", "candidate-sm90a"
        else:
            continue
        if os.path.isdir(os.path.join(d, sub)):
            continue
        r = subprocess.run([tool, "--signature", e["signature"], "--chip", c,
                            "--out-dir", os.path.join(d, sub), "--quiet",
                            os.path.join(root, "kernels/handwritten", e["file"])])
        n += 1
        if r.returncode:
            bad += 1
            print("prepare: %s does not build" % e["file"], file=sys.stderr)
missing = [s for s in sorted(os.listdir(out))
           if s.startswith("sg_") and not os.path.isdir(os.path.join(out, s, "candidate"))]
print("prepare: %d kernel(s) built, %d failed; no kernel of ours for: %s"
      % (n, bad, ", ".join(missing) or "none"))
PY
rm -rf "$dir/outlined"
find "$dir" \( -name '*.mlir' -o -name '*.ptx' \) -delete
cp "$build/lib/libllm_fuse_rt.so" "$dir/"
du -sh "$dir"
