#!/bin/bash
# tma-device.sh - tensor maps (TMA) through the kernel contract on the GPU
# machine (docs/kernel-contract.md, "Tensor maps"): the tiny TMA kernel
# lit_tests/builder/Inputs/ok-tma-copy.mlir (a 256x256 bf16 copy, one tensor
# map of its input) is
#   1. built with the carried llm-fuse-build-kernel (sm_90: result.json has
#      a "tensor_map" parameter),
#   2. verified by the verification worker (llm-fuse-verify, in process and
#      --isolated) against the reference of bench/tma/copy-subgraph.mlir:
#      the worker encodes the map with cuTensorMapEncodeTiled on the buffers
#      of every launch and passes the 128 bytes as the argument,
#   3. run once ahead of time when bench/tma/prepare.sh staged .device/tma:
#      the swapped program's host code encodes the map with libllm_fuse_rt's
#      lf_rt_tensor_map_encode and passes it by value to the launch.
# One PASS/FAIL line per step; exit 0 when every step that ran passed.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop (and bench/tma/prepare.sh's in .device/tma):
#   bash bench/tma/tma-device.sh OUT
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: tma-device.sh OUT}" && cd "$1" && pwd)
. "$root/bench/loop/device-env.sh"
chip=${CHIP:-sm_90}
sig='(tensor<256x256xbf16>) -> tensor<256x256xbf16>'
kernel=$root/lit_tests/builder/Inputs/ok-tma-copy.mlir
fails=0
pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
llm-fuse-device-info > "$out/device.json" 2>&1 || true

# 1. The build.
if llm-fuse-build-kernel --chip "$chip" --signature "$sig" --out-dir "$out/cand" \
    "$kernel" > "$out/build.json" 2> "$out/build.err" &&
    grep -q '"abi":[[:space:]]*"tensor_map"' "$out/cand/result.json"; then
  pass build "$(ls "$out/cand" | tr '\n' ' ')(result.json has a tensor_map parameter)"
else
  fail build "see $out/build.json, $out/build.err"; tail -5 "$out/build.err"
fi

# 2. The reference and the verification.
plan=
if llm-fuse-opt --llm-fuse-outline=remarks=false "$root/bench/tma/copy-subgraph.mlir" \
    -o "$out/outlined.mlir" 2> "$out/outline.err" &&
    llm-fuse-reference --build --chip "$chip" --out-dir "$out/ref" "$out/outlined.mlir" \
    > "$out/ref.log" 2>&1; then
  plan=$(ls "$out"/ref/*/plan.json | head -1)
  pass reference "$plan"
else
  fail reference "see $out/ref.log"; tail -5 "$out/ref.log"
fi
verdict() { # file -> one line; exit 0 when accepted with one tensor map
  python3 - "$1" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("no verdict (%s)" % e); sys.exit(1)
p = v.get("protocol", {})
t = v.get("timing", {})
print("accepted=%s reason=%s tensor_maps=%s encodes=%s candidate_ms=%s reference_ms=%s: %s"
      % (v.get("accepted"), v.get("reason"), p.get("tensor_maps"),
         p.get("tensor_map_encodes"), t.get("candidate_ms"), t.get("reference_ms"),
         str(v.get("message"))[:200]))
sys.exit(0 if v.get("accepted") and p.get("tensor_maps") == 1 else 1)
PY
}
if [ -n "$plan" ] && [ -f "$out/cand/result.json" ]; then
  for mode in in-process isolated; do
    flag=; [ $mode = isolated ] && flag=--isolated
    llm-fuse-verify --pretty $flag --plan "$plan" --candidate "$out/cand/result.json" \
      > "$out/verdict-$mode.json" 2> "$out/verdict-$mode.err"
    rc=$?
    if line=$(verdict "$out/verdict-$mode.json") && [ $rc -eq 0 ]; then
      pass "verify-$mode" "$line"
    else
      fail "verify-$mode" "exit $rc: $line"; tail -3 "$out/verdict-$mode.err"
    fi
  done
else
  fail verify "skipped: no plan or no candidate"
fi

# 3. Ahead of time, through the swapped program.
aot=$root/.device/tma
if [ -f "$aot/model.o" ]; then
  mkdir -p "$out/aot" && cp "$aot"/* "$out/aot/"
  if (cd "$out/aot" && gcc -std=c17 -O2 -Wall -Wextra -Werror -I. driver.c model.o \
        libllm_fuse_rt.a -ldl -lpthread -lm -o driver) > "$out/aot/link.log" 2>&1; then
    line=$("$out/aot/driver" 2> "$out/aot/run.err")
    rc=$?
    echo "$line"
    [ $rc -eq 0 ] || { fails=$((fails + 1)); tail -3 "$out/aot/run.err"; }
  else
    fail aot-link "see $out/aot/link.log"; tail -5 "$out/aot/link.log"
  fi
else
  echo "SKIP aot-run: no .device/tma/model.o (run bench/tma/prepare.sh BUILD_DIR on the build machine and carry .device/tma)"
fi
echo "== tma-device: $fails failure(s)"
exit $((fails > 0))
