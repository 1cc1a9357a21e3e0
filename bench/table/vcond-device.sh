#!/usr/bin/env bash
# vcond-device.sh - on the GPU machine: why seed 23's one-row f16 SwiGLU
# (012_swiglu_r1_f13824_f16, gemm_any_swiglu_f16_mma_row) is refused on the
# spike trial. From the stage of bench/table/vcond-prepare.sh:
#  (a) the worker on the staged variant with the pass's base seed
#      (BASE_SEED), the spike trial dumped (LF_VERIFY_DUMP_DIR), and
#      bench/table/vcond_analyze.py on the dump (float64 truth, f32
#      summation orders, error scales);
#  (b) the same variant on seeds 1..SEEDS (default 8), one line each;
#  (c) with CORPUS=1, the bad-kernel corpus (scripts/verify-corpus.sh), and
#      with OLD=1 again with the worker built before the change
#      (STAGE/bin/llm-fuse-verify-old), then the cases whose verdicts differ.
#   bash bench/table/vcond-device.sh STAGE OUT
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
st=$(cd "${1:?usage: vcond-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: vcond-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$st/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader || true
summary() {  # VERDICT LABEL
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("%-40s no verdict (%s)" % (sys.argv[2], e)); sys.exit()
per = []
for t in v.get("trials", []):
    o = (t.get("outputs") or [{}])[0]
    per.append("%s:%.3f%s" % (t.get("distribution", "?")[:5], o.get("max_err_over_tol", -1),
                              "/%d" % o["passed_by_acc32_bound"] if "passed_by_acc32_bound" in o else ""))
print("%-40s %-8s %-10s %s  acc32 k %s, passed by the bound %s" % (
    sys.argv[2], "accepted" if v.get("accepted") else "rejected", v.get("reason"), " ".join(per),
    v.get("protocol", {}).get("acc32_k", "-"), v.get("passed_by_acc32_bound", "-")))
if not v.get("accepted"):
    print("    " + v.get("message", "")[:400])
PY
}
read -r plan cand < <(python3 -c "
import json, sys
c = json.load(open(sys.argv[1] + '/sw/cases.json'))[0]
print(c['plan'], c['variants'][0]['candidate'])" "$st")
echo "== (a) base seed ${BASE_SEED:=0x3019e8d4880d353e}, spike trial dumped"
dump=/tmp/vcond-dump && rm -rf $dump && mkdir -p $dump
t0=$SECONDS
LF_VERIFY_DUMP_DIR=$dump LF_VERIFY_DUMP_TRIAL=${DUMP_TRIAL:-5} timeout 120 "$st/bin/llm-fuse-verify" \
  --seed "$BASE_SEED" --no-timing ${EXTRA:-} --plan "$st/$plan" --candidate "$st/$cand" \
  --out "$out/base.json" 2> "$out/base.err"
summary "$out/base.json" "012 base seed"
ls -la $dump
echo "(a) worker took $((SECONDS - t0)) s"
t0=$SECONDS
python3 "$root/bench/table/vcond_analyze.py" $dump ${DUMP_TRIAL:-5} "$out/cols.npz"
echo "(a) analysis took $((SECONDS - t0)) s"
echo "== (b) seeds 1..${SEEDS:=8}"
for s in $(seq 1 "$SEEDS"); do
  timeout 120 "$st/bin/llm-fuse-verify" --seed "$s" --no-timing ${EXTRA:-} --plan "$st/$plan" \
    --candidate "$st/$cand" --out "$out/s$s.json" 2> "$out/s$s.err"
  summary "$out/s$s.json" "012 seed $s"
done
if [ "${CORPUS:-0}" = 1 ]; then
  echo "== (c) the bad-kernel corpus"
  t0=$SECONDS
  bash "$root/scripts/verify-corpus.sh" "$st/corpus" "$out/corpus"
  echo "corpus took $((SECONDS - t0)) s"
  python3 - "$out/corpus/verdicts.jsonl" <<'PY'
import json, sys
for v in map(json.loads, open(sys.argv[1])):
    acc = v.get("protocol", {}).get("acc32_k")
    if acc:
        print("  %-28s acc32 k %s: %s %s, passed by the bound %s; %s" % (
            v["case"], acc, "accepted" if v.get("accepted") else "rejected", v.get("reason"),
            v.get("passed_by_acc32_bound"), v.get("message", "")[:300]))
PY
fi
if [ "${OLD:-0}" = 1 ]; then
  echo "== (c') the corpus, the worker before the change"
  rm -rf /tmp/vcond-corpus-old && cp -r "$st/corpus" /tmp/vcond-corpus-old
  cp "$st/bin/llm-fuse-verify-old" /tmp/vcond-corpus-old/bin/llm-fuse-verify
  bash "$root/scripts/verify-corpus.sh" /tmp/vcond-corpus-old "$out/corpus-old"
  python3 - "$out/corpus/verdicts.jsonl" "$out/corpus-old/verdicts.jsonl" <<'PY'
import json, sys
new = {v["case"]: v for v in map(json.loads, open(sys.argv[1]))}
old = {v["case"]: v for v in map(json.loads, open(sys.argv[2]))}
diff = [c for c in new if (new[c].get("accepted"), new[c].get("reason")) != (old.get(c, {}).get("accepted"), old.get(c, {}).get("reason"))]
print("verdicts that differ between the new and the old worker: %s" % (diff or "none"))
PY
  echo "== 012 with the old worker, base seed"
  timeout 120 "$st/bin/llm-fuse-verify-old" --seed "$BASE_SEED" --no-timing --plan "$st/$plan" \
    --candidate "$st/$cand" --out "$out/base-old.json" 2> "$out/base-old.err"
  summary "$out/base-old.json" "012 base seed, old worker"
fi
