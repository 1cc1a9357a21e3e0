#!/bin/bash
# importer-device.sh - the importer-style models (examples/importer/) on the
# GPU machine: each compiled by the llm-fuse pass on the offline default
# (provider replay: the replay set misses, the pattern table answers with
# kernels/table/importer_any.py's templates), every candidate built,
# verified against the subgraph's own lowering and timed on this GPU; then
# one line per subgraph (class, provider, decision, verification, kernel ms
# / fallback ms) and the count of subgraphs whose table kernel verified.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop (tools built with the weight-constant rule of
# passes/partition.c, docs/pattern-key.md "Constants"):
#   bash bench/table/importer-device.sh OUT
# ARCH (default sm_90a), OPTIONS (more --llm-fuse options), TABLE (another
# table folder) and STAGE (another stage folder than .device/loop, made like
# prepare.sh's) may be set.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: importer-device.sh OUT}" && cd "$1" && pwd)
stage=${STAGE:-$root/.device/loop}
[ -x "$stage/bin/llm-fuse-opt" ] || { echo "no stage in $stage (bench/loop/prepare.sh)" >&2; exit 2; }
# bench/loop/device-env.sh, with the stage folder a variable
mkdir -p /tmp/lf && { [ -x /tmp/lf/bin ] || tar -xJf "$stage/mlir-runtime.tar.xz" -C /tmp/lf; }
if ! ls "$root"/kernels/table/v1/*.json* >/dev/null 2>&1 && [ -f "$stage/table-v1.tar.xz" ]; then
  tar -xJf "$stage/table-v1.tar.xz" -C "$root/kernels/table"  # see device-env.sh
fi
export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$stage/bin:/tmp/lf/bin:$PATH
export LLM_FUSE_PROMPTS_DIR=$root/llm_client/prompts
export LLM_FUSE_REPLAY_DIR=$root/kernels/replay
export LLM_FUSE_TABLE_DIR=${TABLE:-$root/kernels/table}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LLM_FUSE_VERIFY=${LLM_FUSE_VERIFY:-$stage/bin/llm-fuse-verify}
arch=${ARCH:-sm_90a}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
mkdir -p "$out/reports" "$out/logs"
rm -rf "$out/cache"
for f in "$root"/examples/importer/*.mlir; do
  name=$(basename "$f" .mlir)
  t0=$(date +%s%N)
  llm-fuse-opt --llm-fuse="arch=$arch max-refinements=0 cache-dir=$out/cache report=$out/reports/$name.json remarks=false ${OPTIONS:-}" \
    "$f" -o "$out/$name.fused.mlir" 2> "$out/logs/$name.err"
  echo "== $name: exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
python3 - "$out"/reports/*.json <<'EOF'
import json, sys
tot = table = verified = swapped = 0
for p in sys.argv[1:]:
    r = json.load(open(p))
    print("--", p.rsplit("/", 1)[-1])
    for g in r.get("subgraphs", []):
        tot += 1
        perf = g.get("performance") or {}
        outcomes = [a.get("outcome") for a in g.get("attempt_log", [])]
        is_table = g.get("provider") == "table"
        table += is_table
        verified += bool(is_table and "verified" in outcomes)
        swapped += g.get("decision") == "swapped"
        print("%-22s %-12s %-7s %-8s %-16s [%s] kernel %s ms, fallback %s ms  %s" % (
            g["name"], g["class"], g.get("provider") or "-", g.get("decision"),
            (g.get("reason") or "")[:16], " ".join(sorted(set(map(str, outcomes)))),
            perf.get("kernel_ms"), perf.get("fallback_ms"),
            (g.get("model") or "").rsplit("/", 1)[-1]))
        for a in g.get("attempt_log", []):
            if a.get("outcome") not in ("built", "verified"):
                print("    %s %s: %s" % (a.get("variant"), a.get("outcome"),
                                         (a.get("message") or a.get("verify_reason") or "")[:200]))
print("importer: %d subgraph(s); %d answered by the table, %d of them verified; %d swapped"
      % (tot, table, verified, swapped))
EOF
