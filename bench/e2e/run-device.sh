#!/bin/bash
# run-device.sh - the end-to-end proof on the GPU machine (issue 7): the
# MiniGPT block compiled ahead of time with llm-fuse-compile, the llm-fuse
# pass verifying and swapping kernels on this GPU at compile time, run on
# the GPU and compared with the CPU reference (mlir-runner-22 on the same
# inputs, made on the build machine by bench/e2e/prepare.sh). Then the same
# with one kernel of the replay set deliberately broken: verification must
# reject it, the fallback keeps that subgraph's original ops, the report
# says why, and the outputs still match.
#
#   bash bench/e2e/run-device.sh STAGE OUT      (STAGE from prepare.sh)
set -euo pipefail
stage=$(cd "${1:?usage: run-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?}" && cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p /tmp/lf && tar -xJf "$stage/mlir-runtime.tar.xz" -C /tmp/lf
export LD_LIBRARY_PATH=/tmp/lf/lib:/usr/local/nvidia/lib64 PATH=/tmp/lf/bin:$PATH
export LLM_FUSE_PROMPTS_DIR=$root/llm_client/prompts
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
bin=$stage/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

work=/tmp/e2e
rm -rf "$work" && mkdir -p "$work"
cp "$stage"/ref*.bin "$root/bench/aot/driver.c" "$stage/llm_fuse_rt.h" \
   "$stage/libllm_fuse_rt.a" "$stage/entry" "$stage/model.mlir" "$work/"
python3 "$root/bench/e2e/gen_inputs.py" "$work/model.mlir" "$work"
(cd "$work" && sha256sum in*.bin) > "$out/inputs.sha256"
if ! diff -q <(sort -k2 "$out/inputs.sha256") <(sort -k2 "$stage/inputs.sha256"); then
  echo "inputs differ from the build machine's"; exit 1
fi
entry=$(cat "$work/entry")

status=0
run_case() { # NAME REPLAY_DIR [EXTRA_PASS_OPTIONS]
  local name=$1 replay=$2 extra=${3:-} d=$work/$1
  mkdir -p "$d" && cp "$work"/in*.bin "$work"/ref*.bin "$work"/driver.c \
    "$work"/llm_fuse_rt.h "$work"/libllm_fuse_rt.a "$d/"
  echo "== $name: llm-fuse-compile with the llm-fuse pass (replay $replay)"
  local t0=$EPOCHREALTIME
  env LLM_FUSE_REPLAY_DIR="$replay" ${COMPILE_ENV:-} "$bin/llm-fuse-compile" "$work/model.mlir" \
    -o "$d/model.o" --chip sm_90 \
    --llm-fuse-options "arch=sm_90 offline=true cache-dir=$d/cache report=$out/$name.report.json $extra" \
    2> >(tee "$out/$name.compile.log" >&2)
  echo "   compile: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
  # PASS by the verifier's f32 rule (docs/verification.md); the strict
  # count is printed beside it.
  (cd "$d" && gcc -std=c17 -O2 -Wall -Wextra -Werror -I. -DENTRY="$entry" \
     -DHEADER='"model.h"' -DRULE=1 driver.c model.o libllm_fuse_rt.a -ldl \
     -lpthread -lm -o driver && ./driver . 20) | tee "$out/$name.run.log" ||
    status=1
}

run_case swapped "$root/kernels/replay"
echo "== swapped, the runtime's buffer cache off (LLM_FUSE_RT_CACHE=0), same object"
(cd "$work/swapped" && LLM_FUSE_RT_CACHE=0 ./driver . 20) | tee "$out/swapped-nocache.run.log" || status=1

# Where the difference from the CPU comes from: one subgraph swapped at a
# time (a replay set holding only its entries; the others miss and keep
# their original ops).
if [ "${E2E_ISOLATE:-1}" = 1 ]; then
  cp -r "$root/kernels/handwritten" "$work/handwritten"
  for fp in 775f56ec 4b6d101f 1c6bf422 208fdd59 36d4248c c77eec1d; do
    mkdir -p "$work/only-$fp" && cp "$root"/kernels/replay/$fp*.json "$work/only-$fp/"
    run_case "only-$fp" "$work/only-$fp" > "$out/only-$fp.out" 2>&1 || true
    echo "only sg_$fp: $(grep '^output 0' "$out/only-$fp.run.log" | sed 's/.*relative RMS/relative RMS/')"
  done
fi

# One kernel broken: the LayerNorm's (both LayerNorms share it) squares
# nothing: its first d*d becomes d+d, a wrong variance. It still builds and
# runs, and only the values are wrong.
broken=$work/replay-broken
cp -r "$root/kernels/replay" "$broken"
[ -d "$work/handwritten" ] || cp -r "$root/kernels/handwritten" "$work/handwritten" # entries say ../handwritten
python3 - "$root" "$broken" <<'PY'
import glob, hashlib, json, os, sys
root, d = sys.argv[1:3]
fp = "c77eec1dbd2dbb32"
src = os.path.join(root, "kernels/handwritten/sg_%s.mlir" % fp)
text = open(src).read()
bad = text.replace("arith.mulf", "arith.addf", 1)
assert bad != text
kpath = os.path.join(d, "broken_%s.mlir" % fp)
open(kpath, "w").write(bad)
for e in glob.glob(os.path.join(d, "*.json")):
    j = json.load(open(e))
    if j.get("fingerprint", "").startswith(fp):
        j["reply_file"] = os.path.basename(kpath)
        j["reply_sha256"] = hashlib.sha256(bad.encode()).hexdigest()
        json.dump(j, open(e, "w"), indent=1, sort_keys=True)
print("broke sg_%s (first arith.mulf -> arith.addf)" % fp)
PY
[ "${E2E_BROKEN:-1}" = 1 ] && run_case broken "$broken"

# verify=defer: compiled as if on a machine without a GPU (the driver is
# hidden from the compiler), so every kernel goes behind the first-call
# guard; the first run verifies them on this GPU and records the outcome,
# the second run reads the record.
if [ "${E2E_DEFER:-1}" = 1 ]; then
  export LLM_FUSE_VERIFY=$bin/llm-fuse-verify
  export LLM_FUSE_GUARD_RECORD=$work/deferred.guard.jsonl
  COMPILE_ENV=LLM_FUSE_LIBCUDA=/nonexistent/libcuda.so.1 \
    run_case deferred "$root/kernels/replay" "verify=defer"
  echo "== deferred, second process (the record decides)"
  (cd "$work/deferred" && ./driver . 20) | tee "$out/deferred2.run.log" || status=1
  cp "$LLM_FUSE_GUARD_RECORD" "$out/deferred.guard.jsonl"
  echo "== guard record"; cat "$out/deferred.guard.jsonl"
  unset LLM_FUSE_VERIFY LLM_FUSE_GUARD_RECORD
fi

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
for name in ("swapped", "broken", "deferred"):
    if not os.path.exists(os.path.join(out, name + ".report.json")):
        continue
    r = json.load(open(os.path.join(out, name + ".report.json")))
    print("== %s: %s" % (name, r["summary"]))
    for s in r["subgraphs"]:
        v = s.get("verification") or {}
        print("   %-20s %-14s %-7s %-10s %6s  %s" % (
            s["name"], s["class"], s["decision"], s["reason"],
            "%.2fx" % s["speedup"] if s.get("speedup") else "-",
            (s.get("detail") or "")[:110]))
PY
exit $status
