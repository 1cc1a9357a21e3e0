#!/usr/bin/env bash
# keys-device.sh - on the GPU machine: bench/table/keys-prepare.sh's cases
# (session 27: the attention template's special values, the new table
# keys) verified by llm-fuse-verify against each subgraph's default MLIR
# lowering (its opmath truth for 16-bit IR): every staged variant (v<k>:
# the table's; o<k>: the earlier generator's) on each of the case's seeds,
# --no-timing, --lenient-nonfinite for attention-like subgraphs as the pass
# does; and, for the timed cases, v0, o0 and x0 (those staged) timed by
# llm-fuse-verify in turns (v0, o0, x0, v0, ... three rounds: the same
# machine, the same harness), after the v0/o0/x0 verdicts and before the
# other variants'.
# Prints a summary (keys_report.py).
#
#   bash bench/table/keys-device.sh STAGE OUT
# With the device tool (carry .device/KEYS3):
#   bash bench/table/keys-device.sh .device/KEYS3 $OUT
# KEYS_BUDGET_S (default 250) stops starting verifications after that long.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: keys-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: keys-device.sh STAGE OUT}" && cd "$2" && pwd)
if [ -f "$stage/stage.tar.xz" ]; then
  mkdir -p /tmp/keys-stage && tar xJf "$stage/stage.tar.xz" -C /tmp/keys-stage
  stage=/tmp/keys-stage
fi
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader || true
mkdir -p "$out/verdicts"
t_end=$((SECONDS + ${KEYS_BUDGET_S:-250}))
# one list in the order of importance: v0, o0, x0 of every case on its
# seeds; the timing rounds; the other variants on seed 1
python3 - "$stage/cases.json" > "$out/todo" <<'PY'
import json, sys
cs = json.load(open(sys.argv[1]))
first, timed, rest = [], [], []
for c in cs:
    for t in sorted(c["variants"], key=lambda t: (t[0] != "v", int(t[1:]))):
        if t in ("v0", "o0", "x0"):
            first += [("verify", c, t, s) for s in c["seeds"]]
        else:
            rest.append(("verify", c, t, 1))
    if c["timed"]:
        timed += [("time", c, t, r) for r in range(3) for t in ("v0", "o0", "x0")
                  if t in c["variants"]]
for kind, c, t, n in first + timed + rest:
    print(kind, c["case"], c["sg"], c["cls"], t, n)
PY
while read -r kind case sg cls tag n; do
  if [ $SECONDS -ge $t_end ]; then echo "$kind $case $tag $n: skipped (budget)"; continue; fi
  len=""; [ "$cls" = attention-like ] && len=--lenient-nonfinite
  if [ "$kind" = verify ]; then
    f=$out/verdicts/$case.$tag.s$n
    timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" \
      --candidate "$stage/$sg/$tag/result.json" --seed "$n" --no-timing $len < /dev/null \
      > "$f.json" 2> "$f.err"
  else
    f=$out/verdicts/$case.$tag.t$n
    timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" \
      --candidate "$stage/$sg/$tag/result.json" --seed 1 --timing-budget-ms 300 $len < /dev/null \
      > "$f.json" 2> "$f.err"
  fi
  echo "$kind $case $tag $n: exit $? ($SECONDS s)"
done < "$out/todo" > "$out/verify.log" 2>&1
echo "verify: $(grep -c 'exit 0' "$out/verify.log") accepted, $(grep -c 'exit 1' "$out/verify.log") rejected, $(grep -c 'skipped' "$out/verify.log") skipped ($SECONDS s)"
python3 "$root/bench/table/keys_report.py" "$stage/cases.json" "$out" | tee "$out/report.txt"
(cd "$out" && tar czf verdicts.tgz verdicts && rm -rf verdicts)
