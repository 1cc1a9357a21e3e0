#!/usr/bin/env bash
# splitk-device.sh - on the GPU machine: verifies every kernel variant staged
# by bench/tma/splitk-prepare.sh with the verification worker
# (bench/tma/verify-candidate.sh; verdicts in $SPLITK_VERIFY_DIR, default
# /tmp/splitk-verify: outside OUT, which brings back 8 files), then checks
# (float64, bit-identical repeat) and times them beside torch eager and
# torch.compile (bench/tma/splitk_bench.py run); the table is printed last.
#
#   bash bench/tma/splitk-device.sh STAGE OUT
#   (SPLITK_VERIFY_TRIALS default 2; SPLITK_BUDGET_MS default 150 per
#    variant; SPLITK_COMPILE_UNTIL_S: no torch.compile after that many s;
#    SPLITK_BENCH: the case script, default bench/tma/splitk_bench.py)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: splitk-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: splitk-device.sh STAGE OUT}" && cd "$2" && pwd)
vdir=${SPLITK_VERIFY_DIR:-/tmp/splitk-verify}
exec > >(tee "$out/device.log") 2>&1      # everything printed is kept in OUT too
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
rm -rf "$vdir" && mkdir -p "$vdir"
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
for cand in "$stage"/*/sg_*/v-*/; do
  cand=${cand%/}
  sgdir=$(dirname "$cand")
  name=$(basename "$(dirname "$sgdir")") tag=$(basename "$cand")
  lf_verify_candidate "$stage/bin/llm-fuse-verify" "$sgdir/plan.json" "$cand" "$vdir/$name.$tag" \
    "$name $tag" "${SPLITK_VERIFY_TRIALS:-2}"
done
echo "verify: $ok accepted, $bad rejected"
cd "$root"
PYTHONUNBUFFERED=1 python3 "${SPLITK_BENCH:-bench/tma/splitk_bench.py}" run "$stage" "$out" "$vdir"
