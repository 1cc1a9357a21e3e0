#!/usr/bin/env python3
"""rows_tune.py - the row-kernel entries of the pattern table (gen_rows.py's
size-specific kernels and rows_any.py's general templates) at the held-out
sizes where they missed issue 15's targets, every tune variant of the
entry before and after a generator change, against torch on one GPU.

  rows_tune.py prepare STAGE [--build BUILD] [--old-rev REV] [--new-table DIR]
      (build machine) For each case of CASES: outlines the held-out model
      (.device/heldout/models, `heldout.py device-script`), builds its
      default lowering (llm-fuse-reference --build: STAGE/<sg>/plan.json,
      the verifier's reference) and every tune variant of the table entry
      named there, as git revision REV has it ("old", default HEAD) and as
      DIR has it ("new", default kernels/table/v1), each with
      llm-fuse-build-kernel for sm_90a (STAGE/<sg>/v<i>/); writes
      STAGE/cases.json (with the subgraph's torch translation from
      .device/heldout/torch/manifest.json), the verification worker and
      libllm_fuse_rt.so. Only cubins and JSON are kept (a few MB).
  rows_tune.py run STAGE OUT.json [--budget-ms 60] [--no-verify]
      (GPU machine) Per case: torch eager, torch.compile and a copy of the
      same bytes (torch copy_ of a buffer of half the bytes moved), every
      variant checked against eager (the verifier's rule, outputs poisoned
      with NaN first) and verified by llm-fuse-verify (--no-timing, 1
      trial; the same worker the pass runs), then all timed together by
      bench/gpu/run.py's method (CUDA events around one call, a 256 MiB
      memset before each, median of interleaved rounds). Prints one table:
      old best, new best (with its variant), compile, ours/compile, % of
      the 1 GiB copy's bandwidth and of the same-size copy's.

bench/table/rows-tune-prepare.sh and rows-tune-device.sh wrap the two.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# (held-out model, the table entry that answered it: the file-name suffix
# after the pattern key)
CASES = [
    # session 25 (issue 15's H200 held-out run, 2026-11-25): more than 10%
    # slower than torch.compile
    ("027_rowmax_r512", "rowmax_f32_8192"),
    ("022_layernorm_f32_r6_h768", "zz-any-layernorm_f32-f32-any"),
    ("005_rmsnorm_r1024_h2560", "zz-any-rmsnorm-bf16-any"),
    ("038_rmsnorm_r43", "rmsnorm_bf16_4096"),
    ("036_rowmax_r1664_h14336", "zz-any-rowmax-f32-any"),
    ("024_minigpt_mlp_r17", "zz-any-layernorm_gpt-f32-any"),
    # memory-bound on >= 64 MiB under 90% of the 1 GiB copy
    ("011_bias_gelu_r5632", "bias_gelu_bf16_8192"),
    ("021_bias_gelu_r4288", "bias_gelu_bf16_8192"),
    ("015_layernorm_f32_r1141", "layernorm_f32_16384"),
    ("016_softmax_tosa_r1280", "softmax_tosa_f32_16384"),
    ("034_rmsnorm_r15784", "rmsnorm_bf16_4096"),
    # the same entries where they already met the targets (no slowdown)
    ("028_rowmax_r634", "rowmax_f32_8192"),
    ("025_rowsum_r488", "rowsum_f32_8192"),
    ("008_rmsnorm_r1024", "rmsnorm_bf16_4096"),
    ("033_minigpt_mlp_r128_d1000_f4000_f16", "zz-any-layernorm_gpt-f16-any"),
]

# `--set small` (session 26, issue 15 point 7: the launch-bound row kernels
# that were 12-41% slower than torch.compile in session 25's held-out runs,
# and mid / large sizes of the same entries that must not get slower):
# (model name, rows_any.py family, dtype, R, N, [entries]). The models are
# rows_any.py's examples rewritten to these sizes (the same subgraphs as
# the held-out models of `heldout.py gen DIR --seed 1 --count 50`: 010,
# 001, 014, 020, 037; and of session 24's set: 022, 027), made here with
# their torch translations; several entries per case: the one the pass
# tries first and the general template behind it.
SMALL = [
    ("s010_softmax_r16_h5120", "softmax", "bf16", 16, 5120,
     ["zz-any-softmax-bf16-any"]),
    ("s001_layernorm_gpt_r5_h768", "layernorm_gpt", "f32", 5, 768,
     ["zz-any-layernorm_gpt-f32-any"]),
    ("s022_layernorm_f32_r6_h768", "layernorm_f32", "f32", 6, 768,
     ["zz-any-layernorm_f32-f32-any"]),
    ("s014_layernorm_r606", "layernorm", "bf16", 606, 4096,
     ["layernorm_bf16_4096", "zz-any-layernorm-bf16-any"]),
    ("s020_rmsnorm_r16", "rmsnorm", "bf16", 16, 4096,
     ["rmsnorm_bf16_4096", "zz-any-rmsnorm-bf16-any"]),
    ("s037_rmsnorm_r128_h2788", "rmsnorm", "bf16", 128, 2788,
     ["zz-any-rmsnorm-bf16-any"]),
    ("s027_rowmax_r512", "rowmax", "f32", 512, 8192,
     ["rowmax_f32_8192", "zz-any-rowmax-f32-any"]),
    ("s033_softmax_r512", "softmax", "bf16", 512, 8192,
     ["softmax_bf16_8192", "zz-any-softmax-bf16-any"]),
    # session 24's set: 020 (softmax TOSA f32 16 x 3072), 033 (the MiniGPT
    # LayerNorm f16 at 128 x 1000, 1.23x in session 25)
    ("s24_020_softmax_tosa_r16_h3072", "softmax_tosa", "f32", 16, 3072,
     ["zz-any-softmax_tosa-f32-any"]),
    ("s24_033_layernorm_gpt_r128_h1000_f16", "layernorm_gpt", "f16", 128, 1000,
     ["zz-any-layernorm_gpt-f16-any"]),
    # mid / large: no slower
    ("m_softmax_r2048_h5120", "softmax", "bf16", 2048, 5120,
     ["zz-any-softmax-bf16-any"]),
    ("m_softmax_tosa_r28_h16384", "softmax_tosa", "bf16", 28, 16384,
     ["zz-any-softmax_tosa-bf16-any"]),
    ("m_softmax_f16_r8192_h2048", "softmax", "f16", 8192, 2048,
     ["zz-any-softmax-f16-any"]),
    ("m_softmax_tosa_f32_r3000_h6000", "softmax_tosa", "f32", 3000, 6000,
     ["zz-any-softmax_tosa-f32-any"]),
    ("m_rmsnorm_r4096_square", "rmsnorm", "bf16", 4096, 4096,
     ["zz-any-rmsnorm-bf16-square"]),
    ("m_rmsnorm_r8192", "rmsnorm", "bf16", 8192, 4096,
     ["rmsnorm_bf16_4096"]),
    ("m_layernorm_f32_r19456_h5120", "layernorm_f32", "f32", 19456, 5120,
     ["zz-any-layernorm_f32-f32-any"]),
    ("m_rowmax_r7139", "rowmax", "f32", 7139, 8192,
     ["rowmax_f32_8192"]),
]

# Exploratory variants of gen_rows.py's size-specific kernels, not in the
# table (generated at the case's row count): entry -> [knob settings], e.g.
# "rmsnorm_bf16_4096": [dict(T=512, wearly=0), dict(T=512, wearly=1)]. That
# one, and the same for layernorm_bf16_4096, ran on the H200 in session 26:
# equal at 16 rows (0.0046 ms), slower at 606 rows (0.0093 vs 0.0077) and
# 8192 rows (0.0481 vs 0.0383); not made knobs.
EXTRA = {}


# ------------------------------------------------------------- prepare ---

def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def instantiate(template, sizes):
    """The template with its free sizes bound (as the pass does:
    docs/kernel-contract.md section 10)."""
    def one(m):
        k = m.group(2)
        return "%s// llm-fuse.tune %s = %d" % (m.group(1), k, sizes[k])
    return re.sub(r"^(\s*)// llm-fuse\.template-size (S\d+)\s*$", one, template, flags=re.M)


def build_variants(tool, text, sig, out_base, first_index):
    """Every tune variant of text: [(dir, label, ok, info)]."""
    res = []
    path = out_base + ".mlir"
    with open(path, "w") as fh:
        fh.write(text)
    k = 0
    while True:
        d = "%s%d" % (out_base, k)
        r = sh([tool, "--signature", sig, "--chip", "sm_90a", "--out-dir", d,
                "--tune-variant", str(k), path])
        if r.returncode == 2 and "--tune-variant" in r.stderr:
            break
        m = re.search(r"variant \d+ of \d+: (.*)", r.stderr)
        label = m.group(1).strip() if m else "-"
        try:
            j = json.loads(r.stdout)
        except ValueError:
            j = {"ok": False, "message": r.stderr[-300:]}
        res.append((d, label, bool(j.get("ok")), j.get("ptxas_info") or j.get("message", "")))
        k += 1
        if k > 16 or (r.returncode == 2):
            break
    os.remove(path)
    return res


def cmd_prepare(a):
    stage = os.path.abspath(a.stage)
    b = os.path.abspath(a.build)
    opt, ref = os.path.join(b, "bin", "llm-fuse-opt"), os.path.join(b, "bin", "llm-fuse-reference")
    tool = os.path.join(b, "bin", "llm-fuse-build-kernel")
    os.makedirs(stage, exist_ok=True)
    new_dir = a.new_table or os.path.join(ROOT, "kernels", "table", "v1")
    if a.set == "small":
        sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
        sys.path.insert(0, HERE)
        import heldout
        import rows_any
        mdir = os.path.join(stage, "src")
        os.makedirs(os.path.join(mdir, "models"), exist_ok=True)
        todo = []
        for model, fam, dt, rows, n, entries in SMALL:
            if a.only and not re.search(a.only, model):
                continue
            with open(os.path.join(mdir, "models", model + ".mlir"), "w") as fh:
                fh.write(rows_any.example_text(fam, dt, rows, n))
            todo.append((model, entries, rows))
        man = heldout.torch_manifest(opt, mdir, dict(models=[dict(name=m) for m, _, _ in todo]))
    else:
        mdir = os.path.join(ROOT, ".device", "heldout")
        man = json.load(open(os.path.join(mdir, "torch", "manifest.json")))
        todo = [(model, [entry], None) for model, entry in CASES
                if not (a.only and re.search(a.only, model) is None)]
    torch_src = {s["name"]: s for s in man["subgraphs"]}
    cases = []
    for model, entries, rows in todo:
        src = os.path.join(mdir, "models", model + ".mlir")
        outl = os.path.join(stage, model + ".mlir")
        rep = os.path.join(stage, model + ".json")
        r = sh([opt, "--llm-fuse-outline=remarks=false report=" + rep, src, "-o", outl])
        if r.returncode:
            sys.exit("rows_tune: %s does not outline: %s" % (model, r.stderr[-300:]))
        groups = json.load(open(rep))
        groups = groups.get("groups") or groups.get("subgraphs")
        gs = [g for g in groups if g["class"] in ("reduction", "elementwise")]
        if len(gs) != 1:
            sys.exit("rows_tune: %s: %d row subgraphs" % (model, len(gs)))
        g = gs[0]
        sg = g["name"]
        r = sh([ref, "--build", "--chip", "sm_90", "--out-dir", stage, outl])
        if r.returncode:
            sys.exit("rows_tune: %s: reference: %s" % (model, r.stderr[-300:]))
        sig = "(%s) -> %s" % (", ".join(i["type"] for i in g["inputs"]),
                              g["outputs"][0]["type"] if len(g["outputs"]) == 1 else
                              "(%s)" % ", ".join(o["type"] for o in g["outputs"]))
        same = []
        variants = []
        cubins = {}  # the old variants' cubin bytes -> tag
        builds = []  # (which, entry index, text, label of an exploratory variant)
        for ei, entry in enumerate(entries):
            fname = "%s-%s.json" % (g["pattern"][:16], entry)
            for which in ("old", "new"):
                if which == "new":
                    e = read_entry(os.path.join(new_dir, fname))
                elif a.old_table:
                    e = read_entry(os.path.join(a.old_table, fname))
                else:
                    r = sh(["git", "-C", ROOT, "show", "%s:kernels/table/v1/%s" % (a.old_rev,
                                                                                  fname)])
                    if r.returncode:  # the compressed table (session 27 on)
                        r = subprocess.run("git -C '%s' show '%s:kernels/table/v1/%s.gz' | gzip -dc"
                                           % (ROOT, a.old_rev, fname), shell=True,
                                           capture_output=True, text=True)
                    if r.returncode:
                        sys.exit("rows_tune: no %s at %s" % (fname, a.old_rev))
                    e = json.loads(r.stdout)
                builds.append((which, ei, instantiate(e["template"], g["pattern_sizes"]), None))
            if a.x_table:
                # a third table (a generator option not yet on: timed as
                # "new" variants labelled "x"; a variant whose machine code
                # equals one already staged is timed once, under that tag)
                e = read_entry(os.path.join(a.x_table, fname))
                builds.append(("new", ei, instantiate(e["template"], g["pattern_sizes"]),
                               "x"))
            if rows is not None:
                sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
                import gen_rows
                for p in gen_rows.KERNELS:
                    if p["kernel"] != entry:
                        continue
                    for kv in EXTRA.get(entry, []):
                        q = {k: v for k, v in p.items() if k != "knobs"}
                        q.update(kv, R=rows)
                        builds.append(("new", ei, gen_rows.generate(q), "x " + " ".join(
                            "%s=%s" % (k.upper(), v) for k, v in sorted(kv.items()))))
        for bi, (which, ei, text, xlabel) in enumerate(builds):
            base = os.path.join(stage, sg, "%s%d_%d_" % (which, ei, bi))
            for d, label, ok, info in build_variants(tool, text, sig, base, 0):
                label = " ".join(x for x in label.split() if not re.match(r"S\d+=", x)) or "-"
                if xlabel == "x":
                    label = "x " + label
                elif xlabel:
                    label = xlabel
                if len(entries) > 1:
                    label = "e%d %s" % (ei, label)
                print("prepare: %-40s %s %-22s %s %s" % (model, which, label,
                                                         "built" if ok else "FAILED", info[:120]))
                if ok:
                    tag = "%s %s" % (which, label)
                    cb = open(os.path.join(d, "kernel.cubin"), "rb").read() \
                        if os.path.exists(os.path.join(d, "kernel.cubin")) else None
                    if cb in cubins and (which == "new" or a.x_table):
                        # the same machine code as a variant staged
                        # before (an old one, or with --x-table a new one):
                        # timed once, under that tag
                        print("prepare: %-40s %s %-22s = %s" % (model, which, label, cubins[cb]))
                        same.append([tag, cubins[cb]])
                        sh(["rm", "-rf", d])
                        continue
                    if cb:
                        cubins.setdefault(cb, tag)
                    variants.append(dict(tag=tag, dir=os.path.relpath(d, stage),
                                         which=which, info=info))
        ts = torch_src.get(sg)
        if not ts:
            sys.exit("rows_tune: %s: no torch translation of %s" % (model, sg))
        cases.append(dict(model=model, sg=sg, entry=" / ".join(entries), signature=sig,
                          bytes=g["bytes_moved"], sizes=g["pattern_sizes"], source=ts["source"],
                          args=ts["args"], results=ts["results"], variants=variants,
                          same=same))
    json.dump(dict(cases=cases), open(os.path.join(stage, "cases.json"), "w"), indent=1)
    os.makedirs(os.path.join(stage, "bin"), exist_ok=True)
    os.makedirs(os.path.join(stage, "lib"), exist_ok=True)
    sh(["strip", "-o", os.path.join(stage, "bin", "llm-fuse-verify"),
        os.path.join(b, "bin", "llm-fuse-verify")])
    ldd = sh(["ldd", os.path.join(b, "bin", "llm-fuse-verify")]).stdout
    cj = re.search(r"libcjson\S* => (\S+)", ldd)
    if cj:
        sh(["cp", "-L", cj.group(1), os.path.join(stage, "lib", "libcjson.so.1")])
    sh(["cp", os.path.join(b, "lib", "libllm_fuse_rt.so"), stage])
    for dp, _, fs in os.walk(stage):
        for f in fs:
            if f.endswith((".mlir", ".ptx")):
                os.remove(os.path.join(dp, f))
    n = sum(len(c["variants"]) for c in cases)
    print("prepare: %d case(s), %d variant(s) in %s" % (len(cases), n, stage))


# ----------------------------------------------------------------- run ---

def cmd_run(a):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
    from run import DT, PadTimer, Runtime, Timer, compare, launch_built, time_variants  # noqa: E402
    stage = os.path.abspath(a.stage)
    cases = json.load(open(os.path.join(stage, "cases.json")))["cases"]
    rt = Runtime(os.path.join(stage, "libllm_fuse_rt.so"))
    timer = Timer()

    rep_timer = PadTimer(a.pad_us) if a.pad_us > 0 else timer
    res = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, cases=[])
    res["repeat_timer"] = "pad %g us" % a.pad_us if a.pad_us > 0 else "run.py"
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    t = time_variants(timer, {"copy": lambda: dst.copy_(src)}, 200)["copy"]["median"]
    res["copy_GBps"] = copy_bw = 2 * n / (t * 1e-3) / 1e9
    del src, dst
    print("device %s, torch %s; copy bandwidth (1 GiB, read + write): %.0f GB/s"
          % (res["device"], res["torch"], copy_bw), flush=True)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(stage, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")
    import importlib.util
    import tempfile
    import time
    t_start = time.time()
    for i, c in enumerate(cases):
        if a.deadline_s and time.time() - t_start > a.deadline_s:
            print("%s: skipped (deadline of %d s)" % (c["model"], a.deadline_s), flush=True)
            continue
        rec = dict(model=c["model"], sg=c["sg"], entry=c["entry"], bytes=c["bytes"],
                   variants={}, same=c.get("same", []))
        res["cases"].append(rec)
        try:
            mpath = os.path.join(tempfile.gettempdir(), "lf_rt_%s.py" % c["sg"])
            with open(mpath, "w") as fh:
                fh.write("import torch\n" + c["source"])
            spec = importlib.util.spec_from_file_location("lf_rt_" + c["sg"], mpath)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["lf_rt_" + c["sg"]] = mod
            spec.loader.exec_module(mod)
            fn = mod.subgraph
            g = torch.Generator(device="cuda").manual_seed(1000 + i)
            ins = [(torch.rand(s, generator=g, dtype=torch.float32, device="cuda") * 2 - 1)
                   .to(DT[e]) for s, e in c["args"]]
            ref = fn(*ins)
            outs = [torch.empty(s, dtype=DT[e], device="cuda") for s, e in c["results"]]
            runs = {"eager": lambda: fn(*ins)}
            try:
                cf = torch.compile(fn)
                cf(*ins)
                runs["compile"] = lambda: cf(*ins)
            except Exception as e:  # noqa: BLE001
                rec["compile_error"] = str(e)[-300:]
            half = c["bytes"] // 2
            cs, cd = (torch.empty(half, dtype=torch.uint8, device="cuda").random_(),
                      torch.empty(half, dtype=torch.uint8, device="cuda"))
            runs["copy"] = lambda: cd.copy_(cs)
            for v in c["variants"]:
                d = os.path.join(stage, v["dir"])
                vr = rec["variants"][v["tag"]] = dict(info=v["info"])
                try:
                    run = launch_built(rt, d, ins, outs)
                    for o in outs:
                        o.fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                    rt.check(v["tag"])
                    oks = [compare(o, r) for o, r in zip(outs, ref)]
                    vr["check"] = all(ok for ok, _, _ in oks)
                    vr["worst"] = max(w for _, w, _ in oks)
                    if vr["check"]:
                        runs[v["tag"]] = run
                except Exception as e:  # noqa: BLE001
                    vr["error"] = str(e)[-300:]
                if not a.no_verify and not (a.verify_new_only and v.get("which") == "old"):
                    p = subprocess.run([os.path.join(stage, "bin", "llm-fuse-verify"), "--plan",
                                        os.path.join(stage, c["sg"], "plan.json"), "--candidate",
                                        os.path.join(d, "result.json"), "--no-timing",
                                        "--trials", "1"],
                                       capture_output=True, text=True, env=env, timeout=120)
                    try:
                        vj = json.loads(p.stdout)
                    except ValueError:
                        vj = {"accepted": False, "reason": p.stderr[-200:]}
                    vr["verified"] = bool(vj.get("accepted"))
                    if not vr["verified"]:
                        vr["verify_reason"] = str(vj.get("reason", ""))[:200]
                        runs.pop(v["tag"], None)
            ts = time_variants(timer, runs, a.budget_ms)
            for k, s in ts.items():
                if k in rec["variants"]:
                    rec["variants"][k]["ms"] = s["median"]
                    rec["variants"][k]["stats"] = s
                else:
                    rec[k + "_ms"] = s["median"]
            # --repeat: the same timing again (the run-to-run spread of
            # the medians, to tell a gap from noise at a few us)
            for rep in range(1, a.repeat):
                ts = time_variants(rep_timer, runs, a.budget_ms)
                for k, s in ts.items():
                    d = rec["variants"][k] if k in rec["variants"] else rec.setdefault(
                        k + "_reps", {})
                    d.setdefault("reps", []).append(s["median"])
            del cs, cd
        except Exception as e:  # noqa: BLE001
            import traceback
            rec["error"] = traceback.format_exc()[-800:]
        finally:
            ins = outs = ref = fn = cf = runs = None
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        def reps(d):
            return "".join(" " + fmt(x) for x in (d or {}).get("reps", []))
        line = ["%s: eager %s%s compile %s%s copy %s%s" % (
            c["model"], fmt(rec.get("eager_ms")), reps(rec.get("eager_reps")),
            fmt(rec.get("compile_ms")), reps(rec.get("compile_reps")),
            fmt(rec.get("copy_ms")), reps(rec.get("copy_reps")))]
        for k, v in rec["variants"].items():
            line.append("  %-26s %s%s%s%s  %s" % (
                k, fmt(v.get("ms")), reps(v), "" if v.get("check", False) else " CHECK-FAILED",
                "" if v.get("verified", True) else " VERIFY-REJECTED " + v.get("verify_reason", ""),
                v.get("error", "")[:100] or v.get("info", "")[55:100]))
        print("\n".join(line), flush=True)
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
    table(res)


def fmt(x):
    return "%.4f" % x if isinstance(x, (int, float)) else "-"


def table(res):
    """old best, new best (a new variant whose machine code equals an old
    one's counts for both), torch.compile, and for each: GB/s (the bytes
    the subgraph must move over the time), % of the 1 GiB copy's
    bandwidth, % of the same-size copy's (its time over ours)."""
    bw = res["copy_GBps"]
    print()
    print("copy bandwidth (1 GiB, read + write): %.0f GB/s" % bw)
    print("| model | entry | MB | old best ms | new best ms (variant) | compile ms | new / compile "
          "| new GB/s | new % of 1 GiB copy | new % of same-size copy | compile % of 1 GiB copy "
          "| same-size copy ms (% of 1 GiB copy) |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    prep = []
    for r in res["cases"]:
        same = dict(r.get("same", []))

        def best(which):
            vs = [(v["ms"], k) for k, v in r["variants"].items()
                  if k.startswith(which) and "ms" in v]
            if which == "new":
                vs += [(r["variants"][o]["ms"], n) for n, o in same.items()
                       if "ms" in r["variants"].get(o, {})]
            return min(vs) if vs else (None, "-")
        o, _ = best("old")
        nw, nk = best("new")
        cm = r.get("compile_ms")
        # the repeat's medians (--repeat 2, PadTimer with --pad-us)
        pv = [(v["reps"][0], k) for k, v in r["variants"].items()
              if k.startswith("new") and v.get("reps")]
        pv += [(r["variants"][o_]["reps"][0], n_) for n_, o_ in same.items()
               if r["variants"].get(o_, {}).get("reps")]
        po = [v["reps"][0] for k, v in r["variants"].items()
              if k.startswith("old") and v.get("reps")]
        pn = min(pv) if pv else (None, "-")
        pc = (r.get("compile_reps") or {}).get("reps", [None])[0]
        prep.append("| %s | %s | %s (%s) | %s | %s |" % (
            r["model"], fmt(min(po) if po else None), fmt(pn[0]), pn[1][4:], fmt(pc),
            "%.2fx" % (pn[0] / pc) if pn[0] and pc else "-"))
        cp = r.get("copy_ms")
        mb = r["bytes"] / 1e6
        floor = r["bytes"] / (bw * 1e9) * 1e3

        def pct(ms):
            return "%.0f%%" % (100 * floor / ms) if ms else "-"
        print("| %s | %s | %.1f | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s (%s) |" % (
            r["model"], r["entry"], mb, fmt(o), fmt(nw), nk[4:], fmt(cm),
            "%.2fx" % (nw / cm) if nw and cm else "-",
            "%.0f" % (r["bytes"] / (nw * 1e-3) / 1e9) if nw else "-", pct(nw),
            "%.0f%%" % (100 * cp / nw) if nw and cp else "-", pct(cm), fmt(cp), pct(cp)))
    if any(p_ for p_ in prep if "| - (-) | - | - |" not in p_):
        print()
        print("the repeat (%s):" % res.get("repeat_timer", "run.py"))
        print("| model | old best ms | new best ms (variant) | compile ms | new / compile |")
        print("|---|---:|---|---:|---:|")
        print("\n".join(prep))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("stage")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--old-rev", default="HEAD")
    p.add_argument("--new-table")
    p.add_argument("--old-table", help="the old entries from this folder (a copy of "
                   "kernels/table/v1 made before the change) instead of git REV's")
    p.add_argument("--x-table", help="a third table (e.g. rows_any.py with MARKSTEIN_RES "
                   "on, written to a folder): its variants are timed as new ones, "
                   "labelled x")
    p.add_argument("--set", choices=("heldout", "small"), default="heldout",
                   help="heldout: CASES over .device/heldout's models; small: SMALL, "
                   "models made here")
    p.add_argument("--only")
    p = sub.add_parser("run")
    p.add_argument("stage")
    p.add_argument("out")
    p.add_argument("--budget-ms", type=float, default=60.0)
    p.add_argument("--no-verify", action="store_true")
    p.add_argument("--verify-new-only", action="store_true",
                   help="llm-fuse-verify only the new variants (the old ones were verified "
                   "when they were made)")
    p.add_argument("--repeat", type=int, default=1,
                   help="time every case this many times (medians of the later ones "
                   "printed beside the first)")
    p.add_argument("--pad-us", type=float, default=0,
                   help="the repeats (--repeat) hold the GPU busy this long before each "
                   "sample's flush (PadTimer): GPU time without the host's launch cost")
    p.add_argument("--deadline-s", type=float, default=0,
                   help="start no case after this many seconds (0: none)")
    a = ap.parse_args()
    return cmd_prepare(a) if a.cmd == "prepare" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
