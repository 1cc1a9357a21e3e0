#!/usr/bin/env python3
"""colred_any.py - the table's templates for reductions over the LEADING
dimension(s) (issue 15: "reductions over the last or the leading
dimension"), for any sizes and each float type.

kernels/table/build.py imports this module and writes one entry per
(family, element type, shape form) that `templates()` yields. The families
are the models of examples/bench/col*.mlir:

  colsum     y[j] = sum_i x[i, j]              (a bias gradient, x.sum(0))
  colmean    y[j] = (sum_i x[i, j]) / R        (x.mean(0): sum, then divf)
  colmax     y[j] = max_i x[i, j]  (from -inf, NaN propagates; x.amax(0))
  colsumsq   y[j] = sum_i x[i, j]^2            (prologue inside the body)
  coldiff    s[j] = sum_i (x[i, j] - y[i, j])  (an elementwise generic
                                                before the reduction)
  colsum3    y[t, n] = sum_b x[b, t, n]        ([B, T, N] -> [T, N])
  colsum_bt  y[n] = sum_{b, t} x[b, t, n]      ([B, T, N] -> [N])

each in f32, bf16 and f16 (the f32 model rewritten: the 16-bit IR then
accumulates in 16 bits, as torch-mlir's aten.sum.dim_IntList lowering does,
its init and addf in the result type; the kernels accumulate in f32, as
torch does, and the verifier judges them against the opmath reference,
docs/verification.md "16-bit accumulation"). The rank-2 families come in
four shape forms, each its own pattern key (docs/pattern-key.md): `any`
(R x N, R != N), `square` (R = N) and `col1` (R x 1 -> 1: the unit dimension
stays in the key) and `row1` (1 x N). The rank-3 ones in `any` (B, T, N
distinct) and `b1` (B = 1).

One kernel serves every form. The reduction is seen as rows x columns: R
rows (B, or B * T for colsum_bt) of C contiguous columns (N, or T * N for
colsum3; a rank-3 operand is indexed [b, t, n] from the view's row and column):

  * a CTA owns a strip of CW = TX * V columns (V the largest of 8 (4 for
    f32), 4, 2, 1 dividing the innermost size, so a 16-byte vector load per
    thread and row at most, coalesced along the contiguous dimension); its
    BS threads are TX columns x TY = BS / TX row lanes; thread (tx, ty)
    walks rows ty, ty + TY, ... of its CTA's row range, UN rows (4, 8 or
    16) per loop step without a guard (the loads in flight together), then
    the rest as UN more loads of clamped rows, masked (all in flight too:
    a loop over the rest paid one memory latency per row); columns past C
    read the last chunk and store nothing; with NT the loads are
    streaming loads (`nontemporal`: L1 and L2 evict-first, so that they
    leave the L2's other lines, dirty ones included, alone);
  * the TY partials of a CTA are summed (or maxed) by a fixed tree in
    shared memory (halving steps, a barrier each);
  * SPLIT > 1 (a knob) splits the rows across the SPLIT CTAs of a
    thread-block cluster (known_cluster_size (SPLIT, 1, 1), sm_90): rank r
    takes rows [r R / SPLIT, (r + 1) R / SPLIT); after a cluster barrier
    rank 0 adds the ranks' partials in rank order through distributed
    shared memory (nvvm.mapa + ld.shared::cluster); a second cluster
    barrier keeps every CTA's shared memory alive until it is read.
    SPLIT = 1: no cluster barrier, row lane 0 stores its tree value.
    No atomics: the result is the same on every run.

Knobs the pass times on the GPU (tune_lines(), table_rules()): CFG picks
TX (32, 8, or 1 for very narrow tensors, with blocks of 1024 threads), the
block size (256 or 512), UN and MC (nvvm.minctasm: the CTAs an SM must
hold, which sets ptxas's register budget); NT (streaming loads) follows
from CFG and the sizes; SPLIT is 1, 4 or 8, admitted while the previous
split leaves fewer than 1056 CTAs (8 per SM on 132 SMs) and every CTA
keeps at least two rows per thread, and a split that leaves SMs idle only
where the next split is not admitted (CFG 4 excepted, and CFG 3 from 66
CTAs on: 96 of them were the fastest at 432 x 256 x 768 and 7168 x 3072
f32, bench/NOTES.md "Session 29: ..."). The parameters are
constants of each variant: the branches they select (`scf.if` on a
constant) are folded by the builder before the lowering. On an H200
(bench/NOTES.md "Session 25: leading-dimension reductions", "Session 26:
..." and "Session 27: ..."): the split is what makes narrow or short
reductions fast; what a big one needs is loads in flight: ptxas, left to
itself, gives a 256-thread kernel 32 registers and so keeps only a few of
its UN loads in flight whatever UN is; with MC = 2 (128 registers) 16
rows of loads a thread are in flight (14500 x 3072 f32: 0.0550 -> 0.0509
ms; 575 x 256 x 768 f16: 0.0692 -> 0.0648); 512-byte row segments (TX 32)
beat 128-byte ones where the strips stay many; streaming loads help where
the L2 holds dirty lines and a row is whole 128-byte lines, and cost where
neighbouring strips share lines (rows of 2000 or 4664 bytes) or the
tensor is big (above ~300 MB plain loads were faster). Accumulation in
f32; the result is stored in the subgraph's type (a mean divides the f32
sum by R first). Clusters need sm_90: the entries are for sm_90 and
sm_90a.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
from heldout import dtype_rewrite, size_rewrite  # noqa: E402
from rows_any import Emitter  # noqa: E402  (SSA text for one kernel body)

ARCHS = ["sm_90", "sm_90a"]
SMEM = "#gpu.address_space<workgroup>"
NEG_INF = "0xFF800000"
UMIN, UMAX = 4, 16  # rows per thread in flight: UN, from UMIN to UMAX
VMAX = {"bf16": 8, "f16": 8, "f32": 4}

# name: (example, its rows, its columns, rank-3 batch or None, kind,
#        inputs, float constant of the row count?)
FAMILIES = {
    "colsum": ("examples/bench/colsum.mlir", 8192, 3072, None, "sum", ["x"], False),
    "colmean": ("examples/bench/colmean.mlir", 8192, 3072, None, "mean", ["x"], True),
    "colmax": ("examples/bench/colmax.mlir", 8192, 3072, None, "max", ["x"], False),
    "colsumsq": ("examples/bench/colsumsq.mlir", 8192, 3072, None, "sumsq", ["x"], False),
    "coldiff": ("examples/bench/coldiff.mlir", 8192, 3072, None, "diff", ["x", "y"], False),
    # rank 3: (B, T, N) = (64, 256, 768) in the example
    "colsum3": ("examples/bench/colsum3.mlir", 64, 768, 256, "sum", ["x"], False),
    "colsum_bt": ("examples/bench/colsum_bt.mlir", 64, 768, 256, "sum", ["x"], False),
}
RANK3_VIEW = {"colsum3": "b_tn", "colsum_bt": "bt_n"}
# The sizes each form is outlined at (distinct from each other and from
# the models' constants, so that sizes map back to roles by value).
FORMS2 = {"any": (1000, 776), "square": (776, 776), "col1": (1000, 1), "row1": (1, 776)}
FORMS3 = {"any": (12, 100, 776), "b1": (1, 100, 776)}  # B, T, N
DTYPES = ["bf16", "f16", "f32"]


# Tokens in the kernel text, replaced by expressions of the pattern's
# symbols in render(): RR rows, CC columns (of the 2-D view), NN the
# innermost size (V divides it), NV = CC / V the column vectors, the shapes
# of the operands, and the kernel's parameters (RULES): TX threads across
# the columns, BS threads per block, UN rows per thread in flight (UMIN ..
# UMAX), NT streaming loads (0 or 1).
TY = "(BS / TX)"                      # row lanes
NCB = "((NV - 1) / TX + 1)"           # column strips (V divides CC)
# The table's: one knob CFG picks the column width, block size, unroll,
# register budget and load policy, SPLIT the cluster split (kernels
# measured on the H200, bench/NOTES.md "Session 26: leading-dimension
# reductions" and "Session 27: ..."):
#   CFG 0: TX 32, 256 threads, UN 4             (very wide, few rows)
#   CFG 1: TX 8, 256 threads, UN 4              (the general one)
#   CFG 2: TX 8, 512 threads, UN 8              (many rows per CTA)
#   CFG 3: TX 8, 256 threads, UN 16, MC 2       (16 loads in flight a thread)
#   CFG 4: TX 32, 256 threads, UN 16, MC 2      (the same, 32 column vectors
#                                                a CTA: 512-byte row segments)
# and, under 16 column vectors (NV < 16), CFG 1 and 4 are TX 1 with 1024
# threads (one column vector a thread, the rows over 1024 lanes; UN 4 and
# 8). MC is the CTAs an SM must hold (nvvm.minctasm): ptxas then gives a
# thread up to 65536 / (MC * BS) registers; left to itself it keeps to 32
# or so and holds only a few of the UN loads in flight (CFG 3 and 4 at 128
# registers: 16 loads; CFG 0 and 1 six CTAs of 256 threads an SM, 40
# registers: at eight, 32, some spilled; CFG 2 three CTAs an SM). NT
# (streaming loads) is a rule, not a knob: CFG 3 and 4 stream where a row
# is a whole number of 128-byte lines (CC * elt % 128 == 0: otherwise
# neighbouring strips share the lines that evict-first drops) and the
# inputs are under 320 MB (above, the write-back of the flush's
# dirty lines is a small part and plain loads were faster).


def table_rules(dtype, nin):
    """the table's parameters (RULES) for an element type and number of
    inputs: expressions of CFG, SPLIT and the sizes"""
    elt = 4 if dtype == "f32" else 2
    nt = "(CFG >= 3) * (CC %% %d == 0) * (RR * CC < %d)" % (128 // elt, 320000000 // (elt * nin))
    return {
        "TX": "(32 * (CFG == 0) + (CFG != 0) * (1 + (NV >= 16) * (7 + 24 * (CFG == 4))))",
        "BS": "(1024 - (NV >= 16) * (768 - 256 * (CFG == 2)))",
        "UN": "(4 + 4 * (CFG >= 2) + 8 * (CFG >= 3) * (NV >= 16))",
        "NT": "(%s)" % nt,
        "MC": "((CFG < 2) * 1536 / BS + (CFG == 2) * 3 + (CFG >= 3) * (2 - (NV < 16)))",
    }


RULES = table_rules("f32", 1)  # (f32, one input; render() uses table_rules)


class Kernel:
    def __init__(self, kind, t, inputs, view, umax=UMAX, mc=False):
        self.kind, self.t, self.inputs, self.view = kind, t, inputs, view
        self.mc = mc  # nvvm.minctasm = MC (ptxas: at least MC CTAs an SM)
        self.umax = umax  # the most rows per thread in flight (UN <= umax)
        self.e = Emitter()

    @property
    def VT(self):
        return "vector<{{V}}x%s>" % self.t

    VF = "vector<{{V}}xf32>"

    def in_type(self):
        if self.view is None:
            return "memref<{{RR}}x{{CC}}x%s>" % self.t
        return "memref<{{B}}x{{T}}x{{NN}}x%s>" % self.t

    def out_type(self):
        if self.view == "b_tn":  # [B, T, N] -> [T, N]
            return "memref<{{T}}x{{NN}}x%s>" % self.t
        return "memref<{{CC}}x%s>" % self.t

    def at(self, row, col):
        """The indices of (row, col) of the 2-D view RR x CC in an input
        (a rank-3 one is indexed as it is: memref.collapse_shape there
        broke the workgroup memory space's lowering in the builder)."""
        e = self.e
        if self.view is None:
            return "%s, %s" % (row, col)
        if self.view == "b_tn":  # columns t * N + n
            nn = e.const("{{NN}}", "index")
            return "%s, %s, %s" % (row, e.op("arith.divui %s, %s : index" % (col, nn), "t"),
                                   e.op("arith.remui %s, %s : index" % (col, nn), "n"))
        tt = e.const("{{T}}", "index")  # rows b * T + t
        return "%s, %s, %s" % (e.op("arith.divui %s, %s : index" % (row, tt), "b"),
                               e.op("arith.remui %s, %s : index" % (row, tt), "t"), col)

    def to_f32(self, v):
        if self.t == "f32":
            return v
        return self.e.op("arith.extf %s : %s to %s" % (v, self.VT, self.VF), "f")

    def text(self, kname, header):
        e = self.e
        red = self.kind == "max"
        comb = "arith.maximumf" if red else "arith.addf"
        mt = self.in_type()
        tid = e.op("gpu.thread_id x", "tid")
        bid = e.op("gpu.block_id x", "bid")
        c0, c1 = e.const(0, "index"), e.const(1, "index")
        cTX = e.const("{{TX}}", "index")
        cTY = e.const("{{%s}}" % TY, "index")
        cV = e.const("{{V}}", "index")
        cS = e.const("{{SPLIT}}", "index")
        cR = e.const("{{RR}}", "index")
        tx = e.op("arith.remui %s, %s : index" % (tid, cTX), "tx")
        ty = e.op("arith.divui %s, %s : index" % (tid, cTX), "ty")
        rank = e.op("arith.remui %s, %s : index" % (bid, cS), "rank")
        strip = e.op("arith.divui %s, %s : index" % (bid, cS), "strip")
        c0s = e.op("arith.muli %s, %s : index" % (strip, e.const("{{TX * V}}", "index")), "c0s")
        col = e.op("arith.addi %s, %s : index" % (c0s, e.op("arith.muli %s, %s : index" % (
            tx, cV), "txv")), "col")
        colok = e.op("arith.cmpi ult, %s, %s : index" % (col, e.const("{{CC}}", "index")), "colok")
        colc = e.op("arith.minui %s, %s : index" % (col, e.const("{{CC - V}}", "index")), "colc")
        lo = e.op("arith.divui %s, %s : index" % (e.op("arith.muli %s, %s : index" % (
            rank, cR), "rr"), cS), "lo")
        hi = e.op("arith.divui %s, %s : index" % (e.op("arith.muli %s, %s : index" % (
            e.op("arith.addi %s, %s : index" % (rank, c1), "r1"), cR), "rr"), cS), "hi")
        xs = ["%" + n for n in self.inputs]
        ident = e.const("dense<%s>" % (NEG_INF if red else "0.000000e+00"), self.VF)

        nt = e.const("{{NT}}", "i1")

        def load(x, ix):
            """NT = 1: a nontemporal load, which the builder makes an L2
            evict-first streaming load (docs/kernel-contract.md, "Streaming
            loads"); the constant branch is folded before the lowering"""
            r = e.fresh("ld")
            e.emit("%s = scf.if %s -> (%s) {" % (r, nt, self.VT))
            for attr in (" {nontemporal = true}", ""):
                e.emit("  %s = vector.load %s[%s]%s : %s, %s" % (
                    r + ("n" if attr else "p"), x, ix, attr, mt, self.VT))
                e.emit("  scf.yield %s : %s" % (r + ("n" if attr else "p"), self.VT))
                if attr:
                    e.emit("} else {")
            e.emit("}")
            return r

        def value(row):
            """the prologue's f32 vector at (row, colc)"""
            ix = self.at(row, colc)
            vs = [self.to_f32(load(x, ix)) for x in xs]
            if self.kind == "sumsq":
                return e.op("arith.mulf %s, %s : %s" % (vs[0], vs[0], self.VF), "sq")
            if self.kind == "diff":
                return e.op("arith.subf %s, %s : %s" % (vs[0], vs[1], self.VF), "df")
            return vs[0]

        def guarded(u, make):
            """make()'s value, or the identity where UN <= u (a constant)"""
            if u < UMIN:
                return make()
            r = e.fresh("g")
            e.emit("%s = scf.if %s -> (%s) {" % (r, e.const("{{UN > %d}}" % u, "i1"), self.VF))
            e.indent += 2
            v = make()
            e.emit("scf.yield %s : %s" % (v, self.VF))
            e.indent -= 2
            e.emit("} else {")
            e.emit("  scf.yield %s : %s" % (ident, self.VF))
            e.emit("}")
            return r

        # main loop: groups of UN * TY rows, every thread UN rows
        step = e.const("{{UN * %s}}" % TY, "index")
        n = e.op("arith.subi %s, %s : index" % (hi, lo), "n")
        groups = e.op("arith.divui %s, %s : index" % (n, step), "ng")
        base = e.op("arith.addi %s, %s : index" % (lo, ty), "base")
        k, acc, res = e.fresh("k"), e.fresh("a"), e.fresh("acc")
        e.emit("%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (%s) {" % (
            res, k, c0, groups, c1, acc, ident, self.VF))
        e.indent += 2
        r0 = e.op("arith.addi %s, %s : index" % (base, e.op("arith.muli %s, %s : index" % (
            k, step), "ks")), "r0")
        vals = []
        for u in range(self.umax):
            def make(u=u):
                row = r0 if u == 0 else e.op("arith.addi %s, %s : index" % (
                    r0, e.const("{{%d * %s}}" % (u, TY), "index")), "ru")
                return value(row)
            vals.append(guarded(u, make))
        cur = acc
        for v in vals:
            cur = e.op("%s %s, %s : %s" % (comb, cur, v, self.VF), "s")
        e.emit("scf.yield %s : %s" % (cur, self.VF))
        e.indent -= 2
        e.emit("}")
        # tail: the rows left, fewer than UN per thread: UN loads of rows
        # clamped to the tensor, all in flight together, each masked by
        # row < hi (a serial loop paid one memory latency per row); clamped
        # to the CTA's own last row, hi - 1, a cache hit (clamped to the
        # tensor's, the rows past hi of a split were the next rank's, read
        # twice: 65536 x 64 bf16 mean at SPLIT 8, 0.0127 -> 0.0150 ms)
        t0 = e.op("arith.addi %s, %s : index" % (base, e.op("arith.muli %s, %s : index" % (
            groups, step), "gs")), "t0")
        # (hi >= 1 whenever a tail runs; max(., 0) keeps the address in the
        # tensor for a rank whose range is empty)
        rlast = e.op("arith.maxsi %s, %s : index" % (
            e.op("arith.subi %s, %s : index" % (hi, c1), "hl"), c0), "hl")
        tails = []
        for u in range(self.umax):
            def make(u=u):
                row = t0 if u == 0 else e.op("arith.addi %s, %s : index" % (
                    t0, e.const("{{%d * %s}}" % (u, TY), "index")), "tu")
                ok = e.op("arith.cmpi ult, %s, %s : index" % (row, hi), "ok")
                rc = e.op("arith.minui %s, %s : index" % (row, rlast), "rc")
                return e.op("arith.select %s, %s, %s : %s" % (ok, value(rc), ident, self.VF),
                            "m")
            tails.append(guarded(u, make))
        cur = res
        for v in tails:
            cur = e.op("%s %s, %s : %s" % (comb, cur, v, self.VF), "s")
        res2 = cur
        # the CTA's fixed tree over its TY row lanes (shared memory)
        part = e.op("memref.get_global @part : memref<{{BS * V}}xf32, %s>" % SMEM, "part")
        pt = "memref<{{BS * V}}xf32, %s>" % SMEM
        slot = e.op("arith.addi %s, %s : index" % (e.op("arith.muli %s, %s : index" % (
            ty, e.const("{{TX * V}}", "index")), "tyo"), e.op("arith.muli %s, %s : index" % (
                tx, cV), "txo")), "slot")
        e.emit("vector.store %s, %s[%s] : %s, %s" % (res2, part, slot, pt, self.VF))
        e.emit("gpu.barrier")
        cur = res2
        h = 512
        while h >= 1:
            live = e.const("{{%d < %s}}" % (h, TY), "i1")
            act = e.op("arith.andi %s, %s : i1" % (live, e.op("arith.cmpi ult, %s, %s : index" % (
                ty, e.const(h, "index")), "lt")), "act")
            r = e.fresh("t")
            e.emit("%s = scf.if %s -> (%s) {" % (r, act, self.VF))
            e.indent += 2
            o = e.op("arith.addi %s, %s : index" % (slot, e.const("{{%d * TX * V}}" % h, "index")),
                     "o")
            p = e.op("vector.load %s[%s] : %s, %s" % (part, o, pt, self.VF), "p")
            nv = e.op("%s %s, %s : %s" % (comb, cur, p, self.VF), "s")
            e.emit("vector.store %s, %s[%s] : %s, %s" % (nv, part, slot, pt, self.VF))
            e.emit("scf.yield %s : %s" % (nv, self.VF))
            e.indent -= 2
            e.emit("} else {")
            e.emit("  scf.yield %s : %s" % (cur, self.VF))
            e.emit("}")
            if h > 1:  # after the last step only the cluster barrier
                e.emit("scf.if %s {" % live)  # (SPLIT > 1) reads `part`
                e.emit("  gpu.barrier")
                e.emit("}")
            cur = r
            h //= 2
        # the cluster (SPLIT > 1): rank 0 adds the ranks' partials (slots
        # 0 .. CW - 1 of each CTA's `part`) in rank order; SPLIT = 1: row
        # lane 0's tree value is the sum, and no cluster barrier is needed
        sp = e.const("{{SPLIT > 1}}", "i1")
        e.emit("scf.if %s {" % sp)
        e.emit("  nvvm.cluster.arrive")
        e.emit("  nvvm.cluster.wait")
        e.emit("}")
        st = e.op("arith.andi %s, %s : i1" % (
            e.op("arith.andi %s, %s : i1" % (
                e.op("arith.cmpi eq, %s, %s : index" % (ty, c0), "ty0"),
                e.op("arith.cmpi eq, %s, %s : index" % (rank, c0), "rk0")), "a"), colok), "st")
        e.emit("scf.if %s {" % st)
        e.indent += 2
        addr = e.op("memref.extract_aligned_pointer_as_index %s : %s -> index" % (part, pt), "pa")
        a = e.op("arith.addi %s, %s : index" % (addr, e.op("arith.muli %s, %s : index" % (
            slot, e.const(4, "index")), "sb")), "pa")
        p3 = e.op("llvm.inttoptr %s : i64 to !llvm.ptr<3>" % e.op(
            "arith.index_cast %s : index to i64" % a, "pa"), "p3")
        tot = e.fresh("tot")
        e.emit("%s = scf.if %s -> (%s) {" % (tot, sp, self.VF))
        e.indent += 2
        q, accq, tot1 = e.fresh("q"), e.fresh("a"), e.fresh("tot")
        e.emit("%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (%s) {" % (
            tot1, q, c0, cS, c1, accq, ident, self.VF))
        e.indent += 2
        qi = e.op("arith.index_cast %s : index to i32" % q, "qi")
        p7 = e.op("nvvm.mapa %s, %s : !llvm.ptr<3> -> !llvm.ptr<7>" % (p3, qi), "p7")
        x = e.op("llvm.load %s {alignment = {{4 * V - 4 * (V > 4) * (V - 4)}} : i64} : "
                 "!llvm.ptr<7> -> %s" % (p7, self.VF), "px")
        s = e.op("%s %s, %s : %s" % (comb, accq, x, self.VF), "s")
        e.emit("scf.yield %s : %s" % (s, self.VF))
        e.indent -= 2
        e.emit("}")
        e.emit("scf.yield %s : %s" % (tot1, self.VF))
        e.indent -= 2
        e.emit("} else {")
        e.emit("  scf.yield %s : %s" % (cur, self.VF))
        e.emit("}")
        out = tot
        if self.kind == "mean":
            rf = e.op("arith.uitofp %s : i32 to f32" % e.const("{{RR}}", "i32"), "rf")
            out = e.op("arith.divf %s, %s : %s" % (out, e.op("vector.broadcast %s : f32 to %s" % (
                rf, self.VF), "rv"), self.VF), "mean")
        if self.t != "f32":
            out = e.op("arith.truncf %s : %s to %s" % (out, self.VF, self.VT), "tr")
        ot = self.out_type()
        if self.view == "b_tn":
            nn = e.const("{{NN}}", "index")
            oi = "%s, %s" % (e.op("arith.divui %s, %s : index" % (col, nn), "t"),
                             e.op("arith.remui %s, %s : index" % (col, nn), "n"))
        else:
            oi = col
        e.emit("vector.store %s, %%out[%s] : %s, %s" % (out, oi, ot, self.VT))
        e.indent -= 2
        e.emit("}")
        e.emit("scf.if %s {" % sp)
        e.emit("  nvvm.cluster.arrive")
        e.emit("  nvvm.cluster.wait")
        e.emit("}")

        args = ["%%%s: %s" % (nm, self.in_type()) for nm in self.inputs]
        args.append("%%out: %s" % self.out_type())
        consts = ["    " + c for _, c in sorted(e.consts.values(), key=lambda z: int(
            z[0].lstrip("%c")))]
        lines = ["gpu.module @kernels {"] + ["  // " + h for h in header]
        lines.append("  memref.global \"private\" @part : memref<{{BS * V}}xf32, %s> = "
                     "uninitialized {alignment = 16}" % SMEM)
        lines.append("  gpu.func @%s(%s) kernel" % (kname, ", ".join(args)))
        lines.append("      attributes {known_block_size = array<i32: {{BS}}, 1, 1>,")
        lines.append("                  known_grid_size = array<i32: {{%s * SPLIT}}, 1, 1>," % NCB)
        lines.append("                  known_cluster_size = array<i32: {{SPLIT}}, 1, 1>%s} {" % (
            ",\n                  nvvm.minctasm = {{MC}} : i32" if self.mc else ""))
        lines += consts + e.lines
        lines.append("    gpu.return")
        lines.append("  }")
        lines.append("}")
        return "\n".join(lines) + "\n"


def v_expr(t, n):
    """V: the largest of VMAX[t], 4, 2, 1 that divides n (a symbol or 1)."""
    if n == "1":
        return "1"
    if VMAX[t] == 8:
        return "(8 - 4 * (%s %% 8 != 0) - 2 * (%s %% 4 != 0) - (%s %% 2 != 0))" % (n, n, n)
    return "(4 - 2 * (%s %% 4 != 0) - (%s %% 2 != 0))" % (n, n)


def tune_lines():
    """The table's knobs and requirements (tokens of RULES, substituted in
    render()). CFG 0 only unsplit and from 32 column vectors on; CFG 2-4
    only where each thread has two groups of UN rows; CFG 4 (32 column
    vectors a CTA) only split and from 544 column vectors on (17 strips);
    SPLIT (1, 4, 8) while the previous split leaves under 1056 CTAs (8 per
    SM on 132 SMs) and each CTA keeps at least two rows per thread; and a
    split that leaves SMs idle only where the next one is not admitted
    (CFG 4 excepted: its fewer, wider strips were the fastest at 96 CTAs,
    14500 x 3072 f32; and CFG 3 from 66 CTAs on: 96 CTAs of it were the
    fastest at 432 x 256 x 768 f32, split 4, and 7168 x 3072 f32, unsplit,
    where the rule left only split 8 and 4)."""
    # twice the row lanes, BS / TX * 2 of RULES with NV once (the
    # expressions must stay under 512 bytes once the sizes are in)
    ty2 = ("(2048 - (NV >= 16) * (2048 - 16 * (CFG == 0) - 64 * (CFG == 1) - 128 * (CFG == 2)"
           " - 64 * (CFG == 3) - 16 * (CFG == 4)))")
    return [
        "llm-fuse.tune CFG = 0, 1, 2, 3, 4",
        "llm-fuse.tune-require (NV < 16 && (CFG == 1 || CFG == 4)) || "
        "(NV >= 16 && (CFG != 0 || (NV >= 32 && SPLIT == 1)))",
        # (under 16 column vectors, CFG 4 only at SPLIT 8, as the rule
        # below then left it)
        "llm-fuse.tune-require CFG != 4 || (NV < 16 && SPLIT == 8) || (NV >= 544 && SPLIT > 1)",
        # (CFG 2: 64 row lanes; CFG 3: 32 row lanes of 16; 1024 lanes under
        # 16 column vectors)
        "llm-fuse.tune-require CFG < 2 || RR >= SPLIT * UN * (128 - 64 * (CFG >= 3) * (NV >= 16)"
        " + 1920 * (NV < 16))",
        "llm-fuse.tune SPLIT = 1, 4, 8",
        "llm-fuse.tune-require SPLIT == 1 || %s * SPLIT / 2 < 1056" % NCB,
        "llm-fuse.tune-require SPLIT == 1 || RR >= SPLIT * %s" % ty2,
        # a grid under 132 CTAs (one per SM) only where the next split
        # (4 after 1, 8 after 4) has too few rows, or in CFG 3 from 66
        # CTAs on (half of 132: NV * SPLIT doubled)
        # (TX and twice the row lanes of CFG 0-3 here: shorter)
        "llm-fuse.tune-require CFG == 4 || SPLIT == 8 || NV * SPLIT * (1 + (CFG == 3)) >= 132 * "
        "(32 * (CFG == 0) + (CFG != 0) * (1 + 7 * (NV >= 16))) || RR < SPLIT * "
        "(2 + 2 * (SPLIT == 1)) * (2048 - (NV >= 16) * (2048 - 16 * (CFG == 0) - 64 * (CFG % 2)"
        " - 128 * (CFG == 2)))",
    ]


def subst(s, rules, toks, vx):
    """the kernel's tokens in s: the parameters (rules), NV, the sizes
    (toks), V (vx)"""
    for tok in ("MC", "BS", "UN", "NT", "TX"):
        if tok in rules:
            s = re.sub(r"\b%s\b" % tok, rules[tok], s)
    s = re.sub(r"\bNV\b", "(CC / V)", s)
    for tok in ("RR", "CC", "NN", "B", "T"):
        if tok in toks:
            s = re.sub(r"\b%s\b" % tok, "(%s)" % toks[tok] if " " in toks[tok] else toks[tok], s)
    return re.sub(r"\bV\b", vx, s)


def example_text(name, dtype, sizes):
    """The family's model at sizes (rows, cols) or (B, T, N), in dtype."""
    src, rows, cols, t3, kind, ins, rfloat = FAMILIES[name]
    text = open(os.path.join(ROOT, src)).read()
    if t3 is None:
        r, n = sizes
        ints = {rows: r, cols: n} if r != n else {rows: n, cols: n}
        text = size_rewrite(text, ints, {float(rows): r} if rfloat else {})
    else:
        b, t, n = sizes
        text = size_rewrite(text, {rows: b, t3: t, cols: n}, {})
    if dtype != "f32":
        text = dtype_rewrite(text, "f32", dtype)
    return text


def _render(name, dtype, form, sizes, rules=None, tune=None, umax=UMAX):
    """render() of a template; rules (the kernel's parameters as
    expressions of knobs and sizes, RULES' keys) and tune (the knob lines)
    default to the table's (RULES, tune_lines()); bench/table/
    colred_stage.py passes others to time candidates."""
    src, rows, cols, t3, kind, ins, rfloat = FAMILIES[name]
    rules = rules or table_rules(dtype, len(ins))
    tune = tune or tune_lines()
    view = RANK3_VIEW.get(name)

    def render(g):
        ps = g["pattern_sizes"]
        sym = {v: k for k, v in sorted(ps.items(), reverse=True)}
        if view is None:
            r, n = sizes
            toks = {"RR": "1" if r == 1 else sym[r], "CC": "1" if n == 1 else sym[n]}
            toks["NN"] = toks["CC"]
        else:
            b, t, n = sizes
            sb = "1" if b == 1 else sym[b]
            toks = {"B": sb, "T": sym[t], "NN": sym[n]}
            if view == "b_tn":
                toks.update(RR=sb, CC="%s * %s" % (sym[t], sym[n]))
            else:
                toks.update(RR="%s * %s" % (sb, sym[t]), CC=sym[n])
        vx = v_expr(dtype, toks["NN"])
        free = sorted(ps, key=lambda s: int(s[1:]))
        header = [
            "Pattern-table template: kernels/table/colred_any.py %s %s (%s form): a reduction "
            "over the leading dimension(s), any sizes." % (name, dtype, form),
            "%s rows x %s columns (2-D view); TX threads across the columns, BS / TX row "
            "lanes, V elements per load, UN rows per thread in flight, NT streaming loads; "
            "SPLIT CTAs of a cluster split the rows." % (toks["RR"], toks["CC"]),
        ] + ["%s = %s" % (k, rules[k]) for k in ("TX", "BS", "UN", "NT", "MC") if k in rules] + [
        ] + ["llm-fuse.template-size %s" % s for s in free] + tune
        k = Kernel(kind, dtype, ins, view, umax, "MC" in rules)
        text = k.text("%s_%s" % (name, dtype), header)

        def sub(s):
            return subst(s, rules, toks, vx)
        text = re.sub(r"\{\{[^}]*\}\}", lambda m: sub(m.group(0)), text)
        text = "\n".join(sub(l) if "tune-require" in l else l for l in text.split("\n"))
        return text, [None] * len(ps)
    return render


def templates():
    out = []
    for name in sorted(FAMILIES):
        src, rows, cols, t3 = FAMILIES[name][:4]
        forms = sorted((FORMS3 if t3 is not None else FORMS2).items())
        for dtype in DTYPES:
            for form, sizes in forms:
                def pick(groups):
                    gs = [g for g in groups if g.get("class") == "reduction"]
                    return gs[0] if len(groups) == 1 and len(gs) == 1 else None
                out.append(dict(
                    name="colred-%s-%s-%s" % (name, dtype, form),
                    example=example_text(name, dtype, sizes),
                    pick=pick,
                    render=_render(name, dtype, form, sizes),
                    archs=ARCHS,
                    source="kernels/table/colred_any.py %s %s %s (from %s at %s)" % (
                        name, dtype, form, src, " x ".join(str(s) for s in sizes))))
    return out
