# verify-candidate.sh - sourced by the lean device scripts (bench/tma/
# gemm-device.sh, f32x3-device.sh, bench/gpu/p44-x3-device.sh): one
# candidate through the verification worker (llm-fuse-verify against the
# default MLIR lowering of its subgraph, no timing), its verdict kept as
# OUTBASE.json / OUTBASE.err, one line printed (accepted or not, the reason,
# the worst error over tolerance per trial, seconds), the message when
# rejected; counts into $ok and $bad (set them to 0 first).
#   lf_verify_candidate VERIFY PLAN CANDIDATE_DIR OUTBASE LABEL TRIALS
lf_verify_candidate() {
  local verify=$1 plan=$2 cand=$3 outbase=$4 label=$5 trials=$6 rc t0=$EPOCHREALTIME
  "$verify" --plan "$plan" --candidate "$cand/result.json" --no-timing --trials "$trials" --pretty \
    > "$outbase.json" 2> "$outbase.err"
  rc=$?
  if [ $rc = 0 ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
  python3 - "$outbase.json" "$label" "$rc" "$t0" "$EPOCHREALTIME" <<'PY'
import json, sys
path, what, rc, t0, t1 = sys.argv[1:6]
try:
    v = json.load(open(path))
except Exception as e:
    v = {"accepted": False, "reason": "no verdict (%s)" % e}
worst = [float(o["max_err_over_tol"]) for t in v.get("trials") or [] for o in t.get("outputs") or []
         if "max_err_over_tol" in o]
print("verify %-30s exit %s %s %s%s [%.1f s]" % (
    what, rc, "ACCEPTED" if v.get("accepted") else "REJECTED", v.get("reason", ""),
    " max err/tol %.3g (trials: %s)" % (max(worst), " ".join("%.3g" % w for w in worst)) if worst else "",
    float(t1) - float(t0)))
if not v.get("accepted"):
    print("  " + str(v.get("message", ""))[:300])
PY
}
