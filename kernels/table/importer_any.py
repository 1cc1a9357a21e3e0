#!/usr/bin/env python3
"""importer_any.py - the table's templates for importer-shaped models: the
subgraphs that torch-mlir's linalg-on-tensors output and TOSA legalizations
partition into (examples/importer/, examples/README.md "Importer-style
models"), every size free.

kernels/table/build.py imports this module (SPEC_MODULES) and writes one entry
per family that `templates()` yields. The example of each entry is the shipped
importer model itself, so the entries' pattern keys are those of its
subgraphs; its sizes (sequence 128, hidden 256, QKV 768, MLP 1024, 4 heads)
are distinct where they are free together, so each maps back to its role by
value. Weights are dense_resource constants: the outliner makes them inputs
(docs/pattern-key.md, "Constants"), and the kernels read them from memory.

  ln         the decomposed LayerNorm, [1, R, N] (ln_1 and ln_2: two keys,
             the cloned tensor.empty sits at another place in each)
  softmax    the attention softmax, rank 4 [1, H, T, T] over the last
             dimension (rows = H * T, row length T)
  qkv        x W^T + b                                 (W [N, K]: nn.Linear)
  attn_proj  o W^T + b + x                             (W [N, N])
  fc         gelu_tanh(x W^T + b), viewed as [M, N]
  proj       g W^T + b + h
  tosa_fc    gelu_tanh(x W + b), TOSA (W [K, N], b [1, N])
  tosa_proj  g W + b + x, TOSA
  tms, tmpv  torch-mlir's attention scores and att @ v at T = 2 .. 7
             positions (small_t_templates: a size under 8 stays a literal in
             the reshapes, so each T is a key of its own; bmm_any.py's
             general kernel, every dtype)

The row kernels are rows_any.py's (LayerNorm two-pass, softmax online), with
the memref ranks of these subgraphs ([1, R, N]; [1, H, T, T] indexed by row
= h * T + t). The GEMMs are gen_gemm.py's f32 SIMT kernel in its symbolic
mode (what gemm_any.py uses), with the MiniGPT block's tilings: M masked,
N and K free under requirements, with the small-M tilings and a masked-N/K
form like gemm_any.py's; the nn.Linear weight is read as stored, N x K
(gen_gemm.py's b_nk: B staged transposed into shared memory like A).
f32 only: 16-bit forms of the LayerNorm and softmax (whose rewrites sum in
16 bits, judged by the opmath reference like rows_any.py's) are not made
yet, and the 16-bit GEMMs need an N x K form of the tensor-core kernels.

On sm_90a every GEMM family has an exact f32 entry first (`*-f32-0x3tma`,
which sorts before `*-f32-simt`): gen_gemm.py's f32x3_wgmma_tma kernel
(gemm_wgmma_tma.py "3xTF32 mode": each f32 operand split into big and small
TF32 parts, three wgmmas per k8, per-k-tile promotion in f32; gemm_any.py's
f32x3_cfg: cooperative 128 x 128, 3 stages, persistent, GROUP_M a knob),
W read as stored (the nn.Linear [N, K] is K-major like A; TOSA's [K, N] is
transposed by the split), the *_bt forms' C and residual viewed [B, T, N]
as in the SIMT entries. Its requirements: M >= 128, N and K multiples of 4,
K >= 32, N >= 128 for W [N, K] (a box of BN rows may not exceed W) and
N >= 64 for W [K, N]; a size they refuse (M < 128 first: the SIMT small-M
tilings serve those) falls to the SIMT entries. sm_80 and sm_90 keep the
SIMT entries alone. KernelBench L3 P44's GEMMs measured on the H100:
bench/NOTES.md "P44's GEMMs on 3xTF32".
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
import gen_gemm  # noqa: E402
import gemm_any  # noqa: E402
import rows_any  # noqa: E402

ARCHS = ["sm_80", "sm_90", "sm_90a"]
GPT = "examples/importer/minigpt_torch_mlir.mlir"
TOSA = "examples/importer/mlp_tosa.mlir"
P44 = "examples/kernelbench_l3_p44/p44_b32.mlir"


def _read(src):
    return open(os.path.join(ROOT, src)).read()


def _sig(g):
    return "(%s) -> (%s)" % (", ".join(i["type"] for i in g["inputs"]),
                             ", ".join(o["type"] for o in g["outputs"]))


def _pick(klass, sig, nth=0):
    """the nth group of class klass whose signature is sig"""
    def pick(groups):
        hit = [g for g in groups if g.get("class") == klass and _sig(g) == sig]
        return hit[nth] if len(hit) > nth else None
    return pick


# ---- rows ------------------------------------------------------------------

class RowKernel(rows_any.Kernel):
    """rows_any.py's kernel over memrefs of a higher rank: split says how
    the row index becomes the leading indices. x/y: [1, R, N] (split None),
    [1, H, T, T] (split "ht": row = h * T + t) or [B, T, N] (split "bt": row
    = b * T + t, an importer's LayerNorm at batch B > 1)."""

    def __init__(self, fam, dtype, inputs, outputs, split=None):
        super().__init__(fam, dtype, inputs, outputs)
        self.split = split

    def mem(self, role):
        if role in ("x", "r", "y", "h"):
            if self.split == "ht":
                return "memref<1x{{H}}x{{T}}x{{T}}x%s>" % self.t
            if self.split == "bt":
                return "memref<{{B}}x{{T}}x{{N}}x%s>" % self.t
            return "memref<1x{{R}}x{{N}}x%s>" % self.t
        return super().mem(role)

    def prologue(self):
        super().prologue()
        e = self.e
        c0 = e.const(0, "index")
        if self.split == "ht":
            ct = e.const("{{T}}", "index")
            h = e.op("arith.divui %s, %s : index" % (self.row, ct), "h")
            t = e.op("arith.remui %s, %s : index" % (self.row, ct), "t")
            self.idx = "%s, %s, %s" % (c0, h, t)
        elif self.split == "bt":
            ct = e.const("{{T}}", "index")
            b = e.op("arith.divui %s, %s : index" % (self.row, ct), "bi")
            t = e.op("arith.remui %s, %s : index" % (self.row, ct), "t")
            self.idx = "%s, %s" % (b, t)
        else:
            self.idx = "%s, %s" % (c0, self.row)

    def load(self, role, col, nt=False):
        if role not in ("x", "r", "y", "h"):
            return super().load(role, col, nt)
        raw = self.e.op("vector.load %%%s[%s, %s]%s : %s, %s" % (
            role, self.idx, col, " {nontemporal = true}" if nt else "", self.mem(role), self.VT),
            role + "v")
        return self.to_f32(raw)

    def store(self, role, col, vf):
        v = self.from_f32(vf)
        self.e.emit("vector.store %s, %%%s[%s, %s] : %s, %s" % (
            v, role, self.idx, col, self.mem(role), self.VT))


def _render_rows(name, fam, ins, outs, split, roles):
    """roles: token -> the example's size (R, N or H, T), mapped to the
    group's symbols by value"""
    def render(g):
        ps = g["pattern_sizes"]
        sym = {v: k for k, v in sorted(ps.items(), reverse=True)}
        tok = {t: sym[v] for t, v in roles.items()}
        if split == "ht":
            tok["R"] = "%s * %s" % (tok["H"], tok["T"])
            tok["N"] = tok["T"]
        elif split == "bt":
            tok["R"] = "%s * %s" % (tok["B"], tok["T"])
        k = RowKernel(fam, "f32", ins, outs, split)
        free = sorted(ps, key=lambda s: int(s[1:]))
        header = [
            "Pattern-table template: kernels/table/importer_any.py %s f32 (rows_any.py's %s "
            "kernel): any sizes." % (name, fam["kind"]),
            "%s; TPR threads per row, V elements per load." % ", ".join(
                "%s = %s" % (t, tok[t]) for t in ("R", "N", "B", "H", "T") if t in tok),
        ] + ["llm-fuse.template-size %s" % s for s in free]
        tune = rows_any.tune_lines("f32")
        if len(free) + 2 > 4:
            # three sizes (B, T, N) and TPR, V: five knobs, one more than a
            # text may declare. V is not timed anyway (its requirement picks
            # the largest of 4, 2, 1 that divides N): an expression of N.
            assert tune[2].startswith("llm-fuse.tune V = 4,") and "V" in tune[3], tune
            tune = tune[:2]
            header[1] = header[1].replace("V elements per load",
                                          "V = 4 - 2 * (N % 4 != 0) - (N % 2 != 0) elements per load "
                                          "(the largest of 4, 2, 1 that divides N)")
            tok["V"] = "4 - 2 * (N % 4 != 0) - (N % 2 != 0)".replace("N", tok["N"])
        header += tune
        text = k.text("%s_f32" % name, header)

        def fix(s):
            for t in ("R", "N", "B", "H", "T", "V"):
                if t in tok:
                    s = re.sub(r"\b%s\b" % t, "(%s)" % tok[t] if " " in tok[t] else tok[t], s)
            return s
        text = re.sub(r"\{\{[^}]*\}\}", lambda m: fix(m.group(0)), text)
        text = "\n".join(fix(l) if "tune-require" in l else l for l in text.split("\n"))
        return text, [None] * len(ps)
    return render


# ---- GEMMs -----------------------------------------------------------------

# name: (example, signature with role tokens M, N, K, the example's sizes,
#        a, b, bias, res, epilogue, base subgraph of gen_gemm.py (tiling),
#        b_nk, product)
GEMMS = {
    "qkv": (GPT, "(tensor<NxKxf32>, tensor<1xMxKxf32>, tensor<Nxf32>) -> tensor<1xMxNxf32>",
            dict(M=128, N=768, K=256), 1, [0], 2, None, "bias", "sg_775f56ec869d4b28", True,
            "A[M,K] @ W[N,K]^T (nn.Linear, f32 FMA)"),
    "attn_proj": (GPT, "(tensor<NxNxf32>, tensor<MxNxf32>, tensor<Nxf32>, tensor<1xMxNxf32>) "
                  "-> tensor<1xMxNxf32>",
                  dict(M=128, N=256, K=256), 1, [0], 2, 3, "bias_residual", "sg_1c6bf422e56f7cc7",
                  True, "A[M,N] @ W[N,N]^T (nn.Linear, f32 FMA)"),
    "fc": (GPT, "(tensor<NxKxf32>, tensor<1xMxKxf32>, tensor<Nxf32>) -> tensor<MxNxf32>",
           dict(M=128, N=1024, K=256), 1, [0], 2, None, "bias_gelu_tanh", "sg_208fdd59011a4518",
           True, "A[M,K] @ W[N,K]^T (nn.Linear, f32 FMA)"),
    "proj": (GPT, "(tensor<NxKxf32>, tensor<MxKxf32>, tensor<Nxf32>, tensor<1xMxNxf32>) "
             "-> tensor<1xMxNxf32>",
             dict(M=128, N=256, K=1024), 1, [0], 2, 3, "bias_residual", "sg_36d4248ce34e0c94",
             True, "A[M,K] @ W[N,K]^T (nn.Linear, f32 FMA)"),
    "tosa_fc": (TOSA, "(tensor<KxNxf32>, tensor<1xMxKxf32>, tensor<1xNxf32>) -> tensor<1xMxNxf32>",
                dict(M=128, N=1024, K=256), 1, [0], 2, None, "bias_gelu_tanh",
                "sg_208fdd59011a4518", False, "A[M,K] @ W[K,N] (TOSA batch_matmul of batch 1, f32 FMA)"),
    "tosa_proj": (TOSA, "(tensor<KxNxf32>, tensor<1xMxKxf32>, tensor<1xNxf32>, tensor<1xMxNxf32>) "
                  "-> tensor<1xMxNxf32>",
                  dict(M=128, N=256, K=1024), 1, [0], 2, 3, "bias_residual",
                  "sg_36d4248ce34e0c94", False, "A[M,K] @ W[K,N] (TOSA batch_matmul of batch 1, f32 FMA)"),
    # batch B > 1 (KernelBench L3 44, examples/kernelbench_l3_p44/): the
    # Linear's [B*T, N] rows viewed as [B, T, N] inside the subgraph
    # (partition rule 3 through row views); M = B * T, a requirement.
    "qkv_bt": (P44, "(tensor<NxKxf32>, tensor<MxKxf32>, tensor<Nxf32>) -> tensor<BxTxNxf32>",
               dict(M=16384, N=2304, K=768, B=32, T=512), 1, [0], 2, None, "bias",
               "sg_775f56ec869d4b28", True, "A[M,K] @ W[N,K]^T (nn.Linear, f32 FMA; C viewed [B, T, N])"),
    "attn_proj_bt": (P44, "(tensor<NxNxf32>, tensor<MxNxf32>, tensor<Nxf32>, tensor<BxTxNxf32>) "
                     "-> tensor<BxTxNxf32>",
                     dict(M=16384, N=768, K=768, B=32, T=512), 1, [0], 2, 3, "bias_residual",
                     "sg_1c6bf422e56f7cc7", True,
                     "A[M,N] @ W[N,N]^T (nn.Linear, f32 FMA; residual and C viewed [B, T, N])"),
    "fc_bt": (P44, "(tensor<NxKxf32>, tensor<MxKxf32>, tensor<Nxf32>) -> tensor<MxNxf32>",
              dict(M=16384, N=3072, K=768, B=32, T=512), 1, [0], 2, None, "bias_gelu_tanh",
              "sg_208fdd59011a4518", True,
              "A[M,K] @ W[N,K]^T (nn.Linear, f32 FMA; the GELU on the [B, T, N] view)"),
    "proj_bt": (P44, "(tensor<NxKxf32>, tensor<MxKxf32>, tensor<Nxf32>, tensor<BxTxNxf32>) "
                "-> tensor<BxTxNxf32>",
                dict(M=16384, N=768, K=3072, B=32, T=512), 1, [0], 2, 3, "bias_residual",
                "sg_36d4248ce34e0c94", True,
                "A[M,K] @ W[N,K]^T (nn.Linear, f32 FMA; residual and C viewed [B, T, N])"),
}


# The [B, T, N] forms' tilings (P44: M = B * T = 16384 at batch 32, 65536 at
# 128; K 768 or 3072, N 768, 2304 or 3072). The default is the tiling the
# suite's f32 GEMM found best at 1024 x 8192 x 8192 (gen_gemm.py
# sg_5beaf48efb3a6ac0: 128 x 128 x 16, each warp a 4 x 8 patch of threads,
# 2 CTAs per SM; 2.827 ms against cuBLAS's 2.699 on the H200, and 13.28 ms
# against 12.70 for the MiniGPT MLP at 65536 rows, bench/NOTES.md), no
# split-K, GROUP_M 8, 4 and 16 timed. Beside it, alternatives the pass
# times too (TILE = 100 * alternative + 8):
#   1  128 x 64 x 16, warp 4 x 8: twice the CTAs for N = 768 (M / 128 x 12)
#   2  64 x 128 x 8: the MiniGPT block's QKV and c_fc tiling (what these
#      entries had before: 1.306 and 1.724 ms at batch 32)
#   3  128 x 128 x 8, warp 4 x 8: half the loop body of the default
# and the small-M tilings of gemm_any.py (M <= 128, M <= 1024). GROUP_M 1
# (row-major) is not timed: TILE may take 8 values.
BT_TILE = dict(BM=128, BN=128, BK=16, KS=1, WX=4, group_m=8, minctasm=2)
BT_ALTS = [dict(BM=128, BN=64, BK=16, KS=1, WX=4, group_m=8, minctasm=3),
           dict(BM=64, BN=128, BK=8, KS=1, WX=None, group_m=8, minctasm=2),
           dict(BM=128, BN=128, BK=8, KS=1, WX=4, group_m=8, minctasm=2)]
BT_GROUP_M = [8, 4, 16]


def _sub_roles(sig, vals):
    """the signature with role tokens replaced by vals (role -> text)"""
    return re.sub(r"(?<=[<x])([MNKBT])(?=x)", lambda m: str(vals[m.group(1)]), sig)


def _gemm_cfg(name, sym, roles=None):
    """sym: M, N, K -> symbols; roles: every role token -> its symbol (B and
    T too, where the signature has them)"""
    src, sig, ex, a, b, bias, res, ep, base, bnk, product = GEMMS[name]
    cfg = dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == base))
    cfg.update(sg="ia_%s_f32" % name, example=src, a=a, b=b, bias=bias, res=res, epilogue=ep,
               M=sym["M"], N=sym["N"], K=sym["K"],
               signature=_sub_roles(sig, {r: "{{%s}}" % s for r, s in (roles or sym).items()}),
               product=re.sub(r"\b([MNK])\b", lambda m: sym[m.group(1)], product))
    cfg.pop("fingerprint", None)
    cfg.pop("math_notes", None)
    if bnk:
        cfg["b_nk"] = True
    return cfg


def _render_gemm(name, nk=False):
    src, sig, ex = GEMMS[name][:3]

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in ex.items()}
        c = _gemm_cfg(name, {r: sym[r] for r in ("M", "N", "K")}, sym)
        if nk:
            c["mask_nk"] = gemm_any.NK_ALIGN["f32_simt"]
        bt = name.endswith("_bt")
        if bt:
            c.update(BT_TILE)
        extra = gemm_any._old_refuses(c, sym["N"], sym["K"]) if nk else None
        alts = gemm_any._alternatives(c, gemm_any.SMALL_M["f32_simt"], sym["M"], extra)
        if bt:
            big = []
            for ov in BT_ALTS:
                a = dict(c)
                a.update(ov)
                if a["WX"] is None:
                    a.pop("WX")
                big.append((a, extra))
            alts = alts[:1] + big + alts[1:]
        _, text, _ = gen_gemm.generate_alternatives(alts, group_m=BT_GROUP_M if bt else None)
        text = text[text.index("gpu.module"):]
        free = sorted(_used_symbols(text), key=lambda k: int(k[1:]))
        lines = text.split("\n")
        roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K", "B", "T") if r in sym)
        what = ("M, N and K are masked (N and K multiples of 4, used where the unmasked "
                "entry refuses them)" if nk else "M is masked (any M)")
        tiling = ("128 x 128 x 16 tiling of sg_5beaf48efb3a6ac0, with alternatives" if bt else
                  "%s tiling" % GEMMS[name][8])
        head = [lines[0],
                "  // Pattern-table template: kernels/table/importer_any.py %s f32 (gen_gemm.py "
                "f32_simt, %s%s)." % (name, tiling,
                                      ", B read as stored N x K" if GEMMS[name][9] else ""),
                "  // %s; %s, N and K as the requirements say." % (roles, what)] + \
               ["  // llm-fuse.template-size %s" % k for k in free]
        return "\n".join(head + lines[1:]), [None] * len(ps)
    return render


def _render_gemm_f32x3(name):
    """the sm_90a exact f32 form: gen_gemm.py's f32x3_wgmma_tma kernel
    (gemm_any.py's f32x3_cfg knobs and requirements) over the family's
    operands, W read as stored ([N, K] for nn.Linear, [K, N] for TOSA: the
    kernel's split transposes it), C and the residual viewed [B, T, N] in
    the *_bt forms like the SIMT entries"""
    src, sig, ex = GEMMS[name][:3]
    x3 = gemm_any.f32x3_cfg(GEMMS[name][8])

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in ex.items()}
        c = _gemm_cfg(name, {r: sym[r] for r in ("M", "N", "K")}, sym)
        for k in gemm_any.TILE_KEYS + ("KS", "WX", "WGS"):
            c.pop(k, None)
        c.update({k: x3[k] for k in ("kind", "chips") + tuple(gemm_any.F32X3)})
        c["product"] = c["product"].replace("f32 FMA", "exact f32: 3xTF32 wgmma")
        _, text, _ = gen_gemm.generate(c)
        text = text[text.index("gpu.module"):]
        free = sorted(_used_symbols(text), key=lambda k: int(k[1:]))
        lines = text.split("\n")
        roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K", "B", "T") if r in sym)
        head = [lines[0],
                "  // Pattern-table template: kernels/table/importer_any.py %s f32 (gen_gemm.py "
                "f32x3_wgmma_tma, cooperative 128 x %d, %d stages, B read as stored %s)." % (
                    name, c["BN"], c["stages"], "N x K" if c.get("b_nk") else "K x N"),
                "  // %s; M, N and K are masked by TMA's zero fill and the partial tiles' epilogue "
                "(M >= %d; N and K multiples of 4, N >= %d, K >= 32); exact f32 by the 3xTF32 split." % (
                    roles, gemm_any.TMA_BM, c["BN"] if c.get("b_nk") else 64)] + \
               ["  // llm-fuse.template-size %s" % k for k in free]
        return "\n".join(head + lines[1:]), [None] * len(ps)
    return render


def _used_symbols(text):
    """the size symbols the placeholders and requirements of text use"""
    used = set()
    for m in re.finditer(r"\{\{.*?\}\}|llm-fuse\.tune-require .*", text):
        used |= set(re.findall(r"\bS\d+\b", m.group(0)))
    return used


def _subst(text, what, by):
    """what -> by inside the placeholders and requirement lines of text"""
    def one(m):
        return re.sub(what, by, m.group(0))
    return re.sub(r"\{\{.*?\}\}|llm-fuse\.tune-require .*", one, text)


def _gemm_pick(name):
    src, sig, ex = GEMMS[name][:3]
    want = _sub_roles(sig, ex)
    ins, out = want.split(" -> ")
    return _pick("contraction", "%s -> (%s)" % (ins, out))


# ---- torch-mlir's attention products at fewer than 8 positions -------------
#
# The scores (`tms`: q [1,H,T,d] @ k^T [1,H,d,T], scaled, masked) and att @ v
# (`tmpv`) of a torch-mlir attention reshape their batch_matmul's result with
# tensor.expand_shape ... output_shape [1, H, T, T] (resp. [1, H, T, d]). A
# size under 8 stays a literal in such an attribute (docs/pattern-key.md,
# item 2), so T = 2 .. 7 is a key of its own at each T (T = 1 and T >= 8:
# kernels/table/bmm_any.py's `mn1`/`mk1` and `mn`/`mk` entries). Held-out
# seed 7's scores at T = 6 had none. These entries take bmm_any.py's model
# (model_text) and its general kernel (gen_kernel: every size masked, f32
# accumulation), both read-only from there: at T <= 7 the products are a few
# hundred outputs, launch-bound whatever the tiling. Every dtype; the scores
# per head size of bmm_any.SCALES (the scale is in the key); H (12 in the
# example; any count of 8 or more that differs from T and d gives this key)
# and d free.
SMALL_T = range(2, 8)

# The scores at T = sqrt(d) (T = 8 at d = 64): the scale 1/sqrt(d) is then
# the reciprocal of a size, abstracted as 1/S<T> (docs/pattern-key.md, item
# 4; "Limits": a coincidence makes the key more specific), so that T is a
# key of its own too. Held-out seed 29's scores at T = 8 had none. The same
# general kernel serves it, fixed to that T (its scale literal is d's).
def _coincident_t():
    """(T, d) for each head size d of bmm_any.SCALES with an integer sqrt(d) >= 8."""
    import bmm_any
    return [(t, d) for t, d in ((int(round(d ** 0.5)), d) for d in sorted(bmm_any.SCALES))
            if t * t == d and t >= 8]


def _render_small_t(form, dt, sizes, d, fixed=None):
    """render() of a small-T entry; `fixed` (a size value) is fixed in the
    entry, every other size free."""
    import bmm_any

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in sizes.items()}
        want = [[sizes[x] if isinstance(x, str) else x for x in shape]
                for _, shape, _ in bmm_any.form_args(form)]
        have = [x["shape"] for x in g["inputs"] + g["outputs"]]
        assert want == have, (form, want, have)
        return bmm_any.gen_kernel(form, dt, sym, d), [
            v if v == fixed else None for _, v in sorted(ps.items(), key=lambda kv: int(kv[0][1:]))]
    return render


def small_t_templates():
    import bmm_any
    out = []
    for dt in bmm_any.DTYPES:
        for t in list(SMALL_T) + [t for t, _ in _coincident_t()]:
            if t in SMALL_T:
                cases = [("tms", d, dict(B=12, M=t, N=t, K=d)) for d in sorted(bmm_any.SCALES)]
                cases.append(("tmpv", None, dict(B=12, M=t, N=72, K=t)))
            else:
                cases = [("tms", d, dict(B=12, M=t, N=t, K=d)) for t2, d in _coincident_t() if t2 == t]
            for form, d, sz in cases:
                want = sorted(set(sz.values()))

                def pick(groups, want=want):
                    hit = [g for g in groups if g.get("class") == "contraction" and
                           sorted(g["pattern_sizes"].values()) == want]
                    return hit[0] if len(hit) == 1 else None
                tag = "%s%s-t%d-%s" % (form, "" if d is None else "-d%d" % d, t, dt)
                out.append(dict(
                    name="importer-any-%s-gen" % tag,
                    example=bmm_any.model_text(form, dt, sz["B"], sz["M"], sz["N"], sz["K"], d),
                    pick=pick, render=_render_small_t(form, dt, sz, d, None if t in SMALL_T else t), archs=ARCHS,
                    source="kernels/table/importer_any.py %s %s T = %d (bmm_any.py's general SIMT "
                           "kernel; from bmm_any.model_text at B %d, M %d, N %d, K %d)" % (
                               form, dt, t, sz["B"], sz["M"], sz["N"], sz["K"])))
    return out


def templates():
    out = []
    gpt = _read(GPT)
    # ln_1 and ln_2: the same ops and types, two pattern keys (the nth match)
    ln = dict(kind="layernorm", eps="1.0e-05")
    ln_sig = "(tensor<1x128x256xf32>, tensor<256xf32>, tensor<256xf32>) -> (tensor<1x128x256xf32>)"
    for i, which in enumerate(("ln_1", "ln_2")):
        out.append(dict(
            name="importer-any-%s-f32" % which.replace("_", ""),
            example=gpt, pick=_pick("reduction", ln_sig, i),
            render=_render_rows(which, ln, ["x", "g", "b"], ["y"], None, dict(R=128, N=256)),
            archs=ARCHS,
            source="kernels/table/importer_any.py %s f32 (rows_any.py layernorm kernel; from %s "
                   "at 1 x 128 x 256)" % (which, GPT)))
    # ln_1 and ln_2 at batch B > 1 ([B, T, N]; one key: the empties are
    # shared at the function's entry, so both groups clone them alike)
    out.append(dict(
        name="importer-any-lnbt-f32",
        example=_read(P44),
        pick=_pick("reduction", "(tensor<32x512x768xf32>, tensor<768xf32>, tensor<768xf32>) -> "
                   "(tensor<32x512x768xf32>)"),
        render=_render_rows("ln_bt", ln, ["x", "g", "b"], ["y"], "bt", dict(B=32, T=512, N=768)),
        archs=ARCHS,
        source="kernels/table/importer_any.py ln_bt f32 (rows_any.py layernorm kernel; from %s "
               "at 32 x 512 x 768)" % P44))
    sm_sig = "(tensor<1x4x128x128xf32>) -> (tensor<1x4x128x128xf32>)"
    out.append(dict(
        name="importer-any-softmax4-f32",
        example=gpt, pick=_pick("reduction", sm_sig),
        render=_render_rows("softmax4", dict(kind="softmax"), ["x"], ["y"], "ht", dict(H=4, T=128)),
        archs=ARCHS,
        source="kernels/table/importer_any.py softmax4 f32 (rows_any.py softmax kernel; from %s "
               "at 1 x 4 x 128 x 128)" % GPT))
    out += small_t_templates()
    tma_refused = gemm_any.tma_symbolic()
    for name in GEMMS:
        src = GEMMS[name][0]
        if not tma_refused:
            # exact f32 on sm_90a, tried before the SIMT entries of the same key ("-0x3tma" sorts
            # before "-simt"); the sizes its requirements refuse (M < 128 first) fall to them
            out.append(dict(
                name="importer-any-%s-f32-0x3tma" % name.replace("_", ""),
                example=_read(src), pick=_gemm_pick(name), render=_render_gemm_f32x3(name),
                archs=["sm_90a"],
                source="kernels/table/importer_any.py %s f32 0x3tma (gen_gemm.py f32x3_wgmma_tma, "
                       "exact f32 by 3xTF32, masked M, N and K by TMA, M >= %d, W read as stored %s; "
                       "from %s at M = %d)" % (
                           name, gemm_any.TMA_BM, "N x K" if GEMMS[name][9] else "K x N", src,
                           GEMMS[name][2]["M"])))
        for nk in (False, True):
            out.append(dict(
                name="importer-any-%s-f32-%s" % (name.replace("_", ""), "simt_nk" if nk else "simt"),
                example=_read(src), pick=_gemm_pick(name), render=_render_gemm(name, nk),
                archs=ARCHS,
                source="kernels/table/importer_any.py %s f32 %s (gen_gemm.py %s f32_simt, masked M%s, "
                       "%s; from %s at M = %d)" % (
                           name, "simt_nk" if nk else "simt",
                           "sg_5beaf48efb3a6ac0 128x128x16" if name.endswith("_bt") else GEMMS[name][8],
                           ", N and K" if nk else "",
                           "with %d large-M and %d small-M tilings" % (
                               len(BT_ALTS), len(gemm_any.SMALL_M["f32_simt"]))
                           if name.endswith("_bt") else
                           "with %d small-M tiling(s)" % len(gemm_any.SMALL_M["f32_simt"]),
                           src, GEMMS[name][2]["M"])))
    return out
