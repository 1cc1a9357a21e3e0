#!/usr/bin/env bash
# overflow-device.sh - on the GPU machine: the f16 overflow boundary
# (docs/verification.md, "The f16 overflow boundary"), from the stage of
# bench/table/overflow-prepare.sh.
#  (a) the held-out SwiGLU f16 subgraphs (seed 1's 016, seed 7's 031):
#      every staged variant of the table entries the pass tried, verified
#      with the new worker on seeds SEEDS (default "1 2 3") twice, with the
#      wide reference (the default) and with --no-wide-reference (the
#      comparison as before the change), both --no-timing; then once more
#      timed (seed 1, the wide reference). One line per verdict: accepted,
#      reason, the overflow-boundary elements per trial, worker wall ms.
#  (b)-(d) the bad-kernel corpus (scripts/verify-corpus.sh, 42 cases: the
#      38 before and the 4 mm16 ones) with the new worker, then with the
#      worker built before the change (bin/llm-fuse-verify-old).
#   bash bench/table/overflow-device.sh STAGE OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
st=$(cd "${1:?usage: overflow-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: overflow-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$st/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
summary() {  # VERDICT LABEL
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("%-62s no verdict (%s)" % (sys.argv[2], e)); sys.exit()
per = []
for t in v.get("trials", []):
    o = (t.get("outputs") or [{}])[0]
    if "overflow_boundary" in o:
        per.append("%d" % o["overflow_boundary"])
tm = v.get("timing", {})
print("%-62s %-8s %-10s boundary/trial [%s] total %s wall %.0f ms%s" % (
    sys.argv[2], "accepted" if v.get("accepted") else "rejected", v.get("reason"),
    ",".join(per), v.get("overflow_boundary", "-"), v.get("worker", {}).get("wall_ms", 0),
    " cand %.4f ms ref %.3f ms" % (tm["candidate_ms"], tm["reference_ms"]) if tm else ""))
if not v.get("accepted"):
    print("    " + v.get("message", "")[:400])
PY
}
echo "== (a) held-out SwiGLU f16, every variant, seeds ${SEEDS:-1 2 3}"
t0=$SECONDS
mkdir -p "$out/sw"
rows=$(python3 -c "
import json, sys
for c in json.load(open(sys.argv[1] + '/sw/cases.json')):
    for v in c['variants']:
        print(c['case'], c['plan'], v['tag'], v['candidate'])" "$st")
while read -r case plan tag cand; do
  for seed in ${SEEDS:-1 2 3}; do
    for mode in wide old; do
      flag=; [ $mode = old ] && flag=--no-wide-reference
      f=$out/sw/$case.$tag.s$seed.$mode.json
      timeout 120 "$st/bin/llm-fuse-verify" --seed "$seed" --no-timing $flag \
        --plan "$st/$plan" --candidate "$st/$cand" --out "$f" 2> "${f%.json}.err"
      summary "$f" "$case $tag seed $seed $mode"
    done
  done
  f=$out/sw/$case.$tag.timed.json
  timeout 120 "$st/bin/llm-fuse-verify" --seed 1 --plan "$st/$plan" --candidate "$st/$cand" \
    --out "$f" 2> "${f%.json}.err"
  summary "$f" "$case $tag seed 1 wide, timed"
done <<< "$rows"
echo "(a) took $((SECONDS - t0)) s"
echo "== (b)-(d) the bad-kernel corpus, the new worker"
t0=$SECONDS
bash "$root/scripts/verify-corpus.sh" "$st/corpus" "$out/corpus-new"
echo "corpus (new) took $((SECONDS - t0)) s"
echo "== the bad-kernel corpus, the worker before the change"
t0=$SECONDS
rm -rf /tmp/overflow-corpus-old && cp -r "$st/corpus" /tmp/overflow-corpus-old
cp "$st/bin/llm-fuse-verify-old" /tmp/overflow-corpus-old/bin/llm-fuse-verify
bash "$root/scripts/verify-corpus.sh" /tmp/overflow-corpus-old "$out/corpus-old"
echo "corpus (old) took $((SECONDS - t0)) s"
python3 - "$out/corpus-new/verdicts.jsonl" "$out/corpus-old/verdicts.jsonl" <<'PY'
import json, sys
new = {v["case"]: v for v in map(json.loads, open(sys.argv[1]))}
old = {v["case"]: v for v in map(json.loads, open(sys.argv[2]))}
same = diff = 0
for c in sorted(new):
    a, b = new[c], old.get(c, {})
    if (a.get("accepted"), a.get("reason")) == (b.get("accepted"), b.get("reason")):
        same += 1
    else:
        diff += 1
        print("differs: %s new %s/%s old %s/%s" % (c, a.get("accepted"), a.get("reason"),
                                                   b.get("accepted"), b.get("reason")))
    if c.startswith("corpus-mm16"):
        print("%s: new: %s %s; boundary %s; %s" % (c, a.get("reason"), a.get("wide_reference"),
                                                 a.get("overflow_boundary"), a.get("message", "")[:300]))
print("corpus: %d case(s) with the same verdict (accepted, reason) as the old worker, %d differ"
      % (same, diff))
PY
