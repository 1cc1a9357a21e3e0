#!/usr/bin/env python3
"""f32x3_bench.py - the exact f32 GEMMs on 3xTF32 wgmma (gen_gemm.py kind
f32x3_wgmma_tma) against cuBLAS SGEMM and the rest, one process:

    python3 bench/tma/f32x3_bench.py STAGE [--json OUT.json] [--budget-ms 300] [--no-compile]

STAGE is bench/tma/f32x3-prepare.sh's: per subgraph STAGE/<sg>/candidate/
(our SIMT kernel, sm_90) and STAGE/<sg>/tma-x3-<tag>/ (the 3xTF32 variants).
Per GEMM (the suite's GEMM+ReLU 1024x8192x8192, the MiniGPT MLP's fc and
proj at 65536 rows, all W [K, N]; nn.Linear x @ W^T + b at 16384x3072x768,
W [N, K]; the odd sizes):
  (a) times, medians over 3 interleaved rounds with the L2 flushed
      (bench/gpu/run.py's machinery): ours (each variant), our SIMT kernel,
      torch eager with allow_tf32 False (cuBLAS SGEMM + the epilogue),
      torch.compile and max-autotune-no-cudagraphs (also without TF32);
  (b) the error against float64 (the same function on the inputs upcast),
      for ours, SIMT, cuBLAS SGEMM and cuBLAS TF32 (allow_tf32 True) on the
      same inputs: normwise ||out - ref|| / ||ref||, max and mean of
      |out - ref| / |ref| over the elements with |ref| > 1e-3 mean|ref|, and
      max |out - ref| / (|A| |B|) (the elementwise bound's scale, times the
      epilogue's slope where it has one), and the verifier's rule (rtol 1e-3,
      atol 1e-3 mean|ref|) as worst err/tol;
and prints one table per GEMM.
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
import torch.nn.functional as F  # noqa: E402

F32 = torch.float32
g64 = suite.gelu_tanh64


def cases():
    # name, sg, shapes and scales of the inputs in the kernel's order, torch fn (same order), A, B of the GEMM
    # (functions of the inputs, for |A||B|; B as [K, N]), the epilogue's slope bound, FLOPs
    T, D, H = 65536, 768, 3072
    return [
        dict(name="gemm_relu 1024x8192x8192", sg="sg_5beaf48efb3a6ac0",
             inputs=[((1024, 8192), 1.0), ((8192, 8192), 1 / 90.5)],
             fn=lambda x, w: torch.relu((x @ w - 0.5) * 2.0), ab=lambda x, w: (x, w), slope=2.0,
             flops=2 * 1024 * 8192 * 8192, autotune=True),
        dict(name="mlp fc 65536x3072x768 +b GELU", sg="sg_ab992c66808cc4c2",
             inputs=[((T, D), 1.0), ((D, H), D ** -0.5), ((H,), 1.0)],
             fn=lambda x, w, b: g64(x @ w + b), ab=lambda x, w, b: (x, w), slope=1.13,
             flops=2 * T * D * H),
        dict(name="mlp proj 65536x768x3072 +b +res", sg="sg_606c0e1c9184d8b4",
             inputs=[((T, H), 1.0), ((H, D), H ** -0.5), ((D,), 1.0), ((T, D), 1.0)],
             fn=lambda g, w, b, x: g @ w + b + x, ab=lambda g, w, b, x: (g, w), slope=1.0,
             flops=2 * T * D * H),
        dict(name="linear W[N,K] 16384x3072x768 +b", sg="sg_100c4c94b8d625b4",
             inputs=[((3072, 768), 768 ** -0.5), ((16384, 768), 1.0), ((3072,), 1.0)],
             fn=lambda w, x, b: x @ w.t() + b, ab=lambda w, x, b: (x, w.t()), slope=1.0,
             flops=2 * 16384 * 3072 * 768),
        dict(name="relu odd 300x520x264", sg="sg_aea9b49628e57b4e",
             inputs=[((300, 264), 1.0), ((264, 520), 264 ** -0.5)],
             fn=lambda x, w: torch.relu((x @ w - 0.5) * 2.0), ab=lambda x, w: (x, w), slope=2.0,
             flops=2 * 300 * 520 * 264),
        dict(name="linear odd W[N,K] 300x520x264 +b", sg="sg_96e0ae69a9b5dd5a",
             inputs=[((520, 264), 264 ** -0.5), ((300, 264), 1.0), ((520,), 1.0)],
             fn=lambda w, x, b: x @ w.t() + b, ab=lambda w, x, b: (x, w.t()), slope=1.0,
             flops=2 * 300 * 520 * 264),
    ]


def errors(out, ref, bound):
    """out: the variant's output; ref: float64; bound: |A||B| * slope (float64)"""
    c = out.double()
    d = (c - ref).abs()
    r = ref.abs()
    sel = r > 1e-3 * r.mean()
    rel = d[sel] / r[sel]
    ok, worst, bad = suite.compare(out, ref)
    nb = bound > 0
    return {"norm_rel": (d.norm() / ref.norm()).item(), "max_rel": rel.max().item(), "mean_rel": rel.mean().item(),
            "max_over_absab": (d[nb] / bound[nb]).max().item(), "err_over_tol": worst, "bad": bad,
            "nan": int(torch.isnan(c).sum().item())}


def run_case(c, stage, rt, timer, args, log):
    d = os.path.join(stage, c["sg"])
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    ins = [suite.rnd(s, F32, gen, sc) for s, sc in c["inputs"]]
    res = {"name": c["name"], "flops": c["flops"], "times": {}, "errors": {}, "failures": {}}
    with torch.no_grad():
        i64 = [t.double() for t in ins]
        ref = c["fn"](*i64)
        a, b = c["ab"](*i64)
        bound = (a.abs() @ b.abs()) * c["slope"]
        del i64, a, b
    torch.cuda.synchronize()
    out_shape = tuple(ref.shape)
    variants, outs = {}, {}
    subs = [("SIMT (ours, sm_90)", "candidate"), ("shipped sm_90a", "candidate-sm90a")] + sorted(
        (("3xTF32 " if s.startswith("tma-x3") else "") + s[4:], s) for s in os.listdir(d) if s.startswith("tma-"))
    for tag, sub in subs:
        if not os.path.isdir(os.path.join(d, sub)):
            continue
        try:
            o = torch.full(out_shape, float("nan"), dtype=F32, device="cuda")
            variants[tag] = suite.launch_built(rt, os.path.join(d, sub), ins, [o])
            outs[tag] = o
        except Exception as e:
            res["failures"][tag] = "%s: %s" % (type(e).__name__, e)
            log("  %s: %s" % (tag, res["failures"][tag]))
    fn = c["fn"]
    with torch.no_grad():
        for tag, fv in list(variants.items()):
            outs[tag].fill_(float("nan"))
            fv()
            torch.cuda.synchronize()
            rt.check(tag)
            res["errors"][tag] = errors(outs[tag], ref, bound)
        torch.backends.cuda.matmul.allow_tf32 = True
        res["errors"]["cuBLAS TF32"] = errors(fn(*ins), ref, bound)
        torch.backends.cuda.matmul.allow_tf32 = False
        res["errors"]["cuBLAS SGEMM (eager)"] = errors(fn(*ins), ref, bound)
    del ref, bound
    torch.cuda.empty_cache()
    variants["cuBLAS SGEMM (eager)"] = lambda: fn(*ins)
    if not args.no_compile and c["flops"] > 1e10:
        modes = [("compile", None)]
        if c.get("autotune") or args.autotune_all:   # max-autotune takes a minute or more per case
            modes.append(("max-autotune", "max-autotune-no-cudagraphs"))
        suite.compile_variants(fn, ins, modes, variants, res, log)
    with torch.no_grad():
        res["times"] = suite.time_variants(timer, variants, args.budget_ms)
    rt.check("timing")
    for tag, st in res["times"].items():
        st["TFLOPs"] = c["flops"] / (st["median"] * 1e-3) / 1e12
    return res


def table(r):
    t, e = r["times"], r["errors"]
    sg = t.get("cuBLAS SGEMM (eager)", {}).get("median")
    lines = ["", "### %s" % r["name"], "",
             "| variant | median ms | TFLOP/s | x SGEMM time | norm rel err | max rel | mean rel | "
             "max err/(|A||B|) | err/tol |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tags = sorted(set(t) | set(e), key=lambda k: t[k]["median"] if k in t else 1e9)
    for k in tags:
        st, er = t.get(k), e.get(k)
        lines.append("| %s | %s | %s | %s | %s |" % (
            k, "%.3f" % st["median"] if st else "-", "%.1f" % st["TFLOPs"] if st else "-",
            "%.3f" % (st["median"] / sg) if st and sg else "-",
            " | ".join(("%.2e" % er[x]) for x in ("norm_rel", "max_rel", "mean_rel", "max_over_absab"))
            + " | %.3f%s" % (er["err_over_tol"], " NaN %d" % er["nan"] if er["nan"] else "") if er else
            "- | - | - | - | -"))
    for k, v in r["failures"].items():
        lines.append("| %s | failed: %s | | | | | | | |" % (k, v[:100]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage")
    ap.add_argument("--json")
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--autotune-all", action="store_true", help="max-autotune for every case, not only GEMM+ReLU")
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rt = suite.Runtime(os.path.join(args.stage, "libllm_fuse_rt.so"))
    prop = torch.cuda.get_device_properties(0)
    log("device %s (%d SMs), torch %s" % (prop.name, prop.multi_processor_count, torch.__version__))
    timer = suite.Timer()
    out = {"schema": "llm-fuse-f32x3/0", "device": prop.name, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": []}
    text = []
    for c in cases():
        if not os.path.isdir(os.path.join(args.stage, c["sg"])):
            log("%s: not staged" % c["name"])
            continue
        log(c["name"])
        try:
            r = run_case(c, args.stage, rt, timer, args, log)
        except Exception as e:
            log("  case failed: %s: %s" % (type(e).__name__, e))
            continue
        out["cases"].append(r)
        text.append(table(r))
        if args.json:
            json.dump(out, open(args.json, "w"), indent=1)
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
