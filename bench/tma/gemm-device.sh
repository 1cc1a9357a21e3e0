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
for cand in "$stage"/sg_*/tma-*/; do
  cand=${cand%/}
  sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
  t0=$EPOCHREALTIME
  "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
    --no-timing --trials "${TMA_VERIFY_TRIALS:-2}" --pretty \
    > "$out/verify/$sg.$tag.json" 2> "$out/verify/$sg.$tag.err"
  rc=$?
  [ $rc = 0 ] && ok=$((ok + 1)) || bad=$((bad + 1))
  python3 - "$out/verify/$sg.$tag.json" "$sg" "$tag" "$rc" "$t0" "$EPOCHREALTIME" <<'PY'
import json, sys
path, sg, tag, rc, t0, t1 = sys.argv[1:7]
try:
    v = json.load(open(path))
except Exception as e:
    v = {"accepted": False, "reason": "no verdict (%s)" % e}
worst = []
for t in v.get("trials") or []:
    for o in t.get("outputs") or []:
        for k in ("max_err_over_tol",):
            if k in o:
                worst.append(o[k])
print("verify %s %-14s exit %s %s %s%s [%.1f s]" % (
    sg, tag, rc, "ACCEPTED" if v.get("accepted") else "REJECTED", v.get("reason", ""),
    " max err/tol %.3g" % max(worst) if worst else "", float(t1) - float(t0)))
if not v.get("accepted"):
    print("  " + str(v.get("message", ""))[:300])
PY
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
