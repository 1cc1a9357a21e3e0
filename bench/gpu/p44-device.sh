#!/usr/bin/env bash
# p44-device.sh - KernelBench level 3 problem 44 (the MiniGPT block, f32,
# n_embd 768, 8 heads of 96, T = 512) end to end on the GPU machine, at
# batch 32 (KernelBench) and 128 (the FACT paper), in one run:
#
#   1. writes the importer-shaped models (examples/kernelbench_l3_p44/
#      gen_p44.py; weights are function arguments);
#   2. compiles each ahead of time with llm-fuse-compile, the llm-fuse pass
#      on, offline (the shipped replay set and pattern table, no endpoint):
#      every subgraph acquired, built, verified on this GPU and swapped or
#      kept; and once more with tf32=true (the opt-in TF32 option) when the
#      pass has it; each object linked with bench/gpu/aot_shim.c;
#   3. runs bench/gpu/p44.py: ours, torch eager and torch.compile, each
#      with and without TF32, against a float64 torch computation of the
#      same block on the same weights.
#
# Needs, carried: .device/loop (bench/loop/prepare.sh's stage: the MLIR
# runtime, the stripped tools, the packed table) with llm-fuse-compile in
# .device/loop/bin and libllm_fuse_rt.so in .device/loop/lib (prepare.sh
# stages both), or a build/ with bin/ and lib/ (LF_BUILD=build).
# Inputs and weights are made on the device (seeded). The TF32 variant is
# compiled for sm_90a, where the table's TF32 GEMMs are wgmma kernels; the
# exact one for $P44_CHIP (default sm_90: the SIMT GEMMs; P44_CHIP=sm_90a:
# the table's exact f32 3xTF32 wgmma GEMMs, importer_any.py *-f32-0x3tma).
#
#   bash bench/gpu/p44-device.sh OUT [BATCHES]     (BATCHES "32 128")
set -euo pipefail
out=$(mkdir -p "${1:?usage: p44-device.sh OUT [BATCHES]}" && cd "$1" && pwd)
batches=${2:-"32 128"}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/bench/loop/device-env.sh"
bin=${LF_BUILD:+$LF_BUILD/bin}
bin=${bin:-$stage/bin}
rtlib=${LF_BUILD:+$LF_BUILD/lib}
rtlib=${rtlib:-$stage/lib}
work=/tmp/lf-p44
rm -rf "$work" && mkdir -p "$work/lib"
cp "$rtlib/libllm_fuse_rt.so" "$work/lib/"
compile() { # MODEL OBJ CHIP OPTIONS...
  local model=$1 obj=$2 chip=$3
  shift 3
  "$bin/llm-fuse-compile" "$model" -o "$obj" --chip "$chip" "$@"
}
for b in $batches; do
  m=p44_b$b
  python3 "$root/examples/kernelbench_l3_p44/gen_p44.py" "$b" -o "$work/$m.mlir"
  for v in ours ours_tf32; do
    chip=${P44_CHIP:-sm_90}
    [ $v = ours_tf32 ] && chip=sm_90a
    opts="arch=$chip offline=true cache-dir=$work/cache-$v report=$out/$m-$v.report.json"
    [ $v = ours_tf32 ] && opts="$opts tf32=true"
    t0=$EPOCHREALTIME
    if ! compile "$work/$m.mlir" "$work/$m-$v.o" $chip --llm-fuse-options "$opts" \
        2> "$out/$m-$v.compile.log"; then
      echo "p44-device: $m $v: llm-fuse-compile failed (last lines of $out/$m-$v.compile.log):"
      tail -3 "$out/$m-$v.compile.log"
      [ $v = ours ] && exit 1
      continue
    fi
    echo "p44-device: $m $v compiled in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
    gcc -std=c17 -O2 -Wall -Wextra -Werror -shared -fPIC -I"$work" \
      -I"$root/runtime/mgpu" -DENTRY="$m" -DHEADER="\"$m-$v.h\"" \
      "$root/bench/gpu/aot_shim.c" "$work/$m-$v.o" \
      -L"$work/lib" -lllm_fuse_rt -Wl,-rpath,"$work/lib" -o "$work/$m-$v.so"
    python3 - "$out/$m-$v.report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("p44-device:", sys.argv[1].rsplit("/", 1)[-1], r.get("summary"))
for s in r.get("subgraphs", []):
    print("  %-22s %-15s %-10s %s" % (s.get("name", s.get("fingerprint", "?"))[:22],
                                     s.get("class", ""), s.get("provider", s.get("source", "")),
                                     s.get("decision", s.get("status", ""))))
PY
  done
done
LD_LIBRARY_PATH="$work/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  python3 "$root/bench/gpu/p44.py" "$work" --batches "$batches" --json "$out/p44.json"
