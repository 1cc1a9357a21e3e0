#!/usr/bin/env bash
# final28-device.sh - session 28's closing GPU run: the held-out subgraphs
# that were more than 10% slower than torch.compile (or not verified) in
# session 27's full runs (seed 7 and seed 1, bench/table/final27-device.sh)
# and in session 28's fresh seed 23 draw, compiled again offline by the pass
# on this GPU (verify, time) with today's table and verifier, ours timed
# beside torch eager and torch.compile in one process
# (bench/table/heldout-device.sh with ONLY). Each draw's logs are packed
# into OUT/logs-TAG.tgz. Carry .device/loop (bench/loop/prepare.sh),
# .device/heldout7, .device/heldout and .device/heldout23
# (heldout.py gen + device-script).
#   bash bench/table/final28-device.sh OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: final28-device.sh OUT}" && cd "$1" && pwd)
cd "$root"
# seed 7 (stop 27's slower-than-1.1x list), seed 1 (its list and the
# unverified 016), seed 23 (the one rejected subgraph and the batched GEMMs)
s7='005_bmm_nt_r135_bf16|011_bmm_nn_r193|018_bmm_nn_r278_h7953|022_bmm_tn_r16_bf16|023_gemm_epilogue_r533_bf16|031_swiglu_r30_f16|041_mlp_block_r9531_f16|045_bmm_scores_torch_r1024_h1019|046_bmm_nt_r1024_bf16|050_minigpt_block_r1_|051_bmm_nn_r256_h12737'
s1='016_swiglu_r61_f16|017_gemm_epilogue_r142_f16|021_bmm_nn_r394|035_bmm_tn_r317'
s23='012_swiglu_r1_f13824_f16|007_bmm_nt_r1721|016_bmm_nn_r158|020_bmm_pv_torch_r677'
for d in "heldout7:seed7:$s7" "heldout:seed1:$s1" "heldout23:seed23:$s23"; do
  IFS=: read -r dir tag only <<< "$d"
  t0=$SECONDS
  ONLY="^($only)" TORCH_COMPILE_BUDGET_S=${TORCH_COMPILE_BUDGET_S:-60} \
    bash bench/table/heldout-device.sh ".device/$dir" "$out/$tag" > "$out/$tag.log" 2>&1
  echo "== $tag: exit $? in $((SECONDS - t0)) s"
  for f in summary.txt summary.json torch.json; do
    cp "$out/$tag/$f" "$out/$tag-$f" 2>/dev/null
  done
  tar czf "$out/logs-$tag.tgz" -C "$out/$tag" logs reports 2>/dev/null
  grep -E "^[0-9]{3}_" "$out/$tag/summary.txt" 2>/dev/null | grep -v "^model" | tail -40 | cut -c1-200
  sed -n '/^targets/,$p' "$out/$tag/summary.txt" 2>/dev/null
done
