#!/usr/bin/env bash
# draws-device.sh - one device call over several held-out draws: each draw's
# models (all, or those matching a regex) compiled offline by the pass on
# this GPU (verify, time) with today's table and verifier, ours timed beside
# torch eager and torch.compile in one process (bench/table/heldout-device.sh,
# ONLY for a subset). Each draw's summary is copied to OUT/TAG-summary.*,
# its logs and reports packed into OUT/logs-TAG.tgz (the device returns a
# limited number of files). Carry .device/loop (bench/loop/prepare.sh) and
# each draw's directory (heldout.py gen + device-script).
#   bash bench/table/draws-device.sh OUT DIR:TAG[:REGEX] ...
# e.g. bash bench/table/draws-device.sh $OUT heldout29:seed29 \
#        'heldout23:seed23:007_bmm_nt_r1721|045_swiglu'
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: draws-device.sh OUT DIR:TAG[:REGEX] ...}" && cd "$1" && pwd)
shift
cd "$root"
for d in "$@"; do
  IFS=: read -r dir tag only <<< "$d"
  t0=$SECONDS
  if [[ -n "$only" ]]; then
    export ONLY="^($only)"
  else
    unset ONLY
  fi
  TORCH_COMPILE_BUDGET_S=${TORCH_COMPILE_BUDGET_S:-120} \
    bash bench/table/heldout-device.sh ".device/$dir" "$out/$tag" > "$out/$tag.log" 2>&1
  echo "== $tag: exit $? in $((SECONDS - t0)) s"
  for f in summary.txt summary.json torch.json; do
    cp "$out/$tag/$f" "$out/$tag-$f" 2>/dev/null
  done
  tar czf "$out/logs-$tag.tgz" -C "$out/$tag" logs reports 2>/dev/null
  sed -n '/^targets/,$p' "$out/$tag/summary.txt" 2>/dev/null
  grep -E "^ +(slower|below|memory-bound|swapped kernels|verified|copy)" \
    "$out/$tag/summary.txt" 2>/dev/null | cut -c1-200
done
