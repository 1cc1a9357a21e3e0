#!/usr/bin/env bash
# f32x3-device.sh - on the GPU machine (issue 16 point 3): verifies every
# exact f32 3xTF32 wgmma variant staged by bench/tma/f32x3-prepare.sh with the
# verification worker at the EXACT f32 tolerance (llm-fuse-verify against the
# default MLIR lowering of its subgraph, no --tf32-k: several trials, poisoned
# outputs, a determinism repeat), then runs bench/tma/f32x3_bench.py: times
# against cuBLAS SGEMM (torch, allow_tf32 False), torch.compile,
# max-autotune-no-cudagraphs and our SIMT kernel, and the error against
# float64 of ours, SIMT, cuBLAS SGEMM and cuBLAS TF32 on the same inputs;
# then bench/gpu/run.py on the suite's two f32 cases. The diagnostic variants
# (x3-terms1: TF32 only; tf32-cvt: the TF32 mode's kernel) are expected to be
# rejected at the f32 tolerance: the exit status counts the bench only.
#
#   bash bench/tma/f32x3-device.sh STAGE OUT
#   (F32X3_BENCH_ARGS="--no-compile" for a quick run; F32X3_VERIFY_TRIALS, default 3)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: f32x3-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: f32x3-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
for cand in "$stage"/sg_*/tma-*/ "$stage"/sg_*/candidate-sm90a/; do
  [ -f "$cand/result.json" ] || continue
  cand=${cand%/}
  sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
  lf_verify_candidate "$stage/bin/llm-fuse-verify" "$stage/$sg/plan.json" "$cand" \
    "$out/verify/$sg.$tag" "$sg $tag" "${F32X3_VERIFY_TRIALS:-3}"
done
echo "verify: $ok accepted, $bad rejected"
cd "$root"
python3 bench/tma/f32x3_bench.py "$stage" --json "$out/f32x3-bench.json" ${F32X3_BENCH_ARGS:-} \
  > "$out/f32x3-bench.log" 2>&1
rc=$?
sed -n '/^### /,$p' "$out/f32x3-bench.log"
grep -E '^device |failed' "$out/f32x3-bench.log"
# the suite's two f32 cases as bench/gpu/run.py times them ("ours sm_90a": the
# shipped 3xTF32 kernels, the LayerNorm on its sm_90 kernel); F32X3_SUITE=0 skips
src=0
if [ "${F32X3_SUITE:-1}" = 1 ]; then
  python3 bench/gpu/run.py "$stage" --cases gemm_relu_f32,minigpt_mlp_f32 --json "$out/suite.json" \
    > "$out/suite.log" 2>&1
  src=$?
  grep -E '^\|' "$out/suite.log" | tail -n 20
fi
echo "f32x3-device: verify $ok/$((ok + bad)) accepted, bench exit $rc, suite exit $src"
[ $rc = 0 ] && [ $src = 0 ]
