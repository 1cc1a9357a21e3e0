#!/usr/bin/env python3
"""gemm16_bench.py - issue 15 point 7's slow 16-bit GEMMs (held-out
003_swiglu_r2, 017_gemm_epilogue_r142_f16, 005_mlp_block_r1024_d2048_f8192)
and a few sizes the table already served, ours (the pattern table's entry
now and the one it gave before) against torch eager and torch.compile,
side by side in one process on the GPU.

    python3 bench/table/gemm16_bench.py prepare STAGE BIN TODAY_TABLE [HELDOUT_DIR]
        (bench/table/gemm16-prepare.sh) on the build machine: per case
        outlines the model, builds the default lowering (the verifier's
        reference: STAGE/<case>/<sg>/plan.json + k<N>.cubin), asks the pass
        offline (verify=none, sm_90a) which table entry answers each
        contraction, with kernels/table ("new") and with TODAY_TABLE (the
        table before this change, a folder holding v1/: "old"), builds every
        tune variant of both entries that their requirements admit at the
        subgraph's sizes (llm-fuse-build-kernel sm_90a, STAGE/<case>/<sg>/
        v-new<i> and v-old<i>; an old entry whose template is unchanged is
        not built twice), and translates the subgraph to torch
        (bench/table/torch_ref.py). STAGE/cases.json lists it all. For the
        EXPLORE cases the new entry's split-K tilings are also built past
        their one-wave admission (v-x<i>, grids up to four waves): whether
        the wave bound is right there.
        Session 27: CASES are the M-tail cases (held-out 017 of the seed-1
        draw, 023 and 041 of the seed-7 draw: HELDOUT_DIR may name several
        folders, colon-separated); GEMM16_CASES=26 gives session 26's. For
        the TILINGS cases only the subgraphs of the named gemm_any family
        are staged, and each EXPLORE_TMA tiling is rendered into a template
        of [default, that tiling] and built too (tag e<i>; GEMM16_TILINGS=0:
        none). GEMM16_EXPLORE (comma-separated cases): session 26's x<i>
        split-K variants past one wave.
    python3 bench/table/gemm16_bench.py run STAGE OUT VDIR
        (bench/table/gemm16-device.sh, after the verification worker's
        verdicts in VDIR) on the GPU: per subgraph, inputs uniform in
        [-1, 1) (as bench/table/torch_time.py draws them), each variant
        launched on NaN-poisoned outputs and compared with torch eager by
        torch_time.py's rule, then all of them, torch eager and
        torch.compile (default mode) timed by bench/gpu/run.py's method (L2
        flush, events, interleaved rounds, medians). Prints the table last;
        OUT/gemm16.json. GEMM16_PAD_US=P: every case timed a second time
        with torch_time.py's timer (P us of GPU sleep before each sample,
        bench/gpu/run.py's PadTimer; the held-out harness uses 200), as
        ms_pad in the JSON and a "(pad P us)" line.
        Session 28: + held-out 050 (seed 7; its one-row GEMMs, the
        *_mma_row entries) and 028 (seed 7, the 256-row down-projection);
        EXPLORE_TMA: the 256 x 128 split with and without a_shift.
        Session 29: GEMM16_CASES=29 (run 1: held-out seed 23 045 / 029 / 001,
        017, 023, 041, the f32 024 / 018, the SwiGLU K / N tail probes with
        the EXPLORE_TMA tilings (tag e), 001 with EXPLORE_WGMMA's (the
        *_1wgmma entry), and COVER cases: one variant per tiling, no
        torch.compile: the stage_carry / one_epilogue patches verified on
        every changed entry) and GEMM16_CASES=29b (run 2: the shipped
        entries, N and K off the tiles); GEMM16_PAD_US times only the cases
        with torch.compile.
"""
import itertools
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
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# (case, source): ("heldout", model name) from HELDOUT_DIR/models, or
# ("example", path, dtype of the file, {size in file: new size}, new dtype)
# session 27 (issue 15 point 7, the M tail): held-out 017 (seed 1), 023 and
# 041 (seed 7: HELDOUT_DIR seed1:seed7), 005's down-projection; session
# 26's cases: CASES26
CASES = [
    ("ho017", ("heldout", "017_gemm_epilogue_r142_f16")),
    ("ho7_023", ("heldout", "023_gemm_epilogue_r533_bf16")),
    ("ho7_041", ("heldout", "041_mlp_block_r9531_f16")),
    ("ho005", ("heldout", "005_mlp_block_r1024_d2048_f8192")),
    ("relu_r256_f16", ("example", "examples/gemm_epilogue.mlir", "f32", {1024: 256}, "f16")),
    ("relu_r512_h2048_bf16", ("example", "examples/gemm_epilogue.mlir", "f32", {1024: 512, 8192: 2048}, "bf16")),
    ("mlp_r4096_d1024_bf16", ("example", "examples/mlp_block.mlir", "bf16", {768: 1024}, "bf16")),
    # session 28: held-out 050's one-row GEMMs (the *_mma_row entries' stage counts)
    ("ho7_050", ("heldout", "050_minigpt_block_r1_d640_f2560_heads10_f16")),
    ("ho7_028", ("heldout", "028_mlp_block_r256")),
]
CASES26 = [
    ("ho003", ("heldout", "003_swiglu_r2")),
    ("ho017", ("heldout", "017_gemm_epilogue_r142_f16")),
    ("ho005", ("heldout", "005_mlp_block_r1024_d2048_f8192")),
    ("swiglu_r4", ("example", "examples/swiglu.mlir", "bf16", {8192: 4}, "bf16")),
    ("swiglu_r8", ("example", "examples/swiglu.mlir", "bf16", {8192: 8}, "bf16")),
    ("swiglu_r16", ("example", "examples/swiglu.mlir", "bf16", {8192: 16}, "bf16")),
    ("swiglu_r2_f16", ("example", "examples/swiglu.mlir", "bf16", {8192: 2}, "f16")),
    ("relu_r256_f16", ("example", "examples/gemm_epilogue.mlir", "f32", {1024: 256}, "f16")),
    ("gpt_r512_bf16", ("example", "examples/minigpt_block.mlir", "f32", {1024: 512}, "bf16")),
]
# session 29: the 16-bit GEMMs still > 10% behind torch.compile on the H200 (held-out seed 23 045's SwiGLU with
# K = 1000, N = 2008; 029's qkv, 1024 x 1600 -> 4800; seed 7 023, seed 1 017, seed 7 041) and, for the build-time
# patches (stage_carry on every gemm_any TMA entry, one_epilogue on the 3xTF32 fc entry), one case per family
# and element type of those entries. COVER cases: no torch.compile, and of each entry only the first variant
# of each tiling (TILE // 100), at most COVER_VARIANTS: verification of the changed kernels, timed before / after
CASES29 = [
    ("ho23_045", ("heldout", "045_swiglu_r2560_d1000_f2008")),
    ("ho23_029", ("heldout", "029_minigpt_block_r1024_d1600_f6400_heads25_bf16")),
    ("ho23_001", ("heldout", "001_swiglu_r80_d2560")),
    # 045's tails: K = 1000 and N = 2008 against multiples of 64 (is it TMA's zero fill in K / N?)
    ("swiglu_r2560_k1024_n2048", ("example", "examples/swiglu.mlir", "bf16", {8192: 2560, 4096: 1024, 14336: 2048},
                                  "bf16")),
    ("swiglu_r2560_k1000_n2048", ("example", "examples/swiglu.mlir", "bf16", {8192: 2560, 4096: 1000, 14336: 2048},
                                  "bf16")),
    ("swiglu_r2560_k1024_n2008", ("example", "examples/swiglu.mlir", "bf16", {8192: 2560, 4096: 1024, 14336: 2008},
                                  "bf16")),
    ("ho017", ("heldout", "017_gemm_epilogue_r142_f16")),
    ("ho7_023", ("heldout", "023_gemm_epilogue_r533_bf16")),
    ("ho7_041", ("heldout", "041_mlp_block_r9531_f16")),
    ("ho024", ("heldout", "024_minigpt_mlp_r6837_d1600_f3208")),
    ("ho005", ("heldout", "005_mlp_block_r1024_d2048_f8192")),
    ("ho018", ("heldout", "018_gemm_epilogue_r160_h4096")),
    ("gpt_r512_f32", ("example", "examples/minigpt_block.mlir", "f32", {1024: 512}, "f32")),
    ("gpt_r384_f16", ("example", "examples/minigpt_block.mlir", "f32", {1024: 384}, "f16")),
    ("swiglu_r1024_f16", ("example", "examples/swiglu.mlir", "bf16", {8192: 1024, 14336: 2048, 4096: 768}, "f16")),
]
COVER = ("ho005", "ho018", "gpt_r512_f32", "gpt_r384_f16", "swiglu_r1024_f16", "mlp_r512_f16_n", "relu_r384_f16_n",
         "swiglu_r1024_f16_n")
COVER_VARIANTS = 4
# session 29 run 2: the shipped entries (n_shift on every 16-bit *_0tma entry, SwiGLU's 128 x (2 x 128) tiling, qkv's
# 128 x 192, stage_carry) against the table before the session; N (and K) not multiples of the tiles where
# possible, so that the shifted column tiles run (the 3xTF32 entries are unchanged since run 1)
CASES29B = [
    ("ho23_045", ("heldout", "045_swiglu_r2560_d1000_f2008")),
    ("ho23_029", ("heldout", "029_minigpt_block_r1024_d1600_f6400_heads25_bf16")),
    ("swiglu_r2560_k1000_n2048", ("example", "examples/swiglu.mlir", "bf16", {8192: 2560, 4096: 1000, 14336: 2048},
                                  "bf16")),
    ("swiglu_r2560_k1024_n2008", ("example", "examples/swiglu.mlir", "bf16", {8192: 2560, 4096: 1024, 14336: 2008},
                                  "bf16")),
    ("ho017", ("heldout", "017_gemm_epilogue_r142_f16")),
    ("ho7_023", ("heldout", "023_gemm_epilogue_r533_bf16")),
    ("ho7_041", ("heldout", "041_mlp_block_r9531_f16")),
    ("ho005", ("heldout", "005_mlp_block_r1024_d2048_f8192")),
    ("gpt_r384_f16", ("example", "examples/minigpt_block.mlir", "f32", {1024: 384}, "f16")),
    ("mlp_r512_f16_n", ("example", "examples/mlp_block.mlir", "bf16", {4096: 512, 768: 1000, 3072: 2008}, "f16")),
    ("relu_r384_f16_n", ("example", "examples/gemm_epilogue.mlir", "f32", {1024: 384, 8192: 2008}, "f16")),
    ("swiglu_r1024_f16_n", ("example", "examples/swiglu.mlir", "bf16", {8192: 1024, 14336: 2008, 4096: 1000}, "f16")),
]
if os.environ.get("GEMM16_CASES") == "26":
    CASES = CASES26
if os.environ.get("GEMM16_CASES") == "29":
    CASES = CASES29
if os.environ.get("GEMM16_CASES") == "29b":
    CASES = CASES29B
MAX_VARIANTS = 8
# TILINGS: cases whose new gemm_any *_0tma entry is also rendered with each
# exploration tiling of EXPLORE_TMA (a template of the default and
# that one tiling, admitted everywhere): tag e<i>, the tiling's variant
# alone (session 27: which tilings to offer, before they are offered)
TILINGS = {"ho017": "gemm_relu", "ho7_023": "gemm_relu", "ho7_041": "mlp_down", "ho005": "mlp_down",
           "relu_r256_f16": "gemm_relu", "relu_r512_h2048_bf16": "gemm_relu", "mlp_r4096_d1024_bf16": "mlp_down",
           "ho7_028": "mlp_down"}
if os.environ.get("GEMM16_CASES") == "29b":
    TILINGS = {}
if os.environ.get("GEMM16_CASES") == "29":
    TILINGS = {"ho23_045": "swiglu", "ho23_001": "swiglu", "swiglu_r2560_k1024_n2048": "swiglu",
               "swiglu_r2560_k1000_n2048": "swiglu", "swiglu_r2560_k1024_n2008": "swiglu"}
# PROBE cases (run 1): the new entry's first variant and the exploration tilings only (no old entry)
PROBE = ("swiglu_r2560_k1024_n2048", "swiglu_r2560_k1000_n2048", "swiglu_r2560_k1024_n2008") \
    if os.environ.get("GEMM16_CASES") == "29" else ()
if os.environ.get("GEMM16_TILINGS") == "0":
    TILINGS = {}
EXPLORE_TMA = [
    # session 29: SwiGLU at 2560 x 1000 -> 2008 (the entry's ping-pong 128 x (2 x 64) default, no alternative
    # admitted over M = 1024)
    (dict(BN=128, stages=4, pingpong=0, persistent=1, group_m=8), "coop 128x128", ("swiglu",)),
    (dict(BN=128, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=8), "coop 128x128 G132", ("swiglu",)),
    (dict(BN=64, stages=7, pingpong=0, persistent=1, group_m=8), "coop 128x64 7st", ("swiglu",)),
    (dict(BM=256, BN=64, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=8), "coop 256x64 G132",
     ("swiglu",)),
    (dict(BM=128, BN=64, stages=6, pingpong=1, persistent=1, group_m=8), "pingpong 128x64 6st", ("swiglu",)),
    (dict(BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), "128x128 S2", ("swiglu",)),
]
# session 29: the wgmma (cp.async) entries' tilings, for SwiGLU at 65..128 rows (held-out seed 23 001: 80 x 2560
# -> 14336; the entry's 128 x 128 default makes 112 CTAs, its 64 x 64 tiling two row tiles of 224)
EXPLORE_WGMMA = [
    (dict(WGS=2, BN=64, stages=4, group_m=8), "wgmma 128x64"),
    (dict(WGS=2, BN=64, stages=6, group_m=8), "wgmma 128x64 6st"),
    (dict(WGS=1, BN=64, stages=6, group_m=8), "wgmma 64x64 6st"),
    (dict(WGS=1, BN=128, stages=4, group_m=8), "wgmma 64x128"),
]
EXPLORE_TMA_RUN2_S28 = [
    # (gemm_wgmma_tma.py overrides of the family's default, label[, the families it is tried on])
    # session 28 run 2: A boxes inside M (a_shift) on the 256 x 128 split
    (dict(BM=256, BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8, a_shift=1),
     "coop 256x128 S2 shift", ("gemm_relu",)),
    (dict(BM=256, BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), "coop 256x128 S2",
     ("gemm_relu",)),
]
# session 28 run 1 tried, on the GEMM + ReLU cases, the 256 x 128 split with and without skipping the wgmmas of
# m64 row blocks wholly past M, the 128 x 256 split with it, and 256 x 128 / 128 x 256 / 128 x 192 persistent
# with it and a row-major raster (knobs skip_mb, raster_m1 of a draft of gemm_wgmma_tma.py, not kept: no gain;
# bench/NOTES.md session 28)
EXPLORE_TMA_RUN2_S27 = [   # session 27 run 2
    # run 2: meant as the TAIL_M tilings at other GROUP_M values, but an alternative's raster takes GROUP_M
    # from the knob (TILE % 100 = the default's configured value, gen_gemm.generate_alternatives), so these
    # built the same cubins as the shipped tilings: repeat timings of them
    (dict(BM=256, BN=128, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=1), "coop 256x128 G1",
     ("mlp_down",)),
    (dict(BM=256, BN=128, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=16), "coop 256x128 G16",
     ("mlp_down",)),
    (dict(BN=192, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=1), "coop 128x192 G1", ("gemm_relu",)),
    (dict(BN=192, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=16), "coop 128x192 G16", ("gemm_relu",)),
]
EXPLORE_TMA_RUN1 = [   # session 27 run 1
    (dict(BM=256, BN=128, stages=4, pingpong=0, persistent=1, group_m=8), "coop 256x128"),
    (dict(BM=256, BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), "coop 256x128 S2"),
    (dict(BM=128, BN=128, stages=4, pingpong=1, persistent=1, group_m=8), "pingpong 128x128"),
    (dict(BN=256, stages=4, pingpong=0, persistent=0, splitk=4, group_m=8), "128x256 S4"),
    (dict(BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), "128x128 S2"),
    (dict(BN=192, stages=4, pingpong=0, persistent=1, group_m=8), "coop 128x192"),
    (dict(BN=192, stages=4, pingpong=0, persistent=0, splitk=3, group_m=8), "128x192 S3"),
]
# cases whose new entry's split-K tilings are also built past their
# one-wave admission (tag x<i>; exploration: is the wave bound right here?)
EXPLORE = tuple(x for x in os.environ.get("GEMM16_EXPLORE", "").split(",") if x)   # session 26: ho017,ho005,...
WAVE = "<= 132)"


def run_tool(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("gemm16_bench: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-800:]))
    return r


def model_text(src, heldout):
    if src[0] == "heldout":
        for d in heldout.split(":"):   # HELDOUT_DIR: one folder or several, colon-separated
            path = os.path.join(d, "models", src[1] + ".mlir")
            if os.path.exists(path):
                return open(path).read()
        sys.exit("gemm16_bench: %s in none of %s" % (src[1], heldout))
    from heldout import dtype_rewrite, size_rewrite
    _, path, sdt, sizes, dt = src
    text = size_rewrite(open(os.path.join(ROOT, path)).read(), sizes, {})
    return dtype_rewrite(text, sdt, dt) if dt != sdt else text


def stage_model(d, text, binp, today, empty):
    """Writes d/model.mlir, outlines it, builds its reference and compiles it
    offline (verify=none, sm_90a) with the table now ("new") and TODAY's
    ("old"). Returns torch_ref's text of the outlined module and, per
    contraction subgraph, {"signature", "new": entry, "old": entry}."""
    import torch_ref
    opt = os.path.join(binp, "llm-fuse-opt")
    path = os.path.join(d, "model.mlir")
    open(path, "w").write(text)
    outl = run_tool([opt, "--llm-fuse-outline=remarks=false", path]).stdout
    open(os.path.join(d, "outlined.mlir"), "w").write(outl)
    run_tool([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", d,
              os.path.join(d, "outlined.mlir")])
    gtext = torch_ref.prepare(opt, outl)
    picked = {}
    for tag, table in (("new", os.path.join(ROOT, "kernels", "table")), ("old", today)):
        rep = os.path.join(d, "report.%s.json" % tag)
        cache = os.path.join(d, "cache-" + tag)
        shutil.rmtree(cache, ignore_errors=True)
        run_tool([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s pattern-table=%s "
                  "cache-dir=%s report=%s" % (empty, table, cache, rep), path, "-o", os.devnull],
                 env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
        shutil.rmtree(cache, ignore_errors=True)
        for s in json.load(open(rep))["subgraphs"]:
            if s["class"] != "contraction":
                continue
            picked.setdefault(s["name"], {"signature": s["signature"]})[tag] = s.get("model", "")
    return gtext, picked


def staged_case(name, sg, p, gtext):
    """The cases.json record of subgraph sg of case `name` (p: stage_model's
    picked entry), with its torch translation; entries and variants empty."""
    import torch_ref
    src_t, sig_t = torch_ref.translate(gtext, sg)
    return dict(case=name, sg=sg, signature=p["signature"], entries={}, variants={},
                torch=dict(source=src_t, args=sig_t["args"], results=sig_t["results"]))


def entry_variants(name, sg, p, today, case, max_variants):
    """[(tag, file, template, [(tag, label, text)])] for the entry the pass
    took with today's table ("new") and with the copy in `today` ("old"),
    the old one left out (case "entries" notes it) when it is the new one's
    text; records each in case["entries"]."""
    from skinny_stage import bind_sizes, variants
    out, texts = [], {}
    for tag in ("new", "old"):
        ent = p.get(tag) or ""
        if "/" not in ent:
            print("prepare: %s %s %s: no table entry (%s)" % (name, sg, tag, ent))
            continue
        f = ent.split("/", 1)[1]
        tdir = os.path.join(ROOT, "kernels", "table", "v1") if tag == "new" else os.path.join(today, "v1")
        tmpl = read_entry(os.path.join(tdir, f))["template"]
        case["entries"][tag] = f
        texts[tag] = tmpl
        if tag == "old" and texts.get("new") == tmpl:
            case["entries"]["old"] += " (= new)"
            continue
        out.append((tag, f, tmpl, [(tag, lb, t) for lb, t in
                                   variants(tmpl, bind_sizes(tmpl, p["signature"]))[:max_variants]]))
    return out


def build_staged(binp, d, name, sg, p, vs, case, width, keep=None):
    """Builds each (tag, label, text) of vs into d/sg/v-<tag><i> and records
    the built ones in case["variants"] (keep(tag, result) False: built but
    dropped); returns how many failed."""
    from skinny_stage import build_kernel
    bad = 0
    for i, (vt, label, text) in enumerate(vs):
        vd = os.path.join(d, sg, "v-%s%d" % (vt, i))
        j = build_kernel(binp, vd, text, p["signature"])
        print("prepare: %-14s %s %-4s v%d %-24s %s grid %s %s" % (
            name, sg, vt, i, label, "built" if j.get("ok") else "FAILED", j.get("grid"),
            (j.get("ptxas_info") or j.get("message", ""))[:width]), flush=True)
        if j.get("ok") and keep and not keep(vt, j):
            shutil.rmtree(vd)
        elif j.get("ok"):
            case["variants"]["%s%d" % (vt, i)] = label
        else:
            bad += 1
            shutil.rmtree(vd)
    return bad


def prepare(stage, binp, today, heldout):
    from skinny_stage import bind_sizes, variants
    opt = os.path.join(binp, "llm-fuse-opt")
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    cases, bad = [], 0
    for name, src in CASES:
        d = os.path.join(stage, name)
        os.makedirs(d, exist_ok=True)
        gtext, picked = stage_model(d, model_text(src, heldout), binp, today, empty)
        for sg, p in sorted(picked.items()):
            if TILINGS.get(name) and "gemm_any_%s_" % TILINGS[name] not in (p.get("new") or ""):
                print("prepare: %s %s: not a %s subgraph, left out" % (name, sg, TILINGS[name]))
                continue
            case = staged_case(name, sg, p, gtext)
            if name in COVER:
                case["no_compile"] = True
            for tag, f, tmpl, vs in entry_variants(name, sg, p, today, case, MAX_VARIANTS):
                if name in COVER:   # one variant per tiling (TILE // 100), the first of each
                    seen, keep = set(), []
                    for v in vs:
                        t = re.search(r"TILE=(\d+)", v[1])
                        cls = int(t.group(1)) // 100 if t else 0
                        if cls not in seen:
                            seen.add(cls)
                            keep.append(v)
                    vs = keep[:COVER_VARIANTS]
                if tag == "new" and name in EXPLORE and WAVE in tmpl:
                    seen = set(lb for _, lb, _ in vs)
                    vs += [("x", lb, t) for lb, t in variants(tmpl.replace(WAVE, "<= 100000)"),
                                                              bind_sizes(tmpl, p["signature"]))
                           if lb not in seen and re.search(r"TILE=[2-9]\d\d", lb)]
                if tag == "new" and "gemm_any_%s_" % TILINGS.get(name) in f and (
                        "_0tma.json" in f or "_1wgmma.json" in f):
                    vs = (vs[:1] if name in PROBE else vs) + explore_variants(opt, f, p["signature"])
                if tag == "old" and name in PROBE:
                    continue
                # exploration: up to four waves
                bad += build_staged(binp, d, name, sg, p, vs, case, 110,
                                    keep=lambda vt, j: vt != "x" or j["grid"][0] <= 4 * 132)
            cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)
    return 1 if bad else 0


def explore_variants(opt, fname, sig):
    """[("e", label, text)]: the entry's family rendered once per tiling of
    EXPLORE_TMA ([default, that tiling], the tiling admitted
    everywhere its own size requirements hold), the tiling's variant only"""
    sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
    import build
    import gemm_any
    from skinny_stage import bind_sizes, variants
    m = re.search(r"gemm_any_(\w+)_(bf16|f16)_(0tma|1wgmma)", fname)
    name, dtype = m.group(1), m.group(2)
    wg = m.group(3) == "1wgmma"
    cfg = gemm_any.base_cfg(gemm_any.FAMILIES[name][3], True, dtype) if wg else \
        gemm_any.tma_cfg(gemm_any.FAMILIES[name][3], dtype)
    groups = build.outline_text(opt, gemm_any.example_text(name, dtype))
    g = gemm_any._pick(cfg)(groups)
    out = []
    if wg:
        for ov, label in EXPLORE_WGMMA:
            tmpl, _ = gemm_any._render(name, dtype, cfg, small=[(ov, (), lambda s: "1 == 1")])(g)
            for lb, t in variants(tmpl, bind_sizes(tmpl, sig)):
                if re.search(r"TILE=1\d\d", lb):
                    out.append(("e", "%s %s" % (lb, label), t))
        return out
    for ov, label, *fams in EXPLORE_TMA:
        if fams and name not in fams[0]:
            continue
        if len(cfg["b"]) * ov["BN"] * (ov.get("BM", 128) // 128 if not ov.get("pingpong") else 1) > \
                gemm_any.TMA_MAX_ACC_N:
            continue
        tmpl, _ = gemm_any._render(name, dtype, cfg, small=[(ov, ("BM",), lambda s: "1 == 1")])(g)
        for lb, t in variants(tmpl, bind_sizes(tmpl, sig)):
            if re.search(r"TILE=1\d\d", lb):
                out.append(("e", "%s %s" % (lb, label), t))
    return out


# ------------------------------------------------------------------ GPU ---

def compare(torch, out, ref):
    """torch_time.py's rule (bench/table/torch_time.py compare): (ok, worst)"""
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


def run(stage, out, vdir):
    sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
    import importlib.util
    import tempfile
    import run as suite  # bench/gpu/run.py
    import torch
    t_start = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cases = json.load(open(os.path.join(stage, "cases.json")))
    rt = suite.Runtime(os.path.join(stage, "libllm_fuse_rt.so"))
    prop = torch.cuda.get_device_properties(0)
    print("device %s (%d SMs), torch %s" % (prop.name, prop.multi_processor_count, torch.__version__), flush=True)
    timer = suite.Timer()
    pad_us = float(os.environ.get("GEMM16_PAD_US", "0"))
    pad_timer = suite.PadTimer(pad_us) if pad_us > 0 else None
    budget = float(os.environ.get("GEMM16_BUDGET_MS", "100"))
    compile_until = float(os.environ.get("GEMM16_COMPILE_UNTIL_S", "200"))
    rows = []
    for ci, c in enumerate(cases):
        label = "%s %s" % (c["case"], c["sg"])
        row = dict(case=c["case"], sg=c["sg"], signature=c["signature"], entries=c["entries"], variants={},
                   errors={})
        rows.append(row)
        try:
            mdir = os.path.join(tempfile.gettempdir(), "lf_gemm16")
            os.makedirs(mdir, exist_ok=True)
            mpath = os.path.join(mdir, "lf_%s_%s.py" % (c["case"], c["sg"]))
            open(mpath, "w").write("import torch\n" + c["torch"]["source"])
            spec = importlib.util.spec_from_file_location("lf_g16_%d" % ci, mpath)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            fn = mod.subgraph
            g = torch.Generator(device="cuda").manual_seed(1000 + ci)
            ins = [(torch.rand(shape, generator=g, dtype=torch.float32, device="cuda") * 2 - 1).to(suite.DT[elt])
                   for shape, elt in c["torch"]["args"]]
            with torch.no_grad():
                ref = fn(*ins)[0]
            torch.cuda.synchronize()
            (oshape, oelt), = c["torch"]["results"]
            variants = {}
            for tag in c["variants"]:
                accepted, reason = verdict(vdir, c, tag)
                row["variants"][tag] = dict(label=c["variants"][tag], verified=accepted, reason=reason)
                if not accepted:
                    continue
                try:
                    o = torch.full(oshape, float("nan"), dtype=suite.DT[oelt], device="cuda")
                    f = suite.launch_built(rt, os.path.join(stage, c["case"], c["sg"], "v-" + tag), ins, [o])
                    f()
                    torch.cuda.synchronize()
                    rt.check(tag)
                    ok, worst = compare(torch, o, ref)
                    o.fill_(float("nan"))
                    f()
                    torch.cuda.synchronize()
                    ok2, _ = compare(torch, o, ref)
                    row["variants"][tag].update(check=ok and ok2, worst=worst)
                    if ok and ok2:
                        variants[tag] = f
                    else:
                        print("  %s %s: WRONG (worst %.3g)" % (label, tag, worst), flush=True)
                except Exception as e:  # noqa: BLE001
                    row["errors"][tag] = "%s: %s" % (type(e).__name__, str(e)[:300])
                    print("  %s %s: %s" % (label, tag, row["errors"][tag]), flush=True)
            variants["eager"] = lambda: fn(*ins)
            if time.time() - t_start < compile_until and not c.get("no_compile"):
                t0 = time.time()
                try:
                    cf = torch.compile(fn)
                    with torch.no_grad():
                        cf(*ins)
                        cf(*ins)
                    torch.cuda.synchronize()
                    variants["compile"] = lambda: cf(*ins)
                    row["compile_s"] = round(time.time() - t0, 1)
                except Exception as e:  # noqa: BLE001
                    row["errors"]["compile"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            with torch.no_grad():
                st = suite.time_variants(timer, variants, budget)
            rt.check("timing")
            for tag, s in st.items():
                row["variants"].setdefault(tag, {}).update(ms=s["median"], p25=s["p25"], p75=s["p75"])
            print("%s: %s" % (label, ", ".join("%s %.4f" % (k, v["median"]) for k, v in st.items())), flush=True)
            if pad_timer is not None and not c.get("no_compile"):   # GEMM16_PAD_US: again with torch_time.py's timer (GPU sleep first)
                with torch.no_grad():
                    st = suite.time_variants(pad_timer, variants, budget)
                rt.check("timing (pad)")
                for tag, s in st.items():
                    row["variants"].setdefault(tag, {}).update(ms_pad=s["median"])
                print("%s (pad %s us): %s" % (label, pad_us, ", ".join(
                    "%s %.4f" % (k, v["median"]) for k, v in st.items())), flush=True)
            del ins, ref, variants
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001
            row["errors"]["case"] = "%s: %s" % (type(e).__name__, str(e)[:400])
            print("  %s: %s" % (label, row["errors"]["case"]), flush=True)
        json.dump(dict(device=prop.name, torch=torch.__version__,
                       date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), rows=rows),
                  open(os.path.join(out, "gemm16.json"), "w"), indent=1)
    print_table(rows)
    return 0


def verdict(vdir, c, tag):
    try:
        v = json.load(open(os.path.join(vdir, "%s.%s.v-%s.json" % (c["case"], c["sg"], tag))))
    except (OSError, ValueError) as e:
        return False, "no verdict (%s)" % e
    return bool(v.get("accepted")), v.get("reason", "")


def best(v, kind):
    ks = [k for k in v if k[:len(kind)] == kind and k[len(kind):].isdigit() and v[k].get("check") and "ms" in v[k]]
    return min(ks, key=lambda k: v[k]["ms"]) if ks else None


def print_table(rows):
    print()
    print("| case | subgraph | entry (new) | new best ms (variant) | old best ms (variant) | eager ms | compile ms | "
          "new/compile | old/compile | variants (ms; x = not verified) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        v = r["variants"]
        bn, bo = best(v, "new"), best(v, "old")
        if bo is None and "(= new)" in r["entries"].get("old", ""):
            bo = bn
        comp = v.get("compile", {}).get("ms")

        def cell(k):
            return "%.4f (%s)" % (v[k]["ms"], v[k]["label"]) if k else "-"

        def ratio(k):
            return "%.2f" % (v[k]["ms"] / comp) if k and comp else "-"
        allv = " ".join("%s:%s" % (k, "%.4f" % v[k]["ms"] if "ms" in v[k] else "x")
                        for k in v if k not in ("eager", "compile"))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["case"], r["sg"], r["entries"].get("new", "-")[17:-5], cell(bn), cell(bo),
            "%.4f" % v["eager"]["ms"] if "ms" in v.get("eager", {}) else "-", "%.4f" % comp if comp else "-",
            ratio(bn), ratio(bo), allv))
    rej = [(r["case"], r["sg"], k, x.get("reason")) for r in rows for k, x in r["variants"].items()
           if k not in ("eager", "compile") and not x.get("verified")]
    for x in rej:
        print("not verified: %s %s %s: %s" % x)
    wrong = [(r["case"], r["sg"], k) for r in rows for k, x in r["variants"].items()
             if x.get("verified") and x.get("check") is False]
    print("gemm16: %d variant(s) verified, %d not verified, %d wrong against eager %s" % (
        sum(1 for r in rows for k, x in r["variants"].items() if x.get("verified")), len(rej), len(wrong),
        wrong or ""))


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"] and len(sys.argv) in (5, 6):
        sys.exit(prepare(sys.argv[2], sys.argv[3], sys.argv[4],
                         sys.argv[5] if len(sys.argv) == 6 else "/tmp/gemm16-ho"))
    if sys.argv[1:2] == ["run"] and len(sys.argv) == 5:
        sys.exit(run(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(__doc__)
