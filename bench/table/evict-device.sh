#!/usr/bin/env bash
# evict-device.sh - on the GPU machine: the streaming-load A/B staged by
# bench/table/evict-prepare.sh. Each variant is verified and timed by
# llm-fuse-verify (poisoned-output trials against the default lowering,
# then CUDA-event timing after a 256 MiB memset L2 flush, which leaves the
# L2 full of dirty lines), as the table has it (v<k>) and with evict-first
# streaming loads (v<k>nt), the two in turn; then prints per case and
# variant: verified, ms plain, ms streaming, ratio, GB/s of each.
#
#   bash bench/table/evict-device.sh STAGE OUT
# EVICT_VERIFY_BUDGET_S (default 200) stops verifying after that long.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: evict-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: evict-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
t_end=$((SECONDS + ${EVICT_VERIFY_BUDGET_S:-200}))
# Round robin over the variant index, so that a budget cut leaves every
# case with its first variants' pairs.
for k in 0 1 2 3 4 5 6 7; do
  for sg in "$stage"/sg_*; do
    sg=$(basename "$sg")
    for tag in v$k v${k}nt; do
      cand=$stage/$sg/$tag
      [ -f "$cand/result.json" ] || continue
      if [ $SECONDS -ge $t_end ]; then echo "verify $sg $tag: skipped (budget)"; continue; fi
      timeout 90 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
        --trials "${EVICT_VERIFY_TRIALS:-2}" --timing-budget-ms "${EVICT_TIMING_MS:-400}" --pretty \
        > "$out/verify/$sg.$tag.json" 2> "$out/verify/$sg.$tag.err"
      echo "verify $sg $tag exit $? ($SECONDS s)"
    done
  done
done
(cd "$out/verify" && tar czf "$out/verify.tgz" .)
python3 "$root/bench/table/evict_table.py" "$stage" "$out" | tee "$out/evict-table.txt"
