#!/usr/bin/env python3
"""f32_splitk_bench.py - issue 15's held-out exact-f32 GEMM gaps (session 25):
split-K by thread-block clusters on the 3xTF32 TMA wgmma kernel
(kernels/handwritten/gemm_wgmma_tma.py `splitk` with f32x3_wgmma_tma), the
64-row A box (`a_rows`: M >= 64 instead of 128), and the pattern table's
entries that offer them (kernels/table/gemm_any.py *_0x3tma; build.py's
sentinel entries, now admitted only at the shipped row count or where no
split fits one wave). Build here, verify and time on the GPU.

    python3 bench/tma/f32_splitk_bench.py prepare STAGE BIN   (bench/tma/f32-splitk-prepare.sh)
    python3 bench/tma/f32_splitk_bench.py run STAGE OUT VDIR  (bench/tma/f32-splitk-device.sh)

Each case is a subgraph of a shipped example with its row count rewritten
(the MiniGPT MLP's down-projection `proj`: y = (g W + b) + h, N = 768,
K = 3072; GEMM + ReLU `relu`: relu((x W - 0.5) * 2), N = K = 8192), the
exact subgraph of a held-out model of `heldout.py gen --seed 1` where the
case names one. Two kinds of variants per case:

  g-<tag>  gen_gemm.py kernels at the case's sizes (GEN_VARIANTS: the
           3xTF32 default tiling and split-K forms), to find the fastest;
  t<TILE>  the pattern-table entry the table answers with (TABLE_ENTRY),
           its template bound to the case's sizes and each tune variant
           its requirements keep built, as the pass would
           (TILE = 100 * alternative + GROUP_M).

prepare writes STAGE/<case>/<sg>/plan.json + k<N>.cubin (the default MLIR
lowering, the verifier's reference) and STAGE/<case>/<sg>/v-<tag>/
(kernel.cubin + result.json), and STAGE/cases.json. run reuses
bench/tma/splitk_bench.py's run (verdicts of llm-fuse-verify, the float64
check, a bit-identical repeat, timing beside torch eager and torch.compile
with TF32 off) and prints the table last.
"""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)
import splitk_bench as sb  # noqa: E402

V1 = os.path.join(ROOT, "kernels", "table", "v1")
FAM = {
    # family: (example, rows there, pattern, base subgraph of gen_gemm.py, N, K)
    "proj": ("examples/bench/minigpt_mlp.mlir", 65536,
             "403e984585ec9081f543da3032c363f272fb4e6e002f0a87c92d7820a66f0ec0", "sg_36d4248ce34e0c94", 768, 3072),
    "attnproj": ("examples/minigpt_block.mlir", 1024,
                 "0be41d1a9fab75dd89ba97118f1bd6c6aa7eb2b8ef389f4c64822dca3bb90082", "sg_1c6bf422e56f7cc7", 768, 768),
    "relu": ("examples/gemm_epilogue.mlir", 1024,
             "eb11a3cfdc28de0da74646960d841fbd2cca8fbab32eaf2547a87cfd0b3d7728", "sg_5beaf48efb3a6ac0", 8192, 8192),
}
# (case, family, M, generator variants to build, table entry)
X3 = dict(BN=128, stages=3, pingpong=0, persistent=1, group_m=8, vacc=1)
GEN = {
    "x3": dict(X3),
    "x3-a64": dict(X3, a_rows=64),
    "sk2": dict(X3, persistent=0, splitk=2),
    "sk4": dict(X3, persistent=0, splitk=4),
    "sk8": dict(X3, persistent=0, splitk=8),
    "sk2-bn64": dict(X3, BN=64, stages=4, persistent=0, splitk=2),
    "sk4-bn64": dict(X3, BN=64, stages=4, persistent=0, splitk=4),
    "sk2-a64": dict(X3, a_rows=64, persistent=0, splitk=2),
    "sk4-a64": dict(X3, a_rows=64, persistent=0, splitk=4),
    "sk8-a64": dict(X3, a_rows=64, persistent=0, splitk=8),
}
PROJ_ANY = "403e984585ec9081-gemm_any_proj_f32_0x3tma.json"
PROJ_SENT = "403e984585ec9081-sg_36d4248ce34e0c94_sm90a.json"
RELU_ANY = "eb11a3cfdc28de0d-gemm_any_gemm_relu_f32_0x3tma.json"
CASES = [
    ("ho017-proj-m512", "proj", 512, ["x3", "sk2", "sk4", "sk8", "sk2-bn64", "sk4-bn64"], PROJ_ANY),
    ("ho014-proj-m606", "proj", 606, ["x3", "sk2", "sk4"], PROJ_ANY),
    ("ho023-relu-m127", "relu", 127, ["x3-a64", "sk2-a64"], RELU_ANY),
    ("proj-m256", "proj", 256, ["x3", "sk4", "sk8"], PROJ_ANY),
    ("proj-m96", "proj", 96, ["x3-a64", "sk4-a64", "sk8-a64"], PROJ_ANY),
    ("proj-m150", "proj", 150, [], PROJ_ANY),        # a 64-row box wholly past M (tile 1, rows 192..)
    ("proj-m1024", "proj", 1024, ["sk2"], PROJ_SENT),  # the suite's size: the shipped kernel's entry
]
# the second run (F32SK_SET=confirm): the table's variants alone, at more sizes
CONFIRM = [
    ("ho017-proj-m512", "proj", 512, [], PROJ_ANY),
    ("ho014-proj-m606", "proj", 606, [], PROJ_ANY),
    ("ho023-relu-m127", "relu", 127, [], RELU_ANY),
    ("proj-m256", "proj", 256, [], PROJ_ANY),
    ("proj-m96", "proj", 96, [], PROJ_ANY),
    ("proj-m150", "proj", 150, [], PROJ_ANY),
    ("proj-m1024", "proj", 1024, [], PROJ_SENT),
    ("proj-m2048", "proj", 2048, [], PROJ_SENT),
    ("attnproj-m512", "attnproj", 512, [], "0be41d1a9fab75dd-gemm_any_attn_proj_f32_0x3tma.json"),
    ("attnproj-m1024", "attnproj", 1024, [], "0be41d1a9fab75dd-sg_1c6bf422e56f7cc7_sm90a.json"),
    ("relu-m256", "relu", 256, [], RELU_ANY),
]


def sizes_of(sig):
    out = []
    for x in re.findall(r"(?<=[<x])(\d+)(?=x)", sig):   # docs/pattern-key.md: distinct dims > 1, in order
        if int(x) > 1 and int(x) not in out:
            out.append(int(x))
    return out


def prepare(stage, bindir):
    import gen_gemm
    import gemm_any
    from heldout import size_rewrite
    tool = os.path.join(bindir, "llm-fuse-build-kernel")
    os.makedirs(stage, exist_ok=True)
    out_cases, bad = [], 0
    only = os.environ.get("F32SK_ONLY")
    for name, fam, M, gens, entry in (CONFIRM if os.environ.get("F32SK_SET") == "confirm" else CASES):
        if only and not re.search(only, name):
            continue
        src, rows, pattern, base_sg, N, K = FAM[fam]
        d = os.path.join(stage, name)
        text = size_rewrite(open(os.path.join(ROOT, src)).read(), {rows: M}, {})
        t0 = time.time()
        sg, sig = sb.outline_case(d, bindir, text, pattern)
        built = []
        base = gemm_any.f32x3_cfg(base_sg)
        base.pop("a_rows", None)
        base.update(M=M, N=N, K=K, signature=sig, sg=sg,
                    product="A[%d,%d] @ B[%d,%d] (exact f32: 3xTF32 wgmma)" % (M, K, K, N))
        for tag in gens:
            cfg = dict(base)
            cfg.update(GEN[tag])
            try:
                _, ktext, _ = gen_gemm.generate(cfg)
            except AssertionError as e:
                print("prepare: %-16s g-%-9s not generated: %s" % (name, tag, e))
                continue
            kf = os.path.join(d, "%s.%s.mlir" % (sg, tag))
            open(kf, "w").write(ktext)
            t1 = time.time()
            j, _ = sb.build_variant(tool, sig, kf, os.path.join(d, sg, "v-g-" + tag))
            print("prepare: %-16s g-%-9s %s grid %s [%.0f s] %s" % (
                name, tag, "built" if j.get("ok") else "FAILED " + j.get("kind", ""), j.get("grid"),
                time.time() - t1, (j.get("ptxas_info") or j.get("message", ""))[:100]), flush=True)
            if j.get("ok"):
                built.append("g-" + tag)
            else:
                bad += 1
        # the table entry, every tune variant its requirements keep
        e = read_entry(os.path.join(V1, entry))
        assert e["pattern"] == pattern, (entry, e["pattern"])
        sz = sizes_of(sig)
        ttext = re.sub(r"// llm-fuse\.template-size S(\d+)",
                       lambda m: "// llm-fuse.tune S%s = %d" % (m.group(1), sz[int(m.group(1))]), e["template"])
        kf = os.path.join(d, "template.mlir")
        open(kf, "w").write(ttext)
        k, n = 0, 1
        while k < n:
            tmp = os.path.join(d, "tmp-build")
            t1 = time.time()
            j, err = sb.build_variant(tool, sig, kf, tmp, ["--tune-variant", str(k)])
            m = re.search(r"variant (\d+) of (\d+): (.*)", err)
            if not m:
                print("prepare: %-16s table variant %d: %s" % (name, k, err.strip()[:300]))
                bad += 1
                break
            n = int(m.group(2))
            tile = re.search(r"(?:TILE|GROUP_M)=(\d+)", m.group(3)).group(1)
            tag = "t" + tile
            vd = os.path.join(d, sg, "v-" + tag)
            os.rename(tmp, vd)
            ptx = os.path.join(vd, "kernel.ptx")
            cl = re.search(r"\.reqnctapercluster (\d+)", open(ptx).read()) if os.path.exists(ptx) else None
            print("prepare: %-16s %-11s %s grid %s cluster %s [%.0f s] %s" % (
                name, tag, "built" if j.get("ok") else "FAILED " + j.get("kind", ""), j.get("grid"),
                cl.group(1) if cl else "-", time.time() - t1, (j.get("ptxas_info") or j.get("message", ""))[:90]),
                flush=True)
            if j.get("ok"):
                built.append(tag)
            else:
                bad += 1
            k += 1
        print("prepare: %-16s %d variant(s) [%.0f s]" % (name, len(built), time.time() - t0), flush=True)
        out_cases.append(dict(name=name, family=fam, M=M, N=N, K=K, dtype="f32", sg=sg, signature=sig,
                              variants=built, entry=entry))
    json.dump(out_cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)
    return 1 if bad else 0


_family_inputs = sb.family_inputs


def family_inputs(torch, suite, family, M, N, K, dt, gen):
    """(inputs in the subgraph's order, float64 reference, torch eager, the
    function torch.compile compiles)"""
    if family in ("proj", "attnproj"):    # (g, W, b, h) -> (g W + b) + h
        g, w = suite.rnd((M, K), dt, gen), suite.rnd((K, N), dt, gen, K ** -0.5)
        b, h = suite.rnd((N,), dt, gen), suite.rnd((M, N), dt, gen)
        ref = g.double() @ w.double() + b.double() + h.double()
        return [g, w, b, h], ref, (lambda g, w, b, h: torch.addmm(b, g, w) + h), \
            (lambda g, w, b, h: (g @ w + b) + h)
    if family == "relu":    # (x, W) -> relu((x W - 0.5) * 2)
        x, w = suite.rnd((M, K), dt, gen), suite.rnd((K, N), dt, gen, K ** -0.5)
        ref = torch.relu((x.double() @ w.double() - 0.5) * 2)
        fn = (lambda x, w: torch.relu((x @ w - 0.5) * 2))
        return [x, w], ref, fn, fn
    return _family_inputs(torch, suite, family, M, N, K, dt, gen)


def print_table(results):
    """one row per (case, variant): variant, verified, ms, torch.compile ms, ratio"""
    print()
    print("| case | M x N x K | variant | verified (llm-fuse-verify, f64 check, repeat) | ms | torch eager ms "
          "| torch.compile ms | ratio to compile |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for r in results:
        v = r["variants"]
        tc = v.get("compile", {}).get("ms")
        te = v.get("torch", {}).get("ms")
        best = None
        for tag in sorted((t for t in v if t not in ("torch", "compile")), key=lambda t: v[t]["ms"]):
            x = v[tag]
            ok = bool(x["check"] and x["verified"] and x["repeat_identical"])
            if ok and best is None:
                best = tag
            print("| %s | %dx%dx%d | %s%s | %s | %.4f | %s | %s | %s |" % (
                r["name"], r["M"], r["N"], r["K"], tag, " (best)" if best == tag else "",
                "yes" if ok else "NO (%s %s %s)" % (x["verified"], x["check"], x["repeat_identical"]),
                x["ms"], "%.4f" % te if te else "-", "%.4f" % tc if tc else "-",
                "%.2fx" % (x["ms"] / tc) if tc else "-"))
    print("(ms: medians, L2 flushed; t<TILE>: the table entry's tune variant, TILE = 100 * alternative + GROUP_M "
          "(gemm_any 0x3tma: 0xx default 128x128, 1xx 128x64, 2xx split-K S2, 3xx split-K S4); g-*: generator "
          "kernels at the case's sizes)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"] and len(sys.argv) == 4:
        sys.exit(prepare(sys.argv[2], sys.argv[3]))
    if sys.argv[1:2] == ["run"] and len(sys.argv) == 5:
        sb.family_inputs = family_inputs
        sb.print_table = print_table
        sys.exit(sb.run(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(__doc__)
