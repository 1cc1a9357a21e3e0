#!/usr/bin/env python3
"""rows_bench.py - the general row templates (kernels/table/rows_any.py) at
many sizes and element types, verified and timed on the GPU against the
default lowering, torch eager and torch.compile.

  rows_bench.py gen OUTDIR [--quick]
      OUTDIR/models/*.mlir and OUTDIR/models.json: every row family of
      rows_any.py in each element type it has, at a large size (64 MiB or
      more per tensor), an odd one (777 x 1000), a single row (1 x 4096) and a
      tall one (32768 x 768); with --quick fewer.
  rows_bench.py torch OUTDIR
      (GPU machine) times the same math in torch eager and torch.compile and
      one large device-to-device copy; OUTDIR/torch.json.
  rows_bench.py summarize OUTDIR
      One line per model from the pass's reports (OUTDIR/reports) and
      OUTDIR/torch.json: decision, the table entry used, ours / fallback /
      eager / compile ms, GB/s and the fraction of the bandwidth of a copy
      moving the same bytes (timed beside it), ours
      over torch.compile; totals.

bench/table/rows-device.sh runs the whole job on the GPU machine.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))

SIZES = [("large", None), ("odd", (777, 1000)), ("row1", (1, 4096)), ("tall", (32768, 768)),
         ("wide", (2024, 8192))]
ESIZE = {"bf16": 2, "f16": 2, "f32": 4}


def large(dtype):
    return (8192, 4096) if ESIZE[dtype] == 2 else (4096, 4096 + 8)


def cases(quick=False):
    import rows_any
    out = []
    for fam in sorted(rows_any.FAMILIES):
        sdt = rows_any.FAMILIES[fam][1]
        for dt in rows_any.DTYPES:
            if sdt != "f32" and dt == "f32":
                continue
            for label, rn in SIZES:
                if quick and label not in ("large", "odd") and dt != sdt:
                    continue
                r, n = rn or large(dt)
                out.append(dict(name="%s_%s_%s_%dx%d" % (fam, dt, label, r, n), family=fam,
                                dtype=dt, rows=r, cols=n, size=label))
    return out


def cmd_gen(outdir, quick):
    import rows_any
    md = os.path.join(outdir, "models")
    os.makedirs(md, exist_ok=True)
    cs = cases(quick)
    for c in cs:
        with open(os.path.join(md, c["name"] + ".mlir"), "w") as f:
            f.write("// rows_bench.py: %s %s at %d x %d\n" % (c["family"], c["dtype"], c["rows"],
                                                            c["cols"]))
            f.write(rows_any.example_text(c["family"], c["dtype"], c["rows"], c["cols"]))
    with open(os.path.join(outdir, "models.json"), "w") as f:
        json.dump(dict(schema="llm-fuse-rows-bench/1", models=cs), f, indent=1)
    print("%d model(s) in %s" % (len(cs), md))


# ---- torch -----------------------------------------------------------------

def torch_fn(fam, torch):
    F = torch.nn.functional

    def rms(x, w, eps=1e-6):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)

    def ln(x, g, b):
        return F.layer_norm(x.float(), (x.shape[-1],), g.float(), b.float(), 1e-5).to(x.dtype)

    def add_rms(x, r, w):
        h = (x.float() + r.float()).to(x.dtype)
        return rms(h, w), h

    def sm(x):
        return torch.softmax(x.float(), -1).to(x.dtype)

    def gelu(x, b):
        return F.gelu(x.float() + b.float(), approximate="tanh").to(x.dtype)
    return {"rmsnorm": rms, "rmsnorm_tosa": rms, "add_rmsnorm": add_rms, "layernorm": ln,
            "layernorm_f32": ln, "layernorm_gpt": ln, "softmax": sm, "softmax_tosa": sm,
            "rowsum": lambda x: x.float().sum(-1).to(x.dtype),
            "rowmax": lambda x: x.float().amax(-1).to(x.dtype), "bias_gelu": gelu}[fam]


def io_bytes(c):
    """Bytes a kernel must move: every R x N tensor read or written once,
    vectors once."""
    import rows_any
    _, _, _, _, _, _, ins, outs = rows_any.FAMILIES[c["family"]]
    r, n, e = c["rows"], c["cols"], ESIZE[c["dtype"]]
    tot = 0
    for role in ins + outs:
        tot += (r * n if role in ("x", "r", "y", "h") else r if role == "s" else n) * e
    return tot


def bench(fn, args, torch, budget_ms=50):
    """Median ms of fn(*args) by bench/gpu/run.py's method (an L2 flush
    before each call between CUDA events, which also keeps the GPU busy
    while the CPU enqueues the call, so torch.compile's Python overhead is
    not timed as GPU idle; iterations filling a budget)."""
    sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
    from run import Timer, time_variants
    if not TIMER:
        TIMER.append(Timer())
    return time_variants(TIMER[0], {"f": lambda: fn(*args)}, budget_ms)["f"]["median"]


TIMER = []


def cmd_torch(outdir):
    import torch
    import rows_any
    meta = json.load(open(os.path.join(outdir, "models.json")))
    dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    res = {}
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x), (), torch)
    res["_copy"] = dict(bytes=2 * x.numel() * 4, ms=ms, gbps=2 * x.numel() * 4 / ms / 1e6)
    del x, y
    print("copy: %.1f GB/s" % res["_copy"]["gbps"], flush=True)
    for c in meta["models"]:
        _, _, _, _, _, _, ins, outs = rows_any.FAMILIES[c["family"]]
        r, n, t = c["rows"], c["cols"], dt[c["dtype"]]
        try:
            args = [torch.randn((r, n) if role in ("x", "r") else (n,), device="cuda", dtype=t)
                    for role in ins]
            fn = torch_fn(c["family"], torch)
            e = bench(fn, args, torch)
            cf = torch.compile(fn)
            k = bench(cf, args, torch)
            # A copy moving the same bytes (half read, half written): the
            # bandwidth ceiling at this size.
            half = max(1, io_bytes(c) // 8)
            src = torch.empty(half, dtype=torch.float32, device="cuda")
            dst = torch.empty_like(src)
            cp = bench(lambda: dst.copy_(src), (), torch)
            del src, dst
            res[c["name"]] = dict(eager_ms=e, compile_ms=k, copy_ms=cp)
        except Exception as ex:  # a row with the error, never a crash
            res[c["name"]] = dict(error=str(ex)[:200])
        print(c["name"], res[c["name"]], flush=True)
        torch._dynamo.reset()
    with open(os.path.join(outdir, "torch.json"), "w") as f:
        json.dump(res, f, indent=1)


# ---- summarize ----------------------------------------------------------------

def cmd_summarize(outdir):
    meta = json.load(open(os.path.join(outdir, "models.json")))
    tj = os.path.join(outdir, "torch.json")
    tor = json.load(open(tj)) if os.path.exists(tj) else {}
    copy = (tor.get("_copy") or {}).get("gbps")
    if copy:
        print("copy bandwidth (torch, 1 GiB device-to-device): %.0f GB/s" % copy)
    hdr = "%-40s %-9s %-6s %-22s %9s %9s %9s %9s %7s %6s %7s" % (
        "model", "decision", "verif", "entry", "ours ms", "fallback", "eager", "compile",
        "GB/s", "%copy", "/compile")
    print(hdr)
    n = ver = swapped = within = slow = big = bigok = 0
    slower = []
    for c in meta["models"]:
        n += 1
        rp = os.path.join(outdir, "reports", c["name"] + ".json")
        s = {}
        if os.path.exists(rp):
            sgs = [x for x in json.load(open(rp)).get("subgraphs") or []
                   if x.get("class") in ("reduction", "elementwise")]
            s = sgs[0] if sgs else {}
        p = s.get("performance") or {}
        ok = s.get("decision") == "swapped"
        v = s.get("verification") or {}
        vtxt = "yes" if ok or v.get("status") == "verified" else (v.get("status") or "-")
        ver += vtxt == "yes"
        swapped += ok
        k = p.get("kernel_ms")
        t = tor.get(c["name"]) or {}
        gb = io_bytes(c) / k / 1e6 if k else None
        # The fraction of a same-size copy's bandwidth (the 1 GiB copy's
        # when the same-size copy was not timed).
        frac = (t["copy_ms"] / k if k and t.get("copy_ms") else
                gb / copy if gb and copy else None)
        rel = k / t["compile_ms"] if k and t.get("compile_ms") else None
        if rel is not None and ok:
            if rel <= 1.10:
                within += 1
            else:
                slow += 1
                slower.append((c["name"], rel))
        if io_bytes(c) >= 64 << 20 and ok and frac is not None:
            big += 1
            bigok += frac >= 0.9
        entry = (s.get("model") or "-").split("-", 1)[-1][:22]
        f = lambda x: "%.4f" % x if x else "-"
        print("%-40s %-9s %-6s %-22s %9s %9s %9s %9s %7s %6s %7s" % (
            c["name"][:40], s.get("decision", "-"), vtxt, entry, f(k), f(p.get("fallback_ms")),
            f(t.get("eager_ms")), f(t.get("compile_ms")), "%.0f" % gb if gb else "-",
            "%.0f%%" % (100 * frac) if frac else "-", "%.2f" % rel if rel else "-"))
    for c in meta["models"]:
        rp = os.path.join(outdir, "reports", c["name"] + ".json")
        sgs = [x for x in (json.load(open(rp)).get("subgraphs") or [] if os.path.exists(rp)
                           else []) if x.get("class") in ("reduction", "elementwise")]
        if sgs and sgs[0].get("decision") != "swapped":
            print("not swapped: %s: %s: %s" % (c["name"], sgs[0].get("reason"),
                                                (sgs[0].get("detail") or "")[:400]))
    print("\nmodels: %d; verified: %d; swapped: %d" % (n, ver, swapped))
    print("swapped and timed against torch.compile: within 10%%: %d, slower by more: %d"
          % (within, slow))
    for name, rel in slower:
        print("  slower: %s %.2fx torch.compile" % (name, rel))
    print("moving >= 64 MiB: %d swapped, %d at >= 90%% of the copy bandwidth" % (big, bigok))


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("gen", "torch", "summarize"):
        sys.exit(__doc__)
    if sys.argv[1] == "gen":
        cmd_gen(sys.argv[2], "--quick" in sys.argv)
    elif sys.argv[1] == "torch":
        cmd_torch(sys.argv[2])
    else:
        cmd_summarize(sys.argv[2])


if __name__ == "__main__":
    main()
