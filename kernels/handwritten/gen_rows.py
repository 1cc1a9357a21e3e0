#!/usr/bin/env python3
"""gen_rows.py - emit the hand-written row-reduction and attention kernels.

Writes one gpu.module per outlined subgraph of the example models into this
folder (<sg_name>.mlir) and the manifest manifest-rows.json beside them.
Every kernel follows docs/kernel-contract.md: one memref per subgraph input,
then per result, bare pointers, known_block_size / known_grid_size.

    kernels/handwritten/gen_rows.py            # rewrite the .mlir files
    kernels/handwritten/gen_rows.py --check    # fail if a file is stale
    kernels/handwritten/gen_rows.py --out DIR  # write elsewhere
    kernels/handwritten/gen_rows.py --variant NAME=k=v,... --out DIR
                                               # a tuning variant (bench)

Row kernels (norms and softmax) keep the whole row in registers: the row is
read from global memory exactly once with 16-byte vector loads
(vector<8xbf16> or vector<4xf32>), reduced with a gpu.shuffle xor butterfly
per warp plus one shared-memory step across warps, and written once with
16-byte vector stores.  Chunk k of thread t covers the V columns starting at
(k * T + t) * V, so each warp's loads and stores are contiguous 512-byte runs.
The attention kernel is a flash-attention-style f32 SIMT kernel (see
gen_attention).

Python 3 standard library only.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SMEM = "3"  # the workgroup (shared) address space as an integer; with
            # #gpu.address_space<workgroup> vector ops on shared memrefs
            # build fine but leave spurious "error: conversion of memref
            # memory space" lines in the build result's diagnostics.

F32_MAX = "3.40282347E+38"


class Emitter:
    """Straight-line SSA text with named values and hoisted constants."""

    def __init__(self, reserved=()):
        self.lines = []
        self.indent = 4
        self.used = set(reserved)  # the kernel's argument names
        self.consts = {}  # (value text, type) -> name
        self.const_lines = []

    def name(self, hint):
        if hint not in self.used:
            self.used.add(hint)
            return "%" + hint
        i = 1
        while "%s_%d" % (hint, i) in self.used:
            i += 1
        self.used.add("%s_%d" % (hint, i))
        return "%%%s_%d" % (hint, i)

    def line(self, text):
        self.lines.append(" " * self.indent + text)

    def comment(self, text):
        self.line("// " + text)

    def op(self, rhs, hint="v"):
        n = self.name(hint)
        self.line("%s = %s" % (n, rhs))
        return n

    def const(self, value, ty, hint=None):
        key = (str(value), ty)
        if key not in self.consts:
            if hint is None:
                if ty == "index":
                    hint = "c%s" % value
                elif ty == "i32":
                    hint = "c%s_i32" % value
                else:
                    hint = "cst"
            n = self.name(hint)
            self.consts[key] = n
            self.const_lines.append("%s = arith.constant %s : %s" % (n, value, ty))
        return self.consts[key]

    def idx(self, v):
        return self.const(v, "index")

    def sym_idx(self, name):
        """An index constant whose value is the tune placeholder {{name}}
        (llm_client/tune.h): the pass instantiates it per variant."""
        key = ("{{%s}}" % name, "index")
        if key not in self.consts:
            n = self.name("c_" + name)
            self.consts[key] = n
            self.const_lines.append("%s = arith.constant {{%s}} : index" % (n, name))
        return self.consts[key]

    def addc(self, a, k, hint):
        """a + k for an index constant k (a itself when k == 0)."""
        if k == 0:
            return a
        return self.op("arith.addi %s, %s : index" % (a, self.idx(k)), hint)

    def body(self):
        return ([" " * 4 + l for l in self.const_lines] + self.lines)


# ---------------------------------------------------------------- helpers --

def vty(n, t):
    return "vector<%dx%s>" % (n, t)


def warp_allreduce(e, v, kind, ty="f32", offsets=(16, 8, 4, 2, 1), hint="w"):
    """Butterfly over gpu.shuffle xor: every lane ends with the same value
    (each step combines the same two operands on both partner lanes)."""
    width = e.const(32, "i32")
    op = {"add": "arith.addf", "max": "arith.maximumf"}[kind]
    for off in offsets:
        o = e.const(off, "i32")
        sh = e.name("sh")
        e.line("%s, %%ok_%s = gpu.shuffle xor %s, %s, %s : %s"
               % (sh, sh[1:], v, o, width, ty))
        v = e.op("%s %s, %s : %s" % (op, v, sh, ty), hint)
    return v


def block_allreduce(e, v, kind, red, slot, nwarps, tid, hint, base=None):
    """Warp butterfly, lane 0 of each warp stores into red[slot, warp], one
    barrier, then every thread reads all nwarps partials (16-byte shared
    loads) and combines them in the same order, so the result is uniform.
    Each reduction uses its own slot: no second barrier is needed.  With
    several rows per block, `base` is the first warp of this thread's row
    (the row's nwarps partials start there)."""
    w = warp_allreduce(e, v, kind, hint=hint + "_warp")
    if nwarps == 1:
        return w
    lane = e.op("arith.remui %s, %s : index" % (tid, e.idx(32)), "lane")
    warp = e.op("arith.divui %s, %s : index" % (tid, e.idx(32)), "warp")
    first = e.op("arith.cmpi eq, %s, %s : index" % (lane, e.idx(0)), "lane0")
    e.line("scf.if %s {" % first)
    e.line("  memref.store %s, %s[%s, %s] : memref<2x32xf32, %s>"
           % (w, red, e.idx(slot), warp, SMEM))
    e.line("}")
    e.line("gpu.barrier")
    op = {"add": "arith.addf", "max": "arith.maximumf"}[kind]
    rkind = {"add": "add", "max": "maximumf"}[kind]
    assert nwarps % 4 == 0
    acc = None
    for k in range(nwarps // 4):
        col = e.idx(4 * k) if base is None else e.addc(base, 4 * k, "pcol")
        p = e.op("vector.load %s[%s, %s] : memref<2x32xf32, %s>, vector<4xf32>"
                 % (red, e.idx(slot), col, SMEM), "part")
        acc = p if acc is None else e.op("%s %s, %s : vector<4xf32>" % (op, acc, p), "part")
    return e.op("vector.reduction <%s>, %s : vector<4xf32> into f32" % (rkind, acc), hint)


def gen_knobs(p, fn):
    """A row kernel with tune knobs p["knobs"] = [(NAME, key, values), ...]:
    each combination's body (fn(p with key = value ...)) in the case of
    nested scf.index_switch ops on the constants {{NAME}}, so that every
    instantiated variant holds one live body (the switch folds away; the
    other bodies are dead code).  The block size is {{T}} when T is a knob
    (one row per block).  Returns what fn returns for the first values
    (the variant built without a GPU), with the tune declarations."""
    args_names = {"rmsnorm": ("x", "w", "y"), "layernorm": ("x", "gamma", "beta", "y"),
                  "softmax": ("x", "y"), "add_rmsnorm": ("x", "r", "w", "h", "y"),
                  "rowreduce": ("x", "y"),
                  "elementwise": ("x", "r" if p.get("op") == "add" else "b", "y")}[p["gen"]]
    e = Emitter(args_names)
    knobs = p["knobs"]
    first = {}

    def emit(level, q):
        if level == len(knobs):
            g, _, args, globs = fn(dict(q, _emitter=e))
            if not first:
                first.update(g=g, args=args, globals=globs)
            elif globs and not first["globals"]:
                first["globals"] = globs
            return
        name, key, values = knobs[level]
        e.line("scf.index_switch %s" % e.sym_idx(name))
        for v in values:
            e.line("case %d {" % v)
            e.indent += 2
            emit(level + 1, dict(q, **{key: v}))
            e.line("scf.yield")
            e.indent -= 2
            e.line("}")
        e.line("default {")
        e.line("  scf.yield")
        e.line("}")
    emit(0, dict(p))
    g = first["g"]
    g.tune = [(name, values, None) for name, _, values in knobs]
    return g, e, first["args"], first["globals"]


def header_comment(lines):
    return "".join("// " + l + "\n" if l else "//\n" for l in lines)


def module_text(comment, kname, args, block, grid, body_lines, globals_=(), extra_attrs="",
                tune=()):
    """block and grid are ints, or placeholder text when `tune` declares
    knobs: (name, values, requirement) each."""
    out = [header_comment(comment)]
    out.append("gpu.module @kernels {\n")
    for name, values, require in tune:
        out.append("  // llm-fuse.tune %s = %s\n" % (name, ", ".join(str(v) for v in values)))
        if require:
            out.append("  // llm-fuse.tune-require %s\n" % require)
    for g in globals_:
        out.append("  " + g + "\n")
    out.append("  gpu.func @%s(%s) kernel\n" % (kname, ", ".join(args)))
    out.append("      attributes {known_block_size = array<i32: %s, 1, 1>,\n"
               "                  known_grid_size = array<i32: %s, 1, 1>%s} {\n"
               % (block, grid, extra_attrs))
    for l in body_lines:
        out.append(l + "\n")
    out.append("    gpu.return\n  }\n}\n")
    return "".join(out)


# ------------------------------------------------------------ row kernels --

class Row:
    """Geometry of a row kernel: R rows of N elements of type `et`, T
    threads per row, V elements per 16-byte vector, C chunks per thread."""

    def __init__(self, R, N, et, T, rows_per_block=1):
        self.R, self.N, self.et, self.T = R, N, et, T
        self.V = 8 if et == "bf16" else 4
        assert N % (T * self.V) == 0, (N, T, self.V)
        self.C = N // (T * self.V)
        self.rpb = rows_per_block
        self.block = T * rows_per_block
        assert R % rows_per_block == 0
        self.grid = R // rows_per_block
        self.nwarps = max(1, T // 32)
        # One warp per row, several rows per block: the rows per block are
        # the kernel's tune knob (RPB), declared with half and double where
        # they divide R; the row index, block and grid follow it.
        self.tune = []
        if T == 32 and rows_per_block > 1:
            values = [rows_per_block] + [v for v in (rows_per_block // 2, rows_per_block * 2)
                                         if v >= 2 and R % v == 0]
            self.tune = [("RPB", values, "%d %% RPB == 0" % R)]
        self.mem = "memref<%dx%dx%s>" % (R, N, et)
        self.vmem = "memref<%dx%s>" % (N, et)

    def launch_text(self):
        if self.rpb > 1 and self.T > 32:
            return ("%d rows per %d-thread block, %d threads per row (grid %d), "
                    "%d chunks of %d %s per thread" % (self.rpb, self.block, self.T,
                                                       self.grid, self.C, self.V, self.et))
        if self.rpb == 1:
            return ("one %d-thread block per row (grid %d), %d chunks of %d "
                    "%s per thread" % (self.T, self.grid, self.C, self.V, self.et))
        return ("one warp per row, %d rows per %d-thread block (grid %d), "
                "%d chunks of %d %s per lane" % (self.rpb, self.block, self.grid,
                                                 self.C, self.V, self.et))


def row_prologue(e, g):
    """Row and per-thread column indices; returns (row, tid_in_row, cols)."""
    tid = e.op("gpu.thread_id x", "tid")
    bid = e.op("gpu.block_id x", "bid")
    if g.rpb == 1:
        row, t = bid, tid
    elif g.T > 32:  # several multi-warp rows per block
        rib = e.op("arith.divui %s, %s : index" % (tid, e.idx(g.T)), "rib")
        t = e.op("arith.remui %s, %s : index" % (tid, e.idx(g.T)), "t")
        r0 = e.op("arith.muli %s, %s : index" % (bid, e.idx(g.rpb)), "row0")
        row = e.op("arith.addi %s, %s : index" % (r0, rib), "row")
        g.rbase = e.op("arith.muli %s, %s : index" % (rib, e.idx(g.nwarps)), "wbase")
    else:
        wid = e.op("arith.divui %s, %s : index" % (tid, e.idx(32)), "wid")
        t = e.op("arith.remui %s, %s : index" % (tid, e.idx(32)), "lane")
        rpb = e.sym_idx("RPB") if g.tune else e.idx(g.rpb)
        r0 = e.op("arith.muli %s, %s : index" % (bid, rpb), "row0")
        row = e.op("arith.addi %s, %s : index" % (r0, wid), "row")
    g.t = t
    col0 = e.op("arith.muli %s, %s : index" % (t, e.idx(g.V)), "col")
    cols = [col0]
    for k in range(1, g.C):
        cols.append(e.op("arith.addi %s, %s : index" % (col0, e.idx(k * g.T * g.V)), "col"))
    return tid, row, cols


def load_row(e, g, x, row, cols, hint="x", nt=False):
    """All C vector loads first (all in flight), then widen to f32. nt: the
    loads are marked nontemporal, which the builder emits as evict-first
    streaming loads (docs/kernel-contract.md, "Streaming loads"): for a row
    read once, so that its lines do not evict other data from L2."""
    attr = " {nontemporal = true}" if nt else ""
    raw = [e.op("vector.load %s[%s, %s]%s : %s, %s" % (x, row, c, attr, g.mem, vty(g.V, g.et)),
                hint + ("raw" if g.et != "f32" else "v"))
           for c in cols]
    if g.et == "f32":
        return raw
    return [e.op("arith.extf %s : %s to %s" % (r, vty(g.V, g.et), vty(g.V, "f32")), hint + "f")
            for r in raw]


def vsum(e, g, vals, kind="add", hint="acc", square=False):
    """Elementwise combine of the chunks (optionally of their squares, each
    squared just before it is added: fewer live registers), then one
    vector.reduction."""
    op = {"add": "arith.addf", "max": "arith.maximumf"}[kind]
    rk = {"add": "add", "max": "maximumf"}[kind]
    ty = vty(g.V, "f32")
    acc = None
    for v in vals:
        if square:
            v = e.op("arith.mulf %s, %s : %s" % (v, v, ty), "sq")
        acc = v if acc is None else e.op("%s %s, %s : %s" % (op, acc, v, ty), hint)
    return e.op("vector.reduction <%s>, %s : %s into f32" % (rk, acc, ty), hint)


def reduce_row(e, g, v, kind, red, slot, tid, hint):
    if g.rpb == 1:
        return block_allreduce(e, v, kind, red, slot, g.nwarps, tid, hint)
    if g.T > 32:
        assert g.rpb * g.nwarps <= 32
        return block_allreduce(e, v, kind, red, slot, g.nwarps, tid, hint, g.rbase)
    return warp_allreduce(e, v, kind, hint=hint)


def store_row(e, g, y, row, cols, vals32):
    ty = vty(g.V, "f32")
    for c, v in zip(cols, vals32):
        if g.et != "f32":
            v = e.op("arith.truncf %s : %s to %s" % (v, ty, vty(g.V, g.et)), "yv")
        e.line("vector.store %s, %s[%s, %s] : %s, %s" % (v, y, row, c, g.mem, vty(g.V, g.et)))


def load_vec(e, g, w, col, hint):
    v = e.op("vector.load %s[%s] : %s, %s" % (w, col, g.vmem, vty(g.V, g.et)), hint)
    if g.et != "f32":
        v = e.op("arith.extf %s : %s to %s" % (v, vty(g.V, g.et), vty(g.V, "f32")), hint)
    return v


def wearly(p, g):
    """Load the weight vectors together with x (all in flight at once) only
    in the latency-bound one-warp-per-row kernel.  The big row kernels load
    them after the reductions (L1/L2 hits, latency hidden by the other
    resident blocks): on an H200 the early loads cost registers, hence
    resident blocks, and were 1-5% slower."""
    return bool(p.get("wearly", g.rpb > 1 and g.T == 32))


RED_GLOBAL = ("memref.global \"private\" @red : memref<2x32xf32, %s> = uninitialized "
              "{alignment = 16}" % SMEM)


def red_ref(e):
    return e.op("memref.get_global @red : memref<2x32xf32, %s>" % SMEM, "red")


def gen_rmsnorm(p):
    """y = bf16((f32(x) * rsqrt(sum(f32(x)^2) / N + eps)) * f32(w))."""
    g = Row(p["R"], p["N"], p["et"], p["T"])
    e = p.get("_emitter") or Emitter(("x", "w", "y"))
    tid, row, cols = row_prologue(e, g)
    red = red_ref(e) if g.nwarps > 1 else None
    xs = load_row(e, g, "%x", row, cols)
    ty = vty(g.V, "f32")
    early = wearly(p, g)
    if early:  # in flight with x; reused by the block's epilogue
        ws = [load_vec(e, g, "%w", c, "w") for c in cols]
    part = vsum(e, g, xs, hint="sumsq", square=True)
    total = reduce_row(e, g, part, "add", red, 0, tid, "sumsq")
    if p["mean"] == "div":
        ms = e.op("arith.divf %s, %s : f32" % (total, e.const("%.6e" % g.N, "f32", "n")), "ms")
    else:  # TOSA: multiply by the reciprocal constant 1/N (exact for N = 2^k)
        ms = e.op("arith.mulf %s, %s : f32" % (total, e.const(p["mean"], "f32", "inv_n")), "ms")
    mse = e.op("arith.addf %s, %s : f32" % (ms, e.const(p["eps"], "f32", "eps")), "mse")
    r = e.op("math.rsqrt %s : f32" % mse, "rstd")
    rv = e.op("vector.broadcast %s : f32 to %s" % (r, ty), "rstdv")
    outs = []
    for k, c in enumerate(cols):
        wv = ws[k] if early else load_vec(e, g, "%w", c, "w")
        t = e.op("arith.mulf %s, %s : %s" % (xs[k], rv, ty), "xn")
        outs.append(e.op("arith.mulf %s, %s : %s" % (t, wv, ty), "yf"))
    store_row(e, g, "%y", row, cols, outs)
    args = ["%%x: %s" % g.mem, "%%w: %s" % g.vmem, "%%y: %s" % g.mem]
    return g, e, args, [RED_GLOBAL] if red else []


def gen_layernorm(p):
    """mean = sum(x)/N; var = sum((x-mean)^2)/N;
    y = ((x - mean) * rsqrt(var + eps)) * gamma + beta, two-pass from
    registers (the IR's own two-pass form)."""
    g = Row(p["R"], p["N"], p["et"], p["T"], p.get("rpb", 1))
    e = p.get("_emitter") or Emitter(("x", "gamma", "beta", "y"))
    tid, row, cols = row_prologue(e, g)
    red = red_ref(e) if g.nwarps > 1 else None
    xs = load_row(e, g, "%x", row, cols)
    ty = vty(g.V, "f32")
    early = wearly(p, g)
    if early:  # in flight with x
        gbs = [(load_vec(e, g, "%gamma", c, "gamma"), load_vec(e, g, "%beta", c, "beta"))
               for c in cols]
    part = vsum(e, g, xs, hint="sum")
    total = reduce_row(e, g, part, "add", red, 0, tid, "sum")
    n = e.const("%.6e" % g.N, "f32", "n")
    mean = e.op("arith.divf %s, %s : f32" % (total, n), "mean")
    mv = e.op("vector.broadcast %s : f32 to %s" % (mean, ty), "meanv")
    ds = [e.op("arith.subf %s, %s : %s" % (v, mv, ty), "d") for v in xs]
    part2 = vsum(e, g, ds, hint="ssd", square=True)
    ssd = reduce_row(e, g, part2, "add", red, 1, tid, "ssd")
    var = e.op("arith.divf %s, %s : f32" % (ssd, n), "var")
    ve = e.op("arith.addf %s, %s : f32" % (var, e.const(p["eps"], "f32", "eps")), "vare")
    r = e.op("math.rsqrt %s : f32" % ve, "rstd")
    rv = e.op("vector.broadcast %s : f32 to %s" % (r, ty), "rstdv")
    outs = []
    for k, c in enumerate(cols):
        if early:
            gv, bv = gbs[k]
        else:
            gv = load_vec(e, g, "%gamma", c, "gamma")
            bv = load_vec(e, g, "%beta", c, "beta")
        t = e.op("arith.mulf %s, %s : %s" % (ds[k], rv, ty), "xn")
        t = e.op("arith.mulf %s, %s : %s" % (t, gv, ty), "xg")
        outs.append(e.op("arith.addf %s, %s : %s" % (t, bv, ty), "yf"))
    store_row(e, g, "%y", row, cols, outs)
    args = ["%%x: %s" % g.mem, "%%gamma: %s" % g.vmem, "%%beta: %s" % g.vmem,
            "%%y: %s" % g.mem]
    return g, e, args, [RED_GLOBAL] if red else []


def gen_softmax(p):
    """m = max(init, max(x)); e = exp(x - m); s = sum(e);
    y = e / s (div = "div") or e * (1 / s) (div = "recip", TOSA's form)."""
    g = Row(p["R"], p["N"], p["et"], p["T"])
    e = p.get("_emitter") or Emitter(("x", "y"))
    tid, row, cols = row_prologue(e, g)
    red = red_ref(e)
    xs = load_row(e, g, "%x", row, cols)
    ty = vty(g.V, "f32")
    part = vsum(e, g, xs, kind="max", hint="max")
    if p["init"] != "-inf":  # TOSA's reduce_max starts from -FLT_MAX
        part = e.op("arith.maximumf %s, %s : f32" % (part, e.const(p["init"], "f32", "lowest")), "max")
    m = reduce_row(e, g, part, "max", red, 0, tid, "rowmax")
    mv = e.op("vector.broadcast %s : f32 to %s" % (m, ty), "rowmaxv")
    ex = []
    if p.get("exp") in ("approx", 1):  # exp(d) = 2^(d log2 e): ex2.approx
        l2e = e.op("vector.broadcast %s : f32 to %s"
                   % (e.const("1.44269502", "f32", "log2e"), ty), "log2ev")
    for v in xs:
        d = e.op("arith.subf %s, %s : %s" % (v, mv, ty), "xm")
        if p.get("exp") in ("approx", 1):
            d2 = e.op("arith.mulf %s, %s : %s" % (d, l2e, ty), "xl")
            ex.append(e.op("math.exp2 %s fastmath<afn> : %s" % (d2, ty), "ex"))
        else:
            ex.append(e.op("math.exp %s : %s" % (d, ty), "ex"))
    part2 = vsum(e, g, ex, hint="sum")
    s = reduce_row(e, g, part2, "add", red, 1, tid, "rowsum")
    outs = []
    if p["div"] == "recip":
        inv = e.op("arith.divf %s, %s : f32" % (e.const("1.000000e+00", "f32", "one"), s), "inv")
        iv = e.op("vector.broadcast %s : f32 to %s" % (inv, ty), "invv")
        outs = [e.op("arith.mulf %s, %s : %s" % (v, iv, ty), "yf") for v in ex]
    elif p["div"] == "div":
        sv = e.op("vector.broadcast %s : f32 to %s" % (s, ty), "rowsumv")
        outs = [e.op("arith.divf %s, %s : %s" % (v, sv, ty), "yf") for v in ex]
    else:  # "markstein": the correctly rounded e / s from one reciprocal
        one = e.const("1.000000e+00", "f32", "one")
        inv = e.op("arith.divf %s, %s : f32" % (one, s), "inv")
        iv = e.op("vector.broadcast %s : f32 to %s" % (inv, ty), "invv")
        sv = e.op("vector.broadcast %s : f32 to %s" % (s, ty), "rowsumv")
        nsv = e.op("arith.negf %s : %s" % (sv, ty), "nrowsumv")
        for v in ex:
            q = e.op("arith.mulf %s, %s : %s" % (v, iv, ty), "q")
            rr = e.op("vector.fma %s, %s, %s : %s" % (nsv, q, v, ty), "res")
            outs.append(e.op("vector.fma %s, %s, %s : %s" % (rr, iv, q, ty), "yf"))
    store_row(e, g, "%y", row, cols, outs)
    args = ["%%x: %s" % g.mem, "%%y: %s" % g.mem]
    return g, e, args, [RED_GLOBAL]


def gen_add_rmsnorm(p):
    """h = bf16(f32(x) + f32(r)); y = bf16((f32(h) * rsqrt(sum(f32(h)^2) / N
    + eps)) * f32(w)): the benchmark's residual add + RMSNorm, one subgraph
    with two results, h (the next residual) and y, in that order."""
    g = Row(p["R"], p["N"], p["et"], p["T"])
    e = p.get("_emitter") or Emitter(("x", "r", "w", "h", "y"))
    tid, row, cols = row_prologue(e, g)
    red = red_ref(e) if g.nwarps > 1 else None
    xs = load_row(e, g, "%x", row, cols)
    rs = load_row(e, g, "%r", row, cols, hint="r")
    ty = vty(g.V, "f32")
    hs = []
    for a, b, c in zip(xs, rs, cols):
        s = e.op("arith.addf %s, %s : %s" % (a, b, ty), "s")
        sb = e.op("arith.truncf %s : %s to %s" % (s, ty, vty(g.V, g.et)), "hb")
        # h goes out at once: its stores overlap the row reduction.
        e.line("vector.store %s, %%h[%s, %s] : %s, %s" % (sb, row, c, g.mem, vty(g.V, g.et)))
        hs.append(e.op("arith.extf %s : %s to %s" % (sb, vty(g.V, g.et), ty), "h"))
    part = vsum(e, g, hs, hint="sumsq", square=True)
    total = reduce_row(e, g, part, "add", red, 0, tid, "sumsq")
    ms = e.op("arith.divf %s, %s : f32" % (total, e.const("%.6e" % g.N, "f32", "n")), "ms")
    mse = e.op("arith.addf %s, %s : f32" % (ms, e.const(p["eps"], "f32", "eps")), "mse")
    rr = e.op("math.rsqrt %s : f32" % mse, "rstd")
    rv = e.op("vector.broadcast %s : f32 to %s" % (rr, ty), "rstdv")
    outs = []
    for k, c in enumerate(cols):
        wv = load_vec(e, g, "%w", c, "w")
        t = e.op("arith.mulf %s, %s : %s" % (hs[k], rv, ty), "xn")
        outs.append(e.op("arith.mulf %s, %s : %s" % (t, wv, ty), "yf"))
    store_row(e, g, "%y", row, cols, outs)
    args = ["%%x: %s" % g.mem, "%%r: %s" % g.mem, "%%w: %s" % g.vmem, "%%h: %s" % g.mem,
            "%%y: %s" % g.mem]
    return g, e, args, [RED_GLOBAL] if red else []


def gen_rowreduce(p):
    """y[r] = sum_j x[r, j] (op "add", from 0) or max_j x[r, j] (op "max",
    from -inf; arith.maximumf propagates NaN)."""
    g = Row(p["R"], p["N"], p["et"], p["T"])
    e = p.get("_emitter") or Emitter(("x", "y"))
    tid, row, cols = row_prologue(e, g)
    red = red_ref(e) if g.nwarps > 1 else None
    # p["nt"]: streaming loads (the pattern table's entries, build.py): the
    # row is read once
    xs = load_row(e, g, "%x", row, cols, nt=bool(p.get("nt")))
    part = vsum(e, g, xs, kind=p["op"], hint="part")
    total = reduce_row(e, g, part, p["op"], red, 0, tid, "total")
    first = e.op("arith.cmpi eq, %s, %s : index" % (g.t, e.idx(0)), "t0")
    e.line("scf.if %s {" % first)
    e.line("  memref.store %s, %%y[%s] : memref<%dxf32>" % (total, row, g.R))
    e.line("}")
    args = ["%%x: %s" % g.mem, "%%y: memref<%dxf32>" % g.R]
    return g, e, args, [RED_GLOBAL] if red else []


def gen_elementwise(p):
    """op "add": y = bf16(f32(x) + f32(r)); op "bias_gelu": v = f32(x) +
    f32(b[j]), y = bf16(v / (1 + exp(-2u))) with u = 0.7978845608 (v +
    0.044715 v^3): 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)) exactly, so this
    is the IR's tanh-GELU with one exp and one divide; gelu="approx" takes
    them approximate (ex2.approx, div.approx), gelu="div" exact (libdevice
    expf, div.rn)."""
    g = Row(p["R"], p["N"], p["et"], p["T"])
    second = "r" if p["op"] == "add" else "b"
    e = p.get("_emitter") or Emitter(("x", second, "y"))
    tid, row, cols = row_prologue(e, g)
    xs = load_row(e, g, "%x", row, cols)
    ty = vty(g.V, "f32")
    if p["op"] == "add":
        others = load_row(e, g, "%r", row, cols, hint="r")
    else:
        others = [load_vec(e, g, "%b", c, "b") for c in cols]
    if p["op"] == "bias_gelu":  # vector constants, once
        k1 = e.op("vector.broadcast %s : f32 to %s" % (e.const("4.471500e-02", "f32", "k1"), ty), "k1v")
        if p.get("gelu", "div") == "approx":  # exp2 of -2u log2(e)
            m2k0 = e.op("vector.broadcast %s : f32 to %s"
                        % (e.const("-2.30220826", "f32", "m2k0l2e"), ty), "m2k0v")
        else:
            m2k0 = e.op("vector.broadcast %s : f32 to %s"
                        % (e.const("-1.59576917", "f32", "m2k0"), ty), "m2k0v")
        one = e.op("vector.broadcast %s : f32 to %s" % (e.const("1.000000e+00", "f32", "one"), ty),
                   "onev")
    outs = []
    for a, b in zip(xs, others):
        v = e.op("arith.addf %s, %s : %s" % (a, b, ty), "v")
        if p["op"] == "add":
            outs.append(v)
            continue
        v2 = e.op("arith.mulf %s, %s : %s" % (v, v, ty), "v2")
        inner = e.op("vector.fma %s, %s, %s : %s" % (v2, k1, one, ty), "in")  # 1 + 0.044715 v^2
        t = e.op("arith.mulf %s, %s : %s" % (v, inner, ty), "t")              # v + 0.044715 v^3
        m2u = e.op("arith.mulf %s, %s : %s" % (t, m2k0, ty), "m2u")           # -2u
        if p.get("gelu", "div") == "approx":
            # exp(-2u) = 2^(-2u log2 e): ex2.approx; v / den as v * rcp(den)
            # with the approximate reciprocal (fastmath afn): a few ulp of
            # f32, far under the bf16 rounding of the result.
            ex = e.op("math.exp2 %s fastmath<afn> : %s" % (m2u, ty), "ex")
            den = e.op("arith.addf %s, %s : %s" % (ex, one, ty), "den")
            outs.append(e.op("arith.divf %s, %s fastmath<afn> : %s" % (v, den, ty), "yf"))
            continue
        ex = e.op("math.exp %s : %s" % (m2u, ty), "ex")
        den = e.op("arith.addf %s, %s : %s" % (ex, one, ty), "den")
        outs.append(e.op("arith.divf %s, %s : %s" % (v, den, ty), "yf"))
    store_row(e, g, "%y", row, cols, outs)
    if p["op"] == "add":
        args = ["%%x: %s" % g.mem, "%%r: %s" % g.mem, "%%y: %s" % g.mem]
    else:
        args = ["%%x: %s" % g.mem, "%%b: %s" % g.vmem, "%%y: %s" % g.mem]
    return g, e, args, []


# ------------------------------------------------------------- attention --

def _cp_chunks(e, c, tid, nrows, D, NT, qkv, hd):
    """The attention kernels' cp.async chunk assignment for a tile of
    `nrows` rows of D f32: chunk tid + NT*n is row c / (D/4), dims
    (c % (D/4))*4 .. +3 (consecutive threads, consecutive chunks). Per
    chunk (row, column, and in the fused-QKV form the q/k/v global columns
    of head offset `hd`), emitted once per tile height and reused."""
    per, rem = divmod(nrows * D // 4, NT)
    assert rem == 0, (nrows, D, NT)
    lst = []
    for n in range(per):
        ch = e.addc(tid, NT * n, "ch")
        rr = e.op("arith.divui %s, %s : index" % (ch, c(D // 4)), "cprow")
        cc = e.op("arith.muli %s, %s : index"
                  % (e.op("arith.remui %s, %s : index" % (ch, c(D // 4)), "cpc4"), c(4)),
                  "cpcol")
        if qkv:
            gc = e.op("arith.addi %s, %s : index" % (hd, cc), "cpgcol")
            lst.append((rr, cc, {nm: e.addc(gc, i * qkv["C"], "cp" + nm)
                                 for i, nm in enumerate(("q", "k", "v"))}))
        else:
            lst.append((rr, cc, None))
    return lst


def gen_attention(p):
    """Causal multi-head attention, f32, flash-attention style.

    q, k, v, out: [S, H, D] row-major (S = 1024, H = 12, D = 64).
    One block of 128 threads per (head, 32-query tile); key tiles of 64.
    Thread t: ty = t / 16 owns query rows ty*4 + i (i < 4) of the tile,
    tx = t % 16 owns the score columns tx + 16*j (j < 4) of a key tile and
    the output columns tx*4 .. tx*4+3.  The 16 threads of one row group are
    one half-warp, so row max / row sum are shuffle-xor butterflies over
    offsets 8, 4, 2, 1.  Shared memory (static, 42.5 KiB): Q tile 32x64 and
    K tile 64x64 with rows padded to 68 floats (the column-strided reads hit
    distinct banks), V tile 64x64; the P tile (32x64) reuses the K buffer
    once the scores are computed.

    Template mode (p["sym"] true; kernels/table/attn_any.py): S and H are
    placeholder expressions (text such as "S0", or "1"), D any multiple of
    32.  Query rows past S read row S - 1 and store nothing; key rows past
    S read row S - 1 and are masked (a key past S is later than every
    valid query); the grid is a ceiling division.

    Special values in template mode (the verifier's NaN/Inf trial: the
    kernel must give the IR's NaN and Inf, docs/verification.md):
    v_past_s: the V rows of keys past S are zeros, not row S - 1. With the
    register prefetch (D <= 64) they are overwritten in shared memory after
    the tile is stored, in the tile that holds key S only (one uniform
    branch a tile); without it (the tile loaded in the loop) each loaded V
    vector goes through a select on `row < S`; the cpasync pipeline copies
    them with source size 0 (zero fill). Each form is the faster of the two
    where it is used (H200, bench/table/keys-device.sh, 2026-11-25: 0.986x
    to 1.006x the time of the kernel without the zeroing; the select in the
    prefetch path cost 1.7% at S = 1000, D = 64). Their weight p = exp(-inf - m) is 0, and 0 x Inf is NaN: with
    row S - 1 of V holding an Inf, the last query row came out NaN where
    the IR, which has no such keys, gives Inf (seed-1 held-out model 001,
    S = 5; the masked keys below S do multiply 0 x V in the IR too, so
    they keep their V). The running max's -inf is guarded (m_exp below).  Thread tx owns the
    output columns tx*4 + 64c (vector<4xf32>, c < D / 64) and, when 64
    does not divide D, D - 32 + tx*2 (vector<2xf32>).  p["scale"] is the
    IR's scale literal, p["rank2"] drops the head index (H = 1: the
    subgraph's buffers are S x D), p["prefetch"] keeps the register
    prefetch of the next K/V tile (default: D <= 64), and a shared-memory
    need over 48 KiB becomes dynamic shared memory (the emitter's
    `extra_attrs` then declares it).

    Fused-QKV form (p["qkv"], template mode; attn_any.py's importer forms):
    the subgraph torch-mlir's output of nanoGPT-style attention merges into
    (passes/partition.c, rule 5 through views): one input qkv [B, T, 3C]
    (c_attn's output; q, k, v its column blocks 0, C, 2C, head h at columns
    h*D .. h*D+D-1 of each: the head-split transposes are strides), one
    output [B*T, C] (the head merge: out[b*T + t, h*D + d]). S is then T,
    H the head count (an integer), p["qkv"] = dict(B=token, BT=token, C=H*D).
    The grid is B*H*ceil(T / BM): block b -> (batch, head) b % (B*H),
    heaviest query tiles first as above.

    Tuning (template mode; kernels/table/attn_any.py picks per entry,
    bench/table/attn-p44-device.sh measures): p["BM"] 32 or 64 queries per
    block; p["RPT"] 4 or 8 query rows per thread (8: rows ty + BM/8 i, so
    the two row groups of a warp read adjacent Q and P rows; each K and V
    shared-memory read then feeds twice the FMAs, which is what bound the
    kernel at D = 96 on an H200); p["pipe"] = "cpasync" (f32): Q, K, V
    copied by cp.async, V of a tile in flight during QK^T and the softmax,
    K of the next during the softmax and PV, P in a tile of its own, three
    barriers per key tile; p["MINB"] a .minnctapersm register cap.
    """
    sym = bool(p.get("sym"))
    # p["BM"] (template mode): queries per block, 32 or 64; 16 threads per
    # row group, RPT rows each (below): 4 BM / RPT threads.
    S, H, D, BM, BN, PAD = p["S"], p["H"], p["D"], p.get("BM", 32), 64, p["D"] + 4
    assert BM in (32, 64) and (sym or BM == 32), BM
    # p["RPT"] (template mode): query rows per thread, 4 (rows ty*4 + i) or
    # 8 (rows ty + BM/8 * i: 128 threads for BM = 64, half the K and V
    # shared-memory reads per FMA)
    RPT = p.get("RPT", 4)
    assert RPT in (4, 8) and (sym or RPT == 4), RPT
    NTY = BM // RPT  # row groups of 16 threads (ty = tid / 16)
    NT = 16 * NTY    # threads per block
    # p["pipe"] == "cpasync" (template mode, f32 only): K, V (and Q) go
    # global -> shared by cp.async (16-byte copies, no register staging):
    # V of this tile is in flight during QK^T and the softmax, K of the
    # next tile during the softmax and PV; P has a buffer of its own; three
    # barriers per key tile instead of four.
    pipe = p.get("pipe")
    assert pipe in (None, "cpasync"), pipe
    # kp holds the K tile (BN x D) and then the P tile (BM x BN): its rows
    # must be at least BN wide as well as D (D = 32: 68, not 36, else P's
    # columns 36 .. 63 alias the next row's and the stores race).
    KPAD = max(PAD, BN + 4)
    U = p.get("U", 4)  # dot-product steps (of 4) per loop iteration
    if sym:
        assert D % 32 == 0 and D % (4 * U) == 0, D
    else:
        assert D == 64 and S % BN == 0 and (D // 4) % U == 0
    prefetch = p.get("prefetch", D <= 64)
    rank2 = sym and p.get("rank2", False)
    # p["dtype"] (template mode): the buffers' element type, f32, bf16 or
    # f16. A 16-bit kernel loads 16-bit vectors and widens them (arith.extf)
    # before they reach shared memory (the tiles stay f32), computes
    # everything in f32 and rounds once (arith.truncf) at the store.
    et = p.get("dtype", "f32") if sym else "f32"
    assert et in ("f32", "bf16", "f16"), et
    assert not pipe or (sym and et == "f32"), "cp.async copies f32 tiles only"
    # Each thread's output columns: (offset, width) chunks, tx*width + offset.
    chunks = [(64 * c, 4) for c in range(D // 64)] + ([(D - 32, 2)] if D % 64 else [])
    nch = len(chunks)
    NQT = S // BM if not sym else None
    qkv = p.get("qkv") if sym else None
    e = Emitter(("qkv", "out") if qkv else ("q", "k", "v", "out"))
    e.extra_attrs = ""
    if qkv:
        assert not rank2 and isinstance(H, int) and qkv["C"] == H * D, (H, D, qkv)
        mem = "memref<{{%s}}x{{%s}}x%dx%s>" % (qkv["B"], S, 3 * qkv["C"], et)
        omem = "memref<{{%s}}x%dx%s>" % (qkv["BT"], qkv["C"], et)
    elif not sym:
        mem = "memref<%dx%dx%dxf32>" % (S, H, D)
    elif rank2:
        mem = "memref<{{%s}}x%dx%s>" % (S, D, et)
    else:
        mem = "memref<{{%s}}x{{%s}}x%dx%s>" % (S, H, D, et)

    def gidx(row, col):
        return "%s, %s" % (row, col) if rank2 else "%s, %s, %s" % (row, h, col)

    def symc(expr):
        return e.const("{{%s}}" % expr, "index", "c_" + re.sub(r"[^A-Za-z0-9]+", "_", expr)
                       .strip("_"))
    v4 = "vector<4xf32>"
    vw = {4: v4, 2: "vector<2xf32>"}
    # The global side's vectors: vw's, of the buffers' element type.
    gw = {w: "vector<%dx%s>" % (w, et) for w in vw}

    def widen(v, w):
        if et == "f32":
            return v
        return e.op("arith.extf %s : %s to %s" % (v, gw[w], vw[w]), "xf")
    if pipe:
        KPAD = PAD  # kp holds K only; P has its own tile (BM x (BN + 4))
    space = SMEM
    qsT = "memref<%dx%dxf32, %s>" % (BM, PAD, space)
    kpT = "memref<%dx%dxf32, %s>" % (BN, KPAD, space)
    vsT = "memref<%dx%dxf32, %s>" % (BN, D, space)
    psT = "memref<%dx%dxf32, %s>" % (BM, BN + 4, space)
    tiles = [(qsT, "qs", BM * PAD), (kpT, "kp", BN * KPAD), (vsT, "vs", BN * D)]
    if pipe:
        tiles.append((psT, "ps", BM * (BN + 4)))
    dyn = sym and 4 * sum(n for _, _, n in tiles) > 48 * 1024
    globals_ = [] if dyn else [
        "memref.global \"private\" @%s : %s = uninitialized {alignment = 16}" % (nm, ty_)
        for ty_, nm, _ in tiles]
    c = e.idx
    tid = e.op("gpu.thread_id x", "tid")
    bid = e.op("gpu.block_id x", "bid")
    if qkv:
        e.comment("heaviest query tiles first: block b -> (batch, head) b %% (B*H), query "
                  "tile ceil(T / %d) - 1 - b / (B*H)" % BM)
        cH, cLast = symc("%s * %d" % (qkv["B"], H)), symc("(%s + %d) / %d - 1" % (S, BM - 1, BM))
    elif sym:
        e.comment("heaviest query tiles first: block b -> head b %% H, query tile "
                  "ceil(S / %d) - 1 - b / H" % BM)
        cH, cLast = symc(H), symc("(%s + %d) / %d - 1" % (S, BM - 1, BM))
    else:
        e.comment("heaviest query tiles first: block b -> head b %% %d, query tile %d - b / %d"
                  % (H, NQT - 1, H))
        cH, cLast = c(H), c(NQT - 1)
    h = e.op("arith.remui %s, %s : index" % (bid, cH), "bh" if qkv else "head")
    bq = e.op("arith.divui %s, %s : index" % (bid, cH), "bq")
    if qkv:
        bh = h
        bat = e.op("arith.divui %s, %s : index" % (bh, c(H)), "batch")
        h = e.op("arith.remui %s, %s : index" % (bh, c(H)), "head")
        hd = e.op("arith.muli %s, %s : index" % (h, c(D)), "hcol")
    qt = e.op("arith.subi %s, %s : index" % (cLast, bq), "qt")
    q0 = e.op("arith.muli %s, %s : index" % (qt, c(BM)), "q0")
    e.comment("key tiles 0 .. nkt-1 cover keys 0 .. q0+%d; later tiles are fully masked"
              % (BM - 1))
    qh = e.op("arith.divui %s, %s : index" % (qt, c(BN // BM)), "qhalf")
    nkt = e.op("arith.addi %s, %s : index" % (qh, c(1)), "nkt")
    ty = e.op("arith.divui %s, %s : index" % (tid, c(16)), "ty")
    tx = e.op("arith.remui %s, %s : index" % (tid, c(16)), "tx")
    txc = e.op("arith.muli %s, %s : index" % (tx, c(4)), "txcol")
    cols = []
    for off, w in chunks:
        base = txc if w == 4 else e.op("arith.muli %s, %s : index" % (tx, c(2)), "txcol2")
        cols.append(e.addc(base, off, "txcol"))
    if qkv:
        # this head's columns of q, k, v in the fused buffer, and of out
        gcols = {}
        gcols["out"] = [e.op("arith.addi %s, %s : index" % (hd, col), "ocol") for col in cols]
        for i, nm in enumerate(("q", "k", "v")):
            gcols[nm] = [e.addc(oc, i * qkv["C"], nm + "col") for oc in gcols["out"]]

    def gload(which, row, ci, w):
        """a vector of operand `which` (q, k, v) at row `row`, chunk ci"""
        if qkv:
            return e.op("vector.load %%qkv[%s, %s, %s] : %s, %s"
                        % (bat, row, gcols[which][ci], mem, gw[w]), which + "v")
        return e.op("vector.load %%%s[%s] : %s, %s" % (which, gidx(row, cols[ci]), mem, gw[w]),
                    which + "v")
    if dyn:
        sizes = [4 * n for _, _, n in tiles]
        e.extra_attrs = ", llm_fuse.dynamic_shared_memory = %d : i32" % sum(sizes)
        wg = "#gpu.address_space<workgroup>"
        dsm = e.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % wg, "dsm")
        # Views in the integer space 3, as the static tiles: vector ops on
        # #gpu.address_space<workgroup> memrefs leave spurious diagnostics.
        dsm = e.op("memref.memory_space_cast %s : memref<?xi8, %s> to memref<?xi8, %s>"
                   % (dsm, wg, space), "dsm3")
        views = []
        for i, (ty_, nm, _) in enumerate(tiles):
            views.append(e.op("memref.view %s[%s][] : memref<?xi8, %s> to %s"
                              % (dsm, c(sum(sizes[:i])), space, ty_), nm))
    else:
        views = [e.op("memref.get_global @%s : %s" % (nm, ty_), nm) for ty_, nm, _ in tiles]
    qs, kp, vs = views[:3]
    # P: its own tile with the cp.async pipeline, else the K tile's buffer
    pbuf, pT = (views[3], psT) if pipe else (kp, kpT)
    if sym:
        cS1 = symc("%s - 1" % S)

    def clamp(gr, hint):
        return e.op("arith.minui %s, %s : index" % (gr, cS1), hint) if sym else gr
    cp_assign = {}

    def cp_tile(which, base, nrows, dst, dstT):
        """cp.async (16 bytes, L2 only) of rows base .. base+nrows-1 of
        operand `which` (rows past S read row S - 1) into dst[0 .. nrows-1];
        16-byte chunk c = tid + NT*n of the tile is row c / (D/4), dims
        (c %% (D/4))*4 .. +3 (consecutive threads, consecutive chunks).
        V rows past S are zero-filled instead (cp.async's source size 0;
        v_past_s below). Returns the copies' tokens."""
        if nrows not in cp_assign:
            cp_assign[nrows] = _cp_chunks(e, c, tid, nrows, D, NT, qkv, hd if qkv else None)
        toks = []
        for rr, cc, gcs in cp_assign[nrows]:
            gr = e.op("arith.addi %s, %s : index" % (base, rr), "cpg")
            nsrc = ""
            if which == "v" and sym:
                ok = e.op("arith.cmpi ult, %s, %s : index" % (gr, symc(S)), "vok")
                nsrc = ", " + e.op("arith.select %s, %s, %s : index" % (ok, c(4), c(0)), "vn")
            gr = clamp(gr, "cpg")
            if qkv:
                src = "%%qkv[%s, %s, %s]" % (bat, gr, gcs[which])
            else:
                src = "%%%s[%s]" % (which, gidx(gr, cc))
            toks.append(e.op("nvgpu.device_async_copy %s, %s[%s, %s], 4%s {bypassL1} : %s to %s"
                             % (src, dst, rr, cc, nsrc, mem, dstT), "cp"))
        return toks

    def cp_group(toks):
        return e.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")
    if pipe:
        e.comment("Q tile and K tile 0 -> qs, kp by cp.async (one group)")
        grp0 = cp_group(cp_tile("q", q0, BM, qs, qsT) + cp_tile("k", c(0), BN, kp, kpT))
    else:
        if sym:
            e.comment("Q tile -> qs: thread loads rows ty + %dn (rows past S read row S - 1)"
                      % NTY)
        else:
            e.comment("Q tile -> qs: thread loads rows ty + 8n, dims tx*4 .. +3")
        for n in range(BM // NTY):
            r = e.addc(ty, NTY * n, "qr")
            gr = clamp(e.op("arith.addi %s, %s : index" % (q0, r), "qg"), "qg")
            for ci, ((off, w), col) in enumerate(zip(chunks, cols)):
                v = widen(gload("q", gr, ci, w), w)
                e.line("vector.store %s, %s[%s, %s] : %s, %s" % (v, qs, r, col, qsT, vw[w]))

    def load_kv_tile(kt):
        """K and V rows of key tile kt (rows past S read row S - 1; in
        template mode without the prefetch, V's are replaced by zeros
        there: v_past_s)"""
        base = e.op("arith.muli %s, %s : index" % (kt, c(BN)), "kbase") if kt else None
        kv, vv = [], []
        for n in range(BN // NTY):
            rr = e.addc(ty, NTY * n, "kr")
            gr = e.op("arith.addi %s, %s : index" % (base, rr), "kg") if base else rr
            zsel = sym and not prefetch
            ok = e.op("arith.cmpi ult, %s, %s : index" % (gr, symc(S)), "vok") if zsel else None
            gr = clamp(gr, "kg")
            for ci, (off, w) in enumerate(chunks):
                kv.append(gload("k", gr, ci, w))
                x = gload("v", gr, ci, w)
                if zsel:
                    zg = e.const("dense<0.000000e+00>", gw[w],
                                 "zero%d" % w if et == "f32" else "zero%s_%d" % (et, w))
                    x = e.op("arith.select %s, %s, %s : %s" % (ok, x, zg, gw[w]), "vz")
                vv.append(x)
        return kv + vv

    def store_kv_tile(vals, kt=None):
        """K and V of key tile kt -> kp, vs; in template mode with the
        prefetch, the V rows past S then become zeros (v_past_s)"""
        nk = len(vals) // 2
        rrs = []
        for n in range(BN // NTY):
            rr = e.addc(ty, NTY * n, "sr")
            rrs.append(rr)
            for ci, ((off, w), col) in enumerate(zip(chunks, cols)):
                e.line("vector.store %s, %s[%s, %s] : %s, %s"
                       % (widen(vals[n * nch + ci], w), kp, rr, col, kpT, vw[w]))
                e.line("vector.store %s, %s[%s, %s] : %s, %s"
                       % (widen(vals[nk + n * nch + ci], w), vs, rr, col, vsT, vw[w]))
        if sym and prefetch and kt is not None:
            v_past_s(kt, rrs)

    def v_past_s(kt, rrs):
        """The rows of vs past S (this thread's rows rrs of key tile kt)
        overwritten with zeros: only the tile that straddles S (one
        uniform branch a tile), a per-row test inside it"""
        e.comment("V rows past S -> zeros (v_past_s; the tile that holds key S only)")
        kend = e.op("arith.muli %s, %s : index" % (e.addc(kt, 1, "ktn"), c(BN)), "kend")
        tail = e.op("arith.cmpi ugt, %s, %s : index" % (kend, symc(S)), "vtail")
        e.line("scf.if %s {" % tail)
        e.indent += 2
        kb_ = e.op("arith.muli %s, %s : index" % (kt, c(BN)), "vkb")
        for rr in rrs:
            past = e.op("arith.cmpi uge, %s, %s : index"
                        % (e.op("arith.addi %s, %s : index" % (kb_, rr), "vrow"), symc(S)), "vpast")
            e.line("scf.if %s {" % past)
            e.indent += 2
            for (off, w), col in zip(chunks, cols):
                z = e.const("dense<0.000000e+00>", vw[w], "zero%d" % w)
                e.line("vector.store %s, %s[%s, %s] : %s, %s" % (z, vs, rr, col, vsT, vw[w]))
            e.indent -= 2
            e.line("}")
        e.indent -= 2
        e.line("}")

    kv_types = [gw[w] for _ in range(BN // NTY) for off, w in chunks] * 2
    if pipe:
        prefetch = False
    if prefetch:
        npre = BN // NTY * nch
        e.comment("prefetch K/V tile 0 into registers (8 + 8 vector<4xf32> per thread)"
                  if not sym else "prefetch K/V tile 0 into registers (%d + %d vectors per "
                  "thread)" % (npre, npre))
        pre = load_kv_tile(None)
    else:
        pre = []
    ninf = e.const("0xFF800000", "f32", "ninf")
    zero4 = e.const("dense<0.000000e+00>", v4, "zero4")
    zerow = {4: zero4}
    if any(w == 2 for _, w in chunks):
        zerow[2] = e.const("dense<0.000000e+00>", vw[2], "zero2")
    if RPT == 4:
        e.comment("this thread's query rows r_i = ty*4 + i and key rows tx + 16j")
        r0 = e.op("arith.muli %s, %s : index" % (ty, c(4)), "r")
        rows = [r0] + [e.op("arith.addi %s, %s : index" % (r0, c(i)), "r") for i in range(1, 4)]
    else:
        # the two row groups of a warp read adjacent Q (and P) rows: distinct banks
        e.comment("this thread's query rows r_i = ty + %d*i (i < %d) and key rows tx + 16j"
                  % (NTY, RPT))
        rows = [ty] + [e.addc(ty, NTY * i, "r") for i in range(1, RPT)]
    krows = [tx] + [e.op("arith.addi %s, %s : index" % (tx, c(16 * j)), "kj") for j in range(1, 4)]
    qidx = [e.op("vector.broadcast %s : index to vector<4xindex>"
                 % e.op("arith.addi %s, %s : index" % (q0, rows[i]), "qi"), "qiv")
            for i in range(RPT)]
    kofs = e.op("vector.broadcast %s : index to vector<4xindex>" % tx, "txv")
    kofs = e.op("arith.addi %s, %s : vector<4xindex>"
                % (kofs, e.const("dense<[0, 16, 32, 48]>", "vector<4xindex>", "j16")), "kofs")
    scale = e.const("dense<%s>" % p.get("scale", "1.250000e-01"), v4, "scale")
    ninf4 = e.const("dense<0xFF800000>", v4, "ninf4")

    no = RPT * nch
    it_names = (["m%d" % i for i in range(RPT)] + ["l%d" % i for i in range(RPT)]
                + ["o%d" % i for i in range(no)]
                + ["pk%d" % n for n in range(len(pre) // 2)]
                + ["pv%d" % n for n in range(len(pre) // 2)])
    o_types = [vw[w] for i in range(RPT) for off, w in chunks]
    it_types = ["f32"] * (2 * RPT) + o_types + (kv_types if prefetch else [])
    inits = ([ninf] * RPT + [e.const("0.000000e+00", "f32", "zero")] * RPT
             + [zerow[w] for i in range(RPT) for off, w in chunks] + pre)
    for n in it_names:
        e.used.add(n)
    res = e.name("acc")
    kt = e.name("kt")
    e.comment("loop over the key tiles: m_i running row max, l_i this thread's partial")
    if prefetch:
        e.comment("row sum, o_i output accumulator, pk/pv the prefetched next K/V tile")
    else:
        e.comment("row sum, o_i output accumulator")
    e.line("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {"
           % (res, len(it_names), kt, c(0), nkt, c(1),
              ", ".join("%%%s = %s" % (n, v) for n, v in zip(it_names, inits)),
              ", ".join(it_types)))
    e.indent += 2
    m = ["%%m%d" % i for i in range(RPT)]
    l = ["%%l%d" % i for i in range(RPT)]
    o = ["%%o%d" % i for i in range(no)]
    pk = ["%%pk%d" % n for n in range(len(pre) // 2)]
    pv = ["%%pv%d" % n for n in range(len(pre) // 2)]
    if pipe:
        e.comment("(1) K of this tile (and Q, first time) has landed, and every thread is")
        e.comment("done with the previous tile's P and V: ps and vs may be refilled")
        e.line("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp0)
        e.line("gpu.barrier")
        e.comment("this tile's V -> vs by cp.async, in flight during QK^T and the softmax")
        kb0 = e.op("arith.muli %s, %s : index" % (kt, c(BN)), "vbase")
        grpv = cp_group(cp_tile("v", kb0, BN, vs, vsT))
        nxtv = []
    else:
        e.comment("(1) the previous tile's reads of kp (as P) and vs are done")
        e.line("gpu.barrier")
    if pipe:
        pass
    elif prefetch:
        if sym:
            store_kv_tile(pk + pv, kt)
        else:
            for n in range(8):
                rr = e.addc(ty, 8 * n, "sr")
                e.line("vector.store %s, %s[%s, %s] : %s, %s" % (pk[n], kp, rr, txc, kpT, v4))
                e.line("vector.store %s, %s[%s, %s] : %s, %s" % (pv[n], vs, rr, txc, vsT, v4))
        e.comment("prefetch the next tile (the last one again on the last iteration)")
        nxt = e.op("arith.addi %s, %s : index" % (kt, c(1)), "ktn")
        last = e.op("arith.subi %s, %s : index" % (nkt, c(1)), "ktl")
        nxt = e.op("arith.minui %s, %s : index" % (nxt, last), "ktn")
        nxtv = load_kv_tile(nxt)
    else:
        e.comment("this tile's K and V -> kp, vs (key rows past S read row S - 1)")
        store_kv_tile(load_kv_tile(kt), kt)
        nxtv = []
    if not pipe:
        e.comment("(2) K and V (and Q, first time) are in shared memory")
        e.line("gpu.barrier")
    e.comment("S[r_i, tx+16j] = sum_d Q[r_i, d] K[tx+16j, d], %d dims per iteration" % (4 * U))
    sacc = e.name("s")
    dc = e.name("dc")
    sa = ["%%sa%d" % i for i in range(RPT)]
    for n in sa:
        e.used.add(n[1:])
    e.line("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {"
           % (sacc, RPT, dc, c(0), c(D), c(4 * U),
              ", ".join("%s = %s" % (n, zero4) for n in sa), ", ".join([v4] * RPT)))
    e.indent += 2
    acc = list(sa)
    for u2 in range(U):
        col = e.addc(dc, 4 * u2, "d")
        kk = [e.op("vector.load %s[%s, %s] : %s, %s" % (kp, krows[j], col, kpT, v4), "kd")
              for j in range(4)]
        # kt_u = [k_0[u], k_1[u], k_2[u], k_3[u]]: dim col+u of the 4 keys
        kel = [[e.op("vector.extract %s[%d] : f32 from %s" % (kk[j], u, v4), "ke")
                for u in range(4)] for j in range(4)]
        kcols = [e.op("vector.from_elements %s : %s"
                      % (", ".join(kel[j][u] for j in range(4)), v4), "kt")
                 for u in range(4)]
        for i in range(RPT):
            qv = e.op("vector.load %s[%s, %s] : %s, %s" % (qs, rows[i], col, qsT, v4), "qd")
            for u in range(4):
                qe = e.op("vector.extract %s[%d] : f32 from %s" % (qv, u, v4), "qe")
                qb = e.op("vector.broadcast %s : f32 to %s" % (qe, v4), "qb")
                acc[i] = e.op("vector.fma %s, %s, %s : %s" % (qb, kcols[u], acc[i], v4), "sa")
    e.line("scf.yield %s : %s" % (", ".join(acc), ", ".join([v4] * RPT)))
    e.indent -= 2
    e.line("}")
    if pipe:
        e.comment("(2) every thread is done reading K: the next tile's K -> kp by cp.async,")
        e.comment("in flight during the softmax and PV")
        e.line("gpu.barrier")
        more = e.op("arith.cmpi ult, %s, %s : index"
                    % (e.op("arith.addi %s, %s : index" % (kt, c(1)), "ktn"), nkt), "more")
        e.line("scf.if %s {" % more)
        e.indent += 2
        kbn = e.op("arith.muli %s, %s : index" % (e.op("arith.addi %s, %s : index"
                                                         % (kt, c(1)), "ktn"), c(BN)), "kbase")
        cp_group(cp_tile("k", kbn, BN, kp, kpT))
        e.indent -= 2
        e.line("}")
    else:
        e.comment("(3) every thread is done reading K: kp may now take P")
        e.line("gpu.barrier")
    e.comment("scale, causal mask (key > query -> -inf), running max, p = exp(s - m)")
    kbase = e.op("arith.muli %s, %s : index" % (kt, c(BN)), "kb")
    kidx = e.op("arith.addi %s, %s : vector<4xindex>"
                % (e.op("vector.broadcast %s : index to vector<4xindex>" % kbase, "kbv"), kofs),
                "kidx")
    newm, newl, newo = [], [], []
    for i in range(RPT):
        sc = e.op("arith.mulf %s#%d, %s : %s" % (sacc, i, scale, v4), "sc")
        msk = e.op("arith.cmpi ugt, %s, %s : vector<4xindex>" % (kidx, qidx[i]), "msk")
        sc = e.op("arith.select %s, %s, %s : vector<4xi1>, %s" % (msk, ninf4, sc, v4), "sm")
        tm = e.op("vector.reduction <maximumf>, %s : %s into f32" % (sc, v4), "tmax")
        tm = warp_allreduce(e, tm, "max", offsets=(8, 4, 2, 1), hint="tmax")
        mn = e.op("arith.maximumf %s, %s : f32" % (m[i], tm), "mnew")
        # m_exp: the max the exponentials are taken against. In template
        # mode a running max of -inf (every key so far masked or -inf)
        # becomes 0 there, so that those keys weigh exp(-inf) = 0 and the
        # rescale is exp(-inf) = 0, not exp(-inf - -inf) = NaN: a later
        # finite key then gives the IR's finite result (its softmax takes
        # the row's final max); a row that is -inf throughout still ends
        # as 0 / 0 = NaN, as the IR's exp(-inf - -inf). (v_past_s below.)
        me = mn
        if sym:
            me = e.op("arith.select %s, %s, %s : f32" % (
                e.op("arith.cmpf oeq, %s, %s : f32" % (mn, ninf), "mninf"),
                e.const("0.000000e+00", "f32", "zero"), mn), "mexp")
        al = e.op("math.exp %s : f32" % e.op("arith.subf %s, %s : f32" % (m[i], me), "dm"), "alpha")
        mnv = e.op("vector.broadcast %s : f32 to %s" % (me, v4), "mnewv")
        pe = e.op("math.exp %s : %s" % (e.op("arith.subf %s, %s : %s" % (sc, mnv, v4), "sd"), v4), "p")
        psum = e.op("vector.reduction <add>, %s : %s into f32" % (pe, v4), "psum")
        ln = e.op("arith.addf %s, %s : f32"
                  % (e.op("arith.mulf %s, %s : f32" % (l[i], al), "ls"), psum), "lnew")
        alv = e.op("vector.broadcast %s : f32 to %s" % (al, v4), "alphav")
        for ci, (off, w) in enumerate(chunks):
            a_ = alv if w == 4 else e.op("vector.broadcast %s : f32 to %s" % (al, vw[w]),
                                         "alphav")
            newo.append(e.op("arith.mulf %s, %s : %s" % (o[i * nch + ci], a_, vw[w]), "os"))
        newm.append(mn)
        newl.append(ln)
        for j in range(4):
            pj = e.op("vector.extract %s[%d] : f32 from %s" % (pe, j, v4), "pj")
            e.line("memref.store %s, %s[%s, %s] : %s" % (pj, pbuf, rows[i], krows[j], pT))
    if pipe:
        e.comment("(3) P is in ps; this tile's V has landed (the next K may still be in flight)")
        e.line("scf.if %s {" % more)
        e.line("  nvgpu.device_async_wait %s {numGroups = 1 : i32}" % grpv)
        e.line("} else {")
        e.line("  nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grpv)
        e.line("}")
    else:
        e.comment("(4) P is in kp rows 0 .. %d" % (BM - 1))
    e.line("gpu.barrier")
    if sym:
        e.comment("O[r_i, cols] += sum_j P[r_i, j] V[j, cols], %d keys per iteration" % (4 * U))
    else:
        e.comment("O[r_i, tx*4 .. +3] += sum_j P[r_i, j] V[j, tx*4 .. +3], %d keys per iteration"
                  % (4 * U))
    oacc = e.name("oacc")
    jc = e.name("j")
    oa = ["%%oa%d" % i for i in range(no)]
    for n in oa:
        e.used.add(n[1:])
    e.line("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {"
           % (oacc, no, jc, c(0), c(BN), c(4 * U),
              ", ".join("%s = %s" % (n, v) for n, v in zip(oa, newo)), ", ".join(o_types)))
    e.indent += 2
    acc = list(oa)
    for u2 in range(U):
        j4 = e.addc(jc, 4 * u2, "jj")
        vrow = [[e.op("vector.load %s[%s, %s] : %s, %s"
                      % (vs, e.addc(jc, 4 * u2 + u, "jj"), col, vsT, vw[w]), "vrow")
                 for u in range(4)] for (off, w), col in zip(chunks, cols)]
        for i in range(RPT):
            pvv = e.op("vector.load %s[%s, %s] : %s, %s" % (pbuf, rows[i], j4, pT, v4), "pi")
            for u in range(4):
                pe_ = e.op("vector.extract %s[%d] : f32 from %s" % (pvv, u, v4), "pe")
                for ci, (off, w) in enumerate(chunks):
                    pb = e.op("vector.broadcast %s : f32 to %s" % (pe_, vw[w]), "pb")
                    k_ = i * nch + ci
                    acc[k_] = e.op("vector.fma %s, %s, %s : %s"
                                   % (pb, vrow[ci][u], acc[k_], vw[w]), "oa")
    e.line("scf.yield %s : %s" % (", ".join(acc), ", ".join(o_types)))
    e.indent -= 2
    e.line("}")
    e.line("scf.yield %s : %s"
           % (", ".join(newm + newl + ["%s#%d" % (oacc, i) for i in range(no)] + nxtv),
              ", ".join(it_types)))
    e.indent -= 2
    e.line("}")
    e.comment("row sums over the 16 threads of each row group, then out = O / l")
    for i in range(RPT):
        lt = warp_allreduce(e, "%s#%d" % (res, RPT + i), "add", offsets=(8, 4, 2, 1), hint="lsum")
        lv = e.op("vector.broadcast %s : f32 to %s" % (lt, v4), "lsumv")
        ovs = []
        for ci, (off, w) in enumerate(chunks):
            l_ = lv if w == 4 else e.op("vector.broadcast %s : f32 to %s" % (lt, vw[w]), "lsumv")
            ovs.append(e.op("arith.divf %s#%d, %s : %s" % (res, 2 * RPT + i * nch + ci, l_, vw[w]),
                            "o"))
        gr = e.op("arith.addi %s, %s : index" % (q0, rows[i]), "orow")
        if sym:
            ok = e.op("arith.cmpi ult, %s, %s : index" % (gr, symc(S)), "orow_ok")
            e.line("scf.if %s {" % ok)
            e.indent += 2
        if qkv:
            otr = e.op("arith.addi %s, %s : index"
                       % (e.op("arith.muli %s, %s : index" % (bat, symc(S)), "obase"), gr), "orow")
        for ci, (ov, (off, w), col) in enumerate(zip(ovs, chunks, cols)):
            if et != "f32":
                ov = e.op("arith.truncf %s : %s to %s" % (ov, vw[w], gw[w]), "ot")
            if qkv:
                e.line("vector.store %s, %%out[%s, %s] : %s, %s"
                       % (ov, otr, gcols["out"][ci], omem, gw[w]))
            else:
                e.line("vector.store %s, %%out[%s] : %s, %s" % (ov, gidx(gr, col), mem, gw[w]))
        if sym:
            e.indent -= 2
            e.line("}")
    if p.get("MINB"):
        # blocks per multiprocessor ptxas must allow (.minnctapersm): a register cap
        e.extra_attrs += ", nvvm.minctasm = %d : i32" % p["MINB"]
    args = ["%%q: %s" % mem, "%%k: %s" % mem, "%%v: %s" % mem, "%%out: %s" % mem]
    if qkv:
        args = ["%%qkv: %s" % mem, "%%out: %s" % omem]
        grid = "{{%s * %d * ((%s + %d) / %d)}}" % (qkv["B"], H, S, BM - 1, BM)
        return (NT, grid), e, args, globals_
    if sym:
        grid = "{{%s * ((%s + %d) / %d)}}" % (H, S, BM - 1, BM)
        return (NT, grid), e, args, globals_
    return (NT, H * NQT), e, args, globals_


def gen_attention_tf32(p):
    """Causal multi-head attention on TF32 tensor cores (template mode only;
    kernels/table/attn_any.py's precision "tf32" entries, served only to
    subgraphs compiled with the pass option tf32=1).

    The interface and the shape forms are gen_attention's (p["S"], p["H"],
    p["D"] a multiple of 8, p["scale"], p["qkv"] for the fused-QKV form,
    else q, k, v, out [S, H, D]; f32 only). NW warps per block (p["NW"],
    4 or 8), each owning 16 query rows of the BM = 16 NW row tile; key
    tiles of BN = 64, heaviest query tiles first, tiles past the diagonal
    skipped, rows past S clamped and not stored, as gen_attention.

    Per key tile each warp computes S = Q K^T (16 x 64) with
    mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32 (nvgpu.mma.sync
    tf32Enabled), every operand rounded to TF32 as it leaves shared memory
    (cvt.rna.tf32.f32: nearest, ties away), f32 accumulation; the scale,
    the causal mask and the online softmax in f32 on the accumulator
    fragments (row max and sum over the 4 lanes of a quad); then O += P V
    with P straight from the S fragments (rounded to TF32): the m16n8
    accumulator of keys 8kk .. 8kk+7 holds, in lane (g, t), keys 2t and
    2t+1 of rows g and g+8, which is the A fragment of the k-step whose
    k index t stands for key 2t and t+4 for key 2t+1; the V fragment is
    read with the same key order (b0 = V[8kk + 2t][n], b1 = V[8kk + 2t +
    1][n]). The output is divided by the row sum once at the end.

    Shared memory (dynamic): Q [BM][D + 4], K and V [BN][D + 4] (row
    stride = 4 mod 32 words: the fragment reads K[g][t], Q[g][t] hit banks
    4g + t, V[2t][g] banks 8t + g, all distinct), filled by cp.async
    (16-byte copies) as gen_attention's pipe="cpasync": V of a tile in
    flight during QK^T and the softmax, K of the next tile during the
    softmax and PV; three barriers per key tile. p["QREG"] keeps the Q
    fragments (rounded) in registers for the whole kernel instead of
    reading them from shared memory at every tile.
    """
    S, H, D = p["S"], p["H"], p["D"]
    NW = p.get("NW", 4)
    QREG = bool(p.get("QREG", 0))
    TERMS, PVTERMS = p.get("TERMS", 1), p.get("PVTERMS", 1)
    RND = p.get("RND", "cvt")
    assert NW in (4, 8) and D % 8 == 0 and D % 4 == 0, (NW, D)
    assert TERMS in (1, 3) and PVTERMS in (1, 3) and RND in ("cvt", "add"), (TERMS, PVTERMS)
    assert not (QREG and TERMS == 3), "QREG holds one-term fragments"
    BM, BN, PAD = 16 * NW, 64, D + 4
    NT = 32 * NW
    qkv = p.get("qkv")
    e = Emitter(("qkv", "out") if qkv else ("q", "k", "v", "out"))
    c = e.idx
    if qkv:
        assert isinstance(H, int) and qkv["C"] == H * D, (H, D, qkv)
        mem = "memref<{{%s}}x{{%s}}x%dxf32>" % (qkv["B"], S, 3 * qkv["C"])
        omem = "memref<{{%s}}x%dxf32>" % (qkv["BT"], qkv["C"])
    else:
        mem = "memref<{{%s}}x{{%s}}x%dxf32>" % (S, H, D)

    def symc(expr):
        return e.const("{{%s}}" % expr, "index", "c_" + re.sub(r"[^A-Za-z0-9]+", "_", expr)
                       .strip("_"))
    space = SMEM
    tT = {n: "memref<%dx%dxf32, %s>" % (r, PAD, space) for n, r in (("qs", BM), ("ks", BN),
                                                                       ("vs", BN))}
    sizes = [4 * BM * PAD, 4 * BN * PAD, 4 * BN * PAD]
    e.extra_attrs = ", llm_fuse.dynamic_shared_memory = %d : i32" % sum(sizes)
    tid = e.op("gpu.thread_id x", "tid")
    bid = e.op("gpu.block_id x", "bid")
    if qkv:
        e.comment("heaviest query tiles first: block b -> (batch, head) b %% (B*H), query "
                  "tile ceil(T / %d) - 1 - b / (B*H)" % BM)
        cH = symc("%s * %d" % (qkv["B"], H))
    else:
        e.comment("heaviest query tiles first: block b -> head b %% H, query tile "
                  "ceil(S / %d) - 1 - b / H" % BM)
        cH = symc(H)
    cLast = symc("(%s + %d) / %d - 1" % (S, BM - 1, BM))
    h = e.op("arith.remui %s, %s : index" % (bid, cH), "bh" if qkv else "head")
    bq = e.op("arith.divui %s, %s : index" % (bid, cH), "bq")
    if qkv:
        bat = e.op("arith.divui %s, %s : index" % (h, c(H)), "batch")
        h = e.op("arith.remui %s, %s : index" % (h, c(H)), "head")
        hd = e.op("arith.muli %s, %s : index" % (h, c(D)), "hcol")
    qt = e.op("arith.subi %s, %s : index" % (cLast, bq), "qt")
    q0 = e.op("arith.muli %s, %s : index" % (qt, c(BM)), "q0")
    e.comment("key tiles 0 .. nkt-1 cover keys 0 .. q0+%d; later tiles are fully masked"
              % (BM - 1))
    nkt = e.op("arith.addi %s, %s : index" % (e.op("arith.divui %s, %s : index" % (
        e.addc(q0, BM - 1, "qlast"), c(BN)), "klast"), c(1)), "nkt")
    cS1 = symc("%s - 1" % S)
    warp = e.op("arith.divui %s, %s : index" % (tid, c(32)), "warp")
    lane = e.op("arith.remui %s, %s : index" % (tid, c(32)), "lane")
    g = e.op("arith.divui %s, %s : index" % (lane, c(4)), "g")
    t = e.op("arith.remui %s, %s : index" % (lane, c(4)), "t")
    wr = e.op("arith.muli %s, %s : index" % (warp, c(16)), "wrow")
    ra = e.op("arith.addi %s, %s : index" % (wr, g), "ra")      # tile row g
    rb = e.addc(ra, 8, "rb")                                      # tile row g + 8
    t4 = e.addc(t, 4, "t4")
    t2 = e.op("arith.muli %s, %s : index" % (t, c(2)), "t2")
    t21 = e.addc(t2, 1, "t21")

    wg = "#gpu.address_space<workgroup>"
    dsm = e.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % wg, "dsm")
    dsm = e.op("memref.memory_space_cast %s : memref<?xi8, %s> to memref<?xi8, %s>"
               % (dsm, wg, space), "dsm3")
    bufs = {}
    for i, n in enumerate(("qs", "ks", "vs")):
        bufs[n] = e.op("memref.view %s[%s][] : memref<?xi8, %s> to %s"
                       % (dsm, c(sum(sizes[:i])), space, tT[n]), n)
    cp_assign = {}

    def cp_tile(which, base, nrows, dst):
        """cp.async of rows base .. base+nrows-1 of operand `which` (rows
        past S read row S - 1); chunk tid + NT*n: row c / (D/4), dims
        (c % (D/4))*4 .. +3."""
        if nrows not in cp_assign:
            cp_assign[nrows] = _cp_chunks(e, c, tid, nrows, D, NT, qkv, hd if qkv else None)
        toks = []
        for rr, cc, gcs in cp_assign[nrows]:
            gr = e.op("arith.minui %s, %s : index"
                      % (e.op("arith.addi %s, %s : index" % (base, rr), "cpg"), cS1), "cpg")
            src = ("%%qkv[%s, %s, %s]" % (bat, gr, gcs[which]) if qkv
                   else "%%%s[%s, %s, %s]" % (which, gr, h, cc))
            toks.append(e.op("nvgpu.device_async_copy %s, %s[%s, %s], 4 {bypassL1} : %s to %s"
                             % (src, bufs[dst], rr, cc, mem, tT[dst]), "cp"))
        return e.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    def clamp_own(buf, nrows):
        """The 16-byte chunks of buf this thread copied (cp_tile), after its
        cp.async.wait_group and before the barrier that publishes them,
        clamped in place to +-max TF32 (fmin/fmax: NaN becomes a bound), so
        that the three-term split never overflows: big = rna(x) of an
        infinity or of a finite x above max TF32 would be Inf and small =
        x - big NaN, a NaN score where the reference's -Inf gives weight 0.
        An input that is clamped makes the reference's output non-finite
        wherever the clamp could change ours (a +Inf or NaN score makes its
        row NaN; a non-finite V makes its column NaN in every row, the
        masked keys' 0 x Inf included), and the verifier allows a finite
        value there for attention-like subgraphs (--lenient-nonfinite);
        a -Inf score stays a weight of 0 (q x -max TF32 is -Inf or hugely
        negative), a huge finite x moves by less than a TF32 ulp."""
        mx = e.const("dense<0x7F7FE000>", "vector<4xf32>", "tf32_max")
        mn = e.const("dense<0xFF7FE000>", "vector<4xf32>", "tf32_min")
        for rr, cc, _ in cp_assign[nrows]:
            x = e.op("vector.load %s[%s, %s] : %s, vector<4xf32>" % (bufs[buf], rr, cc, tT[buf]),
                     "raw")
            x = e.op("arith.maxnumf %s, %s : vector<4xf32>" % (e.op(
                "arith.minnumf %s, %s : vector<4xf32>" % (x, mx), "cl"), mn), "cl")
            e.line("vector.store %s, %s[%s, %s] : %s, vector<4xf32>" % (x, bufs[buf], rr, cc,
                                                                     tT[buf]))

    def tf32(x):
        """x as an mma operand, rounded to TF32 (nearest, ties away)"""
        if RND == "add":
            # half a TF32 ulp added to the bits; the tensor core ignores the
            # low 13 bits (CUTLASS's round_half_ulp_truncate)
            xi = e.op("arith.bitcast %s : f32 to i32" % x, "xi")
            return e.op("arith.bitcast %s : i32 to f32" % e.op(
                "arith.addi %s, %s : i32" % (xi, e.const(0x1000, "i32", "half_ulp")), "tfi"),
                "tf")
        r = e.op("nvvm.convert.float.to.tf32 %s {rnd = #nvvm.fp_rnd_mode<rna>}" % x, "tfi")
        return e.op("arith.bitcast %s : i32 to f32" % r, "tf")

    def split(x):
        """(big, small) operands of x for three-term products: big = x
        rounded to TF32 (nearest, ties away), small = x - big rounded. x
        is finite and within +-max TF32 (clamp_own), or P (finite or NaN)."""
        xi = e.op("arith.bitcast %s : f32 to i32" % x, "xi")
        bi = e.op("arith.andi %s, %s : i32" % (e.op("arith.addi %s, %s : i32" % (
            xi, e.const(0x1000, "i32", "half_ulp")), "bi"), e.const(-8192, "i32", "tf32_mask")),
            "bi")
        big = e.op("arith.bitcast %s : i32 to f32" % bi, "big")
        return big, tf32(e.op("arith.subf %s, %s : f32" % (x, big), "small"))

    def mma_terms(a, b, acc, hint):
        """acc + a b over one-term (a, b operands) or three-term ((big,
        small) pairs: small_a big_b + big_a small_b + big_a big_b) inputs"""
        if isinstance(a, tuple):
            for x_, y_ in ((a[1], b[0]), (a[0], b[1]), (a[0], b[0])):
                acc = e.op(MMA % (x_, y_, acc), hint)
            return acc
        return e.op(MMA % (a, b, acc), hint)

    def operand(vals, ty, hint, terms):
        """the fragment of the f32 values vals: rounded (one term) or
        (big, small)"""
        if terms == 1:
            return e.op("vector.from_elements %s : %s" % (", ".join(tf32(x) for x in vals), ty),
                        hint)
        pairs = [split(x) for x in vals]
        return tuple(e.op("vector.from_elements %s : %s" % (", ".join(pr[i] for pr in pairs), ty),
                          hint) for i in range(2))

    def lds(buf, r, col):
        return e.op("memref.load %s[%s, %s] : %s" % (bufs[buf], r, col, tT[buf]), buf[0] + "e")

    V4x1, V2x1, V2x2 = "vector<4x1xf32>", "vector<2x1xf32>", "vector<2x2xf32>"
    MMA = ("nvgpu.mma.sync (%s, %s, %s) {mmaShape = [16, 8, 8], tf32Enabled} : "
           "(vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>")
    kcols = {}

    def kcol(k):
        if k not in kcols:
            kcols[k] = (e.addc(t, k, "kc"), e.addc(t4, k, "kc"))
        return kcols[k]

    def q_frag(kk):
        """A fragment of Q for dims 8kk .. 8kk+7, rounded: (g, t), (g+8, t),
        (g, t+4), (g+8, t+4) of this warp's 16 rows"""
        ca, cb = kcol(8 * kk)
        return operand([lds("qs", r_, c_) for r_, c_ in ((ra, ca), (rb, ca), (ra, cb), (rb, cb))],
                       V4x1, "qa", TERMS)

    e.comment("Q tile and K tile 0 -> qs, ks by cp.async (one group)")
    cp_tile("q", q0, BM, "qs")
    grp0 = cp_tile("k", c(0), BN, "ks")
    qfr = None
    if TERMS == 3:
        e.comment("Q has landed (this thread's copies): clamped in place (clamp_own)")
        e.line("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp0)
        clamp_own("qs", BM)
    if QREG:
        e.comment("Q fragments (rounded to TF32) kept in registers")
        e.line("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp0)
        e.line("gpu.barrier")
        qfr = [q_frag(kk) for kk in range(D // 8)]

    ninf = e.const("0xFF800000", "f32", "ninf")
    zero = e.const("0.000000e+00", "f32", "zero")
    zacc = e.const("dense<0.000000e+00>", V2x2, "zacc")
    scale = e.const("dense<%s>" % p["scale"], V2x2, "scale")
    ninf2 = e.const("dense<0xFF800000>", V2x2, "ninf2")
    e.comment("lane (g, t) holds keys 2t, 2t+1 of rows g, g+8 in each n-tile: their indices")
    kofs = e.op("vector.from_elements %s, %s, %s, %s : vector<2x2xindex>" % (t2, t21, t2, t21),
                "kofs")
    qa_ = e.op("arith.addi %s, %s : index" % (q0, ra), "qia")
    qb_ = e.op("arith.addi %s, %s : index" % (q0, rb), "qib")
    qidx = e.op("vector.from_elements %s, %s, %s, %s : vector<2x2xindex>" % (qa_, qa_, qb_, qb_),
                "qidx")
    NO = D // 8
    NS = BN // 8
    it_names = ["m0", "m1", "l0", "l1"] + ["o%d" % i for i in range(NO)]
    for n in it_names:
        e.used.add(n)
    it_types = ["f32"] * 4 + [V2x2] * NO
    res, kt = e.name("acc"), e.name("kt")
    e.comment("loop over the key tiles: m running row max (rows g, g+8), l this lane's partial "
              "row sum, o the output fragments (dims 8i + 2t, +1)")
    e.line("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {"
           % (res, len(it_names), kt, c(0), nkt, c(1),
              ", ".join("%%%s = %s" % (n, v) for n, v in
                        zip(it_names, [ninf, ninf, zero, zero] + [zacc] * NO)),
              ", ".join(it_types)))
    e.indent += 2
    e.comment("(1) K of this tile (and Q, first time) has landed; every warp is done with "
              "the previous tile's V")
    e.line("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp0)
    if TERMS == 3:
        clamp_own("ks", BN)
    e.line("gpu.barrier")
    kb = e.op("arith.muli %s, %s : index" % (kt, c(BN)), "kb")
    e.comment("this tile's V -> vs by cp.async, in flight during QK^T and the softmax")
    grpv = cp_tile("v", kb, BN, "vs")
    e.comment("S = Q K^T: %d n-tiles of 8 keys x %d k-steps of 8 dims" % (NS, D // 8))
    sacc = [zacc] * NS
    for kk in range(D // 8):
        a = qfr[kk] if QREG else q_frag(kk)
        ca, cb = kcol(8 * kk)
        for nt in range(NS):
            kr = e.addc(g, 8 * nt, "kr")
            b = operand([lds("ks", kr, ca), lds("ks", kr, cb)], V2x1, "kb", TERMS)
            sacc[nt] = mma_terms(a, b, sacc[nt], "s")
    e.comment("(2) every warp is done reading K: the next tile's K -> ks by cp.async")
    e.line("gpu.barrier")
    ktn = e.addc(kt, 1, "ktn")
    more = e.op("arith.cmpi ult, %s, %s : index" % (ktn, nkt), "more")
    e.line("scf.if %s {" % more)
    e.indent += 2
    cp_tile("k", e.op("arith.muli %s, %s : index" % (ktn, c(BN)), "kbn"), BN, "ks")
    e.indent -= 2
    e.line("}")
    e.comment("scale, causal mask (key > query -> -inf), running max, p = exp(s - m)")
    kbv = e.op("arith.addi %s, %s : vector<2x2xindex>"
               % (e.op("vector.broadcast %s : index to vector<2x2xindex>" % kb, "kbv"), kofs),
               "kbv")
    sc = []
    for nt in range(NS):
        kidx = kbv if nt == 0 else e.op(
            "arith.addi %s, %s : vector<2x2xindex>"
            % (kbv, e.const("dense<%d>" % (8 * nt), "vector<2x2xindex>", "k%d" % (8 * nt))),
            "kidx")
        x = e.op("arith.mulf %s, %s : %s" % (sacc[nt], scale, V2x2), "sc")
        msk = e.op("arith.cmpi ugt, %s, %s : vector<2x2xindex>" % (kidx, qidx), "msk")
        sc.append(e.op("arith.select %s, %s, %s : vector<2x2xi1>, %s" % (msk, ninf2, x, V2x2),
                       "sm"))
    mx = sc[0]
    for x in sc[1:]:
        mx = e.op("arith.maximumf %s, %s : %s" % (mx, x, V2x2), "mx")
    mnew, alpha = [], []
    for r_ in range(2):
        row = e.op("vector.extract %s[%d] : vector<2xf32> from %s" % (mx, r_, V2x2), "mxr")
        tm = e.op("vector.reduction <maximumf>, %s : vector<2xf32> into f32" % row, "tmax")
        tm = warp_allreduce(e, tm, "max", offsets=(1, 2), hint="tmax")
        mn = e.op("arith.maximumf %%m%d, %s : f32" % (r_, tm), "mnew")
        alpha.append(e.op("math.exp %s : f32" % e.op("arith.subf %%m%d, %s : f32" % (r_, mn),
                                                     "dm"), "alpha"))
        mnew.append(mn)
    mn2 = e.op("vector.from_elements %s, %s, %s, %s : %s"
               % (mnew[0], mnew[0], mnew[1], mnew[1], V2x2), "mnew2")
    al2 = e.op("vector.from_elements %s, %s, %s, %s : %s"
               % (alpha[0], alpha[0], alpha[1], alpha[1], V2x2), "alpha2")
    pe, psum = [], None
    for nt in range(NS):
        x = e.op("math.exp %s : %s" % (e.op("arith.subf %s, %s : %s" % (sc[nt], mn2, V2x2),
                                            "sd"), V2x2), "p")
        pe.append(x)
        psum = x if psum is None else e.op("arith.addf %s, %s : %s" % (psum, x, V2x2), "psum")
    lnew = []
    for r_ in range(2):
        row = e.op("vector.extract %s[%d] : vector<2xf32> from %s" % (psum, r_, V2x2), "psr")
        ps_ = e.op("vector.reduction <add>, %s : vector<2xf32> into f32" % row, "ps")
        lnew.append(e.op("arith.addf %s, %s : f32"
                         % (e.op("arith.mulf %%l%d, %s : f32" % (r_, alpha[r_]), "ls"), ps_),
                         "lnew"))
    oacc = [e.op("arith.mulf %%o%d, %s : %s" % (i, al2, V2x2), "os") for i in range(NO)]
    e.comment("P as A fragments (rounded to TF32): k index t is key 2t, t+4 is key 2t+1")
    pa = []
    for nt in range(NS):
        pa.append(operand([e.op("vector.extract %s[%d, %d] : f32 from %s"
                                % (pe[nt], i_, j_, V2x2), "pv")
                           for i_, j_ in ((0, 0), (1, 0), (0, 1), (1, 1))], V4x1, "pa", PVTERMS))
    e.comment("(3) this tile's V has landed (the next K may still be in flight)")
    e.line("scf.if %s {" % more)
    e.line("  nvgpu.device_async_wait %s {numGroups = 1 : i32}" % grpv)
    e.line("} else {")
    e.line("  nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grpv)
    e.line("}")
    if PVTERMS == 3:
        clamp_own("vs", BN)
    e.line("gpu.barrier")
    e.comment("O += P V: %d k-steps of 8 keys x %d n-tiles of 8 dims" % (NS, NO))
    vrow = {}
    for kk in range(NS):
        v0 = e.addc(t2, 8 * kk, "vr")
        v1 = e.addc(t21, 8 * kk, "vr")
        for nt in range(NO):
            if nt not in vrow:
                vrow[nt] = e.addc(g, 8 * nt, "vc")
            b = operand([lds("vs", v0, vrow[nt]), lds("vs", v1, vrow[nt])], V2x1, "vb", PVTERMS)
            oacc[nt] = mma_terms(pa[kk], b, oacc[nt], "o")
    e.line("scf.yield %s : %s" % (", ".join(mnew + lnew + oacc), ", ".join(it_types)))
    e.indent -= 2
    e.line("}")
    e.comment("row sums over the quad, out = O / l; rows past S are not stored")
    ls = [warp_allreduce(e, "%s#%d" % (res, 2 + r_), "add", offsets=(1, 2), hint="lsum")
          for r_ in range(2)]
    for r_, rr in enumerate((ra, rb)):
        gr = e.op("arith.addi %s, %s : index" % (q0, rr), "orow")
        ok = e.op("arith.cmpi ult, %s, %s : index" % (gr, symc(S)), "orow_ok")
        lv = e.op("vector.broadcast %s : f32 to vector<2xf32>" % ls[r_], "lsumv")
        e.line("scf.if %s {" % ok)
        e.indent += 2
        if qkv:
            otr = e.op("arith.addi %s, %s : index"
                       % (e.op("arith.muli %s, %s : index" % (bat, symc(S)), "obase"), gr),
                       "orow")
        for nt in range(NO):
            ov = e.op("vector.extract %s#%d[%d] : vector<2xf32> from %s"
                      % (res, 4 + nt, r_, V2x2), "ov")
            ov = e.op("arith.divf %s, %s : vector<2xf32>" % (ov, lv), "o")
            col = e.addc(t2, 8 * nt, "ocol")
            if qkv:
                e.line("vector.store %s, %%out[%s, %s] : %s, vector<2xf32>"
                       % (ov, otr, e.op("arith.addi %s, %s : index" % (hd, col), "ocol"), omem))
            else:
                e.line("vector.store %s, %%out[%s, %s, %s] : %s, vector<2xf32>"
                       % (ov, gr, h, col, mem))
        e.indent -= 2
        e.line("}")
    if p.get("MINB"):
        # blocks per multiprocessor ptxas must allow (.minnctapersm): a register cap
        e.extra_attrs += ", nvvm.minctasm = %d : i32" % p["MINB"]
    if qkv:
        args = ["%%qkv: %s" % mem, "%%out: %s" % omem]
        grid = "{{%s * %d * ((%s + %d) / %d)}}" % (qkv["B"], H, S, BM - 1, BM)
    else:
        args = ["%%q: %s" % mem, "%%k: %s" % mem, "%%v: %s" % mem, "%%out: %s" % mem]
        grid = "{{%s * ((%s + %d) / %d)}}" % (H, S, BM - 1, BM)
    return (NT, grid), e, args, []


def gen_attention_mma16(p):
    """Causal multi-head attention for bf16/f16 buffers on tensor cores
    (template mode only; kernels/table/attn_any.py's "-0mma" entries of the
    16-bit forms, tried before gen_attention's SIMT kernel of the same key).

    FlashAttention-2 style on mma.sync m16n8k16 (f32 accumulation; the
    nvvm.mma.sync helper of gen_gemm.py). p: S, H (placeholder tokens or
    "1"), D (a multiple of 16), scale (the IR's constant as the 16-bit
    type holds it, an f32 literal), dtype (bf16 or f16), rank2 (H = 1: the
    buffers are S x D). NW = p.get("NW", 4) warps per block, each owning
    16 query rows of the BM = 16 NW row tile; key tiles of BN = 64; grid
    H x ceil(S / BM), heaviest query tiles first; tiles past the diagonal
    skipped; query rows past S read row S - 1 and are not stored, key rows
    past S read row S - 1 and are masked by the causal mask (a key past S
    is later than every valid query), as gen_attention's template mode.

    Shared memory (dynamic): Q [BM][D + 8], K and V [2][BN][D + 8] (a
    16-byte pad per row: the eight 16-byte rows of each ldmatrix phase hit
    distinct banks), filled by cp.async (16-byte copies, L2 only): Q and
    key tile 0 in the prologue, key tile kt + 1 (K and V, one group) into
    the other stage while tile kt is computed: one barrier per key tile.
    Q's A fragments are read once (ldmatrix.x4) and kept in registers.

    Per key tile each warp computes its 16 x 64 scores S = Q K^T (K's B
    fragments by ldmatrix.x4, no transpose: K is [key][dim]); the scale,
    the causal mask (only on the tiles with keys later than the block's
    first query: the last one when BM = BN), the running max (rows g and g + 8, over the
    quad), p = exp(s - m) and the rescale of l and O in f32 on the
    accumulator fragments; then O += P V with P in two 16-bit terms
    (p["PV_TERMS"] = 2, the default: hi = rn(p), lo = rn(p - hi), two
    mma.sync each, lo first; the m16n8 accumulators of keys 16kk .. 16kk+15
    are the A fragment of the k-step, as in FlashAttention-2) and V's B
    fragments by ldmatrix.x4.trans. The row sum l is taken over the f32 p.
    The output is O / l, rounded once (arith.truncf) at the store.

    Against the opmath truth (the IR in f32, docs/verification.md): the
    products Q K^T of 16-bit values are exact in f32, summed in another
    order; with the two-term P the weights carry a relative error of at
    most 2^-17 (bf16). P rounded once to the 16-bit type (PV_TERMS = 1,
    FlashAttention's and torch's way) is an error of up to 2^-9 (bf16) of
    each weight: in the first query rows, a few keys of |v| ~ 1 give an
    output error near 2e-3 absolute, while the tolerance's atol is 2e-2
    times the mean |out| over all rows, which long rows make small. The
    H200 verifier rejected that on its normal-distribution trial at 1024 x
    25 x 64 bf16 (1.11 of the tolerance), 777 x 20 x 128, 4097 x 8 x 32 and
    4096 x 16 x 128 (2.3) (bench/table/attn16-device.sh, session 29); f16
    passed (0.49 at 2048 x 16 x 96) with half bf16's margin in theory.

    Special values, as gen_attention's template mode (v_past_s, m_exp): V
    rows of keys past S are zero-filled (cp.async source size 0), since
    their weight 0 times an Inf in row S - 1 would make NaN where the IR
    gives Inf; exponentials are taken against 0 while a row's running max
    is -inf. With the two-term P, v_clamp (p["VCLAMP"], the default with
    PV_TERMS = 2): each thread clamps the V chunks it copied to +-max of
    the type (minnumf/maxnumf: NaN becomes a bound) after its cp.async
    wait and before the barrier that publishes the tile, since lo = 0 (p
    exact in 16 bits) or lo < 0 < hi times an Inf of V is NaN where the
    IR's p V is that Inf (the H200's NaN/Inf trial rejected the two-term
    kernel without it: reference Inf, candidate NaN). A non-finite V
    element makes the IR's output non-finite in its whole column (the
    masked keys' 0 x Inf included), where the verifier allows a finite
    value for attention-like subgraphs (--lenient-nonfinite), as for
    gen_attention_tf32's clamp_own; finite V is unchanged.
    """
    import gen_gemm  # the nvvm.mma.sync helper (kernels/handwritten/gen_gemm.py)
    S, H, D = p["S"], p["H"], p["D"]
    et = p["dtype"]
    assert et in ("bf16", "f16") and D % 16 == 0, (et, D)
    rank2 = bool(p.get("rank2"))
    NW = p.get("NW", 4)
    PVT = p.get("PV_TERMS", 2)
    assert PVT in (1, 2), PVT
    VCLAMP = p.get("VCLAMP", PVT == 2)
    BM, BN, PD = 16 * NW, 64, D + 8
    NT = 32 * NW
    CPR = D // 8  # 16-byte chunks per row
    assert (BM * CPR) % NT == 0 and (BN * CPR) % NT == 0, (BM, D, NT)
    e = Emitter(("q", "k", "v", "out"))
    c = e.idx
    if rank2:
        mem = "memref<{{%s}}x%dx%s>" % (S, D, et)
    else:
        mem = "memref<{{%s}}x{{%s}}x%dx%s>" % (S, H, D, et)

    def symc(expr):
        return e.const("{{%s}}" % expr, "index", "c_" + re.sub(r"[^A-Za-z0-9]+", "_", expr)
                       .strip("_"))
    space = SMEM
    qT = "memref<%dx%dx%s, %s>" % (BM, PD, et, space)
    kvT = "memref<2x%dx%dx%s, %s>" % (BN, PD, et, space)
    sizes = [2 * BM * PD, 2 * 2 * BN * PD, 2 * 2 * BN * PD]
    e.extra_attrs = ", llm_fuse.dynamic_shared_memory = %d : i32" % sum(sizes)
    if p.get("MINB"):
        e.extra_attrs += ", nvvm.minctasm = %d : i32" % p["MINB"]
    tid = e.op("gpu.thread_id x", "tid")
    bid = e.op("gpu.block_id x", "bid")
    e.comment("heaviest query tiles first: block b -> head b %% H, query tile "
              "ceil(S / %d) - 1 - b / H" % BM)
    cH = symc(H)
    cLast = symc("(%s + %d) / %d - 1" % (S, BM - 1, BM))
    h = e.op("arith.remui %s, %s : index" % (bid, cH), "head")
    bq = e.op("arith.divui %s, %s : index" % (bid, cH), "bq")
    qt = e.op("arith.subi %s, %s : index" % (cLast, bq), "qt")
    q0 = e.op("arith.muli %s, %s : index" % (qt, c(BM)), "q0")
    e.comment("key tiles 0 .. nkt-1 cover keys 0 .. q0+%d; later tiles are fully masked"
              % (BM - 1))
    nkt = e.op("arith.addi %s, %s : index" % (e.op("arith.divui %s, %s : index" % (
        e.addc(q0, BM - 1, "qlast"), c(BN)), "klast"), c(1)), "nkt")
    cS, cS1 = symc(S), symc("%s - 1" % S)
    warp = e.op("arith.divui %s, %s : index" % (tid, c(32)), "warp")
    lane = e.op("arith.remui %s, %s : index" % (tid, c(32)), "lane")
    g = e.op("arith.divui %s, %s : index" % (lane, c(4)), "g")
    t = e.op("arith.remui %s, %s : index" % (lane, c(4)), "t")
    wr = e.op("arith.muli %s, %s : index" % (warp, c(16)), "wrow")

    wg = "#gpu.address_space<workgroup>"
    dsm = e.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % wg, "dsm")
    dsm = e.op("memref.memory_space_cast %s : memref<?xi8, %s> to memref<?xi8, %s>"
               % (dsm, wg, space), "dsm3")
    qs, ks, vs = [e.op("memref.view %s[%s][] : memref<?xi8, %s> to %s"
                       % (dsm, c(sum(sizes[:i])), space, ty_), nm)
                  for i, (nm, ty_) in enumerate((("qs", qT), ("ks", kvT), ("vs", kvT)))]

    def gidx(row, col):
        return "%s, %s" % (row, col) if rank2 else "%s, %s, %s" % (row, h, col)
    chunks = {}

    def tile_chunks(nrows):
        """this thread's 16-byte chunks of an nrows x D tile: chunk tid + NT n
        is row ch / (D/8), elements (ch % (D/8)) * 8 .. +7"""
        if nrows not in chunks:
            lst = []
            for n in range(nrows * CPR // NT):
                ch = e.addc(tid, NT * n, "ch")
                rr = e.op("arith.divui %s, %s : index" % (ch, c(CPR)), "cprow")
                cc = e.op("arith.muli %s, %s : index" % (e.op(
                    "arith.remui %s, %s : index" % (ch, c(CPR)), "cpc"), c(8)), "cpcol")
                lst.append((rr, cc))
            chunks[nrows] = lst
        return chunks[nrows]

    def cp_tile(which, base, nrows, dst, dstT, stage=None):
        """cp.async of rows base .. base+nrows-1 of q, k or v (rows past S
        read row S - 1; V's are zero-filled instead: source size 0) into
        dst[stage]; returns the copies' tokens"""
        toks = []
        for rr, cc in tile_chunks(nrows):
            gr = e.op("arith.addi %s, %s : index" % (base, rr), "cpg")
            nsrc = ""
            if which == "v":
                ok = e.op("arith.cmpi ult, %s, %s : index" % (gr, cS), "vok")
                nsrc = ", " + e.op("arith.select %s, %s, %s : index" % (ok, c(8), c(0)), "vn")
            gr = e.op("arith.minui %s, %s : index" % (gr, cS1), "cpg")
            didx = "%s, %s" % (rr, cc) if stage is None else "%s, %s, %s" % (stage, rr, cc)
            toks.append(e.op("nvgpu.device_async_copy %%%s[%s], %s[%s], 8%s {bypassL1} : %s to %s"
                             % (which, gidx(gr, cc), dst, didx, nsrc, mem, dstT), "cp"))
        return toks

    def group(toks):
        return e.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")
    e.comment("Q tile -> qs (one group), key tile 0's K and V -> stage 0 (another)")
    grpq = group(cp_tile("q", q0, BM, qs, qT))
    group(cp_tile("k", c(0), BN, ks, kvT, c(0)) + cp_tile("v", c(0), BN, vs, kvT, c(0)))
    e.line("nvgpu.device_async_wait %s {numGroups = 1 : i32}" % grpq)
    e.line("gpu.barrier")
    F4, A4, B2 = "vector<4xf32>", "vector<4x2x%s>" % et, "vector<2x2x%s>" % et
    e.comment("Q's A fragments (ldmatrix.x4: lane l -> row l % 16, dims 8 (l / 16) of the "
              "k-step), kept in registers")
    l16 = e.op("arith.remui %s, %s : index" % (lane, c(16)), "l16")
    arow = e.op("arith.addi %s, %s : index" % (wr, l16), "arow")
    acol = e.op("arith.muli %s, %s : index" % (e.op("arith.divui %s, %s : index"
                                                   % (lane, c(16)), "lh"), c(8)), "acol")
    LDM = ("nvgpu.ldmatrix %s[%s] {numTiles = 4 : i32, transpose = %s} : %s -> " + A4)
    qf = [e.op(LDM % (qs, "%s, %s" % (arow, e.addc(acol, 16 * kk, "qc")), "false", qT), "qf")
          for kk in range(D // 16)]
    e.comment("K's B fragments (ldmatrix.x4): lane l -> key (l % 8) + 8 (l / 16), dims "
              "8 ((l / 8) % 2); V's (.trans): key (l % 8) + 8 ((l / 8) % 2), dims 8 (l / 16)")
    l8 = e.op("arith.remui %s, %s : index" % (lane, c(8)), "l8")
    lb = e.op("arith.remui %s, %s : index" % (e.op("arith.divui %s, %s : index"
                                                  % (lane, c(8)), "l8d"), c(2)), "lb")
    krow = e.op("arith.addi %s, %s : index" % (l8, acol), "krow")
    kcol = e.op("arith.muli %s, %s : index" % (lb, c(8)), "kcol")
    vrow = e.op("arith.addi %s, %s : index" % (l8, kcol), "vrow")
    vcol = acol
    krows = [e.addc(krow, 16 * j, "kr") for j in range(BN // 16)]
    kcols = [e.addc(kcol, 16 * kk, "kc") for kk in range(D // 16)]
    vrows = [e.addc(vrow, 16 * kk, "vr") for kk in range(BN // 16)]
    vcols = [e.addc(vcol, 16 * j, "vc") for j in range(D // 16)]

    def mma(a, b, acc):
        return e.op("func.call @mma_%s(%s, %s, %s) : (%s, %s, %s) -> %s"
                    % (et, a, b, acc, A4, B2, F4, F4), "d")

    def halves(r4):
        return [e.op("vector.extract_strided_slice %s {offsets = [%d, 0], sizes = [2, 2], "
                     "strides = [1, 1]} : %s to %s" % (r4, 2 * i, A4, B2), "b")
                for i in range(2)]
    I4 = "vector<4xi32>"
    ninf = e.const("0xFF800000", "f32", "ninf")
    zero = e.const("0.000000e+00", "f32", "zero")
    zacc = e.const("dense<0.000000e+00>", F4, "zacc")
    scale = e.const("dense<%s>" % p["scale"], F4, "scale")
    ninf4 = e.const("dense<0xFF800000>", F4, "ninf4")
    e.comment("lane (g, t) holds keys 2t, 2t+1 of rows g, g+8 in each n-tile: their indices")
    ti = e.op("arith.index_cast %s : index to i32" % t, "ti")
    t2 = e.op("arith.muli %s, %s : i32" % (ti, e.const(2, "i32")), "t2")
    t21 = e.op("arith.addi %s, %s : i32" % (t2, e.const(1, "i32")), "t21")
    kofs = e.op("vector.from_elements %s, %s, %s, %s : %s" % (t2, t21, t2, t21, I4), "kofs")
    qa = e.op("arith.index_cast %s : index to i32" % e.op(
        "arith.addi %s, %s : index" % (q0, e.op("arith.addi %s, %s : index" % (wr, g), "ra")),
        "qa"), "qai")
    qb = e.op("arith.addi %s, %s : i32" % (qa, e.const(8, "i32")), "qbi")
    qidx = e.op("vector.from_elements %s, %s, %s, %s : %s" % (qa, qa, qb, qb, I4), "qidx")
    NO, NS = D // 8, BN // 8
    it_names = ["m0", "m1", "l0", "l1"] + ["o%d" % i for i in range(NO)]
    for n in it_names:
        e.used.add(n)
    it_types = ["f32"] * 4 + [F4] * NO
    res, kt = e.name("acc"), e.name("kt")
    last = e.op("arith.subi %s, %s : index" % (nkt, c(1)), "ktl")
    e.comment("loop over the key tiles: m running row max (rows g, g+8), l this lane's partial "
              "row sum, o the output fragments (dims 8i + 2t, +1)")
    e.line("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {"
           % (res, len(it_names), kt, c(0), nkt, c(1),
              ", ".join("%%%s = %s" % (n, v) for n, v in
                        zip(it_names, [ninf, ninf, zero, zero] + [zacc] * NO)),
              ", ".join(it_types)))
    e.indent += 2
    st = e.op("arith.remui %s, %s : index" % (kt, c(2)), "st")
    e.comment("(1) key tile kt has landed; every warp is done with tile kt - 1 (the other stage)")
    e.line("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grpq)
    if VCLAMP:
        e.comment("v_clamp: this thread's V chunks of the tile clamped in place to +-max %s "
                  "(NaN -> a bound) before the barrier that publishes them" % et)
        V8 = "vector<8x%s>" % et
        vmax = e.const("dense<%s>" % {"bf16": "0x7F7F", "f16": "0x7BFF"}[et], V8, "vmax")
        vmin = e.const("dense<%s>" % {"bf16": "0xFF7F", "f16": "0xFBFF"}[et], V8, "vmin")
        for rr, cc in tile_chunks(BN):
            x = e.op("vector.load %s[%s, %s, %s] : %s, %s" % (vs, st, rr, cc, kvT, V8), "vraw")
            x = e.op("arith.maxnumf %s, %s : %s" % (e.op("arith.minnumf %s, %s : %s" % (
                x, vmax, V8), "vcl"), vmin, V8), "vcl")
            e.line("vector.store %s, %s[%s, %s, %s] : %s, %s" % (x, vs, st, rr, cc, kvT, V8))
    e.line("gpu.barrier")
    e.comment("key tile kt + 1's K and V -> the other stage by cp.async, in flight during "
              "this tile")
    more = e.op("arith.cmpi ult, %s, %s : index" % (kt, last), "more")
    e.line("scf.if %s {" % more)
    e.indent += 2
    ktn = e.addc(kt, 1, "ktn")
    kbn = e.op("arith.muli %s, %s : index" % (ktn, c(BN)), "kbn")
    st1 = e.op("arith.subi %s, %s : index" % (c(1), st), "st1")
    group(cp_tile("k", kbn, BN, ks, kvT, st1) + cp_tile("v", kbn, BN, vs, kvT, st1))
    e.indent -= 2
    e.line("}")
    e.comment("S = Q K^T: %d n-tiles of 8 keys x %d k-steps of 16 dims" % (NS, D // 16))
    sacc = [zacc] * NS
    for kk in range(D // 16):
        for j in range(BN // 16):
            b = halves(e.op(LDM % (ks, "%s, %s, %s" % (st, krows[j], kcols[kk]), "false", kvT),
                            "kf"))
            for i in range(2):
                sacc[2 * j + i] = mma(qf[kk], b[i], sacc[2 * j + i])
    e.comment("scale; the causal mask (key > query -> -inf) only on the tiles whose last key "
              "is later than the first query (with BM = BN: the last tile)")
    sc = [e.op("arith.mulf %s, %s : %s" % (x, scale, F4), "sc") for x in sacc]
    isl = e.op("arith.cmpi ugt, %s, %s : index" % (e.addc(e.op(
        "arith.muli %s, %s : index" % (kt, c(BN)), "kb"), BN - 1, "kend"), q0), "diag")
    sm = e.name("sm")
    e.line("%s:%d = scf.if %s -> (%s) {" % (sm, NS, isl, ", ".join([F4] * NS)))
    e.indent += 2
    kb = e.op("arith.index_cast %s : index to i32" % e.op(
        "arith.muli %s, %s : index" % (kt, c(BN)), "kb"), "kbi")
    kbv = e.op("arith.addi %s, %s : %s" % (e.op("vector.broadcast %s : i32 to %s" % (kb, I4),
                                                "kbv"), kofs, I4), "kbv")
    msk = []
    for nt in range(NS):
        kidx = kbv if nt == 0 else e.op("arith.addi %s, %s : %s" % (
            kbv, e.const("dense<%d>" % (8 * nt), I4, "k%d" % (8 * nt)), I4), "kidx")
        m_ = e.op("arith.cmpi ugt, %s, %s : %s" % (kidx, qidx, I4), "msk")
        msk.append(e.op("arith.select %s, %s, %s : vector<4xi1>, %s" % (m_, ninf4, sc[nt], F4),
                        "sm"))
    e.line("scf.yield %s : %s" % (", ".join(msk), ", ".join([F4] * NS)))
    e.indent -= 2
    e.line("} else {")
    e.line("  scf.yield %s : %s" % (", ".join(sc), ", ".join([F4] * NS)))
    e.line("}")
    sv = ["%s#%d" % (sm, nt) for nt in range(NS)]
    e.comment("running max (rows g, g+8: over the quad), p = exp(s - m), rescale l and O")
    mx = sv[0]
    for x in sv[1:]:
        mx = e.op("arith.maximumf %s, %s : %s" % (mx, x, F4), "mx")
    mnew, mexp, alpha = [], [], []
    for r_ in range(2):
        x0 = e.op("vector.extract %s[%d] : f32 from %s" % (mx, 2 * r_, F4), "mxr")
        x1 = e.op("vector.extract %s[%d] : f32 from %s" % (mx, 2 * r_ + 1, F4), "mxr")
        tm = e.op("arith.maximumf %s, %s : f32" % (x0, x1), "tmax")
        tm = warp_allreduce(e, tm, "max", offsets=(1, 2), hint="tmax")
        mn = e.op("arith.maximumf %%m%d, %s : f32" % (r_, tm), "mnew")
        # m_exp (gen_attention): a running max of -inf -> exponentials against 0
        me = e.op("arith.select %s, %s, %s : f32" % (
            e.op("arith.cmpf oeq, %s, %s : f32" % (mn, ninf), "mninf"), zero, mn), "mexp")
        alpha.append(e.op("math.exp %s : f32" % e.op("arith.subf %%m%d, %s : f32" % (r_, me),
                                                     "dm"), "alpha"))
        mnew.append(mn)
        mexp.append(me)
    me4 = e.op("vector.from_elements %s, %s, %s, %s : %s"
               % (mexp[0], mexp[0], mexp[1], mexp[1], F4), "mexp4")
    al4 = e.op("vector.from_elements %s, %s, %s, %s : %s"
               % (alpha[0], alpha[0], alpha[1], alpha[1], F4), "alpha4")
    pe, psum = [], None
    for nt in range(NS):
        x = e.op("math.exp %s : %s" % (e.op("arith.subf %s, %s : %s" % (sv[nt], me4, F4), "sd"),
                                      F4), "p")
        pe.append(x)
        psum = x if psum is None else e.op("arith.addf %s, %s : %s" % (psum, x, F4), "psum")
    lnew = []
    for r_ in range(2):
        x0 = e.op("vector.extract %s[%d] : f32 from %s" % (psum, 2 * r_, F4), "psr")
        x1 = e.op("vector.extract %s[%d] : f32 from %s" % (psum, 2 * r_ + 1, F4), "psr")
        ps_ = e.op("arith.addf %s, %s : f32" % (x0, x1), "ps")
        lnew.append(e.op("arith.addf %s, %s : f32"
                         % (e.op("arith.mulf %%l%d, %s : f32" % (r_, alpha[r_]), "ls"), ps_),
                         "lnew"))
    oacc = [e.op("arith.mulf %%o%d, %s : %s" % (i, al4, F4), "os") for i in range(NO)]
    H4 = "vector<4x%s>" % et

    def afrags(vals, hint):
        """16-bit vectors of the accumulator layout -> the A fragments of the
        k-steps: keys 16kk .. 16kk+15 are n-tiles 2kk and 2kk+1"""
        return [e.op("vector.shape_cast %s : vector<8x%s> to %s" % (e.op(
            "vector.shuffle %s, %s [0, 1, 2, 3, 4, 5, 6, 7] : %s, %s"
            % (vals[2 * kk], vals[2 * kk + 1], H4, H4), "pc"), et, A4), hint)
            for kk in range(NS // 2)]
    if PVT == 2:
        e.comment("P as two %s terms, hi = rn(p) and lo = rn(p - hi) (p - hi is exact), as A "
                  "fragments" % et)
    else:
        e.comment("P rounded to %s as A fragments" % et)
    ph = [e.op("arith.truncf %s : %s to %s" % (x, F4, H4), "ph") for x in pe]
    terms = [afrags(ph, "pa")]
    if PVT == 2:
        pl = [e.op("arith.truncf %s : %s to %s" % (e.op("arith.subf %s, %s : %s" % (
            x, e.op("arith.extf %s : %s to %s" % (h_, H4, F4), "phf"), F4), "pr"), F4, H4), "pl")
            for x, h_ in zip(pe, ph)]
        terms.append(afrags(pl, "pal"))
    e.comment("O += P V: %d k-steps of 16 keys x %d n-tiles of 8 dims%s"
              % (NS // 2, NO, ", lo then hi" if PVT == 2 else ""))
    for kk in range(NS // 2):
        for j in range(D // 16):
            b = halves(e.op(LDM % (vs, "%s, %s, %s" % (st, vrows[kk], vcols[j]), "true", kvT),
                            "vf"))
            for i in range(2):
                for pa in reversed(terms):
                    oacc[2 * j + i] = mma(pa[kk], b[i], oacc[2 * j + i])
    e.line("scf.yield %s : %s" % (", ".join(mnew + lnew + oacc), ", ".join(it_types)))
    e.indent -= 2
    e.line("}")
    e.comment("row sums over the quad, out = O / l rounded to %s; rows past S are not stored"
              % et)
    ls = [warp_allreduce(e, "%s#%d" % (res, 2 + r_), "add", offsets=(1, 2), hint="lsum")
          for r_ in range(2)]
    l4 = e.op("vector.from_elements %s, %s, %s, %s : %s" % (ls[0], ls[0], ls[1], ls[1], F4),
              "lsum4")
    ovs = [e.op("arith.truncf %s : %s to %s" % (e.op("arith.divf %s#%d, %s : %s" % (
        res, 4 + nt, l4, F4), "o"), F4, H4), "ot") for nt in range(NO)]
    ra = e.op("arith.addi %s, %s : index" % (wr, g), "ra")
    tc = e.op("arith.muli %s, %s : index" % (t, c(2)), "tc")
    for r_ in range(2):
        gr = e.op("arith.addi %s, %s : index" % (q0, e.addc(ra, 8 * r_, "rr")), "orow")
        ok = e.op("arith.cmpi ult, %s, %s : index" % (gr, cS), "orow_ok")
        e.line("scf.if %s {" % ok)
        e.indent += 2
        for nt in range(NO):
            ov = e.op("vector.extract_strided_slice %s {offsets = [%d], sizes = [2], "
                      "strides = [1]} : %s to vector<2x%s>" % (ovs[nt], 2 * r_, H4, et), "ov")
            e.line("vector.store %s, %%out[%s] : %s, vector<2x%s>"
                   % (ov, gidx(gr, e.addc(tc, 8 * nt, "ocol")), mem, et))
        e.indent -= 2
        e.line("}")
    helper = gen_gemm.mma_helper(et).strip("\n")
    args = ["%%%s: %s" % (n, mem) for n in ("q", "k", "v", "out")]
    grid = "{{%s * ((%s + %d) / %d)}}" % (H, S, BM - 1, BM)
    return (NT, grid), e, args, [helper.lstrip()]


# ------------------------------------------------------------ the kernels --

KERNELS = [
    dict(sg="sg_07f0dc6cb70576f3", example="rmsnorm", gen="rmsnorm", kernel="rmsnorm_bf16_4096",
         R=16384, N=4096, et="bf16", T=256, mean="div", eps="9.99999997E-7",
         knobs=[("T", "T", [256, 128]), ("WEARLY", "wearly", [0, 1])],
         math=["s = sum_j f32(x[r, j])^2 (f32)",
               "y[r, j] = bf16((f32(x[r, j]) * rsqrt(s / 4096.0 + 1e-6)) * f32(w[j]))"]),
    dict(sg="sg_5d00258a2473dc37", example="tosa/rmsnorm", gen="rmsnorm", kernel="rmsnorm_tosa_bf16_4096",
         R=16384, N=4096, et="bf16", T=256, mean="2.44140625E-4", eps="9.99999997E-7",
         knobs=[("T", "T", [256, 128]), ("WEARLY", "wearly", [0, 1])],
         math=["s = sum_j f32(x[r, j]) * f32(x[r, j]) (f32)",
               "y[r, j] = bf16((f32(x[r, j]) * rsqrt(s * 2.44140625e-4 + 1e-6)) * f32(w[j]))",
               "(TOSA multiplies by 1/4096 = 2^-12, exactly the linalg form's divide by",
               "4096; the one rounding to bf16 is at the very end, as in the IR)"]),
    dict(sg="sg_ed978a54a6ae6b04", example="layernorm", gen="layernorm", kernel="layernorm_bf16_4096",
         R=16384, N=4096, et="bf16", T=128, eps="9.99999974E-6",
         knobs=[("T", "T", [128, 256]), ("WEARLY", "wearly", [0, 1])],
         math=["mean = sum_j f32(x[r, j]) / 4096.0; var = sum_j (f32(x[r, j]) - mean)^2 / 4096.0",
               "y[r, j] = bf16(((f32(x[r, j]) - mean) * rsqrt(var + 1e-5)) * f32(gamma[j]) + f32(beta[j]))"]),
    dict(sg="sg_e2da8c8a3c5cd5d1", example="layernorm_f32", gen="layernorm", kernel="layernorm_f32_16384",
         R=4096, N=16384, et="f32", T=256, eps="9.99999974E-6",
         knobs=[("T", "T", [256, 512])],
         math=["mean = sum_j x[r, j] / 16384.0; var = sum_j (x[r, j] - mean)^2 / 16384.0",
               "y[r, j] = ((x[r, j] - mean) * rsqrt(var + 1e-5)) * gamma[j] + beta[j]"]),
    dict(sg="sg_c77eec1dbd2dbb32", example="minigpt_block", gen="layernorm", kernel="layernorm_f32_768",
         R=1024, N=768, et="f32", T=32, rpb=4, eps="9.99999974E-6",
         math=["mean = sum_j x[r, j] / 768.0; var = sum_j (x[r, j] - mean)^2 / 768.0",
               "y[r, j] = ((x[r, j] - mean) * rsqrt(var + 1e-5)) * gamma[j] + beta[j]",
               "(both LayerNorms of the block are this subgraph)"]),
    dict(sg="sg_36479e4312f16cf5", example="softmax", gen="softmax", kernel="softmax_bf16_8192",
         R=16384, N=8192, et="bf16", T=256, init="-inf", div="markstein",
         knobs=[("T", "T", [256, 512])],
         math=["m = max_j f32(x[r, j]) (from -inf); e[j] = exp(f32(x[r, j]) - m); s = sum_j e[j]",
               "y[r, j] = bf16(e[j] / s)"]),
    dict(sg="sg_ff8348df2653ec41", example="tosa/softmax", gen="softmax", kernel="softmax_tosa_f32_16384",
         R=4096, N=16384, et="f32", T=512, init="-" + F32_MAX, div="recip",
         knobs=[("T", "T", [512, 256]), ("EXP", "exp", [0, 1])],
         math=["m = max(-3.40282347e38, max_j x[r, j]); e[j] = exp(x[r, j] - m); s = sum_j e[j]",
               "y[r, j] = e[j] * (1.0 / s)   (TOSA's reciprocal, then multiply)"]),
    # The benchmark suite's models (examples/bench/, issue 8).
    dict(sg="sg_df3765b7ed777da2", example="bench/rowsum", gen="rowreduce", kernel="rowsum_f32_8192",
         R=16384, N=8192, et="f32", T=256, op="add",
         knobs=[("T", "T", [256, 512, 1024])],
         math=["y[r] = sum_j x[r, j] (f32, from 0)"]),
    dict(sg="sg_21610200b192c108", example="bench/rowmax", gen="rowreduce", kernel="rowmax_f32_8192",
         R=16384, N=8192, et="f32", T=256, op="max",
         knobs=[("T", "T", [256, 512, 1024])],
         math=["y[r] = max_j x[r, j] (arith.maximumf from -inf: NaN propagates)"]),
    dict(sg="sg_a4aae1dccd0231c2", example="bench/add_rmsnorm", gen="add_rmsnorm",
         kernel="add_rmsnorm_bf16_4096", R=16384, N=4096, et="bf16", T=256, eps="9.99999997E-7",
         knobs=[("T", "T", [256, 128])],
         math=["h[r, j] = bf16(f32(x[r, j]) + f32(res[r, j])) (result 0, the next residual)",
               "s = sum_j f32(h[r, j])^2 (f32)",
               "y[r, j] = bf16((f32(h[r, j]) * rsqrt(s / 4096.0 + 1e-6)) * f32(w[j])) (result 1)"]),
    dict(sg="sg_d9d3a926eb8e438b", example="bench/bias_gelu", gen="elementwise",
         kernel="bias_gelu_bf16_8192", R=16384, N=8192, et="bf16", T=256, op="bias_gelu",
         gelu="approx",
         knobs=[("T", "T", [256, 512])],
         math=["v = f32(x[r, j]) + f32(b[j])",
               "y[r, j] = bf16(0.5 v (1 + tanh(0.797884583 (v + 0.044715 v^3))))"]),
    dict(sg="sg_390ba1a6df9c30f8", example="bench/minigpt_mlp", gen="layernorm",
         kernel="layernorm_f32_768_r65536", R=65536, N=768, et="f32", T=32, rpb=4,
         eps="9.99999974E-6",
         math=["mean = sum_j x[r, j] / 768.0; var = sum_j (x[r, j] - mean)^2 / 768.0",
               "y[r, j] = ((x[r, j] - mean) * rsqrt(var + 1e-5)) * gamma[j] + beta[j]",
               "(the MiniGPT block's LayerNorm, sg_c77eec1dbd2dbb32, at 65536 rows)"]),
    dict(sg="sg_4b6d101fd59f7da9", example="minigpt_block", gen="attention", kernel="causal_attention_f32",
         S=1024, H=12, D=64,
         math=["per head h: s[i, j] = 0.125 * sum_d q[i, h, d] k[j, h, d], -inf where j > i",
               "p = softmax_j(s) (max, exp, sum, divide); out[i, h, :] = sum_j p[i, j] v[j, h, :]"]),
]

# Why each launch configuration, and what it did on an H200 (CUDA events,
# mean of 20 launches after 3 warm-ups, inputs N(0,1)-ish, checked against an
# IR-exact f32 torch reference and a float64 one; measured 2026-11 with a
# harness that is not part of the repository).  "GB/s" counts the bytes the
# subgraph must move (inputs read once + output written once); a plain
# device-to-device copy reached about 4300 GB/s on that machine.
NOTES = {
    "sg_07f0dc6cb70576f3": [
        "256 threads (40 registers, no spills): 128 threads measured the same,",
        "512 about 25% slower (more, shorter-lived warps per row).  Loading w",
        "together with x cost registers and ~1%.",
        "H200: 67.6 us = 3970 GB/s (torch.nn.functional.rms_norm: 81 us)."],
    "sg_5d00258a2473dc37": [
        "Same kernel as the linalg rmsnorm (sg_07f0dc6cb70576f3) but for the",
        "multiply by 2^-12: 256 threads, 40 registers, no spills.",
        "H200: 68.3 us = 3930 GB/s (torch.nn.functional.rms_norm: 88 us)."],
    "sg_ed978a54a6ae6b04": [
        "128 threads (72 registers): bench/gpu/run.py 68.5 us = 92.2% of copy",
        "bandwidth against 69.7 us (90.6%) with 256 threads (36 registers);",
        "two rows per 256-thread block 72.8 us, two per 512 87.4 us; 512",
        "threads ~45% slower; loading gamma/beta with x cost ~5%.",
        "(torch.compile: 96 us, torch.nn.functional.layer_norm: 107 us)."],
    "sg_e2da8c8a3c5cd5d1": [
        "256 threads x 64 f32 = the 64 KiB row in registers (128 registers, no",
        "spills, 2 blocks = 16 warps per SM): measured 134-136 us; 512 threads",
        "(66 registers, so one block per SM) 142 us, 1024 threads 154 us.",
        "H200: 136 us = 3940 GB/s (torch.nn.functional.layer_norm: 243 us)."],
    "sg_c77eec1dbd2dbb32": [
        "4 warps per block (2 and 8 measured the same); gamma/beta loads are",
        "issued with x (6.2 vs 7.2 us with late loads).",
        "H200: 6-9 us, launch-latency bound (torch layer_norm: 12-13 us)."],
    "sg_a4aae1dccd0231c2": [
        "256 threads, 48 registers, no spills.  Replaces the pair it was",
        "split into before (add_rmsnorm recomputing h + a separate add kernel",
        "writing it: 768 MiB moved, 0.194 ms).",
        "H200 (bench/gpu/run.py): 0.134 ms = 94.6% of copy bandwidth",
        "(torch.compile: 0.136 ms)."],
    "sg_d9d3a926eb8e438b": [
        "exp(-2u) as ex2.approx of -2u log2(e) and the divide as div.approx",
        "(gelu=approx): ~13 instead of ~35 instructions per element.",
        "H200: 133 us = 95% of copy bandwidth; with libdevice exp and an IEEE",
        "divide (gelu=div) 153 us, issue-bound (torch.compile: 177 us)."],
    "sg_36479e4312f16cf5": [
        "256 threads x 32 bf16 (63 registers, 4 blocks per SM): 512 threads",
        "12% slower, 1024 threads 55% slower.  The Markstein division was",
        "bitwise identical to arith.divf on all 134M outputs of the test and",
        "12% faster (150 -> 132 us).",
        "H200: 132 us = 4060 GB/s (torch.softmax on bf16: 500 us)."],
    "sg_ff8348df2653ec41": [
        "512 threads x 32 f32 (64 registers, 2 blocks per SM): 256 threads",
        "(80 registers) measured 1% slower, 1024 threads 19% slower.",
        "H200: 133 us = 4040 GB/s (torch.softmax: 173-183 us)."],
    "sg_4b6d101fd59f7da9": [
        "128 threads, 166 registers, 42.5 KiB shared: 3 blocks per SM, so all",
        "384 blocks are resident at once.  Unrolling the inner loops 2x or 16x",
        "instead of 4x changed nothing measurable.",
        "H200: 82 us, about 10 TFMA/s on the 855M FMAs it executes",
        "(torch scaled_dot_product_attention, f32, causal: 301-308 us).",
        "Accuracy vs float64: max abs error 8.1e-7, an IR-order f32 reference",
        "9.4e-7."],
}

FINGERPRINTS = {
    "sg_07f0dc6cb70576f3": "07f0dc6cb70576f34ddea627009be4572873bf958823d09424676466554e8ecb",
    "sg_5d00258a2473dc37": "5d00258a2473dc370450a08512a28ae64b7a6c17cc4749f47fea1cf775366e01",
    "sg_ed978a54a6ae6b04": "ed978a54a6ae6b04fa383eb71fb3fe25ff747abbb9e80b2cd3e9fa3e164a55be",
    "sg_e2da8c8a3c5cd5d1": "e2da8c8a3c5cd5d1924aa59f5ad83fd2e14368013587b27aa74c6d8ac6485494",
    "sg_c77eec1dbd2dbb32": "c77eec1dbd2dbb32a03a78905c01e89691a7ad6e138ef68845512337f7265141",
    "sg_36479e4312f16cf5": "36479e4312f16cf5a770c44e1b7b2fa91f78fa15dcc632f6129d574b8e9d964f",
    "sg_ff8348df2653ec41": "ff8348df2653ec41cf6383ff7e12ac30473b92ed1c81fb30e50680fbbe15c97d",
    "sg_4b6d101fd59f7da9": "4b6d101fd59f7da903457bcf116e6bf9012ee2b2e5d8aa401c758c5549415b79",
    "sg_df3765b7ed777da2": "df3765b7ed777da2d58c9793d6439dd302e87132bd5d8bdcc890c637bc8c4609",
    "sg_21610200b192c108": "21610200b192c1087e24f6d9d33e06bfab61441b9521f0e1c6f5804166c28e7f",
    "sg_a4aae1dccd0231c2": "a4aae1dccd0231c2e194bbdafdfad07f111a218fbdff7a9f1635af4dcb1b8a80",
    "sg_d9d3a926eb8e438b": "d9d3a926eb8e438ba91d10aaafb3f6c8cf1ae0e2117fc6a3983a6a3035125faa",
    "sg_390ba1a6df9c30f8": "390ba1a6df9c30f848c228a2ba921acd4b4c32dbd7d89a3e752b9cf0f45bf6fa",
}


def signature(p):
    if p["gen"] == "attention":
        t = "tensor<%dx%dx%dxf32>" % (p["S"], p["H"], p["D"])
        return "(%s, %s, %s) -> %s" % (t, t, t, t)
    x = "tensor<%dx%dx%s>" % (p["R"], p["N"], p["et"])
    w = "tensor<%dx%s>" % (p["N"], p["et"])
    if p["gen"] == "rowreduce":
        return "(%s) -> tensor<%dx%s>" % (x, p["R"], p["et"])
    if p["gen"] == "elementwise":
        return "(%s, %s) -> %s" % (x, x if p["op"] == "add" else w, x)
    if p["gen"] == "add_rmsnorm":  # two results: h, then y
        return "(%s, %s, %s) -> (%s, %s)" % (x, x, w, x, x)
    ins = {"rmsnorm": [x, w], "layernorm": [x, w, w], "softmax": [x]}[p["gen"]]
    return "(%s) -> %s" % (", ".join(ins), x)


DESIGN = {
    "rmsnorm": [
        "Single pass: the row is loaded once into registers, sum of squares",
        "(per-thread vector<8xf32> partials, vector.reduction), one block",
        "reduction, then the scaled row is written; w is re-read per block",
        "(8 KiB, stays in L1/L2)."],
    "layernorm": [
        "Single read of x: the row stays in registers for the exact two-pass",
        "mean / variance of the IR (two block reductions, each into its own",
        "shared slot, so one barrier each), then the normalized row is",
        "written; gamma/beta are read per block from L1/L2."],
    "softmax": [
        "Single read of x: row in registers; block max, then exp(x - m) kept",
        "in registers, block sum, normalize and write; exp is the IR's",
        "math.exp (libdevice __nv_expf)."],
    "add_rmsnorm": [
        "Single pass: x and res are read once into registers, summed and",
        "rounded to bf16 as the IR's h, which is stored at once (16-byte",
        "stores, in flight during the reduction); sum of squares of h, one",
        "block reduction, the scaled row written.  x, res read and h, y",
        "written once each: 4 x 128 MiB, the floor of the pair."],
    "rowreduce": [
        "The row in registers (16-byte loads, all in flight), per-thread",
        "vector<4xf32> partials, one vector.reduction, a warp butterfly and",
        "one shared-memory step; thread 0 writes the row's value."],
    "elementwise": [
        "One 16-byte load per input chunk, the math in f32, one 16-byte store;",
        "no reduction, no shared memory."],
}


def generate(p):
    gen = p["gen"]
    tune = ()
    if gen == "attention":
        (block, grid), e, args, globals_ = gen_attention(p)
        launch = ("block 128 threads, grid %d = %d heads x %d query tiles of 32;"
                  % (grid, p["H"], p["S"] // 32))
        design = [
            "Flash attention in f32 SIMT FMA (tensor cores would change f32",
            "numerics): one block per (head, 32-query tile), the heaviest",
            "(last) query tiles get the lowest block ids so they start first.",
            "Key tiles of 64 up to the diagonal only (fully masked tiles are",
            "skipped); the next K/V tile is prefetched into registers while",
            "the current one is computed.  Each thread holds a 4x4 score tile",
            "(rows ty*4+i, keys tx+16j) and a 4x4 output tile (rows ty*4+i,",
            "dims tx*4..+3); online softmax with running max m and per-thread",
            "partial sums l (summed over the row's 16 threads at the end).",
            "The causal mask is applied to every tile exactly as the IR does",
            "(select -inf where key > query, after the 0.125 scale); masked",
            "scores give exp(-inf) = 0.  Key 0 is in the first tile, so the",
            "running max is finite after it and exp(m_old - m_new) is never",
            "NaN.  out = O / l at the end (the IR divides p by the sum before",
            "P V; same value up to f32 rounding).",
            "Shared memory 42.5 KiB static: Q 32x64 and K 64x64 f32 with rows",
            "padded to 68 floats (conflict-free column-strided reads, linear",
            "addresses), V 64x64; P (32x64) reuses the K buffer after the",
            "scores are computed (4 barriers per key tile).",
            "Inner loops: %d dims / keys per iteration (vector.fma on 4x4" % (4 * p.get("U", 4)),
            "register tiles, 64 FMAs per 8 16-byte shared loads)."]
        gp = None
    else:
        fn = {"rmsnorm": gen_rmsnorm, "layernorm": gen_layernorm,
              "softmax": gen_softmax, "add_rmsnorm": gen_add_rmsnorm,
              "rowreduce": gen_rowreduce, "elementwise": gen_elementwise}[gen]
        if p.get("knobs"):
            g, e, args, globals_ = gen_knobs(p, fn)
        else:
            g, e, args, globals_ = fn(p)
        block, grid = g.block, g.grid
        tune = g.tune
        if p.get("knobs"):
            assert g.rpb == 1 and all(k in ("T", "wearly", "exp") for _, k, _ in p["knobs"])
            if any(k == "T" for _, k, _ in p["knobs"]):
                block = "{{T}}"
        elif tune:
            block, grid = "{{32 * RPB}}", "{{%d / RPB}}" % g.R
        launch = g.launch_text() + ";"
        if p.get("knobs"):
            launch += " tune knobs (the first values are the default): %s;" % "; ".join(
                "%s = %s" % (n, ", ".join(str(v) for v in vs)) for n, _, vs in p["knobs"])
        elif tune:
            launch += (" rows per block RPB = %s declared as tune variants (the first"
                       " is the default);" % ", ".join(str(v) for v in tune[0][1]))
        design = list(DESIGN[gen])
        if gen == "softmax":
            design += {
                "div": ["y = e / s with arith.divf per element, as the IR."],
                "recip": ["1 / s once per row (arith.divf), then e * (1/s), as TOSA's IR."],
                "markstein": [
                    "e / s per element as q = e * (1/s), q' = fma(fma(-s, q, e), 1/s, q):",
                    "with 1/s correctly rounded (one arith.divf per row) this is the",
                    "correctly rounded quotient by Markstein's theorem, barring",
                    "underflow (subnormal e), at 3 instructions instead of a full",
                    "div.rn per element; 0 mismatches against exact rounding in 200k",
                    "random f32 cases."]}[p["div"]]
        if g.rpb > 1 and g.T > 32:
            design += ["%d rows per block: each row's %d warps reduce through their own"
                       % (g.rpb, g.nwarps),
                       "shared slots (warps %d*r ..), one barrier per reduction for the block."
                       % g.nwarps]
        elif g.rpb > 1:
            design = [
                "One warp per row: the 768-float row is 6 vector<4xf32> per lane,",
                "kept in registers; both reductions are shuffle-xor butterflies",
                "(no shared memory, no barrier).  The divides by 768.0 are real",
                "arith.divf (768 is no power of two), once per row.",
                "A small problem (3 MiB in, 3 MiB out): latency-bound, one wave."
                if g.R * g.N * 4 <= (4 << 20) else
                "%d MiB in, %d MiB out: memory-bound, %d blocks of %d rows."
                % (g.R * g.N * 4 >> 20, g.R * g.N * 4 >> 20, g.grid, g.rpb)]
        gp = g
    comment = ["%s: hand-written kernel for %s (%s)." % (p["kernel"], p["sg"], p["example"]),
               "signature: %s" % signature(p), "", "Math (exactly the outlined IR's, f32 inside):"]
    comment += ["  " + m for m in p["math"]]
    comment += ["", "Launch: " + launch]
    if gp is not None:
        comment += ["  %d threads x %d elements = %d per row; the 16-byte chunk k of"
                    % (gp.T, gp.C * gp.V, gp.N),
                    "  thread t starts at column (k * %d + t) * %d (coalesced 512-byte warp runs)."
                    % (gp.T, gp.V)]
    comment += [""] + design
    if p["sg"] in NOTES and not p.get("variant_of"):
        comment += [""] + NOTES[p["sg"]]
    comment += ["", "Generated by kernels/handwritten/gen_rows.py; edit the generator, not this file."]
    extra = ", nvvm.minctasm = %d : i32" % p["minctasm"] if p.get("minctasm") else ""
    text = module_text(comment, p["kernel"], args, block, grid, e.body(), globals_, extra,
                       tune)
    return text


def manifest_entry(p):
    return {"subgraph": p["sg"], "fingerprint": FINGERPRINTS[p["sg"]],
            "example": p["example"], "signature": signature(p),
            "file": p["sg"] + ".mlir", "kernel": p["kernel"],
            "chips": ["sm_80", "sm_90"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a generated file differs from the one on disk")
    ap.add_argument("--variant", action="append", default=[],
                    help="SG=key=value,...: override parameters (tuning)")
    ap.add_argument("--only", action="append", default=[])
    a = ap.parse_args()
    kernels = [dict(k) for k in KERNELS]
    for v in a.variant:
        sg, _, kvs = v.partition("=")
        for k in kernels:
            if k["sg"] == sg:
                k["variant_of"] = sg
                for kv in kvs.split(","):
                    key, _, val = kv.partition("=")
                    k[key] = int(val) if val.lstrip("-").isdigit() else val
    if a.only:
        kernels = [k for k in kernels if k["sg"] in a.only]
    stale = []
    for p in kernels:
        # The files here are the kernels at their own sizes (the prompt's
        # hand-written examples, the replay set's source): each its default
        # variant. The tune knobs go to the pattern table's entries
        # (kernels/table/build.py), where the pass times every variant.
        text = generate({k: v for k, v in p.items() if k != "knobs"})
        path = os.path.join(a.out, p["sg"] + ".mlir")
        if a.check:
            old = open(path).read() if os.path.exists(path) else None
            if old != text:
                stale.append(path)
            continue
        with open(path, "w") as f:
            f.write(text)
    man = json.dumps([manifest_entry(p) for p in kernels], indent=2) + "\n"
    mpath = os.path.join(a.out, "manifest-rows.json")
    if a.check:
        if not os.path.exists(mpath) or open(mpath).read() != man:
            stale.append(mpath)
        if stale:
            sys.exit("stale (rerun gen_rows.py): " + ", ".join(stale))
        return
    if not a.variant and not a.only:
        with open(mpath, "w") as f:
            f.write(man)


if __name__ == "__main__":
    main()
