#!/usr/bin/env bash
# skinny-device.sh - on the GPU machine: verifies and times every staged
# variant of bench/table/skinny-prepare.sh (llm-fuse-verify against the
# default MLIR lowering of its subgraph: trials with poisoned outputs, a
# determinism repeat, then CUDA-event timing with an L2 flush), times torch
# (F.linear / matmul + the epilogue, f32, TF32 off) on the same sizes
# (bench/table/skinny_torch.py), and prints the table: per subgraph the
# best skinny variant, the best variant of the entry the table gave
# before, torch, and GB/s on W.
#
#   bash bench/table/skinny-device.sh STAGE OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: skinny-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: skinny-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
t_end=$((SECONDS + ${SKINNY_VERIFY_BUDGET_S:-150}))
for cand in "$stage"/sg_*/*-v*/; do
  cand=${cand%/}
  sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
  if [ $SECONDS -ge $t_end ]; then echo "verify $sg $tag: skipped (budget)"; continue; fi
  timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
    --trials "${SKINNY_VERIFY_TRIALS:-2}" --timing-budget-ms 2000 --pretty \
    > "$out/verify/$sg.$tag.json" 2> "$out/verify/$sg.$tag.err"
  echo "verify $sg $tag exit $?"
done
cd "$root"
python3 bench/table/skinny_torch.py "$stage" "$out" 2>&1 | tail -60
