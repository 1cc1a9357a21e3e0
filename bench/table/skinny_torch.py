#!/usr/bin/env python3
"""skinny_torch.py STAGE OUT - on the GPU machine, after skinny-device.sh's
verify runs: times torch on every staged case (F.linear for W [N, K] or
matmul for W [K, N], plus the subgraph's epilogue, f32, TF32 off;
triton.testing.do_bench, median, L2 flushed) and prints per subgraph the
fastest accepted variant of the skinny entry and of the entry the table
gave before (llm-fuse-verify's candidate time), torch's time, and GB/s on
W (K * N * 4 bytes over the time). OUT/skinny.json keeps everything."""
import json
import math
import os
import re
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from verdict_json import find  # noqa: E402  (beside this script)

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def shape(case):
    ts = [[int(d) for d in t.split("x")[:-1]] for t in re.findall(r"tensor<([^>]*)>", case["signature"])]
    out = ts[-1]
    n = out[-1]
    m = math.prod(out) // n
    w = max(ts[:-1], key=math.prod)
    k = math.prod(w) // n
    return m, n, k


def epilogue(name):
    e = name
    if "gemmrelu" in e or "5beaf48" in e:
        return "relu"
    if "fc" in e or "208fdd" in e:
        return "gelu"
    if "proj" in e or "36d4248" in e or "1c6bf42" in e:
        return "bias_res"
    return "bias"


def torch_ms(m, n, k, ep, nk):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g) / k ** 0.5
    wt = w.t().contiguous()
    b = torch.randn(n, device="cuda", generator=g)
    r = torch.randn(m, n, device="cuda", generator=g)

    def f():
        y = F.linear(x, w) if nk else x @ wt
        if ep == "relu":
            return torch.relu((y - 0.5) * 2.0)
        if ep == "gelu":
            return F.gelu(y + b, approximate="tanh")
        if ep == "bias_res":
            return y + b + r
        return y + b
    return do_bench(f, warmup=25, rep=100, return_mode="median")


def main():
    stage, out = sys.argv[1:3]
    cases = json.load(open(os.path.join(stage, "cases.json")))
    print("device %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    rows = []
    for c in cases:
        m, n, k = shape(c)
        ent = c["entries"].get("skinny", "")
        nk = "-imp-" in ent
        best = {}
        for tag, label in c["variants"].items():
            p = os.path.join(out, "verify", "%s.%s.json" % (c["sg"], tag))
            try:
                v = json.load(open(p))
            except Exception:
                continue
            ms = find(v, "candidate_ms")
            kind = tag.split("-")[0]
            c.setdefault("verify", {})[tag] = dict(accepted=v.get("accepted"), reason=v.get("reason"),
                                                   ms=ms, label=label, ref_ms=find(v, "reference_ms"))
            if v.get("accepted") and ms and (kind not in best or ms < best[kind][0]):
                best[kind] = (ms, label)
        t = torch_ms(m, n, k, epilogue(ent or c["entries"].get("today", "")), nk)
        c.update(M=m, N=n, K=k, torch_ms=t, best={kk: list(vv) for kk, vv in best.items()})
        rows.append(c)
    json.dump(rows, open(os.path.join(out, "skinny.json"), "w"), indent=1)
    print("| case | subgraph | M | N | K | W | skinny ms (variant) | today ms (variant) | torch ms | "
          "skinny GB/s W | torch GB/s W | skinny/torch | today/skinny |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in rows:
        wb = c["K"] * c["N"] * 4
        s = c["best"].get("skinny")
        t = c["best"].get("today")
        nk = "-imp-" in c["entries"].get("skinny", "")
        print("| %s | %s | %d | %d | %d | %s | %s | %s | %.4f | %s | %.0f | %s | %s |" % (
            c["case"], c["sg"], c["M"], c["N"], c["K"], "[N,K]" if nk else "[K,N]",
            "%.4f (%s)" % (s[0], s[1]) if s else "-", "%.4f (%s)" % (t[0], t[1]) if t else "-",
            c["torch_ms"], "%.0f" % (wb / s[0] / 1e6) if s else "-", wb / c["torch_ms"] / 1e6,
            "%.2f" % (s[0] / c["torch_ms"]) if s else "-", "%.2f" % (t[0] / s[0]) if s and t else "-"))
    rej = [(c["case"], c["sg"], tag, v["reason"]) for c in rows for tag, v in (c.get("verify") or {}).items()
           if not v["accepted"]]
    for r in rej:
        print("rejected: %s %s %s: %s" % r)
    print("verified: %d accepted, %d rejected" % (
        sum(1 for c in rows for v in (c.get("verify") or {}).values() if v["accepted"]), len(rej)))


if __name__ == "__main__":
    main()
