#!/usr/bin/env bash
# gemm16-device.sh - on the GPU machine: unpacks the stage of bench/table/
# gemm16-prepare.sh, verifies every staged variant with the verification
# worker (llm-fuse-verify against the default MLIR lowering of its
# subgraph: fresh seeds, poisoned outputs, a determinism repeat;
# bench/tma/verify-candidate.sh), then times the accepted ones beside torch
# eager and torch.compile in one process (bench/table/gemm16_bench.py run);
# the table is printed last.
#
#   bash bench/table/gemm16-device.sh STAGE OUT
#   (GEMM16_VERIFY_TRIALS default 2; GEMM16_VERIFY_BUDGET_S default 150 for
#    all verdicts, in cases.json's order; GEMM16_BUDGET_MS default 100 per
#    variant; GEMM16_COMPILE_UNTIL_S: no torch.compile after that many s)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "${1:?usage: gemm16-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: gemm16-device.sh STAGE OUT}" && cd "$2" && pwd)
stage=/tmp/gemm16-stage vdir=/tmp/gemm16-verify
exec > >(tee "$out/device.log") 2>&1
rm -rf "$stage" "$vdir" && mkdir -p "$stage" "$vdir"
tar -C "$stage" -xJf "$pack/stage.tar.xz"
cp "$pack/libllm_fuse_rt.so" "$stage/"
export LD_LIBRARY_PATH=$pack/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
t_end=$((SECONDS + ${GEMM16_VERIFY_BUDGET_S:-150}))
for cand in $(python3 -c "import json, sys; print(' '.join('%s/%s/%s/v-%s' % (sys.argv[1], c['case'], c['sg'], t)
    for c in json.load(open(sys.argv[1] + '/cases.json')) for t in c['variants']))" "$stage"); do
  if [ $SECONDS -ge $t_end ]; then echo "verify $cand: skipped (budget)"; continue; fi
  sgdir=$(dirname "$cand")
  sg=$(basename "$sgdir") name=$(basename "$(dirname "$sgdir")") tag=$(basename "$cand")
  lf_verify_candidate "$pack/bin/llm-fuse-verify" "$sgdir/plan.json" "$cand" "$vdir/$name.$sg.$tag" \
    "$name $sg $tag" "${GEMM16_VERIFY_TRIALS:-2}"
done
echo "verify: $ok accepted, $bad rejected"
cd "$root"
PYTHONUNBUFFERED=1 python3 bench/table/gemm16_bench.py run "$stage" "$out" "$vdir"
