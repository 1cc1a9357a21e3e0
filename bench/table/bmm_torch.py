#!/usr/bin/env python3
"""bmm_torch.py STAGE OUT [VERIFY_DIR] - on the GPU machine, after bmm-device.sh's verify
runs: times torch eager (torch.bmm on the operands, B and A transposed as
.transpose(1, 2) views, as a model writes them) and torch.compile of the
same function on every staged case (triton.testing.do_bench, median, L2
flushed; f32 with TF32 off; session 29: also with bench/gpu/run.py's
PadTimer, as the held-out summaries time torch: a GPU sleep before each
sample's flush, so that torch.compile's host cost (its guards and launcher,
20-35 us) is not counted where the product itself is shorter: eager_pad_ms,
compile_pad_ms, BMM_TORCH_PAD_US, default 200; 0: off), reads llm-fuse-verify's verdict and candidate
time of each staged variant, and prints per case: the entry, verified
variants, our best ms, the default lowering's ms, eager, compile,
ours/compile. OUT/bmm.json keeps everything."""
import json
import os
import re
import sys
import time

import torch
from triton.testing import do_bench

from verdict_json import find  # noqa: E402  (beside this script)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
PAD_US = float(os.environ.get("BMM_TORCH_PAD_US", "200"))


def pad_median(timer, fn, n=40):
    """median ms of n samples of fn() with run.py's PadTimer (3 warm-up calls)"""
    for _ in range(3):
        fn()
    ts = sorted(timer.series(fn, n))
    return ts[len(ts) // 2]

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def torch_fn(form, d=None):
    if form == "nts":
        return lambda a, b: torch.bmm(a, b.transpose(1, 2)) * (1.0 / d ** 0.5)
    if form == "tms":
        return lambda q, kt, mask: (torch.matmul(q, kt) * (1.0 / d ** 0.5)).masked_fill(mask, float("-inf"))
    if form == "tmpv":
        return lambda v, att: torch.matmul(att, v.transpose(1, 2)).transpose(1, 2)
    if form == "nn":
        return lambda a, b: torch.bmm(a, b)
    if form in ("nt", "ntm"):
        return lambda a, b: torch.bmm(a, b.transpose(1, 2))
    if form == "tn":
        return lambda a, b: torch.bmm(a.transpose(1, 2), b)
    raise ValueError(form)


def operands(c):
    B, M, N, K, dt = c["B"], c["M"], c["N"], c["K"], DT[c["dtype"]]
    g = torch.Generator(device="cuda").manual_seed(0)
    if c["form"] == "tms":   # q [1,H,T,d], k^T [1,H,d,T], mask [1,1,T,T]
        return (torch.randn(1, B, M, K, device="cuda", generator=g).to(dt),
                torch.randn(1, B, K, N, device="cuda", generator=g).to(dt),
                torch.ones(M, N, device="cuda", dtype=torch.bool).triu(1)[None, None])
    if c["form"] == "tmpv":  # v [1,T,H,d], att [1,H,T,T]
        return (torch.randn(1, K, B, N, device="cuda", generator=g).to(dt),
                torch.randn(1, B, M, K, device="cuda", generator=g).to(dt))
    a_shape = [B, K, M] if c["form"] == "tn" else [B, M, K]
    b_shape = [B, N, K] if c["form"] in ("nt", "ntm", "nts") else [B, K, N]
    return (torch.randn(*a_shape, device="cuda", generator=g).to(dt),
            torch.randn(*b_shape, device="cuda", generator=g).to(dt))


def main():
    stage, out = sys.argv[1:3]
    vdir = sys.argv[3] if len(sys.argv) > 3 else os.path.join(out, "verify")
    deadline = time.time() + float(os.environ.get("BMM_TORCH_BUDGET_S", "100"))
    cases = json.load(open(os.path.join(stage, "cases.json")))
    print("device %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    timer = None
    if PAD_US > 0:
        try:
            from run import PadTimer  # noqa: E402  (bench/gpu/run.py)
            timer = PadTimer(PAD_US)
        except Exception as e:  # noqa: BLE001
            print("bmm_torch: no PadTimer (%s): do_bench only" % e)
    for c in cases:
        best, ver = None, {}
        for tag, label in c["variants"].items():
            p = os.path.join(vdir, "%s.%s.json" % (c["sg"], tag))
            try:
                v = json.load(open(p))
            except Exception:
                ver[tag] = dict(accepted=None, label=label, reason="not run")
                continue
            ms = find(v, "candidate_ms")
            ver[tag] = dict(accepted=v.get("accepted"), reason=v.get("reason"), ms=ms, label=label)
            c["ref_ms"] = find(v, "reference_ms")
            if v.get("accepted") and ms and (best is None or ms < best[0]):
                best = (ms, label)
        c["verify"], c["best"] = ver, best
        if time.time() > deadline:
            c["eager_ms"] = c["compile_ms"] = None
            continue
        f = torch_fn(c["form"], c.get("d"))
        ops = operands(c)
        c["eager_ms"] = do_bench(lambda: f(*ops), warmup=10, rep=50, return_mode="median")
        if timer:
            c["eager_pad_ms"] = pad_median(timer, lambda: f(*ops))
        try:
            torch._dynamo.reset()   # a fresh compile per case (no recompile limit)
            fc = torch.compile(f, dynamic=False)
            fc(*ops)
            c["compile_ms"] = do_bench(lambda: fc(*ops), warmup=10, rep=50, return_mode="median")
            if timer:
                c["compile_pad_ms"] = pad_median(timer, lambda: fc(*ops))
        except Exception as e:  # noqa: BLE001
            c["compile_ms"] = None
            c["compile_error"] = str(e)[:200]
        print("timed %s: eager %.4f compile %s (PadTimer: eager %s compile %s)" % (
            c["case"], c["eager_ms"], c["compile_ms"], c.get("eager_pad_ms"), c.get("compile_pad_ms")), flush=True)
    json.dump(cases, open(os.path.join(out, "bmm.json"), "w"), indent=1)
    print("| case | B x M x N x K | entry | verified | ours ms (variant) | default lowering ms | eager ms | "
          "compile ms | ours/compile | eager pad ms | compile pad ms | ours/compile pad |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        ok = sum(1 for v in c.get("verify", {}).values() if v["accepted"])
        b = c.get("best")
        comp = c.get("compile_ms")
        cp = c.get("compile_pad_ms")
        print("| %s | %d x %d x %d x %d | %s | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["case"], c["B"], c["M"], c["N"], c["K"], (re.sub(r"\.json(\.gz)?$", "", c["entry"].split("-bmm-any-")[-1])
                                                          if c["entry"] else "-"),
            ok, len(c.get("verify", {})), "%.4f (%s)" % b if b else "-",
            "%.4f" % c["ref_ms"] if c.get("ref_ms") else "-",
            "%.4f" % c["eager_ms"] if c.get("eager_ms") else "-", "%.4f" % comp if comp else "-",
            "%.2f" % (b[0] / comp) if b and comp else "-",
            "%.4f" % c["eager_pad_ms"] if c.get("eager_pad_ms") else "-", "%.4f" % cp if cp else "-",
            "%.3f" % (b[0] / cp) if b and cp else "-"))
    print("\nper variant (ms; * = not accepted):")
    for c in cases:
        vs = sorted(c.get("verify", {}).items(), key=lambda kv: kv[0])
        print("%s: %s" % (c["case"], "; ".join("%s %s%s" % (
            v["label"].replace("explore ", "x:"), "%.4f" % v["ms"] if v.get("ms") else "-",
            "" if v["accepted"] else "*") for _, v in vs)))
    for c in cases:
        for tag, v in c.get("verify", {}).items():
            if not v["accepted"]:
                print("not accepted: %s %s %s (%s): %s" % (c["case"], c["sg"], tag, v["label"], v.get("reason")))


if __name__ == "__main__":
    main()
