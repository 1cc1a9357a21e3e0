#!/usr/bin/env bash
# attn16-device.sh - on the GPU machine: unpacks bench/table/
# attn16-prepare.sh's stage; verifies every staged variant with
# llm-fuse-verify against its subgraph's default lowering (the opmath
# truth: the 16-bit IR computed in f32), --lenient-nonfinite as the pass
# asks for attention-like subgraphs: v-new0 on seeds 1 and 2, v-old0 on
# seed 1 (8 trials each: 5 random, NaN/Inf, heavy-tailed, spikes); times
# v-new0 and v-old0 with llm-fuse-verify's own timing (the pass's
# kernel_ms) on the timed cases; then bench/table/attn16_bench.py run:
# ours beside torch eager, torch.compile and compiled sdpa in one process.
#
#   bash bench/table/attn16-device.sh STAGE OUT
#   (ATTN16_VERIFY_BUDGET_S default 120: no verification started after it)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "${1:?usage: attn16-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: attn16-device.sh STAGE OUT}" && cd "$2" && pwd)
stage=/tmp/attn16-stage vdir=/tmp/attn16-verify
exec > >(tee "$out/device.log") 2>&1
rm -rf "$stage" "$vdir" && mkdir -p "$stage" "$vdir"
tar -C "$stage" -xJf "$pack/stage.tar.xz"
cp "$pack/libllm_fuse_rt.so" "$stage/"
export LD_LIBRARY_PATH=$pack/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
t_end=$((SECONDS + ${ATTN16_VERIFY_BUDGET_S:-120}))
python3 - "$stage/cases.json" > "$vdir/todo" <<'PY'
import json, sys
cs = json.load(open(sys.argv[1]))
first, second, timed = [], [], []
for c in cs:
    for t in c["variants"]:
        first.append(("verify", c, t, 1))
        if t.startswith("new"):
            second.append(("verify", c, t, 2))
        if c["timed"] and t in ("new0", "old0"):
            timed.append(("time", c, t, 1))
for kind, c, t, n in first + timed + second:
    print(kind, c["case"], c["sg"], t, n)
PY
while read -r kind case sg tag n; do
  if [ $SECONDS -ge $t_end ]; then echo "$kind $case $tag s$n: skipped (budget)"; continue; fi
  base=$vdir/$case.$sg.v-$tag
  [ "$n" = 1 ] || base=$base.s$n
  [ "$kind" = verify ] || base=$vdir/timing.$case.$tag
  args=(--no-timing); [ "$kind" = verify ] || args=(--timing-budget-ms 300)
  timeout 90 "$pack/bin/llm-fuse-verify" --plan "$stage/$case/$sg/plan.json" \
    --candidate "$stage/$case/$sg/v-$tag/result.json" --seed "$n" --lenient-nonfinite "${args[@]}" \
    < /dev/null > "$base.json" 2> "$base.err"
  rc=$?
  python3 - "$base.json" "$kind $case $tag s$n" "$rc" "$SECONDS" <<'PY'
import json, sys
path, what, rc, t = sys.argv[1:5]
try:
    v = json.load(open(path))
except Exception as e:
    v = {"accepted": False, "reason": "no verdict (%s)" % e}
worst = [float(o["max_err_over_tol"]) for t_ in v.get("trials") or [] for o in t_.get("outputs") or []
         if "max_err_over_tol" in o]
p = v.get("performance") or v.get("timing") or {}
print("%-44s exit %s %s %s%s%s [%s s]" % (
    what, rc, "ACCEPTED" if v.get("accepted") else "REJECTED", v.get("reason", ""),
    " max err/tol %.3g (%s)" % (max(worst), " ".join("%.3g" % w for w in worst)) if worst else "",
    " timing %s" % json.dumps(p)[:200] if p else "", t))
if not v.get("accepted"):
    print("  " + str(v.get("message", ""))[:400])
PY
done < "$vdir/todo"
echo "verify: $(grep -l '"accepted": *true' "$vdir"/*.json 2>/dev/null | wc -l) accepted verdict files ($SECONDS s)"
(cd "$vdir" && tar czf "$out/verdicts.tgz" ./*.json ./*.err)
cd "$root"
PYTHONUNBUFFERED=1 python3 bench/table/attn16_bench.py run "$stage" "$out" "$vdir"
