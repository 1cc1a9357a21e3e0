#!/usr/bin/env bash
# p44-x3-device.sh - on the GPU machine: KernelBench L3 P44's four f32 GEMMs
# at batch 32 and 128 (bench/gpu/p44-x3-prepare.sh's stage). Verifies the
# table's sm_90a exact f32 candidates (importer-any-*bt-f32-0x3tma: 3xTF32
# wgmma) with the verification worker at the EXACT f32 tolerance (against
# the default MLIR lowering of each subgraph, no --tf32-k: several trials,
# poisoned outputs, a determinism repeat), then times them beside the SIMT
# entries' kernels and cuBLAS SGEMM (bench/gpu/p44_x3_bench.py: each GEMM in a
# process of its own, each kernel launched alone 20 times first, a faulting
# one named, left out and run once under compute-sanitizer memcheck).
#
#   bash bench/gpu/p44-x3-device.sh STAGE OUT
#   (P44X3_VERIFY_TRIALS, default 3; P44X3_SIMT_VERIFY=1 verifies the SIMT kernels too)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: p44-x3-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: p44-x3-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
subs="x3"
[ "${P44X3_SIMT_VERIFY:-0}" = 1 ] && subs="x3 simt"
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
for d in "$stage"/b*/sg_*/; do
  d=${d%/}
  for sub in $subs; do
    [ -f "$d/$sub/result.json" ] || continue
    b=$(basename "$(dirname "$d")") sg=$(basename "$d")
    lf_verify_candidate "$stage/bin/llm-fuse-verify" "$d/plan.json" "$d/$sub" \
      "$out/verify/$b.$sg.$sub" "$b $sg $sub" "${P44X3_VERIFY_TRIALS:-3}"
  done
done
echo "verify: $ok accepted, $bad rejected"
cd "$root"
python3 bench/gpu/p44_x3_bench.py "$stage" --json "$out/p44-x3.json" --sanitize-timeout 80 --log-dir "$out/cases" ${P44X3_BENCH_ARGS:-} \
  > "$out/p44-x3-bench.log" 2>&1
rc=$?
grep -E '^device |failed|FAULT|^    ' "$out/p44-x3-bench.log" | head -60
grep -E '^\|' "$out/p44-x3-bench.log"
echo "p44-x3-device: verify $ok/$((ok + bad)) accepted, bench exit $rc"
[ $bad = 0 ] && [ $rc = 0 ]
