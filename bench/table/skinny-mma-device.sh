#!/usr/bin/env bash
# skinny-mma-device.sh - on the GPU machine: unpacks the stage of bench/table/
# skinny-mma-prepare.sh, verifies every staged variant with the verification
# worker (llm-fuse-verify against the default MLIR lowering of its
# subgraph: fresh seeds, poisoned outputs, a determinism repeat;
# bench/tma/verify-candidate.sh), then times the accepted ones beside torch
# eager and torch.compile in one process (bench/table/skinny_mma_bench.py run);
# the table is printed last.
#
#   bash bench/table/skinny-mma-device.sh STAGE OUT
#   (SKINNY_MMA_VERIFY_SEED: the verifier's --seed, for every candidate;
#    GEMM16_VERIFY_TRIALS default 2; GEMM16_VERIFY_BUDGET_S default 150 for
#    all verdicts, in cases.json's order; GEMM16_BUDGET_MS default 100 per
#    variant; GEMM16_COMPILE_UNTIL_S: no torch.compile after that many s)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "${1:?usage: skinny-mma-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: skinny-mma-device.sh STAGE OUT}" && cd "$2" && pwd)
stage=/tmp/skinny-mma-stage vdir=/tmp/skinny-mma-verify
exec > >(tee "$out/device.log") 2>&1
rm -rf "$stage" "$vdir" "$vdir.default" && mkdir -p "$stage" "$vdir"
tar -C "$stage" -xJf "$pack/stage.tar.xz"
cp "$pack/libllm_fuse_rt.so" "$stage/"
export LD_LIBRARY_PATH=$pack/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
# every candidate verified with the verifier's default seed; with
# SKINNY_MMA_VERIFY_SEED set, again with that seed (the pass draws a fresh
# seed per candidate), and that second verdict is the one the timing uses
cands=$(python3 -c "import json, sys; print(' '.join('%s/%s/%s/v-%s' % (sys.argv[1], c['case'], c['sg'], t)
    for c in json.load(open(sys.argv[1] + '/cases.json')) for t in c['variants']))" "$stage")
verify_all() {  # VERIFY VDIR
  local cand sgdir sg name tag t_end=$((SECONDS + ${GEMM16_VERIFY_BUDGET_S:-150}))
  ok=0 bad=0
  for cand in $cands; do
    if [ $SECONDS -ge $t_end ]; then echo "verify $cand: skipped (budget)"; continue; fi
    sgdir=$(dirname "$cand")
    sg=$(basename "$sgdir") name=$(basename "$(dirname "$sgdir")") tag=$(basename "$cand")
    lf_verify_candidate "$1" "$sgdir/plan.json" "$cand" "$2/$name.$sg.$tag" \
      "$name $sg $tag" "${GEMM16_VERIFY_TRIALS:-2}"
  done
  echo "verify: $ok accepted, $bad rejected"
}
if [ -n "${SKINNY_MMA_VERIFY_SEED:-}" ]; then
  echo "== verify, the default seed"
  mkdir -p "$vdir.default"
  verify_all "$pack/bin/llm-fuse-verify" "$vdir.default"
  printf '#!/bin/sh\nexec %s --seed %s "$@"\n' "$pack/bin/llm-fuse-verify" "$SKINNY_MMA_VERIFY_SEED" \
    > /tmp/skinny-mma-verify.sh
  chmod +x /tmp/skinny-mma-verify.sh
  echo "== verify, seed $SKINNY_MMA_VERIFY_SEED (these verdicts gate the timing)"
  verify_all /tmp/skinny-mma-verify.sh "$vdir"
else
  verify_all "$pack/bin/llm-fuse-verify" "$vdir"
fi
cd "$root"
PYTHONUNBUFFERED=1 python3 bench/table/skinny_mma_bench.py run "$stage" "$out" "$vdir"
