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
#   DIR/<sg>/candidate-alt[N]/       tuning variants from the generators
#                                    (below), timed as "ours alt[N]"
#   DIR/e2e/                         the MiniGPT block for the end-to-end
#                                    case: model.mlir, llm-fuse-compile and
#                                    the tools it runs (stripped), the MLIR
#                                    runtime pack; bench/gpu/e2e-device.sh
#                                    compiles it there (LF_BENCH_E2E=0: skip)
#
# Cubins and JSON (a few MB) and the e2e folder (about 56 MB, mostly the
# MLIR runtime pack) travel. Then, on the GPU machine:
#   bash bench/gpu/e2e-device.sh DIR $OUT &&
#   python3 bench/gpu/run.py DIR --json $OUT/bench.json --png $OUT/bench.png
#
#   bench/gpu/prepare.sh [DIR] [CHIP] [BUILD]    (CHIP sm_90, BUILD build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.device/gpu-bench}
chip=${2:-sm_90}
build=${3:-$root/build}
bin=$build/bin
# LF_BENCH_EXAMPLES="rmsnorm bench/add_rmsnorm" stages only those (with
# LF_BENCH_E2E=0, a small carry for a run of a few cases: run.py --cases).
examples=${LF_BENCH_EXAMPLES:-"rmsnorm layernorm layernorm_f32 softmax tosa/softmax swiglu
          gemm_epilogue bench/rowsum bench/rowmax bench/add_rmsnorm bench/bias_gelu
          bench/gemm_bias_gelu bench/minigpt_mlp"}
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
# Tuning variants, built as DIR/<sg>/candidate-alt[N] (run.py times them as
# "ours alt[N]" beside the manifest's kernel; bench/NOTES.md, 2026-11-21):
# bias + GELU-tanh bf16 with the exact exp and divide (the version the
# manifest replaced); the MiniGPT MLP GEMMs at M = 65536 with
# gemm_epilogue's 128x128x16 tiles (faster on sm_90, spills on sm_80);
# the f32 GEMM (gemm_epilogue) with one row of 16 threads per warp and
# LayerNorm bf16 with 256 threads per row (the versions the manifest
# replaced; bench/NOTES.md, "Tuning the f32 GEMM and LayerNorm bf16").
alt=$dir/alt-src
gr() { mkdir -p "$alt/$1"; python3 "$root/kernels/handwritten/gen_rows.py" --out "$alt/$1" --only "$2" --variant "$2=$3"; }
gg() { local sub=$1 sg=$2; shift 2; mkdir -p "$alt/$sub"
       python3 "$root/kernels/handwritten/gen_gemm.py" --out-dir "$alt/$sub" --no-manifest --only "$sg" --set "$@"; }
gr candidate-alt sg_d9d3a926eb8e438b gelu=div
gg candidate-alt sg_ab992c66808cc4c2.mlir BM=128 BN=128 BK=16 KS=1 minctasm=2
gg candidate-alt sg_606c0e1c9184d8b4.mlir BM=128 BN=128 BK=16 KS=1 minctasm=2
gg candidate-alt sg_5beaf48efb3a6ac0.mlir WX=16
gr candidate-alt sg_ed978a54a6ae6b04 T=256
# The f32 GEMMs (gemm_epilogue, MiniGPT MLP at 65536) with the cp.async-fed
# FMA kernel (kernels/handwritten/gemm_f32_cpasync.py): 128x128 tiles, 128
# threads of 8x16 outputs, 4-stage ring, BK 8 (alt2). Slower than the
# manifest's kernels on the H200, as were BK 4 and BK 16 (bench/NOTES.md, run 2).
gg candidate-alt2 sg_5beaf48efb3a6ac0.mlir kind=f32_cpasync BM=128 BN=128 BK=8 stages=4 minctasm=2
gg candidate-alt2 sg_ab992c66808cc4c2.mlir kind=f32_cpasync BM=128 BN=128 BK=8 stages=4 minctasm=2
gg candidate-alt2 sg_606c0e1c9184d8b4.mlir kind=f32_cpasync BM=128 BN=128 BK=8 stages=4 minctasm=2
# The two bf16 GEMMs of issue 8: the manifest's sm_90a kernel is the
# TMA-fed one (kernels/handwritten/gemm_wgmma_tma.py; SwiGLU ping-pong
# 128 x (2 x 64), GEMM+bias+GELU cooperative 128 x 256 with GROUP_M 16;
# bench/tma/NOTES-draft.md). Beside it:
# alt: the cp.async-fed warp-specialized persistent kernel it replaced
#   (gemm_wgmma_ws.py; byte for byte the file shipped before);
# alt2: the runner-up TMA variant (SwiGLU cooperative GROUP_M 16,
#   GEMM+bias+GELU cooperative GROUP_M 8);
# alt3: the shipped TMA kernel with the approximate GELU / SiLU epilogue
#   (ex2.approx, div.approx);
# alt4: the gen_bf16_wgmma kernel (one CTA per tile, no producer warps).
gg candidate-alt sg_89b05da5eb3c1a6b.sm90a.mlir kind=bf16_wgmma_ws WGS=2 BN=256 stages=4 group_m=8 persistent=1
gg candidate-alt sg_74ede17e00bf0352.sm90a.mlir kind=bf16_wgmma_ws WGS=2 BN=128 stages=4 group_m=8 persistent=1
gg candidate-alt2 sg_89b05da5eb3c1a6b.sm90a.mlir group_m=8
gg candidate-alt2 sg_74ede17e00bf0352.sm90a.mlir pingpong=0 persistent=1 BN=128 group_m=16
gg candidate-alt3 sg_89b05da5eb3c1a6b.sm90a.mlir epilogue=bias_gelu_tanh_approx
gg candidate-alt3 sg_74ede17e00bf0352.sm90a.mlir epilogue=silu_mul_approx
gg candidate-alt4 sg_89b05da5eb3c1a6b.sm90a.mlir kind=bf16_wgmma persistent=0 WGS=2 BN=256 stages=4 group_m=8
gg candidate-alt4 sg_74ede17e00bf0352.sm90a.mlir kind=bf16_wgmma persistent=0 WGS=2 BN=128 stages=4 group_m=8
python3 - "$root" "$dir" "$alt" "$chip" "$bin/llm-fuse-build-kernel" <<'PY'
import glob, json, os, subprocess, sys
root, out, alt, chip, tool = sys.argv[1:6]
sigs = {}
for m in glob.glob(os.path.join(root, "kernels/handwritten/manifest-*.json")):
    for e in json.load(open(m)):
        sigs.setdefault(e["subgraph"], e["signature"])
for f in sorted(glob.glob(os.path.join(alt, "*", "sg_*.mlir"))):
    sub = os.path.basename(os.path.dirname(f))
    sg = os.path.basename(f)[:-len(".mlir")]
    c = chip
    if sg.endswith(".sm90a"):      # wgmma / setmaxnreg variants: the chip follows the file
        sg, c = sg[:-len(".sm90a")], "sm_90a"
    if not os.path.isdir(os.path.join(out, sg)):
        continue
    r = subprocess.run([tool, "--signature", sigs[sg], "--chip", c, "--quiet",
                        "--out-dir", os.path.join(out, sg, sub), f])
    print("prepare: %s of %s %s" % (sub, sg, "built" if r.returncode == 0 else "FAILED"))
PY
rm -rf "$dir/outlined" "$alt"
find "$dir" \( -name '*.mlir' -o -name '*.ptx' \) -delete
cp "$build/lib/libllm_fuse_rt.so" "$dir/"
if [ "${LF_BENCH_E2E:-1}" = 1 ]; then
  mkdir -p "$dir/e2e/bin"
  for t in llm-fuse-compile llm-fuse-build-kernel llm-fuse-verify; do
    strip -o "$dir/e2e/bin/$t" "$bin/$t"
  done
  cp "$root/examples/minigpt_block.mlir" "$dir/e2e/model.mlir"
  echo minigpt_block > "$dir/e2e/entry"
  cp "$root/runtime/mgpu/llm_fuse_rt.h" "$dir/e2e/"
  # LF_BENCH_E2E_LEAN=1: no runtime pack here; e2e-device.sh then takes
  # bench/loop/prepare.sh's (.device/loop, carried beside this folder, as
  # for bench/gpu/p44-device.sh in the same call: both fit the 64 MiB).
  if [ "${LF_BENCH_E2E_LEAN:-0}" != 1 ]; then
    [ -f "$root/.device/mlir-runtime.tar.xz" ] ||
      (cd "$root" && bash "$root/../shared/device/pack-mlir-runtime.sh" .device)
    cp "$root/.device/mlir-runtime.tar.xz" "$dir/e2e/"
  fi
fi
du -sh "$dir"
