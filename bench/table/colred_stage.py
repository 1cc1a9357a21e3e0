#!/usr/bin/env python3
"""colred_stage.py - stages the leading-dimension reduction cases for the
GPU machine (bench/table/colred-prepare.sh runs it; kernels/table/
colred_any.py).

    colred_stage.py STAGE BUILD_BIN [CASES]

CASES (default `heldout`, or $COLRED_CASES): `heldout` (the held-out draw's
leading-dimension reductions, `heldout.py gen DIR --seed 1 --count 50`),
`held7` (the seed-7 draw's, `--seed 7 --count 60`, names s7-...), `held23`
(the seed-23 draw's, `--seed 23 --count 60`, names s23-...), `s25`
(session 25's eleven cases), `big` (those of 64 MiB or more) or `all`. For each case (a family of
examples/bench/col*.mlir at some sizes and element type), writes the
model, outlines it, builds the default lowering's plan
(llm-fuse-reference --build: STAGE/<sg>/plan.json, and the opmath truth
reference for 16-bit IR), asks the pass offline (verify=none, sm_90a, the
replay set empty) which table entry answers, and builds every tune
variant the entry's requirements admit at the subgraph's sizes
(llm-fuse-build-kernel, sm_90a): STAGE/<sg>/v<k>/result.json +
kernel.cubin. With COLRED_EXPERIMENTS=1 (default), also candidates that
are not in the table (STAGE/<sg>/x<k>/: other block sizes, unrolls,
column widths, register budgets (MC) and the streaming loads,
EXPERIMENTS below; COLRED_EXP=run1: session 27's first grid), and with
COLRED_OLD=PATH (an earlier colred_any.py) that generator's variants
(STAGE/<sg>/o<k>/), to be timed beside the table's. STAGE/cases.json lists them for colred-device.sh and
colred_torch.py; with the subgraph's torch source and argument shapes
(bench/table/torch_ref.py) so that colred_torch.py can launch ours and
torch in one process.
"""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import colred_any  # noqa: E402
from build import outline_text  # noqa: E402
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# (case, family, dtype, sizes: (R, N) or (B, T, N))
CASES_S25 = [
    ("colsum_f32_8192x3072", "colsum", "f32", (8192, 3072)),
    ("colsum_f32_65536x1", "colsum", "f32", (65536, 1)),
    ("colsum_f16_1x16384", "colsum", "f16", (1, 16384)),
    ("colmean_bf16_65536x64", "colmean", "bf16", (65536, 64)),
    ("colmax_f16_4096x16384", "colmax", "f16", (4096, 16384)),
    ("colmax_f32_777x1000", "colmax", "f32", (777, 1000)),
    ("colsumsq_bf16_2048x2048", "colsumsq", "bf16", (2048, 2048)),
    ("coldiff_f32_16384x4096", "coldiff", "f32", (16384, 4096)),
    ("colsum3_bf16_64x256x768", "colsum3", "bf16", (64, 256, 768)),
    ("colsum_bt_f32_64x256x768", "colsum_bt", "f32", (64, 256, 768)),
    ("colsum_bf16_32768x16384", "colsum", "bf16", (32768, 16384)),
]
# the held-out draw's (bench/gpu/results/2026-11-25b-h200-heldout50.log)
CASES_HELD = [
    ("034_colsum_bt_f16_575x256x768", "colsum_bt", "f16", (575, 256, 768)),
    ("006_colsum_bt_f32_640x256x768", "colsum_bt", "f32", (640, 256, 768)),
    ("008_colsum_bt_f32_512x256x768", "colsum_bt", "f32", (512, 256, 768)),
    ("029_colsum_bt_f32_335x256x1166", "colsum_bt", "f32", (335, 256, 1166)),
    ("039_colsum_bt_f32_16x256x14336", "colsum_bt", "f32", (16, 256, 14336)),
    ("045_colmax_f32_3840x8192", "colmax", "f32", (3840, 8192)),
    ("022_colsum_f32_6x768", "colsum", "f32", (6, 768)),
    ("019_colmax_f32_7x3072", "colmax", "f32", (7, 3072)),
    ("038_colsumsq_f32_59x3072", "colsumsq", "f32", (59, 3072)),
    ("025_colsum_f32_8x3072", "colsum", "f32", (8, 3072)),
    ("015_colsum_f32_3259x3072", "colsum", "f32", (3259, 3072)),
    ("026_colmax_f16_2496x1536", "colmax", "f16", (2496, 1536)),
    ("040_colsumsq_bf16_512x1024", "colsumsq", "bf16", (512, 1024)),
    ("030_colsum_bt_f32_5x256x768", "colsum_bt", "f32", (5, 256, 768)),
    ("042_colsum_bt_f32_25x256x768", "colsum_bt", "f32", (25, 256, 768)),
]
# the second held-out draw's (`heldout.py gen DIR --seed 7 --count 60`;
# bench/gpu/results/2026-11-25c-h200-heldout-seed7.log): prefix s7-
CASES_HELD7 = [
    ("s7-007_colsum_bt_f16_512x256x1000", "colsum_bt", "f16", (512, 256, 1000)),
    ("s7-016_colsum_f32_14500x3072", "colsum", "f32", (14500, 3072)),
    ("s7-019_colsum_bt_f32_120x256x5120", "colsum_bt", "f32", (120, 256, 5120)),
    ("s7-034_colmax_f32_416x14336", "colmax", "f32", (416, 14336)),
    ("s7-010_colsumsq_f32_620x3072", "colsumsq", "f32", (620, 3072)),
    ("s7-024_colsum_f32_192x3072", "colsum", "f32", (192, 3072)),
    ("s7-008_colsum_bt_f16_3x256x768", "colsum_bt", "f16", (3, 256, 768)),
    ("s7-000_colsumsq_f32_16x3072", "colsumsq", "f32", (16, 3072)),
    ("s7-042_colsum_f32_16x5120", "colsum", "f32", (16, 5120)),
    ("s7-054_colsumsq_f32_2x3072", "colsumsq", "f32", (2, 3072)),
    ("s7-055_colsumsq_f32_1x3072", "colsumsq", "f32", (1, 3072)),
]
# the third held-out draw's (`heldout.py gen DIR --seed 23 --count 60`;
# bench/gpu/results/2026-11-25e-h200-heldout-seed23-summary.txt): prefix
# s23-, the four of 64 MiB or more that missed 90% of the 1 GiB copy first
CASES_HELD23 = [
    ("s23-017_colsum_bt_f32_432x256x768", "colsum_bt", "f32", (432, 256, 768)),
    ("s23-011_colmax_f32_7168x3072", "colmax", "f32", (7168, 3072)),
    ("s23-018_colsum_bt_f32_16x256x11008", "colsum_bt", "f32", (16, 256, 11008)),
    ("s23-023_colsum_bf16_14416x3072", "colsum", "bf16", (14416, 3072)),
    ("s23-000_colsum_bt_f16_32x256x768", "colsum_bt", "f16", (32, 256, 768)),
    ("s23-019_colsumsq_f32_1024x3072", "colsumsq", "f32", (1024, 3072)),
    ("s23-056_colsum_f16_4608x3072", "colsum", "f16", (4608, 3072)),
]
# cases of other families, to time the table's entry for them beside the
# same copies and torch (not colred_any's: their model is the held-out
# draw's own file, and no o<k> / x<k> are staged)
OTHER_MODELS = {
    "s23-032_softmax_tosa_bf16_6640x16384": ".device/heldout23/models/032_softmax_tosa_r6640_bf16.mlir",
}
# session 29's second call: the seed-23 cases, the softmax beside them, and
# earlier draws' cases where the table's variants changed (CFG 3 from 66
# CTAs: 016, 006, 008; MC 1 for TX 1: the narrow two; CFG 2: 007, 045)
CASES_MEMBW2 = CASES_HELD23 + [
    ("s23-032_softmax_tosa_bf16_6640x16384", "softmax_tosa", "bf16", (6640, 16384))] + [
    c for c in CASES_HELD7 + CASES_HELD + CASES_S25 if c[0].split("_")[0] in (
        "s7-016", "006", "008", "045", "s7-007", "022")
    or c[0] in ("colmean_bf16_65536x64", "colsum_f32_65536x1")]
CASES = {"s25": CASES_S25, "heldout": CASES_HELD, "held7": CASES_HELD7,
         "held23": CASES_HELD23, "membw2": CASES_MEMBW2, "all": CASES_HELD7 + CASES_HELD + CASES_S25}


def case_bytes(fam, dt, sizes):
    n = 1
    for x in sizes:
        n *= x
    return n * (4 if dt == "f32" else 2) * (2 if fam == "coldiff" else 1)


# `big`: the cases of 64 MiB or more (issue 15's copy-bandwidth target)
CASES["big"] = [c for c in CASES["all"] if case_bytes(*c[1:]) >= 64 << 20]

# Candidates beside the table's (COLRED_EXPERIMENTS=1): per case name
# prefix, a list of (BS, UN, NT, TX values, SPLIT values): BS the block
# size, UN the rows per thread in flight (up to 16), NT the streaming
# (evict-first) loads; TX and SPLIT become knobs.


def grid(txs, splits):
    """(BS, UN, NT, MC values, TX values, SPLIT values): 256, 512 and
    1024 threads, 8 or 16 rows in flight, plain and streaming loads, and
    MC, the CTAs an SM must hold (nvvm.minctasm: ptxas then gives each
    thread 65536 / (MC * BS) registers; without it ptxas keeps to 32 or so
    and holds few of the UN loads in flight)"""
    return ([(256, 8, nt, [4], txs, splits) for nt in (0, 1)]
            + [(256, 16, nt, [2, 4], txs, splits) for nt in (0, 1)]
            + [(256, 8, 1, [8], txs, splits)]
            + [(512, un, nt, [1, 2], txs, splits) for un in (8, 16) for nt in (0, 1)]
            + [(512, 8, 1, [4], txs, splits)]
            + [(1024, 8, nt, [1], txs, splits) for nt in (0, 1)])


# session 27's first call (COLRED_EXP=run1, with `big`): 513 variants of
# 13 cases, bench/NOTES.md "Session 27: leading-dimension reductions"
EXPERIMENTS_RUN1 = {
    "s7-007_": grid([8], [8]) + [(512, 8, 1, [1, 2], [4], [8])],
    "s7-016_": grid([8, 32], [4, 8]),
    "s7-019_": grid([8], [4, 8]),
    "034_": grid([8], [8]),
    "006_": grid([8], [8]),
    "029_": grid([16, 32], [8]),
    "039_": grid([8, 16], [1, 2]),
    "045_": grid([8, 16], [1, 2]),
    "colsum_f32_8192x3072": grid([8], [4, 8]),
    "colmax_f16_4096x16384": grid([8], [1, 2]),
}
# the second (default): the narrow mean (TX 1, 1024 threads; 1.15x
# torch.compile) with more rows in flight and registers, and CFG 3's form
# where the table's requirements leave it out (3259 rows)
EXPERIMENTS = {
    "colmean_bf16_65536x64": [(1024, un, nt, [1, 2], [1], [8]) for un in (4, 8, 16)
                              for nt in (0, 1)],
    "015_": [(256, 16, nt, [2], [8], [4, 8]) for nt in (0, 1)],
}
# and CFG 0 and 1 at MC 6 (ptxas's cap 40 registers; the table's MC 8 caps
# them at 32, where ptxas alone chose 31-40) on the small cases
for _pre in ("s7-000_", "s7-024_", "s7-054_", "s7-010_", "s7-034_", "022_", "019_", "038_",
             "025_", "026_", "040_", "030_", "042_", "colmax_f32_777", "colsumsq_bf16_2048",
             "colsum3_bf16", "colsum_bt_f32_64"):
    EXPERIMENTS[_pre] = [(256, 4, 0, [6], [8], [1, 4, 8]), (256, 4, 0, [6], [32], [1])]
# session 29 (helper MEMBW), the seed-23 cases of 64 MiB or more: 017's
# 768 columns make 24 strips of TX 8 (192 CTAs at SPLIT 8 on 132 SMs):
# narrower and wider strips, more registers (MC), streaming loads (the
# table's rule leaves them off above 320 MB: 017 is 340 MB), and session
# 26's 512-thread forms; the others: the streaming 16-row form at other
# widths and splits
EXPERIMENTS.update({
    "s23-017_": [(256, 16, 0, [2, 4], [4, 8, 16], [4, 8]),
                 (256, 16, 1, [2, 4], [4, 8], [8]),
                 (256, 8, 0, [4, 8], [4, 8], [8]),
                 (256, 8, 1, [4], [8], [8]),
                 (512, 4, 0, [2, 4], [8], [8]),
                 (512, 8, 0, [2], [4, 8], [8]),
                 (1024, 8, 0, [1], [8], [8])],
    "s23-011_": [(256, 16, 1, [2], [8, 32], [1, 4, 8]), (256, 8, 1, [4, 8], [8], [1, 4])],
    "s23-023_": [(256, 16, 1, [2], [8, 16, 32], [4, 8]), (256, 8, 1, [4], [8], [4, 8])],
    "s23-018_": [(256, 16, 1, [2], [8, 16, 32], [1, 4]), (256, 8, 1, [4], [8], [1, 2])],
})
if os.environ.get("COLRED_EXP") == "run1":
    EXPERIMENTS = EXPERIMENTS_RUN1


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("colred_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-600:]))
    return r


def form_of(fam, sizes):
    if len(sizes) == 3:
        return "b1" if sizes[0] == 1 else "any"
    r, n = sizes
    return "col1" if n == 1 else "row1" if r == 1 else "square" if r == n else "any"


def group_of(opt, fam, dt, sizes):
    form = form_of(fam, sizes)
    base = (colred_any.FORMS3 if len(sizes) == 3 else colred_any.FORMS2)[form]
    groups = outline_text(opt, colred_any.example_text(fam, dt, base))
    return form, base, [x for x in groups if x.get("class") == "reduction"][0]


def exp_texts(opt, fam, dt, sizes, spec):
    """(label, template text) of the experimental candidates of one case"""
    form, base, g = group_of(opt, fam, dt, sizes)
    out = []
    for bs, un, nt, mcs, txs, splits in spec:
        tune = ["llm-fuse.tune MC = %s" % ", ".join(map(str, mcs)),
                "llm-fuse.tune TX = %s" % ", ".join(map(str, txs)),
                "llm-fuse.tune-require NV >= TX",
                "llm-fuse.tune SPLIT = %s" % ", ".join(map(str, splits)),
                "llm-fuse.tune-require SPLIT == 1 || RR >= SPLIT * %s * 2" % colred_any.TY]
        rules = dict(TX="TX", BS=str(bs), UN=str(un), NT=str(nt), MC="MC")
        text, _ = colred_any._render(fam, dt, form, base, rules=rules, tune=tune,
                                     umax=max(un, colred_any.UMAX))(g)
        out.append(("BS=%d UN=%d NT=%d" % (bs, un, nt), text))
    return out


def old_texts(opt, fam, dt, sizes, path):
    """the template of the generator at path (an earlier colred_any.py,
    COLRED_OLD) for this case: its variants are timed beside the table's"""
    import importlib.util
    spec = importlib.util.spec_from_file_location("colred_old", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    form, base, g = group_of(opt, fam, dt, sizes)
    return mod._render(fam, dt, form, base)(g)[0]


def read_entry(path):
    """a table entry's JSON (kernels/table/build.py's read_entry where it
    exists; the shipped entries may be gzip files, *.json.gz)"""
    try:
        from build import read_entry as rd
        return rd(path)
    except ImportError:
        import gzip
        op = gzip.open if path.endswith(".gz") else open
        with op(path, "rt") as fh:
            return json.load(fh)


def build(binp, d, text, sig):
    """skinny_stage.build_kernel, a failed build's folder removed"""
    return build_kernel(binp, d, text, sig, keep_failed=False)


def main():
    stage, binp = sys.argv[1:3]
    which = sys.argv[3] if len(sys.argv) > 3 else os.environ.get("COLRED_CASES", "heldout")
    exps = os.environ.get("COLRED_EXPERIMENTS", "1") == "1"
    opt = os.path.join(binp, "llm-fuse-opt")
    models = os.path.join(stage, "models")
    os.makedirs(models, exist_ok=True)
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    cases = []
    for name, fam, dt, sizes in CASES[which]:
        path = os.path.join(models, name + ".mlir")
        if name in OTHER_MODELS:
            text = open(os.path.join(ROOT, OTHER_MODELS[name])).read()
        else:
            text = colred_any.example_text(fam, dt, sizes)
        open(path, "w").write(text)
        outl = os.path.join(models, name + ".outlined.mlir")
        run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
        run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", stage,
             outl])
        rep = os.path.join(models, name + ".json")
        cache = os.path.join(stage, "cache-" + name)
        run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
             "pattern-table=%s cache-dir=%s report=%s" % (
                 empty, os.path.join(ROOT, "kernels/table"), cache, rep), path, "-o", os.devnull],
            env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
        shutil.rmtree(cache, ignore_errors=True)
        subs = json.load(open(rep))["subgraphs"]
        assert len(subs) == 1, (name, len(subs))
        s = subs[0]
        ent = s.get("model", "")
        case = dict(case=name, family=fam, dtype=dt, sizes=list(sizes), sg=s["name"],
                    signature=s["signature"], entry=ent, variants={})
        other = name in OTHER_MODELS
        if "/" not in ent or ("colred" not in ent and not other):
            print("colred_stage: %s: not answered by a colred entry (%s)" % (name, ent),
                  file=sys.stderr)
            cases.append(case)
            continue
        f = ent.split("/", 1)[1]
        tmpl = read_entry(os.path.join(ROOT, "kernels/table/v1", f))["template"]
        bound = bind_sizes(tmpl, s["signature"])
        todo = [("v%d" % i, label, text) for i, (label, text) in enumerate(variants(tmpl, bound))]
        if os.environ.get("COLRED_OLD") and not other:
            t_old = old_texts(opt, fam, dt, sizes, os.environ["COLRED_OLD"])
            todo += [("o%d" % i, label, text) for i, (label, text) in
                     enumerate(variants(t_old, bind_sizes(t_old, s["signature"])))]
        if exps and not other:
            k = 0
            for pre, spec in EXPERIMENTS.items():
                if not name.startswith(pre):
                    continue
                for lab0, text0 in exp_texts(opt, fam, dt, sizes, spec):
                    for label, text in variants(text0, bind_sizes(text0, s["signature"])):
                        todo.append(("x%d" % k, "%s %s" % (label, lab0), text))
                        k += 1
        for tag, label, text in todo:
            j = build(binp, os.path.join(stage, s["name"], tag), text, s["signature"])
            print("colred_stage: %-26s %s %s %-40s %s %s" % (
                name, s["name"], tag, label, "built" if j.get("ok") else "FAILED",
                (j.get("ptxas_info") or j.get("message", ""))[:150]), flush=True)
            if j.get("ok"):
                case["variants"][tag] = label
        cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
