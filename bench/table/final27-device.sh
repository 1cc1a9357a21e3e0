#!/usr/bin/env bash
# final27-device.sh - session 27's closing GPU run: issue 15's held-out
# draws, seed 7 (`heldout.py gen --seed 7 --count 60`, nobody tuned on it
# before session 27) first, then seed 1 (`--seed 1 --count 50`), each
# compiled offline by the pass on this GPU (verify, time), ours rebuilt from
# the cache and timed beside torch eager and torch.compile in one process
# (bench/table/heldout-device.sh). Carry .device/loop (bench/loop/prepare.sh),
# .device/heldout7 and .device/heldout (heldout.py device-script). The
# summaries and torch timings are copied to OUT's top level.
#   bash bench/table/final27-device.sh OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:?usage: final27-device.sh OUT}" && cd "$1" && pwd)
cd "$root"
for d in heldout7:seed7 heldout:seed1; do
  held=.device/${d%%:*} tag=${d##*:}
  t0=$SECONDS
  TORCH_COMPILE_BUDGET_S=${TORCH_COMPILE_BUDGET_S:-120} \
    bash bench/table/heldout-device.sh "$held" "$out/$tag" > "$out/$tag.log" 2>&1
  echo "== $tag: exit $? in $((SECONDS - t0)) s"
  cp "$out/$tag/summary.txt" "$out/$tag-summary.txt" 2>/dev/null
  cp "$out/$tag/torch.json" "$out/$tag-torch.json" 2>/dev/null
  cp "$out/$tag/summary.json" "$out/$tag-summary.json" 2>/dev/null
  tail -25 "$out/$tag/summary.txt" 2>/dev/null
done
