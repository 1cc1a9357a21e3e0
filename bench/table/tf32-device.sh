#!/bin/bash
# tf32-device.sh - the pass option tf32=1 on the GPU machine (issue 16,
# point 3; docs/verification.md "TF32 mode"): compiles the f32 GEMM
# subgraphs of examples/minigpt_block.mlir (QKV, attention projection, MLP
# fc + GELU, MLP projection + residual: M = 1024, K = 768 / 3072) and
# examples/gemm_epilogue.mlir (1024 x 8192 x 8192 + ReLU) offline twice,
# without and with tf32=1 (verify=auto: each kernel verified and timed on
# this GPU, the TF32 ones with the TF32 tolerance), then times torch's
# matmul + epilogue on the same shapes with allow_tf32 False and True, and
# prints one table. Run from the repository root with bench/loop/prepare.sh's
# stage carried in .device/loop:
#   bash bench/table/tf32-device.sh OUT
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: tf32-device.sh OUT}" && cd "$1" && pwd)
. "$root/bench/loop/device-env.sh"
chip=${CHIP:-sm_90}
for ex in minigpt_block gemm_epilogue; do
  for mode in exact tf32; do
    opt="offline arch=$chip max-refinements=0 cache-dir=$out/cache-$mode report=$out/$ex-$mode.json"
    [ $mode = tf32 ] && opt="$opt tf32=1"
    echo "== $ex, $mode"
    llm-fuse-opt --llm-fuse="$opt" "$root/examples/$ex.mlir" -o "$out/$ex-$mode.mlir" \
      2> "$out/$ex-$mode.log"
    echo "   exit $?; $(grep -E 'summary: (tf32=1|[0-9]+ subgraph)' "$out/$ex-$mode.log" | sed 's/.*summary: //' | tr '\n' ' ')"
  done
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
# subgraph -> (label, M, N, K, epilogue) of the f32 GEMMs in the two examples
GEMMS = {
    "sg_775f56ec869d4b28": ("qkv x W + b", 1024, 2304, 768, "bias"),
    "sg_1c6bf422e56f7cc7": ("attn proj + b + x", 1024, 768, 768, "bias_res"),
    "sg_208fdd59011a4518": ("fc + b, GELU", 1024, 3072, 768, "gelu"),
    "sg_36d4248ce34e0c94": ("proj + b + h", 1024, 768, 3072, "bias_res"),
    "sg_5beaf48efb3a6ac0": ("relu((xW-.5)*2)", 1024, 8192, 8192, "relu"),
}
ours = {}
for ex in ("minigpt_block", "gemm_epilogue"):
    for mode in ("exact", "tf32"):
        p = os.path.join(out, "%s-%s.json" % (ex, mode))
        if not os.path.exists(p):
            continue
        for s in json.load(open(p))["subgraphs"]:
            if s["name"] in GEMMS:
                perf = s.get("performance") or {}
                v = s.get("verification") or {}
                prot = (v.get("protocol") or {}) if isinstance(v, dict) else {}
                ours[(s["name"], mode)] = dict(
                    ms=perf.get("kernel_ms"), fallback=perf.get("fallback_ms"),
                    decision=s["decision"], reason=s["reason"],
                    tol=(s.get("precision") or {}).get("tolerance"),
                    tc=(s.get("precision") or {}).get("tf32_instructions"),
                    worst=max([o.get("max_err_over_tol", 0) for t in (v.get("trials") or [])
                               for o in (t.get("outputs") or [])] or [None]) if isinstance(v, dict) else None)
torch_ms = {}
try:
    import torch
    sys.path.insert(0, os.path.join(os.getcwd(), "bench", "table"))
    from event_time import median_ms as timeit
    for sg, (label, M, N, K, ep) in GEMMS.items():
        x = torch.randn(M, K, device="cuda"); w = torch.randn(K, N, device="cuda")
        bias = torch.randn(N, device="cuda"); r = torch.randn(M, N, device="cuda")
        f = {"bias": lambda: torch.addmm(bias, x, w),
             "bias_res": lambda: torch.addmm(bias, x, w) + r,
             "gelu": lambda: torch.nn.functional.gelu(torch.addmm(bias, x, w), approximate="tanh"),
             "relu": lambda: torch.relu((x @ w - 0.5) * 2)}[ep]
        for tf in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf
            torch_ms[(sg, tf)] = timeit(f)
    torch.backends.cuda.matmul.allow_tf32 = False
except Exception as e:  # no torch here: our half of the table only
    print("torch: %s" % e)
fmt = lambda v: "-" if v is None else "%.4g" % v
print("%-20s %-18s %-20s %9s %9s %9s %9s %9s %-22s %-22s" % (
    "subgraph", "gemm", "M x N x K", "ours f32", "ours tf32", "torch f32", "torch tf32", "tf32 tol",
    "f32: decision", "tf32: decision (TC)"))
for sg, (label, M, N, K, ep) in GEMMS.items():
    e, t = ours.get((sg, "exact"), {}), ours.get((sg, "tf32"), {})
    print("%-20s %-18s %-20s %9s %9s %9s %9s %9s %-22s %-22s" % (
        sg, label, "%d x %d x %d" % (M, N, K), fmt(e.get("ms")), fmt(t.get("ms")),
        fmt(torch_ms.get((sg, False))), fmt(torch_ms.get((sg, True))), fmt(t.get("tol")),
        "%s/%s" % (e.get("decision", "-"), e.get("reason", "-")),
        "%s/%s (%s)" % (t.get("decision", "-"), t.get("reason", "-"), t.get("tc"))))
json.dump({"ours": {"%s/%s" % k: v for k, v in ours.items()},
           "torch": {"%s/%s" % (k[0], "tf32" if k[1] else "f32"): v for k, v in torch_ms.items()}},
          open(os.path.join(out, "tf32.json"), "w"), indent=1)
PY
