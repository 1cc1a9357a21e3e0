#!/usr/bin/env bash
# gemm-device.sh - on the GPU machine (issue 16, point 2): verifies every
# TMA-fed GEMM variant staged by bench/tma/gemm-prepare.sh with the
# verification worker (llm-fuse-verify against the default MLIR lowering of
# its subgraph: several trials, poisoned outputs, a determinism repeat; no
# timing there), then times the suite's two cases (swiglu_bf16,
# gemm_bias_gelu_bf16) with bench/tma/gemm_bench.py: each TMA variant, the
# shipped sm_90a kernel, cuBLAS (torch eager), torch.compile and
# max-autotune-no-cudagraphs, same inputs, one process; prints the table
# (ms, TFLOP/s, % of the bf16 rate measured in the same run).
#
#   bash bench/tma/gemm-device.sh STAGE OUT
#   (TMA_BENCH_ARGS="--no-compile" for a quick run; TMA_VERIFY_TRIALS, default 2)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: gemm-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: gemm-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1      # everything printed is kept in OUT too
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
for cand in "$stage"/sg_*/tma-*/; do
  cand=${cand%/}
  sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
  lf_verify_candidate "$stage/bin/llm-fuse-verify" "$stage/$sg/plan.json" "$cand" \
    "$out/verify/$sg.$tag" "$sg $tag" "${TMA_VERIFY_TRIALS:-2}"
done
echo "verify: $ok accepted, $bad rejected"
cd "$root"
# torch's autotuning chatter stays in the log; the table is printed
python3 bench/tma/gemm_bench.py "$stage" --json "$out/gemm-bench.json" ${TMA_BENCH_ARGS:-} \
  > "$out/gemm-bench.log" 2>&1
rc=$?
grep -E '^device |^bf16 rate|^\||^  [a-z-]+ (failed|check failed)' "$out/gemm-bench.log"
echo "gemm-device: verify $ok/$((ok + bad)) accepted, bench exit $rc"
[ $bad = 0 ] && [ $rc = 0 ]
