#!/usr/bin/env bash
# membw-device.sh - on the GPU machine (session 29, helper MEMBW; issue 15's
# "memory-bound kernels on tensors of 64 MB or more reach >= 90% of the
# measured copy bandwidth"): the seed-23 leading-dimension reductions and
# the copies under both L2 flushes of bench/gpu/run.py's Timer (memset, the
# default; clean: the memset, then a 256 MiB read-only sweep), side by side:
#
#   1. bench/table/colred-device.sh with COLRED_CLEAN=all: the 1 GiB copy
#      and copies of the cases' sizes (COLRED_COPY_MB), then every staged
#      variant (the table's v<k>, the other generator's o<k>, experiments
#      x<k>), torch eager, torch.compile and a same-size copy, each under
#      both flushes; then llm-fuse-verify on v, o and x (until
#      MEMBW_VERIFY_S seconds after the start);
#   2. bench/table/torch_time.py --flush both (the held-out run's harness,
#      its GPU-sleep pad, on STAGE/manifest23.json: the subgraphs' own
#      torch translations) with, as "ours", each colred subgraph's fastest
#      table variant of step 1.
#
# Stage on the build machine (bench/table/colred-prepare.sh, CASES held23),
# then copy the held-out manifest's subgraphs into STAGE/manifest23.json;
# run with the device tool (carry .device/MEMBW):
#   bash bench/table/membw-device.sh .device/MEMBW $OUT
# OUT gets report.log (both steps' tables) and membw.tgz (colred.json,
# torch.json, the logs, verify verdicts).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: membw-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: membw-device.sh STAGE OUT}" && cd "$2" && pwd)
t0=$(date +%s)
work=$(mktemp -d)
export PYTHONUNBUFFERED=1
COLRED_CLEAN=all COLRED_COPY_MB="${COLRED_COPY_MB:-88.1 180.4 339.7 435.2}" COLRED_SMALL="" \
  COLRED_VERIFY_O="${COLRED_VERIFY_O:-1}" COLRED_VERIFY_X="${COLRED_VERIFY_X:-1}" COLRED_BUDGET_MS="${COLRED_BUDGET_MS:-15}" \
  COLRED_VERIFY_END=$((t0 + ${MEMBW_VERIFY_S:-160})) COLRED_VERIFY_BUDGET_S=400 \
  bash "$root/bench/table/colred-device.sh" "$stage" "$work/colred" > "$work/colred.log" 2>&1
echo "colred: exit $? ($(( $(date +%s) - t0 )) s)"
# the fastest table variant of each colred case (memset flush) as "ours"
python3 - "$work/colred/colred.json" "/tmp/colred-stage" "$work/ours" <<'PY'
import json, os, sys
res = json.load(open(sys.argv[1]))
for c in res["cases"]:
    vs = [(v["ms"], k) for k, v in c.get("variants", {}).items()
          if k.startswith("v") and v.get("ms") and v.get("check")]
    if vs:
        os.makedirs(sys.argv[3], exist_ok=True)
        os.symlink(os.path.join(sys.argv[2], c["sg"], min(vs)[1]), os.path.join(sys.argv[3], c["sg"]))
        print("ours %s %s = %s" % (c["case"], c["sg"], min(vs)[1]))
PY
if [ -f "$stage/manifest23.json" ]; then
  timeout -k 10 "${MEMBW_TORCH_S:-75}" python3 "$root/bench/table/torch_time.py" \
    "$stage/manifest23.json" "$work/torch.json" --flush both --pad-us 200 \
    --budget-ms "${TORCH_BUDGET_MS:-100}" --compile-budget-s 60 \
    --ours "$work/ours" --rt /tmp/colred-stage/lib/libllm_fuse_rt.so > "$work/torch.log" 2>&1
  echo "torch_time: exit $? ($(( $(date +%s) - t0 )) s)"
  python3 - "$work/torch.json" <<'PY' > "$work/torch-report.log"
import json, sys
r = json.load(open(sys.argv[1]))
c1, c2 = r["copy"]["GBps"], r.get("copy_clean", {}).get("GBps")
print("torch_time --flush both: 1 GiB copy %.0f GB/s (memset), %s GB/s (clean)" % (
    c1, "%.0f" % c2 if c2 else "-"))
print("| subgraph | models | MB | flush | ours | eager | compile | same-size copy | ours/compile "
      "| ours % 1 GiB copy | compile % 1 GiB copy | copy % 1 GiB copy | ours % same-size |")
print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, s in r["subgraphs"].items():
    b = s.get("same_size_copy_bytes") or 0
    for tag, sfx, bw in (("memset", "_ms", c1), ("clean", "_clean_ms", c2)):
        g = {k: s.get(k + sfx) for k in ("ours", "eager", "compile", "same_size_copy")}
        def pct(ms):
            return "%.0f%%" % (100 * b / (ms * 1e-3) / 1e9 / bw) if ms and b and bw else "-"
        f = lambda x: "%.4f" % x if x else "-"
        print("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, ",".join(s.get("models") or []), b / 1e6, tag, f(g["ours"]), f(g["eager"]),
            f(g["compile"]), f(g["same_size_copy"]),
            "%.2f" % (g["ours"] / g["compile"]) if g["ours"] and g["compile"] else "-",
            pct(g["ours"]), pct(g["compile"]), pct(g["same_size_copy"]),
            "%.0f%%" % (100 * g["same_size_copy"] / g["ours"]) if g["ours"] and g["same_size_copy"] else "-"))
    for k in ("error", "ours_error", "compile_error"):
        if s.get(k):
            print("  %s %s: %s" % (name, k, str(s[k])[:200]))
PY
fi
{ grep -v "^variant " "$work/colred/report.log"; echo; cat "$work/torch-report.log" 2>/dev/null
  echo; grep -c "exit 0" "$work/colred/verify.log" | sed 's/^/verify: exit 0 for /'
  grep -v "exit 0" "$work/colred/verify.log" | head -30; } > "$out/report.log"
cp "$work/colred/report.log" "$work/colred-report-full.log"
(cd "$work" && tar czf "$out/membw.tgz" --dereference --exclude=ours colred colred.log torch.json torch.log \
  colred-report-full.log 2>/dev/null)
cat "$out/report.log"
echo "membw-device: $(( $(date +%s) - t0 )) s"
