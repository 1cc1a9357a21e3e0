#!/bin/bash
# synth-device.sh - the synthesized elementwise kernels (passes/synth_ew.c,
# docs/pattern-table.md "Synthesized elementwise kernels") on the GPU
# machine. examples/importer/ew_any.mlir (five importer-shaped elementwise
# chains, none covered by the replay set or the table) is compiled by the
# llm-fuse pass offline on the default provider (replay): the synthesizer
# answers each subgraph, every kernel is built, verified against the
# subgraph's own default lowering (passes/reference.h, one unfused kernel per
# linalg.generic with temporaries between them) and timed against it on this
# GPU. Then torch eager and torch.compile run the same math on the same
# sizes, with a same-size device-to-device copy as the bandwidth yardstick,
# and one table row per subgraph: synthesized ms, default-lowering ms,
# eager ms, compile ms, GB/s of the synthesized kernel and its % of the copy
# bandwidth, speed-up over the default lowering and over torch.compile.
# Run from the repository root with bench/loop/prepare.sh's stage carried in
# .device/loop (built from this tree: the synthesizer is in its tools):
#   bash bench/table/synth-device.sh OUT
# ARCH (default sm_90a), OPTIONS (more --llm-fuse options) and STAGE
# (another stage folder) may be set; NO_COMPILE=1 skips torch.compile.
set -uo pipefail
root=$(pwd)
out=$(mkdir -p "${1:?usage: synth-device.sh OUT}" && cd "$1" && pwd)
[ -x "${STAGE:-$root/.device/loop}/bin/llm-fuse-opt" ] || { echo "no stage in ${STAGE:-$root/.device/loop} (bench/loop/prepare.sh)" >&2; exit 2; }
ld0=${LD_LIBRARY_PATH:-}  # torch runs with the machine's own libraries
. "$root/bench/loop/device-env.sh"   # the runtime, PATH, data folders; honours STAGE and TABLE
arch=${ARCH:-sm_90a}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
rm -rf "$out/cache"
t0=$(date +%s%N)
llm-fuse-opt --llm-fuse="offline=true arch=$arch max-refinements=0 min-speedup=0 cache-dir=$out/cache report=$out/report.json remarks=false ${OPTIONS:-}" \
  "$root/examples/importer/ew_any.mlir" -o "$out/ew_any.fused.mlir" 2> "$out/pass.log"
echo "== llm-fuse: exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
grep -E "synth:|verified in|rejected in|not judged" "$out/pass.log" | cut -c1-220
LF_ROOT=$root LD_LIBRARY_PATH=$ld0 NO_COMPILE=${NO_COMPILE:-0} python3 - "$out/report.json" "$out/torch.json" <<'EOF'
import json, os, re, sys
rep = json.load(open(sys.argv[1]))
subs = rep.get("subgraphs", [])
# examples/importer/ew_any.mlir's functions, in order (one subgraph each).
names = ["bias_gelu_tanh", "bias_gelu_erf", "silu_gate", "residual_scale", "cast_bf16"]
def shapes(sig):
    return [(tuple(int(d) for d in m.group(1).split("x")[:-1]), m.group(1).split("x")[-1])
            for m in re.finditer(r"tensor<([0-9x]+x[a-z0-9]+)>", sig)]
SIZE = {"f32": 4, "bf16": 2, "f16": 2}
tor = {}
try:
    import torch
    import torch.nn.functional as F
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}
    def fn(name):
        if name == "bias_gelu_tanh": return lambda x, b: F.gelu(x + b, approximate="tanh")
        if name == "bias_gelu_erf": return lambda x, b: F.gelu(x + b)
        if name == "silu_gate": return lambda g, u: (F.silu(g.float()) * u.float()).to(torch.bfloat16)
        if name == "residual_scale": return lambda r, s, h: h + (r * s) * 0.9  # the subgraph's operand order
        if name == "cast_bf16": return lambda x: x.to(torch.bfloat16)
    sys.path.insert(0, os.path.join(os.environ["LF_ROOT"], "bench", "table"))
    from event_time import median_ms  # the small device scripts' one timer
    def bench(f):
        return median_ms(f, n=50)
    for g, name in zip(subs, names):
        sh = shapes(g["signature"])
        args = [torch.empty(d, dtype=dt[t], device="cuda").uniform_(-1, 1) for d, t in sh[:-1]]
        f = fn(name)
        r = {"eager_ms": bench(lambda: f(*args))}
        if os.environ.get("NO_COMPILE") != "1":
            try:
                c = torch.compile(f)
                r["compile_ms"] = bench(lambda: c(*args))
            except Exception as ex:  # a compile error is reported, not fatal
                r["compile_error"] = str(ex)[:200]
        nbytes = sum(SIZE[t] * int(torch.tensor(d).prod()) for d, t in sh)
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        r["copy_ms"] = bench(lambda: dst.copy_(src))
        tor[name] = r
except Exception as ex:
    print("torch: not measured (%s)" % ex)
json.dump(tor, open(sys.argv[2], "w"), indent=1)
fmt = "%-15s %-10s %-10s %9s %9s %9s %9s %8s %6s %8s %8s"
print(fmt % ("subgraph", "decision", "verify", "synth ms", "default", "eager", "compile",
             "GB/s", "%copy", "x default", "x compile"))
for g, name in zip(subs, names):
    perf = g.get("performance") or {}
    k, fb = perf.get("kernel_ms"), perf.get("fallback_ms")
    sh = shapes(g["signature"])
    nbytes = sum(SIZE[t] * eval("*".join(map(str, d)) or "1") for d, t in sh)
    t = tor.get(name, {})
    outcomes = sorted({a.get("outcome") for a in g.get("attempt_log", [])})
    f = lambda v: "%.4f" % v if v else "-"
    gbs = nbytes / k / 1e6 if k else None
    pct = 100 * t["copy_ms"] / k if k and t.get("copy_ms") else None
    print(fmt % (name, g.get("decision"), ",".join(map(str, outcomes))[:10], f(k), f(fb),
                 f(t.get("eager_ms")), f(t.get("compile_ms")),
                 "%.0f" % gbs if gbs else "-", "%.0f" % pct if pct else "-",
                 "%.2f" % (fb / k) if k and fb else "-",
                 "%.2f" % (t["compile_ms"] / k) if k and t.get("compile_ms") else "-"))
    if g.get("provider") != "synth":
        print("    not synthesized: provider %s; synth: %s" % (g.get("provider"), g.get("synth")))
ok = sum(1 for g in subs if g.get("provider") == "synth" and
         any(a.get("outcome") == "verified" for a in g.get("attempt_log", [])))
print("synth: %d subgraph(s), %d synthesized kernel(s) verified, %d swapped" %
      (len(subs), ok, sum(g.get("decision") == "swapped" for g in subs)))
EOF
