#!/bin/bash
# ref-device.sh - the two reference-plan bugs behind "degenerate-reference"
# (docs/verification.md, protocol step 3), checked on the GPU machine:
#
#   p44-attn B   KernelBench L3 P44's importer attention (one subgraph,
#                (tensor<B x 512 x 2304 x f32>) -> tensor<B*512 x 768 x f32>)
#                at batch B (BATCHES, default "128 32"): its causal-mask
#                temporary (512x512xi1) is a byte per element now, not a bit;
#   softmax-bf16 the TOSA softmax in bf16 (bench/table/rows_bench.py, 777 x
#                1000): its 1.0 and lowest-bf16 scalars now reach the kernels
#                as bf16 bits, not as f32 bits whose low half is zero.
#
# Each case goes through the llm-fuse pass offline (the pattern table's
# template is the candidate; keep-temps keeps the staged reference plan and
# candidate), then llm-fuse-verify judges that candidate twice: against the
# plan as llm-fuse-reference writes it now ("fixed"), and against the same
# plan with the old bug put back into its plan.json ("old": the mask at one
# bit per element; the bf16 scalars as f32 bits). Expected: fixed accepted,
# old degenerate-reference (for P44 at batch 128; at batch 32 the old mask
# overran into another temporary and was accepted, as it was on the H200).
#
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop (built with passes/reference.c's fix); STAGE names another
# stage folder made the same way:
#   bash bench/table/ref-device.sh OUT
# Prints one line per verification: case, plan, accepted, reason, message.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: ref-device.sh OUT}" && cd "$1" && pwd)
stage=${STAGE:-$root/.device/loop}
[ -x "$stage/bin/llm-fuse-opt" ] || { echo "no stage in $stage (bench/loop/prepare.sh)" >&2; exit 2; }
# bench/loop/device-env.sh, with the stage folder a variable
mkdir -p /tmp/lf && { [ -x /tmp/lf/bin ] || tar -xJf "$stage/mlir-runtime.tar.xz" -C /tmp/lf; }
if ! ls "$root"/kernels/table/v1/*.json* >/dev/null 2>&1 && [ -f "$stage/table-v1.tar.xz" ]; then
  tar -xJf "$stage/table-v1.tar.xz" -C "$root/kernels/table"
fi
export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$stage/bin:/tmp/lf/bin:$PATH
export LLM_FUSE_PROMPTS_DIR=$root/llm_client/prompts
export LLM_FUSE_REPLAY_DIR=$root/kernels/replay
export LLM_FUSE_TABLE_DIR=$root/kernels/table
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LLM_FUSE_VERIFY=${LLM_FUSE_VERIFY:-$stage/bin/llm-fuse-verify}
arch=${ARCH:-sm_90a}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

# verify NAME PLAN_DIR CANDIDATE_JSON: one llm-fuse-verify run, one line.
verify() {
  local name=$1 plan=$2 cand=$3
  llm-fuse-verify --pretty --plan "$plan/plan.json" --candidate "$cand" \
    > "$out/$name.verdict.json" 2> "$out/$name.verify.err"
  local rc=$?
  python3 - "$name" "$rc" "$out/$name.verdict.json" <<'PY'
import json, sys
name, rc, path = sys.argv[1:4]
try:
    v = json.load(open(path))
except Exception as e:
    print("%-22s exit %s, no verdict (%s)" % (name, rc, e))
    sys.exit(0)
t = v.get("timing") or {}
print("%-22s exit %s accepted=%s reason=%s ref_ms=%s | %s" % (
    name, rc, v.get("accepted"), v.get("reason"), t.get("reference_ms"),
    (v.get("message") or "")[:160]))
PY
}

# run_case NAME MODEL OLD_FIX: the pass on MODEL (one subgraph), then the
# two verifications; OLD_FIX is Python that rewrites plan.json's text `t`
# back to the old bug.
run_case() {
  local name=$1 model=$2 old=$3
  local t0=$EPOCHREALTIME
  llm-fuse-opt --llm-fuse="arch=$arch offline=true max-refinements=0 keep-temps=true cache-dir=$out/cache-$name report=$out/$name.report.json remarks=false" \
    "$model" -o "$out/$name.fused.mlir" 2> "$out/$name.pass.log"
  echo "== $name: pass exit $? in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s; $(grep -h 'summary: sg_' "$out/$name.pass.log" | sed 's/.*summary: //' | tr -s ' ')"
  local kept
  kept=$(sed -n 's/.*verification folders kept in //p' "$out/$name.pass.log" | tail -1)
  local sgdir
  sgdir=$(ls -d "$kept"/sg_* 2>/dev/null | head -1)
  local cand
  cand=$(ls "$sgdir"/candidate-*/result.json 2>/dev/null | head -1)
  if [ -z "$sgdir" ] || [ -z "$cand" ]; then
    echo "$name: no staged reference and candidate (see $out/$name.pass.log):"
    tail -5 "$out/$name.pass.log"
    return
  fi
  rm -rf "$out/$name.ref-fixed" "$out/$name.ref-old"
  cp -r "$sgdir/reference" "$out/$name.ref-fixed"
  cp -r "$sgdir/reference" "$out/$name.ref-old"
  python3 - "$out/$name.ref-old/plan.json" "$old" <<'PY'
import sys
p, code = sys.argv[1:3]
t = open(p).read()
t2 = eval(code, {"t": t, "re": __import__("re")})
if t2 == t:
    print("  (the old bug could not be put back: plan unchanged)")
open(p, "w").write(t2)
PY
  verify "$name-fixed" "$out/$name.ref-fixed" "$cand"
  verify "$name-old" "$out/$name.ref-old" "$cand"
}

for b in ${BATCHES:-128 32}; do
  python3 "$root/examples/kernelbench_l3_p44/gen_p44.py" "$b" -o "$out/p44_b$b.mlir" || exit 1
  llm-fuse-opt --llm-fuse-outline=remarks=false "$out/p44_b$b.mlir" -o "$out/p44_b$b.outlined.mlir" 2>/dev/null || exit 1
  # The attention subgraph alone, as a public function.
  python3 - "$out/p44_b$b.outlined.mlir" "$out/attn_b$b.mlir" <<'PY' || exit 1
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r'  func\.func private @(sg_\w+)\([^\n]*llm_fuse\.class = "attention-like"[^\n]*\{\n', t)
end = t.index("\n  }\n", m.end())
head = re.sub(r' attributes \{llm_fuse[^\n]*\} \{\n$', ' {\n', m.group(0))
head = head.replace("func.func private @" + m.group(1), "func.func @attention")
maps = "\n".join(l for l in t.splitlines() if l.startswith("#map"))
open(sys.argv[2], "w").write(maps + "\nmodule {\n" + head + t[m.end():end] + "\n  }\n}\n")
PY
  # old: the i1 temporary at one bit per element
  run_case "p44-attn-b$b" "$out/attn_b$b.mlir" \
    're.sub(r"(\"memref<1x1x512x512xi1>\",\s*\"bytes\":\s*)262144", r"\g<1>32768", t)'
done

python3 "$root/bench/table/rows_bench.py" gen "$out/rows" --quick > /dev/null || exit 1
# old: each bf16 scalar's bits as the f32 bits of the same value
run_case softmax-bf16 "$out/rows/models/softmax_tosa_bf16_odd_777x1000.mlir" \
  're.sub(r"\"bits\":(\s*)\"0x([0-9a-f]{4})\"(,\s*\"value\":[^,]*,\s*\"type\":\s*\"bf16\")", "\"bits\":\\1\"0x\\g<2>0000\"\\3", t)'
