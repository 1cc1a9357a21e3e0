#!/usr/bin/env python3
"""rows_any.py - the table's row templates for any row count, any row length
and each float type.

kernels/table/build.py imports this module and writes one entry per
(family, element type, shape form) that `templates()` yields. The families are
the row patterns of the shipped examples: RMSNorm (linalg and TOSA), residual
+ RMSNorm, LayerNorm (generic and named-op forms), softmax (linalg and TOSA),
row sum, row max and bias + GELU. Each is made in bf16, f16 and f32 where the
example, rewritten to that type, is valid IR (a bf16 example whose math
widens with arith.extf has no f32 form; an f32 example rewritten to bf16
computes in bf16).

The shape forms, each its own pattern key (docs/pattern-key.md):
  any     R x N, R != N, both free (R >= 2, N >= 2);
  row1    a single row, 1 x N (the unit dimension stays in the key);
  square  R x R (equal sizes share a symbol);
  r2..r7  TOSA families only (SMALL_R_FAMILIES): R = 2 .. 7 rows, N free.
          The TOSA reductions keep their dimension (tensor<Rx1xf32>), and
          the legalization's tensor.expand_shape writes `output_shape
          [R, 1]`: a size under 8 stays a literal there (docs/pattern-key.md,
          item 2), so each such R is a key of its own (held-out seed 11's
          TOSA RMSNorm at 2 rows had none). R is fixed in the entry.

One kernel structure serves every size. A block of 256 threads handles 256 /
TPR rows, TPR threads per row (a knob the pass times: 32, one warp per row,
for short rows; 128 and 256 for longer ones; and for rows of 8192 or more,
TPR = 1024, one row per block of 1024 threads). Thread t of a row reads
chunks of V elements at columns (k * TPR + t) * V, k = 0 .. ceil(N / (TPR V))
- 1, so each warp's loads are contiguous runs (the full chunks in a loop with
no guard, the last one guarded); V is the largest of 8 (4 for
f32), 4, 2, 1 that divides N, so every chunk is either wholly inside the row
or wholly past its end (skipped). Rows past R (the last block) read the last
row and store nothing, so every thread reaches every barrier. A row reduction
is a shuffle butterfly per warp, then one shared-memory step across the row's
warps, in a fixed order: the result is deterministic. With one warp a row
(TPR = 32) the butterfly is the whole reduction: no shared memory, no
barrier.

The row is not held in registers (its length is a placeholder, so the number
of chunks is a loop trip count): a pass that needs it again after a
reduction reads it again, from L1/L2 in practice. The norms (RMSNorm,
LayerNorm) and softmax also have a resident form, knob RES (Kernel.resident):
RES = 1 reads the row and the weight vectors once, all loads in flight
together, into up to RES_SLOTS chunks a thread, where N <= RES_SLOTS * TPR *
V; it saves the second and third memory round trips of the short rows of
small models (bench/NOTES.md sessions 25 and 26). The streaming softmax is
online (max and sum of exponentials in one read), the resident one two
reductions over the registers (max, then the sum of exp(x - max));
LayerNorm is two-pass (mean, then the sum of squared deviations: the IR's
own order, stable). Everything is computed in
f32, stored in the subgraph's type. The kernels of gen_rows.py, tuned for one
row length each, stay in the table: an entry with a fixed size is tried
before a general one (llm_client/table.c).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
from heldout import dtype_rewrite, size_rewrite  # noqa: E402

ARCHS = ["sm_80", "sm_90", "sm_90a"]
SMEM = "#gpu.address_space<workgroup>"
# Rows per block: 256 / TPR for TPR <= 256 (blocks of 256 threads), one row
# of 1024 threads for TPR = 1024 (long rows: with 256 threads a row, 1664
# rows of 14336 make 1.6 waves on 132 SMs and the second wave runs 60% full).
RPB = "(256 + TPR - 1) / TPR"
NEG_INF = "0xFF800000"

# name: (example, its dtype, its row count, its row length, whether the row
# length appears as a float constant, kind, inputs, outputs)
#   inputs/outputs: roles in the subgraph's order; "x", "r" are R x N, "w",
#   "g", "b" are N vectors, "s" an R vector, "y", "h" R x N outputs.
FAMILIES = {
    "rmsnorm": ("examples/rmsnorm.mlir", "bf16", 16384, 4096, True,
                dict(kind="rmsnorm", eps="1.0e-06"), ["x", "w"], ["y"]),
    "rmsnorm_tosa": ("examples/tosa/rmsnorm.mlir", "bf16", 16384, 4096, True,
                     dict(kind="rmsnorm", eps="1.0e-06", recip=True), ["x", "w"], ["y"]),
    "add_rmsnorm": ("examples/bench/add_rmsnorm.mlir", "bf16", 16384, 4096, True,
                    dict(kind="add_rmsnorm", eps="1.0e-06"), ["x", "r", "w"], ["h", "y"]),
    "layernorm": ("examples/layernorm.mlir", "bf16", 16384, 4096, True,
                  dict(kind="layernorm", eps="1.0e-05"), ["x", "g", "b"], ["y"]),
    "layernorm_f32": ("examples/layernorm_f32.mlir", "f32", 4096, 16384, True,
                      dict(kind="layernorm", eps="1.0e-05"), ["x", "g", "b"], ["y"]),
    # The LayerNorm subgraph of the MiniGPT models (the MLP and the block
    # share its pattern): the example's other subgraphs are GEMMs.
    "layernorm_gpt": ("examples/bench/minigpt_mlp.mlir", "f32", 65536, 768, True,
                      dict(kind="layernorm", eps="1.0e-05"), ["x", "g", "b"], ["y"]),
    "softmax": ("examples/softmax.mlir", "bf16", 16384, 8192, False,
                dict(kind="softmax"), ["x"], ["y"]),
    "softmax_tosa": ("examples/tosa/softmax.mlir", "f32", 4096, 16384, False,
                     dict(kind="softmax", recip=True), ["x"], ["y"]),
    "rowsum": ("examples/bench/rowsum.mlir", "f32", 16384, 8192, False,
               dict(kind="rowsum"), ["x"], ["s"]),
    "rowmax": ("examples/bench/rowmax.mlir", "f32", 16384, 8192, False,
               dict(kind="rowmax"), ["x"], ["s"]),
    "bias_gelu": ("examples/bench/bias_gelu.mlir", "bf16", 16384, 8192, False,
                  dict(kind="bias_gelu"), ["x", "b"], ["y"]),
}

# The example sizes each form is outlined at: distinct from each other and
# from every constant of the examples, so sizes map back to roles by value.
FORMS = {"any": (1000, 776), "row1": (1, 776), "square": (776, 776)}
# The small row counts that are keys of their own (R literal in the TOSA
# legalization's expand_shape; the linalg families' keys do not change with
# R: checked for every family at R = 2, 5, 7 against 1000).
SMALL_R_FAMILIES = ("rmsnorm_tosa", "softmax_tosa")
SMALL_R_FORMS = ["r%d" % r for r in range(2, 8)]
FORMS.update({f: (int(f[1:]), 776) for f in SMALL_R_FORMS})
DTYPES = ["bf16", "f16", "f32"]
# 16-bit examples whose rewrite to f32 is valid IR: TOSA widens with
# tosa.cast, which may cast f32 to f32 (arith.extf may not: the linalg
# 16-bit families have no f32 form). Held-out seed 7's TOSA RMSNorm in f32
# had no entry.
F32_FROM_16 = ("rmsnorm_tosa",)
# The f32 examples that sum along the row (layernorm_f32, layernorm_gpt,
# softmax_tosa, rowsum): rewritten to bf16 or f16, the IR accumulates in 16
# bits. Their templates accumulate in f32, as torch does;
# the verifier judges them against the opmath reference (the IR computed in
# f32, docs/verification.md "16-bit accumulation"), since the IR's own
# lowering is off by more than the 16-bit tolerance or degenerate there (on
# an H100, before that reference: rowsum mismatches, LayerNorm and softmax
# references NaN or constant).
VMAX = {"bf16": 8, "f16": 8, "f32": 4}
UNROLL = 4  # full chunks per step of the main loop
# The resident form (RES = 1): chunk slots per thread (32 f32 or 64 16-bit
# elements), the row held in registers when N <= RES_SLOTS * TPR * V.
RES_SLOTS = {"bf16": 8, "f16": 8, "f32": 8}
# The families with a resident form: the norms and softmax, whose streaming
# form reads the row two or three times (the passes after a block reduction
# wait for it; softmax added in session 26: H200, 16 x 5120 bf16 0.0068 ->
# 0.0064 ms, 2048 x 5120 0.0226 -> 0.0181, TOSA 28 x 16384 0.0074 ->
# 0.0067). Not the row sum / max: at a constant row length LLVM unrolls
# their one streaming pass and issues every load of the row at once anyway
# (same PTX loads, same time on the H200: rowmax 1664 x 14336 0.0324 ms
# either way, bench/NOTES.md session 25); not residual + RMSNorm or bias +
# GELU, whose resident forms were not measured.
RES_KINDS = ("rmsnorm", "layernorm", "softmax")
# The resident softmax's division (linalg form; TOSA's multiplies by one
# reciprocal anyway): False keeps the IR's div.rn per element; True, one
# reciprocal a row and Markstein's correctly rounded quotient (two FMAs an
# element), which gen_rows.py's softmax_bf16_8192 uses. At 16 rows of 5120
# the resident form is instruction-bound (20-40 elements a thread). On the
# H200 (session 26, bench/table/rows-small-device.sh, every variant checked
# against torch eager and accepted by llm-fuse-verify) True is faster at
# every size timed: 16 x 5120 bf16 0.0059 -> 0.0053 ms, 512 x 8192 0.0111 ->
# 0.0099, 2048 x 5120 0.0180 -> 0.0160, f16 8192 x 2048 0.0246 -> 0.0220.
MARKSTEIN_RES = True


class Emitter:
    """SSA text for one kernel body; names are %v<N> plus a hint."""

    def __init__(self):
        self.lines = []
        self.n = 0
        self.indent = 4
        self.consts = {}

    def fresh(self, hint):
        self.n += 1
        return "%%%s%d" % (hint, self.n)

    def emit(self, text):
        self.lines.append(" " * self.indent + text)

    def op(self, text, hint="v"):
        v = self.fresh(hint)
        self.emit("%s = %s" % (v, text))
        return v

    def const(self, value, ty):
        """A constant defined once at the top of the body."""
        key = (value, ty)
        if key not in self.consts:
            v = self.fresh("c")
            self.consts[key] = (v, "%s = arith.constant %s : %s" % (v, value, ty))
        return self.consts[key][0]


class Kernel:
    """One row kernel in one element type; R, N are the tokens @R@, @N@ that
    render() replaces by the pattern's size symbols."""

    def __init__(self, fam, dtype, inputs, outputs):
        self.fam, self.t = fam, dtype
        self.inputs, self.outputs = inputs, outputs
        self.e = Emitter()
        self.inside = None  # a remainder slot's `col < N` (chunks())
        self.deferred = None  # the remainder slots' stores (chunks())
        # One warp a row (TPR = 32): the shuffle butterfly already leaves
        # the row's value in every lane, so row_reduce() skips the shared
        # memory step and its barrier (a constant condition per variant).
        # rows_any.py's own templates set it; importer_any.py's kernels keep
        # the shared step (their entries unchanged).
        self.warp_only = False

    # -- types
    def mem(self, role):
        if role in ("x", "r", "y", "h"):
            return "memref<{{R}}x{{N}}x%s>" % self.t
        if role == "s":
            return "memref<{{R}}x%s>" % self.t
        return "memref<{{N}}x%s>" % self.t

    VT = property(lambda self: "vector<{{V}}x%s>" % self.t)
    VF = "vector<{{V}}xf32>"

    # -- helpers
    def to_f32(self, v, vec=True):
        if self.t == "f32":
            return v
        return self.e.op("arith.extf %s : %s to %s" % (
            v, self.VT if vec else self.t, self.VF if vec else "f32"), "f")

    def from_f32(self, v, vec=True):
        if self.t == "f32":
            return v
        return self.e.op("arith.truncf %s : %s to %s" % (
            v, self.VF if vec else "f32", self.VT if vec else self.t), "t")

    def load(self, role, col, nt=False):
        """nt: a streaming load (docs/kernel-contract.md "Streaming loads"),
        for data read once"""
        e = self.e
        if role in ("x", "r", "y", "h"):
            idx = "%s, %s" % (self.row, col)
        else:
            idx = col
        raw = e.op("vector.load %%%s[%s]%s : %s, %s" % (
            role, idx, " {nontemporal = true}" if nt else "", self.mem(role), self.VT),
            role + "v")
        return self.to_f32(raw)

    def store(self, role, col, vf):
        """A VT store at (row, col)."""
        v = self.from_f32(vf)
        text = "vector.store %s, %%%s[%s, %s] : %s, %s" % (
            v, role, self.row, col, self.mem(role), self.VT)
        self.e.emit(text)  # in a remainder slot, chunks() moves it under `col < N`

    def guarded(self, cond, text):
        """`text` (a store) under scf.if cond; in the remainder slots
        (chunks()) deferred until every slot's loads are issued, so that no
        branch separates them."""
        if self.deferred is not None:
            self.deferred.append((cond, text))
            return
        self.e.emit("scf.if %s {" % cond)
        self.e.emit("  " + text)
        self.e.emit("}")

    def splat(self, value):
        return self.e.const("dense<%s>" % value, self.VF)

    def bcast(self, s):
        return self.e.op("vector.broadcast %s : f32 to %s" % (s, self.VF), "b")

    def chunks(self, carried, body, guard_store=False):
        """body(col, carried) -> new carried values (f32 scalars or VF
        vectors: (name, type) pairs) for every chunk of this thread's row:
        first the N / (TPR V) chunks that every thread has in full, UNROLL
        per loop step without a guard (their loads independent, in flight
        together), then the rest (fewer than UNROLL full chunks and the
        tail chunk, `col < N`) as UNROLL slots, also issued together: each
        slot loads at its column clamped into the row (min(col, N - V), a
        valid address), its results are kept only where `col < N` (an
        arith.select of the carried values) and its stores run only there
        (self.inside). A remainder loop of one chunk per step would wait
        for each load before issuing the next (rows of 3 chunks a thread
        ran at 68% of the copy bandwidth). With guard_store (passes that
        store y) all of it runs only for a valid row. Returns the carried
        results."""
        e = self.e
        c0, c1 = e.const(0, "index"), e.const(1, "index")
        cF = e.const("{{N / (TPR * V)}}", "index")
        stride = e.const("{{TPR * V}}", "index")
        cN = e.const("{{N}}", "index")
        types = ", ".join(t for _, t in carried)
        if guard_store:
            e.emit("scf.if %s {" % self.rowok)
            e.indent += 2
        cU = e.const(UNROLL, "index")
        groups = e.op("arith.divui %s, %s : index" % (cF, cU), "ng")
        done = e.op("arith.muli %s, %s : index" % (groups, cU), "nd")
        acc = [v for v, _ in carried]
        k = e.fresh("k")
        res = e.fresh("res") if carried else None
        iters = [e.fresh("a") for _ in carried]
        if carried:
            e.emit("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {" % (
                res, len(carried), k, c0, groups, c1,
                ", ".join("%s = %s" % (a, v) for a, v in zip(iters, acc)), types))
        else:
            e.emit("scf.for %s = %s to %s step %s {" % (k, c0, groups, c1))
        e.indent += 2
        cur = iters
        self.deferred = []
        for u in range(UNROLL):
            kk = e.op("arith.muli %s, %s : index" % (k, cU), "kk")
            if u:
                kk = e.op("arith.addi %s, %s : index" % (kk, e.const(u, "index")), "kk")
            kk = e.op("arith.muli %s, %s : index" % (kk, stride), "kk")
            col = e.op("arith.addi %s, %s : index" % (self.col0, kk), "col")
            cur = body(col, cur)
        stores, self.deferred = self.deferred, None
        for cond, text in stores:
            self.guarded(cond, text)
        if carried:
            e.emit("scf.yield %s : %s" % (", ".join(cur), types))
        e.indent -= 2
        e.emit("}")
        acc = ["%s#%d" % (res, i) for i in range(len(carried))]
        # The rest: chunks done .. done + UNROLL - 1, those with col < N.
        kk = e.op("arith.muli %s, %s : index" % (done, stride), "kk")
        base = e.op("arith.addi %s, %s : index" % (self.col0, kk), "col")
        any_left = e.op("arith.cmpi ult, %s, %s : index" % (base, cN), "left")
        last = e.const("{{N - V}}", "index")
        if carried:
            r = e.fresh("r")
            e.emit("%s:%d = scf.if %s -> (%s) {" % (r, len(carried), any_left, types))
        else:
            e.emit("scf.if %s {" % any_left)
        e.indent += 2
        cur = acc
        self.deferred = []
        for u in range(UNROLL):
            col = base if u == 0 else e.op("arith.addi %s, %s : index" % (
                base, e.op("arith.muli %s, %s : index" % (e.const(u, "index"), stride), "kk")),
                "col")
            inside = any_left if u == 0 else e.op("arith.cmpi ult, %s, %s : index" % (col, cN),
                                                  "in")
            cl = e.op("arith.minui %s, %s : index" % (col, last), "colc")
            self.inside = inside
            n0 = len(e.lines)
            new = body(cl, cur)
            self.inside = None
            # The slot's plain stores (store(), a subclass's too) wait
            # under `col < N` until every slot's loads are issued.
            keep = []
            for line in e.lines[n0:]:
                if line.strip().startswith("vector.store "):
                    self.deferred.append((inside, line.strip()))
                else:
                    keep.append(line)
            e.lines[n0:] = keep
            cur = [v if v == o else e.op("arith.select %s, %s, %s : %s" % (inside, v, o, t), "sel")
                   for v, o, (_, t) in zip(new, cur, carried)]
        stores, self.deferred = self.deferred, None
        for cond, text in stores:
            self.guarded(cond, text)
        if carried:
            e.emit("scf.yield %s : %s" % (", ".join(cur), types))
            e.indent -= 2
            e.emit("} else {")
            e.indent += 2
            e.emit("scf.yield %s : %s" % (", ".join(acc), types))
        e.indent -= 2
        e.emit("}")
        if guard_store:
            e.indent -= 2
            e.emit("}")
        return ["%s#%d" % (r, i) for i in range(len(carried))] if carried else []

    def row_reduce(self, v, kind, slot):
        """The row's reduction of one f32 per thread (add or max), the same
        value in every thread of the row."""
        e = self.e
        op = {"add": "arith.addf", "max": "arith.maximumf"}[kind]
        w = e.const(32, "i32")
        for off in (16, 8, 4, 2, 1):
            sh = e.fresh("sh")
            e.emit("%s, %s_ok = gpu.shuffle xor %s, %s, %s : f32" % (
                sh, sh, v, e.const(off, "i32"), w))
            v = e.op("%s %s, %s : f32" % (op, v, sh), "red")
        if self.warp_only:
            # TPR > 32: the shared-memory step below; TPR = 32: the
            # butterfly's value (no barrier: the rows of a block are
            # independent warps).
            c0 = e.const(0, "index")
            many = e.op("arith.cmpi ne, %s, %s : index" % (e.const("{{TPR / 64}}", "index"), c0),
                        "many")
            out = e.fresh("rowv")
            e.emit("%s = scf.if %s -> (f32) {" % (out, many))
            e.indent += 2
            r = self._shared_step(v, op, kind, slot)
            e.emit("scf.yield %s : f32" % r)
            e.indent -= 2
            e.emit("} else {")
            e.emit("  scf.yield %s : f32" % v)
            e.emit("}")
            return out
        return self._shared_step(v, op, kind, slot)

    def _shared_step(self, v, op, kind, slot):
        """Lane 0 of each warp stores its value, one barrier, every thread
        combines its row's TPR / 32 values in the same order."""
        e = self.e
        cs = e.const(slot, "index")
        e.emit("scf.if %s {" % self.lane0)
        e.emit("  memref.store %s, %s[%s, %s] : memref<4x32xf32, %s>" % (
            v, self.red, cs, self.warp, SMEM))
        e.emit("}")
        e.emit("gpu.barrier")
        ident = e.const("0.000000e+00" if kind == "add" else NEG_INF, "f32")
        c0, c1 = e.const(0, "index"), e.const(1, "index")
        i, a, r = e.fresh("i"), e.fresh("acc"), e.fresh("row")
        e.emit("%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (f32) {" % (
            r, i, c0, e.const("{{TPR / 32}}", "index"), c1, a, ident))
        e.indent += 2
        j = e.op("arith.addi %s, %s : index" % (self.wbase, i), "j")
        p = e.op("memref.load %s[%s, %s] : memref<4x32xf32, %s>" % (self.red, cs, j, SMEM), "p")
        s = e.op("%s %s, %s : f32" % (op, a, p), "s")
        e.emit("scf.yield %s : f32" % s)
        e.indent -= 2
        e.emit("}")
        return r

    def vsum(self, acc, kind="add"):
        return self.e.op("vector.reduction <%s>, %s : %s into f32" % (
            "add" if kind == "add" else "maximumf", acc, self.VF), "sum")

    # -- the kernel
    def prologue(self):
        e = self.e
        tid = e.op("gpu.thread_id x", "tid")
        bid = e.op("gpu.block_id x", "bid")
        tpr = e.const("{{TPR}}", "index")
        lir = e.op("arith.remui %s, %s : index" % (tid, tpr), "lane_r")
        rib = e.op("arith.divui %s, %s : index" % (tid, tpr), "row_b")
        r0 = e.op("arith.muli %s, %s : index" % (bid, e.const("{{%s}}" % RPB, "index")), "r0")
        row = e.op("arith.addi %s, %s : index" % (r0, rib), "row_u")
        self.rowok = e.op("arith.cmpi ult, %s, %s : index" % (row, e.const("{{R}}", "index")),
                          "rowok")
        self.row = e.op("arith.minui %s, %s : index" % (row, e.const("{{R - 1}}", "index")),
                        "row")
        self.col0 = e.op("arith.muli %s, %s : index" % (lir, e.const("{{V}}", "index")), "col0")
        c32 = e.const(32, "index")
        lane = e.op("arith.remui %s, %s : index" % (tid, c32), "lane")
        self.warp = e.op("arith.divui %s, %s : index" % (tid, c32), "warp")
        self.lane0 = e.op("arith.cmpi eq, %s, %s : index" % (lane, e.const(0, "index")), "lane0")
        self.wbase = e.op("arith.muli %s, %s : index" % (rib, e.const("{{TPR / 32}}", "index")),
                          "wbase")
        self.red = e.op("memref.get_global @red : memref<4x32xf32, %s>" % SMEM, "redm")
        self.first = e.op("arith.cmpi eq, %s, %s : index" % (lir, e.const(0, "index")), "first")
        self.nf = e.op("arith.uitofp %s : i32 to f32" % e.const("{{N}}", "i32"), "nf")

    def body(self):
        e, f = self.e, self.fam
        kind = f["kind"]
        zero_v = self.splat("0.000000e+00")
        if kind in ("rmsnorm", "add_rmsnorm"):
            def a(col, it):
                if kind == "add_rmsnorm":
                    hs = e.op("arith.addf %s, %s : %s" % (self.load("x", col), self.load("r", col),
                                                          self.VF), "hs")
                    h = self.from_f32(hs)
                    # h is an output: only valid rows (and, in a
                    # remainder slot, columns inside the row) store it.
                    ok = self.rowok if self.inside is None else e.op(
                        "arith.andi %s, %s : i1" % (self.rowok, self.inside), "hok")
                    self.guarded(ok, "vector.store %s, %%h[%s, %s] : %s, %s" % (
                        h, self.row, col, self.mem("h"), self.VT))
                    x = self.to_f32(h)
                else:
                    x = self.load("x", col)
                sq = e.op("arith.mulf %s, %s : %s" % (x, x, self.VF), "sq")
                return [e.op("arith.addf %s, %s : %s" % (it[0], sq, self.VF), "acc")]
            acc, = self.chunks([(zero_v, self.VF)], a)
            ss = self.row_reduce(self.vsum(acc), "add", 0)
            if f.get("recip"):
                one = e.const("1.000000e+00", "f32")
                inv = e.op("arith.divf %s, %s : f32" % (one, self.nf), "invn")
                mean = e.op("arith.mulf %s, %s : f32" % (ss, inv), "mean")
            else:
                mean = e.op("arith.divf %s, %s : f32" % (ss, self.nf), "mean")
            me = e.op("arith.addf %s, %s : f32" % (mean, e.const(f["eps"], "f32")), "me")
            rs = self.bcast(e.op("math.rsqrt %s : f32" % me, "rstd"))

            def b(col, it):
                x = self.load("h" if kind == "add_rmsnorm" else "x", col)
                t = e.op("arith.mulf %s, %s : %s" % (x, rs, self.VF), "xn")
                u = e.op("arith.mulf %s, %s : %s" % (t, self.load("w", col), self.VF), "yf")
                self.store("y", col, u)
                return []
            self.chunks([], b, guard_store=True)
        elif kind == "layernorm":
            def a(col, it):
                return [e.op("arith.addf %s, %s : %s" % (it[0], self.load("x", col), self.VF),
                             "acc")]
            acc, = self.chunks([(zero_v, self.VF)], a)
            mean = e.op("arith.divf %s, %s : f32" % (self.row_reduce(self.vsum(acc), "add", 0),
                                                     self.nf), "mean")
            mv = self.bcast(mean)

            def a2(col, it):
                d = e.op("arith.subf %s, %s : %s" % (self.load("x", col), mv, self.VF), "d")
                d2 = e.op("arith.mulf %s, %s : %s" % (d, d, self.VF), "d2")
                return [e.op("arith.addf %s, %s : %s" % (it[0], d2, self.VF), "acc")]
            acc2, = self.chunks([(zero_v, self.VF)], a2)
            var = e.op("arith.divf %s, %s : f32" % (self.row_reduce(self.vsum(acc2), "add", 1),
                                                    self.nf), "var")
            ve = e.op("arith.addf %s, %s : f32" % (var, e.const(f["eps"], "f32")), "ve")
            rs = self.bcast(e.op("math.rsqrt %s : f32" % ve, "rstd"))

            def b(col, it):
                d = e.op("arith.subf %s, %s : %s" % (self.load("x", col), mv, self.VF), "d")
                n = e.op("arith.mulf %s, %s : %s" % (d, rs, self.VF), "nrm")
                sc = e.op("arith.mulf %s, %s : %s" % (n, self.load("g", col), self.VF), "sc")
                o = e.op("arith.addf %s, %s : %s" % (sc, self.load("b", col), self.VF), "o")
                self.store("y", col, o)
                return []
            self.chunks([], b, guard_store=True)
        elif kind == "softmax":
            ninf = e.const(NEG_INF, "f32")
            zero = e.const("0.000000e+00", "f32")

            def a(col, it):
                m, s = it
                x = self.load("x", col)
                cm = e.op("vector.reduction <maximumf>, %s : %s into f32" % (x, self.VF), "cm")
                mn = e.op("arith.maximumf %s, %s : f32" % (m, cm), "mn")
                # exp(m - mn) rescales the old sum; 1 when both are -inf
                # (nothing seen yet that is not -inf), so no NaN is made.
                dm = e.op("arith.subf %s, %s : f32" % (m, mn), "dm")
                al = e.op("math.exp %s : f32" % dm, "al")
                none = e.op("arith.cmpf oeq, %s, %s : f32" % (mn, ninf), "none")
                al = e.op("arith.select %s, %s, %s : f32" % (none, e.const("1.000000e+00", "f32"),
                                                              al), "al")
                ex = e.op("math.exp %s : %s" % (
                    e.op("arith.subf %s, %s : %s" % (x, self.bcast(mn), self.VF), "xd"),
                    self.VF), "ex")
                es = self.vsum(ex)
                s2 = e.op("arith.addf %s, %s : f32" % (
                    e.op("arith.mulf %s, %s : f32" % (s, al), "ss"), es), "s")
                return [mn, s2]
            m, s = self.chunks([(ninf, "f32"), (zero, "f32")], a)
            M = self.row_reduce(m, "max", 0)
            # This thread's sum rescaled to the row's max; nothing from a
            # thread that saw only -inf.
            sc = e.op("arith.mulf %s, %s : f32" % (
                s, e.op("math.exp %s : f32" % e.op("arith.subf %s, %s : f32" % (m, M), "dm"),
                        "al")), "sc")
            none = e.op("arith.cmpf oeq, %s, %s : f32" % (m, ninf), "none")
            sc = e.op("arith.select %s, %s, %s : f32" % (none, zero, sc), "sc")
            S = self.row_reduce(sc, "add", 1)
            Mv = self.bcast(M)
            if f.get("recip"):
                inv = self.bcast(e.op("arith.divf %s, %s : f32" % (
                    e.const("1.000000e+00", "f32"), S), "inv"))
            else:
                Sv = self.bcast(S)

            def b(col, it):
                x = self.load("x", col)
                ex = e.op("math.exp %s : %s" % (
                    e.op("arith.subf %s, %s : %s" % (x, Mv, self.VF), "xd"), self.VF), "ex")
                if f.get("recip"):
                    y = e.op("arith.mulf %s, %s : %s" % (ex, inv, self.VF), "y")
                else:
                    y = e.op("arith.divf %s, %s : %s" % (ex, Sv, self.VF), "y")
                self.store("y", col, y)
                return []
            self.chunks([], b, guard_store=True)
        elif kind in ("rowsum", "rowmax"):
            mx = kind == "rowmax"
            init = self.splat(NEG_INF) if mx else zero_v

            def a(col, it):
                # x is read once: streaming loads (7-9% on the H200 at 126-240 MB)
                return [e.op("%s %s, %s : %s" % ("arith.maximumf" if mx else "arith.addf", it[0],
                                                  self.load("x", col, nt=True), self.VF), "acc")]
            acc, = self.chunks([(init, self.VF)], a)
            r = self.row_reduce(self.vsum(acc, "max" if mx else "add"), "max" if mx else "add",
                                0)
            ok = e.op("arith.andi %s, %s : i1" % (self.first, self.rowok), "st")
            e.emit("scf.if %s {" % ok)
            e.indent += 2
            v = self.from_f32(r, vec=False)
            e.emit("memref.store %s, %%s[%s] : %s" % (v, self.row, self.mem("s")))
            e.indent -= 2
            e.emit("}")
        elif kind == "bias_gelu":
            def b(col, it):
                v = e.op("arith.addf %s, %s : %s" % (self.load("x", col), self.load("b", col),
                                                     self.VF), "v")
                v2 = e.op("arith.mulf %s, %s : %s" % (v, v, self.VF), "v2")
                v3 = e.op("arith.mulf %s, %s : %s" % (v2, v, self.VF), "v3")
                t0 = e.op("arith.mulf %s, %s : %s" % (v3, self.splat("4.471500e-02"), self.VF),
                          "t0")
                t1 = e.op("arith.addf %s, %s : %s" % (v, t0, self.VF), "t1")
                u = e.op("arith.mulf %s, %s : %s" % (t1, self.splat("0.797884583"), self.VF), "u")
                # 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), as gen_rows.py.
                m2u = e.op("arith.mulf %s, %s : %s" % (u, self.splat("-2.000000e+00"), self.VF),
                           "m2u")
                ex = e.op("math.exp %s : %s" % (m2u, self.VF), "ex")
                den = e.op("arith.addf %s, %s : %s" % (ex, self.splat("1.000000e+00"), self.VF),
                           "den")
                g = e.op("arith.divf %s, %s : %s" % (v, den, self.VF), "g")
                self.store("y", col, g)
                return []
            self.chunks([], b, guard_store=True)
        else:
            raise ValueError(kind)

    def resident(self):
        """The resident form (knob RES = 1): the row read once into
        registers. Slot u of RES_SLOTS is chunk u of this thread, column
        col0 + u TPR V; a slot exists in a variant only where u TPR V < N
        (a constant condition per variant, {{u * TPR * V < N}}: the build
        folds the dead slots away), and within it a thread's chunk is
        inside the row or past its end (V divides N): its load is clamped
        to a valid column (min(col, N - V)), its value replaced by the
        reduction's identity and its store skipped past the end. Every
        load (x and the weight vectors) is issued before the first
        reduction: one memory round trip where the streaming form takes
        two or three (the latency of the short rows of small models, and
        more bytes in flight per thread for long rows)."""
        e, f = self.e, self.fam
        kind = f["kind"]
        c0 = e.const(0, "index")
        cN = e.const("{{N}}", "index")
        last = e.const("{{N - V}}", "index")
        zero_v = self.splat("0.000000e+00")
        slots = []
        for u in range(RES_SLOTS[self.t]):
            if u == 0:
                live = None
                col = self.col0
            else:
                lv = e.const("{{%d * TPR * V < N}}" % u, "index")
                live = e.op("arith.cmpi ne, %s, %s : index" % (lv, c0), "live")
                col = e.op("arith.addi %s, %s : index" % (
                    self.col0, e.const("{{%d * TPR * V}}" % u, "index")), "col")
            inside = e.op("arith.cmpi ult, %s, %s : index" % (col, cN), "in")
            cl = e.op("arith.minui %s, %s : index" % (col, last), "colc")
            slots.append(dict(live=live, col=cl, inside=inside))

        def loaded(sl, roles):
            """The loads of `roles` at the slot's column: f32 vectors (zero
            where the slot is dead)."""
            if sl["live"] is None:
                return [self.load(r, sl["col"]) for r in roles]
            names = [e.fresh("ld") for _ in roles]
            e.emit("%s = scf.if %s -> (%s) {" % (
                ", ".join(names) if len(names) == 1 else "%s:%d" % (names[0], len(names)),
                sl["live"], ", ".join([self.VF] * len(roles))))
            e.indent += 2
            vals = [self.load(r, sl["col"]) for r in roles]
            e.emit("scf.yield %s : %s" % (", ".join(vals), ", ".join([self.VF] * len(roles))))
            e.indent -= 2
            e.emit("} else {")
            e.emit("  scf.yield %s : %s" % (", ".join([zero_v] * len(roles)),
                                            ", ".join([self.VF] * len(roles))))
            e.emit("}")
            if len(names) == 1:
                return names
            return ["%s#%d" % (names[0], i) for i in range(len(names))]

        def store_at(sl, role, vf):
            """vf (f32) stored at the slot's column where it is live, inside
            the row and the row is valid."""
            v = self.from_f32(vf)
            ok = e.op("arith.andi %s, %s : i1" % (self.rowok, sl["inside"]), "ok")
            text = "vector.store %s, %%%s[%s, %s] : %s, %s" % (
                v, role, self.row, sl["col"], self.mem(role), self.VT)
            if sl["live"] is not None:
                e.emit("scf.if %s {" % sl["live"])
                e.indent += 2
            e.emit("scf.if %s {" % ok)
            e.emit("  " + text)
            e.emit("}")
            if sl["live"] is not None:
                e.indent -= 2
                e.emit("}")

        def masked(sl, v, ident):
            return e.op("arith.select %s, %s, %s : %s" % (sl["inside"], v, ident, self.VF), "m")

        vecs = {"rmsnorm": ["w"], "layernorm": ["g", "b"], "softmax": []}[kind]
        data = [loaded(sl, ["x"] + vecs) for sl in slots]
        xs = [d[0] for d in data]
        ws = [d[1:] for d in data]
        if kind == "rmsnorm":
            acc = None
            for sl, x in zip(slots, xs):
                sq = e.op("arith.mulf %s, %s : %s" % (x, x, self.VF), "sq")
                sq = masked(sl, sq, zero_v)
                acc = sq if acc is None else e.op("arith.addf %s, %s : %s" % (acc, sq, self.VF),
                                                  "acc")
            ss = self.row_reduce(self.vsum(acc), "add", 0)
            if f.get("recip"):
                one = e.const("1.000000e+00", "f32")
                inv = e.op("arith.divf %s, %s : f32" % (one, self.nf), "invn")
                mean = e.op("arith.mulf %s, %s : f32" % (ss, inv), "mean")
            else:
                mean = e.op("arith.divf %s, %s : f32" % (ss, self.nf), "mean")
            me = e.op("arith.addf %s, %s : f32" % (mean, e.const(f["eps"], "f32")), "me")
            rs = self.bcast(e.op("math.rsqrt %s : f32" % me, "rstd"))
            for sl, x, w in zip(slots, xs, ws):
                t = e.op("arith.mulf %s, %s : %s" % (x, rs, self.VF), "xn")
                u = e.op("arith.mulf %s, %s : %s" % (t, w[0], self.VF), "yf")
                store_at(sl, "y", u)
        elif kind == "layernorm":
            acc = None
            for sl, x in zip(slots, xs):
                xm = masked(sl, x, zero_v)
                acc = xm if acc is None else e.op("arith.addf %s, %s : %s" % (acc, xm, self.VF),
                                                  "acc")
            mean = e.op("arith.divf %s, %s : f32" % (self.row_reduce(self.vsum(acc), "add", 0),
                                                     self.nf), "mean")
            mv = self.bcast(mean)
            ds, acc = [], None
            for sl, x in zip(slots, xs):
                d = e.op("arith.subf %s, %s : %s" % (x, mv, self.VF), "d")
                ds.append(d)
                d2 = masked(sl, e.op("arith.mulf %s, %s : %s" % (d, d, self.VF), "d2"), zero_v)
                acc = d2 if acc is None else e.op("arith.addf %s, %s : %s" % (acc, d2, self.VF),
                                                  "acc")
            var = e.op("arith.divf %s, %s : f32" % (self.row_reduce(self.vsum(acc), "add", 1),
                                                    self.nf), "var")
            ve = e.op("arith.addf %s, %s : f32" % (var, e.const(f["eps"], "f32")), "ve")
            rs = self.bcast(e.op("math.rsqrt %s : f32" % ve, "rstd"))
            for sl, d, w in zip(slots, ds, ws):
                n = e.op("arith.mulf %s, %s : %s" % (d, rs, self.VF), "nrm")
                sc = e.op("arith.mulf %s, %s : %s" % (n, w[0], self.VF), "sc")
                o = e.op("arith.addf %s, %s : %s" % (sc, w[1], self.VF), "o")
                store_at(sl, "y", o)
        elif kind == "softmax":
            # max, then exp(x - max) and its sum, as the IR (and the
            # streaming form's second pass): y = exp(x - M) / S (or
            # exp(x - M) * (1 / S), TOSA's form).
            ninf_v = self.splat(NEG_INF)
            acc = None
            for sl, x in zip(slots, xs):
                xm = masked(sl, x, ninf_v)
                acc = xm if acc is None else e.op("arith.maximumf %s, %s : %s" % (
                    acc, xm, self.VF), "acc")
            M = self.row_reduce(self.vsum(acc, "max"), "max", 0)
            Mv = self.bcast(M)
            exs, acc = [], None
            for sl, x in zip(slots, xs):
                ex = e.op("math.exp %s : %s" % (
                    e.op("arith.subf %s, %s : %s" % (x, Mv, self.VF), "xd"), self.VF), "ex")
                exs.append(ex)
                em = masked(sl, ex, zero_v)
                acc = em if acc is None else e.op("arith.addf %s, %s : %s" % (acc, em, self.VF),
                                                  "acc")
            S = self.row_reduce(self.vsum(acc), "add", 1)
            if f.get("recip"):
                inv = self.bcast(e.op("arith.divf %s, %s : f32" % (
                    e.const("1.000000e+00", "f32"), S), "inv"))
            elif MARKSTEIN_RES:
                # e / S as q = e * (1 / S), then q + fma(-S, q, e) * (1 / S):
                # the correctly rounded quotient (Markstein; gen_rows.py's
                # softmax, "markstein"), barring a subnormal e, in three
                # instructions where div.rn per element is a subroutine.
                inv = self.bcast(e.op("arith.divf %s, %s : f32" % (
                    e.const("1.000000e+00", "f32"), S), "inv"))
                nS = self.bcast(e.op("arith.negf %s : f32" % S, "nS"))
            else:
                Sv = self.bcast(S)
            for sl, ex in zip(slots, exs):
                if f.get("recip"):
                    y = e.op("arith.mulf %s, %s : %s" % (ex, inv, self.VF), "y")
                elif MARKSTEIN_RES:
                    q = e.op("arith.mulf %s, %s : %s" % (ex, inv, self.VF), "q")
                    rr = e.op("vector.fma %s, %s, %s : %s" % (nS, q, ex, self.VF), "rr")
                    y = e.op("vector.fma %s, %s, %s : %s" % (rr, inv, q, self.VF), "y")
                else:
                    y = e.op("arith.divf %s, %s : %s" % (ex, Sv, self.VF), "y")
                store_at(sl, "y", y)
        else:
            raise ValueError(kind)

    def text(self, kname, header, resident=False):
        """resident: the kernel holds both forms, the streaming one (RES =
        0) and the resident one (RES = 1), in the cases of an
        scf.index_switch on {{RES}} (each variant keeps one live body)."""
        self.prologue()
        if resident:
            e = self.e
            e.emit("scf.index_switch %s" % e.const("{{RES}}", "index"))
            e.emit("case 0 {")
            e.indent += 2
            self.body()
            e.emit("scf.yield")
            e.indent -= 2
            e.emit("}")
            e.emit("case 1 {")
            e.indent += 2
            self.resident()
            e.emit("scf.yield")
            e.indent -= 2
            e.emit("}")
            e.emit("default {")
            e.emit("  scf.yield")
            e.emit("}")
        else:
            self.body()
        e = self.e
        args = ["%%%s: %s" % (r, self.mem(r)) for r in self.inputs + self.outputs]
        consts = ["    " + c for _, c in sorted(e.consts.values(), key=lambda x: int(
            x[0].lstrip("%c")))]
        out = ["gpu.module @kernels {"] + ["  // " + h for h in header]
        out.append("  memref.global \"private\" @red : memref<4x32xf32, %s> = uninitialized "
                   "{alignment = 16}" % SMEM)
        out.append("  gpu.func @%s(%s) kernel" % (kname, ", ".join(args)))
        out.append("      attributes {known_block_size = array<i32: {{TPR * (%s)}}, 1, 1>,"
                   % RPB)
        out.append("                  known_grid_size = array<i32: {{(R + %s - 1) / "
                   "(%s)}}, 1, 1>} {" % (RPB, RPB))
        out += consts + e.lines
        out.append("    gpu.return")
        out.append("  }")
        out.append("}")
        return "\n".join(out) + "\n"


def tune_lines(t):
    """The knobs of importer_any.py's row templates (rows_any.py's kernel):
    TPR, and V (the largest of VMAX[t], 4, 2, 1 dividing N, picked by a
    requirement; importer_any.py makes it an expression where a template
    would declare too many knobs)."""
    vmax = VMAX[t]
    vals = [v for v in (8, 4, 2, 1) if v <= vmax]
    return [
        "llm-fuse.tune TPR = 32, 128, 256, 1024",
        "llm-fuse.tune-require (TPR == 32 && N <= 2048) || (TPR == 128 && N >= 256 && "
        "N <= 16384) || (TPR == 256 && N >= 512) || (TPR == 1024 && N >= 8192)",
        "llm-fuse.tune V = %s" % ", ".join(str(v) for v in vals),
        "llm-fuse.tune-require N %% V == 0 && (V == %d || N %% (V * 2) != 0)" % vmax,
    ]


def tune_lines_any(t):
    """This module's templates: TPR only (V is v_expr(), not a knob, so
    that TPR may take six values within the limit of 16 combinations)."""
    return [
        "llm-fuse.tune TPR = 32, 64, 128, 256, 512, 1024",
        "llm-fuse.tune-require (TPR == 32 && N <= 2048) || (TPR == 64 && N >= 128 && "
        "N <= 4096) || (TPR == 128 && N >= 256 && N <= 16384) || (TPR == 256 && N >= 512) || "
        "(TPR == 512 && N >= 2048) || (TPR == 1024 && N >= 8192)",
    ]


def res_lines(t):
    """The resident form's knob: RES = 0 streams the row (the first value,
    the default), RES = 1 holds it in registers where it fits in
    RES_SLOTS chunks a thread."""
    return [
        "llm-fuse.tune RES = 0, 1",
        "llm-fuse.tune-require RES == 0 || N <= %d * TPR * %s" % (RES_SLOTS[t], v_expr(t, "N")),
    ]


def v_expr(t, n):
    """V, the elements per load: the largest of VMAX[t] (8 or 4), 4, 2, 1
    that divides the row length n (a symbol), as an expression of n (a
    knob would count toward the limit of 16 tune combinations)."""
    if VMAX[t] == 8:
        return "(8 - 4 * (%s %% 8 != 0) - 2 * (%s %% 4 != 0) - (%s %% 2 != 0))" % (n, n, n)
    return "(4 - 2 * (%s %% 4 != 0) - (%s %% 2 != 0))" % (n, n)


def example_text(name, dtype, rows, n):
    src, sdt, srows, sn, nfloat, *_ = FAMILIES[name]
    text = open(os.path.join(ROOT, src)).read()
    text = size_rewrite(text, {srows: rows, sn: n} if rows != n else {srows: n, sn: n},
                        {float(sn): n} if nfloat else {})
    if dtype != sdt:
        text = dtype_rewrite(text, sdt, dtype)
    return text


def _render(name, dtype, form):
    src, sdt, srows, sn, nfloat, fam, ins, outs = FAMILIES[name]
    rows, n = FORMS[form]

    def render(g):
        ps = g["pattern_sizes"]
        sym = {v: k for k, v in sorted(ps.items(), reverse=True)}
        nsym = sym[n]
        # R: a literal where the key holds it (a single row, the small-R
        # forms), else its symbol
        rsym = str(rows) if rows == 1 or form in SMALL_R_FORMS else sym[rows]
        k = Kernel(fam, dtype, ins, outs)
        k.warp_only = True
        free = sorted(ps, key=lambda s: int(s[1:]))
        if form in SMALL_R_FORMS:
            free = [s for s in free if s != sym[rows]]  # R is in the key: fixed
        header = [
            "Pattern-table template: kernels/table/rows_any.py %s %s (%s form): %s." % (
                name, dtype, form, "any row length, %d rows (a key of its own)" % rows
                if form in SMALL_R_FORMS else "any row count and row length"),
            "R = %s rows, N = %s columns; TPR threads per row, V elements per load." % (
                rsym, nsym),
        ] + ["llm-fuse.template-size %s" % s for s in free]
        header += tune_lines_any(dtype)
        if rows == 1:
            header.append("llm-fuse.tune-require TPR != 64 && TPR != 128")
        res = fam["kind"] in RES_KINDS
        if res:
            header += res_lines(dtype)
        text = k.text("%s_%s" % (name, dtype), header, resident=res)
        # The tokens become the pattern's symbols; placeholders and
        # requirements are evaluated by llm_client/tune.c.
        import re

        vx = v_expr(dtype, nsym)

        def fix_placeholder(m):
            t = re.sub(r"\bN\b", nsym, re.sub(r"\bR\b", rsym, m.group(0)))
            return re.sub(r"\bV\b", vx, t)
        text = re.sub(r"\{\{[^}]*\}\}", fix_placeholder, text)
        text = "\n".join(
            re.sub(r"\bN\b", nsym, re.sub(r"\bR\b", rsym, l)) if "tune-require" in l else l
            for l in text.split("\n"))
        # A literal 1 for R: {{1}} and {{1 - 1}} are still placeholders that
        # evaluate; memref<{{1}}x...> would be a type with a placeholder in
        # it, fine for tune.c. A small-R form writes R as a literal too and
        # fixes its size in the entry (the key holds it anyway).
        return text, [None if s in free else ps[s] for s in sorted(ps, key=lambda s: int(s[1:]))]
    return render


def templates():
    out = []
    for name in sorted(FAMILIES):
        src, sdt = FAMILIES[name][0], FAMILIES[name][1]
        for dtype in DTYPES:
            if sdt != "f32" and dtype == "f32" and name not in F32_FROM_16:
                continue  # arith.extf f32 -> f32 is not valid IR
            small = [f for f in SMALL_R_FORMS if name in SMALL_R_FAMILIES]
            for form in ["any", "row1", "square"] + small:
                rows, n = FORMS[form]

                def pick(groups):
                    rows = [g for g in groups if g.get("class") in ("reduction", "elementwise")]
                    return rows[0] if len(rows) == 1 else None
                out.append(dict(
                    name="zz-any-%s-%s-%s" % (name, dtype, form),
                    example=example_text(name, dtype, rows, n),
                    pick=pick,
                    render=_render(name, dtype, form),
                    archs=ARCHS,
                    source="kernels/table/rows_any.py %s %s %s (from %s at %d x %d)" % (
                        name, dtype, form, src, rows, n)))
    return out
