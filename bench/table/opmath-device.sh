#!/bin/bash
# opmath-device.sh - the opmath reference on the GPU machine
# (docs/verification.md "16-bit accumulation"): a bf16 row sum whose IR sums
# in bf16 (lit_tests/reference/Inputs/rowsum-bf16.mlir), staged with its
# truth plan, and a candidate that accumulates in f32, verified twice: against
# the opmath reference (the default when the plan names one) and against the
# IR's own lowering (--upstream-reference, the old behaviour).
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop:
#   bash bench/table/opmath-device.sh OUT
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: opmath-device.sh OUT}" && cd "$1" && pwd)
. "$root/bench/loop/device-env.sh"
chip=${CHIP:-sm_90}
in=$root/lit_tests/reference/Inputs
llm-fuse-opt --llm-fuse-outline=remarks=false "$in/rowsum-bf16.mlir" -o "$out/rs.mlir" || exit 1
llm-fuse-reference --build --chip "$chip" --out-dir "$out/ref" "$out/rs.mlir" || exit 1
plan=$(ls "$out"/ref/*/plan.json | head -1)
llm-fuse-build-kernel --signature '(tensor<512x1000xbf16>) -> tensor<512xbf16>' \
  --chip "$chip" --out-dir "$out/cand" "$in/rowsum-bf16-opmath-kernel.mlir" || exit 1
for mode in opmath upstream; do
  flag=; [ $mode = upstream ] && flag=--upstream-reference
  llm-fuse-verify --pretty $flag --plan "$plan" --candidate "$out/cand/result.json" \
    > "$out/verdict-$mode.json" 2> "$out/verdict-$mode.err"
  echo "== against the $mode reference: exit $?"
  python3 - "$out/verdict-$mode.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
keys = ("accepted", "reason", "reference", "reference_reason", "message")
print("  " + ", ".join("%s=%s" % (k, str(v[k])[:120]) for k in keys if k in v))
for t in (v.get("trials") or [])[:3]:
    for o in (t.get("outputs") or [])[:1]:
        print("  trial:", {k: o[k] for k in o if "err" in k or "bad" in k})
PY
done
