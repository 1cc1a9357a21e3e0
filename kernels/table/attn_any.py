#!/usr/bin/env python3
"""attn_any.py - the table's causal-attention templates: any sequence length,
any head count, one entry per head size.

kernels/table/build.py imports this module and writes one entry per (head
size D, shape form) that `templates()` yields. The target is the
attention-like subgraph of examples/minigpt_block.mlir: (q, k, v:
S x H x D) -> S x H x D, with QK^T, the 1/sqrt(D) scale, the causal mask,
softmax and PV. The example is rewritten to other sizes with
bench/table/heldout.py's size_rewrite / heads_rewrite, plus the head size
(the `64` of the head tensors and the 0.125 scale, which becomes the f32
value of 1/sqrt(D) and so is part of the pattern key: one entry per D).

The kernel is gen_rows.py's flash-attention kernel (gen_attention, verified
on an H200 at S = 1024, H = 12, D = 64) in its template mode: one block of
128 threads per (head, 32-query tile), heaviest tiles first; key tiles of
64 up to the diagonal only (fully masked tiles are skipped); online softmax
in f32 SIMT FMA. For any S the query rows past S read row S - 1 and store
nothing, the key rows past S read row S - 1 and are masked by the causal
mask (a key past S is later than every valid query), and the grid is
H x ceil(S / 32). D is a compile-time constant (a multiple of 32): up to
D = 64 the next K/V tile is prefetched into registers and the tiles fit in
static shared memory; above, the tile is loaded after the barrier and the
tiles live in dynamic shared memory.

Special values (session 27; gen_rows.py gen_attention "v_past_s" and
"m_exp"): the kernels give the IR's NaN and Inf in the verifier's NaN/Inf
trial. The V rows of the keys past S are zeros, not row S - 1: their weight
is 0, and 0 x Inf = NaN made the last query row NaN where the IR gives Inf
(held-out seed 1's model 001, S = 5, was rejected for it on two of eight
seeds, bench/NOTES.md); and the exponentials are taken against 0 while a
row's running max is -inf. Tests: lit_tests/table/attention-specials.test;
GPU: bench/table/keys-device.sh.

The shape forms, each its own pattern key (docs/pattern-key.md):
  any    S, H, D distinct, S, H >= 2 (S and H free);
  s1     S = 1, the decode step (H free; the unit dimension stays in the key);
  h1     H = 1 (S free; the outliner folds the head away: buffers S x D);
  s1h1   S = H = 1 (nothing free);
  sd     S = D (H free; S is fixed to D);
  sh     S = H (one free size for both);
  hd     H = D (S free; H is fixed to D);
  h8, s8, s1h8   D = 64 only: H = 8, S = 8, or S = 1 with H = 8 (the scale
         0.125 is then `1/S<k>` in the key; that size is fixed to 8).
Other coincidences (S = H = D, S = 1 with H = D, H = 1 with S = D) get no
entry.

The importer forms (IMPORTER_HEADS, f32): the attention of nanoGPT's
CausalSelfAttention as torch-mlir emits it (examples/kernelbench_l3_p44/,
KernelBench level 3 problem 44), which the partitioner merges through its
views into one subgraph (passes/partition.c, rule 5): qkv [B, T, 3C] ->
[B*T, C], from the fused QKV slices, head-split expands and transposes,
the two batch_matmuls with their collapse/expand, the scale, the iota mask
and the decomposed softmax, to the head-merge transpose and collapse. The
kernels read q, k, v straight from the fused buffer with the head stride
and write y as [B*T, C]. B and T (and B*T, B*H) are free; C, H, D fixed.
Two entries per (H, D) (IMPORTER_ENTRIES), tried in this order:
  -0x3   exact f32 on TF32 tensor cores (gen_rows.py's gen_attention_tf32,
         3xTF32 mma.sync m16n8k8 for QK^T and PV, f32 online softmax;
         4 warps per 64 queries, grid B*H*ceil(T / 64));
  (none) f32 SIMT (gen_attention's fused-QKV form, 64 queries, 8 rows per
         thread, cp.async; it answers when -0x3 fails to build or verify).
TF32 mode (tf32=1) gets the same two. A precision-"tf32" form (TF32, the
"tf32" kind below: 3xTF32 scores, one-term TF32 PV) is 1.3x faster and
verified on the H200 (worst 0.949 of the TF32 tolerance), but only by the
componentwise TF32 bound (docs/verification.md, "TF32 mode"), whose error
scale (the reference run on squared inputs) is sum (a_k b_k)^2 for a GEMM
and has no such meaning through a softmax: there it cannot tell TF32's PV
error from bf16's. So it is not shipped (session 24); torch's own
attention does not use TF32 either.
The example is gen_p44.py's block at B = 32, T = 512;
bench/table/attn-p44-device.sh verifies and times them on the GPU
(bench/table/attn-p44-results.md).

Element types: f32, bf16 and f16 (DTYPES), the same forms for each. The
16-bit examples are the f32 one rewritten by bench/table/heldout.py's
dtype_rewrite (as heldout's minigpt_block family does): valid IR that
outlines to the same structure but computes, and sums, in 16 bits. The
verifier judges such a subgraph against its opmath truth (the IR computed
in f32, rounded once at the end: docs/verification.md, "16-bit
accumulation"), so the 16-bit kernels load bf16/f16 vectors, widen them
(arith.extf) into the same f32 shared-memory tiles, compute the scores, the
online softmax and PV in f32, and round once (arith.truncf) at the store.
Their scale is the IR's constant as the 16-bit type holds it (D = 32:
bf16 0.1767578125, not the f32 0.17677669), widened to f32, as the opmath
truth has it.
"""
import math
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
from heldout import dtype_rewrite, heads_rewrite, size_rewrite  # noqa: E402
import gen_rows  # noqa: E402

ARCHS = ["sm_80", "sm_90", "sm_90a"]
EXAMPLE = "examples/minigpt_block.mlir"
HEAD_SIZES = [32, 64, 96, 128]
DTYPES = ["f32", "bf16", "f16"]
# (S, H) the example is outlined at for each form; D stands for the head
# size. The values are distinct from each other, from every D and from the
# model's other widths (H x D, 2, 3 and 4 times that), so sizes map back to
# roles by value.
FORMS = {"any": (1000, 12), "s1": (1, 12), "h1": (1000, 1), "s1h1": (1, 1),
         "sd": ("D", 12), "sh": (12, 12), "hd": (1000, "D")}
# D = 64 only: its scale 0.125 is 1/8, and the pattern key writes a float
# that is the reciprocal of a size as `1/S<k>`, so S = 8 or H = 8 (a common
# head count) is another key, in which that size must stay 8.
FORMS8 = {"h8": (1000, 8), "s8": (8, 12), "s1h8": (1, 8)}


def forms(d):
    return dict(FORMS, **(FORMS8 if d == 64 else {}))


def scale_literal(d):
    """The f32 nearest 1/sqrt(d), written so that it reads back exactly."""
    x = struct.unpack("f", struct.pack("f", 1.0 / math.sqrt(d)))[0]
    return "%.8e" % x


def scale_value(d, dtype="f32"):
    """The scale as a kernel of element type dtype must use: the f32 literal
    for f32; for bf16/f16 that literal rounded to the type (to nearest,
    ties to even), as the parsed IR constant and the opmath truth hold it,
    written as an f32 literal."""
    lit = scale_literal(d)
    if dtype == "f32":
        return lit
    bits = {"bf16": 8, "f16": 11}[dtype]
    m, ex = math.frexp(float(lit))  # 0.5 <= m < 1: a normal number here
    return "%.8e" % math.ldexp(round(m * (1 << bits)), ex - bits)


def example_text(s, h, d, dtype="f32"):
    """examples/minigpt_block.mlir with sequence s, h heads of size d (the
    hidden width h * d, the MLP 4 h d) and the scale 1/sqrt(d); for a
    16-bit dtype, rewritten to it by heldout.py's dtype_rewrite."""
    text = open(os.path.join(ROOT, EXAMPLE)).read()
    # Heads and head size go through markers first, so that no new size is
    # mistaken for an old one.
    mh, md = 999979, 999983
    text = heads_rewrite(text, 12, mh)
    text = re.sub(r"(?<=[<x])64(?=x)", str(md), text)
    text = re.sub(r"(?<=, )64(?=\])", str(md), text)
    hd = h * d
    text = size_rewrite(text, {1024: s, 768: hd, 1536: 2 * hd, 2304: 3 * hd, 3072: 4 * hd,
                               mh: h, md: d}, {768.0: hd})
    old = "arith.constant 0.125 : f32"
    assert text.count(old) == 1
    text = text.replace(old, "arith.constant %s : f32" % scale_literal(d))
    return text if dtype == "f32" else dtype_rewrite(text, "f32", dtype)


def form_sizes(form, d):
    s, h = forms(d)[form]
    return (d if s == "D" else s), (d if h == "D" else h)


def evaluate(text):
    """Every {{...}} placeholder of a text without free sizes, evaluated
    (positive integers only: / is C's and Python's floor division alike)."""
    def one(m):
        expr = m.group(1)
        assert re.fullmatch(r"[0-9+\-*/() ]+", expr), expr
        return str(eval(expr.replace("/", "//")))
    return re.sub(r"\{\{(.*?)\}\}", one, text)


def render_for(form, d, dtype="f32", mma=False):
    """mma: gen_rows.py's gen_attention_mma16 (16-bit dtypes only: the
    "-0mma" entries) instead of gen_attention."""
    s, h = form_sizes(form, d)

    def render(g):
        ps = g["pattern_sizes"]
        sym = {v: k for k, v in sorted(ps.items(), reverse=True)}
        dsym = sym[d]

        def token(v):
            if v == 1 or (form in FORMS8 and v == 8):
                return str(v)
            return str(d) if sym[v] == dsym else sym[v]
        st, ht = token(s), token(h)
        free = sorted({t for t in (st, ht) if t.startswith("S")}, key=lambda x: int(x[1:]))
        p = dict(sym=True, S=st, H=ht, D=d, scale=scale_value(d, dtype), rank2=(h == 1))
        if dtype != "f32":
            p["dtype"] = dtype
        if mma:
            (block, grid), e, args, globals_ = gen_rows.gen_attention_mma16(dict(p, **MMA16))
            kname = "causal_attention_mma_%s_d%d" % (dtype, d)
        else:
            (block, grid), e, args, globals_ = gen_rows.gen_attention(p)
            kname = "causal_attention_%s_d%d" % (dtype, d)
        text = gen_rows.module_text([], kname, args, block, grid, e.body(), globals_,
                                    e.extra_attrs)
        header = [
            "Pattern-table template: kernels/table/attn_any.py %s D = %d (%s form): causal "
            "attention, any sequence length and head count." % (dtype, d, form),
        ] + ([
            "S = %s queries and keys, H = %s heads of %d; gen_rows.py's flash-attention "
            "kernel on tensor cores (gen_attention_mma16): mma.sync m16n8k16, f32 "
            "accumulation and online softmax, %s, one arith.truncf at the store."
            % (st, ht, d, "P rounded to %s for PV" % dtype if MMA16.get("PV_TERMS") == 1 else
               "P in two %s terms for PV (hi = rn(p), lo = rn(p - hi); V clamped to the "
               "finite range)" % dtype),
        ] if mma else [
            "S = %s queries and keys, H = %s heads of %d; gen_rows.py's flash-attention "
            "kernel (gen_attention) in its template mode." % (st, ht, d),
        ] + ([] if dtype == "f32" else [
            "%s in and out: loads widened to f32 (arith.extf), f32 tiles and arithmetic "
            "(scores, online softmax, PV), one arith.truncf at the store." % dtype,
        ])) + ["llm-fuse.template-size %s" % x for x in free]
        lines = text.split("\n")
        assert lines[0] == "gpu.module @kernels {"
        text = "\n".join(lines[:1] + ["  // " + x for x in header] + lines[1:])
        if not free:
            text = evaluate(text)
        sizes = [None if k in free else v for k, v in sorted(ps.items(),
                                                              key=lambda kv: int(kv[0][1:]))]
        return text, sizes
    return render


# (H, D) of the importer forms: KernelBench's MiniGPT block (8 x 96) and
# GPT-2 small (12 x 64).
IMPORTER_HEADS = [(8, 96), (12, 64)]
IMPORTER_EXAMPLE = "examples/kernelbench_l3_p44/gen_p44.py"

# The importer forms' kernels: kind -> (kernel name % (H, D), header text).
KINDS = {
    "simt": ("causal_attention_qkv_f32_h%d_d%d",
             "gen_rows.py's gen_attention, fused-QKV form: f32 SIMT FMA."),
    "x3": ("causal_attention_qkv_x3_h%d_d%d",
           "gen_rows.py's gen_attention_tf32, fused-QKV form: exact f32 on TF32 tensor cores "
           "(3xTF32 mma.sync for QK^T and PV: big = rna(x), small = rna(x - big), "
           "small*big + big*small + big*big), f32 softmax."),
    "tf32": ("causal_attention_qkv_tf32_h%d_d%d",
             "gen_rows.py's gen_attention_tf32, fused-QKV form, TF32: QK^T in 3xTF32 (the "
             "scores as exact as f32's), PV in one-term TF32 (P and V rounded to TF32, f32 "
             "accumulation), f32 softmax. Precision tf32: tf32=1 only."),
}

# The importer entries of each (H, D): (name suffix, kind, generator
# parameters, precision). Entries of one key are tried in file-name order
# (docs/pattern-table.md "When it is asked"): "-0x3" (exact f32 on tensor
# cores) sorts before the SIMT entry, which answers when it does not build or
# verify; "tf32" entries are served only in TF32 mode, before the exact ones.
# Measured on an H200 (bench/table/attn-p44-device.sh; bench/NOTES.md,
# "P44 attention"): at P44's 8 x 96 the SIMT kernel is bound by shared-memory
# reads, so 8 query rows per thread (RPT 8, 64-query tiles, 128 threads) beat
# 4 (1.17-1.20x); the cp.async pipeline alone changed little; one-term TF32
# QK^T failed the verifier (the softmax amplifies the scores' rounding
# error on heavy-tailed inputs), hence 3xTF32 scores in the tf32 entry too.
SIMT = dict(BM=64, RPT=8, pipe="cpasync")
X3 = dict(NW=4, TERMS=3, PVTERMS=3, RND="add")
TF32 = dict(NW=4, TERMS=3, PVTERMS=1, RND="add")
IMPORTER_ENTRIES = {
    (8, 96): [("-0x3", "x3", X3, None),
              ("", "simt", SIMT, None)],
    (12, 64): [("-0x3", "x3", X3, None),
               ("", "simt", SIMT, None)],
}


def importer_example(h, d, b=32, t=512):
    sys.path.insert(0, os.path.join(ROOT, "examples", "kernelbench_l3_p44"))
    import gen_p44
    return gen_p44.model(b, t, h * d, h)


def render_importer(h, d, b=32, t=512, params=None, gen=None, kind=None):
    """params: gen_attention parameters over the defaults (BM, pipe, ...);
    gen: another generator of gen_attention's interface
    (gen_attention_tf32); kind: what the kernel is, for its name and header
    (KINDS)."""
    kname, what = KINDS[kind or ("x3" if gen is gen_rows.gen_attention_tf32 else "simt")]

    def render(g):
        ps = g["pattern_sizes"]
        sym = {v: k for k, v in ps.items()}
        c = h * d
        assert len(sym) == len(ps), ps  # the example's sizes are distinct
        tb, tt, tbt = sym[b], sym[t], sym[b * t]
        free = {tb, tt, tbt, sym[b * h]}
        p = dict(sym=True, S=tt, H=h, D=d, scale=scale_value(d),
                 qkv=dict(B=tb, BT=tbt, C=c), **(params or {}))
        (block, grid), e, args, globals_ = (gen or gen_rows.gen_attention)(p)
        text = gen_rows.module_text([], kname % (h, d), args, block, grid, e.body(), globals_,
                                    e.extra_attrs)
        header = [
            "Pattern-table template: kernels/table/attn_any.py %s importer form, H = %d "
            "heads of D = %d: causal attention as torch-mlir emits nanoGPT's, any batch "
            "and sequence length." % ("f32 (precision tf32)" if kind == "tf32" else "f32", h, d),
            "qkv [%s, %s, %d] (q, k, v column blocks, head h at h*%d) -> out [%s, %d] "
            "(row b*T + t, column h*%d + d); %s" % (tb, tt, 3 * c, d, tbt, c, d, what),
        ] + ["llm-fuse.template-size %s" % x for x in sorted((tb, tt, tbt),
                                                            key=lambda x: int(x[1:]))]
        lines = text.split("\n")
        assert lines[0] == "gpu.module @kernels {"
        text = "\n".join(lines[:1] + ["  // " + x for x in header] + lines[1:])
        sizes = [None if k in free else v for k, v in sorted(ps.items(),
                                                              key=lambda kv: int(kv[0][1:]))]
        return text, sizes
    return render


def pick(groups):
    att = [g for g in groups if g.get("class") == "attention-like"]
    return att[0] if len(att) == 1 else None


# The 16-bit forms' tensor-core kernel (gen_rows.py gen_attention_mma16): its
# parameters; each 16-bit form's "-0mma" entry sorts before its SIMT entry
# (file order, docs/pattern-table.md "When it is asked"), which answers when
# the mma kernel does not build or verify.
MMA16 = dict(NW=4)
# Whether templates() yields the "-0mma" entries. Off until the kernel with
# v_clamp (session 29) has passed llm-fuse-verify on the H200 at the sizes
# of bench/table/attn16_bench.py (bench/table/attn16-device.sh); the stage
# (attn16-prepare.sh) turns it on for its own copy of the table.
MMA16_ENTRIES = True


def templates():
    out = []
    for dtype in DTYPES:
        for d in HEAD_SIZES:
            for form in forms(d):
                s, h = form_sizes(form, d)
                if dtype != "f32" and MMA16_ENTRIES:
                    out.append(dict(
                        name="zz-any-attention-%s-d%d-%s-0mma" % (dtype, d, form),
                        example=example_text(s, h, d, dtype),
                        pick=pick,
                        render=render_for(form, d, dtype, mma=True),
                        archs=ARCHS,
                        source="kernels/table/attn_any.py %s D=%d %s (from %s at S=%d, H=%d, "
                               "rewritten to %s; gen_rows.py gen_attention_mma16, mma.sync "
                               "m16n8k16, %s)" % (dtype, d, form, EXAMPLE, s, h, dtype,
                                                  ", ".join("%s=%s" % kv for kv in
                                                            sorted(MMA16.items())))))
                if dtype == "f32":
                    src = ("kernels/table/attn_any.py f32 D=%d %s (from %s at S=%d, H=%d; "
                           "gen_rows.py causal_attention_f32, sg_4b6d101fd59f7da9)"
                           % (d, form, EXAMPLE, s, h))
                else:
                    src = ("kernels/table/attn_any.py %s D=%d %s (from %s at S=%d, H=%d, "
                           "rewritten to %s; gen_rows.py gen_attention, f32 arithmetic)"
                           % (dtype, d, form, EXAMPLE, s, h, dtype))
                out.append(dict(
                    name="zz-any-attention-%s-d%d-%s" % (dtype, d, form),
                    example=example_text(s, h, d, dtype),
                    pick=pick,
                    render=render_for(form, d, dtype),
                    archs=ARCHS,
                    source=src))
    for h, d in IMPORTER_HEADS:
        for suffix, kind, params, precision in IMPORTER_ENTRIES[h, d]:
            gen = gen_rows.gen_attention if kind == "simt" else gen_rows.gen_attention_tf32
            t = dict(
                name=("zz-any-attention-importer-tf32-h%d-d%d" % (h, d) if kind == "tf32" else
                      "zz-any-attention-importer-f32-h%d-d%d%s" % (h, d, suffix)),
                example=importer_example(h, d),
                pick=pick,
                render=render_importer(h, d, params=params, gen=gen, kind=kind),
                archs=ARCHS,
                source="kernels/table/attn_any.py %s importer form H=%d D=%d (from %s at "
                       "B=32, T=512; gen_rows.py %s, fused-QKV form%s)"
                       % ("tf32" if kind == "tf32" else "f32", h, d, IMPORTER_EXAMPLE,
                          gen.__name__, "" if not params else ", " + ", ".join(
                              "%s=%s" % kv for kv in sorted(params.items()))))
            if precision:
                t["precision"] = precision
            out.append(t)
    return out
