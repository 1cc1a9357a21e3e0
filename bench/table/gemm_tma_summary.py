#!/usr/bin/env python3
"""gemm_tma_summary.py OUT [--no-torch] - the summary of
bench/table/gemm-tma-device.sh: for each model OUT/models/<name>.mlir, its
report OUT/reports/<name>.json and log OUT/logs/<name>.err (the llm-fuse
pass on the offline default), one line per subgraph:

  the table entry that answered (from the log: `pattern table: template
  <pattern>/<file>`; "replay" or "-" otherwise), whether a variant verified,
  the decision and its reason, the kernel's and the fallback's ms (the pass's
  timing: CUDA events, L2 flushed), the kernel's TFLOP/s (the report's
  flops), and cuBLAS's: torch eager's time for the same GEMM(s) and
  epilogue in bf16 (bench/gpu/run.py's timer: an L2 flush before each call,
  300 ms of calls over 3 rounds, the median), unless --no-torch or torch is
  missing.

Last line: how many subgraphs a TMA template (*_0tma) answered, how many
of those verified and how many were swapped. Exits 1 when a TMA template's
kernel was rejected by the verifier (a wrong kernel), else 0.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ENTRY = re.compile(r"(sg_[0-9a-f]+): request 1: pattern table: template \S+/(\S+)\.json")
FAMILY = re.compile(r"gemm_any_(\w+?)_(bf16|f16|f32)_")


def shapes(sig):
    return [[int(d) for d in t.split("x")[:-1]] for t in re.findall(r"tensor<([^>]*)>", sig)]


def torch_fn(family, sig):
    """(callable, what) timing torch eager on this subgraph's math, or None"""
    import torch
    import torch.nn.functional as F
    sh = shapes(sig)
    g = torch.Generator(device="cuda").manual_seed(1)
    t = [torch.randn(s, generator=g, device="cuda", dtype=torch.float32).to(torch.bfloat16) for s in sh[:-1]]
    if family == "swiglu" and len(t) == 3:
        x, wg, wu = t
        return (lambda: F.silu(x @ wg) * (x @ wu)), "silu(x@Wg)*(x@Wu)"
    if family in ("mlp_up", "fc") and len(t) == 3:
        x, w, b = t
        return (lambda: F.gelu(torch.addmm(b, x, w), approximate="tanh")), "gelu(addmm)"
    if family in ("mlp_down", "proj", "attn_proj") and len(t) == 4:
        x, w, b, r = t
        return (lambda: torch.addmm(b, x, w) + r), "addmm+residual"
    return None


def main():
    out = sys.argv[1]
    no_torch = "--no-torch" in sys.argv[2:]
    timer = suite = None
    if not no_torch:
        try:
            sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
            import run as suite  # noqa: E402  (bench/gpu/run.py: its timer)
            import torch
            torch.backends.cuda.matmul.allow_tf32 = False
            timer = suite.Timer()
        except Exception as e:  # no torch or no GPU: the pass's numbers only
            print("(no cuBLAS column: %s: %s)" % (type(e).__name__, e))
    print("%-27s %-20s %-32s %-8s %-9s %-14s %9s %9s %7s %9s %7s" % (
        "model", "subgraph", "table entry", "verified", "decision", "reason", "kernel ms", "fallback",
        "TFLOP/s", "cuBLAS ms", "ours/cuBLAS"))
    tma = tma_ok = tma_swapped = tma_rejected = 0
    for name in sorted(os.listdir(os.path.join(out, "models"))):
        name = name[:-len(".mlir")]
        try:
            rep = json.load(open(os.path.join(out, "reports", name + ".json")))
        except (OSError, ValueError) as e:
            print("%-27s report missing (%s)" % (name, e))
            continue
        log = open(os.path.join(out, "logs", name + ".err"), errors="replace").read()
        entries = dict(ENTRY.findall(log))
        for s in rep.get("subgraphs", []):
            entry = entries.get(s["name"], s.get("provider") or "-")
            outcomes = [a.get("outcome") for a in s.get("attempt_log") or []]
            verified = "verified" in outcomes
            is_tma = entry.endswith("_0tma")
            p = s.get("performance") or {}
            k, f = p.get("kernel_ms"), p.get("fallback_ms")
            flops = s.get("flops") or 0
            cub = ratio = "-"
            fam = FAMILY.search(entry)
            if timer and fam and k:
                try:
                    made = torch_fn(fam.group(1), s["signature"])
                    if made:
                        st = suite.time_variants(timer, {"t": made[0]}, 300)["t"]
                        cub, ratio = "%.4f" % st["median"], "%.2fx" % (k / st["median"])
                except Exception as e:
                    cub = "error: %s" % str(e)[:40]
            print("%-27s %-20s %-32s %-8s %-9s %-14s %9s %9s %7s %9s %7s" % (
                name, s["name"], re.sub(r"^[0-9a-f]{16}-", "", entry)[:32], "yes" if verified else "no", s.get("decision"),
                (s.get("reason") or "")[:14], "%.4f" % k if k else "-", "%.4f" % f if f else "-",
                "%.0f" % (flops / (k * 1e-3) / 1e12) if k and flops else "-", cub, ratio))
            for a in s.get("attempt_log") or []:
                if a.get("outcome") not in ("built", "verified"):
                    print("    %s %s: %s" % (a.get("variant"), a.get("outcome"),
                                             (a.get("message") or a.get("verify_reason") or "")[:200]))
            if is_tma:
                tma += 1
                tma_ok += verified
                tma_swapped += s.get("decision") == "swapped"
                tma_rejected += "rejected" in outcomes
    print("gemm-tma: %d subgraph(s) answered by a TMA template (*_0tma), %d verified, %d swapped, "
          "%d rejected by the verifier" % (tma, tma_ok, tma_swapped, tma_rejected))
    return 1 if tma_rejected else 0


if __name__ == "__main__":
    sys.exit(main())
