#!/usr/bin/env python3
"""bmm_stage.py - stages the batched-GEMM cases for the GPU machine
(bench/table/bmm-prepare.sh runs it; kernels/table/bmm_any.py).

    bmm_stage.py STAGE BUILD_BIN [CASE...]   (or BMM_CASES="CASE ..."; all by default)

For each case (a form of bmm_any.model_text at attention-like or GEMM-like
sizes, in f32, bf16 and f16), outlines it, builds the default lowering's
plan (llm-fuse-reference), asks the pass offline (verify=none, sm_90a, the
shipped table, the replay set empty) which table entry answers, and builds
the tune variants of that entry ("first-v<k>", below), with
llm-fuse-build-kernel (sm_90a):
STAGE/<sg>/<tag>/result.json + kernel.cubin. STAGE/cases.json lists them
for bmm_torch.py and bmm-device.sh.

Session 26: the first entry's variants are those of its first variant's
GROUP_M (TILE % 100: every tiling alternative once);
BMM_SET=session26 (the default) stages the session-26 cases (the held-out
models' keys, unit dimensions, T = d, and the speed cases), BMM_SET=all
the session-25 ones too. With BMM_EXPLORE=1 a case marked "x" also gets
"x-v<k>": the tilings of bmm_any.EXPLORE (BMM_EXPLORE_SET=run2:
EXPLORE_RUN2) as one extra fast kernel (only the alternatives past the
entry's two), or for a general-kernel entry (EXPLORE only) that kernel with
the next k-tile prefetched. BMM_TABLE=DIR (holding v1/) asks that
table instead of kernels/table (a table built before it is written to
the repository).

Session 27: BMM_SET=session27 stages CASES27 (the held-out batched GEMMs
slower than torch.compile, the B = M key, and changed or new entries at
sizes that were fine); with BMM_EXPLORE=1 a case's EXPLORE27 set is built
too ("x-v<k>": bmm_any.gen_alts_kernel's gen2 / dot tilings past the
general kernel, or fast_kernel's tilings past the entry's).

Session 28: BMM_SET=session28 stages CASES28 (the f32 held-out cases still
over 10% and the other sizes of their keys); with BMM_EXPLORE=1 the
mma.sync 3xTF32 tilings (EXPLORE27 "x3", "x3e"). With BMM_TABLE=DIR the
sm_90a entries *-0x3wg answer (arch sm_90a) and their variants are staged.

Session 29: BMM_SET=session29 stages CASES29 (seed 23's 007, 020, 016,
seed 7's 011, seed 1's 021) with BMM_EXPLORE=1 the EXPLORE29 sets (several
per case, numbered on as "x-v<k>", the tiling's name in the label);
BMM_SET=session29f the written entries at those sizes and at 018, 051 and
seed 23's 035; BMM_SET=session29se (not run yet) 018, 051, 035 with the SE
tilings. BMM_SET=session29tn (helper TN16): the 16-bit A^T B mma.sync
entries (CASES29TN).
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
import bmm_any  # noqa: E402
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# (name, form, B, M, N, K, d): attention scores Q K^T (nt, M = N = T,
# K = d), P V (nn, M = K = T, N = d), and GEMM-like B = 4, 1024^3.
CASES = [
    ("qk_t7_d64", "nt", 32, 7, 7, 64, None),
    ("qk_t128_d64", "nt", 32, 128, 128, 64, None),
    ("qk_t512_d96", "nt", 32, 512, 512, 96, None),
    ("qk_t2048_d128", "nt", 16, 2048, 2048, 128, None),
    ("pv_t512_d64", "nn", 32, 512, 64, 512, None),
    ("pv_t2048_d128", "nn", 16, 2048, 128, 2048, None),
    ("nt_b4_1024", "nt", 4, 1024, 1024, 1024, None),
    ("nn_b4_1024", "nn", 4, 1024, 1024, 1024, None),
]
# Session 26 (issue 15 points 2 and 7): (name, form, B, M, N, K, d, types,
# explore): the held-out models of `heldout.py gen --seed 1 --count 50`
# (000, 041: T = 1; 007: T = d = 64; 013, 023, 011: the scores at other T;
# 021: P V at T = 394), unit dimensions of a decode step, T = d, and the
# speed gaps of session 25 (16-bit Q K^T at T >= 512, 16-bit GEMM-like,
# f32 P V), with the tilings of bmm_any.EXPLORE.
CASES26 = [
    ("ho000_pv_t1", "tmpv", 12, 1, 64, 1, None, ["f32"], False),
    ("ho041_nn_t1", "nn", 32, 1, 64, 1, None, ["f32"], False),
    ("ho007_scores_t64", "tms", 12, 64, 64, 64, 64, ["f32"], False),
    ("ho011_scores_t55", "tms", 12, 55, 55, 64, 64, ["f32"], False),
    ("ho013_scores_t576", "tms", 12, 576, 576, 64, 64, ["f32"], True),
    ("ho023_scores_t1024", "tms", 12, 1024, 1024, 64, 64, ["f32"], True),
    ("ho021_nn_r394", "nn", 32, 394, 64, 394, None, ["f32"], True),
    ("dec_pv_m1_k2048", "nn", 32, 1, 128, 2048, None, ["f32", "bf16"], False),
    ("dec_qk_m1_n2048", "nt", 32, 1, 2048, 128, None, ["bf16"], False),
    ("tn_m1", "tn", 8, 1, 256, 1024, None, ["f32"], False),
    ("nt_mn1", "nt", 32, 1, 1, 64, None, ["f16"], False),
    ("tms_t1", "tms", 12, 1, 1, 64, 64, ["bf16"], False),
    ("tmpv_t64_d64", "tmpv", 12, 64, 64, 64, None, ["bf16"], False),
    ("nts_t128_d128", "nts", 12, 128, 128, 128, 128, ["f32"], False),
    ("qk_t512_d96", "nt", 32, 512, 512, 96, None, ["bf16", "f16"], True),
    ("qk_t512_d64", "nt", 32, 512, 512, 64, None, ["bf16"], True),
    ("qk_t2048_d128", "nt", 16, 2048, 2048, 128, None, ["bf16", "f16"], True),
    ("nts_t1024_d64", "nts", 16, 1024, 1024, 64, 64, ["f16"], True),
    ("nt_b4_1024", "nt", 4, 1024, 1024, 1024, None, ["bf16"], True),
    ("nn_b4_1024", "nn", 4, 1024, 1024, 1024, None, ["bf16"], True),
    ("pv_t2048_d128", "nn", 16, 2048, 128, 2048, None, ["bf16", "f32"], True),
    ("pv_t512_d64", "nn", 32, 512, 64, 512, None, ["f32"], True),
    ("tmpv_h12_t256_d64", "tmpv", 12, 256, 64, 256, None, ["f32"], False),
    ("tmpv_h4_t128_d64", "tmpv", 4, 128, 64, 128, None, ["f32"], False),
    ("ntm_t256_d64", "ntm", 16, 256, 256, 64, None, ["bf16"], False),
    ("nts_t512_d128", "nts", 16, 512, 512, 128, 128, ["bf16"], False),
    ("qk_t128_d64", "nt", 32, 128, 128, 64, None, ["f16"], False),
    ("tmpv_r394", "tmpv", 12, 394, 64, 394, None, ["f32"], False),
]
# Session 27 (issue 15 point 7): the held-out batched GEMMs slower than
# torch.compile by more than 10% (`heldout.py gen --seed 7 --count 60`:
# 022, 057, 018, 051, 045, 046, 011, 005; `--seed 1 --count 50`: 035, 021)
# and the key without a template then (seed 7's 027: A^T B at B = M = 8),
# as (name, form, B, M, N, K, d, types, explore: the name of an EXPLORE27
# set to build besides the entry's variants, or None). BMM_SET=session27.
CASES27 = [
    ("ho7_022_tn_r16", "tn", 8, 16, 256, 1024, None, ["bf16"], "small"),
    ("ho7_027_tn_r8", "tn", 8, 8, 256, 1024, None, ["f32"], "small"),
    ("ho7_057_nt_r8_h1536", "nt", 32, 8, 8, 1536, None, ["f32"], "smallk"),
    ("ho7_018_nn_r278_h7953", "nn", 32, 278, 7953, 278, None, ["f32"], "big"),
    ("ho7_051_nn_r256_h12737", "nn", 32, 256, 12737, 256, None, ["f32"], "big"),
    ("ho7_045_scores_r1024_h1019", "tms", 12, 1024, 1024, 1019, 64, ["f32"], "big"),
    ("ho1_035_tn_r317", "tn", 8, 317, 256, 1024, None, ["f32"], "mid"),
    ("ho1_021_nn_r394", "nn", 32, 394, 64, 394, None, ["f32"], "mid"),
    ("ho7_011_nn_r193", "nn", 32, 193, 64, 193, None, ["f32"], "mid"),
    ("ho7_046_nt_r1024", "nt", 32, 1024, 1024, 64, None, ["bf16"], None),
    ("ho7_005_nt_r135", "nt", 32, 135, 135, 64, None, ["bf16"], "mid"),
    # entries changed or new in session 27 at sizes that were fine: the f32
    # scores at T = 1024 and 576 (seed 1's 023, 013), torch-mlir's P V at an
    # odd T, and the new keys with the batch equal to the rows
    ("ho1_023_scores_r1024", "tms", 12, 1024, 1024, 64, 64, ["f32"], None),
    ("ho1_013_scores_r576", "tms", 12, 576, 576, 64, 64, ["f32"], None),
    ("tmpv_r394", "tmpv", 12, 394, 64, 394, None, ["f32"], None),
    ("bmn_qk_t32", "nt", 32, 32, 32, 64, None, ["bf16"], None),
    ("bmk_pv_t32", "nn", 32, 32, 64, 32, None, ["f32"], None),
]
# the explore sets of CASES27: gen2_kernel tilings (bmm_any.GEN2_TILINGS, as
# alternatives of bmm_any.gen_alts_kernel) or fast-kernel tilings
# (bmm_any.TILINGS, alternatives of bmm_any.fast_kernel)
EXPLORE27 = {"small": ("gen2", ["s16", "s16n64", "s16d"]),
             "smallk": ("gen2", ["s16", "s16x16"]),
             "big": ("gen2", ["g128w", "g64k2"]),
             "mid": ("gen2", ["g32k4", "g64k2", "g128w"]),
             "sep": ("fast", ["sep128", "sepsmall", "sep2", "sep128s2"])}
# Session 28 (issue 15 point 7, the f32 held-out cases still over 10%: seed
# 7's 018, 051, 045, 011; seed 1's 021, 035), and the other sizes that use
# their keys (nn-mk, tn-any, tms-d64-mn): the entries' example sizes,
# examples/bench/bmm_tn.mlir and bmm_scores_torch.mlir, the f32 scores at T
# = 1024, 576 (seed 1's 023, 013) and 9 (lit_tests/table/importer-small-t),
# A^T B at 384 x 256 x 512. BMM_SET=session28; with BMM_EXPLORE=1, "x3":
# bmm_any.x3_kernel's tilings (3xTF32 on mma.sync, run 1), "x3e" fewer.
CASES28 = [
    ("ho7_018_nn_r278_h7953", "nn", 32, 278, 7953, 278, None, ["f32"], "x3"),
    ("ho7_051_nn_r256_h12737", "nn", 32, 256, 12737, 256, None, ["f32"], "x3"),
    ("ho7_045_scores_r1024_h1019", "tms", 12, 1024, 1024, 1019, 64, ["f32"], "x3"),
    ("ho7_011_nn_r193", "nn", 32, 193, 64, 193, None, ["f32"], "x3"),
    ("ho1_021_nn_r394", "nn", 32, 394, 64, 394, None, ["f32"], "x3"),
    ("ho1_035_tn_r317", "tn", 8, 317, 256, 1024, None, ["f32"], "x3"),
    ("ex_nn_mk", "nn", 12, 200, 72, 200, None, ["f32"], "x3e"),
    ("ex_tn_any", "tn", 12, 200, 136, 72, None, ["f32"], "x3e"),
    ("ex_tms_mn_d64", "tms", 12, 200, 200, 64, 64, ["f32"], "x3e"),
    ("ho1_023_scores_r1024", "tms", 12, 1024, 1024, 64, 64, ["f32"], "x3e"),
    ("ho1_013_scores_r576", "tms", 12, 576, 576, 64, 64, ["f32"], "x3e"),
    ("tn_b8", "tn", 8, 384, 256, 512, None, ["f32"], "x3e"),
    ("bench_tn", "tn", 8, 512, 256, 1024, None, ["f32"], None),
    ("bench_scores", "tms", 12, 512, 512, 64, 64, ["f32"], None),
    ("scores_t9", "tms", 12, 9, 9, 64, 64, ["f32"], None),
]
EXPLORE27.update({"x3": ("gen2", ["x3", "x3s", "x3l", "x3w"]), "x3e": ("gen2", ["x3", "x3s", "x3l"])})
# Session 28, helper BMMF32B: BMM_SET=session28b, the nn-mk cases of CASES28
# still over 10% (and 051, the same key); with BMM_EXPLORE=1 "x3wgb": the new
# x3wg tilings (two warpgroups along n: x3wgn2, x3wgw; k-tile kt + 2's loads
# in flight: x3wgp, x3wgn64p) beside the entry's variants
CASES28B = [c[:8] + ("x3wgb",) for c in CASES28 if c[0] in (
    "ho7_018_nn_r278_h7953", "ho7_051_nn_r256_h12737", "ho7_011_nn_r193", "ho1_021_nn_r394")]
EXPLORE27["x3wgb"] = ("gen2", ["x3wgn2", "x3wgw", "x3wgp", "x3wgn64p"])
# Session 29, helper F32BMM: BMM_SET=session29, the f32 batched GEMMs of
# the seed-23 held-out draw still over 10% (007: Q K^T at T = 1721, d = 64,
# odd N: the nt-mn general entry, no x3wg entry; 020: torch-mlir's P V at T
# = 677: tmpv-mk, no x3wg entry; 016: P V at T = 158, the nn-mk x3wg entry),
# seed 7's 011 and seed 1's 021 (nn-mk); with BMM_EXPLORE=1 the x3wg
# tilings (GEN2_TILINGS), several explore sets per case ("x-v<k>" numbered
# on across the sets: an entry holds at most 7 alternatives).
CASES29 = [
    ("ho23_007_nt_r1721", "nt", 32, 1721, 1721, 64, None, ["f32"], "nt29"),
    ("ho23_020_tmpv_r677", "tmpv", 12, 677, 64, 677, None, ["f32"], "pv29"),
    ("ho23_016_nn_r158", "nn", 32, 158, 64, 158, None, ["f32"], "nn29"),
    ("ho7_011_nn_r193", "nn", 32, 193, 64, 193, None, ["f32"], "nn29"),
    ("ho1_021_nn_r394", "nn", 32, 394, 64, 394, None, ["f32"], "nn29"),
]
# BMM_SET=session29f: the written entries at those sizes and at the other
# held-out sizes of the nn-mk key (seed 7's 018, 051; seed 23's 035); with
# BMM_EXPLORE=1 more x3wg tilings for 007 ("nt29b")
CASES29F = [c[:8] + ("nt29b" if c[1] == "nt" else None,) for c in CASES29] + [
    ("ho7_018_nn_r278_h7953", "nn", 32, 278, 7953, 278, None, ["f32"], None),
    ("ho7_051_nn_r256_h12737", "nn", 32, 256, 12737, 256, None, ["f32"], None),
    ("ho23_035_nn_r261_h4096", "nn", 32, 261, 4096, 261, None, ["f32"], None),
]
# BMM_SET=session29se (not run yet): the large nn-mk products with the SE
# tilings (C stored in rows through shared memory) beside the entry's
CASES29SE = [c[:8] + ("nnse",) for c in CASES29F if c[0] in (
    "ho7_018_nn_r278_h7953", "ho7_051_nn_r256_h12737", "ho23_035_nn_r261_h4096")]
EXPLORE29 = {
    "nt29": [["x3wg", "x3wgn64", "x3wg2", "x3wgg", "x3wgn64g", "x3wg2g"],
             ["x3wgpg", "x3wgn64pg", "x3wg2pg", "x3wg2n64g", "x3wg2n64pg", "x3wgn64k2"]],
    "pv29": [["x3wg", "x3wgn64", "x3wg2", "x3wgp", "x3wgn64p", "x3wgn64pg"],
             ["x3wgpg", "x3wgn64g", "x3wgg"], ["x3wgn64k2", "x3wgn64pk2", "x3wgpk2"]],
    "nt29b": [["x3wg2n32pg", "x3wg2n32pgs", "x3wgn32g", "x3wgpgs"]],
    "nnse": [["x3wgpgs", "x3wg2pgs", "x3wgn64pgs"]],
    "nn29": [["x3wgn64pg", "x3wgpg", "x3wgn64g", "x3wgg", "x3wgn64k2", "x3wgn64pk2"]],
}
# Session 29, helper TN16: BMM_SET=session29tn, the 16-bit A^T B mma.sync
# entries (bmm-any-tn-<key>-<dt>-1mma: A [K, M] staged [k][m], ldmatrix
# .trans): seed 31's 051 (f16, A [8, 1024, 1024] transposed, N = 14336),
# a bf16 A^T B at 8 x 512 x 768 x 1024, every 1mma entry at M <= 256
# (both tilings: the small-M one too; M, N, K not multiples of the tile),
# M = N (tn-mn) at 512, B = M = 8 (tn-bm),
# an odd size the entry refuses (M, K not multiples of 8: the 9gen entry),
# M = 16 (bmm16_any's 0bmm16-tn-any answers first), and nt / nn cases whose
# entries did not change.
CASES29TN = [
    ("ho31_051_tn_r1024_h14336", "tn", 8, 1024, 14336, 1024, None, ["f16"], None),
    ("tn_b8_r512_n768", "tn", 8, 512, 768, 1024, None, ["bf16"], None),
    ("tn_any_r200", "tn", 12, 200, 136, 72, None, ["bf16", "f16"], None),
    ("tn_mn_r512", "tn", 8, 512, 512, 256, None, ["f16"], None),
    ("tn_mn_r200", "tn", 12, 200, 200, 72, None, ["bf16", "f16"], None),
    ("tn_mnk_r200", "tn", 12, 200, 200, 200, None, ["bf16", "f16"], None),
    ("tn_bm8", "tn", 8, 8, 256, 1024, None, ["bf16", "f16"], None),
    ("tn_odd_r333", "tn", 4, 333, 200, 130, None, ["f16"], None),
    ("ho7_022_tn_r16", "tn", 8, 16, 256, 1024, None, ["bf16"], None),
    ("nt_b4_1024", "nt", 4, 1024, 1024, 1024, None, ["bf16"], None),
    ("nn_b4_1024", "nn", 4, 1024, 1024, 1024, None, ["f16"], None),
]
# The other forms, each in two types: verified (torch times them too).
EXTRA = [
    ("ntm_t256_d64", "ntm", 16, 256, 256, 64, None, ["f32", "bf16"]),
    ("tn_b8", "tn", 8, 384, 256, 512, None, ["f32", "bf16"]),
    ("nts_t512_d128", "nts", 16, 512, 512, 128, 128, ["f32", "bf16"]),
    ("tms_h12_t256_d64", "tms", 12, 256, 256, 64, 64, ["f32", "f16"]),
    ("tmpv_h12_t256_d64", "tmpv", 12, 256, 64, 256, None, ["f32", "bf16"]),
    ("tms_h4_t128_d64", "tms", 4, 128, 128, 64, 64, ["f32"]),
    ("tmpv_h4_t128_d64", "tmpv", 4, 128, 64, 128, None, ["f32"]),
]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("bmm_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-600:]))
    return r


def stage_model(opt, binp, models, stage, empty, table, cname, form, dt, B, M, N, K, d, who="bmm_stage"):
    """Writes case cname's model, outlines it, stages its reference and runs
    the offline pass on it with `table`; returns (subgraph, case) for each
    contraction subgraph (case: its sizes, signature, the entry the pass
    took, no variants yet)."""
    path = os.path.join(models, cname + ".mlir")
    open(path, "w").write(bmm_any.model_text(form, dt, B, M, N, K, d))
    outl = os.path.join(models, cname + ".outlined.mlir")
    run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
    run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", stage, outl])
    rep = os.path.join(models, cname + ".json")
    cache = os.path.join(stage, "cache-" + cname)
    r = subprocess.run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
                        "pattern-table=%s cache-dir=%s report=%s" % (empty, table, cache, rep), path,
                        "-o", os.devnull],
                       capture_output=True, text=True, env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
    shutil.rmtree(cache, ignore_errors=True)
    if r.returncode:
        sys.exit("%s: the pass failed on %s: %s" % (who, cname, r.stderr[-400:]))
    out = []
    for s in json.load(open(rep))["subgraphs"]:
        if s["class"] != "contraction":
            continue
        out.append((s, dict(case=cname, form=form, dtype=dt, B=B, M=M, N=N, K=K, d=d, sg=s["name"],
                            signature=s["signature"], entry=s.get("model") or "", variants={})))
    return out


def main():
    stage, binp = sys.argv[1:3]
    only = sys.argv[3:] or os.environ.get("BMM_CASES", "").split()
    opt = os.path.join(binp, "llm-fuse-opt")
    models = os.path.join(stage, "models")
    os.makedirs(models, exist_ok=True)
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    table = os.environ.get("BMM_TABLE") or os.path.join(ROOT, "kernels", "table")
    tdir = os.path.join(table, "v1")
    explore = os.environ.get("BMM_EXPLORE") == "1"
    cases = []
    bset = os.environ.get("BMM_SET", "session26")
    if bset == "session27":
        todo = [(c[:7], dt, c[8]) for c in CASES27 for dt in c[7]]
    elif bset == "session28":
        todo = [(c[:7], dt, c[8]) for c in CASES28 for dt in c[7]]
    elif bset == "session28b":
        todo = [(c[:7], dt, c[8]) for c in CASES28B for dt in c[7]]
    elif bset == "session29":
        todo = [(c[:7], dt, c[8]) for c in CASES29 for dt in c[7]]
    elif bset == "session29f":
        todo = [(c[:7], dt, c[8]) for c in CASES29F for dt in c[7]]
    elif bset == "session29se":
        todo = [(c[:7], dt, c[8]) for c in CASES29SE for dt in c[7]]
    elif bset == "session29tn":
        todo = [(c[:7], dt, c[8]) for c in CASES29TN for dt in c[7]]
    else:
        todo = [(c[:7], dt, c[8]) for c in CASES26 for dt in c[7]]
    if bset == "all":
        todo += [(c, dt, False) for dt in bmm_any.DTYPES for c in CASES] + \
            [(c[:7], dt, False) for c in EXTRA for dt in c[7]]
    for (name, form, B, M, N, K, d), dt, xc in todo:
        if True:
            cname = "%s_%s" % (name, dt)
            if only and cname not in only:
                continue
            for s, case in stage_model(opt, binp, models, stage, empty, table, cname, form, dt, B, M, N, K, d):
                ent = case["entry"]
                if "/" not in ent:
                    print("bmm_stage: %s %s: no table entry (%s)" % (cname, s["name"], ent), file=sys.stderr)
                    cases.append(case)
                    continue
                f = ent.split("/", 1)[1]
                tmpl0 = read_entry(os.path.join(tdir, f))["template"]
                todo = [("first", f, tmpl0)]
                if explore and xc in EXPLORE29:   # session 29: several gen2 sets, one "x" numbering
                    sizes = bind_sizes(tmpl0, s["signature"])
                    by_value = {v: k for k, v in sizes.items()}
                    sym = {r: 1 if v == 1 else by_value[v] for r, v in dict(B=B, M=M, N=N, K=K).items()}
                    for names in EXPLORE29[xc]:
                        todo.append(("x", "explore", bmm_any.gen_alts_kernel(form, dt, sym, d, names), names))
                elif explore and isinstance(xc, str):   # session 27: EXPLORE27
                    sizes = bind_sizes(tmpl0, s["signature"])
                    by_value = {v: k for k, v in sizes.items()}
                    sym = {r: 1 if v == 1 else by_value[v] for r, v in dict(B=B, M=M, N=N, K=K).items()}
                    how, names = EXPLORE27[xc]
                    if how == "gen2":
                        xt = bmm_any.gen_alts_kernel(form, dt, sym, d, names)
                    else:
                        xt = bmm_any.fast_kernel(form, dt, sym, d, tilings=names)
                    todo.append(("x", "explore", xt))
                elif explore and xc:
                    sizes = bind_sizes(tmpl0, s["signature"])
                    by_value = {v: k for k, v in sizes.items()}
                    sym = {r: 1 if v == 1 else by_value[v] for r, v in dict(B=B, M=M, N=N, K=K).items()}
                    ex = bmm_any.EXPLORE_RUN2 if os.environ.get("BMM_EXPLORE_SET") == "run2" else bmm_any.EXPLORE
                    xt = None
                    if "-9gen" not in f and ex["f32" if dt == "f32" else "16"]:
                        xt = bmm_any.fast_kernel(form, dt, sym, d, tilings=ex["f32" if dt == "f32" else "16"])
                    elif "-9gen" in f and ex is bmm_any.EXPLORE:   # the general kernel, next k-tile prefetched
                        xt = bmm_any.gen_kernel(form, dt, sym, d, pf=True)
                    if xt:
                        todo.append(("x", "explore", xt))
                nx = 0   # the next "x-v<k>" (session 29: numbered on across the explore sets)
                for tag, fname, tmpl, *names in todo:
                    sizes = bind_sizes(tmpl, s["signature"])
                    vs = variants(tmpl, sizes)
                    if not vs:
                        print("bmm_stage: %s %s %s: no variant admits these sizes" % (cname, s["name"], tag),
                              file=sys.stderr)
                        continue
                    # the first variant, then each tiling alternative at the default GROUP_M (x: past the entry's two)
                    g0 = re.search(r"TILE=(\d+)", vs[0][0]) if vs else None
                    keep = [(lb, t) for i, (lb, t) in enumerate(vs) if i == 0 or (
                        g0 and int(re.search(r"TILE=(\d+)", lb).group(1)) % 100 == int(g0.group(1)) % 100)]
                    if tag == "x" and "TILE=" in vs[0][0]:   # past the entry's alternatives (gen2: past the old kernel)
                        lo = 100 if isinstance(xc, str) and (xc in EXPLORE29 or EXPLORE27[xc][0] == "gen2") else 200
                        keep = [(lb, t) for lb, t in keep if int(re.search(r"TILE=(\d+)", lb).group(1)) >= lo]
                    if names:   # session 29: the tiling's name in the label
                        keep = [("%s %s" % (names[0][int(re.search(r"TILE=(\d+)", lb).group(1)) // 100 - 1], lb), t)
                                for lb, t in keep]
                    for i, (label, text) in enumerate(keep):
                        if names:
                            i, nx = nx, nx + 1
                        d2 = os.path.join(stage, s["name"], "%s-v%d" % (tag, i))
                        j = build_kernel(binp, d2, text, s["signature"])
                        print("bmm_stage: %-22s %s %-5s v%d %-12s %s %s" % (
                            cname, s["name"], tag, i, label, "built" if j.get("ok") else "FAILED",
                            (j.get("ptxas_info") or j.get("message", ""))[:100]), flush=True)
                        if j.get("ok"):
                            case["variants"]["%s-v%d" % (tag, i)] = "%s %s" % (
                                re.sub(r"\.json(\.gz)?$", "", fname.split("-bmm-any-")[1] if "-bmm-any-" in fname else
                                       fname.split("-", 1)[1]) if tag != "x" else
                                "explore", label)
                cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
