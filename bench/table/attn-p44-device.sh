#!/usr/bin/env bash
# attn-p44-device.sh - on the GPU machine: KernelBench L3 P44's causal
# attention at batch 32 and 128 (bench/table/attn-p44-prepare.sh's stage).
# Verifies every staged kernel with the verification worker (llm-fuse-verify
# against the default MLIR lowering of the subgraph: several trials,
# poisoned outputs, a determinism repeat; --lenient-nonfinite as the pass
# asks for attention-like subgraphs; the TF32 variants at the TF32
# tolerance, --tf32-k T, as the pass's tf32=1 runs them), then times them
# beside torch's F.scaled_dot_product_attention (causal, f32, allow_tf32 off
# and on) with bench/table/attn_p44.py bench, and prints the tables.
#
#   bash bench/table/attn-p44-device.sh STAGE OUT
#   (ATTN_P44_VERIFY_TRIALS, default 2; ATTN_P44_VERIFY=0 skips verification)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(cd "${1:?usage: attn-p44-device.sh STAGE OUT}" && pwd)
out=$(mkdir -p "${2:?usage: attn-p44-device.sh STAGE OUT}" && cd "$2" && pwd)
exec > >(tee "$out/device.log") 2>&1
export LD_LIBRARY_PATH=$stage/lib:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
mkdir -p "$out/verify"
# the worker with the pass's flags for this subgraph (lf_verify_candidate runs "$verify" --plan ...),
# written per case below
wrap=$(mktemp -d)
ok=0 bad=0
. "$root/bench/tma/verify-candidate.sh"
if [ "${ATTN_P44_VERIFY:-1}" = 1 ]; then
  for d in "$stage"/h*_d*_b*_t*/sg_*/; do
    d=${d%/}
    case=$(basename "$(dirname "$d")")
    # the pass's K for --tf32-k: the longest f32 reduction, max(D, T)
    k=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1])); print(max(c['D'], c['T']))" "$d/case.json")
    printf '#!/bin/sh\nexec "%s" --lenient-nonfinite "$@"\n' "$stage/bin/llm-fuse-verify" > "$wrap/exact"
    printf '#!/bin/sh\nexec "%s" --lenient-nonfinite --tf32-k %s "$@"\n' "$stage/bin/llm-fuse-verify" "$k" > "$wrap/tf32"
    chmod +x "$wrap/exact" "$wrap/tf32"
    for v in $(python3 -c "import json,sys; c=json.load(open(sys.argv[1])); ns=list(c['variants'])
for n, i in c['variants'].items():
    if not [m for m in i.get('same_as', []) if ns.index(m) < ns.index(n)]:
        print(n + ':' + i['precision'])" "$d/case.json"); do
      n=${v%%:*} prec=${v##*:}
      lf_verify_candidate "$wrap/$prec" "$d/plan.json" "$d/$n" "$out/verify/$case.$n" "$case $n ($prec)" \
        "${ATTN_P44_VERIFY_TRIALS:-2}"
    done
  done
  echo "verify: $ok accepted, $bad rejected"
fi
# instruction mix of each batch-32 kernel (SASS opcodes), where cuobjdump is there
if command -v cuobjdump > /dev/null; then
  for k in "$stage"/h8_d96_b32_t512/sg_*/*/kernel.cubin; do
    v=$(basename "$(dirname "$k")")
    cuobjdump --dump-sass "$k" | grep -oE '^\s+/\*[0-9a-f]{4,6}\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_.]*' |
      awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -14 |
      awk -v v="$v" 'BEGIN { printf "%-10s", v } { printf " %s:%s", $2, $1 } END { print "" }'
  done > "$out/sass-mix.txt" 2>&1
  cat "$out/sass-mix.txt"
fi
cd "$root"
PYTHONUNBUFFERED=1 python3 bench/table/attn_p44.py bench "$stage" --json "$out/attn-p44.json" \
  ${ATTN_P44_BENCH_ARGS:-} > "$out/attn-p44-bench.log" 2>&1
rc=$?
grep -vE '^\s*$' "$out/attn-p44-bench.log" | grep -E '^device|^B =|^\||failed|Error|error' | head -120
echo "attn-p44-device: verify $ok/$((ok + bad)) accepted, bench exit $rc"
[ $bad = 0 ] && [ $rc = 0 ]
