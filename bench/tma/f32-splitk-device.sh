#!/usr/bin/env bash
# f32-splitk-device.sh - on the GPU machine: verifies every kernel variant
# staged by bench/tma/f32-splitk-prepare.sh with the verification worker
# (bench/tma/verify-candidate.sh: llm-fuse-verify against the default MLIR
# lowering, the exact f32 tolerance; verdicts in $F32SK_VERIFY_DIR, default
# /tmp/f32sk-verify), then checks (float64, bit-identical repeat) and times
# them beside torch eager and torch.compile (TF32 off) in one process
# (bench/tma/f32_splitk_bench.py run); the table is printed last.
#
#   bash bench/tma/f32-splitk-device.sh STAGE OUT
#   (F32SK_VERIFY_TRIALS default 2; SPLITK_BUDGET_MS default 150 per
#    variant; SPLITK_COMPILE_UNTIL_S: no torch.compile after that many s)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: f32-splitk-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: f32-splitk-device.sh STAGE OUT}" && cd "$2" && pwd)
vdir=${F32SK_VERIFY_DIR:-/tmp/f32sk-verify}
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
    "$name $tag" "${F32SK_VERIFY_TRIALS:-2}"
done
echo "verify: $ok accepted, $bad rejected"
cd "$root"
PYTHONUNBUFFERED=1 python3 bench/tma/f32_splitk_bench.py run "$stage" "$out" "$vdir"
