#!/usr/bin/env python3
"""skinny_any.py - the table's skinny-M GEMM templates: the f32 GEMM +
epilogue families of gemm_any.py and importer_any.py at few rows (M <=
BOUND, and M = 1), where the product is bound by reading W once (K * N * 4
bytes) or by the f32 FMA rate, and the tiled kernels leave most SMs idle
(the 3xTF32 entries refuse M < 128; the SIMT tilings make few CTAs).

kernels/table/build.py imports this module (SPEC_MODULES) and writes one entry
per template that `templates()` yields. The kernel is
kernels/handwritten/gemm_skinny.py's (kind f32_skinny, exact f32 FMA): a CTA
owns NB columns and MT rows, its threads split K and read W in 16-byte loads
along its contiguous dimension (W [K, N] as gemm_any.py's and TOSA's, W
[N, K] as nn.Linear stores it), the partial sums reduced in a fixed order
(deterministic, no atomics); tilings (MT, NB, U) are the tune knob ALT,
each admitted where it suits M, so the pass times them and keeps the
fastest. Requirements: M <= BOUND, K % 4 == 0, N % 8 == 0 (the smallest
NB); N % NB for each tiling.

Entries (file names start with `0skinny`, so they sort before gemm_any's
and importer_any's entries of the same key, and the table tries them first
at the sizes they admit; docs/pattern-table.md "Skinny GEMMs"):

  0skinny-<family>-f32       gemm_any.py's f32 families (qkv, attn_proj,
                             fc, proj, gemm_relu) and importer_any.py's
                             GEMMs (nn.Linear W [N, K]; TOSA W [K, N]; the
                             [B, T, N] views), every size free;
  0skinny-<family>-f32-row   M = 1 (a unit dimension: its own pattern key,
                             gemm_any.py's *_row entries);
  0skinny-<sg>-f32           gen_gemm.py's f32 SIMT kernels as build.py's
                             sentinel entries have them (M free, N and K
                             fixed): those entries are more specific than
                             any template, so the table would try them
                             first; these have the same fixed sizes and
                             sort before them.
  0skinny-swiglu-bf16, -f16  gemm_any.py's SwiGLU (two B operands) in 16-bit
                             types at M <= BOUND16 (8): gemm_skinny.py with
                             bf16 / f16 operands (kind skinny16: 8-byte
                             loads, f32 accumulation, one rounding at the
                             store). Weight-bandwidth bound at a few rows
                             (held-out 003_swiglu_r2: M = 2, two 4096 x
                             14336 weights, 235 MB).
  0skinny-mma-swiglu-bf16,   the same SwiGLU at M <= BOUNDMMA (48) and
  -f16                       N >= MINN (8448) on tensor cores
                             (gemm_skinny.py kind skinny_mma16: mma.sync,
                             f32 accumulation, one rounding); sorted before
                             the FMA entries, which answer the M <= 8 sizes
                             these refuse (N < 8448, N % 64, K % 64).
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
import gemm_any  # noqa: E402
import gemm_skinny  # noqa: E402
import gen_gemm  # noqa: E402
import importer_any  # noqa: E402

ARCHS = ["sm_80", "sm_90", "sm_90a"]
# M <= BOUND. Measured on the H200 (2026-11-25, bench/table/skinny-device.sh,
# bench/NOTES.md): at M = 1 and 17 these kernels run at 0.69-0.93x torch's
# time on the MiniGPT MLP and P44 shapes (1.2-2.8x faster than the SIMT and
# 3xTF32 entries), at M = 64 within 6% of torch (0.98x, 1.06x), at M = 127
# 1.31-2.64x slower than torch, where the 128-row tilings win: 64 it is.
BOUND = 64

# (MT rows, NB columns, U steps per thread and chunk), admission over M (a
# format with {M}); the first is the default (a build without a GPU uses it)
ALTS = [(dict(MT=8, NB=16, U=2), None),
        (dict(MT=16, NB=16, U=1), "{M} > 8"),
        (dict(MT=4, NB=8, U=2), "{M} <= 16"),
        (dict(MT=16, NB=32, U=1), "{M} > 32")]
ROW_ALTS = [(dict(MT=1, NB=16, U=2), None),
            (dict(MT=1, NB=8, U=2), None),
            (dict(MT=1, NB=32, U=2), None),
            (dict(MT=1, NB=16, U=4), None)]


# 16-bit operands (the *-bf16 / *-f16 entries; gemm_skinny.py with bf16 or
# f16 operands: 8-byte loads of 4 elements, f32 accumulation, the epilogue
# in f32 and one rounding at the store, as gemm_any.py's tensor-core
# kernels): gemm_any.py's 16-bit families whose pattern is weight-bandwidth
# bound at a few rows (issue 15 point 7, held-out 003_swiglu_r2: M = 2, two
# 4096 x 14336 weights; gemm_any.py's 1wgmma entry took 1.75x
# torch.compile's time). The tiling's MT rows of A are staged once per K
# chunk, so every W element loaded serves MT rows; more rows than MT make
# more row tiles, whose CTAs read the same W slab one after the other (the
# row tile runs fastest in the grid: the second read comes from L2).
# Measured on the H200 (bench/table/gemm16-device.sh, 2026-11-25, two runs;
# SwiGLU 4096 -> 14336 bf16, ms): M = 2 0.0736-0.0739 (MT 2, NB 32, U 4:
# 3.2 TB/s on the weights) against the 1wgmma entry's 0.1276-0.1279 and
# torch.compile's 0.0740 (f16: 0.0700 against 0.0739); M = 4 0.0835 (MT 2,
# two row tiles) against 0.1256 (compile 0.0749); M = 8 0.1232 (MT 8)
# against 0.1232: even; M = 16 0.1977 against the 1wgmma entry's 0.1178:
# above 8 rows the f32 FMA and conversion work per weight byte makes the
# kernel instruction bound, hence BOUND16 = 8. MT 4 x NB 16 (ALT 2) was
# never the fastest (kept: the variants measured are the ones shipped).
FAMILIES16 = ("swiglu",)
BOUND16 = 8
ALTS16 = [(dict(MT=2, NB=32, U=4), None),
          (dict(MT=4, NB=32, U=4), "{M} > 2"),
          (dict(MT=4, NB=16, U=4), "{M} > 2"),
          (dict(MT=8, NB=32, U=2), "{M} > 4")]


# Tensor-core tilings (kind skinny_mma16, gemm_skinny.py generate_mma;
# session 27): SwiGLU in 16 bits at M <= BOUNDMMA rows. Past 8 rows the FMA
# kernel above is instruction bound, and gemm_any.py's wgmma entry runs
# 64-row tiles of 64 or 128 columns whose masked rows all read row M - 1
# (slower the fewer rows are real). (BM rows, BN columns, BK k-tile, WN
# columns per warp, KW warps over the k16 steps, S stages); each admitted
# where M <= BM (gemm_skinny.py) and its condition here. The entries are
# named 0skinny-mma-* so that they sort before the FMA entries: at M <= 8
# they answer first, and where their requirements refuse the sizes (N < MINN,
# N % 64, K % 64) the FMA entry (K % 4, N % 16) answers.
# Measured on the H200 (bench/table/skinny-mma-device.sh, 2026-11-25, run
# 2; SwiGLU 4096 -> 14336, ms, the best tiling against the entry before /
# torch.compile): M = 2 0.0667 (FMA entry 0.0721; compile 0.0759), 4 0.0671
# (0.0834; 0.0775), 8 0.0671 (0.1232; 0.0772), 9 0.0674 (wgmma entry 0.1276;
# 0.0778), 16 0.0674 (0.1188; 0.0771), 30 0.0690 (0.1041; 0.0774), 32
# 0.0688 (0.1013; 0.0784), 40 0.0708 (0.0886; 0.0789), 48 0.0716 (0.0781;
# 0.0779); above, the wgmma entry's 64 x 64 tiles win: 56 0.0730 against
# 0.0708, 61 0.0739 / 0.0680, 64 0.0734 / 0.0677 (BM 64 tilings: mma.sync
# at 64 rows is near its issue rate), hence BOUNDMMA = 48. Tilings with 32
# columns per CTA (448 CTAs) or BK 128 were 2-20% slower and are not
# shipped (bench/table/skinny_mma_bench.py ALTS_Y, run 1 and 2), nor BM 32
# with 32 columns per warp (0.0698 at M = 32, 208 bytes of spills at M = 30).
# Measured at N = 14336 only (224 CTAs of 64 columns, 1.7 per SM): with
# fewer CTAs than the H200's 132 SMs (N < 8448, e.g. held-out seed 7
# 015_swiglu_r5_f5632: 88 CTAs) the entry refuses (MINN) and the entries
# before it answer, as they did.
FAMILIESMMA = ("swiglu",)
BOUNDMMA = 48
MINN = 132 * 64
ALTSMMA = [(dict(BM=16, BN=64, BK=64, WN=16, KW=2, S=4), None),
           (dict(BM=16, BN=64, BK=64, WN=32, KW=4, S=4), None),
           (dict(BM=32, BN=64, BK=64, WN=16, KW=2, S=4), "{M} > 16"),
           (dict(BM=48, BN=64, BK=64, WN=16, KW=2, S=4), "{M} > 32")]


def _alts(m_sym, table=None):
    return [(a, c.format(M=m_sym) if c else None) for a, c in (table or ALTS)]


def _text(cfg, alts, admit, what):
    c = dict(cfg)
    wide = "f32" not in c["signature"]
    mma = what.startswith("mma:")
    what = what[4:] if mma else what
    c["kind"] = "skinny_mma16" if mma else "skinny16" if wide else "f32_skinny"
    for k in gemm_any.TILE_KEYS + ("KS", "WX", "WGS", "fingerprint", "math_notes", "assumptions"):
        c.pop(k, None)
    if mma:
        c["product"] = re.sub(r"\((.*)f32 accumulate", r"(\1f32 mma.sync accumulation, skinny M", c["product"])
    elif wide:
        c["product"] = re.sub(r"\((.*)f32 accumulate", r"(\1f32 FMA accumulation, skinny M", c["product"])
    else:
        c["product"] = re.sub(r"\((.*)f32 FMA", r"(\1exact f32 FMA, skinny M", c["product"])
    _, text, _ = (gemm_skinny.generate_mma if mma else gemm_skinny.generate)(c, gen_gemm, alts, admit)
    body = text[text.index("gpu.module"):]
    free = sorted(importer_any._used_symbols(body), key=lambda k: int(k[1:]))
    lines = body.split("\n")
    head = [lines[0], "  // Pattern-table template: kernels/table/skinny_any.py %s (gemm_skinny.py %s)." % (
        c["sg"], c["kind"]), "  // %s" % what] + ["  // llm-fuse.template-size %s" % k for k in free]
    return "\n".join(head + lines[1:])


def _sig_syms(sig, base, one=None):
    """the gen_gemm signature with the base sizes -> {{Sk}} (one: the
    base row count written as the literal 1)"""
    def sub(m):
        v = int(m.group(1))
        if one is not None and v == one:
            return "1"
        return "{{%s}}" % base[v] if v in base else m.group(1)
    return re.sub(r"(?<=[<x])(\d+)(?=x)", sub, sig)


def _render_gemm_any(name, single):
    sg = gemm_any.FAMILIES[name][3]
    cfg = gemm_any.base_cfg(sg, False, "f32")

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        ex = {"N": cfg["N"], "K": cfg["K"]} if single else {"M": gemm_any.EX_M, "N": cfg["N"], "K": cfg["K"]}
        sym = {r: by_value[v] for r, v in ex.items()}
        base = {cfg["N"]: sym["N"], cfg["K"]: sym["K"]}
        if not single:
            base[cfg["M"]] = sym["M"]
        c = dict(cfg)
        c.update(M=1 if single else sym["M"], N=sym["N"], K=sym["K"],
                 signature=_sig_syms(cfg["signature"], base, cfg["M"] if single else None),
                 sg="sk_%s_f32%s" % (name, "_row" if single else ""))
        c["product"] = re.sub(r"\d+", lambda m: ("1" if single and int(m.group(0)) == cfg["M"] else
                                                 base.get(int(m.group(0)), m.group(0))), cfg["product"])
        roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K") if r in sym)
        if single:
            text = _text(c, ROW_ALTS, [], "%s, M = 1 (a single row); K %% 4 == 0, N %% NB == 0." % roles)
        else:
            text = _text(c, _alts(sym["M"]), ["%s <= %d" % (sym["M"], BOUND)],
                         "%s; M <= %d (masked), K %% 4 == 0, N %% NB == 0." % (roles, BOUND))
        return text, [None] * len(ps)
    return render


def _render_gemm_any16(name, dtype, mma=False):
    """gemm_any.py's family `name` in a 16-bit type at M <= BOUND16 (mma:
    the tensor-core kernel at M <= BOUNDMMA)"""
    sg = gemm_any.FAMILIES[name][3]
    sdt = gemm_any.FAMILIES[name][1]
    cfg = gemm_any.base_cfg(sg, False, dtype)

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        ex = {"M": gemm_any.EX_M, "N": cfg["N"], "K": cfg["K"]}
        sym = {r: by_value[v] for r, v in ex.items()}
        base = {cfg["N"]: sym["N"], cfg["K"]: sym["K"], cfg["M"]: sym["M"]}
        c = dict(cfg)
        sig = _sig_syms(cfg["signature"], base)
        c.update(M=sym["M"], N=sym["N"], K=sym["K"], signature=sig.replace(sdt, dtype) if dtype != sdt else sig,
                 sg="sk_%s_%s" % (name, dtype))
        c["product"] = re.sub(r"\d+", lambda m: base.get(int(m.group(0)), m.group(0)), cfg["product"])
        if dtype != sdt:
            c["product"] = c["product"].replace(sdt, dtype)
        roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K"))
        if mma:
            c["sg"] = "sk_%s_mma_%s" % (name, dtype)
            bound = "%s <= %d && %s >= %d" % (sym["M"], BOUNDMMA, sym["N"], MINN)
            text = _text(c, _alts(sym["M"], ALTSMMA), [bound],
                         "mma:%s; M <= %d (masked), N >= %d, N %% BN == 0, K %% BK == 0; %s operands, mma.sync, "
                         "f32 accumulation." % (roles, BOUNDMMA, MINN, dtype))
            return text, [None] * len(ps)
        text = _text(c, _alts(sym["M"], ALTS16), ["%s <= %d" % (sym["M"], BOUND16)],
                     "%s; M <= %d (masked), K %% 4 == 0, N %% NB == 0; %s operands, f32 accumulation." % (
                         roles, BOUND16, dtype))
        return text, [None] * len(ps)
    return render


def _render_importer(name):
    ex = importer_any.GEMMS[name][2]

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in ex.items()}
        c = importer_any._gemm_cfg(name, {r: sym[r] for r in ("M", "N", "K")}, sym)
        c["sg"] = "sk_%s_f32" % name
        roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K", "B", "T") if r in sym)
        text = _text(c, _alts(sym["M"]), ["%s <= %d" % (sym["M"], BOUND)],
                     "%s; M <= %d (masked), K %% 4 == 0, N %% NB == 0; W read as stored %s." % (
                         roles, BOUND, "N x K" if c.get("b_nk") else "K x N"))
        return text, [None] * len(ps)
    return render


def _render_sentinel(cfg):
    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[cfg[r]] for r in ("M", "N", "K")}
        assert sym["M"] == "S0", (cfg["sg"], sym)
        base = {cfg[r]: sym[r] for r in ("M", "N", "K")}
        c = dict(cfg)
        c.update(M=sym["M"], N=sym["N"], K=sym["K"], signature=_sig_syms(cfg["signature"], base),
                 sg="sk_%s_f32" % cfg["sg"][3:])
        c["product"] = re.sub(r"\d+", lambda m: base.get(int(m.group(0)), m.group(0)), cfg["product"])
        text = _text(c, _alts("S0"), ["S0 <= %d" % BOUND],
                     "M = S0 <= %d (masked); the other sizes fixed as in the entry %s (gen_gemm.py), "
                     "which this one precedes." % (BOUND, cfg["sg"]))
        return text, [None] + [ps["S%d" % i] for i in range(1, len(ps))]
    return render


def _fp_pick(fp):
    def pick(groups):
        hit = [g for g in groups if g.get("fingerprint") == fp]
        return hit[0] if len(hit) == 1 else None
    return pick


def templates():
    out = []
    for name in sorted(gemm_any.FAMILIES):
        src, sdt, rows, sg, dtypes, _ = gemm_any.FAMILIES[name]
        if "f32" not in dtypes:
            continue
        cfg = gemm_any.base_cfg(sg, False, "f32")
        for single in (False, True):
            m = 1 if single else gemm_any.EX_M
            out.append(dict(
                name="0skinny-%s-f32%s" % (name.replace("_", ""), "-row" if single else ""),
                example=gemm_any.example_text(name, "f32", m), pick=gemm_any._pick(cfg, m),
                render=_render_gemm_any(name, single), archs=ARCHS,
                source="kernels/table/skinny_any.py %s f32%s (gemm_skinny.py f32_skinny, %s; from %s at M = %d)" % (
                    name, " row" if single else "", "M = 1" if single else "masked M <= %d" % BOUND, src, m)))
    # the 16-bit SwiGLU kinds: FMA at M <= BOUND16, mma.sync at M <= BOUNDMMA
    for families, mma, kind, bound in ((FAMILIES16, False, "skinny16", BOUND16),
                                       (FAMILIESMMA, True, "skinny_mma16, mma.sync", BOUNDMMA)):
        for name in families:
            src, sdt, rows, sg, dtypes, _ = gemm_any.FAMILIES[name]
            for dtype in dtypes:
                if dtype == "f32":
                    continue
                cfg = gemm_any.base_cfg(sg, False, dtype)
                out.append(dict(
                    name="0skinny-%s%s-%s" % ("mma-" if mma else "", name.replace("_", ""), dtype),
                    example=gemm_any.example_text(name, dtype), pick=gemm_any._pick(cfg),
                    render=_render_gemm_any16(name, dtype, mma=mma), archs=ARCHS,
                    source="kernels/table/skinny_any.py %s %s (gemm_skinny.py %s, masked M <= %d; from %s at "
                           "M = %d)" % (name, dtype, kind, bound, src, gemm_any.EX_M)))
    for name in importer_any.GEMMS:
        src = importer_any.GEMMS[name][0]
        out.append(dict(
            name="0skinny-imp-%s-f32" % name.replace("_", ""),
            example=importer_any._read(src), pick=importer_any._gemm_pick(name),
            render=_render_importer(name), archs=ARCHS,
            source="kernels/table/skinny_any.py %s f32 (gemm_skinny.py f32_skinny, masked M <= %d, W read as "
                   "stored %s; from %s at M = %d)" % (name, BOUND, "N x K" if importer_any.GEMMS[name][9] else
                                                       "K x N", src, importer_any.GEMMS[name][2]["M"])))
    seen = set()
    for cfg in gen_gemm.SUBGRAPHS:
        if cfg["kind"] != "f32_simt":
            continue
        key = (re.sub(r"tensor<%d" % cfg["M"], "tensor<M", cfg["signature"]), cfg["epilogue"])
        if key in seen:   # the same pattern and fixed sizes as an earlier one (sg_ab99... is sg_208f...'s)
            continue
        seen.add(key)
        path = os.path.join(ROOT, "examples", cfg["example"] + ".mlir")
        out.append(dict(
            name="0skinny-%s-f32" % cfg["sg"],
            example=open(path).read(), pick=_fp_pick(cfg["fingerprint"]),
            render=_render_sentinel(cfg), archs=ARCHS,
            source="kernels/table/skinny_any.py %s f32 (gemm_skinny.py f32_skinny, masked M <= %d, N and K of "
                   "gen_gemm.py's %s; from examples/%s.mlir)" % (cfg["sg"], BOUND, cfg["sg"], cfg["example"])))
    return out
