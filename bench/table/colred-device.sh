#!/usr/bin/env bash
# colred-device.sh - on the GPU machine: verifies and times every staged
# variant of bench/table/colred-prepare.sh (kernels/table/colred_any.py:
# reductions over the leading dimension(s); llm-fuse-verify against the
# subgraph's default MLIR lowering, or its opmath reference for 16-bit IR:
# trials with poisoned outputs, a determinism repeat, then CUDA-event timing
# with an L2 flush), then times torch eager and torch.compile on the same
# reductions and a 1 GiB device copy (bench/table/colred_torch.py) and
# prints the table: case, verified, ours ms, eager, compile, ours/compile,
# GB/s, % of copy.
#
#   bash bench/table/colred-device.sh STAGE OUT
# With the device tool (carry .device/colred; OUT holds at most 8 files, so
# the verify results stay in /tmp and come back as verify.tgz):
#   bash bench/table/colred-device.sh .device/colred /tmp/cr;
#   cp /tmp/cr/device.log /tmp/cr/colred.json /tmp/cr/verify.tgz $OUT/
# COLRED_VERIFY_BUDGET_S (default 150) stops verifying after that long.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: colred-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: colred-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
ld0=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
t_end=$((SECONDS + ${COLRED_VERIFY_BUDGET_S:-150}))
for cand in "$stage"/sg_*/v*/; do
  cand=${cand%/}
  sg=$(basename "$(dirname "$cand")") tag=$(basename "$cand")
  if [ $SECONDS -ge $t_end ]; then echo "verify $sg $tag: skipped (budget)"; continue; fi
  timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
    --trials "${COLRED_VERIFY_TRIALS:-2}" --timing-budget-ms "${COLRED_TIMING_MS:-500}" --pretty \
    > "$out/verify/$sg.$tag.json" 2> "$out/verify/$sg.$tag.err"
  echo "verify $sg $tag exit $? ($SECONDS s)"
done
cd "$root"
(cd "$out/verify" && tar czf "$out/verify.tgz" .)
LD_LIBRARY_PATH=$ld0 python3 bench/table/colred_torch.py "$stage" "$out" 2>&1 | tail -90
