#!/usr/bin/env bash
# p44-x3-prepare.sh - stages, on the build machine, what bench/gpu/p44-x3-device.sh
# needs on the GPU machine: KernelBench L3 P44's four f32 GEMM subgraphs
# (qkv, attn proj, c_fc, mlp proj: importer_any.py's *_bt families) at batch
# 32 and 128, with the pattern table's candidates for them, small enough to
# travel beside the tracked tree (a few MB; the full P44 run needs
# .device/loop's MLIR runtime, bench/gpu/p44-device.sh).
#
#   STAGE/b<B>/<sg>/plan.json, k<N>.cubin   the default MLIR lowering of the
#                                           subgraph (llm-fuse-reference --build,
#                                           sm_90): the verifier's reference
#   STAGE/b<B>/<sg>/x3/                     the table's sm_90a answer (the
#                                           importer-any-*bt-f32-0x3tma entry,
#                                           its first variant: GROUP_M 8), built
#   STAGE/b<B>/<sg>/simt/                   the table's sm_90 answer (the SIMT
#                                           entry, TILE 8: the default tiling)
#   STAGE/b<B>/<sg>/case.json               entry names, signature
#   STAGE/bin/llm-fuse-verify, STAGE/lib/libcjson.so.1, STAGE/libllm_fuse_rt.so
#
# Candidates come from the pass itself (llm-fuse-opt offline, verify=none:
# the table's template instantiated at the subgraph's sizes), so what is
# staged is what the pass would verify and swap on the GPU.
#
#   bash bench/gpu/p44-x3-prepare.sh [STAGE] [BUILD]   (.device/p44x3, build)
# then carry STAGE and run there: bash bench/gpu/p44-x3-device.sh STAGE $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${1:-$root/.device/p44x3}
build=${2:-$root/build}
bin=$build/bin
rm -rf "$stage"
mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for b in 32 128; do
  model=$root/examples/kernelbench_l3_p44/p44_b$b.mlir
  "$bin/llm-fuse-opt" --llm-fuse-outline=remarks=false "$model" -o "$work/b$b.mlir" 2>/dev/null
  "$bin/llm-fuse-reference" --build --chip sm_90 --out-dir "$stage/b$b" "$work/b$b.mlir" > /dev/null
  for chip in sm_90a sm_90; do
    mkdir -p "$work/empty"
    env LLM_FUSE_LIBCUDA=/nonexistent "$bin/llm-fuse-opt" \
      --llm-fuse="offline verify=none arch=$chip remarks=false replay-dir=$work/empty cache-dir=$work/c$b-$chip report=$work/r$b-$chip.json" \
      "$model" -o /dev/null 2> "$work/e$b-$chip.log"
  done
  python3 - "$stage/b$b" "$work" "$b" "$bin/llm-fuse-build-kernel" <<'PY'
import json, os, shutil, subprocess, sys
out, work, b, tool = sys.argv[1:5]
bad = 0
reps = {chip: json.load(open(os.path.join(work, "r%s-%s.json" % (b, chip)))) for chip in ("sm_90a", "sm_90")}
keep = set()
for chip, sub in (("sm_90a", "x3"), ("sm_90", "simt")):
    for s in reps[chip]["subgraphs"]:
        if s.get("class") != "contraction":
            continue
        keep.add(s["name"])
        d = os.path.join(out, s["name"])
        key = s.get("cache_key") or ""
        path = os.path.join(work, "c%s-%s" % (b, chip), "v1", key[:2], key + ".json")
        text = json.load(open(path)).get("kernel") if key and os.path.exists(path) else None
        entry = (s.get("model") or "").split("-", 1)[-1]
        if not os.path.isdir(d) or not isinstance(text, str):
            print("p44-x3-prepare: b%s %s %s: no %s" % (b, s["name"], chip, "plan" if not os.path.isdir(d)
                                                        else "cached kernel"), file=sys.stderr)
            bad += 1
            continue
        src = os.path.join(work, "%s-%s-%s.mlir" % (b, s["name"], chip))
        open(src, "w").write(text)
        r = subprocess.run([tool, "--signature", s["signature"], "--chip", chip, "--out-dir",
                            os.path.join(d, sub), src], capture_output=True, text=True)
        try:
            j = json.loads(r.stdout)
        except ValueError:
            j = {"ok": False, "message": r.stderr[-300:]}
        print("p44-x3-prepare: b%-3s %s %-6s %-40s %s %s" % (
            b, s["name"], chip, entry, "built" if j.get("ok") else "FAILED",
            j.get("ptxas_info") or j.get("message", "")[:200]))
        bad += not j.get("ok")
        cj = os.path.join(d, "case.json")
        case = json.load(open(cj)) if os.path.exists(cj) else {"name": s["name"], "batch": int(b),
                                                                "signature": s["signature"]}
        case["entry_" + sub] = entry
        json.dump(case, open(cj, "w"), indent=1)
for name in os.listdir(out):
    if name not in keep:
        shutil.rmtree(os.path.join(out, name))
sys.exit(1 if bad else 0)
PY
done
mkdir -p "$stage/bin" "$stage/lib"
strip -o "$stage/bin/llm-fuse-verify" "$bin/llm-fuse-verify"
cp -L "$(ldd "$bin/llm-fuse-verify" | awk '/libcjson/ { print $3 }')" "$stage/lib/libcjson.so.1"
cp "$build/lib/libllm_fuse_rt.so" "$stage/"
find "$stage" \( -name '*.mlir' -o -name '*.ptx' \) -delete
du -sh "$stage"
