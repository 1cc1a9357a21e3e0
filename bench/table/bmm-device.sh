#!/usr/bin/env bash
# bmm-device.sh - on the GPU machine: verifies and times every staged variant
# of bench/table/bmm-prepare.sh (llm-fuse-verify against the default MLIR
# lowering of its subgraph: trials with poisoned outputs, a determinism
# repeat, then CUDA-event timing with an L2 flush), times torch eager
# (torch.bmm with .transpose views) and torch.compile on the same products
# (bench/table/bmm_torch.py), and prints the table: case, verified, ours ms,
# eager, compile, ours/compile.
#
#   bash bench/table/bmm-device.sh STAGE OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: bmm-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: bmm-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
vdir=$(mktemp -d)   # the verdicts (OUT keeps only a few files: device.log, bmm.json, verify.tgz)
t_end=$((SECONDS + ${BMM_VERIFY_BUDGET_S:-140}))
# every subgraph's first variant (first-v0), then the other variants (first-v<k>, x-v<k>: BMM_EXPLORE;
# BMM_X_FIRST=1: the x-v<k> before the first-v<k>)
rest=$(ls -d "$stage"/sg_*/*-v*/ | grep -v '/first-v0/$')
if [ "${BMM_X_FIRST:-0}" = 1 ]; then rest="$(echo "$rest" | grep '/x-v') $(echo "$rest" | grep -v '/x-v')"; fi
for cand in "$stage"/sg_*/first-v0/ $rest; do
  cand=${cand%/}
  sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
  if [ $SECONDS -ge $t_end ]; then echo "verify $sg $tag: skipped (budget)"; continue; fi
  timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
    --trials "${BMM_VERIFY_TRIALS:-2}" --timing-budget-ms 500 --pretty \
    > "$vdir/$sg.$tag.json" 2> "$vdir/$sg.$tag.err"
  echo "verify $sg $tag exit $? ($SECONDS s)"
done
tar -czf "$out/verify.tgz" -C "$vdir" . || true
cd "$root"
BMM_TORCH_BUDGET_S=${BMM_TORCH_BUDGET_S:-100} python3 bench/table/bmm_torch.py "$stage" "$out" "$vdir" 2>&1 | tail -60
