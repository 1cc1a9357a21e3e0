#!/usr/bin/env python3
"""attn16_bench.py - the 16-bit causal-attention entries (kernels/table/
attn_any.py's "-0mma" entries: gen_rows.py's gen_attention_mma16 on
mma.sync, and the SIMT entries after them) at several S x H x D, bf16 and
f16: verified and timed side by side with torch eager and torch.compile.

    python3 bench/table/attn16_bench.py prepare STAGE BIN NEW_TABLE OLD_TABLE
        (bench/table/attn16-prepare.sh) on the build machine: per case the
        attention subgraph alone (attn_bench.py's model, or held-out seed
        23's 029 cut down to its attention function), outlined; its default
        lowering (the verifier's reference, with its opmath truth:
        STAGE/<case>/<sg>/plan.json); the entry the pass takes offline
        (verify=none, sm_90a, no replay set) from NEW_TABLE ("new") and
        from OLD_TABLE ("old": the table before the change), each built for
        sm_90a (STAGE/<case>/<sg>/v-new0, v-old0); the subgraph translated
        to torch (bench/table/torch_ref.py, what the held-out harness times
        for torch eager and torch.compile). STAGE/cases.json lists them.
    python3 bench/table/attn16_bench.py newtable OPT SRC_TABLE DST_TABLE
        DST_TABLE: a copy of SRC_TABLE (a folder holding v1/) plus attn_any.py's
        "-0mma" entries (attn_any.MMA16_ENTRIES turned on), by build.py's
        code (attn16-prepare.sh's NEW_TABLE).
    python3 bench/table/attn16_bench.py run STAGE OUT VDIR
        (bench/table/attn16-device.sh, after llm-fuse-verify's verdicts in
        VDIR) on the GPU: per case, inputs uniform in [-1, 1); every
        verified variant launched on NaN-poisoned outputs (twice) and
        compared, by torch_time.py's rule, with the f32 truth (sdpa in f32
        on the widened inputs, the IR's scale); then ours (new, old), torch
        eager and torch.compile of the translation, and torch.compile of
        sdpa (causal, with the S,H,D <-> H,S,D transposes: torch's flash
        attention) timed by bench/gpu/run.py's method (L2 flush, events,
        interleaved rounds, medians), once with its PadTimer (200 us of GPU
        sleep before each sample, as the held-out harness) and once plain.
        OUT/attn16.json; the table last.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))

HELDOUT029 = ".device/heldout23/models/029_minigpt_block_r1024_d1600_f6400_heads25_bf16.mlir"
# (case, source, timed by torch.compile): source "heldout029" or (S, H, D, dtype)
CASES = [
    ("s23-029_1024x25x64_bf16", "heldout029", True),
    ("1000x12x64_f16", (1000, 12, 64, "f16"), True),
    ("777x20x128_bf16", (777, 20, 128, "bf16"), True),
    ("2048x16x96_f16", (2048, 16, 96, "f16"), True),
    ("4097x8x32_bf16", (4097, 8, 32, "bf16"), True),
    ("4096x16x128_bf16", (4096, 16, 128, "bf16"), True),
    ("7x12x64_bf16", (7, 12, 64, "bf16"), False),
    ("1000x1x64_bf16", (1000, 1, 64, "bf16"), False),
    ("1x12x64_f16", (1, 12, 64, "f16"), False),
    ("100x64x64_bf16", (100, 64, 64, "bf16"), False),
    ("64x12x64_f16", (64, 12, 64, "f16"), False),
    ("37x12x32_f16", (37, 12, 32, "f16"), False),
    ("200x8x64_bf16", (200, 8, 64, "bf16"), False),
    ("69x1x96_f16", (69, 1, 96, "f16"), False),
    # the other shape forms (attn_any.py FORMS / FORMS8) and D x dtype pairs
    ("12x12x64_bf16", (12, 12, 64, "bf16"), False),
    ("8x12x64_f16", (8, 12, 64, "f16"), False),
    ("1x1x64_bf16", (1, 1, 64, "bf16"), False),
    ("1x8x64_bf16", (1, 8, 64, "bf16"), False),
    ("96x7x96_bf16", (96, 7, 96, "bf16"), False),
    ("300x12x128_f16", (300, 12, 128, "f16"), False),
    ("130x12x32_bf16", (130, 12, 32, "bf16"), False),
]


def run_tool(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("attn16_bench: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-800:]))
    return r


def attention_only(opt, text):
    """(model text, outline group) of a model's one attention-like
    subgraph, made the model's only function (attn_bench.py's way)."""
    import tempfile
    with tempfile.TemporaryDirectory() as td:
        src = os.path.join(td, "m.mlir")
        open(src, "w").write(text)
        rep, out = os.path.join(td, "r.json"), os.path.join(td, "o.mlir")
        run_tool([opt, "--llm-fuse-outline=remarks=false report=" + rep, src, "-o", out])
        gs = [g for g in json.load(open(rep))["subgraphs"] if g["class"] == "attention-like"]
        otext = open(out).read()
    assert len(gs) == 1, len(gs)
    g = gs[0]
    head = "func.func private @%s(" % g["name"]
    i = otext.index(head)
    j = otext.index("\n  }\n", i)
    fn = otext[i:j + 4].replace(head, "func.func @attention(")
    fn = re.sub(r" attributes \{llm_fuse[^\n]*\} \{\n", " {\n", fn, count=1)
    aliases = "".join(l + "\n" for l in otext.split("\n") if l.startswith("#"))
    return aliases + "module {\n%s}\n" % fn, g


# exploration variants of the timed cases: attn_any.MMA16 overrides
# (session 29: NW=8 was 1.2x slower than NW=4 at 1000 x 12 x 64 f16, the
# same at 2048 x 16 x 96 f16; MINB=4 (128 registers, small spills) 1.03x
# slower at 1000 x 1 x 64 bf16; PV_TERMS=1, P rounded once: bf16 rejected
# at long S, see gen_rows.py gen_attention_mma16)
EXTRA = [dict(PV_TERMS=1)]


def extra_templates(opt, ename):
    """[(label, template)]: the attn_any entry `ename` rendered with each
    EXTRA parameter set"""
    import attn_any
    import build
    saved = dict(attn_any.MMA16)
    attn_any.MMA16_ENTRIES = True
    out = []
    try:
        for ov in EXTRA:
            attn_any.MMA16.clear()
            attn_any.MMA16.update(saved, **ov)
            for t in attn_any.templates():
                if t["name"] == ename:
                    g = t["pick"](build.outline_text(opt, t["example"]))
                    out.append((" ".join("%s=%s" % kv for kv in sorted(ov.items())),
                                t["render"](g)[0]))
    finally:
        attn_any.MMA16.clear()
        attn_any.MMA16.update(saved)
    return out


def newtable(opt, src, dst):
    """dst: a copy of the table folder src (holding v1/) with attn_any.py's
    "-0mma" entries written into it (attn_any.MMA16_ENTRIES on), by
    build.py's own code; the other entries as in src."""
    import attn_any
    import build
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(src, "v1"), os.path.join(dst, "v1"))
    attn_any.MMA16_ENTRIES = True
    n = 0
    for name, text in build.spec_entries(opt, attn_any):
        path = os.path.join(dst, "v1", name + ".gz")
        old = build.read_entry_text(path) if os.path.exists(path) else None
        if old != text:
            assert "-0mma" in name, "attn_any.py changed an entry other than -0mma: " + name
            build.write_entry_gz(path, text)
            n += 1
    print("newtable: %d -0mma entries written into %s" % (n, dst))
    return 0


def prepare(stage, binp, new_table, old_table):
    import attn_bench
    import torch_ref
    from entry_io import read_entry
    from skinny_stage import bind_sizes, build_kernel, variants
    opt = os.path.join(binp, "llm-fuse-opt")
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    only = os.environ.get("ATTN16_ONLY")
    cases, bad = [], 0
    for name, src, timed in CASES:
        if only and not re.search(only, name):
            continue
        d = os.path.join(stage, name)
        os.makedirs(d, exist_ok=True)
        if src == "heldout029":
            text, g = attention_only(opt, open(os.path.join(ROOT, HELDOUT029)).read())
            shp = g["inputs"][0]["shape"]
            S, H, D, dt = shp[0], shp[1], shp[2], g["inputs"][0]["dtype"]
        else:
            S, H, D, dt = src
            text, g = attn_bench.attn_model(S, H, D, opt, dt)
        path = os.path.join(d, "model.mlir")
        open(path, "w").write(text)
        outl = run_tool([opt, "--llm-fuse-outline=remarks=false", path]).stdout
        open(os.path.join(d, "outlined.mlir"), "w").write(outl)
        run_tool([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90",
                  "--out-dir", d, os.path.join(d, "outlined.mlir")])
        gtext = torch_ref.prepare(opt, outl)
        case = dict(case=name, S=S, H=H, D=D, dtype=dt, timed=timed, entries={}, variants={})
        for tag, table in (("new", new_table), ("old", old_table)):
            rep = os.path.join(d, "report.%s.json" % tag)
            cache = os.path.join(d, "cache-" + tag)
            shutil.rmtree(cache, ignore_errors=True)
            run_tool([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
                      "pattern-table=%s cache-dir=%s report=%s" % (empty, table, cache, rep),
                      path, "-o", os.devnull], env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
            shutil.rmtree(cache, ignore_errors=True)
            s = [x for x in json.load(open(rep))["subgraphs"] if x["class"] == "attention-like"][0]
            case["sg"], case["signature"] = s["name"], s["signature"]
            ent = s.get("model", "")
            case["entries"][tag] = ent
            if "/" not in ent:
                print("prepare: %s %s: no table entry (%s)" % (name, tag, ent))
                bad += 1
                continue
            tmpl = read_entry(os.path.join(table, "v1", ent.split("/", 1)[1]))["template"]
            for i, (label, t) in enumerate(variants(tmpl, bind_sizes(tmpl, s["signature"]))):
                vd = os.path.join(d, s["name"], "v-%s%d" % (tag, i))
                t0 = time.time()
                j = build_kernel(binp, vd, t, s["signature"], keep_failed=False)
                print("prepare: %-24s %s %-4s v%d %-40s %s grid %s %s [%.2f s]" % (
                    name, s["name"], tag, i, ent.split("/", 1)[1][17:-5], "built" if j.get("ok")
                    else "FAILED", j.get("grid"), (j.get("ptxas_info") or j.get("message", ""))[:90],
                    time.time() - t0), flush=True)
                if j.get("ok"):
                    case["variants"]["%s%d" % (tag, i)] = label
                else:
                    bad += 1
        if timed and "0mma" in case["entries"].get("new", ""):
            # exploration (not entries): the new entry rendered with other
            # gen_attention_mma16 parameters (EXTRA), tags x<i>
            ename = case["entries"]["new"].split("/", 1)[1][17:-5]
            for i, (label, t) in enumerate(extra_templates(opt, ename)):
                t = variants(t, bind_sizes(t, case["signature"]))[0][1]
                vd = os.path.join(d, case["sg"], "v-x%d" % i)
                j = build_kernel(binp, vd, t, case["signature"], keep_failed=False)
                print("prepare: %-24s %s x%d %-40s %s grid %s %s" % (
                    name, case["sg"], i, label, "built" if j.get("ok") else "FAILED",
                    j.get("grid"), (j.get("ptxas_info") or j.get("message", ""))[:90]), flush=True)
                if j.get("ok"):
                    case["variants"]["x%d" % i] = label
        src_t, sig_t = torch_ref.translate(gtext, case["sg"])
        case["torch"] = dict(source=src_t, args=sig_t["args"], results=sig_t["results"])
        cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)
    return 1 if bad else 0


# ------------------------------------------------------------------ GPU ---

def compare(torch, out, ref):
    """torch_time.py's rule (gemm16_bench.py's compare): (ok, worst)"""
    rtol = {torch.bfloat16: 2e-2, torch.float16: 1e-2}.get(out.dtype, 1e-3)
    r = ref.reshape(-1).double()
    c = out.reshape(-1).double()
    fin = torch.isfinite(r)
    atol = rtol * (r[fin].abs().mean().item() if fin.any() else 0.0)
    bound = rtol * r.abs() + atol
    diff = (c - r).abs()
    same = (c == r) | (torch.isnan(c) & torch.isnan(r))
    ratio = torch.where(same, torch.zeros_like(diff), diff / bound)
    worst = ratio.nan_to_num(nan=float("inf")).max().item() if ratio.numel() else 0.0
    return worst <= 1.0, worst


def verdict(vdir, c, tag):
    try:
        v = json.load(open(os.path.join(vdir, "%s.%s.v-%s.json" % (c["case"], c["sg"], tag))))
    except (OSError, ValueError) as e:
        return False, "no verdict (%s)" % e
    return bool(v.get("accepted")), v.get("reason", "")


def ir_scale(d, dt):
    import attn_any
    return float(attn_any.scale_value(d, dt))


def run(stage, out, vdir):
    sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
    import importlib.util
    import tempfile
    import run as suite  # bench/gpu/run.py
    import torch
    F = torch.nn.functional
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cases = json.load(open(os.path.join(stage, "cases.json")))
    rt = suite.Runtime(os.path.join(stage, "libllm_fuse_rt.so"))
    prop = torch.cuda.get_device_properties(0)
    print("device %s (%d SMs), torch %s" % (prop.name, prop.multi_processor_count,
                                             torch.__version__), flush=True)
    timers = [("pad200", suite.PadTimer(200.0)), ("plain", suite.Timer())]
    budget = float(os.environ.get("ATTN16_BUDGET_MS", "100"))
    compile_until = float(os.environ.get("ATTN16_COMPILE_UNTIL_S", "80"))
    t_start = time.time()
    rows = []
    for ci, c in enumerate(cases):
        label = c["case"]
        row = dict(case=c["case"], sg=c["sg"], signature=c["signature"], entries=c["entries"],
                   variants={}, errors={})
        rows.append(row)
        try:
            mpath = os.path.join(tempfile.gettempdir(), "lf_attn16_%s.py" % c["case"])
            open(mpath, "w").write("import torch\n" + c["torch"]["source"])
            spec = importlib.util.spec_from_file_location("lf_a16_%d" % ci, mpath)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            fn = mod.subgraph
            g = torch.Generator(device="cuda").manual_seed(2000 + ci)
            ins = [(torch.rand(shape, generator=g, dtype=torch.float32, device="cuda") * 2 - 1)
                   .to(suite.DT[elt]) for shape, elt in c["torch"]["args"]]
            (oshape, oelt), = c["torch"]["results"]
            S, H, D = c["S"], c["H"], c["D"]
            sc = ir_scale(D, c["dtype"])

            def hsd(x, t=None):
                x = x.reshape(S, H, D).transpose(0, 1)
                return x if t is None else x.to(t)
            with torch.no_grad():
                truth = F.scaled_dot_product_attention(
                    *[hsd(x, torch.float32) for x in ins], is_causal=True, scale=sc)
                truth = truth.transpose(0, 1).reshape(oshape).contiguous()
                eager_out = fn(*ins)[0]
            torch.cuda.synchronize()
            ok_e, worst_e = compare(torch, eager_out, truth)
            row["eager_vs_truth"] = worst_e
            variants = {}
            for tag in c["variants"]:
                accepted, reason = verdict(vdir, c, tag)
                row["variants"][tag] = dict(label=c["variants"][tag], verified=accepted,
                                            reason=reason)
                if not accepted:
                    continue
                try:
                    o = torch.full(oshape, float("nan"), dtype=suite.DT[oelt], device="cuda")
                    f = suite.launch_built(rt, os.path.join(stage, c["case"], c["sg"], "v-" + tag),
                                           ins, [o])
                    f()
                    torch.cuda.synchronize()
                    rt.check(tag)
                    ok, worst = compare(torch, o, truth)
                    o.fill_(float("nan"))
                    f()
                    torch.cuda.synchronize()
                    ok2, _ = compare(torch, o, truth)
                    row["variants"][tag].update(check=ok and ok2, worst=worst)
                    if ok and ok2:
                        variants[tag] = f
                    else:
                        print("  %s %s: WRONG against the f32 truth (worst %.3g)"
                              % (label, tag, worst), flush=True)
                except Exception as e:  # noqa: BLE001
                    row["errors"][tag] = "%s: %s" % (type(e).__name__, str(e)[:300])
                    print("  %s %s: %s" % (label, tag, row["errors"][tag]), flush=True)
            variants["eager"] = lambda: fn(*ins)
            if c.get("timed") and time.time() - t_start < compile_until:
                t0 = time.time()
                try:
                    cf = torch.compile(fn)
                    with torch.no_grad():
                        co = cf(*ins)[0]
                        cf(*ins)
                    torch.cuda.synchronize()
                    row["compile_vs_truth"] = compare(torch, co, truth)[1]
                    variants["compile"] = lambda: cf(*ins)
                    row["compile_s"] = round(time.time() - t0, 1)
                except Exception as e:  # noqa: BLE001
                    row["errors"]["compile"] = "%s: %s" % (type(e).__name__, str(e)[:300])

                def sdpa(q, k, v):
                    o = F.scaled_dot_product_attention(hsd(q), hsd(k), hsd(v), is_causal=True,
                                                       scale=sc)
                    return o.transpose(0, 1).reshape(oshape).contiguous()
                try:
                    cs = torch.compile(sdpa)
                    with torch.no_grad():
                        so = cs(*ins)
                        cs(*ins)
                    torch.cuda.synchronize()
                    row["sdpa_vs_truth"] = compare(torch, so, truth)[1]
                    variants["sdpa_compile"] = lambda: cs(*ins)
                except Exception as e:  # noqa: BLE001
                    row["errors"]["sdpa_compile"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            for tname, timer in timers:
                with torch.no_grad():
                    st = suite.time_variants(timer, variants, budget)
                rt.check("timing")
                for tag, s in st.items():
                    row["variants"].setdefault(tag, {})["ms_" + tname] = s["median"]
                print("%s (%s): %s" % (label, tname, ", ".join(
                    "%s %.4f" % (k, v["median"]) for k, v in st.items())), flush=True)
            del ins, truth, variants
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001
            row["errors"]["case"] = "%s: %s" % (type(e).__name__, str(e)[:400])
            print("  %s: %s" % (label, row["errors"]["case"]), flush=True)
        json.dump(dict(device=prop.name, torch=torch.__version__,
                       date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), rows=rows),
                  open(os.path.join(out, "attn16.json"), "w"), indent=1)
    print_table(rows)
    return 0


def print_table(rows):
    print()
    print("| case | new entry | verified new/old/x0/x1 | new ms | old ms | x0 ms | x1 ms | eager ms | "
          "compile ms | sdpa compile ms | new/compile | old/compile | new/sdpa | worst err/tol new, "
          "old, eager, compile |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        v = r["variants"]
        for tname in ("pad200", "plain"):
            k = "ms_" + tname

            def ms(tag):
                return v.get(tag, {}).get(k)

            def f(x):
                return "%.4f" % x if x else "-"

            def ratio(a, b):
                return "%.2f" % (a / b) if a and b else "-"
            new, old, comp, sd = ms("new0"), ms("old0"), ms("compile"), ms("sdpa_compile")
            ver = "/".join(("yes" if v.get(t, {}).get("verified") else
                            "NO" if t in v else "-") for t in ("new0", "old0", "x0", "x1"))
            worst = ", ".join("%.3g" % x if isinstance(x, float) else "-" for x in (
                v.get("new0", {}).get("worst"), v.get("old0", {}).get("worst"),
                r.get("eager_vs_truth"), r.get("compile_vs_truth")))
            print("| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["case"], tname, r["entries"].get("new", "-").split("-zz-any-attention-")[-1][:-5],
                ver, f(new), f(old), f(ms("x0")), f(ms("x1")), f(ms("eager")), f(comp), f(sd),
                ratio(new, comp),
                ratio(old, comp), ratio(new, sd), worst))
    for r in rows:
        for k, x in r["variants"].items():
            if k in ("new0", "old0", "x0", "x1") and not x.get("verified"):
                print("not verified: %s %s: %s" % (r["case"], k, x.get("reason")))
        for k, e in r["errors"].items():
            print("error: %s %s: %s" % (r["case"], k, e))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["prepare"] and len(a) == 5:
        sys.exit(prepare(*a[1:]))
    if a[:1] == ["newtable"] and len(a) == 4:
        sys.exit(newtable(*a[1:]))
    if a[:1] == ["run"] and len(a) == 4:
        sys.exit(run(*a[1:]))
    sys.exit(__doc__)
