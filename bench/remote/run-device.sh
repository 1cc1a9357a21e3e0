#!/bin/bash
# run-device.sh - the shared kernel cache with real GPU verification (issue
# 17), on the GPU machine. A store on loopback (lit_tests/remote/Inputs/
# store.py's files mode: plain GET/PUT/HEAD; there is no nginx there), then:
#   runner    verifies the MiniGPT block's kernels on this GPU, signs, pushes
#   trusted   a reader trusting the runner's key: swaps all six without
#             verifying (its verifier is pointed at /nonexistent)
#   stranger  a reader trusting nobody: the verdicts are demoted, and every
#             kernel is verified again on this GPU before it is swapped
#   forged    the store's LayerNorm entry with its PTX changed (rsqrt ->
#             sqrt), its cubin dropped, its checksum recomputed and the
#             runner's signature kept: the trusted reader demotes it,
#             verifies it on the GPU, which rejects it, and keeps the
#             original ops for that subgraph
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop:   bash bench/remote/run-device.sh OUT
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: run-device.sh OUT}" && cd "$1" && pwd)
[ -n "${LF_REMOTE_DRY:-}" ] && LF_DEVICE_DRY=1
. "$root/bench/loop/device-env.sh"
verify=$LLM_FUSE_VERIFY
if [ -n "${LF_REMOTE_DRY:-}" ]; then # a dry run here: the lit tests' fakes
  export LLM_FUSE_LIBCUDA=$root/build/runtime/liblf_fake_libcuda.so
  verify=$root/lit_tests/loop/Inputs/fake_verify.py
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
w=/tmp/lf-remote && rm -rf "$w" && mkdir -p "$w/store"
store() { python3 "$root/lit_tests/remote/Inputs/store.py" hostile "files:$w/store" "$out/store.log" -- "$@"; }
model=$root/examples/minigpt_block.mlir
llm-fuse-cache keygen "$w/runner.key" --comment h200-runner > "$w/trusted.keys"
pass() { # NAME OPTIONS [ENV...]
  local name=$1 opts=$2
  shift 2
  store env "$@" llm-fuse-opt --llm-fuse="arch=sm_90a max-refinements=0 cache-dir=$w/$name remote-cache=@URL@ report=$out/$name.json $opts" \
    "$model" -o "$out/$name.mlir" 2> "$out/$name.err"
  echo "== $name: exit $?"
  grep -E "summary: [0-9]+ subgraph|summary: remote cache|verified in|rejected in|not accepted" "$out/$name.err" | sed 's/^llm-fuse: //'
}
pass runner "signing-key=$w/runner.key" LLM_FUSE_VERIFY=$verify
pass trusted "trusted-keys=$w/trusted.keys" LLM_FUSE_VERIFY=/nonexistent
pass stranger "" LLM_FUSE_VERIFY=$verify
ln=$(ls "$w"/store/v1/*/*.json | while read f; do grep -l 'rsqrt.approx.f32' "$f"; done | head -1)
echo "== forging $(basename "$ln")"
python3 "$root/lit_tests/remote/Inputs/forge.py" "$ln" "$w/nocubin.json" drop cubin &&
python3 "$root/lit_tests/remote/Inputs/forge.py" "$w/nocubin.json" "$ln" edit 'rsqrt.approx.f32' 'sqrt.approx.f32'
pass forged "trusted-keys=$w/trusted.keys" LLM_FUSE_VERIFY=$verify
for n in runner trusted stranger forged; do diff -q "$out/runner.mlir" "$out/$n.mlir" > /dev/null && echo "$n: same IR as the runner" || echo "$n: IR differs from the runner's"; done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("%-9s %8s %8s %8s %7s %7s  %s" % ("run", "swapped", "verified", "demoted", "GET", "PUT", "pass ms"))
for n in ["runner", "trusted", "stranger", "forged"]:
    r = json.load(open("%s/%s.json" % (out, n)))
    sc = r["shared_cache"]
    ver = sum(1 for s in r["subgraphs"] if s["ms"].get("verify", 0) > 0)
    print("%-9s %8d %8d %8d %7d %7d  %7.0f" % (n, r["summary"]["swapped"], ver, sc.get("demoted", 0),
          sc["requests"]["get"], sc["requests"]["put"], r["summary"]["ms_total"]))
    for s in r["subgraphs"]:
        if s["decision"] != "swapped":
            print("   %s kept: %s: %s" % (s["name"], s["reason"], (s.get("detail") or "")[:200]))
PY
