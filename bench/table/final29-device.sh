#!/usr/bin/env bash
# final29-device.sh - session 29's closing GPU runs, in three calls (the
# carry limit: .device/loop plus the draws of one call fit 64 MiB):
#   part C: the bad-kernel corpus with the final llm-fuse-verify
#     (bench/table/vcond-device.sh, CORPUS=1; stage: bash
#     bench/table/vcond-prepare.sh .device/vfinal BUILD
#     .device/heldout23/models/012_swiglu_r1_f13824_f16.mlir).
#     carry .device/vfinal
#   part A: a fresh held-out draw nobody tuned on (heldout.py gen --seed 31
#     --count 60, device-script into .device/heldout31), every model.
#     carry .device/loop .device/heldout31
#   part B: the subgraphs of seeds 23, 7 and 1 that were more than 10%
#     slower than torch.compile, refused, or below 90% of the copy in
#     sessions 27-28, compiled again with today's table and verifier.
#     carry .device/loop .device/heldout23 .device/heldout7 .device/heldout
# Both time ours beside torch eager and torch.compile under the memset and
# the clean L2 flush (TORCH_FLUSH=both; the summary's targets use the
# memset figures and add the memory-bound target under the clean flush).
#   bash bench/table/final29-device.sh A|B|C OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
part=${1:?usage: final29-device.sh A|B|C OUT}
out=$(mkdir -p "${2:?usage: final29-device.sh A|B|C OUT}" && cd "$2" && pwd)
cd "$root"
export TORCH_FLUSH=${TORCH_FLUSH:-both}
if [ "$part" = C ]; then
  t0=$SECONDS
  CORPUS=1 SEEDS=${SEEDS:-4} bash bench/table/vcond-device.sh .device/vfinal "$out/vcond" > "$out/vcond.log" 2>&1
  echo "== corpus and 012: exit $? in $((SECONDS - t0)) s"
  grep -E "case\(s\)|not as expected|ACCEPTED|REJECTED|seed" "$out/vcond.log" | tail -12
  tar czf "$out/vcond.tgz" -C "$out" vcond 2>/dev/null && rm -rf "$out/vcond"
elif [ "$part" = A ]; then
  bash bench/table/draws-device.sh "$out" heldout31:seed31
else
  s23='001_swiglu_r80_d2560|007_bmm_nt_r1721|011_colmax_r7168|012_swiglu_r1_f13824_f16|016_bmm_nn_r158|017_colsum_bt_r432|018_colsum_bt_r16_h11008|020_bmm_pv_torch_r677|023_colsum_r14416_bf16|029_minigpt_block_r1024_d1600|032_softmax_tosa_r6640_bf16|045_swiglu_r2560_d1000_f2008'
  s7='011_bmm_nn_r193|018_bmm_nn_r278_h7953|023_gemm_epilogue_r533_bf16|041_mlp_block_r9531_f16|046_bmm_nt_r1024_bf16|051_bmm_nn_r256_h12737'
  s1='006_|008_|016_swiglu_r61_f16|017_gemm_epilogue_r142_f16|021_bmm_nn_r394|035_bmm_tn_r317'
  TORCH_COMPILE_BUDGET_S=${TORCH_COMPILE_BUDGET_S:-60} bash bench/table/draws-device.sh "$out" \
    "heldout23:seed23:$s23" "heldout7:seed7:$s7" "heldout:seed1:$s1"
fi
