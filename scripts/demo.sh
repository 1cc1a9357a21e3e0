#!/usr/bin/env bash
# demo.sh - the README's main job, on the built-in offline default.
#
# The MiniGPT block (examples/minigpt_block.mlir) through the whole
# pipeline, ahead of time: llm-fuse-compile runs the llm-fuse pass
# (partition, outline, a kernel per subgraph from the shipped replay set of
# hand-written kernels, built in a child process, verified on the GPU in a
# worker process, swapped in), then the default GPU lowering of everything
# else, into an object file and a header. It prints the pass's progress and
# summary.
#   - With a GPU: the kernels are verified and swapped, and the compiled
#     model runs on the GPU and is compared with the CPU (mlir-runner-22).
#   - Without one: it says verification could not run and swaps nothing;
#     the object still runs the original ops on a GPU machine.
# Then the pass over every example model, one summary line each.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
out=$build/demo
rm -rf "$out" && mkdir -p "$out"
cache=$out/cache # a fresh kernel cache, so the demo shows every stage

step() { printf '\n== %s\n' "$*"; }

step "1. llm-fuse-compile examples/minigpt_block.mlir (offline: replay provider, shipped kernels)"
gpu=0 arch=sm_90
if "$bin/llm-fuse-device-info" >"$out/devices.json" 2>"$out/devices.err"; then
  gpu=1
  # Kernels for the GPU that is there (sm_80 or sm_90; sm_90a kernels need
  # arch=sm_90a explicitly).
  arch=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["devices"][0]["arch"]; print(a if a in ("sm_80","sm_90") else "sm_90")' "$out/devices.json")
fi
"$bin/llm-fuse-compile" "$root/examples/minigpt_block.mlir" \
  -o "$out/minigpt_block.o" --chip "$arch" \
  --llm-fuse-options "offline=true arch=$arch remarks=false cache-dir=$cache report=$out/minigpt_block.report.json"
echo "   object: $out/minigpt_block.o, header: $out/minigpt_block.h"
echo "   report: $out/minigpt_block.report.json"

step "2. the model on the GPU"
if [[ $gpu == 1 ]]; then
  echo "   GPU: $(python3 -c 'import json,sys; print(", ".join(d["name"] for d in json.load(open(sys.argv[1]))["devices"]))' "$out/devices.json")"
  run=$out/run
  mkdir -p "$run"
  if command -v mlir-runner-22 >/dev/null || [[ -x /usr/lib/llvm-22/bin/mlir-runner ]]; then
    # Inputs and the CPU reference (mlir-runner-22), as the AOT benchmark does.
    python3 "$root/bench/aot/prepare.py" --build "$build" --out "$run" \
      --size full --compile-args=--no-llm-fuse >/dev/null
    rm -f "$run/model.o" "$run/model.h"
  else
    echo "   (no mlir-runner-22 here: the model runs on generated inputs without a CPU comparison)"
  fi
  cp "$out/minigpt_block.o" "$run/model.o"
  cp "$out/minigpt_block.h" "$run/model.h"
  (cd "$run" && cc -std=c17 -O2 -I. -I"$root/runtime/mgpu" \
     -DENTRY=minigpt_block -DHEADER='"model.h"' -DRULE=1 \
     "$root/bench/aot/driver.c" model.o "$build/lib/libllm_fuse_rt.a" \
     -ldl -lpthread -lm -o driver && ./driver . 20) | sed 's/^/   /'
else
  echo "   $(cat "$out/devices.err")"
  echo "   => verification could not run here, so nothing was swapped in: every"
  echo "      subgraph keeps its original ops. The object file above still runs"
  echo "      on a GPU machine (the default lowering); compiling there verifies"
  echo "      and swaps the kernels (bench/NOTES.md: 52x faster on an H200)."
fi

step "3. the llm-fuse pass over every example model"
printf '   %-20s %9s %8s %6s  %s\n' model subgraphs swapped kept reasons
for model in "$root"/examples/*.mlir "$root"/examples/tosa/*.mlir; do
  name=$(basename "$model" .mlir)
  [[ $model == */tosa/* ]] && name=tosa-$name
  "$bin/llm-fuse-opt" \
    --llm-fuse="offline=true arch=$arch remarks=false cache-dir=$cache report=$out/$name.report.json" \
    "$model" -o "$out/$name.out.mlir" 2>"$out/$name.log"
  python3 - "$out/$name.report.json" "$name" <<'PY'
import collections, json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
reasons = collections.Counter(x["reason"] for x in r["subgraphs"])
print("   %-20s %9d %8d %6d  %s" % (sys.argv[2], s["subgraphs"], s["swapped"],
      s["kept"], ", ".join("%s x%d" % kv for kv in sorted(reasons.items()))))
PY
done
cat <<EOF

What ran: partitioning and outlining, kernel acquisition (cache, then the
replay provider with the shipped hand-written kernels; repairs and budgets
apply to a real endpoint too), building each candidate through NVVM and
NVPTX in a child process, verification in the llm-fuse-verify worker when a
GPU is present, swapping, and ahead-of-time compilation against
libllm_fuse_rt. Logs and JSON reports are in $out.
EOF
