#!/usr/bin/env bash
# demo.sh - the README's main job, on the built-in offline default.
#
# Runs every part of the pipeline that exists today and says what it did:
#   1. llm-fuse over every example model (llm-fuse-opt), JSON report each;
#   2. the same pass inside Debian's stock mlir-opt-22 through the plugin;
#   3. a hand-written gpu.module through NVPTX to PTX, and to a cubin with
#      ptxas when the CUDA toolkit is present;
#   4. the GPU probe: whether verification could run on this machine.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail

build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
out=$build/demo
mkdir -p "$out"
opt="$bin/llm-fuse-opt"
mlir_opt=$(command -v mlir-opt-22 || echo /usr/lib/llvm-22/bin/mlir-opt)
plugin="$build/lib/libLLMFusePlugin.so"

step() { printf '\n== %s\n' "$*"; }

step "1. llm-fuse over the example models (provider=replay, offline)"
models=()
for model in "$root"/examples/*.mlir; do
  name=$(basename "$model" .mlir)
  models+=("$name")
  start=$EPOCHREALTIME
  "$opt" --llm-fuse="offline=true report=$out/$name.report.json" \
    "$model" -o "$out/$name.out.mlir" 2>"$out/$name.log"
  end=$EPOCHREALTIME
  sed 's/^/   /' "$out/$name.log"
  if cmp -s <("$opt" "$model") "$out/$name.out.mlir"; then same=unchanged; else same=CHANGED; fi
  printf '   %s: %.2fs, IR %s, report %s\n' "$name" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$same" "$out/$name.report.json"
done

step "1b. partition and outline (llm-fuse-outline): one function per subgraph"
for name in "${models[@]}"; do
  "$opt" --llm-fuse-outline="remarks=false report=$out/$name.outline.json" \
    "$root/examples/$name.mlir" -o "$out/$name.outlined.mlir" 2>/dev/null
  python3 - "$out/$name.outline.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r["subgraphs"]:
    print("   %-16s %-20s %-12s %3d ops %8.1f GFLOP %8.1f MB" % (
        sys.argv[2], g["name"], g["class"], len(g["ops"]), g["flops"] / 1e9,
        g["bytes_moved"] / 1e6))
PY
done

step "2. the same pass in the stock mlir-opt-22, through libLLMFusePlugin.so"
"$mlir_opt" --load-pass-plugin="$plugin" \
  --pass-pipeline='builtin.module(llm-fuse{offline=true remarks=false})' \
  "$root/examples/mlp_block.mlir" -o /dev/null 2>&1 | sed 's/^/   /'

step "3. kernel toolchain: gpu.module -> NVPTX -> PTX (-> cubin with ptxas)"
pipeline='nvvm-attach-target{chip=sm_90a},gpu.module(convert-gpu-to-nvvm),reconcile-unrealized-casts'
"$opt" "$root/examples/kernels/scale.mlir" \
  --pass-pipeline="builtin.module($pipeline,gpu-module-to-binary{format=isa})" \
  -o "$out/scale.ptx.mlir"
ptx_lines=$(grep -o '\\0A' "$out/scale.ptx.mlir" | wc -l)
echo "   PTX for sm_90a: $ptx_lines lines ($out/scale.ptx.mlir)"
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [[ -x "$ptxas" ]]; then
  CUDA_HOME=$(dirname "$(dirname "$ptxas")") "$opt" \
    "$root/examples/kernels/scale.mlir" \
    --pass-pipeline="builtin.module($pipeline,gpu-module-to-binary{format=bin})" \
    -o "$out/scale.cubin.mlir"
  echo "   cubin for sm_90a via $ptxas ($out/scale.cubin.mlir)"
else
  echo "   no ptxas: cubin skipped (the driver would JIT the PTX at load time)"
fi

step "4. GPU"
if "$bin/llm-fuse-device-info" >"$out/devices.json" 2>"$out/devices.err"; then
  echo "   GPU present: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; print(", ".join(x["name"]+" ("+x["arch"]+")" for x in d))' "$out/devices.json")"
else
  echo "   $(cat "$out/devices.err")"
  echo "   => verification could not run here; nothing would be swapped in."
fi

step "Summary"
python3 - "$out" "${models[@]}" <<'PY'
import json, sys
out, models = sys.argv[1], sys.argv[2:]
print("   %-20s %9s %10s %9s  %s" % ("model", "functions", "tensor ops",
                                     "subgraphs", "decision"))
for m in models:
    r = json.load(open("%s/%s.report.json" % (out, m)))
    ops = sum(f["tensor_ops"] for f in r["functions"])
    print("   %-20s %9d %10d %9d  %s" % (m, len(r["functions"]), ops,
                                         len(r["subgraphs"]),
                                         "kept original ops (survey only)"))
PY
cat <<'EOF'

What ran: the llm-fuse pass (option handling, survey of tensor-level ops,
remarks, JSON report) in llm-fuse-opt and in mlir-opt-22 via the plugin;
partitioning and outlining (llm-fuse-outline) with fingerprints; the
NVPTX -> PTX -> cubin toolchain on a hand-written kernel; the GPU probe.
Not yet: the llm-fuse pass driving partitioning, the LLM client and replay set, the
kernel builder, GPU verification and swap-in (see README, "What works").
EOF
