#!/usr/bin/env python3
"""attn_bench.py - the causal-attention templates (kernels/table/attn_any.py)
at many sequence lengths, head counts and head sizes: built offline, or
verified and timed on the GPU against the default lowering, torch eager and
torch.compile (torch.nn.functional.scaled_dot_product_attention).

  attn_bench.py model S H D OUT.mlir [DTYPE]
      One attention model: the attention-like subgraph of
      examples/minigpt_block.mlir rewritten to S x H x D (attn_any.py's
      example_text; DTYPE f32, the default, bf16 or f16: the whole example
      rewritten to it by heldout.py's dtype_rewrite), outlined, and made the
      model's only function. The pass outlines it again to the same
      subgraph (same fingerprint and pattern key as inside the whole block).
  attn_bench.py gen OUTDIR [--quick] [--grid] [--dtype DT[,DT...]]
      OUTDIR/models/*.mlir and OUTDIR/models.json: the GPU cases (CASES;
      --quick fewer), or with --grid the offline grid S in {1, 7, 100,
      1000, 4097} x H in {1, 12, 25} x every head size of attn_any.py; for
      each element type of --dtype (default: $ATTN_DTYPE, else f32; e.g.
      `--dtype bf16,f16`; a 16-bit model's name ends in _bf16 / _f16).
      bench/table/attn-device.sh passes $ATTN_DTYPE through the environment:
      ATTN_DTYPE=bf16 bash bench/table/attn-device.sh OUT.
  attn_bench.py offline OUTDIR [--opt PATH]
      (no GPU needed) compiles every model with the pass, verification off
      (LLM_FUSE_LIBCUDA=/nonexistent), as bench/table/heldout.py's
      `offline` does, and prints per model the table entry instantiated,
      whether each variant built and its build time.
  attn_bench.py torch OUTDIR
      (GPU machine) times the same math in torch: eager and torch.compile
      of sdpa(causal) including the S,H,D <-> H,S,D transposes; sdpa alone
      on pre-transposed inputs (all in the model's element type); and flash
      attention in bf16 for scale.
      OUTDIR/torch.json.
  attn_bench.py summarize OUTDIR
      One line per model from the pass's reports (OUTDIR/reports) and
      OUTDIR/torch.json: decision, verified, the entry used, ours /
      fallback / eager / compile ms, ours over torch.compile.

bench/table/attn-device.sh runs gen, the pass, torch and summarize on the
GPU machine.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, HERE)

# (S, H, D) on the GPU: the handwritten kernel's own size (the replay set
# answers it: the reference point), held-out sizes of every form and head
# size, odd and long sequences.
CASES = [
    (1024, 12, 64), (1000, 12, 64), (4097, 12, 64), (2048, 16, 64), (8192, 8, 64),
    (100, 25, 64), (7, 12, 64), (1, 12, 64), (1, 25, 128), (1000, 1, 64), (64, 12, 64),
    (12, 12, 64), (1000, 12, 32), (4096, 16, 32), (777, 20, 96), (4097, 8, 96),
    (1000, 12, 128), (4096, 16, 128), (2048, 32, 128),
]
QUICK = [(1024, 12, 64), (1000, 12, 64), (4097, 12, 64), (1, 12, 64), (1000, 1, 64),
         (1000, 12, 32), (777, 20, 96), (4096, 16, 128)]


def default_opt():
    return shutil.which("llm-fuse-opt") or os.path.join(ROOT, "build", "bin", "llm-fuse-opt")


def attn_model(s, h, d, opt=None, dtype="f32"):
    """(model text, outline group) of the attention subgraph at s x h x d,
    element type dtype."""
    import attn_any
    opt = opt or default_opt()
    with tempfile.TemporaryDirectory() as td:
        src = os.path.join(td, "m.mlir")
        with open(src, "w") as f:
            f.write(attn_any.example_text(s, h, d, dtype))
        rep, out = os.path.join(td, "r.json"), os.path.join(td, "o.mlir")
        subprocess.run([opt, "--llm-fuse-outline=remarks=false report=" + rep, src, "-o", out],
                       check=True, capture_output=True)
        gs = [g for g in json.load(open(rep))["subgraphs"] if g["class"] == "attention-like"]
        text = open(out).read()
    assert len(gs) == 1, "no single attention subgraph at %d x %d x %d" % (s, h, d)
    g = gs[0]
    head = "func.func private @%s(" % g["name"]
    i = text.index(head)
    j = text.index("\n  }\n", i)
    fn = text[i:j + 4].replace(head, "func.func @attention(")
    fn = re.sub(r" attributes \{llm_fuse[^\n]*\} \{\n", " {\n", fn, count=1)
    aliases = "".join(l + "\n" for l in text.split("\n") if l.startswith("#"))
    return (aliases + "// attn_bench.py: causal attention, S = %d, H = %d, D = %d, %s\n"
            "module {\n%s}\n" % (s, h, d, dtype, fn)), g


def name_of(s, h, d, dtype="f32"):
    return "attn_s%d_h%d_d%d" % (s, h, d) + ("" if dtype == "f32" else "_" + dtype)


def cmd_gen(outdir, quick, grid, dtypes=("f32",)):
    import attn_any
    if grid:
        cases = [(s, h, d) for d in attn_any.HEAD_SIZES for h in (1, 12, 25)
                 for s in (1, 7, 100, 1000, 4097)]
    else:
        cases = QUICK if quick else CASES
    md = os.path.join(outdir, "models")
    os.makedirs(md, exist_ok=True)
    models = []
    for dt in dtypes:
        for s, h, d in cases:
            text, g = attn_model(s, h, d, dtype=dt)
            n = name_of(s, h, d, dt)
            with open(os.path.join(md, n + ".mlir"), "w") as f:
                f.write(text)
            models.append(dict(name=n, S=s, H=h, D=d, dtype=dt, fingerprint=g["fingerprint"],
                               pattern=g["pattern"], pattern_sizes=g["pattern_sizes"]))
    with open(os.path.join(outdir, "models.json"), "w") as f:
        json.dump(dict(schema="llm-fuse-attn-bench/1", models=models), f, indent=1)
    print("%d model(s) in %s" % (len(models), md))


def subgraph(outdir, name):
    rp = os.path.join(outdir, "reports", name + ".json")
    if not os.path.exists(rp):
        return {}
    sgs = [x for x in json.load(open(rp)).get("subgraphs") or []
           if x.get("class") == "attention-like"]
    return sgs[0] if sgs else {}


def cmd_offline(outdir, opt):
    from heldout import compile_one, tool_env
    meta = json.load(open(os.path.join(outdir, "models.json")))
    for d in ("reports", "logs"):
        os.makedirs(os.path.join(outdir, d), exist_ok=True)
    shutil.rmtree(os.path.join(outdir, "cache"), ignore_errors=True)
    env = tool_env(dict(LLM_FUSE_LIBCUDA="/nonexistent"))
    print("%-26s %-40s %-8s %s" % ("model", "entry", "built", "variant: outcome build ms"))
    nb = nm = 0
    times = []
    for m in meta["models"]:
        r = compile_one(opt, env, outdir, m, "", 300)
        s = subgraph(outdir, m["name"])
        log = s.get("attempt_log") or []
        built = [a for a in log if a.get("outcome") == "built"]
        times += [a["build_ms"] for a in built]
        ok = bool(built) and r["rc"] == 0
        nm += 1
        nb += ok
        entry = (s.get("model") or "-").split("/")[-1].replace(".json", "")
        print("%-26s %-40s %-8s %s" % (m["name"], entry[:40], "yes" if ok else "NO",
                                        "; ".join("%s: %s %s" % (a.get("variant") or "-",
                                                                  a.get("outcome"),
                                                                  a.get("build_ms"))
                                                  for a in log) or (s.get("detail") or "")[:200]),
              flush=True)
    times.sort()
    print("\n%d of %d model(s) built from the table" % (nb, nm))
    if times:
        print("build ms per variant: median %d, min %d, max %d (%d builds)"
              % (times[len(times) // 2], times[0], times[-1], len(times)))
    return 0 if nb == nm else 1


def torch_fns(torch, d):
    F = torch.nn.functional

    def attn(q, k, v):  # S, H, D in and out, as the subgraph
        o = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1),
                                           v.transpose(0, 1), is_causal=True)
        return o.transpose(0, 1).contiguous()

    def core(q, k, v):  # H, S, D
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return attn, core


def cmd_torch(outdir):
    import torch
    from rows_bench import bench
    meta = json.load(open(os.path.join(outdir, "models.json")))
    torch.backends.cuda.matmul.allow_tf32 = False
    res = {}
    for c in meta["models"]:
        s, h, d = c["S"], c["H"], c["D"]
        tdt = {"f32": torch.float32, "bf16": torch.bfloat16,
               "f16": torch.float16}[c.get("dtype", "f32")]
        try:
            qkv = [(torch.rand((s, h, d), device="cuda") * 2 - 1).to(tdt) for _ in range(3)]
            attn, core = torch_fns(torch, d)
            e = bench(attn, qkv, torch)
            k = bench(torch.compile(attn), qkv, torch)
            hsd = [x.transpose(0, 1).contiguous() for x in qkv]
            sd = bench(core, hsd, torch)
            fl = bench(core, [x.bfloat16() for x in hsd], torch)
            res[c["name"]] = dict(eager_ms=e, compile_ms=k, sdpa_ms=sd, flash_bf16_ms=fl)
        except Exception as ex:  # a row with the error, never a crash
            res[c["name"]] = dict(error=str(ex)[:200])
        print(c["name"], res[c["name"]], flush=True)
        torch._dynamo.reset()
        with open(os.path.join(outdir, "torch.json"), "w") as f:
            json.dump(res, f, indent=1)


def cmd_summarize(outdir):
    meta = json.load(open(os.path.join(outdir, "models.json")))
    tj = os.path.join(outdir, "torch.json")
    tor = json.load(open(tj)) if os.path.exists(tj) else {}
    print("%-24s %-9s %-6s %-20s %9s %9s %9s %9s %9s %9s %7s" % (
        "model", "decision", "verif", "entry", "ours ms", "fallback", "eager", "compile",
        "sdpa", "bf16 fa", "/compile"))
    n = ver = swapped = 0
    for c in meta["models"]:
        n += 1
        s = subgraph(outdir, c["name"])
        p = s.get("performance") or {}
        ok = s.get("decision") == "swapped"
        v = s.get("verification") or {}
        vtxt = "yes" if ok or v.get("status") == "verified" else (v.get("status") or "-")
        ver += vtxt == "yes"
        swapped += ok
        k = p.get("kernel_ms")
        t = tor.get(c["name"]) or {}
        rel = k / t["compile_ms"] if k and t.get("compile_ms") else None
        entry = (s.get("model") or s.get("provider") or "-").split("/")[-1]
        entry = entry.replace(".json", "").replace("zz-any-attention-", "")[-20:]
        f = lambda x: "%.4f" % x if x else "-"
        print("%-24s %-9s %-6s %-20s %9s %9s %9s %9s %9s %9s %7s" % (
            c["name"][:24], s.get("decision", "-"), vtxt, entry, f(k),
            f(p.get("fallback_ms")), f(t.get("eager_ms")), f(t.get("compile_ms")),
            f(t.get("sdpa_ms")), f(t.get("flash_bf16_ms")), "%.2f" % rel if rel else "-"))
    for c in meta["models"]:
        s = subgraph(outdir, c["name"])
        if s and s.get("decision") != "swapped":
            print("not swapped: %s: %s: %s" % (c["name"], s.get("reason"),
                                                (s.get("detail") or "")[:400]))
    print("\nmodels: %d; verified: %d; swapped: %d" % (n, ver, swapped))


def main():
    a = sys.argv[1:]
    if a[:1] == ["model"] and len(a) in (5, 6):
        text, _ = attn_model(int(a[1]), int(a[2]), int(a[3]),
                             dtype=a[5] if len(a) == 6 else "f32")
        with open(a[4], "w") as f:
            f.write(text)
        return 0
    if len(a) < 2 or a[0] not in ("gen", "offline", "torch", "summarize"):
        sys.exit(__doc__)
    if a[0] == "gen":
        dts = a[a.index("--dtype") + 1] if "--dtype" in a else os.environ.get("ATTN_DTYPE")
        dts = [x for x in (dts or "f32").split(",") if x]
        assert all(x in ("f32", "bf16", "f16") for x in dts), dts
        cmd_gen(a[1], "--quick" in a, "--grid" in a, dts)
    elif a[0] == "offline":
        opt = a[a.index("--opt") + 1] if "--opt" in a else default_opt()
        return cmd_offline(a[1], opt)
    elif a[0] == "torch":
        cmd_torch(a[1])
    else:
        cmd_summarize(a[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
