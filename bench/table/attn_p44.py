#!/usr/bin/env python3
"""attn_p44.py - KernelBench L3 P44's causal attention (the importer form of
kernels/table/attn_any.py: qkv [B, T, 3C] -> y [B*T, C], H = 8 heads of
D = 96, T = 512) in several kernel variants, staged on the build machine and
verified and timed on the GPU machine against torch.

  attn_p44.py stage STAGE [--bin BIN] [--cases h8_d96_b32_t512,...]
      (build machine) for each case of CASES (H, D, B, T): the P44 model at
      those sizes (attn_any.importer_example: gen_p44.py's) outlined, the
      attention subgraph's
      default lowering built (llm-fuse-reference --build: the verifier's
      reference, STAGE/<case>/<sg>/plan.json), each variant of VARIANTS
      rendered from attn_any.py's importer template with its generator
      parameters, instantiated at the subgraph's sizes and built
      (llm-fuse-build-kernel, sm_90) into STAGE/<case>/<sg>/<variant>/, and
      the pass's own answers: the kernel the shipped table gives the
      subgraph offline (verify=none) in exact mode (table/) and with tf32=1
      (table-tf32/), so what the pass would verify and swap is timed too.
      STAGE/<case>/<sg>/case.json names them (precision: exact or tf32).
  attn_p44.py bench STAGE [--json OUT] [--budget-ms 150]
      (GPU machine, torch) per case: qkv ~ N(0, 1); the float64 truth
      (causal softmax attention computed in float64); every staged kernel
      launched on it (output poisoned with NaN first), its error (normwise
      relative, and the verifier's rule as worst err/tol at the f32
      tolerance 1e-3 and the TF32 one for K = max(T, D), docs/verification.md) and
      its time (CUDA events, L2 flushed, bench/gpu/run.py's time_variants);
      torch's F.scaled_dot_product_attention(is_causal=True) in f32 on the
      same qkv, as nanoGPT calls it (head-split views in, the head merge
      .transpose(1, 2).contiguous() out) with allow_tf32 off and on, and
      sdpa alone on contiguous [B, H, T, D] heads. Prints one markdown
      table per case.

  attn_p44.py entry ENTRY.json H D B T OUT.mlir [--opt OPT]
      (build machine) a table entry's template (kernels/table/v1/*.json)
      instantiated at the importer form's sizes for H heads of D, batch B,
      length T (what the pass would build: the SIMT entry that answers when
      the tensor-core one fails, say); prints the subgraph's signature
      (lit_tests/table/attention-importer.test).

bench/table/attn-p44-prepare.sh and attn-p44-device.sh drive it.
"""
import argparse
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
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# (H, D, B, T): P44 at batch 32 and 128; an odd batch and length (no
# multiple of any tile: correctness of the masked edges); GPT-2 small's
# heads (the other importer entry).
CASES = [(8, 96, 32, 512), (8, 96, 128, 512), (8, 96, 9, 40), (12, 64, 32, 512)]

# (name, precision, generator, parameters over the template's defaults).
# "old" is gen_attention's kernel as shipped before (BM 32, 128 threads,
# 4 rows per thread; for D > 64 the tiles loaded after the barrier); cp*,
# r64*: exact f32 SIMT (cp.async pipeline, 64-query tiles, 8 rows per
# thread); x3*: exact f32 on tensor cores (3xTF32 mma.sync for QK^T and
# PV); t3*: TF32 (3xTF32 QK^T, one-term TF32 PV); tf*: one-term TF32
# throughout (rejected by the verifier: the scores' rounding error is
# amplified by the softmax). attn-p44-results.md has what each did.
VARIANTS = [
    ("old", "exact", "simt", dict(BM=32, pipe=None)),
    ("cp64r8", "exact", "simt", dict(BM=64, RPT=8, pipe="cpasync")),
    ("r64r8", "exact", "simt", dict(BM=64, RPT=8, pipe=None)),
    ("x3a4", "exact", "tf32", dict(NW=4, TERMS=3, PVTERMS=3, RND="add")),
    ("x3a8", "exact", "tf32", dict(NW=8, TERMS=3, PVTERMS=3, RND="add")),
    ("t3a4", "tf32", "tf32", dict(NW=4, TERMS=3, RND="add")),
    ("t3a8", "tf32", "tf32", dict(NW=8, TERMS=3, RND="add")),
    ("tf4a", "tf32", "tf32", dict(NW=4, RND="add")),
]
# the variants staged beyond P44's own sizes
SMALL = ["old", "cp64r8", "x3a4", "t3a4"]


def tf32_tol(k):
    """docs/verification.md, TF32 mode: rtol = atol_scale."""
    return min(2e-2, 10 * 2.0 ** -11 + k * 2.0 ** -24)


def outline(opt, model, work):
    rep = os.path.join(work, "outline.json")
    out = os.path.join(work, "outlined.mlir")
    subprocess.run([opt, "--llm-fuse-outline=remarks=false report=" + rep, model, "-o", out],
                   check=True, capture_output=True)
    gs = [g for g in json.load(open(rep))["subgraphs"] if g.get("class") == "attention-like"]
    assert len(gs) == 1, "no single attention subgraph in %s" % model
    return gs[0], out


def instantiate(text, sizes):
    """Every {{...}} placeholder of a template evaluated at the sizes
    {"S0": v, ...} (as llm_client/table.c does)."""
    def one(m):
        expr = re.sub(r"\bS\d+\b", lambda x: str(sizes[x.group(0)]), m.group(1))
        assert re.fullmatch(r"[0-9+\-*/() ]+", expr), expr
        return str(eval(expr.replace("/", "//")))
    return re.sub(r"\{\{(.*?)\}\}", one, text)


def render_variant(h, d, gen, params, g32, g):
    """The importer template (H = h, D = d) of a variant, rendered on the
    B = 32, T = 512 example's group g32 as build.py does, instantiated at
    group g's sizes."""
    import attn_any
    import gen_rows
    fn = gen_rows.gen_attention_tf32 if gen == "tf32" else gen_rows.gen_attention
    kind = "simt" if gen != "tf32" else "x3" if params.get("PVTERMS") == 3 else "tf32"
    text, _ = attn_any.render_importer(h, d, params=params, gen=fn, kind=kind)(g32)
    return instantiate(text, g["pattern_sizes"])


def build_kernel(tool, sig, text, out, chip="sm_90"):
    os.makedirs(out, exist_ok=True)
    src = os.path.join(out, "kernel.mlir")
    with open(src, "w") as f:
        f.write(text)
    r = subprocess.run([tool, "--signature", sig, "--chip", chip, "--out-dir", out, src],
                       capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {"ok": False, "message": r.stderr[-400:]}
    return j


def pass_answer(opt, model, work, tf32):
    """The kernel text the pass gets from the shipped table for the
    attention subgraph (offline, verify=none), and the entry's name."""
    tag = "tf32" if tf32 else "exact"
    empty = os.path.join(work, "empty")
    os.makedirs(empty, exist_ok=True)
    cache = os.path.join(work, "cache-" + tag)
    rep = os.path.join(work, "report-%s.json" % tag)
    opts = "offline verify=none arch=sm_90 remarks=false replay-dir=%s cache-dir=%s report=%s" % (
        empty, cache, rep)
    if tf32:
        opts += " tf32=1"
    env = dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent")
    subprocess.run([opt, "--llm-fuse=" + opts, model, "-o", os.devnull], env=env,
                   capture_output=True)
    s = [x for x in json.load(open(rep))["subgraphs"] if x.get("class") == "attention-like"][0]
    key = s.get("cache_key") or ""
    path = os.path.join(cache, "v1", key[:2], key + ".json")
    text = json.load(open(path)).get("kernel") if key and os.path.exists(path) else None
    return text, (s.get("model") or "-").split("/")[-1].replace(".json", ""), s.get("signature")


def cmd_stage(a):
    import attn_any
    opt = os.path.join(a.bin, "llm-fuse-opt")
    ref = os.path.join(a.bin, "llm-fuse-reference")
    tool = os.path.join(a.bin, "llm-fuse-build-kernel")
    bad = 0
    with tempfile.TemporaryDirectory() as work:
        def model(h, d, b, t):
            path = os.path.join(work, "m_h%d_d%d_b%d_t%d.mlir" % (h, d, b, t))
            with open(path, "w") as f:
                f.write(attn_any.importer_example(h, d, b, t))
            return path
        g32s = {}
        for h, d, b, t in CASES:
            if a.cases and "h%d_d%d_b%d_t%d" % (h, d, b, t) not in a.cases.split(","):
                continue
            c = h * d
            tag = "h%d_d%d_b%d_t%d" % (h, d, b, t)
            wb = os.path.join(work, tag)
            os.makedirs(wb)
            if (h, d) not in g32s:   # the template is rendered on the B 32, T 512 example
                os.makedirs(wb + "-g32")
                g32s[h, d] = outline(opt, model(h, d, 32, 512), wb + "-g32")[0]
            mpath = model(h, d, b, t)
            g, outlined = outline(opt, mpath, wb)
            bdir = os.path.join(a.stage, tag)
            subprocess.run([ref, "--build", "--chip", "sm_90", "--out-dir", bdir, outlined],
                           check=True, capture_output=True)
            for n in os.listdir(bdir):   # only the attention subgraph's plan
                if n != g["name"]:
                    shutil.rmtree(os.path.join(bdir, n))
            dd = os.path.join(bdir, g["name"])
            sig = "(tensor<%dx%dx%dxf32>) -> tensor<%dx%dxf32>" % (b, t, 3 * c, b * t, c)
            case = dict(name=g["name"], batch=b, T=t, H=h, D=d, signature=sig, variants={})
            p44 = (h, d, t) == (8, 96, 512) and b in (32, 128)
            cands = [(n, prec, render_variant(h, d, gen, prm, g32s[h, d], g),
                      dict(gen=gen, params=prm))
                     for n, prec, gen, prm in VARIANTS if p44 or n in SMALL]
            for tf32 in (False, True):
                text, entry, psig = pass_answer(opt, mpath, wb, tf32)
                assert psig in (None, sig), (psig, sig)
                if text is None:
                    print("attn-p44: %s: the pass gave no kernel (%s)"
                          % (tag, "tf32" if tf32 else "exact"))
                    bad += 1
                    continue
                # a precision "tf32" entry is named *-importer-tf32-*
                prec = "tf32" if "-importer-tf32-" in entry else "exact"
                cands.append(("table-tf32" if tf32 else "table", prec, text, dict(entry=entry)))
            for n, prec, text, info in cands:
                j = build_kernel(tool, sig, text, os.path.join(dd, n))
                same = [m for m, _, t2, _ in cands if t2.strip() == text.strip() and m != n]
                print("attn-p44: %-18s %-10s %-5s %s %s%s" % (
                    tag, n, prec, "built" if j.get("ok") else "FAILED " + str(j.get("kind")),
                    j.get("ptxas_info") or (j.get("message") or "")[:300],
                    " (= %s)" % ", ".join(same) if same else ""))
                bad += not j.get("ok")
                if j.get("ok"):
                    case["variants"][n] = dict(info, precision=prec, same_as=same,
                                               ptxas=j.get("ptxas_info"), block=j.get("block"),
                                               grid=j.get("grid"),
                                               smem=j.get("dynamic_shared_memory"))
            with open(os.path.join(dd, "case.json"), "w") as f:
                json.dump(case, f, indent=1)
    return 1 if bad else 0


# --------------------------------------------------------------- device --

def truth64(torch, qkv, h, d):
    """float64 causal attention of qkv [B, T, 3C] -> [B*T, C] (C = h d),
    per batch chunk (scores of one chunk only)."""
    b, t, c = qkv.shape[0], qkv.shape[1], h * d
    out = torch.empty((b * t, c), dtype=torch.float64, device=qkv.device)
    mask = torch.ones(t, t, dtype=torch.bool, device=qkv.device).tril()
    step = 8
    for i in range(0, b, step):
        x = qkv[i:i + step].double()
        n = x.shape[0]
        q, k, v = [x[..., j * c:(j + 1) * c].reshape(n, t, h, d).transpose(1, 2)
                   for j in range(3)]
        s = (q @ k.transpose(-1, -2)) * (1.0 / d ** 0.5)
        s = s.masked_fill(~mask, float("-inf")).softmax(-1)
        out[i * t:(i + n) * t] = (s @ v).transpose(1, 2).reshape(n * t, c)
    return out


def err_stats(torch, out, ref, k):
    import run as suite
    d = (out.double() - ref)
    e = {"norm_rel": (d.norm() / ref.norm()).item(), "nan": int(torch.isnan(out).sum().item())}
    ok, worst, nbad = suite.compare(out, ref)   # f32: rtol = atol_scale = 1e-3
    e.update(f32_err_over_tol=worst, f32_bad=nbad)
    tol = tf32_tol(k)
    r = ref
    fin = torch.isfinite(r)
    atol = tol * r[fin].abs().mean().item()
    e["tf32_err_over_tol"] = ((out.double() - r).abs() / (tol * r.abs() + atol)).max().item()
    return e


def cmd_bench(a):
    sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
    import torch
    import torch.nn.functional as F
    import run as suite
    rt = suite.Runtime(os.path.join(a.stage, "libllm_fuse_rt.so"))
    timer = suite.Timer()
    print("device %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    results = []
    for bdir in sorted(os.listdir(a.stage)):
        if not re.fullmatch(r"h\d+_d\d+_b\d+_t\d+", bdir):
            continue
        for sg in sorted(os.listdir(os.path.join(a.stage, bdir))):
            d = os.path.join(a.stage, bdir, sg)
            if not os.path.exists(os.path.join(d, "case.json")):
                continue
            case = json.load(open(os.path.join(d, "case.json")))
            b, T, H, D = case["batch"], case["T"], case["H"], case["D"]
            C = H * D
            gen = torch.Generator(device="cuda").manual_seed(1)
            qkv = torch.randn((b, T, 3 * C), generator=gen, device="cuda", dtype=torch.float32)
            ref = truth64(torch, qkv, H, D)
            res = dict(batch=b, T=T, H=H, D=D, sg=sg, variants=case["variants"], errors={}, times={},
                       failures={})
            fns, outs = {}, {}
            for n, info in case["variants"].items():
                try:
                    o = torch.full((b * T, C), float("nan"), device="cuda")
                    fn = suite.launch_built(rt, os.path.join(d, n), [qkv], [o])
                    fn()
                    torch.cuda.synchronize()
                    rt.check(n)
                    res["errors"][n] = err_stats(torch, o, ref, max(T, D))
                    fns["ours " + n], outs[n] = fn, o
                except Exception as ex:  # a row with the error, never a crash
                    res["failures"][n] = "%s: %s" % (type(ex).__name__, ex)
                    print("  b%d %s: %s" % (b, n, res["failures"][n]), flush=True)

            def nano(x):   # nanoGPT: views of the fused buffer in, head merge out
                q, k, v = [x[..., j * C:(j + 1) * C].view(b, T, H, D).transpose(1, 2)
                           for j in range(3)]
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return y.transpose(1, 2).contiguous().view(b * T, C)
            heads = [qkv[..., j * C:(j + 1) * C].reshape(b, T, H, D).transpose(1, 2).contiguous()
                     for j in range(3)]
            with torch.no_grad():
                for tf in (False, True):
                    torch.backends.cuda.matmul.allow_tf32 = tf
                    torch.backends.cudnn.allow_tf32 = tf
                    tag = "tf32" if tf else "f32"
                    try:
                        res["errors"]["torch sdpa " + tag] = err_stats(torch, nano(qkv), ref, max(T, D))
                        times = suite.time_variants(timer, {
                            "torch sdpa " + tag: lambda: nano(qkv),
                            "torch sdpa heads " + tag: lambda: F.scaled_dot_product_attention(
                                *heads, is_causal=True)}, a.budget_ms)
                        res["times"].update(times)
                    except Exception as ex:
                        res["failures"]["torch " + tag] = str(ex)[:300]
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                del ref
                torch.cuda.empty_cache()
                res["times"].update(suite.time_variants(timer, fns, a.budget_ms))
            rt.check("timing")
            results.append(res)
            print(table(res), flush=True)
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(results, f, indent=1)
            del outs, fns, qkv, heads
            torch.cuda.empty_cache()
    return 0


def table(res):
    b, T, H, D = res["batch"], res["T"], res["H"], res["D"]
    flops = 4.0 * b * H * (T * (T + 1) / 2) * D   # causal half of QK^T and PV
    t = res["times"]
    base = {k: t.get(k, {}).get("median") for k in ("torch sdpa f32", "torch sdpa tf32")}
    old = t.get("ours old", {}).get("median")
    lines = ["", "B = %d (T %d, H %d, D %d; %.1f GFLOP causal)" % (b, T, H, D, flops / 1e9),
             "| kernel | precision | ms | TFLOP/s | x old | x sdpa f32 | x sdpa tf32 | "
             "norm rel err | err/tol f32 | err/tol tf32 | regs, smem, block |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    names = [k for k in t if k.startswith("ours ")] + [k for k in t if k.startswith("torch")]
    for k in names:
        ms = t[k]["median"]
        n = k[5:] if k.startswith("ours ") else k
        info = res["variants"].get(n, {})
        e = res["errors"].get(n) or res["errors"].get(k.replace(" heads", "")) or {}
        regs = re.search(r"Used (\d+) registers", info.get("ptxas") or "")
        spill = re.search(r"(\d+) bytes spill stores", info.get("ptxas") or "")
        f = lambda x: "%.3g" % x if isinstance(x, float) else "-"
        lines.append("| %s%s | %s | %.4f | %.1f | %s | %s | %s | %s | %s | %s | %s |" % (
            n, " (%s)" % info["entry"] if info.get("entry") else "",
            info.get("precision", "tf32" if "tf32" in k else "f32"), ms, flops / ms / 1e9,
            "%.2f" % (old / ms) if old else "-",
            "%.2f" % (base["torch sdpa f32"] / ms) if base["torch sdpa f32"] else "-",
            "%.2f" % (base["torch sdpa tf32"] / ms) if base["torch sdpa tf32"] else "-",
            f(e.get("norm_rel")), f(e.get("f32_err_over_tol")), f(e.get("tf32_err_over_tol")),
            "%s%s, %s, %s" % (regs.group(1) if regs else "-",
                              "+spill %s B" % spill.group(1) if spill and spill.group(1) != "0"
                              else "", info.get("smem", "-"), (info.get("block") or ["-"])[0])
            if info else ""))
    for n, why in res["failures"].items():
        lines.append("failed: %s: %s" % (n, why[:300]))
    return "\n".join(lines)


def cmd_entry(a):
    import attn_any
    with tempfile.TemporaryDirectory() as work:
        src = os.path.join(work, "m.mlir")
        with open(src, "w") as f:
            f.write(attn_any.importer_example(a.H, a.D, a.B, a.T))
        g, _ = outline(a.opt, src, work)
    text = instantiate(read_entry(a.entry)["template"], g["pattern_sizes"])
    with open(a.out, "w") as f:
        f.write(text)
    c = a.H * a.D
    print("(tensor<%dx%dx%dxf32>) -> tensor<%dx%dxf32>" % (a.B, a.T, 3 * c, a.B * a.T, c))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("entry")
    s.add_argument("entry")
    for k in ("H", "D", "B", "T"):
        s.add_argument(k, type=int)
    s.add_argument("out")
    s.add_argument("--opt", default=os.path.join(ROOT, "build", "bin", "llm-fuse-opt"))
    s = sub.add_parser("stage")
    s.add_argument("stage")
    s.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    s.add_argument("--cases", help="h<H>_d<D>_b<B>_t<T>,... (default: all of CASES)")
    s = sub.add_parser("bench")
    s.add_argument("stage")
    s.add_argument("--json")
    s.add_argument("--budget-ms", type=float, default=150.0)
    a = ap.parse_args()
    return {"stage": cmd_stage, "bench": cmd_bench, "entry": cmd_entry}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
