#!/usr/bin/env bash
# bmm16-device.sh - on the GPU machine: verifies and times every staged
# variant of bench/table/bmm16-prepare.sh, the table before (STAGE/old) and
# after (STAGE/new) kernels/table/bmm16_any.py's entries (llm-fuse-verify
# against the default MLIR lowering: trials with poisoned outputs, a
# determinism repeat, CUDA-event timing with an L2 flush), then times torch
# eager and torch.compile on the same products in the same process
# (bench/table/bmm16_report.py) and prints before / after / eager / compile.
#
#   bash bench/table/bmm16-device.sh STAGE OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: bmm16-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: bmm16-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
vroot=$(mktemp -d)
t_end=$((SECONDS + ${BMM16_VERIFY_BUDGET_S:-170}))
for s in new old; do
  [ -d "$stage/$s" ] || continue
  mkdir -p "$vroot/$s"
  for cand in $(ls -d "$stage/$s"/sg_*/first-v*/ 2>/dev/null); do
    cand=${cand%/}
    sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
    if [ $SECONDS -ge $t_end ]; then echo "verify $s $sg $tag: skipped (budget)"; continue; fi
    timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$s/$sg/plan.json" --candidate "$cand/result.json" \
      --trials "${BMM16_VERIFY_TRIALS:-2}" --timing-budget-ms 500 --pretty \
      > "$vroot/$s/$sg.$tag.json" 2> "$vroot/$s/$sg.$tag.err"
    echo "verify $s $sg $tag exit $? ($SECONDS s)"
  done
done
tar -czf "$out/verify.tgz" -C "$vroot" . || true
cd "$root"
BMM16_TORCH_BUDGET_S=${BMM16_TORCH_BUDGET_S:-90} python3 bench/table/bmm16_report.py "$stage" "$vroot" "$out" 2>&1 |
  tail -80
