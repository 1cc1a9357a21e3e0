#!/usr/bin/env python3
"""colred_torch.py STAGE OUT - on the GPU machine, after colred-device.sh's
verify runs: times torch eager and torch.compile on every staged case of
bench/table/colred_stage.py (the same reduction: x.sum(0), x.mean(0),
x.amax(0), (x * x).sum(0), (x - y).sum(0), x.sum((0, 1)); the same sizes
and element type; triton.testing.do_bench, median, L2 flushed) and a 1 GiB
device copy for the bandwidth, and prints per case: verified variants, the
fastest verified variant's time (llm-fuse-verify's candidate_ms), the
default lowering's (reference_ms), eager, compile, ours/compile, GB/s
(inputs + output once each) and % of the copy's GB/s. OUT/colred.json
keeps everything."""
import json
import math
import os
import sys
import time

import torch
from triton.testing import do_bench

from verdict_json import find  # noqa: E402  (beside this script)

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
ELT = {"f32": 4, "bf16": 2, "f16": 2}


def fn(fam):
    return {
        "colsum": lambda x: x.sum(0),
        "colsum3": lambda x: x.sum(0),
        "colsum_bt": lambda x: x.sum((0, 1)),
        "colmean": lambda x: x.mean(0),
        "colmax": lambda x: x.amax(0),
        "colsumsq": lambda x: (x * x).sum(0),
        "coldiff": lambda x, y: (x - y).sum(0),
    }[fam]


def main():
    stage, out = sys.argv[1:3]
    budget = float(os.environ.get("COLRED_COMPILE_BUDGET_S", "90"))
    cases = json.load(open(os.path.join(stage, "cases.json")))
    print("device %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    n = 1 << 28  # 1 GiB of f32
    a = torch.empty(n, device="cuda")
    b = torch.empty_like(a)
    copy_ms = do_bench(lambda: b.copy_(a), warmup=10, rep=50, return_mode="median")
    copy_gbs = 2 * n * 4 / copy_ms / 1e6
    del a, b
    print("1 GiB device copy: %.4f ms, %.0f GB/s (read + write)" % (copy_ms, copy_gbs))
    t_compile = 0.0
    rows = []
    for c in cases:
        fam, dt, sizes = c["family"], c["dtype"], c["sizes"]
        shape = sizes if fam in ("colsum3", "colsum_bt") else sizes
        g = torch.Generator(device="cuda").manual_seed(0)
        nin = 2 if fam == "coldiff" else 1
        xs = [torch.randn(*shape, device="cuda", generator=g).to(DT[dt]) for _ in range(nin)]
        f = fn(fam)
        y = f(*xs)
        nbytes = sum(x.numel() for x in xs) * ELT[dt] + y.numel() * ELT[dt]
        eager = do_bench(lambda: f(*xs), warmup=10, rep=50, return_mode="median")
        comp = None
        if t_compile < budget:
            t0 = time.time()
            try:
                cf = torch.compile(f)
                cf(*xs)
                comp = do_bench(lambda: cf(*xs), warmup=10, rep=50, return_mode="median")
            except Exception as ex:  # a failure is the row's note
                c["compile_error"] = str(ex)[:200]
            t_compile += time.time() - t0
        best, ver = None, {}
        for tag, label in c["variants"].items():
            p = os.path.join(out, "verify", "%s.%s.json" % (c["sg"], tag))
            try:
                v = json.load(open(p))
            except Exception:
                ver[tag] = dict(label=label, accepted=None, reason="no verify result")
                continue
            ms = find(v, "candidate_ms")
            ver[tag] = dict(label=label, accepted=v.get("accepted"), reason=v.get("reason"), ms=ms,
                            ref_ms=find(v, "reference_ms"))
            if v.get("accepted") and ms and (best is None or ms < best[0]):
                best = (ms, label, find(v, "reference_ms"))
        c.update(bytes=nbytes, eager_ms=eager, compile_ms=comp, verify=ver,
                 best=list(best) if best else None)
        rows.append(c)
        del xs, y
        torch.cuda.empty_cache()
    json.dump(dict(copy_ms=copy_ms, copy_gbs=copy_gbs, cases=rows),
              open(os.path.join(out, "colred.json"), "w"), indent=1)
    print("| case | verified | ours ms (variant) | default ms | eager ms | compile ms | "
          "ours/compile | GB/s | % of copy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in rows:
        nv = len(c["verify"])
        na = sum(1 for v in c["verify"].values() if v["accepted"])
        b = c["best"]
        comp = c["compile_ms"]
        gbs = c["bytes"] / b[0] / 1e6 if b else None
        print("| %s | %d/%d | %s | %s | %.4f | %s | %s | %s | %s |" % (
            c["case"], na, nv, "%.4f (%s)" % (b[0], b[1]) if b else "-",
            "%.4f" % b[2] if b and b[2] else "-", c["eager_ms"],
            "%.4f" % comp if comp else "-",
            "%.2f" % (b[0] / comp) if b and comp else "-",
            "%.0f" % gbs if gbs else "-", "%.0f%%" % (100 * gbs / copy_gbs) if gbs else "-"))
    for c in rows:
        for tag, v in sorted(c["verify"].items()):
            print("variant: %s %s %s accepted=%s ms=%s %s" % (
                c["case"], tag, v["label"], v["accepted"], v.get("ms"),
                "" if v["accepted"] else (v.get("reason") or "")[:160]))


if __name__ == "__main__":
    main()
