#!/usr/bin/env bash
# colred-device.sh - on the GPU machine: times every staged variant of
# bench/table/colred-prepare.sh (kernels/table/colred_any.py: reductions
# over the leading dimension(s); the table's variants v<k> and the
# experimental candidates x<k>) side by side with torch eager,
# torch.compile and a same-size copy in one process
# (bench/table/colred_torch.py: bench/gpu/run.py's timing method, each
# variant checked against torch eager first), then verifies the variants
# with llm-fuse-verify against the subgraph's default MLIR lowering, or
# its opmath reference for 16-bit IR (trials with poisoned outputs, a
# determinism repeat; --no-timing), the table's first, and prints the
# table with the verdicts. Then, for the small cases (COLRED_SMALL), the
# table's variants once more timed by llm-fuse-verify (the held-out run's
# harness for "ours") and, where ncu runs, the kernel-only durations of
# ours and torch.compile's (bench/table/colred_ncu.py): vtimed.log.
#
#   bash bench/table/colred-device.sh STAGE OUT
# With the device tool (carry .device/colred2):
#   bash bench/table/colred-device.sh .device/colred2 $OUT
# COLRED_VERIFY_BUDGET_S (default 120) stops verifying after that long,
# COLRED_VERIFY_END (epoch seconds) at that time;
# COLRED_VERIFY_X=0 verifies the table's variants only (fast: and the
# experiments faster than them), COLRED_VERIFY_O=1 the o<k> too; COLRED_SMALL=""
# skips the small cases' second timing and ncu; COLRED_SASS="CASE:TAG ..."
# keeps those variants' SASS (sass.tgz).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: colred-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: colred-device.sh STAGE OUT}" && cd "$2" && pwd)
if [ -f "$stage/stage.tar.xz" ]; then  # colred-prepare.sh's archive
  mkdir -p /tmp/colred-stage && tar xJf "$stage/stage.tar.xz" -C /tmp/colred-stage
  stage=/tmp/colred-stage
fi
exec > >(tee "$out/device.log") 2>&1
export PYTHONUNBUFFERED=1
ld0=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
cd "$root"
LD_LIBRARY_PATH=$ld0 python3 bench/table/colred_torch.py "$stage" "$out" > "$out/timing.log" 2>&1
echo "timing: exit $? ($SECONDS s)"
tmp=$(mktemp -d)
mkdir -p "$tmp/verify"
ln -s "$tmp/verify" "$out/verify" 2>/dev/null || true
t_end=$((SECONDS + ${COLRED_VERIFY_BUDGET_S:-120}))
# in the cases' order (the held-out ones first), the table's variants of
# every case before the experimental ones (COLRED_VERIFY_O=1: the earlier
# generator's o<k> between them; COLRED_VERIFY_X=fast: only the experiments
# that timed faster than 1.02 x the case's fastest table variant, under
# either flush, fastest first)
python3 -c "
import json, os, sys
cs = json.load(open(sys.argv[1]))
try:
    tm = {c['sg']: c['variants'] for c in json.load(open(sys.argv[2]))['cases']}
except (OSError, ValueError, KeyError):
    tm = {}
fast = os.environ.get('COLRED_VERIFY_X') == 'fast'
def ms(sg, t):
    v = tm.get(sg, {}).get(t, {})
    return min([x for x in (v.get('ms'), v.get('clean_ms')) if x] or [9e9])
for p in sys.argv[3:]:
    for c in cs:
        tags = sorted((t for t in c['variants'] if t[0] == p), key=lambda t: int(t[1:]))
        if p == 'x' and fast:
            vb = min([ms(c['sg'], t) for t in c['variants'] if t[0] == 'v'] or [9e9])
            tags = sorted((t for t in tags if ms(c['sg'], t) < 1.02 * vb),
                          key=lambda t: ms(c['sg'], t))
        for t in tags:
            print(c['sg'], t)
" "$stage/cases.json" "$out/colred.json" v $([ "${COLRED_VERIFY_O:-0}" = 1 ] && echo o) \
  $([ "${COLRED_VERIFY_X:-1}" != 0 ] && echo x) > "$tmp/todo"
while read -r sg tag; do
    cand=$stage/$sg/$tag
    if [ $SECONDS -ge $t_end ]; then echo "verify $sg $tag: skipped (budget)"; continue; fi
    if [ -n "${COLRED_VERIFY_END:-}" ] && [ "$(date +%s)" -ge "$COLRED_VERIFY_END" ]; then
        echo "verify $sg $tag: skipped (COLRED_VERIFY_END)"; continue
    fi
    timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
      --trials "${COLRED_VERIFY_TRIALS:-1}" --no-timing --pretty < /dev/null \
      > "$tmp/verify/$sg.$tag.json" 2> "$tmp/verify/$sg.$tag.err"
    echo "verify $sg $tag exit $? ($SECONDS s)"
done < "$tmp/todo" > "$out/verify.log" 2>&1
grep -c "exit 0" "$out/verify.log" | sed 's/^/verify: exit 0 for /'
grep -v "exit 0" "$out/verify.log" | head -20
# the small cases' table variants once more, timed by llm-fuse-verify (its
# events and memset flush; the held-out run's "ours"), to compare the two
# harnesses on the same kernels
small=${COLRED_SMALL-022_colsum_f32_6x768 019_colmax_f32_7x3072 038_colsumsq_f32_59x3072 025_colsum_f32_8x3072}
mkdir -p "$tmp/vtime"
for name in $small; do
  sg=$(python3 -c "import json,sys; print([c['sg'] for c in json.load(open(sys.argv[1])) if c['case'] == sys.argv[2]][0])" "$stage/cases.json" "$name") || continue
  for cand in "$stage/$sg"/v*/; do
    cand=${cand%/}; tag=$(basename "$cand")
    timeout 60 "$stage/bin/llm-fuse-verify" --plan "$stage/$sg/plan.json" --candidate "$cand/result.json" \
      --trials 1 --timing-budget-ms 300 < /dev/null > "$tmp/vtime/$name.$tag.json" 2>/dev/null
    python3 -c "
import json, sys
sys.path.insert(0, 'bench/table')
from verdict_json import find
v = json.load(open(sys.argv[1]))
print('verify-timed %s %s accepted=%s candidate_ms=%s reference_ms=%s' % (sys.argv[2], sys.argv[3], v.get('accepted'), find(v, 'candidate_ms'), find(v, 'reference_ms')))
" "$tmp/vtime/$name.$tag.json" "$name" "$tag"
  done
done > "$out/vtimed.log" 2>&1
# kernel-only durations of the small cases, ours and torch.compile's (ncu)
left=$((${COLRED_DEADLINE_S:-285} - SECONDS))
if [ -n "$small" ] && command -v ncu > /dev/null && [ $left -gt 30 ]; then
  LD_LIBRARY_PATH=$ld0 timeout $left ncu --profile-from-start off --clock-control none --csv \
    --metrics gpu__time_duration.sum --log-file "$tmp/ncu.csv" \
    python3 bench/table/colred_ncu.py run "$stage" "$tmp" $small > "$tmp/ncu-run.log" 2>&1
  echo "ncu: exit $? ($SECONDS s)"
  tail -5 "$tmp/ncu-run.log"
  LD_LIBRARY_PATH=$ld0 python3 bench/table/colred_ncu.py parse "$tmp" >> "$out/vtimed.log" 2>&1
  cp "$tmp/ncu.csv" "$out/ncu.csv" 2>/dev/null
fi
# the SASS of some variants (COLRED_SASS: "CASE-PREFIX:TAG ..."), to see
# how many of the UN loads ptxas keeps in flight
if [ -n "${COLRED_SASS:-}" ] && command -v cuobjdump > /dev/null; then
  mkdir -p "$tmp/sass"
  for ct in $COLRED_SASS; do
    sg=$(python3 -c "import json,sys; print([c['sg'] for c in json.load(open(sys.argv[1])) if c['case'].startswith(sys.argv[2])][0])" "$stage/cases.json" "${ct%%:*}") || continue
    cuobjdump -sass "$stage/$sg/${ct##*:}/kernel.cubin" > "$tmp/sass/${ct%%:*}.${ct##*:}.sass" 2>&1
  done
  (cd "$tmp/sass" && tar czf "$out/sass.tgz" .)
fi
(cd "$tmp/verify" && tar czf "$out/verify.tgz" .)
LD_LIBRARY_PATH=$ld0 python3 bench/table/colred_torch.py "$stage" "$out" report > "$out/report.log" 2>&1
rm -f "$out/verify"
grep -v "^variant " "$out/report.log"
cat "$out/vtimed.log"
