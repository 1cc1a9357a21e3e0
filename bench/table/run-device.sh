#!/bin/bash
# run-device.sh - the pattern table's templates (row kernels: rows free;
# GEMMs: M free) at sizes the
# replay set never saw, verified and timed on this GPU by the llm-fuse pass
# on the offline default (provider replay: the replay set, then the table).
# Each model is a shipped example with its row count changed (sed), so the
# fingerprint is new and the pattern key the same. Run from the repository
# root with bench/loop/prepare.sh's stage carried in .device/loop:
#   bash bench/table/run-device.sh OUT
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: run-device.sh OUT}" && cd "$1" && pwd)
. "$root/bench/loop/device-env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
m=/tmp/lf-table && rm -rf "$m" && mkdir -p "$m"
# name: example, then sed expressions (rows changed, the row length kept)
cases=(
  "rmsnorm_bf16_r8192|rmsnorm|s/16384/8192/g"
  "rmsnorm_bf16_r1000|rmsnorm|s/16384/1000/g"
  "rmsnorm_bf16_r1|rmsnorm|s/16384/1/g"
  "layernorm_bf16_r2048|layernorm|s/16384/2048/g"
  "layernorm_f32_r512|layernorm_f32|s/4096x/512x/g"
  "softmax_bf16_r3000|softmax|s/16384/3000/g"
  "softmax_tosa_f32_r1024|tosa/softmax|s/4096x/1024x/g"
  "rowsum_f32_r777|bench/rowsum|s/16384/777/g"
  "rowmax_f32_r65536|bench/rowmax|s/16384/65536/g"
  "add_rmsnorm_bf16_r2048|bench/add_rmsnorm|s/16384/2048/g"
  "add_rmsnorm_bf16_r4096|bench/add_rmsnorm|s/16384/4096/g"
  "bias_gelu_bf16_r2048|bench/bias_gelu|s/16384/2048/g"
  "minigpt_block_t2048|minigpt_block|s/1024/2048/g"
  "mlp_block_r2048|mlp_block|s/4096x/2048x/g"
  "mlp_block_r8192|mlp_block|s/4096x/8192x/g"
  "swiglu_r2048|swiglu|s/8192x/2048x/g"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name ex expr <<< "$c"
  sed "$expr" "$root/examples/$ex.mlir" > "$m/$name.mlir"
  llm-fuse-opt --llm-fuse="arch=sm_90a max-refinements=0 cache-dir=$m/cache-$name report=$out/$name.json" \
    "$m/$name.mlir" -o "$out/$name.out.mlir" 2> "$out/$name.err"
  echo "== $name: exit $?"
done
python3 - "$out" "${cases[@]}" <<'PY'
import json, sys
out = sys.argv[1]
print("%-24s %-20s %-8s %-9s %10s %10s %8s  %s" % ("case", "subgraph", "from", "decision", "kernel ms",
      "fallback", "speedup", "reason"))
for c in sys.argv[2:]:
    name = c.split("|")[0]
    try:
        r = json.load(open("%s/%s.json" % (out, name)))
    except Exception as e:
        print("%-24s report missing (%s)" % (name, e))
        continue
    for s in r["subgraphs"]:
        p = s.get("performance") or {}
        k, f = p.get("kernel_ms"), p.get("fallback_ms")
        print("%-24s %-20s %-8s %-9s %10s %10s %8s  %s" % (
            name, s["name"], s.get("provider") or "-", s["decision"],
            "%.4f" % k if k else "-", "%.4f" % f if f else "-",
            "%.2fx" % s["speedup"] if s.get("speedup") else "-", s["reason"]))
PY
