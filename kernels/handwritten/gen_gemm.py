#!/usr/bin/env python3
"""Generator of the hand-written GEMM kernels (with fused epilogues) for the
contraction subgraphs of the example models.

    python3 kernels/handwritten/gen_gemm.py [--out-dir DIR] [--only SG|FILE ...]
    python3 kernels/handwritten/gen_gemm.py --check    # checked-in files up to date?

writes one `<sg_name>.mlir` per subgraph (sm_90 and sm_80), one
`<sg_name>.sm90a.mlir` per bf16 subgraph (wgmma, sm_90a only) -- each a single
`gpu.module` that follows docs/kernel-contract.md -- and `manifest-gemm.json`
beside this script.  Python 3 standard library only; deterministic output.

Kernel families (each kernel calls small func.func helpers that LLVM inlines:
@epilogue, the subgraph's elementwise tail on a row piece, and @mma_bf16):

* `bf16_mma` (sm_80, sm_90): C[M,N] = A[M,K] @ B[K,N] (both row-major) with
  mma.sync m16n8k16 (bf16 x bf16 -> f32; nvvm.mma.sync, since nvgpu.mma.sync
  has no bf16 lowering), operands staged in dynamic shared memory by
  nvgpu.device_async_copy (cp.async.cg, 16 bytes) in an S-stage ring,
  fragments read with nvgpu.ldmatrix (A plain, B .trans) from XOR-swizzled
  tiles (no bank conflicts, no padding), epilogue on the accumulator
  registers, bf16 pairs stored straight from the fragments.  Optionally two
  B operands sharing the A tile (the SwiGLU dual GEMM).
* `bf16_wgmma` (sm_90a): the same math with wgmma.mma_async m64nNk16 from
  128-byte-swizzled shared-memory tiles (descriptors built in the kernel),
  operands still loaded by cp.async (no TMA: the contract has no way to pass
  a tensor map).
* `f32_simt` (sm_80, sm_90): f32 register-blocked FMA GEMM (no tf32: f32
  accuracy up to K = 8192).  8x8 outputs per thread as four 4x4
  vector.outerproduct accumulators, A staged transposed (k-major, padded) and
  B k-major in double-buffered shared memory with a register prefetch of the
  next k-tile, float4 loads and stores; optional split-K inside the CTA.

Fragment layouts used (PTX ISA, mma.m16n8k16 with .bf16, g = lane/4,
t = lane%4):
  A (16x16, row): a0=(g, 2t..2t+1) a1=(g+8, 2t..) a2=(g, 2t+8..) a3=(g+8, 2t+8..)
  B (16x8, col):  b0=(k=2t..2t+1, n=g)  b1=(k=2t+8..2t+9, n=g)
  C (16x8, f32):  c0,c1=(g, 2t..2t+1)   c2,c3=(g+8, 2t..2t+1)
ldmatrix.x4 (no trans) over the 8x8 matrices [rows 0-7|8-15] x [k 0-7|8-15]
(lanes 0-7, 8-15, 16-23, 24-31 address the rows of matrix 0..3: lane l gives
row l%16, k-chunk l/16) returns exactly a0..a3.  ldmatrix.x4.trans over a
[k][n] tile (lane l gives k-row (l%8) + 8*((l/8)%2), n-chunk l/16) returns
b0,b1 of the n-tile 2j and b0,b1 of the n-tile 2j+1.  The wgmma D fragment
(m64nN, f32) is, per warp w of the warpgroup, the C layout above for rows
16w.. of each n8 block (registers 4*ni .. 4*ni+3).
All kernels were checked element by element against a torch reference on an
H200 (see the engineer's report); shapes must divide the tiles (asserted).
"""

import argparse
import json
import os
import re
import sys

WG = "#gpu.address_space<workgroup>"


# --------------------------------------------------------------------------
# A small SSA text emitter.
# --------------------------------------------------------------------------
class Emitter:
    def __init__(self):
        self.lines = []
        self.consts = {}
        self.const_lines = []
        self.n = 0
        self.indent = 4
        self.tune = []  # (knob, values, requirement) declared in the module

    def sym_idx(self, name, expr):
        """An index constant whose value is a tune placeholder {{expr}}: the
        pass instantiates it per declared variant (llm_client/tune.h)."""
        key = ("sym", name)
        if key not in self.consts:
            self.consts[key] = "%%c_%s" % name
            self.const_lines.append("%%c_%s = arith.constant {{%s}} : index" % (name, expr))
        return self.consts[key]

    def symc(self, expr):
        """An index constant whose value is the placeholder {{expr}} over
        the template's size symbols (symbolic mode)."""
        key = ("symx", expr)
        if key not in self.consts:
            name = "%%c_x%d" % sum(1 for k in self.consts if k[0] == "symx")
            self.consts[key] = name
            self.const_lines.append("%s = arith.constant {{%s}} : index" % (name, expr))
        return self.consts[key]

    def minu(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self.op("arith.minui %s, %s : index" % (self.v(a), self.v(b)), "i")

    def fresh(self, hint="v"):
        self.n += 1
        return "%%%s_%d" % (hint, self.n)

    def emit(self, text):
        self.lines.append(" " * self.indent + text)

    def comment(self, text):
        self.emit("// " + text)

    def op(self, text, hint="v"):
        name = self.fresh(hint)
        self.emit("%s = %s" % (name, text))
        return name

    def idx(self, v):
        """index constant"""
        key = ("index", v)
        if key not in self.consts:
            name = "%%c%d" % v if v >= 0 else "%%cm%d" % (-v)
            self.consts[key] = name
            self.const_lines.append("%s = arith.constant %d : index" % (name, v))
        return self.consts[key]

    def f32(self, text, hint):
        key = ("f32", text)
        if key not in self.consts:
            name = "%%cst_%s" % hint
            self.consts[key] = name
            self.const_lines.append("%s = arith.constant %s : f32" % (name, text))
        return self.consts[key]

    def const(self, text, ty, hint):
        key = (ty, text)
        if key not in self.consts:
            name = "%%k_%s" % hint
            self.consts[key] = name
            self.const_lines.append("%s = arith.constant %s : %s" % (name, text, ty))
        return self.consts[key]

    def const_op(self, text, hint):
        """an op without operands hoisted to the entry (e.g. llvm.mlir.zero)"""
        key = ("op", text)
        if key not in self.consts:
            name = "%%k_%s" % hint
            self.consts[key] = name
            self.const_lines.append("%s = %s" % (name, text))
        return self.consts[key]

    # index arithmetic with constant folding for python ints
    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self.op("arith.addi %s, %s : index" % (self.v(a), self.v(b)), "i")

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(b, int) and b == 1:
            return a
        return self.op("arith.muli %s, %s : index" % (self.v(a), self.v(b)), "i")

    def div(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if isinstance(b, int) and b == 1:
            return a
        return self.op("arith.divui %s, %s : index" % (self.v(a), self.v(b)), "i")

    def rem(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        return self.op("arith.remui %s, %s : index" % (self.v(a), self.v(b)), "i")

    def shr(self, a, b):
        assert isinstance(b, int)
        if isinstance(a, int):
            return a >> b
        return self.op("arith.shrui %s, %s : index" % (a, self.idx(b)), "i")

    def band(self, a, b):
        assert isinstance(b, int)
        if isinstance(a, int):
            return a & b
        return self.op("arith.andi %s, %s : index" % (a, self.idx(b)), "i")

    def xor(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a ^ b
        if isinstance(b, int) and b == 0:
            return a
        return self.op("arith.xori %s, %s : index" % (self.v(a), self.v(b)), "i")

    def v(self, a):
        return self.idx(a) if isinstance(a, int) else a

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        return self.op("arith.subi %s, %s : index" % (self.v(a), self.v(b)), "i")

    def require(self, expr):
        """A `// llm-fuse.tune-require` line over the template's sizes
        (symbolic mode), emitted once."""
        if not hasattr(self, "reqs"):
            self.reqs = []
        if expr not in self.reqs:
            self.reqs.append(expr)

    def body(self, indent):
        pad = " " * indent
        return [pad + c for c in self.const_lines] + self.lines


def memref_ty(shape, dt, space=None):
    s = "x".join(str(d) for d in shape)
    if space:
        return "memref<%sx%s, %s>" % (s, dt, space)
    return "memref<%sx%s>" % (s, dt)


# --------------------------------------------------------------------------
# Symbolic sizes (the pattern table's templates, kernels/table/gemm_any.py).
# A config's M, N, K are ints (a kernel for one shape, as checked in) or
# size symbols "S0", "S1", ... (a template: the signature's dimensions are
# {{S0}} placeholders; every number derived from a size is a placeholder
# expression, and what the structure needs of a size is a requirement).
# With M symbolic (or cfg["mask_m"]) the kernel is masked in M: any M >= 1.
# --------------------------------------------------------------------------
def is_sym(x):
    return isinstance(x, str)


def sx(x):
    """the expression text of a size (or of a number)"""
    return x if is_sym(x) else str(x)


def par(e):
    e = sx(e)
    return e if e.replace("_", "").isalnum() else "(%s)" % e


def sdiv(x, d):
    """x / d, d dividing x (asserted for ints, a requirement otherwise)"""
    if is_sym(x):
        return "%s / %d" % (par(x), d)
    assert x % d == 0, (x, d)
    return x // d


def scdiv(x, d):
    """ceil(x / d)"""
    if is_sym(x):
        return "(%s + %d) / %d" % (sx(x), d - 1, d)
    return -(-x // d)


def smul(a, b):
    if not is_sym(a) and not is_sym(b):
        return a * b
    return "%s * %s" % (par(a), par(b))


def sval(em, x):
    """an index value for a size expression: a Python int or an index
    constant {{expr}}"""
    return em.symc(x) if is_sym(x) else x


def sgrid(x):
    """a launch dimension: an int, or a placeholder"""
    return "{{%s}}" % x if is_sym(x) else x


def masked_m(cfg):
    return is_sym(cfg["M"]) or bool(cfg.get("mask_m"))


def masked_nk(cfg):
    """cfg["mask_nk"] (the alignment a, an int): N and K masked too, any
    N and K that are multiples of a (16-byte rows for the vector / cp.async
    loads): column tiles past N - 1 and the k-tile past K - 1 are read at
    clamped (in-bounds) addresses, the k part zero-filled, and the columns
    past N - 1 never stored."""
    return cfg.get("mask_nk") or 0


def tile_requirements(N, K, BN, kdiv, kmin_tiles):
    """The requirements sizes_and_requirements() states for symbolic N and K
    (without masking)."""
    return ["%s %% %d == 0" % (N, BN), "%s %% %d == 0 && %s >= %d" % (K, kdiv, K, kdiv * max(1, kmin_tiles))]


def sizes_and_requirements(em, M, N, K, BM, BN, kdiv, kmin_tiles, nk=0):
    """Checks (ints) or requires (symbols) that BN divides N, kdiv divides K
    and K has at least kmin_tiles k-tiles; returns (gm, gn, KT): the row
    tiles (ceil(M / BM): masked), the column tiles and the k-tiles, each an
    int or an expression. nk (an alignment, masked N and K): only that N and
    K are multiples of nk; the column tiles and k-tiles are rounded up."""
    if nk:
        for x in (N, K):
            if is_sym(x):
                em.require("%s %% %d == 0 && %s >= %d" % (x, nk, x, nk))
            else:
                assert x % nk == 0
        return scdiv(M, BM), scdiv(N, BN), scdiv(K, kdiv)
    if is_sym(N):
        em.require("%s %% %d == 0" % (N, BN))
    else:
        assert N % BN == 0, "N must divide the tile"
    if is_sym(K):
        em.require("%s %% %d == 0 && %s >= %d" % (K, kdiv, K, kdiv * max(1, kmin_tiles)))
    else:
        assert K % kdiv == 0 and K // kdiv >= kmin_tiles
    return scdiv(M, BM), sdiv(N, BN), sdiv(K, kdiv)


def parse_signature(sig):
    """'(tensor<AxBxT>, ...) -> tensor<...>' -> ([(shape, dt)...], [(shape, dt)...])"""
    ins, outs = sig.split("->")

    def types(s):
        out = []
        for part in s.replace("(", "").replace(")", "").split("tensor<")[1:]:
            body = part.split(">")[0]
            dims = body.split("x")
            # a dimension is an int, or (symbolic mode, for the pattern
            # table) a size placeholder such as {{S0}}, kept as text
            out.append(([int(d) if d.isdigit() else d for d in dims[:-1]], dims[-1]))
        return out

    return types(ins), types(outs)


# --------------------------------------------------------------------------
# Operands, raster
# --------------------------------------------------------------------------
class Operand:
    """A 2-D view of a kernel argument: memref<MxN> as is, memref<1xMxN>
    (TOSA's batch of one) indexed with a leading 0 (memref.collapse_shape has
    no lowering in the builder's pipeline), memref<BxTxN> (an importer's
    Linear at batch B > 1, its expand to [B, T, N] inside the subgraph: the
    rows of the [B*T, N] product) indexed [r / T, r % T, n]."""

    def __init__(self, em, name, shape, dt):
        self.name, self.dt = name, dt
        self.ty = memref_ty(shape, dt)
        self.em, self.rows = em, None
        if len(shape) == 3 and shape[0] != 1:
            # (B, T) as size expressions: ints, or symbols without braces
            self.rows = tuple(d.strip("{}") if isinstance(d, str) else d for d in shape[:2])
            self.prefix = []
            self.shape = [None, shape[2]]
        elif len(shape) == 3:
            self.prefix = [em.idx(0)]
            self.shape = shape[1:]
        else:
            assert len(shape) in (1, 2), shape
            self.prefix = []
            self.shape = shape

    def at(self, *idx):
        if self.rows is not None:
            row, col = idx
            t = self.em.v(sval(self.em, self.rows[1]))
            idx = (self.em.v(self.em.div(row, t)), self.em.v(self.em.rem(row, t)), col)
        return "%s[%s]" % (self.name, ", ".join(self.prefix + [str(i) for i in idx]))

    def load(self, em, idx, n, hint):
        return em.op("vector.load %s : %s, vector<%dx%s>" % (self.at(*idx), self.ty, n, self.dt), hint)


def operands(em, cfg, ins, outs, names):
    A = Operand(em, names[cfg["a"]], *ins[cfg["a"]])
    Bs = [Operand(em, names[i], *ins[i]) for i in cfg["b"]]
    C = Operand(em, names[len(ins)], *outs[0])
    bias = Operand(em, names[cfg["bias"]], *ins[cfg["bias"]]) if cfg.get("bias") is not None else None
    res = Operand(em, names[cfg["res"]], *ins[cfg["res"]]) if cfg.get("res") is not None else None
    # (symbolic mode: the signature's dimensions are the placeholders {{S0}}...)
    M, N, K = ["{{%s}}" % x if is_sym(x) else x for x in (cfg["M"], cfg["N"], cfg["K"])]
    if bias is not None and len(bias.shape) == 2 and bias.shape[0] == 1:
        # a bias of shape [1, N] (TOSA's broadcasting add): indexed [0, n]
        bias.prefix, bias.shape = [em.idx(0)], bias.shape[1:]
    # cfg["b_nk"]: B stored N x K (nn.Linear's [out, in] weight, transposed
    # by a linalg.transpose inside the subgraph): f32_simt only
    b_shape = [N, K] if cfg.get("b_nk") else [K, N]
    for X in (C, res):
        if X is not None and X.rows is not None:
            # [B, T, N] rows: B * T must be M
            X.shape[0] = M
            bt = [cfg["M"]] + list(X.rows)
            if any(is_sym(x) for x in bt):
                em.require("%s == %s * %s" % tuple(par(x) for x in bt))
            else:
                assert bt[0] == bt[1] * bt[2], bt
    assert A.shape == [M, K] and C.shape == [M, N] and all(b.shape == b_shape for b in Bs)
    assert (bias is None or bias.shape == [N]) and (res is None or res.shape == [M, N])
    return A, Bs, C, bias, res


def group_m_variants(group_m, gm):
    """The GROUP_M values a kernel declares as tune variants: the
    configured one first (what a build without a GPU uses), then half and
    double, where they divide the row tiles."""
    out = [group_m]
    for v in (group_m // 2, group_m * 2):
        if v >= 1 and gm % v == 0 and v not in out:
            out.append(v)
    return out


def grouped_raster(em, pid, gm, gn, group_m):
    """Triton-style grouped tile order: GROUP_M row tiles sweep the N tiles
    together so that their A panels and B panels stay in L2.

    GROUP_M is the kernels' tune knob (docs/kernel-contract.md section 9):
    with more than one admissible value it becomes the placeholder
    {{GROUP_M}}, declared on the module, and the pass times each variant
    where a GPU is there."""
    assert gm % group_m == 0
    values = group_m_variants(group_m, gm)
    if len(values) > 1:
        if not any(t[0] == "GROUP_M" for t in em.tune):
            em.tune.append(("GROUP_M", values, "%d %% GROUP_M == 0" % gm))
        g = em.sym_idx("GROUP_M", "GROUP_M")
        per_group = em.sym_idx("GROUP_M_GN", "GROUP_M * %d" % gn)
        gid = em.div(pid, per_group)
        first_m = em.mul(gid, g)
        in_group = em.rem(pid, per_group)
        pid_m = em.add(first_m, em.rem(in_group, g))
        pid_n = em.div(in_group, g)
        return pid_m, pid_n
    per_group = group_m * gn
    gid = em.div(pid, per_group)
    first_m = em.mul(gid, group_m)
    in_group = em.rem(pid, per_group)
    pid_m = em.add(first_m, em.rem(in_group, group_m))
    pid_n = em.div(in_group, group_m)
    return pid_m, pid_n


def grouped_raster_any(em, pid, gm, gn, group_m):
    """The grouped tile order of grouped_raster() for any number of row
    tiles gm (ints or expressions; M masked): Triton's form, in which the
    last group may hold fewer than GROUP_M row tiles. Group g covers row
    tiles [g*GROUP_M, g*GROUP_M + size) with size = min(gm - g*GROUP_M,
    GROUP_M), and CTAs [g*GROUP_M*gn, (g*GROUP_M + size)*gn): the grid is
    gm*gn CTAs, so only the last group is short, and within a group pid_m =
    first + r % size, pid_n = r / size (r = pid - g*GROUP_M*gn < size*gn) is
    a bijection onto size x gn tiles. Full groups run exactly as in
    grouped_raster(). GROUP_M is a knob: the configured value (what a build
    without a GPU uses, always kept), half of it, double, and 1 (row-major);
    a value other than the configured one is kept only when it is below gm
    (at or above gm every value gives the same order)."""
    values = [group_m] + [v for v in (group_m // 2, group_m * 2, 1) if v >= 1 and v != group_m]
    values = list(dict.fromkeys(values))
    if not any(t[0] == "GROUP_M" for t in em.tune):
        em.tune.append(("GROUP_M", values, "GROUP_M == %d || GROUP_M < %s" % (group_m, par(gm))))
    g = em.sym_idx("GROUP_M", "GROUP_M")
    per_group = em.sym_idx("GROUP_M_GN", "GROUP_M * %s" % par(gn))
    gid = em.div(pid, per_group)
    first_m = em.mul(gid, g)
    size_m = em.minu(em.sub(sval(em, gm), first_m), g)
    in_group = em.rem(pid, per_group)
    pid_m = em.add(first_m, em.rem(in_group, size_m))
    pid_n = em.div(in_group, size_m)
    return pid_m, pid_n


# --------------------------------------------------------------------------
# Epilogues.  Each reproduces the outlined linalg/TOSA body op for op (same
# operation order, same f32 constants), on f32 vectors (lanes = adjacent
# columns), inside the helper @epilogue that every kernel calls once per
# 2- or 4-element row piece (LLVM inlines it).
# --------------------------------------------------------------------------
def _c(em, ty, text, hint):
    return em.const("dense<%s>" % text, ty, hint)


def ep_bias(em, ty, accs, bias, res):
    return em.op("arith.addf %s, %s : %s" % (accs[0], bias, ty), "x")


def ep_bias_residual(em, ty, accs, bias, res):
    x = em.op("arith.addf %s, %s : %s" % (accs[0], bias, ty), "x")
    return em.op("arith.addf %s, %s : %s" % (x, res, ty), "y")


def ep_bias_gelu_tanh(em, ty, accs, bias, res):
    c05 = _c(em, ty, "5.000000e-01", "half")
    c1 = _c(em, ty, "1.000000e+00", "one")
    c_s2pi = _c(em, ty, "0.797884583", "sqrt_2_over_pi")
    c_k = _c(em, ty, "4.471500e-02", "gelu_k")
    x = em.op("arith.addf %s, %s : %s" % (accs[0], bias, ty), "x")
    x2 = em.op("arith.mulf %s, %s : %s" % (x, x, ty), "x2")
    x3 = em.op("arith.mulf %s, %s : %s" % (x2, x, ty), "x3")
    t = em.op("arith.mulf %s, %s : %s" % (x3, c_k, ty), "t")
    s = em.op("arith.addf %s, %s : %s" % (x, t, ty), "s")
    u = em.op("arith.mulf %s, %s : %s" % (s, c_s2pi, ty), "u")
    th = em.op("math.tanh %s : %s" % (u, ty), "th")
    a = em.op("arith.addf %s, %s : %s" % (th, c1, ty), "a")
    h = em.op("arith.mulf %s, %s : %s" % (x, c05, ty), "h")
    return em.op("arith.mulf %s, %s : %s" % (h, a, ty), "y")


def ep_sub_mul_relu(em, ty, accs, bias, res):
    c05 = _c(em, ty, "5.000000e-01", "half")
    c2 = _c(em, ty, "2.000000e+00", "two")
    c0 = _c(em, ty, "0.000000e+00", "zero")
    a = em.op("arith.subf %s, %s : %s" % (accs[0], c05, ty), "a")
    b = em.op("arith.mulf %s, %s : %s" % (a, c2, ty), "b")
    return em.op("arith.maximumf %s, %s : %s" % (b, c0, ty), "y")


def ep_silu_mul(em, ty, accs, bias, res):
    c1 = _c(em, ty, "1.000000e+00", "one")
    g, u = accs
    ng = em.op("arith.negf %s : %s" % (g, ty), "ng")
    ex = em.op("math.exp %s : %s" % (ng, ty), "ex")
    d = em.op("arith.addf %s, %s : %s" % (ex, c1, ty), "d")
    s = em.op("arith.divf %s, %s : %s" % (g, d, ty), "s")
    return em.op("arith.mulf %s, %s : %s" % (s, u, ty), "y")


def ep_bias_gelu_tanh_approx(em, ty, accs, bias, res):
    """The same GELU as x / (1 + exp(-2u)) (0.5 x (1 + tanh u) rewritten),
    exp(-2u) as ex2.approx of -2u log2(e) and the divide as div.approx
    (fastmath afn): a few ulp of f32, far under a bf16 result's rounding;
    gen_rows.py's gelu=approx. Large |u|: x / inf = -0, x / 1 = x."""
    c1 = _c(em, ty, "1.000000e+00", "one")
    c_k = _c(em, ty, "4.471500e-02", "gelu_k")
    c_m2l = _c(em, ty, "-2.30220826", "m2k0l2e")       # -2 sqrt(2/pi) log2(e)
    x = em.op("arith.addf %s, %s : %s" % (accs[0], bias, ty), "x")
    x2 = em.op("arith.mulf %s, %s : %s" % (x, x, ty), "x2")
    inner = em.op("math.fma %s, %s, %s : %s" % (x2, c_k, c1, ty), "in")
    t = em.op("arith.mulf %s, %s : %s" % (x, inner, ty), "t")
    m = em.op("arith.mulf %s, %s : %s" % (t, c_m2l, ty), "m")
    ex = em.op("math.exp2 %s fastmath<afn> : %s" % (m, ty), "ex")
    d = em.op("arith.addf %s, %s : %s" % (ex, c1, ty), "d")
    return em.op("arith.divf %s, %s fastmath<afn> : %s" % (x, d, ty), "y")


def ep_silu_mul_approx(em, ty, accs, bias, res):
    """silu(g) * u with exp(-g) as ex2.approx of -g log2(e) and the divide
    as div.approx (fastmath afn), for bf16 results."""
    c1 = _c(em, ty, "1.000000e+00", "one")
    c_ml = _c(em, ty, "-1.44269504", "mlog2e")
    g, u = accs
    m = em.op("arith.mulf %s, %s : %s" % (g, c_ml, ty), "m")
    ex = em.op("math.exp2 %s fastmath<afn> : %s" % (m, ty), "ex")
    d = em.op("arith.addf %s, %s : %s" % (ex, c1, ty), "d")
    s = em.op("arith.divf %s, %s fastmath<afn> : %s" % (g, d, ty), "s")
    return em.op("arith.mulf %s, %s : %s" % (s, u, ty), "y")


EPILOGUES = {
    "bias": (ep_bias, "y = acc + bias[n]"),
    "bias_residual": (ep_bias_residual, "y = (acc + bias[n]) + res[m,n]"),
    "bias_gelu_tanh": (ep_bias_gelu_tanh,
                       "x = acc + bias[n]; y = (x*0.5) * (tanh((x + ((x*x)*x)*0.044715) * 0.797884583) + 1)"),
    "sub_mul_relu": (ep_sub_mul_relu, "y = maximumf((acc - 0.5) * 2.0, 0.0)"),
    "silu_mul": (ep_silu_mul, "g = A@B1, u = A@B2; y = (g / (exp(-g) + 1)) * u"),
    # bf16 results only: approximate exp2 and divide (fastmath afn)
    "bias_gelu_tanh_approx": (ep_bias_gelu_tanh_approx,
                              "x = acc + bias[n]; y = x / (1 + exp2(-2.30220826 * x * (1 + 0.044715 x^2))), "
                              "ex2.approx and div.approx (= the tanh GELU)"),
    "silu_mul_approx": (ep_silu_mul_approx,
                        "g = A@B1, u = A@B2; y = (g / (exp2(-1.44269504 g) + 1)) * u, ex2.approx and div.approx"),
}


class EpilogueHelper:
    """func.func private @epilogue(acc vectors [, bias piece] [, residual
    piece]) -> output piece, all vector<n x .>; bf16 inputs are extended
    (extf) and the result truncated (truncf) inside, as in the subgraph."""

    def __init__(self, cfg, n, nb, bias_dt, res_dt, out_dt):
        self.n, self.nb, self.bias_dt, self.res_dt, self.out_dt = n, nb, bias_dt, res_dt, out_dt
        ty = "vector<%dxf32>" % n
        em = Emitter()
        em.indent = 4
        args, self.arg_tys = [], []
        accs = []
        for j in range(nb):
            accs.append("%%acc%d" % j if nb > 1 else "%acc")
            args.append("%s: %s" % (accs[-1], ty))
            self.arg_tys.append(ty)

        def ext(name, dt):
            t = "vector<%dx%s>" % (n, dt)
            args.append("%s: %s" % (name, t))
            self.arg_tys.append(t)
            if dt == "f32":
                return name
            return em.op("arith.extf %s : %s to %s" % (name, t, ty), name[1:] + "_f32")

        bias = ext("%bias", bias_dt) if bias_dt else None
        res = ext("%res", res_dt) if res_dt else None
        y = EPILOGUES[cfg["epilogue"]][0](em, ty, accs, bias, res)
        self.out_ty = "vector<%dx%s>" % (n, out_dt)
        if out_dt != "f32":
            y = em.op("arith.truncf %s : %s to %s" % (y, ty, self.out_ty), "out")
        em.emit("return %s : %s" % (y, self.out_ty))
        self.text = ["  // the subgraph's elementwise tail on %d adjacent output columns: %s" % (
            n, EPILOGUES[cfg["epilogue"]][1]),
            "  func.func private @epilogue(%s) -> %s {" % (", ".join(args), self.out_ty)]
        self.text += em.body(4) + ["  }"]

    def call(self, em, accs, bias, res):
        ops = list(accs) + ([bias] if self.bias_dt else []) + ([res] if self.res_dt else [])
        return em.op("func.call @epilogue(%s) : (%s) -> %s" % (
            ", ".join(ops), ", ".join(self.arg_tys), self.out_ty), "y")


MMA_HELPER = """\
  // One mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32.  a = ldmatrix.x4 result
  // (rows = the 32-bit registers a0..a3), b = b0,b1, c = d = c0..c3 of the
  // m16n8 f32 tile ((g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1); g = lane/4,
  // t = lane%4).  nvgpu.mma.sync has no bf16 lowering, hence nvvm.mma.sync.
  func.func private @mma_bf16(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<4xf32>) -> vector<4xf32> {
{regs}
    %c0 = vector.extract %c[0] : f32 from vector<4xf32>
    %c1 = vector.extract %c[1] : f32 from vector<4xf32>
    %c2 = vector.extract %c[2] : f32 from vector<4xf32>
    %c3 = vector.extract %c[3] : f32 from vector<4xf32>
    %d = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3]
        {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
         multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>,
         shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %d0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
    %d1 = llvm.extractvalue %d[1] : !llvm.struct<(f32, f32, f32, f32)>
    %d2 = llvm.extractvalue %d[2] : !llvm.struct<(f32, f32, f32, f32)>
    %d3 = llvm.extractvalue %d[3] : !llvm.struct<(f32, f32, f32, f32)>
    %r = vector.from_elements %d0, %d1, %d2, %d3 : vector<4xf32>
    return %r : vector<4xf32>
  }"""


def mma_helper(dt="bf16"):
    if dt == "f16":
        # The same instruction on f16 operands, passed as vector<2xf16>
        # registers (no bitcast to i32).
        regs = ["    %%%s%d = vector.extract %s[%d] : vector<2xf16> from vector<%dx2xf16>"
                % (nm, r, v, r, rows)
                for nm, v, rows in (("a", "%a", 4), ("b", "%b", 2)) for r in range(rows)]
        head, rest = MMA_HELPER.split("  func.func", 1)
        text = ("  // One mma.sync.m16n8k16.row.col.f32.f16.f16.f32: the layouts of\n"
                "  // @mma_bf16; the f16 operands are passed as vector<2xf16> registers.\n"
                "  func.func" + rest)
        return (text.replace("{regs}", "\n".join(regs))
                .replace("@mma_bf16(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>",
                         "@mma_f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>")
                .replace("#nvvm.mma_type<bf16>", "#nvvm.mma_type<f16>")
                .replace("(i32, i32, f32)", "(vector<2xf16>, vector<2xf16>, f32)"))
    regs = []
    for nm, v, rows in (("a", "%a", 4), ("b", "%b", 2)):
        for r in range(rows):
            regs.append("    %%%s%dh = vector.extract %s[%d] : vector<2xbf16> from vector<%dx2xbf16>" % (nm, r, v, r, rows))
            regs.append("    %%%s%dv = vector.bitcast %%%s%dh : vector<2xbf16> to vector<1xi32>" % (nm, r, nm, r))
            regs.append("    %%%s%d = vector.extract %%%s%dv[0] : i32 from vector<1xi32>" % (nm, r, nm, r))
    return MMA_HELPER.replace("{regs}", "\n".join(regs))


def fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair,
                      m_bound=None, rows_outer=False, row_hi=None, n_bound=None, m_lo=None):
    """Epilogue on m16n8 accumulator fragments (the mma.sync C layout, also the
    wgmma D layout per n8 block): for each 16-row block (row_offs) and n8 block
    (col_offs) this thread holds rows row_base+off+8h (h = 0, 1), columns
    col_base+off+{0,1}; pair(j, mi, ni, h) is that vector<2xf32> of product j.
    Bias pairs are loaded once per n8 block; residual pairs, outputs: 4 bytes.

    m_bound (masked M): rows at or past it do not exist. Their accumulators
    hold products of clamped A rows (finite, meaningless); the residual load,
    the epilogue and the store of such a row are skipped (scf.if on
    row < M, computed once per row; the fragment values are extracted
    before the branch). Columns are masked only with n_bound (masked N, N
    even): a column pair at or past it is not stored, and the bias pair is
    read at a clamped column (n_bound - 2). m_lo (with m_bound): rows below
    it are not stored either (gemm_wgmma_tma.py a_shift: another tile's)."""
    assert n_bound is None or (m_bound is not None and not rows_outer)
    assert m_lo is None or (m_bound is not None and not rows_outer)
    if m_bound is not None and rows_outer == "split":
        # A CTA-uniform branch: full row tiles (row_hi <= M, every tile but
        # the last row of tiles) run the unmasked epilogue, exactly the
        # shipped kernel's code; the last, partial one runs the masked
        # epilogue below (one branch per row). Predicating every tile costs
        # the BN = 256 wgmma kernel registers (spills), this does not.
        full = em.op("arith.cmpi ule, %s, %s : index" % (em.v(row_hi), em.v(m_bound)), "full")
        em.emit("scf.if %s {" % full)
        em.indent += 2
        fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair)
        em.indent -= 2
        em.emit("} else {")
        em.indent += 2
        fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair,
                          m_bound=m_bound, rows_outer=True)
        em.indent -= 2
        em.emit("}")
        return
    if m_bound is not None and rows_outer:
        # one branch per row this thread holds (wgmma: 2), all its columns
        # inside; the bias pair is loaded in each branch (L1 hits)
        for mi, roff in enumerate(row_offs):
            for h in range(2):
                row = em.add(row_base, roff + 8 * h)
                ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(row), em.v(m_bound)), "ok")
                em.emit("scf.if %s {" % ok)
                em.indent += 2
                for ni, coff in enumerate(col_offs):
                    col = em.add(col_base, coff)
                    accs = [pair(j, mi, ni, h) for j in range(nb)]
                    bv = bias.load(em, [col], 2, "bias") if bias else None
                    rv = res.load(em, [row, col], 2, "res") if res else None
                    y = helper.call(em, accs, bv, rv)
                    em.emit("vector.store %s, %s : %s, vector<2x%s>" % (y, C.at(row, col), C.ty, C.dt))
                em.indent -= 2
                em.emit("}")
        return
    if m_bound is not None:
        rows, oks = {}, {}
        for mi, roff in enumerate(row_offs):
            for h in range(2):
                rows[(mi, h)] = em.add(row_base, roff + 8 * h)
                oks[(mi, h)] = em.op("arith.cmpi ult, %s, %s : index" % (
                    em.v(rows[(mi, h)]), em.v(m_bound)), "ok")
                if m_lo is not None:   # and rows below m_lo are another tile's (gemm_wgmma_tma.py a_shift)
                    lo = em.op("arith.cmpi uge, %s, %s : index" % (em.v(rows[(mi, h)]), em.v(m_lo)), "ok")
                    oks[(mi, h)] = em.op("arith.andi %s, %s : i1" % (oks[(mi, h)], lo), "ok")
        for ni, coff in enumerate(col_offs):
            col = em.add(col_base, coff)
            if n_bound is not None:
                okn = em.op("arith.cmpi ult, %s, %s : index" % (em.v(col), em.v(n_bound)), "okn")
                bcol = em.minu(col, em.sub(n_bound, 2))
            else:
                bcol = col
            bv = bias.load(em, [bcol], 2, "bias") if bias else None
            for mi, roff in enumerate(row_offs):
                for h in range(2):
                    row = rows[(mi, h)]
                    accs = [pair(j, mi, ni, h) for j in range(nb)]
                    ok = oks[(mi, h)]
                    if n_bound is not None:
                        ok = em.op("arith.andi %s, %s : i1" % (ok, okn), "ok")
                    em.emit("scf.if %s {" % ok)
                    em.indent += 2
                    rv = res.load(em, [row, col], 2, "res") if res else None
                    y = helper.call(em, accs, bv, rv)
                    em.emit("vector.store %s, %s : %s, vector<2x%s>" % (y, C.at(row, col), C.ty, C.dt))
                    em.indent -= 2
                    em.emit("}")
        return
    for ni, coff in enumerate(col_offs):
        col = em.add(col_base, coff)
        bv = bias.load(em, [col], 2, "bias") if bias else None
        for mi, roff in enumerate(row_offs):
            for h in range(2):
                row = em.add(row_base, roff + 8 * h)
                rv = res.load(em, [row, col], 2, "res") if res else None
                y = helper.call(em, [pair(j, mi, ni, h) for j in range(nb)], bv, rv)
                em.emit("vector.store %s, %s : %s, vector<2x%s>" % (y, C.at(row, col), C.ty, C.dt))


# --------------------------------------------------------------------------
# bf16 mma.sync kernel (sm_80 / sm_90)
# --------------------------------------------------------------------------
def gen_bf16_mma(cfg):
    ins, outs = parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    WM, WN = cfg["WM"], cfg["WN"]
    S = cfg["stages"]
    GROUP_M = cfg["group_m"]
    nb = len(cfg["b"])
    warps_m, warps_n = BM // WM, BN // WN
    T = 32 * warps_m * warps_n
    MI, NI = WM // 16, WN // 8
    assert WN % 16 == 0 and WM % 16 == 0 and BK in (32, 64) and BN % 64 == 0
    em = Emitter()
    masked = masked_m(cfg)
    nk = masked_nk(cfg)
    assert nk in (0, 8)
    if masked or is_sym(N) or is_sym(K):
        gm, gn, KT = sizes_and_requirements(em, M, N, K, BM, BN, BK, S - 1, nk)
        grid = smul(gm, gn)
    else:
        assert M % BM == 0 and N % BN == 0 and K % BK == 0, "shapes must divide the tiles"
        KT = K // BK
        assert KT >= S - 1
        gm, gn = M // BM, N // BN
        grid = gm * gn
    a_bytes = BM * BK * 2
    b_bytes = BK * BN * 2
    smem = S * (a_bytes + nb * b_bytes)
    kchunks = BK // 8           # 16-byte chunks per A row
    nchunks = BN // 8           # 16-byte chunks per B row

    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = operands(em, cfg, ins, outs, names)
    dt = A.dt                   # bf16 or f16 (mma.sync with f32 accumulation either way)
    assert dt in ("bf16", "f16") and all(b.dt == dt for b in Bs)
    sm_ty_a = memref_ty([S, BM, BK], dt, WG)
    sm_ty_b = memref_ty([S, BK, BN], dt, WG)
    acc_ty = "vector<4xf32>"
    helper = EpilogueHelper(cfg, 2, nb, bias.dt if bias else None, res.dt if res else None, C.dt)

    em.comment("CTA tile (pid_m, pid_n): grouped raster over %sx%s tiles, GROUP_M=%d by default (a tune knob)" % (gm, gn, GROUP_M))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    if masked:
        pid_m, pid_n = grouped_raster_any(em, pid, gm, gn, GROUP_M)
    else:
        pid_m, pid_n = grouped_raster(em, pid, gm, gn, GROUP_M)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    wm0 = em.mul(em.div(warp, warps_n), WM)
    wn0 = em.mul(em.rem(warp, warps_n), WN)

    em.comment("shared memory: A[S][%d][%d], then %d x B[S][%d][%d]; 16-byte chunk c of row r stored at chunk c ^ %s (A), c ^ (k %% 8) (B)" % (
        BM, BK, nb, BK, BN, "((r >> 1) & 3)" if kchunks == 4 else "(r & 7)"))
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sm_ty_a), "sA")
    sB = []
    for j in range(nb):
        off = S * a_bytes + j * S * b_bytes
        sB.append(em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (
            smem_v, em.idx(off), WG, sm_ty_b), "sB"))

    def swz_a(row):
        # conflict-free ldmatrix phases (8 consecutive rows, one chunk column)
        if kchunks == 4:
            return em.band(em.shr(row, 1), 3)
        return em.band(row, 7)

    em.comment("cp.async assignments (loop invariant): consecutive threads copy consecutive 16-byte chunks of a row")
    if masked:
        em.comment("masked M: A rows past M-1 are read as row M-1 (clamped, loop invariant); their products land in")
        em.comment("accumulator rows that the epilogue never stores, and rows < M never read them (rows are independent)")
        m_last = em.symc("%s - 1" % M) if is_sym(M) else M - 1
    a_copies = []
    assert (BM * kchunks) % T == 0 and (BK * nchunks) % T == 0
    for i in range(BM * kchunks // T):
        q = em.add(tid, i * T)
        r = em.div(q, kchunks)
        c = em.rem(q, kchunks)
        dcol = em.mul(em.xor(c, swz_a(r)), 8)
        grow = em.add(m0, r)
        if masked:
            grow = em.minu(grow, m_last)
        a_copies.append((r, dcol, grow, em.mul(c, 8)))
    if nk:
        em.comment("masked N and K: B columns past N-1 are read at clamped columns (never stored); the k part past")
        em.comment("K-1 of the last k-tile is zero-filled (cp.async source size 0, clamped in-bounds address)")
        n_last8 = sval(em, "%s - 8" % N if is_sym(N) else N - 8)
        k_last8 = sval(em, "%s - 8" % K if is_sym(K) else K - 8)
        k_last = sval(em, "%s - 1" % K if is_sym(K) else K - 1)
        k_n = em.v(sval(em, K))
    b_copies = []
    for i in range(BK * nchunks // T):
        q = em.add(tid, i * T)
        r = em.div(q, nchunks)
        c = em.rem(q, nchunks)
        dcol = em.mul(em.xor(c, em.band(r, 7)), 8)
        gcol = em.add(n0, em.mul(c, 8))
        if nk:
            gcol = em.minu(gcol, n_last8)
        b_copies.append((r, dcol, gcol))

    def issue_loads(kt_load, stage, valid):
        """k-tile kt_load -> stage; when valid (i1) is false the copies read
        nothing and zero-fill, so that every iteration commits one group."""
        if nk:
            return issue_loads_nk(kt_load, stage, valid)
        if valid is None:
            ktc, tail = kt_load, ""
        else:
            ktc = em.op("arith.select %s, %s, %s : index" % (valid, em.v(kt_load), em.idx(0)), "kc")
            tail = ", %s" % em.op("arith.select %s, %s, %s : index" % (valid, em.idx(8), em.idx(0)), "n")
        k0 = em.mul(ktc, BK)
        toks = []
        for (r, dcol, grow, gcol) in a_copies:
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.add(k0, gcol))), sA, em.v(stage), em.v(r), em.v(dcol), tail, A.ty, sm_ty_a), "cp"))
        for j in range(nb):
            for (r, dcol, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.add(k0, r)), em.v(gcol)), sB[j], em.v(stage), em.v(r), em.v(dcol), tail,
                    Bs[j].ty, sm_ty_b), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    def issue_loads_nk(kt_load, stage, valid):
        """issue_loads() with K masked: each copy's k index (A column chunk,
        B row) is clamped into [0, K) and its source size is 0 (zero-fill)
        where the index is at or past K, or the k-tile is not valid."""
        k0 = em.mul(kt_load, BK)

        def size(kidx):
            ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(kidx), k_n), "kin")
            if valid is not None:
                ok = em.op("arith.andi %s, %s : i1" % (ok, valid), "kin")
            return em.op("arith.select %s, %s, %s : index" % (ok, em.idx(8), em.idx(0)), "n")
        toks = []
        for (r, dcol, grow, gcol) in a_copies:
            kc = em.add(k0, gcol)
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.minu(kc, k_last8))), sA, em.v(stage), em.v(r), em.v(dcol), size(kc),
                A.ty, sm_ty_a), "cp"))
        for j in range(nb):
            for (r, dcol, gcol) in b_copies:
                kr = em.add(k0, r)
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.minu(kr, k_last)), em.v(gcol)), sB[j], em.v(stage), em.v(r), em.v(dcol),
                    size(kr), Bs[j].ty, sm_ty_b), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    em.comment("prologue: k-tiles 0..%d in flight" % (S - 2))
    grp = None
    for s in range(S - 1):
        grp = issue_loads(s, s, None)

    em.comment("ldmatrix lane addresses (loop invariant). A: row lane%16, k-chunk lane/16 (+2 per k16 step);")
    em.comment("B (.trans): k-row (lane%8) + 8*((lane/8)%2) (+16 per k16 step), n-chunk lane/16 (+2 per n16 pair)")
    l15 = em.band(lane, 15)
    a_row = em.add(wm0, l15)
    a_hi = em.shr(lane, 4)
    a_swz = swz_a(l15)                   # wm0 + 16*mi is a multiple of 16: the swizzle only sees lane%16
    a_col = [em.mul(em.xor(em.add(a_hi, 2 * kk), a_swz), 8) for kk in range(BK // 16)]
    b_krow = em.add(em.band(lane, 7), em.mul(em.band(em.shr(lane, 3), 1), 8))
    b_swz = em.band(lane, 7)             # == k-row % 8
    b_col = [em.mul(em.xor(em.add(em.add(em.div(wn0, 8), 2 * nj), a_hi), b_swz), 8) for nj in range(WN // 16)]
    a_rows = [em.add(a_row, 16 * mi) for mi in range(MI)]
    b_krows = [em.add(b_krow, 16 * kk) for kk in range(BK // 16)]

    zero = em.const("dense<0.000000e+00>", acc_ty, "zero4")
    nacc = nb * MI * NI
    em.comment("accumulators: %s per m16n8 tile, index (j*%d + mi)*%d + ni for B_j, 16-row block mi, n8 block ni" % (acc_ty, MI, NI))
    res_names = em.fresh("acc")
    iter_args = ", ".join("%%a%d = %s" % (i, zero) for i in range(nacc))
    em.idx(0)                  # (constant order as before: 0, the k-tile count, 1)
    kt_n = em.v(sval(em, KT))  # the k-tile count (a placeholder when K is free)
    em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%s) -> (%s) {" % (
        res_names, nacc, em.idx(0), kt_n, em.idx(1), iter_args, ", ".join([acc_ty] * nacc)))
    em.indent += 2
    em.comment("k-tile kt has landed (<= %d younger groups pending); every warp is done with k-tile kt-1" % (S - 2))
    em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, S - 2))
    em.emit("gpu.barrier")
    em.comment("refill the stage of k-tile kt-1 with k-tile kt+%d (zero-fill past the end)" % (S - 1))
    kl = em.add("%kt", S - 1)
    valid = em.op("arith.cmpi ult, %s, %s : index" % (kl, kt_n), "p")
    issue_loads(kl, em.rem(kl, S), valid)
    st = em.rem("%kt", S)
    accs = ["%%a%d" % i for i in range(nacc)]

    def acc_i(j, mi, ni):
        return (j * MI + mi) * NI + ni

    for kk in range(BK // 16):
        em.comment("k16 step %d" % kk)
        afr = [em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = false} : %s -> vector<4x2x%s>" % (
            sA, st, a_rows[mi], em.v(a_col[kk]), sm_ty_a, dt), "fa") for mi in range(MI)]
        bfr = []
        for j in range(nb):
            bj = []
            for nj in range(WN // 16):
                r4 = em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = true} : %s -> vector<4x2x%s>" % (
                    sB[j], st, b_krows[kk], em.v(b_col[nj]), sm_ty_b, dt), "fb")
                for h in range(2):   # rows 0,1: n8 tile 2nj; rows 2,3: n8 tile 2nj+1
                    bj.append(em.op("vector.extract_strided_slice %s {offsets = [%d, 0], sizes = [2, 2], strides = [1, 1]} : vector<4x2x%s> to vector<2x2x%s>" % (r4, 2 * h, dt, dt), "b"))
            bfr.append(bj)
        for j in range(nb):
            for mi in range(MI):
                for ni in range(NI):
                    i = acc_i(j, mi, ni)
                    accs[i] = em.op("func.call @mma_%s(%s, %s, %s) : (vector<4x2x%s>, vector<2x2x%s>, %s) -> %s" % (
                        dt, afr[mi], bfr[j][ni], accs[i], dt, dt, acc_ty, acc_ty), "d")
    em.emit("scf.yield %s : %s" % (", ".join(accs), ", ".join([acc_ty] * nacc)))
    em.indent -= 2
    em.emit("}")
    em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)

    em.comment("epilogue on the fragments: rows m0+wm0+16*mi+lane/4 (+8), columns n0+wn0+8*ni+2*(lane%4) (+1)")
    g = em.shr(lane, 2)
    t2 = em.mul(em.band(lane, 3), 2)
    row_base = em.add(em.add(m0, wm0), g)
    col_base = em.add(em.add(n0, wn0), t2)

    def pair(j, mi, ni, h):
        return em.op("vector.extract_strided_slice %s#%d {offsets = [%d], sizes = [2], strides = [1]} : %s to vector<2xf32>" % (
            res_names, acc_i(j, mi, ni), 2 * h, acc_ty), "c")

    fragment_epilogue(em, helper, C, bias, res, nb, row_base, [16 * mi for mi in range(MI)],
                      col_base, [8 * ni for ni in range(NI)], pair,
                      m_bound=sval(em, M) if masked else None,
                      n_bound=sval(em, N) if nk else None)
    em.emit("gpu.return")

    launch = dict(block=[T, 1, 1], grid=[sgrid(grid), 1, 1], smem=smem)
    header = [
        "tiling: CTA %dx%dx%d, %d warps (%dx%d), warp tile %dx%d = %dx%d m16n8k16 tiles%s" % (
            BM, BN, BK, T // 32, warps_m, warps_n, WM, WN, MI, NI, " per B" if nb > 1 else ""),
        "pipeline: %d-stage cp.async.cg ring (16 B copies), one barrier per k-tile, %s k-tiles" % (S, KT),
        "smem: XOR-swizzled 16-byte chunks (A: chunk ^ %s, B: chunk ^ (k %% 8)), conflict-free ldmatrix" % (
            "((row >> 1) & 3)" if kchunks == 4 else "(row & 7)"),
        "launch: grid (%s,1,1) = %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
            grid, gm, gn, GROUP_M, T, smem),
    ]
    return finish(cfg, em, ins, outs, names, launch, header, [mma_helper(dt), "\n".join(helper.text)])


# --------------------------------------------------------------------------
# bf16 wgmma kernel (sm_90a)
# --------------------------------------------------------------------------
def aligned_smem_bf16(em, smem, dt="bf16"):
    """The dynamic shared memory (smem bytes, 1 KiB of them slack) with its
    base aligned to 1024 B, as the 128-byte-swizzled wgmma layouts need
    (the hardware swizzles on address bits): the aligned base's
    shared-window address, a flat bf16 view from it, and the view's type."""
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    raw = em.op("memref.extract_aligned_pointer_as_index %s : memref<?xi8, %s> -> index" % (smem_v, WG), "addr")
    pad = em.band(em.op("arith.subi %s, %s : index" % (em.idx(1024), em.band(raw, 1023)), "i"), 1023)
    sbase = em.add(raw, pad)                     # shared-window address of the aligned base
    nel = (smem - 1024) // 2
    sm_ty = memref_ty([nel], dt, WG)
    sflat = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, pad, WG, sm_ty), "sm")
    return sbase, sflat, sm_ty


def wgmma_descriptors(em, sw_lbo, sw_sbo):
    """wgmma shared-memory descriptors, 128-byte swizzle:
    (addr >> 4) & 0x3fff | (LBO >> 4) << 16 | (SBO >> 4) << 32 | 1 << 62.
    Returns desc(byte_addr, hi) and the high words of A (K-major, SBO 1024)
    and B (MN-major, LBO sw_lbo, SBO sw_sbo)."""
    hi_a = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)
    hi_b = ((sw_lbo >> 4) << 16) | ((sw_sbo >> 4) << 32) | (1 << 62)
    k_hi_a = em.const(str(hi_a), "i64", "desc_a_hi")
    k_hi_b = em.const(str(hi_b), "i64", "desc_b_hi")
    k_mask = em.const("16383", "i64", "desc_mask")
    k_4 = em.const("4", "i64", "four")

    def desc(byte_addr, hi):
        a64 = em.op("arith.index_cast %s : index to i64" % byte_addr, "q")
        sh = em.op("arith.shrui %s, %s : i64" % (a64, k_4), "q")
        lo = em.op("arith.andi %s, %s : i64" % (sh, k_mask), "q")
        return em.op("arith.ori %s, %s : i64" % (lo, hi), "desc")
    return desc, k_hi_a, k_hi_b


def gen_bf16_wgmma(cfg):
    """C = A @ B (+ epilogue) with wgmma.mma_async m64nBNk16 (sm_90a).

    WGS warpgroups, each 64 rows x BN; operands staged by cp.async (all
    threads) into the canonical 128-byte-swizzled wgmma layouts:
      A (K-major): [BM rows][64 k] rows of 128 B, 16-byte chunk c of row r at
          chunk c ^ (r % 8); 8-row atoms of 1024 B (SBO = 1024); the k16 step
          kk starts kk*32 B into the row (the hardware swizzles on address bits,
          so the tile base is aligned to 1024 B).
      B (MN-major, B is K x N row-major): [BN/64 atoms][BK k][64 n] rows of
          128 B, chunk c of k-row k at c ^ (k % 8); LBO = BK*128 B between
          64-column atoms, SBO = 1024 B between 8-k-row groups; the k16 step kk
          starts 2048*kk B in; wgmma with the B-transpose bit (layoutB = row).
    Pipeline: S stages, k-tile kt+S-2 is fetched while wgmma groups of k-tiles
    kt and kt-1 may still run (wgmma.wait_group 1), so a stage is refilled two
    iterations after its last reader was issued; cp.async writes are made
    visible to the async proxy with fence.proxy.async before the barrier.
    """
    ins, outs = parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    BN, BK, S, WGS = cfg["BN"], 64, cfg["stages"], cfg["WGS"]
    BM = 64 * WGS
    GROUP_M = cfg["group_m"]
    nb = len(cfg["b"])
    T = 128 * WGS
    assert BN % 64 == 0 and BN <= 256 and S >= 4
    em = Emitter()
    masked = masked_m(cfg)
    if masked or is_sym(N) or is_sym(K):
        gm, gn, KT = sizes_and_requirements(em, M, N, K, BM, BN, BK, S - 2)
        grid = smul(gm, gn)
    else:
        assert M % BM == 0 and N % BN == 0 and K % BK == 0
        KT = K // BK
        assert KT >= S - 2
        gm, gn = M // BM, N // BN
        grid = gm * gn
    a_bytes = BM * BK * 2
    b_bytes = BK * BN * 2
    smem = S * (a_bytes + nb * b_bytes) + 1024      # + alignment slack
    WGN = cfg.get("WGN", min(BN, 128))                # N of one wgmma instruction
    nsub = BN // WGN                                  # wgmma (accumulator structs) per product
    assert BN % WGN == 0 and WGN % 64 == 0
    nacc = WGN // 2                                   # f32 per thread per accumulator struct
    sw_lbo, sw_sbo = cfg.get("b_lbo_sbo", (BK * 128, 1024))

    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = operands(em, cfg, ins, outs, names)
    dt = A.dt                   # bf16 or f16 (wgmma with f32 accumulation either way)
    assert dt in ("bf16", "f16") and all(b.dt == dt for b in Bs)
    helper = EpilogueHelper(cfg, 2, nb, bias.dt if bias else None, res.dt if res else None, C.dt)

    em.comment("CTA tile (pid_m, pid_n): grouped raster over %sx%s tiles, GROUP_M=%d by default (a tune knob)" % (gm, gn, GROUP_M))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    if masked:
        pid_m, pid_n = grouped_raster_any(em, pid, gm, gn, GROUP_M)
    else:
        pid_m, pid_n = grouped_raster(em, pid, gm, gn, GROUP_M)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    wg = em.div(tid, 128)
    lane = em.rem(tid, 32)
    wq = em.rem(em.div(tid, 32), 4)              # warp within the warpgroup

    em.comment("shared memory, base aligned to 1024 B: A[S][%d x 64], then B_j[S][%d atoms][64 k][64 n], bf16" % (BM, BN // 64))
    sbase, sflat, sm_ty = aligned_smem_bf16(em, smem, dt)

    em.comment("cp.async assignments (16-byte chunks, element offsets within a stage)")
    if masked:
        em.comment("masked M: A rows past M-1 are read as row M-1 (clamped, loop invariant); their products land in")
        em.comment("accumulator rows that the epilogue never stores, and rows < M never read them (rows are independent)")
        m_last = em.symc("%s - 1" % M) if is_sym(M) else M - 1
    a_copies = []
    assert (BM * 8) % T == 0 and (BK * BN // 8) % T == 0
    for i in range(BM * 8 // T):
        q = em.add(tid, i * T)
        r = em.div(q, 8)
        c = em.rem(q, 8)
        dst = em.add(em.mul(r, 64), em.mul(em.xor(c, em.band(r, 7)), 8))
        grow = em.add(m0, r)
        if masked:
            grow = em.minu(grow, m_last)
        a_copies.append((dst, grow, em.mul(c, 8)))
    b_copies = []
    for i in range(BK * BN // 8 // T):
        q = em.add(tid, i * T)
        k = em.div(q, BN // 8)
        cc = em.rem(q, BN // 8)
        dst = em.add(em.add(em.mul(em.div(cc, 8), BK * 64), em.mul(k, 64)),
                     em.mul(em.xor(em.rem(cc, 8), em.band(k, 7)), 8))
        b_copies.append((dst, k, em.add(n0, em.mul(cc, 8))))

    def issue_loads(kt_load, stage, valid):
        if valid is None:
            ktc, tail = kt_load, ""
        else:
            ktc = em.op("arith.select %s, %s, %s : index" % (valid, em.v(kt_load), em.idx(0)), "kc")
            tail = ", %s" % em.op("arith.select %s, %s, %s : index" % (valid, em.idx(8), em.idx(0)), "n")
        k0 = em.mul(ktc, BK)
        toks = []
        ao = em.mul(stage, a_bytes // 2)
        for (dst, grow, gcol) in a_copies:
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8%s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.add(k0, gcol))), sflat, em.v(em.add(ao, dst)), tail, A.ty, sm_ty), "cp"))
        for j in range(nb):
            bo = em.add(S * a_bytes // 2 + j * S * b_bytes // 2, em.mul(stage, b_bytes // 2))
            for (dst, k, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.add(k0, k)), em.v(gcol)), sflat, em.v(em.add(bo, dst)), tail, Bs[j].ty, sm_ty), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    em.comment("prologue: k-tiles 0..%d in flight" % (S - 3))
    grp = None
    for st in range(S - 2):
        grp = issue_loads(st, st, None)

    em.comment("wgmma descriptors: (addr >> 4) & 0x3fff | (LBO >> 4) << 16 | (SBO >> 4) << 32 | 1 << 62 (128B swizzle)")
    desc, k_hi_a, k_hi_b = wgmma_descriptors(em, sw_lbo, sw_sbo)

    acc_ty = "!llvm.struct<(%s)>" % ", ".join(["f32"] * nacc)
    zero = em.const_op("llvm.mlir.zero : %s" % acc_ty, "zacc")
    wg_row_bytes = em.mul(wg, 64 * 128)

    nst = nb * nsub
    em.comment("main loop over %s k-tiles; accumulator j*%d + s: the m64n%d f32 fragment (%d registers) of product j, columns %d*s.." % (
        KT, nsub, WGN, nacc, WGN))
    res_names = em.fresh("acc")
    iter_args = ", ".join("%%a%d = %s" % (j, zero) for j in range(nst))
    em.idx(0)                  # (constant order as before: 0, the k-tile count, 1)
    kt_n = em.v(sval(em, KT))  # the k-tile count (a placeholder when K is free)
    em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%s) -> (%s) {" % (
        res_names, nst, em.idx(0), kt_n, em.idx(1), iter_args, ", ".join([acc_ty] * nst)))
    em.indent += 2
    em.comment("k-tile kt has landed; after the barrier every warpgroup has retired its wgmma of k-tile kt-2")
    em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, S - 3))
    em.emit("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}")
    em.emit("gpu.barrier")
    em.comment("refill the stage of k-tile kt-2 with k-tile kt+%d (zero-fill past the end)" % (S - 2))
    kl = em.add("%kt", S - 2)
    valid = em.op("arith.cmpi ult, %s, %s : index" % (kl, kt_n), "p")
    issue_loads(kl, em.rem(kl, S), valid)
    st = em.rem("%kt", S)
    a_base = em.add(em.add(sbase, em.mul(st, a_bytes)), wg_row_bytes)
    b_base = [em.add(sbase, em.add(S * a_bytes + j * S * b_bytes, em.mul(st, b_bytes))) for j in range(nb)]
    accs = ["%%a%d" % j for j in range(nst)]
    em.emit("nvvm.wgmma.fence.aligned")
    for kk in range(BK // 16):
        da = desc(em.add(a_base, kk * 32), k_hi_a)
        for j in range(nb):
            for sub in range(nsub):
                # sub-tile sub starts (WGN/64)*sub 64-column atoms (LBO bytes each) into the B tile
                db = desc(em.add(b_base[j], kk * 2048 + sub * (WGN // 64) * BK * 128), k_hi_b)
                i = j * nsub + sub
                accs[i] = em.op(("nvvm.wgmma.mma_async %s, %s, %s, #nvvm.shape<m = 64, n = %d, k = 16>, "
                                 "D [<f32>, #nvvm.wgmma_scale_out<one>], A [<%s>, #nvvm.wgmma_scale_in<one>, <row>], "
                                 "B [<%s>, #nvvm.wgmma_scale_in<one>, <row>] : %s -> %s") % (
                                     da, db, accs[i], WGN, dt, dt, acc_ty, acc_ty), "w")
    em.emit("nvvm.wgmma.commit.group.sync.aligned")
    em.emit("nvvm.wgmma.wait.group.sync.aligned 1")
    em.emit("scf.yield %s : %s" % (", ".join(accs), ", ".join([acc_ty] * nst)))
    em.indent -= 2
    em.emit("}")
    em.emit("nvvm.wgmma.wait.group.sync.aligned 0")
    em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)

    em.comment("epilogue: D fragment = per warp 16 rows; register 4*ni + {0,1} at (lane/4, 8*ni + 2*(lane%4) + {0,1}), + {2,3} at row + 8")

    def pair(j, mi, ni, h):
        sub, nl = divmod(ni, WGN // 8)
        st_i = j * nsub + sub
        e0 = em.op("llvm.extractvalue %s#%d[%d] : %s" % (res_names, st_i, nl * 4 + 2 * h, acc_ty), "c")
        e1 = em.op("llvm.extractvalue %s#%d[%d] : %s" % (res_names, st_i, nl * 4 + 2 * h + 1, acc_ty), "c")
        return em.op("vector.from_elements %s, %s : vector<2xf32>" % (e0, e1), "c")

    g = em.shr(lane, 2)
    t2 = em.mul(em.band(lane, 3), 2)
    row_base = em.add(em.add(em.add(m0, em.mul(wg, 64)), em.mul(wq, 16)), g)
    col_base = em.add(n0, t2)
    fragment_epilogue(em, helper, C, bias, res, nb, row_base, [0], col_base, [8 * ni for ni in range(BN // 8)], pair,
                      m_bound=sval(em, M) if masked else None, rows_outer="split", row_hi=em.add(m0, BM) if masked else None)
    em.emit("gpu.return")

    launch = dict(block=[T, 1, 1], grid=[sgrid(grid), 1, 1], smem=smem)
    header = [
        "tiling (sm_90a): CTA %dx%dx%d, %d warpgroup(s) of 64 rows, each %d x %d wgmma.mma_async m64n%dk16 per k-tile%s" % (
            BM, BN, BK, WGS, BK // 16, nsub, WGN, " per B" if nb > 1 else ""),
        "pipeline: %d-stage cp.async.cg ring, k-tile kt+%d fetched during k-tile kt, wgmma.wait_group 1; %s k-tiles" % (
            S, S - 2, KT),
        "smem: 128B-swizzled canonical layouts, A K-major (SBO 1024), B MN-major (LBO %d, SBO %d), base aligned to 1024 B" % (
            sw_lbo, sw_sbo),
        "launch: grid (%s,1,1) = %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
            grid, gm, gn, GROUP_M, T, smem),
    ]
    return finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])


# --------------------------------------------------------------------------
# f32 SIMT kernel
# --------------------------------------------------------------------------
def gen_f32_simt(cfg):
    """f32 FMA GEMM, 8x8 outputs per thread (four 4x4 quadrants of the tile)
    in one vector<8x8xf32> updated by vector.outerproduct (= 64 fma.rn.f32).  KS > 1
    splits K inside the CTA: KS thread groups each run the full pipeline over
    K/KS and the partial tiles are summed through shared memory, in slice
    order, before the epilogue (more warps per SM for small grids)."""
    ins, outs = parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    KS = cfg.get("KS", 1)
    GROUP_M = cfg["group_m"]
    TX, TY = BN // 8, BM // 8
    T = TX * TY                  # threads per K slice
    TT = T * KS
    PAD = 4
    LDA = BM + PAD
    em = Emitter()
    masked = masked_m(cfg)
    nk = masked_nk(cfg)
    assert BK % 4 == 0 and nk in (0, 4)
    if masked or is_sym(N) or is_sym(K):
        gm, gn, KT = sizes_and_requirements(em, M, N, K, BM, BN, BK * KS, 1, nk)  # KT: k-tiles per slice
        grid = smul(gm, gn)
    else:
        assert M % BM == 0 and N % BN == 0 and K % (BK * KS) == 0
        KT = K // BK // KS           # k-tiles per slice
        gm, gn = M // BM, N // BN
        grid = gm * gn
    a_floats = KS * 2 * BK * LDA
    # B stored N x K (cfg["b_nk"]): staged transposed like A, so padded too
    bnk = bool(cfg.get("b_nk"))
    LDB = BN + PAD if bnk else BN
    pipe_bytes = (a_floats + KS * 2 * BK * LDB) * 4
    red_bytes = KS * BM * BN * 4 if KS > 1 else 0
    smem = max(pipe_bytes, red_bytes)

    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = operands(em, cfg, ins, outs, names)
    B = Bs[0]
    helper = EpilogueHelper(cfg, 4, 1, bias.dt if bias else None, res.dt if res else None, C.dt)
    sa_ty = memref_ty([KS, 2, BK, LDA], "f32", WG)
    sb_ty = memref_ty([KS, 2, BK, LDB], "f32", WG)
    v4 = "vector<4xf32>"
    v8 = "vector<8xf32>"
    q_ty = "vector<8x8xf32>"

    em.comment("CTA tile (pid_m, pid_n): grouped raster over %sx%s tiles, GROUP_M=%d by default (a tune knob)" % (gm, gn, GROUP_M))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    if masked:
        pid_m, pid_n = grouped_raster_any(em, pid, gm, gn, GROUP_M)
    else:
        pid_m, pid_n = grouped_raster(em, pid, gm, gn, GROUP_M)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    if KS > 1:
        ks = em.div(tid, T)
        lt = em.rem(tid, T)
    else:
        ks, lt = 0, tid
    WX = cfg.get("WX", TX)       # threads of a warp along N (TX: one row of TX threads)
    if WX == TX:
        tx = em.rem(lt, TX)
        ty = em.div(lt, TX)
    else:
        # Each warp covers a WX x (32/WX) patch of thread positions: fewer
        # distinct A and B addresses per warp-wide shared load (WX = 8: 8
        # float4 of B and 4 of A, one 128-byte wavefront each, instead of
        # 16 of B = two wavefronts with one row of 16 threads).
        WY = 32 // WX
        assert TX % WX == 0 and TY % WY == 0
        lane = em.rem(lt, 32)
        w = em.div(lt, 32)
        tx = em.add(em.mul(em.rem(w, TX // WX), WX), em.rem(lane, WX))
        ty = em.add(em.mul(em.div(w, TX // WX), WY), em.div(lane, WX))
    ktv = sval(em, KT)           # k-tiles per slice (a placeholder when K is free)
    kt0 = em.mul(ks, ktv) if ks != 0 else 0   # first k-tile of this slice

    em.comment("shared memory: A^T [KS][2][%d k][%d m + %d pad], B [KS][2][%d k][%d n], f32" % (BK, BM, PAD, BK, BN))
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sa_ty), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(a_floats * 4), WG, sb_ty), "sB")

    em.comment("global -> register -> shared assignments (float4)")
    assert (BM * BK // 4) % T == 0 and (BK * BN // 4) % T == 0
    if masked:
        em.comment("masked M: A rows past M-1 are read as row M-1 (clamped, loop invariant); they fill the columns")
        em.comment("of A^T whose outputs the epilogue never stores (rows of the product are independent)")
        m_last = em.symc("%s - 1" % M) if is_sym(M) else M - 1
    a_ld = []
    for i in range(BM * BK // 4 // T):
        q = em.add(lt, i * T)
        r = em.div(q, BK // 4)
        grow = em.add(m0, r)
        if masked:
            grow = em.minu(grow, m_last)
        a_ld.append((grow, em.mul(em.rem(q, BK // 4), 4), r))
    if nk:
        em.comment("masked N and K: B columns past N-1 are read at clamped columns (never stored); the k part past")
        em.comment("K-1 (the last k-tile, and whole k-tiles of the last slices) is loaded clamped and replaced by zeros")
        n_last4 = sval(em, "%s - 4" % N if is_sym(N) else N - 4)
        k_last4 = sval(em, "%s - 4" % K if is_sym(K) else K - 4)
        k_last = sval(em, "%s - 1" % K if is_sym(K) else K - 1)
        k_n = em.v(sval(em, K))
        zero4 = em.const("dense<0.000000e+00>", v4, "zero4")
    b_ld = []
    if bnk:
        # B^T rows (n) read as A's rows: float4 along k, rows past N-1 (masked
        # N) read as row N-1 and never stored
        if nk:
            n_last = sval(em, "%s - 1" % N if is_sym(N) else N - 1)
        for i in range(BN * BK // 4 // T):
            q = em.add(lt, i * T)
            r = em.div(q, BK // 4)
            gn_ = em.add(n0, r)
            if nk:
                gn_ = em.minu(gn_, n_last)
            b_ld.append((gn_, em.mul(em.rem(q, BK // 4), 4), r))
    for i in range(0 if bnk else BK * BN // 4 // T):
        q = em.add(lt, i * T)
        kr = em.div(q, BN // 4)
        c = em.mul(em.rem(q, BN // 4), 4)
        gc = em.add(n0, c)
        if nk:
            gc = em.minu(gc, n_last4)
        b_ld.append((kr, gc, c))

    def kload(X, kidx, kclamp, other, first, hint):
        """a float4 of X at k index kidx (A: the column, B: the row), zero
        where kidx is at or past K (masked K; clamped address)"""
        if not nk:
            idx = [kidx, other] if not first else [other, kidx]
            return X.load(em, [em.v(i) for i in idx], 4, hint)
        kc = em.v(em.minu(kidx, kclamp))
        v = X.load(em, [kc, em.v(other)] if not first else [em.v(other), kc], 4, hint)
        ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(kidx), k_n), "kin")
        return em.op("arith.select %s, %s, %s : %s" % (ok, v, zero4, v4), hint)

    def gload(kt):
        k0 = em.mul(em.add(kt0, kt), BK)
        av = [kload(A, em.add(k0, kc), k_last4 if nk else None, gr, True, "ga") for (gr, kc, r) in a_ld]
        if bnk:
            bv = [kload(B, em.add(k0, kc), k_last4 if nk else None, gn_, True, "gb") for (gn_, kc, r) in b_ld]
        else:
            bv = [kload(B, em.add(k0, kr), k_last if nk else None, gc, False, "gb") for (kr, gc, c) in b_ld]
        return av, bv

    def sstore(buf, av, bv):
        for (gr, kc, r), v in zip(a_ld, av):
            for e in range(4):   # transpose: A[m][k..k+3] -> A^T[k+e][m]
                x = em.op("vector.extract %s[%d] : f32 from %s" % (v, e, v4), "x")
                em.emit("memref.store %s, %s[%s, %s, %s, %s] : %s" % (
                    x, sA, em.v(ks), em.v(buf), em.v(em.add(kc, e)), em.v(r), sa_ty))
        for (kr, gc, c), v in zip(b_ld, bv):
            if bnk:   # transpose: B^T[n][k..k+3] -> B[k+e][n] (kr: n's row, gc: k, c: n in the tile)
                for e in range(4):
                    x = em.op("vector.extract %s[%d] : f32 from %s" % (v, e, v4), "x")
                    em.emit("memref.store %s, %s[%s, %s, %s, %s] : %s" % (
                        x, sB, em.v(ks), em.v(buf), em.v(em.add(gc, e)), em.v(c), sb_ty))
                continue
            em.emit("vector.store %s, %s[%s, %s, %s, %s] : %s, %s" % (
                v, sB, em.v(ks), em.v(buf), em.v(kr), em.v(c), sb_ty, v4))

    em.comment("prologue: k-tile 0 -> shared buffer 0")
    av, bv = gload(0)
    sstore(0, av, bv)
    em.emit("gpu.barrier")

    em.comment("this thread's rows: 4*ty + {0..3} and %d + 4*ty + {0..3}; columns 4*tx + {0..3} and %d + 4*tx + {0..3}" % (BM // 2, BN // 2))
    ra = [em.mul(ty, 4), em.add(em.mul(ty, 4), BM // 2)]
    cb = [em.mul(tx, 4), em.add(em.mul(tx, 4), BN // 2)]
    zero = em.const("dense<0.000000e+00>", q_ty, "zero88")
    res_names = em.fresh("acc")
    em.comment("accumulator: %s, row i = output row ra[i/4] + i%%4, column j = cb[j/4] + j%%4" % q_ty)
    c0 = em.idx(0)
    kt_n = em.v(ktv)
    em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (%s) {" % (
        res_names, c0, kt_n, em.idx(1), zero, q_ty))
    em.indent += 2
    em.comment("prefetch k-tile kt+1 (the last one again at the end) into registers")
    buf = em.band("%kt", 1)
    nbuf = em.xor(buf, em.idx(1))
    kn = em.add("%kt", 1)
    last = em.op("arith.cmpi ult, %s, %s : index" % (kn, kt_n), "p")
    kt_last = em.v(sval(em, "%s - 1" % KT if is_sym(KT) else KT - 1))
    knc = em.op("arith.select %s, %s, %s : index" % (last, kn, kt_last), "kn")
    av, bv = gload(knc)
    acc = "%acc"
    em.comment("multiply k-tile kt from shared buffer kt%2: acc += outer(A^T[k][rows], B[k][cols]) (64 fma per k)")
    for k in range(BK):
        a = [em.op("vector.load %s[%s, %s, %s, %s] : %s, %s" % (sA, em.v(ks), buf, em.idx(k), em.v(ra[q]), sa_ty, v4), "a")
             for q in range(2)]
        b = [em.op("vector.load %s[%s, %s, %s, %s] : %s, %s" % (sB, em.v(ks), buf, em.idx(k), em.v(cb[q]), sb_ty, v4), "b")
             for q in range(2)]
        a8 = em.op("vector.shuffle %s, %s [0, 1, 2, 3, 4, 5, 6, 7] : %s, %s" % (a[0], a[1], v4, v4), "a")
        b8 = em.op("vector.shuffle %s, %s [0, 1, 2, 3, 4, 5, 6, 7] : %s, %s" % (b[0], b[1], v4, v4), "b")
        acc = em.op("vector.outerproduct %s, %s, %s {kind = #vector.kind<add>} : %s, %s" % (
            a8, b8, acc, v8, v8), "acc")
    em.comment("store k-tile kt+1 into the other buffer; the barrier publishes it and retires buffer kt%2")
    sstore(nbuf, av, bv)
    em.emit("gpu.barrier")
    em.emit("scf.yield %s : %s" % (acc, q_ty))
    em.indent -= 2
    em.emit("}")

    rows8 = {}

    def row_of(qi, qj, i):
        if (qi, i) not in rows8:
            rows8[(qi, i)] = em.op("vector.extract %s[%d] : %s from %s" % (res_names, 4 * qi + i, v8, q_ty), "r")
        return em.op("vector.extract_strided_slice %s {offsets = [%d], sizes = [4], strides = [1]} : %s to %s" % (
            rows8[(qi, i)], 4 * qj, v8, v4), "r")

    if KS == 1 and masked:
        em.comment("epilogue: per row, two float4 column groups; rows at or past M are skipped (scf.if row < M)")
        m_n = em.v(sval(em, M))
        cols = [em.add(n0, cb[qj]) for qj in range(2)]
        if nk:
            em.comment("masked N: column groups at or past N are not stored (the bias read at a clamped column)")
            okn = [em.op("arith.cmpi ult, %s, %s : index" % (cols[qj], em.v(sval(em, N))), "okn") for qj in range(2)]
            bcols = [em.minu(cols[qj], n_last4) for qj in range(2)]
        else:
            bcols = cols
        bvs = [bias.load(em, [bcols[qj]], 4, "bias") if bias else None for qj in range(2)]
        for qi in range(2):
            for i in range(4):
                row = em.add(m0, em.add(ra[qi], i))
                ok = em.op("arith.cmpi ult, %s, %s : index" % (row, m_n), "ok")
                pieces = [row_of(qi, qj, i) for qj in range(2)]
                em.emit("scf.if %s {" % ok)
                em.indent += 2
                for qj in range(2):
                    if nk:
                        em.emit("scf.if %s {" % okn[qj])
                        em.indent += 2
                    rv = res.load(em, [row, cols[qj]], 4, "res") if res else None
                    y = helper.call(em, [pieces[qj]], bvs[qj], rv)
                    em.emit("vector.store %s, %s : %s, %s" % (y, C.at(row, cols[qj]), C.ty, v4))
                    if nk:
                        em.indent -= 2
                        em.emit("}")
                em.indent -= 2
                em.emit("}")
    elif KS == 1:
        em.comment("epilogue: per row, two float4 column groups")
        for qj in range(2):
            col = em.add(n0, cb[qj])
            bv4 = bias.load(em, [col], 4, "bias") if bias else None
            for qi in range(2):
                for i in range(4):
                    row = em.add(m0, em.add(ra[qi], i))
                    rv = res.load(em, [row, col], 4, "res") if res else None
                    y = helper.call(em, [row_of(qi, qj, i)], bv4, rv)
                    em.emit("vector.store %s, %s : %s, %s" % (y, C.at(row, col), C.ty, v4))
    else:
        em.comment("split-K: partial tiles -> shared [%d][%d][%d] (the pipeline buffers are free after the loop's last barrier)" % (KS, BM, BN))
        red_ty = memref_ty([KS, BM, BN], "f32", WG)
        red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, red_ty), "red")
        for qi in range(2):
            for i in range(4):
                r = em.add(ra[qi], i)
                for qj in range(2):
                    em.emit("vector.store %s, %s[%s, %s, %s] : %s, %s" % (
                        row_of(qi, qj, i), red, em.v(ks), em.v(r), em.v(cb[qj]), red_ty, v4))
        em.emit("gpu.barrier")
        em.comment("sum the %d slices in slice order, epilogue, coalesced float4 stores" % KS)
        assert (BM * BN // 4) % TT == 0
        for i in range(BM * BN // 4 // TT):
            q = em.add(tid, i * TT)
            r = em.div(q, BN // 4)
            c = em.mul(em.rem(q, BN // 4), 4)
            tot = None
            for sl in range(KS):
                v = em.op("vector.load %s[%s, %s, %s] : %s, %s" % (red, em.idx(sl), em.v(r), em.v(c), red_ty, v4), "p")
                tot = v if tot is None else em.op("arith.addf %s, %s : %s" % (tot, v, v4), "p")
            row, col = em.add(m0, r), em.add(n0, c)
            bv4 = bias.load(em, [em.minu(col, n_last4) if nk else col], 4, "bias") if bias else None
            if masked:   # rows at or past M are skipped (and columns at or past N: masked N)
                ok = em.op("arith.cmpi ult, %s, %s : index" % (row, em.v(sval(em, M))), "ok")
                if nk:
                    okn = em.op("arith.cmpi ult, %s, %s : index" % (col, em.v(sval(em, N))), "okn")
                    ok = em.op("arith.andi %s, %s : i1" % (ok, okn), "ok")
                em.emit("scf.if %s {" % ok)
                em.indent += 2
            rv = res.load(em, [row, col], 4, "res") if res else None
            y = helper.call(em, [tot], bv4, rv)
            em.emit("vector.store %s, %s : %s, %s" % (y, C.at(row, col), C.ty, v4))
            if masked:
                em.indent -= 2
                em.emit("}")
    em.emit("gpu.return")

    launch = dict(block=[TT, 1, 1], grid=[sgrid(grid), 1, 1], smem=smem)
    header = [
        "tiling: CTA %dx%dx%d, %d threads = %d K-slice(s) x %d (%dx%d); 8x8 f32 outputs per thread in four 4x4" % (
            BM, BN, BK, TT, KS, T, TY, TX),
        "  quadrants (rows 4ty+{0..3}, %d+4ty+{0..3}; cols 4tx+{0..3}, %d+4tx+{0..3}), vector.outerproduct = fma (no tf32)" % (
            BM // 2, BN // 2),
        "pipeline: A^T [2][%d][%d+%d pad] (transposed on the way in), B [2][%d][%d] per slice, double-buffered;" % (
            BK, BM, PAD, BK, BN),
        "  k-tile kt+1 prefetched into registers (float4) while kt is multiplied; %s k-tiles per slice" % KT,
    ]
    if WX != TX:
        header.append("warp layout: each warp %d (n) x %d (m) threads, %d x %d warps per slice" % (
            WX, 32 // WX, TX // WX, TY // (32 // WX)))
    if KS > 1:
        header.append("split-K in the CTA: slice s sums k-tiles [s*%s, (s+1)*%s); partials added in slice order in shared memory" % (KT, KT))
    header.append("launch: grid (%s,1,1) = %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
        grid, gm, gn, GROUP_M, TT, smem))
    return finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])


def finish(cfg, em, ins, outs, names, launch, header, helpers):
    kname = cfg["sg"] + "_" + cfg["kind"]
    if cfg.get("_parts") is not None:   # generate_alternatives() collects the pieces
        cfg["_parts"].update(em=em, ins=ins, outs=outs, names=names, launch=launch, header=header,
                             helpers=helpers, kname=kname)
    lines = []
    lines.append("// Hand-written kernel for subgraph @%s (example %s), generated by" % (cfg["sg"], cfg["example"]))
    lines.append("// kernels/handwritten/gen_gemm.py -- edit the generator, not this file.")
    lines.append("//")
    lines.append("// signature: %s" % cfg["signature"])
    lines.append("// math: C[%s,%s] = %s;" % (cfg["M"], cfg["N"], cfg["product"]))
    lines.append("//       %s" % EPILOGUES[cfg["epilogue"]][1])
    for note in cfg.get("math_notes", []):
        lines.append("//       " + note)
    for h in header:
        lines.append("// " + h)
    for a in cfg.get("assumptions", []):
        lines.append("// assumes: " + a)
    lines.append("gpu.module @%s {" % cfg["sg"])
    for knob, values, require in em.tune:
        lines.append("  // llm-fuse.tune %s = %s" % (knob, ", ".join(str(v) for v in values)))
        lines.append("  // llm-fuse.tune-require %s" % require)
    for require in getattr(em, "reqs", []):
        lines.append("  // llm-fuse.tune-require %s" % require)
    for h in helpers:
        lines.append(h)
    args = ", ".join("%s: %s" % (nm, memref_ty(shape, dt)) for (shape, dt), nm in zip(ins + outs, names))
    lines.append("  gpu.func @%s(%s) kernel" % (kname, args))
    lines.append("      attributes {known_block_size = array<i32: %d, %d, %d>," % tuple(launch["block"]))
    lines.append("                  known_grid_size = array<i32: %s, %s, %s>," % tuple(launch["grid"]))
    if launch.get("cluster"):   # a thread-block cluster shape (gemm_wgmma_tma.py split-K)
        lines.append("                  known_cluster_size = array<i32: %s, %s, %s>," % tuple(launch["cluster"]))
    extra = ""
    if cfg.get("minctasm"):
        # .minnctapersm: ptxas caps registers so that this many CTAs fit on an SM
        extra = ", nvvm.minctasm = %d : i32" % cfg["minctasm"]
    lines.append("                  llm_fuse.dynamic_shared_memory = %d : i32%s} {" % (launch["smem"], extra))
    lines += em.body(4)
    lines.append("  }")
    lines.append("}")
    return kname, "\n".join(lines) + "\n", launch


# --------------------------------------------------------------------------
# The subgraphs.
# --------------------------------------------------------------------------
BF16_ASSUME = ["M % BM == 0, N % BN == 0, K % BK == 0 (true for this exact shape; no bounds checks)",
               "buffers 16-byte aligned (contract guarantee) for the 16-byte cp.async and the 4-byte stores"]
F32_ASSUME = ["M % BM == 0, N % BN == 0, K % BK == 0 (true for this exact shape; no bounds checks)",
              "buffers 16-byte aligned (contract guarantee) for float4 loads and stores"]

SUBGRAPHS = [
    # ---------------- mlp_block (linalg) ----------------
    dict(sg="sg_439a925e4900df20", example="mlp_block",
         fingerprint="439a925e4900df20f790ff5375d3e757cae3cb59be6256856e17aac85522fea2",
         signature="(tensor<4096x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16>) -> tensor<4096x3072xbf16>",
         kind="bf16_mma", M=4096, N=3072, K=768, a=0, b=[1], bias=2, res=None,
         epilogue="bias_gelu_tanh", product="A[4096,768] @ B[768,3072] (bf16 in, f32 accumulate)",
         math_notes=["bias bf16 -> f32 (extf); result rounded to bf16 (truncf) before the store"],
         BM=128, BN=128, BK=64, WM=64, WN=32, stages=3, group_m=8, minctasm=2, chips=["sm_90", "sm_80"]),
    dict(sg="sg_5cdc21b0bac363b8", example="mlp_block",
         fingerprint="5cdc21b0bac363b83ff86a0dc690180c4b7cb113dbe04197ccc3996399126234",
         signature="(tensor<4096x3072xbf16>, tensor<3072x768xbf16>, tensor<768xbf16>, tensor<4096x768xbf16>) -> tensor<4096x768xbf16>",
         kind="bf16_mma", M=4096, N=768, K=3072, a=0, b=[1], bias=2, res=3,
         epilogue="bias_residual", product="A[4096,3072] @ B[3072,768] (bf16 in, f32 accumulate)",
         math_notes=["bias and residual bf16 -> f32 (extf); result truncf to bf16"],
         BM=128, BN=64, BK=64, WM=32, WN=32, stages=3, group_m=8, chips=["sm_90", "sm_80"]),
    # ---------------- swiglu dual GEMM ----------------
    dict(sg="sg_74ede17e00bf0352", example="swiglu",
         fingerprint="74ede17e00bf0352f1fcb8b79cf0177ceb2940d9ffe11956088ef6715c0573e5",
         signature="(tensor<8192x4096xbf16>, tensor<4096x14336xbf16>, tensor<4096x14336xbf16>) -> tensor<8192x14336xbf16>",
         kind="bf16_mma", M=8192, N=14336, K=4096, a=0, b=[1, 2], bias=None, res=None,
         epilogue="silu_mul", product="A[8192,4096] @ B1[4096,14336] and A @ B2 (shared A tile, bf16 in, f32 accumulate)",
         math_notes=["result truncf to bf16"],
         BM=128, BN=128, BK=64, WM=64, WN=32, stages=3, group_m=8, chips=["sm_90", "sm_80"]),
    # ---------------- tosa mlp_block ----------------
    dict(sg="sg_6c02d079e63ba7a7", example="tosa/mlp_block",
         fingerprint="6c02d079e63ba7a783082bca43ecce8d24b2a6849041e5dde5dcb55f2cc48c2a",
         signature="(tensor<4096x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16>) -> tensor<1x4096x3072xbf16>",
         kind="bf16_mma", M=4096, N=3072, K=768, a=0, b=[1], bias=2, res=None,
         epilogue="bias_gelu_tanh", product="A[4096,768] @ B[768,3072] (TOSA batch_matmul of batch 1, bf16 in, f32 accumulate)",
         math_notes=["TOSA elementwise chain, same op order as the linalg GELU; output viewed as 4096x3072 (collapse_shape)"],
         BM=128, BN=128, BK=64, WM=64, WN=32, stages=3, group_m=8, minctasm=2, chips=["sm_90", "sm_80"]),
    dict(sg="sg_e0d727355adf3ba8", example="tosa/mlp_block",
         fingerprint="e0d727355adf3ba87e45a1c73e7b8defe614d8026f2a9445e449af3eb83dedae",
         signature="(tensor<4096x768xbf16>, tensor<3072x768xbf16>, tensor<768xbf16>, tensor<1x4096x3072xbf16>) -> tensor<4096x768xbf16>",
         kind="bf16_mma", M=4096, N=768, K=3072, a=3, b=[1], bias=2, res=0,
         epilogue="bias_residual", product="arg3[0][4096,3072] @ arg1[3072,768] (bf16 in, f32 accumulate)",
         math_notes=["residual is arg0 (the block input), bias arg2; bf16 -> f32, truncf at the end"],
         BM=128, BN=64, BK=64, WM=32, WN=32, stages=3, group_m=8, chips=["sm_90", "sm_80"]),
    # ---------------- gemm_epilogue (f32) ----------------
    dict(sg="sg_5beaf48efb3a6ac0", example="gemm_epilogue",
         fingerprint="5beaf48efb3a6ac0c1a6253ba5cb8916feb51bf25bbd82366a5b40a706b4eb3d",
         signature="(tensor<1024x8192xf32>, tensor<8192x8192xf32>) -> tensor<1024x8192xf32>",
         kind="f32_simt", M=1024, N=8192, K=8192, a=0, b=[1], bias=None, res=None,
         epilogue="sub_mul_relu", product="A[1024,8192] @ B[8192,8192] (f32 FMA)",
         # WX=4 (each warp a 4 x 8 patch of threads): 2.827 ms on an H200 against
         # 2.884 with one row of 16 threads per warp (bench/NOTES.md, 2026-11-21)
         BM=128, BN=128, BK=16, WX=4, group_m=8, minctasm=2, chips=["sm_90", "sm_80"]),
    # ---------------- benchmark suite (examples/bench/, issue 8) ----------------
    dict(sg="sg_89b05da5eb3c1a6b", example="bench/gemm_bias_gelu",
         fingerprint="89b05da5eb3c1a6bc02b7105225b90380249298ce08f47c70db85f0f7ccd6ab6",
         signature="(tensor<16384x4096xbf16>, tensor<4096x16384xbf16>, tensor<16384xbf16>) -> tensor<16384x16384xbf16>",
         kind="bf16_mma", M=16384, N=16384, K=4096, a=0, b=[1], bias=2, res=None,
         epilogue="bias_gelu_tanh", product="A[16384,4096] @ B[4096,16384] (bf16 in, f32 accumulate)",
         math_notes=["bias bf16 -> f32 (extf); result rounded to bf16 (truncf) before the store",
                     "same tiling as the MLP block's up-projection (sg_439a925e4900df20)"],
         BM=128, BN=128, BK=64, WM=64, WN=32, stages=3, group_m=8, minctasm=2, chips=["sm_90", "sm_80"]),
    # ---------------- minigpt (f32) ----------------
    dict(sg="sg_775f56ec869d4b28", example="minigpt_block",
         fingerprint="775f56ec869d4b2819a27b8212047fc92145a7c6ee89bf725fe6555cf717d241",
         signature="(tensor<1024x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>) -> tensor<1024x2304xf32>",
         kind="f32_simt", M=1024, N=2304, K=768, a=0, b=[1], bias=2, res=None,
         epilogue="bias", product="A[1024,768] @ B[768,2304] (f32 FMA)",
         BM=64, BN=128, BK=8, group_m=8, minctasm=2, chips=["sm_90", "sm_80"]),
    dict(sg="sg_1c6bf422e56f7cc7", example="minigpt_block",
         fingerprint="1c6bf422e56f7cc7424475212131d9f35de8ae28b7a643f48e9dc12c4bfaf9c2",
         signature="(tensor<1024x768xf32>, tensor<768x768xf32>, tensor<768xf32>, tensor<1024x768xf32>) -> tensor<1024x768xf32>",
         kind="f32_simt", M=1024, N=768, K=768, a=0, b=[1], bias=2, res=3,
         epilogue="bias_residual", product="A[1024,768] @ B[768,768] (f32 FMA)",
         BM=64, BN=64, BK=8, KS=2, group_m=8, minctasm=2, chips=["sm_90", "sm_80"]),
    dict(sg="sg_208fdd59011a4518", example="minigpt_block",
         fingerprint="208fdd59011a45184252b036441029232bde144c15d4055fa925f9a504f65a09",
         signature="(tensor<1024x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>) -> tensor<1024x3072xf32>",
         kind="f32_simt", M=1024, N=3072, K=768, a=0, b=[1], bias=2, res=None,
         epilogue="bias_gelu_tanh", product="A[1024,768] @ B[768,3072] (f32 FMA)",
         BM=64, BN=128, BK=8, group_m=8, chips=["sm_90", "sm_80"]),
    dict(sg="sg_36d4248ce34e0c94", example="minigpt_block",
         fingerprint="36d4248ce34e0c942f9a79dcbae68de11f0f89c40ebe6b1e661a3a96276a43c8",
         signature="(tensor<1024x3072xf32>, tensor<3072x768xf32>, tensor<768xf32>, tensor<1024x768xf32>) -> tensor<1024x768xf32>",
         kind="f32_simt", M=1024, N=768, K=3072, a=0, b=[1], bias=2, res=3,
         epilogue="bias_residual", product="A[1024,3072] @ B[3072,768] (f32 FMA)",
         BM=64, BN=64, BK=8, KS=2, group_m=8, chips=["sm_90", "sm_80"]),
    # ---------------- minigpt MLP at 65536 tokens (examples/bench/, issue 8) ----------------
    # The MiniGPT block's MLP GEMMs (sg_208fdd59011a4518, sg_36d4248ce34e0c94)
    # at M = 65536: the block's tilings, only the shapes changed. On an H200
    # the whole MLP took 13.53 ms with them and 13.37 ms with gemm_epilogue's
    # 128x128x16 tiles (minctasm 2), but those spill on sm_80 in the GELU
    # epilogue (24-byte stack frame), and one file serves both chips.
    dict(sg="sg_ab992c66808cc4c2", example="bench/minigpt_mlp",
         fingerprint="ab992c66808cc4c2421fceec47fea3ff260f7679ed8e87a436ed58411a31ec08",
         signature="(tensor<65536x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>) -> tensor<65536x3072xf32>",
         kind="f32_simt", M=65536, N=3072, K=768, a=0, b=[1], bias=2, res=None,
         epilogue="bias_gelu_tanh", product="A[65536,768] @ B[768,3072] (f32 FMA)",
         BM=64, BN=128, BK=8, group_m=8, chips=["sm_90", "sm_80"]),
    dict(sg="sg_606c0e1c9184d8b4", example="bench/minigpt_mlp",
         fingerprint="606c0e1c9184d8b42d13bdd0c921345768a6b6856b78d5674f539b22dccbed1e",
         signature="(tensor<65536x3072xf32>, tensor<3072x768xf32>, tensor<768xf32>, tensor<65536x768xf32>) -> tensor<65536x768xf32>",
         kind="f32_simt", M=65536, N=768, K=3072, a=0, b=[1], bias=2, res=3,
         epilogue="bias_residual", product="A[65536,3072] @ B[3072,768] (f32 FMA)",
         BM=64, BN=64, BK=8, KS=2, group_m=8, chips=["sm_90", "sm_80"]),
]


# sm_90a variants (wgmma.mma_async): same math, built for sm_90a only.
# (sg, overrides of the base entry)
WGMMA_VARIANTS = [
    ("sg_439a925e4900df20", dict(WGS=2, BN=256, stages=4, group_m=8)),
    # The MLP down-projection (4096 x 768 x 3072): 128 x 192 TMA-fed tiles,
    # 4 x 32 = 128 CTAs in one wave on 132 SMs (128 x 128 makes 192 tiles:
    # 1.45 waves; split-K by clusters lost 7% there). H200, 2026-11-25
    # (bench/tma/splitk-device.sh): 0.0370 ms against cuBLAS's 0.0373 and
    # 0.0611 for the cp.async-fed 2-warpgroup kernel it replaces.
    ("sg_5cdc21b0bac363b8", dict(kind="bf16_wgmma_tma", BN=192, stages=4, pingpong=0, persistent=1, group_m=8)),
    # SwiGLU and GEMM+bias+GELU (issue 8's benchmark): the TMA-fed kernels of
    # gemm_wgmma_tma.py (TMA_VARIANTS' tma-pp128 and tma-coop-g16): on the
    # H200 2.879 and 3.448 ms against 3.203 and 3.924 for the cp.async-fed
    # warp-specialized kernel of gemm_wgmma_ws.py they replace (bench/tma/,
    # 2026-11-24; bench/gpu/prepare.sh times that one as "ours alt").
    ("sg_74ede17e00bf0352", dict(kind="bf16_wgmma_tma", BM=128, BN=64, stages=4, pingpong=1, group_m=8)),
    ("sg_6c02d079e63ba7a7", dict(WGS=2, BN=256, stages=4, group_m=8)),
    ("sg_e0d727355adf3ba8", dict(WGS=2, BN=64, stages=4, group_m=8)),
    ("sg_89b05da5eb3c1a6b", dict(kind="bf16_wgmma_tma", BN=256, stages=4, pingpong=0, persistent=1, group_m=16)),
    # The suite's exact f32 GEMMs (GEMM+ReLU, the MiniGPT MLP's two): 3xTF32 on
    # TMA-fed wgmma (gemm_wgmma_tma.py "3xTF32 mode"), cooperative 128x128,
    # 3 stages, per k-tile promotion. On the H200 (bench/tma/f32x3-device.sh,
    # 2026-11-24) 1.512 / 3.616 / 3.442 ms against cuBLAS SGEMM's 2.723 /
    # 11.141 (GEMM + torch's GELU) / 6.797, with an error against float64
    # below SGEMM's (normwise 5.3e-7 against 2.3e-6 at K 8192). The SIMT
    # kernels stay the sm_90 / sm_80 ones.
    ("sg_5beaf48efb3a6ac0", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[1024,8192] @ B[8192,8192] (exact f32: 3xTF32 wgmma)")),
    ("sg_ab992c66808cc4c2", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[65536,768] @ B[768,3072] (exact f32: 3xTF32 wgmma)")),
    ("sg_606c0e1c9184d8b4", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[65536,3072] @ B[3072,768] (exact f32: 3xTF32 wgmma)")),
    # The MiniGPT block's four f32 GEMMs (1024 rows): the same kernel kind.
    # Their SIMT entries, N and K fixed, outranked the 3xTF32 templates on
    # sm_90a at other row counts (held-out 017_minigpt_mlp_r512: 2.45x /
    # 1.21x slower than torch.compile, bench/NOTES.md, session 23); their
    # sm_90a table entries (build.py, M free) now come from these.
    ("sg_775f56ec869d4b28", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[1024,768] @ B[768,2304] (exact f32: 3xTF32 wgmma)")),
    ("sg_1c6bf422e56f7cc7", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[1024,768] @ B[768,768] (exact f32: 3xTF32 wgmma)")),
    ("sg_208fdd59011a4518", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[1024,768] @ B[768,3072] (exact f32: 3xTF32 wgmma)")),
    ("sg_36d4248ce34e0c94", dict(kind="f32x3_wgmma_tma", BN=128, stages=3, pingpong=0, persistent=1, group_m=8,
                                 product="A[1024,3072] @ B[3072,768] (exact f32: 3xTF32 wgmma)")),
]


# TMA-fed variants of the two bf16 GEMMs of the suite (issue 16);
# kernels/handwritten/tma/gen_tma.py writes them to kernels/handwritten/tma/
# as <sg>.<tag>.sm90a.mlir. The measured best of each (SwiGLU tma-pp128,
# GEMM+bias+GELU tma-coop-g16) is the shipped sm_90a kernel (WGMMA_VARIANTS).
# (sg, tag, overrides of the base entry)
TMA_VARIANTS = [
    # H100, 2026-11-24 (bench/tma/NOTES-draft.md): ping-pong runs at 4 stages
    # and loses 30-50% at 3, 5 or 6 (cause not found yet); 4 it is.
    ("sg_89b05da5eb3c1a6b", "tma-coop", dict(BN=256, stages=4, pingpong=0, persistent=1)),
    ("sg_89b05da5eb3c1a6b", "tma-coop-g16", dict(BN=256, stages=4, pingpong=0, persistent=1, group_m=16)),
    ("sg_89b05da5eb3c1a6b", "tma-coop-np", dict(BN=256, stages=4, pingpong=0, persistent=0)),
    ("sg_89b05da5eb3c1a6b", "tma-pp128", dict(BM=128, BN=128, stages=4, pingpong=1)),
    ("sg_89b05da5eb3c1a6b", "tma-pp64", dict(BM=64, BN=256, stages=4, pingpong=1)),
    ("sg_74ede17e00bf0352", "tma-coop", dict(BN=128, stages=4, pingpong=0, persistent=1)),
    ("sg_74ede17e00bf0352", "tma-coop-g16", dict(BN=128, stages=4, pingpong=0, persistent=1, group_m=16)),
    ("sg_74ede17e00bf0352", "tma-pp128", dict(BM=128, BN=64, stages=4, pingpong=1)),
    ("sg_74ede17e00bf0352", "tma-pp64", dict(BM=64, BN=128, stages=4, pingpong=1)),
]


def all_configs():
    """(file name, cfg) of every kernel: the sm_90/sm_80 default of each
    subgraph, then the sm_90a wgmma variants of the bf16 ones."""
    out = []
    for cfg in SUBGRAPHS:
        out.append((cfg["sg"] + ".mlir", dict(cfg)))
    for sg, ov in WGMMA_VARIANTS:
        cfg = dict(next(c for c in SUBGRAPHS if c["sg"] == sg))
        for k in ("BM", "BK", "WM", "WN", "minctasm"):
            cfg.pop(k, None)
        cfg.update(kind="bf16_wgmma", chips=["sm_90a"])
        cfg.update(ov)
        out.append((sg + ".sm90a.mlir", cfg))
    return out


def generate_sentinel(cfg, shipped_m):
    """The text of a kernel for kernels/table/build.py's sentinel entries (M
    free, N and K fixed: the table tries them before the general templates
    of kernels/table/gemm_any.py). For the exact f32 kernels
    (f32x3_wgmma_tma) the entry is admitted only at M >= the shipped row
    count or where no split-K tiling of gemm_any.py's *_0x3tma entry fits
    one wave (128 x 128 tiles x 2 CTAs over 132): below that the general
    entry, which times its split-K tilings beside this same default
    tiling, takes the size (session 25; held-out 017_minigpt_mlp_r512 ran
    this entry's 24 CTAs, 2.20x torch.compile). At the shipped size the
    entry and its kernel are what they were.

    Where split-K by 2 fits one wave at the shipped size itself (N = 768
    at 1024 rows: 48 tiles, 96 CTAs), the entry also offers it as tune
    alternative 1 (TILE 108; gemm_wgmma_tma.py splitk = 2, vacc = 1),
    admitted where its grid fits one wave and the row tiles make whole
    GROUP_M groups (this unmasked kernel's raster assumes them): at
    1024 x 768 x 3072 on the H200 0.0839 ms against the shipped tiling's
    0.1506 (bench/tma/f32-splitk-device.sh, 2026-11-25). Variant 0 (TILE 8,
    what a build without a GPU takes) is the shipped kernel."""
    c = dict(cfg)
    if c["kind"] == "f32x3_wgmma_tma" and not is_sym(c["M"]):
        M = c["M"]
        gn = (c["N"] + 127) // 128
        c["require"] = "%d >= %d || (%d + 127) / 128 * %d * 2 > 132" % (M, shipped_m, M, gn)
        gm_ship = (shipped_m + 127) // 128
        if gm_ship * gn * 2 <= 132 and gm_ship % c["group_m"] == 0 and c.get("BN") == 128:
            a = dict(c, persistent=0, splitk=2, vacc=1)
            admit = "(%d / 128) %% %d == 0 && (%d + 127) / 128 * %d * 2 <= 132" % (M, c["group_m"], M, gn)
            return generate_alternatives([(c, None), (a, admit)])[1]
    return generate(c)[1]


def generate(cfg):
    pct = lambda lst: [a.replace("%%", "%") for a in lst]
    assert not cfg.get("b_nk") or cfg["kind"] in ("f32_simt", "tf32_mma", "tf32_wgmma_tma",
                                                      "f32x3_wgmma_tma"), \
        "b_nk: f32_simt, tf32_mma, tf32_wgmma_tma, f32x3_wgmma_tma only"
    if cfg["kind"] == "bf16_mma":
        cfg.setdefault("assumptions", pct(BF16_ASSUME))
        return gen_bf16_mma(cfg)
    if cfg["kind"] == "bf16_wgmma":
        cfg.setdefault("assumptions", pct(BF16_ASSUME) + [
            "sm_90a (wgmma); the dynamic shared memory window can be aligned to 1024 B (1 KiB slack reserved)"])
        return gen_bf16_wgmma(cfg)
    if cfg["kind"] == "bf16_wgmma_ws":
        # warp-specialized wgmma (producer warpgroup + mbarriers): gemm_wgmma_ws.py
        import gemm_wgmma_ws
        cfg.setdefault("assumptions", pct(BF16_ASSUME) + [
            "sm_90a (wgmma); the dynamic shared memory window can be aligned to 1024 B (1 KiB slack reserved)"])
        return gemm_wgmma_ws.generate(cfg, sys.modules[__name__])
    if cfg["kind"] == "tf32_mma":
        # TF32 tensor cores (the pass option tf32=1 only): gemm_tf32_mma.py
        import gemm_tf32_mma
        cfg.setdefault("assumptions", pct(F32_ASSUME))
        return gemm_tf32_mma.generate(cfg, sys.modules[__name__])
    if cfg["kind"] == "bf16_wgmma_tma":
        # TMA-fed warp-specialized wgmma (tensor-map arguments): gemm_wgmma_tma.py
        import gemm_wgmma_tma
        cfg["assumptions"] = [
            "sm_90a (wgmma, TMA); the dynamic shared memory window can be aligned to 1024 B (1 KiB slack reserved)",
            "any M; N and K multiples of 8 (16-byte rows for the tensor maps), M >= BM, N >= 64, K >= 64; "
            "TMA zero-fills the out-of-bounds parts of the boxes, the epilogue masks partial tiles",
            "buffers 16-byte aligned (contract guarantee) for the tensor maps and the 4-byte stores"]
        return gemm_wgmma_tma.generate(cfg, sys.modules[__name__])
    if cfg["kind"] == "tf32_wgmma_tma":
        # TF32 wgmma fed by TMA (the pass option tf32=1 only; B stored [N, K]): gemm_wgmma_tma.py
        import gemm_wgmma_tma
        cfg.setdefault("assumptions", [
            "sm_90a (wgmma, TMA); the dynamic shared memory window can be aligned to 1024 B (1 KiB slack reserved)",
            "B stored [N, K] (nn.Linear's weight): TF32 wgmma reads both operands K-major",
            "any M; N and K multiples of 4 (16-byte rows for the tensor maps), M >= BM, N >= BN, K >= 32; "
            "TMA zero-fills the out-of-bounds parts of the boxes, the epilogue masks partial tiles",
            "buffers 16-byte aligned (contract guarantee) for the tensor maps and the 8-byte stores"])
        return gemm_wgmma_tma.generate(cfg, sys.modules[__name__])
    if cfg["kind"] == "f32x3_wgmma_tma":
        # exact f32 on sm_90a: the 3xTF32 split on TMA-fed wgmma (B [N, K] or [K, N]): gemm_wgmma_tma.py
        import gemm_wgmma_tma
        cfg.setdefault("assumptions", [
            "sm_90a (wgmma, TMA); the dynamic shared memory window can be aligned to 1024 B (1 KiB slack reserved)",
            "B stored [N, K] (b_nk) or [K, N]; the split pass leaves both operands K-major in shared memory",
            "any M; N and K multiples of 4 (16-byte rows for the tensor maps), M >= 128, N >= %s, K >= 32; "
            "TMA zero-fills the out-of-bounds parts of the boxes (zeros split into zeros), the epilogue masks "
            "partial tiles" % ("BN" if cfg.get("b_nk") else "64"),
            "buffers 16-byte aligned (contract guarantee) for the tensor maps and the 8-byte stores"])
        return gemm_wgmma_tma.generate(cfg, sys.modules[__name__])
    if cfg["kind"] == "f32_cpasync":
        # f32 FMA GEMM fed by a cp.async ring, no register staging: gemm_f32_cpasync.py
        import gemm_f32_cpasync
        cfg.setdefault("assumptions", pct(F32_ASSUME))
        return gemm_f32_cpasync.generate(cfg, sys.modules[__name__])
    cfg.setdefault("assumptions", pct(F32_ASSUME))
    return gen_f32_simt(cfg)


# --------------------------------------------------------------------------
# Alternative tilings in one template (the pattern table's small-M forms).
# --------------------------------------------------------------------------
def _choose(sel, vals):
    """A value that depends on the alternative (sel: its index as an
    expression): the number itself where all alternatives agree, else the
    placeholder sum of (sel == i) * value_i."""
    raw = [str(v)[2:-2] if isinstance(v, str) and v.startswith("{{") else str(v) for v in vals]
    if len(set(raw)) == 1:
        return vals[0]
    return "{{%s}}" % " + ".join("(%s == %d) * %s" % (sel, i, par(r)) for i, r in enumerate(raw))


def generate_alternatives(alts, knob="TILE", group_m=None):
    """One gpu.module whose kernel holds several tilings of the same GEMM as
    alternatives, selected by one tune knob, so that the pass builds,
    verifies and times every alternative the requirements keep, and keeps
    the fastest.

    The knob (one: a template's free sizes are knobs too, and a text may
    declare at most 4) encodes the alternative and the grouped raster's
    GROUP_M: TILE = 100 * alternative + GROUP_M. The default tiling's values
    are its GROUP_M values (8, 4, 16, 1: TILE = 8 is the first variant, the
    one a build without a GPU uses) under its own requirements; alternative
    i > 0 has the one value 100 * i + the default's configured GROUP_M.
    Inside the placeholders GROUP_M reads (TILE % 100). The kernel body is
    an scf.if chain on the constant {{TILE / 100}}: after instantiation a
    literal, so LLVM's O3 keeps the selected body alone and each variant
    compiles to exactly its configuration's kernel. The launch sizes and the
    dynamic shared memory are placeholders that pick the configuration's
    numbers.

    alts: [(cfg, admit)], the first the default tiling (admit None); each
    other one admitted where the expression admit holds (e.g. `S0 <= 128`;
    "" or None: wherever its own size requirements hold), with its own size
    requirements. Every configuration must have the same signature.

    group_m: the default tiling's GROUP_M values to time (a sublist of the
    kernel's, its configured value first); None: all of them."""
    parts = []
    maps = []
    for cfg, admit in alts:
        c = dict(cfg)
        c["_parts"] = {}
        _, text, _ = generate(c)
        parts.append((c, c["_parts"], admit))
        # TMA kinds: the tensor-map arguments and attribute the generator
        # adds after finish(); one kernel, so every alternative's must match
        maps.append((re.findall(r"(%\w+): (!nvgpu\.tensormap\.descriptor<tensor = memref<[^>]*>[^>]*>)", text),
                     re.findall(r"llm_fuse\.tensor_maps = array<i32: [^>]*>", text)))
    assert all(m == maps[0] for m in maps), "alternatives with different tensor maps: %s" % maps
    c0, p0, _ = parts[0]
    for _, p, _ in parts:
        assert all(k == "GROUP_M" for k, _, _ in p["em"].tune), p["em"].tune
    gm_knob = p0["em"].tune[0] if p0["em"].tune else None
    g0 = gm_knob[1][0] if gm_knob else 0
    assert all(0 <= v < 100 for v in (gm_knob[1] if gm_knob else []))
    values = list(gm_knob[1]) if gm_knob else [0]
    if group_m is not None:
        assert gm_knob and group_m[0] == g0 and all(v in values for v in group_m), (group_m, values)
        values = list(group_m)
    values += [100 * i + g0 for i in range(1, len(parts))]
    sel = "%s / 100" % knob
    gsub = "(%s %% 100)" % knob

    def ph(text):
        """GROUP_M inside the placeholders of a line -> (TILE % 100)"""
        return re.sub(r"\{\{.*?\}\}", lambda m: re.sub(r"\bGROUP_M\b", gsub, m.group(0)), text)

    lines = []
    lines.append("// Hand-written kernel for subgraph @%s (example %s), generated by" % (c0["sg"], c0["example"]))
    lines.append("// kernels/handwritten/gen_gemm.py (generate_alternatives) -- edit the generator, not this file.")
    lines.append("//")
    lines.append("// signature: %s" % c0["signature"])
    lines.append("// math: C[%s,%s] = %s;" % (c0["M"], c0["N"], c0["product"]))
    lines.append("//       %s" % EPILOGUES[c0["epilogue"]][1])
    lines.append("gpu.module @%s {" % c0["sg"])
    lines.append("  // %s = 100 * alternative + GROUP_M (the grouped raster's; GROUP_M is (%s) below):" % (knob, gsub))
    for i, (c, p, admit) in enumerate(parts):
        lines.append("  // alternative %d (%s, %s): %s" % (i, c["kind"], "where " + admit if admit else
                                                            "default" if i == 0 else "always", p["header"][0]))
        for h in p["header"][1:]:
            lines.append("  //   " + h)
    lines.append("  // llm-fuse.tune %s = %s" % (knob, ", ".join(str(v) for v in values)))
    for i, (c, p, admit) in enumerate(parts):
        conj = [re.sub(r"\bGROUP_M\b", gsub, r) for k, v, r in p["em"].tune] if i == 0 else []
        conj += list(getattr(p["em"], "reqs", []))
        if admit:
            conj.append(admit)
        if conj:
            lines.append("  // llm-fuse.tune-require %s != %d || %s" % (
                sel, i, " && ".join("(%s)" % x for x in conj)))
    # helpers: one copy of each text; a name two different texts share is
    # renamed in the later configuration (@epilogue -> @epilogue_t1)
    seen = {}
    bodies = []
    for i, (c, p, admit) in enumerate(parts):
        body = [ph(x[4:] if x.startswith("    ") else x) for x in p["em"].body(4)]
        assert body[-1].strip() == "gpu.return", body[-1]
        body = body[:-1]
        for h in p["helpers"]:
            name = re.search(r"func\.func private @(\w+)\(", h).group(1)
            if name in seen and seen[name] != h:
                new = "%s_t%d" % (name, i)
                h = h.replace("@%s(" % name, "@%s(" % new)
                body = [x.replace("@%s(" % name, "@%s(" % new) for x in body]
                name = new
            if name not in seen:
                seen[name] = h
                lines.append(h)
        bodies.append(body)
    ins, outs, names = p0["ins"], p0["outs"], p0["names"]
    args = ", ".join("%s: %s" % (nm, memref_ty(shape, dt)) for (shape, dt), nm in zip(ins + outs, names))
    args += "".join(", %s: %s" % m for m in maps[0][0])
    lines.append("  gpu.func @%s(%s) kernel" % (p0["kname"], args))
    L = [p["launch"] for _, p, _ in parts]
    selp = "%s / 100" % knob
    block = [_choose(selp, [l["block"][d] for l in L]) for d in range(3)]
    grid = [_choose(selp, [l["grid"][d] for l in L]) for d in range(3)]
    smem = _choose(selp, [l["smem"] for l in L])
    if maps[0][1]:
        lines.append("      attributes {%s," % maps[0][1][0])
        lines.append("                  known_block_size = array<i32: %s, %s, %s>," % tuple(block))
    else:
        lines.append("      attributes {known_block_size = array<i32: %s, %s, %s>," % tuple(block))
    lines.append("                  known_grid_size = array<i32: %s, %s, %s>," % tuple(grid))
    if any(l.get("cluster") for l in L):
        # split-K alternatives (clusters); 1 x 1 x 1 for the others, which the builder drops
        cluster = [_choose(selp, [(l.get("cluster") or [1, 1, 1])[d] for l in L]) for d in range(3)]
        lines.append("                  known_cluster_size = array<i32: %s, %s, %s>," % tuple(cluster))
    mins = [c.get("minctasm") or 0 for c, _, _ in parts]
    extra = ""
    if any(mins):
        # .minnctapersm 1 (where a configuration sets none) caps nothing
        extra = ", nvvm.minctasm = %s : i32" % _choose(selp, [m or 1 for m in mins])
    lines.append("                  llm_fuse.dynamic_shared_memory = %s : i32%s} {" % (smem, extra))
    k = knob.lower()
    lines.append("    %%lf_%s = arith.constant {{%s}} : index" % (k, sel))

    def chain(js, indent):
        """alternative js[0] if the knob says so, else the chain of the rest;
        the default in the innermost else"""
        pad = " " * indent
        if not js:
            return [pad + x if x else x for x in bodies[0]]
        j = js[0]
        out = [pad + "%%lf_%s_%d = arith.constant %d : index" % (k, j, j),
               pad + "%%lf_is_%d = arith.cmpi eq, %%lf_%s, %%lf_%s_%d : index" % (j, k, k, j),
               pad + "scf.if %%lf_is_%d {" % j]
        out += [pad + "  " + x if x else x for x in bodies[j]]
        out.append(pad + "} else {")
        out += chain(js[1:], indent + 2)
        out.append(pad + "}")
        return out

    lines += chain(list(range(len(parts) - 1, 0, -1)), 4)
    lines.append("    gpu.return")
    lines.append("  }")
    lines.append("}")
    return p0["kname"], "\n".join(lines) + "\n", dict(block=block, grid=grid, smem=smem)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out-dir", default=here)
    ap.add_argument("--only", nargs="*", help="file names or subgraph names")
    ap.add_argument("--set", nargs="*", default=[],
                    help="override a tiling parameter for --only, e.g. BN=256 WN=64")
    ap.add_argument("--no-manifest", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a checked-in file differs from what would be generated")
    args = ap.parse_args()
    outputs = {}
    manifest = []
    for fname, cfg in all_configs():
        if args.only and cfg["sg"] not in args.only and fname not in args.only:
            continue
        for kv in args.set:
            k, v = kv.split("=")
            cfg[k] = int(v) if v.lstrip("-").isdigit() else v
            if k == "kind" and v == "bf16_wgmma_ws":
                cfg["chips"] = ["sm_90a"]
        kname, text, launch = generate(cfg)
        outputs[fname] = text
        manifest.append(dict(subgraph=cfg["sg"], fingerprint=cfg["fingerprint"], example=cfg["example"],
                             signature=cfg["signature"], file=fname, kernel=kname, chips=cfg["chips"]))
    if not args.no_manifest:
        outputs["manifest-gemm.json"] = json.dumps(manifest, indent=2) + "\n"
    if args.check:
        stale = []
        for fname, text in sorted(outputs.items()):
            path = os.path.join(args.out_dir, fname)
            if not os.path.exists(path) or open(path).read() != text:
                stale.append(fname)
        for fname in stale:
            print("STALE %s (rerun kernels/handwritten/gen_gemm.py)" % fname)
        print("%d file(s) checked, %d stale" % (len(outputs), len(stale)))
        sys.exit(1 if stale else 0)
    os.makedirs(args.out_dir, exist_ok=True)
    for fname, text in outputs.items():
        with open(os.path.join(args.out_dir, fname), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
