#!/usr/bin/env python3
"""skinny_mma_bench.py - issue 15 point 7: SwiGLU in f16 / bf16 at 9-64 rows
(held-out seed 7 031_swiglu_r30_f16, seed 1 016_swiglu_r61_f16), the
table's entry now (kernels/table/skinny_any.py's 0skinny-mma-swiglu-*:
gemm_skinny.py kind skinny_mma16, mma.sync) against the entry it gave
before (TODAY: a copy of kernels/table from before the change; gemm_any.py's
1wgmma entry), torch eager and torch.compile, side by side in one process.

    python3 bench/table/skinny_mma_bench.py prepare STAGE BIN TODAY HO7 HO1
        (bench/table/skinny-mma-prepare.sh) on the build machine: as
        bench/table/gemm16_bench.py prepare (the pass offline picks the
        entry, every admitted tune variant built for sm_90a), plus, for the
        EXPLORE cases, the new template's tilings at sizes the entry's row
        bound refuses (tag x<i>: where should the bound be?).
    python3 bench/table/skinny_mma_bench.py run STAGE OUT VDIR
        on the GPU: bench/table/gemm16_bench.py run (NaN-poisoned outputs
        compared with torch eager, then ours, eager and torch.compile timed
        with bench/gpu/run.py's Timer), OUT/gemm16.json and the table.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# (case, source): ("heldout", 7 or 1, model name), or ("example", path,
# dtype of the file, {size in file: new size}, new dtype)
CASES = [
    ("ho7_031", ("heldout", 7, "031_swiglu_r30_f16")),
    ("ho1_016", ("heldout", 1, "016_swiglu_r61_f16")),
    ("swiglu_r16_f16", ("example", "examples/swiglu.mlir", "bf16", {8192: 16}, "f16")),
] + [("swiglu_r%d" % m, ("example", "examples/swiglu.mlir", "bf16", {8192: m}, "bf16"))
     for m in (2, 4, 8, 9, 16, 30, 32, 40, 48, 56, 61, 64)]
MAX_VARIANTS = 8
# cases where the new mma template is also built with its row bound lifted
# (the entry's `S0 <= BOUNDMMA` line dropped, tag x<i>; run 2 had the
# bound 9 <= M <= 64 and the FMA entry first at M <= 8: is the mma kernel
# faster there?)
# (run 2: {"swiglu_r%d" % m: "6e1c8b1a1893e29e-0skinny-mma-swiglu-bf16" for m
# in (2, 4, 8)}, when the entry was named 0skinny-swiglu-mma-bf16 and
# admitted 9 <= M <= 64; the shipped entry answers those sizes itself)
EXPLORE = {}
# cases where other tilings of the same kernel are also built (tag y<i>):
# the shipped ALTSMMA replaced by these (each admitted where M <= BM; the
# entry's row bound dropped), to see which tilings should ship
EXPLORE_ALTS = ("swiglu_r16", "swiglu_r32", "swiglu_r48", "swiglu_r64")
ALTS_Y = [(dict(BM=16, BN=64, BK=64, WN=32, KW=4, S=6), None),
          (dict(BM=32, BN=64, BK=64, WN=16, KW=2, S=5), None),
          (dict(BM=32, BN=64, BK=64, WN=32, KW=4, S=4), None),
          (dict(BM=48, BN=64, BK=128, WN=16, KW=2, S=3), None),
          (dict(BM=64, BN=64, BK=64, WN=16, KW=2, S=5), None),
          (dict(BM=64, BN=32, BK=64, WN=16, KW=4, S=6), None),
          (dict(BM=64, BN=64, BK=128, WN=16, KW=2, S=3), None),
          (dict(BM=64, BN=64, BK=64, WN=32, KW=4, S=4), None)]
BOUND_LINE = re.compile(r"\n *// llm-fuse\.tune-require (S0 >= \d+ && )?S0 <= \d+( && S2 >= \d+)?\n")


def explore_template(dtype):
    """the SwiGLU mma template with ALTS_Y as its tilings, no row bound"""
    sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
    import gemm_any
    import skinny_any
    shipped = skinny_any.ALTSMMA
    skinny_any.ALTSMMA = ALTS_Y
    try:
        t = [x for x in skinny_any.templates() if x["name"] == "0skinny-mma-swiglu-" + dtype][0]
        text, _ = t["render"]({"pattern_sizes": {"S0": gemm_any.EX_M, "S1": 4096, "S2": 14336}})
    finally:
        skinny_any.ALTSMMA = shipped
    return BOUND_LINE.sub("\n", text)


def model_text(src, ho):
    if src[0] == "heldout":
        return open(os.path.join(ho[src[1]], "models", src[2] + ".mlir")).read()
    from heldout import dtype_rewrite, size_rewrite
    _, path, sdt, sizes, dt = src
    text = size_rewrite(open(os.path.join(ROOT, path)).read(), sizes, {})
    return dtype_rewrite(text, sdt, dt) if dt != sdt else text


def prepare(stage, binp, today, ho7, ho1):
    from gemm16_bench import build_staged, entry_variants, stage_model, staged_case
    from skinny_stage import bind_sizes, variants
    ho = {7: ho7, 1: ho1}
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    cases, bad = [], 0
    for name, src in CASES:
        d = os.path.join(stage, name)
        os.makedirs(d, exist_ok=True)
        gtext, picked = stage_model(d, model_text(src, ho), binp, today, empty)
        for sg, p in sorted(picked.items()):
            case = staged_case(name, sg, p, gtext)
            for tag, f, tmpl, vs in entry_variants(name, sg, p, today, case, MAX_VARIANTS):
                if tag == "new" and name in EXPLORE:
                    xt = read_entry(os.path.join(ROOT, "kernels", "table", "v1", EXPLORE[name] + ".json"))["template"]
                    xt = BOUND_LINE.sub("\n", xt)
                    case["entries"]["x"] = EXPLORE[name] + " (row bound lifted)"
                    vs += [("x", lb, t) for lb, t in variants(xt, bind_sizes(xt, p["signature"]))[:MAX_VARIANTS]]
                if tag == "new" and name in EXPLORE_ALTS:
                    dty = re.search(r"x(bf16|f16)>", p["signature"]).group(1)
                    yt = explore_template(dty)
                    vs += [("y", lb, t) for lb, t in variants(yt, bind_sizes(yt, p["signature"]))[:MAX_VARIANTS]]
                bad += build_staged(binp, d, name, sg, p, vs, case, 140)
            cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"] and len(sys.argv) == 7:
        sys.exit(prepare(*sys.argv[2:7]))
    if sys.argv[1:2] == ["run"] and len(sys.argv) == 5:
        import gemm16_bench
        sys.exit(gemm16_bench.run(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(__doc__)
