#!/usr/bin/env python3
"""splitk_bench.py - split-K by thread-block clusters for the TMA-fed bf16 /
f16 GEMM (kernels/handwritten/gemm_wgmma_tma.py, `splitk`): build on the
build machine, verify and time on the GPU (issue 16 point 2, issue 15's
held-out small GEMMs).

    python3 bench/tma/splitk_bench.py prepare STAGE BIN   (bench/tma/splitk-prepare.sh)
    python3 bench/tma/splitk_bench.py run STAGE OUT VDIR  (bench/tma/splitk-device.sh)

CASES: the MLP down-projection (mlp_block.mlir's second GEMM: y = x +
(h W + b), f32 accumulation, one rounding at the end) at the case's M, N,
K and element type, with the generator's variants (VARIANTS); at 4096 x
768 x 3072 bf16 it is the suite's sg_5cdc21b0bac363b8 (same fingerprint).
TABLE_CASES: a pattern-table entry bound to the case's sizes, every
variant its requirements keep (the down- and up-projection, SwiGLU).
prepare writes,
per case, STAGE/<case>/<sg>/plan.json + k<N>.cubin (the default MLIR
lowering: the verifier's reference) and STAGE/<case>/<sg>/v-<tag>/
(kernel.cubin + result.json) per kernel variant, and STAGE/cases.json.

run takes each variant's verdict of the verification worker
(llm-fuse-verify: fresh seeds, poisoned outputs, a determinism repeat), which
splitk-device.sh ran first (bench/tma/verify-candidate.sh, into VDIR), then
in one process checks each against float64 (outputs NaN-poisoned first) and
for bit-identical repeats, and times it with bench/gpu/run.py's machinery (L2
flush, events, interleaved rounds, medians) beside torch eager (cuBLAS
addmm + the residual add) and torch.compile of the same function; prints
the table last and writes OUT/splitk.json.
"""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)
BASE_SG = "sg_5cdc21b0bac363b8"

# (case, M, N, K, element type)
CASES = [
    ("down4096", 4096, 768, 3072, "bf16"),   # the suite's MLP down-projection
    ("m256k3072", 256, 768, 3072, "bf16"),
    ("m512k3072", 512, 768, 3072, "bf16"),
    ("m1152k3072", 1152, 768, 3072, "bf16"),
    ("m256k768", 256, 768, 768, "bf16"),
    ("m512k768", 512, 768, 768, "bf16"),
    ("m1152k768", 1152, 768, 768, "bf16"),
    ("f16m512k3072", 512, 768, 3072, "f16"),
    ("odd1000x1032k776", 1000, 1032, 776, "bf16"),   # partial tiles, an uneven split of 13 k-tiles
]

# kernel variants: (tag, gen_gemm overrides). "tma" is the table's *_0tma
# default for this family (gemm_any.py TMA), "tma-bn64" its small-M
# alternative (SMALL_M); the sk* are the split-K forms.
VARIANTS = [
    ("tma", dict(BN=128, stages=4, pingpong=0, persistent=1, group_m=8)),
    ("tma-bn64", dict(BN=64, stages=8, pingpong=0, persistent=1, group_m=8)),
    ("sk2", dict(BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8)),
    ("sk4", dict(BN=128, stages=4, pingpong=0, persistent=0, splitk=4, group_m=8)),
    ("sk2-bn64", dict(BN=64, stages=8, pingpong=0, persistent=0, splitk=2, group_m=8)),
    ("sk4-bn64", dict(BN=64, stages=8, pingpong=0, persistent=0, splitk=4, group_m=8)),
]
SUITE_EXTRA = [("tma-np", dict(BN=128, stages=4, pingpong=0, persistent=0, group_m=8)),
               # 128 x 192 tiles: 4 x 32 = 128 CTAs, one wave at 4096 rows
               ("tma-bn192", dict(BN=192, stages=4, pingpong=0, persistent=1, group_m=8))]

# The pattern table's entries (kernels/table/v1, gemm_any.py *_0tma) as the
# pass instantiates them: the template's sizes bound to the case's, every
# tune variant its requirements keep built (llm-fuse-build-kernel
# --tune-variant), tagged by its TILE value (100 * alternative + GROUP_M:
# 1xx the 128 x 64 tiling, 2xx-4xx split-K 128x128 S2, 128x64 S2, 128x64 S4).
# (case, family, M, N, K, element type, entry file)
TABLE_CASES = [
    ("t-down-m256", "down", 256, 768, 3072, "bf16", "f5ea7dfceedf292a-gemm_any_mlp_down_bf16_0tma.json"),
    ("t-down-odd300", "down", 300, 1032, 776, "bf16", "f5ea7dfceedf292a-gemm_any_mlp_down_bf16_0tma.json"),
    ("t-down-f16-m512", "down", 512, 768, 3072, "f16", "247b641737bbfda9-gemm_any_mlp_down_f16_0tma.json"),
    ("t-up-m256", "up", 256, 3072, 768, "bf16", "c8624650a8d5099d-gemm_any_mlp_up_bf16_0tma.json"),
    ("t-swiglu-m256", "swiglu", 256, 1536, 2048, "bf16", "6e1c8b1a1893e29e-gemm_any_swiglu_bf16_0tma.json"),
]

MODEL = """#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @down(%h: tensor<MxKxT>, %w2: tensor<KxNxT>, %b2: tensor<NxT>,
                %x: tensor<MxNxT>) -> tensor<MxNxT> {
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<MxNxf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<MxNxf32>) -> tensor<MxNxf32>
  %mm2 = linalg.matmul ins(%h, %w2 : tensor<MxKxT>, tensor<KxNxT>)
                       outs(%acc2 : tensor<MxNxf32>) -> tensor<MxNxf32>
  %ey = tensor.empty() : tensor<MxNxT>
  %y = linalg.generic {indexing_maps = [#id, #row, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %b2, %x : tensor<MxNxf32>, tensor<NxT>, tensor<MxNxT>)
      outs(%ey : tensor<MxNxT>) {
  ^bb0(%v: f32, %b: T, %r: T, %out: T):
    %bf = arith.extf %b : T to f32
    %rf = arith.extf %r : T to f32
    %s = arith.addf %v, %bf : f32
    %t = arith.addf %s, %rf : f32
    %tb = arith.truncf %t : f32 to T
    linalg.yield %tb : T
  } -> tensor<MxNxT>
  return %y : tensor<MxNxT>
}
"""


def model(M, N, K, dt):
    t = MODEL.replace("MxK", "%dx%d" % (M, K)).replace("KxN", "%dx%d" % (K, N))
    t = t.replace("MxN", "%dx%d" % (M, N)).replace("<N", "<%d" % N)
    return re.sub(r"\bT\b", dt, t).replace("xT>", "x%s>" % dt)


def family_model(family, M, N, K, dt):
    """the case's model text: the down-projection above, or an example
    (mlp_block's up-projection, swiglu) with its sizes rewritten"""
    if family == "down":
        return model(M, N, K, dt)
    sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
    from heldout import dtype_rewrite, size_rewrite
    src, sizes = {"up": ("examples/mlp_block.mlir", {4096: M, 768: K, 3072: N}),
                  "swiglu": ("examples/swiglu.mlir", {8192: M, 4096: K, 14336: N})}[family]
    text = size_rewrite(open(os.path.join(ROOT, src)).read(), sizes, {})
    return dtype_rewrite(text, "bf16", dt) if dt != "bf16" else text


def outline_case(d, bindir, text, pattern=None):
    """writes the model, outlines it, builds the default lowering of its
    subgraphs (the verifier's reference); returns (sg, signature) of the
    subgraph (the one of `pattern` where there are several)"""
    os.makedirs(d, exist_ok=True)
    src, outl = os.path.join(d, "model.mlir"), os.path.join(d, "outlined.mlir")
    open(src, "w").write(text)
    subprocess.run([os.path.join(bindir, "llm-fuse-opt"), "--llm-fuse-outline=remarks=false", src, "-o", outl],
                   check=True, stderr=subprocess.DEVNULL)
    found = []
    for m in re.finditer(r"func\.func private @(sg_\w+)\((.*?)\) -> (tensor<[^>]*>) attributes \{(.*?)\} \{",
                         open(outl).read()):
        pat = re.search(r'llm_fuse\.pattern = "(\w+)"', m.group(4))
        if pattern and (not pat or pat.group(1) != pattern):
            continue
        sig = "(%s) -> %s" % (", ".join(re.findall(r"%arg\d+: (tensor<[^>]*>)", m.group(2))), m.group(3))
        found.append((m.group(1), sig))
    assert len(found) == 1, (d, pattern, found)
    subprocess.run([os.path.join(bindir, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", d,
                    outl], check=True, stdout=subprocess.DEVNULL)
    return found[0]


def build_variant(tool, sig, kf, out, extra=()):
    r = subprocess.run([tool, "--signature", sig, "--chip", "sm_90a", "--out-dir", out] + list(extra) + [kf],
                       capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {"ok": False, "kind": "?", "message": r.stderr[-300:]}
    return j, r.stderr


def prepare_table(stage, bindir, tool):
    """TABLE_CASES: each kept tune variant of the instantiated entry"""
    out_cases, bad = [], 0
    for name, family, M, N, K, dt, entry in TABLE_CASES:
        e = read_entry(os.path.join(ROOT, "kernels", "table", "v1", entry))
        d = os.path.join(stage, name)
        sg, sig = outline_case(d, bindir, family_model(family, M, N, K, dt), e["pattern"])
        sizes = []
        for x in re.findall(r"(?<=[<x])(\d+)(?=x)", sig):   # docs/pattern-key.md: distinct dims > 1, in order
            if int(x) > 1 and int(x) not in sizes:
                sizes.append(int(x))
        text = re.sub(r"// llm-fuse\.template-size S(\d+)",
                      lambda m: "// llm-fuse.tune S%s = %d" % (m.group(1), sizes[int(m.group(1))]), e["template"])
        kf = os.path.join(d, "template.mlir")
        open(kf, "w").write(text)
        built, k, n = [], 0, 1
        while k < n:
            tmp = os.path.join(d, "tmp-build")
            j, err = build_variant(tool, sig, kf, tmp, ["--tune-variant", str(k)])
            m = re.search(r"variant (\d+) of (\d+): (.*)", err)
            if not m:
                print("prepare: %-18s variant %d: %s" % (name, k, err.strip()[:300]))
                bad += 1
                break
            n = int(m.group(2))
            tile = re.search(r"TILE=(\d+)", m.group(3)).group(1)
            tag = "t" + tile
            vd = os.path.join(d, sg, "v-" + tag)
            os.rename(tmp, vd)
            ptx = os.path.join(vd, "kernel.ptx")
            cl = re.search(r"\.reqnctapercluster (\d+)", open(ptx).read()) if os.path.exists(ptx) else None
            print("prepare: %-18s %-9s %s grid %s cluster %s %s" % (
                name, tag, "built" if j.get("ok") else "FAILED " + j.get("kind", ""), j.get("grid"),
                cl.group(1) if cl else "-", (j.get("ptxas_info") or j.get("message", ""))[:100]))
            if j.get("ok"):
                built.append(tag)
            else:
                bad += 1
            k += 1
        out_cases.append(dict(name=name, family=family, M=M, N=N, K=K, dtype=dt, sg=sg, signature=sig,
                              variants=built, entry=entry))
    return out_cases, bad


def prepare(stage, bindir):
    sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
    import gen_gemm
    os.makedirs(stage, exist_ok=True)
    tool = os.path.join(bindir, "llm-fuse-build-kernel")
    out_cases, bad = [], 0
    for name, M, N, K, dt in CASES:
        d = os.path.join(stage, name)
        sg, sig = outline_case(d, bindir, model(M, N, K, dt))
        base = dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == BASE_SG))
        for k in ("BM", "BK", "WM", "WN", "minctasm"):
            base.pop(k, None)
        base.update(kind="bf16_wgmma_tma", chips=["sm_90a"], M=M, N=N, K=K, signature=sig, sg=sg,
                    product="A[%d,%d] @ B[%d,%d] (%s in, f32 accumulate)" % (M, K, K, N, dt))
        variants = []
        todo = VARIANTS + (SUITE_EXTRA if name == "down4096" else [])
        for tag, ov in todo:
            cfg = dict(base)
            cfg.update(ov)
            try:
                _, ktext, _ = gen_gemm.generate(cfg)
            except AssertionError as e:
                print("prepare: %-18s %-9s not generated: %s" % (name, tag, e))
                continue
            kf = os.path.join(d, "%s.%s.mlir" % (sg, tag))
            open(kf, "w").write(ktext)
            variants.append((tag, kf))
        if name == "down4096":
            assert sg == BASE_SG, sg
            variants.append(("shipped", os.path.join(ROOT, "kernels", "handwritten", BASE_SG + ".sm90a.mlir")))
        built = []
        for tag, kf in variants:
            j, _ = build_variant(tool, sig, kf, os.path.join(d, sg, "v-" + tag))
            print("prepare: %-18s %-9s %s grid %s %s" % (
                name, tag, "built" if j.get("ok") else "FAILED " + j.get("kind", ""), j.get("grid"),
                (j.get("ptxas_info") or j.get("message", ""))[:120]))
            if j.get("ok"):
                built.append(tag)
            else:
                bad += 1
        out_cases.append(dict(name=name, family="down", M=M, N=N, K=K, dtype=dt, sg=sg, signature=sig,
                              variants=built))
    tc, tbad = prepare_table(stage, bindir, tool)
    json.dump(out_cases + tc, open(os.path.join(stage, "cases.json"), "w"), indent=1)
    return 1 if bad or tbad else 0


def verdicts(vdir, cases):
    """the verification worker's verdict per variant, as
    bench/tma/verify-candidate.sh kept it (VDIR/<case>.v-<tag>.json):
    {case: {tag: (accepted, reason)}}"""
    res = {}
    for c in cases:
        res[c["name"]] = {}
        for tag in c["variants"]:
            try:
                v = json.load(open(os.path.join(vdir, "%s.v-%s.json" % (c["name"], tag))))
            except (OSError, ValueError) as e:
                v = {"accepted": False, "reason": "no verdict (%s)" % e}
            res[c["name"]][tag] = (bool(v.get("accepted")), v.get("reason", ""))
    return res


def run(stage, out, vdir):
    sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
    import run as suite  # bench/gpu/run.py
    import torch
    t_start = time.time()
    cases = json.load(open(os.path.join(stage, "cases.json")))
    ver = verdicts(vdir, cases)
    torch.backends.cuda.matmul.allow_tf32 = False
    rt = suite.Runtime(os.path.join(stage, "libllm_fuse_rt.so"))
    prop = torch.cuda.get_device_properties(0)
    print("device %s (%d SMs), torch %s" % (prop.name, prop.multi_processor_count, torch.__version__), flush=True)
    timer = suite.Timer()
    budget = float(os.environ.get("SPLITK_BUDGET_MS", "150"))
    compile_until = float(os.environ.get("SPLITK_COMPILE_UNTIL_S", "150"))
    results = []
    for c in cases:
        M, N, K = c["M"], c["N"], c["K"]
        dt = suite.DT[c["dtype"]]
        gen = torch.Generator(device="cuda").manual_seed(1)
        ins, ref, fn_eager, fn_compile = family_inputs(torch, suite, c["family"], M, N, K, dt, gen)
        d = os.path.join(stage, c["name"], c["sg"])
        variants, outs_for, res = {}, {}, {"checks": {}, "errors": {}, "same": {}}
        for tag in c["variants"]:
            try:
                o = torch.full((M, N), float("nan"), dtype=dt, device="cuda")
                variants[tag] = suite.launch_built(rt, os.path.join(d, "v-" + tag), ins, [o])
                outs_for[tag] = [o]
            except Exception as e:
                res["errors"][tag] = "%s: %s" % (type(e).__name__, e)
                print("  %s %s: %s" % (c["name"], tag, res["errors"][tag]), flush=True)

        variants["torch"] = lambda: fn_eager(*ins)
        if time.time() - t_start < compile_until:
            suite.compile_variants(fn_compile, ins, (("compile", None),), variants, res,
                                   lambda m: print(m, flush=True))
        suite.check_variants(variants, outs_for, [ref], rt, res, lambda m: print(m, flush=True))
        for tag, outs in outs_for.items():     # a second run: bit-identical (deterministic)
            if tag not in variants:
                continue
            first = outs[0].clone()
            outs[0].fill_(float("nan"))
            variants[tag]()
            torch.cuda.synchronize()
            res["same"][tag] = bool(torch.equal(first.view(torch.int16), outs[0].view(torch.int16)))
        with torch.no_grad():
            st = suite.time_variants(timer, variants, budget)
        rt.check("timing")
        row = dict(name=c["name"], family=c["family"], M=M, N=N, K=K, dtype=c["dtype"],
                   flops=2 * M * N * K * (2 if c["family"] == "swiglu" else 1), variants={})
        for tag, s in st.items():
            row["variants"][tag] = dict(ms=s["median"], p25=s["p25"], p75=s["p75"],
                                        check=res["checks"].get(tag, {}).get("ok"),
                                        worst=max([o["worst"] for o in res["checks"].get(tag, {}).get("outputs", [])]
                                                  or [None], key=lambda v: -1 if v is None else v),
                                        verified=ver[c["name"]].get(tag, (None,))[0],
                                        repeat_identical=res["same"].get(tag))
        row["errors"] = res["errors"]
        results.append(row)
        print("%s: %s" % (c["name"], ", ".join("%s %.4f" % (k, v["ms"]) for k, v in row["variants"].items())),
              flush=True)
        json.dump(dict(device=prop.name, torch=torch.__version__, date=time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                    time.gmtime()),
                       cases=results), open(os.path.join(out, "splitk.json"), "w"), indent=1)
    print_table(results)
    bad = [(r["name"], t) for r in results for t, v in r["variants"].items()
           if t not in ("torch", "compile") and not (v["check"] and v["verified"] and v["repeat_identical"])]
    print("splitk: %d variant(s) not verified / wrong / not repeatable: %s" % (len(bad), bad or "none"))
    return 1 if bad else 0


def family_inputs(torch, suite, family, M, N, K, dt, gen):
    """(inputs in the subgraph's order, float64 reference, torch eager, the
    function torch.compile compiles)"""
    F = torch.nn.functional
    if family == "down":    # (h, W, b, x) -> x + (h W + b)
        h, w = suite.rnd((M, K), dt, gen), suite.rnd((K, N), dt, gen, K ** -0.5)
        b, x = suite.rnd((N,), dt, gen), suite.rnd((M, N), dt, gen)
        ref = h.double() @ w.double() + b.double() + x.double()
        return [h, w, b, x], ref, (lambda h, w, b, x: torch.addmm(b, h, w) + x), \
            (lambda h, w, b, x: (h @ w + b) + x)
    if family == "up":      # (x, W1, b1) -> gelu_tanh(x W1 + b1)
        x, w, b = suite.rnd((M, K), dt, gen), suite.rnd((K, N), dt, gen, K ** -0.5), suite.rnd((N,), dt, gen)
        ref = suite.gelu_tanh64(x.double() @ w.double() + b.double())
        return [x, w, b], ref, (lambda x, w, b: F.gelu(torch.addmm(b, x, w), approximate="tanh")), \
            (lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"))
    # swiglu: (x, Wg, Wu) -> silu(x Wg) * (x Wu)
    x, wg, wu = suite.rnd((M, K), dt, gen), suite.rnd((K, N), dt, gen, K ** -0.5), suite.rnd((K, N), dt, gen,
                                                                                              K ** -0.5)
    g = x.double() @ wg.double()
    ref = g / (1 + torch.exp(-g)) * (x.double() @ wu.double())
    fn = (lambda x, wg, wu: F.silu(x @ wg) * (x @ wu))
    return [x, wg, wu], ref, fn, fn


def print_table(results):
    cols = ["shipped", "tma", "tma-np", "tma-bn192", "tma-bn64", "sk2", "sk4", "sk2-bn64", "sk4-bn64", "torch",
            "compile"]
    tcols = ["t8", "t16", "t4", "t1", "t32", "t108", "t116", "t208", "t216", "t308", "t316", "t408", "t416"]
    plain = [r for r in results if not r["name"].startswith("t-")]
    table = [r for r in results if r["name"].startswith("t-")]
    table_rows(plain, cols)
    if table:
        seen = [k for k in tcols if any(k in r["variants"] for r in table)]
        table_rows(table, seen + ["torch", "compile"])
    print("(ms, medians; NOT OK: failed the verifier, the float64 check or a bit-identical repeat; t<TILE>: "
          "the table entry's variant TILE = 100 * alternative + GROUP_M, alternative 0 the default, 1 128x64, "
          "2 split-K 128x128 S2, 3 split-K 128x64 S2, 4 split-K 128x64 S4)")


def table_rows(results, cols):
    print()
    print("| case | M x N x K | " + " | ".join(cols) + " | best ours / best torch |")
    print("|---|---|" + "---:|" * len(cols) + "---|")
    for r in results:
        v = r["variants"]
        cells = []
        for k in cols:
            if k not in v:
                cells.append("-")
                continue
            mark = "" if k in ("torch", "compile") else (
                "" if v[k]["check"] and v[k]["verified"] and v[k]["repeat_identical"] else " (NOT OK)")
            cells.append("%.4f%s" % (v[k]["ms"], mark))
        ours = [k for k in v if k not in ("torch", "compile") and v[k]["check"] and v[k]["verified"]]
        tb = [v[k]["ms"] for k in ("torch", "compile") if k in v]
        best = min(ours, key=lambda k: v[k]["ms"]) if ours else None
        ratio = "%s %.2fx" % (best, v[best]["ms"] / min(tb)) if best and tb else "-"
        print("| %s %s | %dx%dx%d | %s | %s |" % (r["name"], r["dtype"], r["M"], r["N"], r["K"], " | ".join(cells),
                                                 ratio))


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"] and len(sys.argv) == 4:
        sys.exit(prepare(sys.argv[2], sys.argv[3]))
    if sys.argv[1:2] == ["run"] and len(sys.argv) == 5:
        sys.exit(run(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(__doc__)
