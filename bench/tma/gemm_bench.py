#!/usr/bin/env python3
"""gemm_bench.py - times the TMA-fed GEMM variants (kernels/handwritten/tma/)
against the shipped sm_90a kernel, torch eager (cuBLAS + the epilogue in
torch), torch.compile and torch.compile max-autotune-no-cudagraphs, on the
same inputs, in one process (issue 16, point 2).

    python3 bench/tma/gemm_bench.py STAGE [--cases swiglu_bf16,gemm_bias_gelu_bf16]
                                    [--json OUT.json] [--budget-ms 300] [--no-compile]

STAGE is what bench/tma/gemm-prepare.sh made: STAGE/libllm_fuse_rt.so and,
per subgraph, STAGE/<sg>/candidate-sm90a/ (the shipped kernel) and
STAGE/<sg>/tma-<tag>/ (kernel.cubin + result.json of each TMA variant).
The machinery is bench/gpu/run.py's (imported, not copied): its cases
(inputs, torch functions, float64 references, FLOPs), the verifier's rule
for the output check (outputs poisoned with NaN first), the L2 flush,
events around each call, warm-up, --budget-ms of iterations per variant
over 3 interleaved rounds, medians; the bf16 rate measured in the same run
(torch.matmul 8192^3, run.py's ceilings()).

A tensor-map parameter of a variant (result.json "params", role
"tensor_map") is encoded once, on the buffer it views, with the runtime's
lf_rt_tensor_map_encode (libllm_fuse_rt, cuTensorMapEncodeTiled), and
passed by value (the 128 bytes) as the launch argument: run.py's
launch_built(), which the suite uses for its own TMA kernels.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
import run as suite  # noqa: E402  (bench/gpu/run.py)
import torch  # noqa: E402

def launch_part(rt, d, ins, outs):
    """One built kernel (DIR = kernel.cubin + result.json) over the case's
    tensors: pointers in order, then each tensor map encoded on its buffer
    (bench/gpu/run.py's launch_built)."""
    return suite.launch_built(rt, d, ins, outs)


def run_case(c, stage, rt, timer, ceil, args, log):
    sg = c["parts"][0][0]
    d = os.path.join(stage, sg)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    ins = [suite.rnd(shape, dt, gen, scale) for shape, dt, scale in c["inputs"]]
    with torch.no_grad():
        refs = list(c["ref"](*[t.double() for t in ins]))
    torch.cuda.synchronize()
    res = {"name": c["name"], "title": c["title"], "flops": c["flops"], "variants": {}, "checks": {},
           "errors": {}}

    variants, outs_for = {}, {}
    subs = [("shipped", "candidate-sm90a")] + sorted(
        (s.replace("tma-", "tma ", 1), s) for s in os.listdir(d) if s.startswith("tma-"))
    for tag, sub in subs:
        if not os.path.isdir(os.path.join(d, sub)):
            continue
        try:
            outs = [torch.full(s, float("nan"), dtype=dt, device="cuda") for s, dt in c["outputs"]]
            variants[tag] = launch_part(rt, os.path.join(d, sub), ins, outs)
            outs_for[tag] = outs
        except Exception as e:
            res["errors"][tag] = "%s: %s" % (type(e).__name__, e)
            log("  %s: %s" % (tag, res["errors"][tag]))
    fn_t = c["torch"]
    variants["cuBLAS (eager)"] = lambda: fn_t(*ins)
    if not args.no_compile:
        suite.compile_variants(fn_t, ins, (("compile", None),
                                           ("max-autotune", "max-autotune-no-cudagraphs")),
                               variants, res, log)
    suite.check_variants(variants, outs_for, refs, rt, res, log)
    del refs
    torch.cuda.empty_cache()
    with torch.no_grad():
        res["variants"] = suite.time_variants(timer, variants, args.budget_ms)
    rt.check("timing")
    for tag, st in res["variants"].items():
        st["TFLOPs"] = c["flops"] / (st["median"] * 1e-3) / 1e12
        st["fraction"] = st["TFLOPs"] / ceil["bf16_TFLOPs"]
    return res


def table(results, ceil):
    lines = ["bf16 rate (torch.matmul 8192^3, this run): %.0f TFLOP/s" % ceil["bf16_TFLOPs"], "",
             "| case | variant | median ms | p25-p75 ms | TFLOP/s | of the bf16 rate | check |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in results:
        v = r["variants"]
        for tag in sorted(v, key=lambda k: v[k]["median"]):
            st = v[tag]
            ok = r["checks"].get(tag, {}).get("ok")
            lines.append("| %s | %s | %.3f | %.3f-%.3f | %.0f | %.1f%% | %s |" % (
                r["name"], tag, st["median"], st["p25"], st["p75"], st["TFLOPs"], 100 * st["fraction"],
                "ok" if ok else "WRONG"))
        for tag, e in r["errors"].items():
            lines.append("| %s | %s | error: %s | | | | |" % (r["name"], tag, e[:100]))
        ours = [k for k in v if k.startswith("tma") and r["checks"].get(k, {}).get("ok")]
        torch_best = [v[k]["median"] for k in v if k in ("cuBLAS (eager)", "compile", "max-autotune")]
        if ours and torch_best:
            b = min(ours, key=lambda k: v[k]["median"])
            lines.append("| %s | best TMA: %s | %.3f | | | %.1f%% | %.3fx the best torch |" % (
                r["name"], b, v[b]["median"], 100 * v[b]["fraction"], v[b]["median"] / min(torch_best)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage")
    ap.add_argument("--cases", default="swiglu_bf16,gemm_bias_gelu_bf16")
    ap.add_argument("--json")
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    torch.backends.cuda.matmul.allow_tf32 = False
    rt = suite.Runtime(os.path.join(args.stage, "libllm_fuse_rt.so"))
    prop = torch.cuda.get_device_properties(0)
    log("device %s (%d SMs), torch %s" % (prop.name, prop.multi_processor_count, torch.__version__))
    timer = suite.Timer()
    ceil = suite.ceilings(timer)
    log("bf16 rate %.0f TFLOP/s, copy %.0f GB/s" % (ceil["bf16_TFLOPs"], ceil["copy_GBps"]))
    want = [s for s in args.cases.split(",") if s]
    results = []
    out = {"schema": "llm-fuse-tma-gemm/0", "device": prop.name, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "ceilings": ceil, "cases": results}
    for c in suite.case_defs():
        if c["name"] not in want:
            continue
        if not os.path.isdir(os.path.join(args.stage, c["parts"][0][0])):
            log("%s: not staged" % c["name"])
            continue
        log(c["title"])
        t0 = time.time()
        r = run_case(c, args.stage, rt, timer, ceil, args, log)
        r["wall_s"] = round(time.time() - t0, 1)
        log("  " + ", ".join("%s %.3f" % (k, s["median"]) for k, s in r["variants"].items()))
        results.append(r)
        if args.json:
            json.dump(out, open(args.json, "w"), indent=1)
    text = table(results, ceil)
    out["table"] = text
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)
    print(text)
    bad = [(r["name"], k) for r in results for k, x in r["checks"].items() if not x.get("ok")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
