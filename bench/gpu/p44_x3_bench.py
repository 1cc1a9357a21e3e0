#!/usr/bin/env python3
"""p44_x3_bench.py - KernelBench L3 P44's four f32 GEMMs (bench/gpu/p44-x3-prepare.sh's
stage) against cuBLAS SGEMM, one process:

    python3 bench/gpu/p44_x3_bench.py STAGE [--json OUT.json] [--budget-ms 200]

Per batch (STAGE/b<B>/) and GEMM subgraph (STAGE/b<B>/<sg>/case.json: its
signature, W [N, K], x [M, K], bias [N], residual [B, T, N]): the pattern
table's sm_90a answer (x3/: the importer-any-*bt-f32-0x3tma entry, exact f32
by 3xTF32 wgmma), its sm_90 answer (simt/: the SIMT entry P44 ran before),
and torch eager with allow_tf32 False (cuBLAS SGEMM: F.linear plus the
epilogue, as bench/gpu/p44_gemms.py times it), on the same inputs (x, the
bias, the residual N(0, 1); W N(0, 1/K)): medians over 3 interleaved
rounds with the L2 flushed (bench/gpu/run.py's machinery), and the error
against float64 (normwise, and the verifier's rule as worst err/tol, rtol
1e-3) of each. Prints one markdown table of all GEMMs.

Each GEMM runs in a process of its own (--only b<B>/<sg>), so that a kernel
fault (which leaves the CUDA context unusable) costs that GEMM only: before
anything is timed, each of our kernels is launched --stress times alone and
synchronized; a fault there names the kernel ("FAULT <sub>"), and the GEMM
is run again without it. With --sanitize, the first faulting kernel is then
launched once under compute-sanitizer's memcheck (its report in the log).
"""
import argparse
import json
import math
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as suite  # noqa: E402  (bench/gpu/run.py)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

F32 = torch.float32


def shapes(sig):
    """the input and output shapes of a subgraph signature"""
    ins, outs = sig.split("->")
    parse = lambda s: [tuple(int(d) for d in t.split("x")) for t in re.findall(r"tensor<([0-9x]+)xf32>", s)]
    return parse(ins), parse(outs)


def role(ins, outs):
    if len(ins) == 4:
        return "bias+residual"
    return "bias+gelu" if len(outs[0]) == 2 else "bias"


def case_fn(ep, out_shape):
    def fn(w, x, b, r=None):
        y = F.linear(x, w, b)
        if ep == "bias+residual":
            y = y + r.reshape(y.shape)
        elif ep == "bias+gelu":
            y = suite.gelu_tanh64(y)
        return y.reshape(out_shape)
    return fn


def errors(out, ref):
    d = (out.double() - ref).abs()
    ok, worst, bad = suite.compare(out, ref)
    return {"norm_rel": (d.norm() / ref.norm()).item(), "err_over_tol": worst, "bad": bad,
            "nan": int(torch.isnan(out).sum().item())}


SUBS = (("ours 3xTF32 (sm_90a)", "x3"), ("ours SIMT (sm_90)", "simt"))


def run_case(d, case, rt, timer, budget, log, skip=None, stress=20, sanitize=False):
    """skip: sub -> why (kernels left out); sanitize: launch the kernels
    once, nothing else (under compute-sanitizer)"""
    skip = skip or {}
    ins_s, outs_s = shapes(case["signature"])
    n, k = ins_s[0]
    m = ins_s[1][0]
    ep = role(ins_s, outs_s)
    fn = case_fn(ep, outs_s[0])
    gen = torch.Generator(device="cuda").manual_seed(1)
    scales = [k ** -0.5, 1.0, 1.0, 1.0]
    ins = [suite.rnd(s, F32, gen, sc) for s, sc in zip(ins_s, scales)]
    res = {"sg": case["name"], "batch": case["batch"], "M": m, "N": n, "K": k, "epilogue": ep,
           "entries": {"x3": case.get("entry_x3"), "simt": case.get("entry_simt")},
           "flops": 2 * m * n * k, "times": {}, "errors": {}, "failures": {}}
    ref = None
    if not sanitize:
        print("PHASE reference (float64, torch)", flush=True)
        with torch.no_grad():
            ref = fn(*[t.double() for t in ins])
        torch.cuda.synchronize()   # a fault of torch's is not charged to the kernel stressed next
    variants, outs = {}, {}
    for tag, sub in SUBS:
        if not os.path.isdir(os.path.join(d, sub)):
            continue
        if sub in skip:
            res["failures"][tag] = skip[sub]
            continue
        try:
            o = torch.full(outs_s[0], float("nan"), dtype=F32, device="cuda")
            variants[tag] = suite.launch_built(rt, os.path.join(d, sub), ins, [o])
            outs[tag] = o
        except Exception as e:
            res["failures"][tag] = "%s: %s" % (type(e).__name__, e)
            log("  %s: %s" % (tag, res["failures"][tag]))
            continue
        # alone first: a fault here names the kernel (the process ends: the context is lost)
        print("STRESS %s" % sub, flush=True)
        for _ in range(stress):
            variants[tag]()
        torch.cuda.synchronize()
        rt.check(tag)
        print("STRESS-OK %s" % sub, flush=True)
        if sanitize:
            return None
    with torch.no_grad():
        for tag, fv in list(variants.items()):
            print("PHASE error of %s" % tag, flush=True)
            outs[tag].fill_(float("nan"))
            fv()
            torch.cuda.synchronize()
            rt.check(tag)
            res["errors"][tag] = errors(outs[tag], ref)
        print("PHASE cuBLAS SGEMM error", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = False
        res["errors"]["cuBLAS SGEMM"] = errors(fn(*ins), ref)
        torch.cuda.synchronize()
        print("PHASE cuBLAS TF32 error", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = True
        res["errors"]["cuBLAS TF32"] = errors(fn(*ins), ref)
        torch.cuda.synchronize()
        torch.backends.cuda.matmul.allow_tf32 = False
    # The launch closures hold the raw device addresses of outs' tensors:
    # outs must outlive the timing (freeing them and emptying the cache is
    # what made the qkv case fault with an illegal address in this phase).
    del ref
    torch.cuda.empty_cache()
    variants["cuBLAS SGEMM"] = lambda: fn(*ins)
    print("PHASE timing", flush=True)
    with torch.no_grad():
        res["times"] = suite.time_variants(timer, variants, budget)
    rt.check("timing")
    return res


def table(rows):
    lines = ["| B | GEMM (M x N x K, epilogue) | cuBLAS SGEMM ms | 3xTF32 ms | x SGEMM | SIMT ms | x SGEMM | "
             "err/tol 3xTF32 / SIMT / SGEMM / TF32 | norm rel 3xTF32 / SGEMM |",
             "|---:|---|---:|---:|---:|---:|---:|---|---|"]
    tot = {}
    for r in rows:
        t, e = r["times"], r["errors"]
        sg = t.get("cuBLAS SGEMM", {}).get("median")
        x3 = t.get("ours 3xTF32 (sm_90a)", {}).get("median")
        si = t.get("ours SIMT (sm_90)", {}).get("median")
        for key, v in (("sgemm", sg), ("x3", x3), ("simt", si)):
            tot.setdefault(r["batch"], {"n": 0}).setdefault(key, 0.0)
            tot[r["batch"]][key] += v or float("nan")
        tot[r["batch"]]["n"] += 1
        f = lambda v: "%.3f" % v if v else "-"
        er = lambda k, x: "%.3g" % e[k][x] if k in e else "-"
        lines.append("| %d | %dx%dx%d %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["batch"], r["M"], r["N"], r["K"], r["epilogue"], f(sg), f(x3),
            "%.2f" % (sg / x3) if sg and x3 else "-", f(si), "%.2f" % (sg / si) if sg and si else "-",
            " / ".join(er(k, "err_over_tol") for k in ("ours 3xTF32 (sm_90a)", "ours SIMT (sm_90)",
                                                       "cuBLAS SGEMM", "cuBLAS TF32")),
            " / ".join(er(k, "norm_rel") for k in ("ours 3xTF32 (sm_90a)", "cuBLAS SGEMM"))))
    for b, s in sorted(tot.items()):
        lines.append("| %d | all %d | %.3f | %.3f | %.2f | %.3f | %.2f | | |" % (
            b, s["n"], s["sgemm"], s["x3"], s["sgemm"] / s["x3"], s["simt"], s["sgemm"] / s["simt"]))
    return "\n".join(lines)


def child(args, log):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rt = suite.Runtime(os.path.join(args.stage, "libllm_fuse_rt.so"))
    d = os.path.join(args.stage, args.only)
    case = json.load(open(os.path.join(d, "case.json")))
    skip = {sub: "left out: faulted when launched alone (%s)" % why
            for sub, why in (x.split("=", 1) for x in args.skip)}
    if args.sanitize:
        skip.update({sub: "" for _, sub in SUBS if sub not in args.sanitize.split(",")})
    r = run_case(d, case, rt, None if args.sanitize else suite.Timer(), args.budget_ms, log, skip,
                 1 if args.sanitize else args.stress, bool(args.sanitize))
    if r is not None:
        json.dump(r, open(args.case_json, "w"), indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage")
    ap.add_argument("--json")
    ap.add_argument("--budget-ms", type=float, default=200.0)
    ap.add_argument("--stress", type=int, default=20, help="launches of each kernel alone before timing")
    ap.add_argument("--sanitize-timeout", type=int, default=0,
                    help="run the first faulting kernel under compute-sanitizer memcheck (seconds; 0: no)")
    ap.add_argument("--log-dir", help="each GEMM process's output, where one failed")
    ap.add_argument("--only", help=argparse.SUPPRESS)          # child: one GEMM, b<B>/<sg>
    ap.add_argument("--case-json", help=argparse.SUPPRESS)
    ap.add_argument("--skip", action="append", default=[], help=argparse.SUPPRESS)   # child: SUB=why
    ap.add_argument("--sanitize", help=argparse.SUPPRESS)      # child: launch these subs once, nothing else
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    if args.only:
        return child(args, log)
    import subprocess
    import tempfile
    prop = torch.cuda.get_device_properties(0)
    log("device %s (%d SMs), torch %s" % (prop.name, prop.multi_processor_count, torch.__version__))
    out = {"schema": "llm-fuse-p44-x3/0", "device": prop.name, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": [], "faults": []}
    rows, bad, sanitized = [], 0, False
    tmp = tempfile.mkdtemp()
    for b in sorted((x for x in os.listdir(args.stage) if re.fullmatch(r"b\d+", x)), key=lambda x: int(x[1:])):
        for sg in sorted(os.listdir(os.path.join(args.stage, b))):
            d = os.path.join(args.stage, b, sg)
            if not os.path.exists(os.path.join(d, "case.json")):
                continue
            case = json.load(open(os.path.join(d, "case.json")))
            log("%s %s %s" % (b, sg, case["signature"]))
            skip = []
            cj = os.path.join(tmp, "%s-%s.json" % (b, sg))
            for attempt in range(len(SUBS) + 1):
                cmd = [sys.executable, os.path.abspath(__file__), args.stage, "--only", "%s/%s" % (b, sg),
                       "--case-json", cj, "--budget-ms", str(args.budget_ms), "--stress", str(args.stress)]
                cmd += ["--skip=%s" % x for x in skip]
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                except subprocess.TimeoutExpired:
                    log("  case timed out (120 s)")
                    break
                if p.returncode == 0 and os.path.exists(cj):
                    break
                started = re.findall(r"^STRESS (\w+)$", p.stdout, re.M)
                done = re.findall(r"^STRESS-OK (\w+)$", p.stdout, re.M)
                lines = [l for l in p.stderr.strip().split("\n") if re.search(r"Error\b|error:", l)] or \
                    p.stderr.strip().split("\n")
                err = lines[-1][:200]
                if args.log_dir:
                    os.makedirs(args.log_dir, exist_ok=True)
                    with open(os.path.join(args.log_dir, "%s-%s.%d.log" % (b, sg, attempt)), "w") as f:
                        f.write(p.stdout + "\n--- stderr\n" + p.stderr)
                phase = (re.findall(r"^PHASE (.*)$", p.stdout, re.M) or ["setup"])[-1]
                if not started or started[-1] in done:
                    log("  case failed (exit %d) in phase %s: %s" % (p.returncode, phase, err))
                    out["faults"].append({"batch": case["batch"], "sg": sg, "phase": phase, "error": err})
                    break
                sub = started[-1]
                log("  FAULT %s: %s launched alone %d times: %s" % (sub, case["entry_" + sub], args.stress, err))
                out["faults"].append({"batch": case["batch"], "sg": sg, "sub": sub, "entry": case["entry_" + sub],
                                      "error": err})
                skip.append("%s=%s" % (sub, err[:80]))
                if args.sanitize_timeout and not sanitized:
                    sanitized = True
                    san = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "compute-sanitizer"),
                           "--tool", "memcheck", "--print-limit", "8", sys.executable, os.path.abspath(__file__),
                           args.stage, "--only", "%s/%s" % (b, sg), "--sanitize", sub]
                    try:
                        q = subprocess.run(san, capture_output=True, text=True, timeout=args.sanitize_timeout)
                        text = q.stdout + q.stderr
                    except subprocess.TimeoutExpired as e:
                        text = "compute-sanitizer: timed out after %d s\n%s" % (
                            args.sanitize_timeout, (e.stdout or b"").decode(errors="replace")[-3000:]
                            if isinstance(e.stdout, bytes) else (e.stdout or "")[-3000:])
                    except OSError as e:
                        text = "compute-sanitizer: %s" % e
                    out["faults"][-1]["memcheck"] = text[-6000:]
                    log("  memcheck of %s (last lines):\n    %s" % (sub, "\n    ".join(text.strip().split("\n")[-25:])))
            if not os.path.exists(cj):
                bad += 1
                continue
            r = json.load(open(cj))
            bad += bool(r["failures"])
            rows.append(r)
            out["cases"].append(r)
            if args.json:
                json.dump(out, open(args.json, "w"), indent=1)
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)
    rows.sort(key=lambda r: (r["batch"], -r["N"] * 10 - r["K"]))
    print(table(rows))
    for f in out["faults"]:
        print("FAULT b%d %s %s: %s" % (f["batch"], f["sg"], "%s (%s)" % (f["sub"], f["entry"]) if "sub" in f
                                       else "phase " + f["phase"], f["error"]))
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
