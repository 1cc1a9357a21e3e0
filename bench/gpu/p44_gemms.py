#!/usr/bin/env python3
"""p44_gemms.py - the four f32 GEMMs of KernelBench level 3 problem 44
(bench/gpu/p44-device.sh), per variant, against cuBLAS.

    python3 bench/gpu/p44_gemms.py REPORT.json [--no-cublas] [--json OUT.json]

REPORT.json is the pass's report of the on-device compile
(OUT/p44_b<B>-ours.report.json). For each contraction subgraph it prints
the table entry that answered, every tune variant the pass built and
timed (its TILE: 100 * alternative + GROUP_M; importer_any.py BT_ALTS
names the alternatives), each variant's outcome and kernel time as the
pass measured it (CUDA events, L2 flushed), which one was kept, and the
time of the same GEMM and epilogue in torch f32 with TF32 off (cuBLAS:
F.linear plus the epilogue, eager, L2 flushed before each call, CUDA
events, the median of 30): "ours/cuBLAS" is the kept variant's time over
that. Exits 1 when a contraction subgraph was not swapped.
"""
import argparse
import json
import math
import re
import os
import sys


def shapes(sig):
    """(M, N, K, epilogue) of a [B, T, N] / [M, N] GEMM subgraph signature:
    W [N, K], x [M, K] first, then the bias, the residual."""
    ins = re.findall(r"tensor<([0-9x]+)xf32>", sig.split("->")[0])
    outs = re.findall(r"tensor<([0-9x]+)xf32>", sig.split("->")[1])
    dims = [[int(d) for d in s.split("x")] for s in ins]
    w, x = dims[0], dims[1]
    n, k = w
    m = math.prod(x[:-1])
    residual = len(dims) > 3
    out_rank = len(outs[0].split("x"))
    if residual:
        ep = "bias+residual"
    elif out_rank == 2:   # c_fc: the GELU on the [B*T, 4C] view
        ep = "bias+gelu"
    else:
        ep = "bias"
    return m, n, k, ep


def cublas_ms(m, n, k, ep, iters=30):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "table"))
    from event_time import median_ms
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g) / math.sqrt(k)
    b = torch.randn(n, device="cuda", generator=g)
    r = torch.randn(m, n, device="cuda", generator=g)

    def gelu(y):
        return 0.5 * y * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * y.pow(3.0))))

    def run():
        y = F.linear(x, w, b)
        if ep == "bias+residual":
            y = y + r
        elif ep == "bias+gelu":
            y = gelu(y)
        return y

    return median_ms(run, iters, warmup=3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report")
    ap.add_argument("--no-cublas", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    rep = json.load(open(a.report))
    rows, bad = [], 0
    for s in rep.get("subgraphs", []):
        if s.get("class") != "contraction":
            continue
        m, n, k, ep = shapes(s["signature"])
        perf = s.get("performance") or {}
        entry = (s.get("model") or "").split("-", 1)[-1]
        print("%s %dx%dx%d %s: %s, entry %s, kernel %s ms (fallback %s ms)" % (
            s["name"], m, n, k, ep, s.get("decision"), entry, perf.get("kernel_ms"),
            perf.get("fallback_ms")))
        variants = []
        for at in s.get("attempt_log") or []:
            tile = re.search(r"TILE=(\d+)", at.get("variant", ""))
            v = dict(variant=at.get("variant", ""), tile=int(tile.group(1)) if tile else None,
                     outcome=at.get("outcome"), time_ms=at.get("time_ms"), kept=at.get("kept"),
                     reason=at.get("verify_reason") or at.get("message", "")[:80])
            variants.append(v)
            print("    TILE=%-4s %-10s %8s ms%s%s" % (
                v["tile"], v["outcome"], "%.3f" % v["time_ms"] if v["time_ms"] else "-",
                "  <- kept" if v["kept"] else "",
                "  (%s)" % v["reason"] if v["reason"] and not v["time_ms"] else ""))
        row = dict(name=s["name"], M=m, N=n, K=k, epilogue=ep, decision=s.get("decision"),
                   entry=entry, kernel_ms=perf.get("kernel_ms"), variants=variants)
        if not a.no_cublas:
            row["cublas_ms"] = cublas_ms(m, n, k, ep)
            if perf.get("kernel_ms"):
                row["ours_over_cublas"] = perf["kernel_ms"] / row["cublas_ms"]
            print("    cuBLAS (F.linear + epilogue, f32): %.3f ms; ours/cuBLAS %s" % (
                row["cublas_ms"], "%.3f" % row["ours_over_cublas"] if "ours_over_cublas" in row else "-"))
        if s.get("decision") != "swapped":
            bad += 1
        rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not rows:
        print("p44_gemms: no contraction subgraph in %s" % a.report)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
