#!/usr/bin/env python3
"""bmm_any.py - the table's batched-GEMM templates (issue 15: "batched GEMMs
with transposed operands"): C[b] = A[b] @ B[b] for any batch B, rows M,
columns N and depth K, with A or B transposed, in f32, bf16 and f16.

kernels/table/build.py imports this module (SPEC_MODULES) and writes one
entry per (form, size pattern, element type, kernel) that `templates()`
yields. The forms are the batched products importers emit
(examples/bench/bmm_*.mlir; examples/importer/minigpt_torch_mlir.mlir):

  nn        linalg.batch_matmul A[B,M,K] x B[B,K,N]               (P V)
  nt        linalg.transpose [0,2,1] of B[B,N,K], batch_matmul      (Q K^T)
  ntm       linalg.batch_matmul with indexing_maps reading B[B,N,K]  (MLIR 22's form)
  tn        linalg.transpose [0,2,1] of A[B,K,M], batch_matmul      (A^T B)
  nts       nt with the scale epilogue (scores * 1/sqrt(d), one key per d)
  tms       torch-mlir's attention scores: q [1,H,T,d], k^T [1,H,d,T]
            collapsed to [H,..], batch_matmul, expanded to [1,H,T,T],
            scaled, masked_fill(mask [1,1,T,T], -inf) (the MiniGPT group)
  tmpv      torch-mlir's att @ v: v [1,T,H,d] transposed to [1,H,T,d],
            collapsed, batch_matmul, expanded, transposed back to [1,T,H,d]

Which sizes are equal is part of the pattern key (docs/pattern-key.md): the
self-attention scores (M = N = T), P V (M = K = T) and a square GEMM
(M = N = K) are other keys than all-distinct sizes, so each form comes in
the size patterns it is used with (SHAPES). A key not listed (e.g. B equal
to K) has no template.

Kernels:

  * `gen` (every form, every type; entries *-9gen): a tiled SIMT kernel
    written here. A CTA of 256 threads owns a 64 x 64 tile of one batch
    (grid: ceil(M/64) * ceil(N/64) tiles x B on grid.z); 16-deep k-tiles of
    A and B are read element by element (each operand along its contiguous
    dimension: coalesced whatever the transposition), widened to f32 and
    staged in shared memory (k-major, padded); each thread accumulates a
    4 x 4 block with vector.outerproduct (f32 FMA). Every size is masked:
    indices are clamped and values past M, N or K replaced by zero, stores
    guarded, so any B (<= 65535), M, N, K >= 1 are admitted (odd ones
    too). One rounding at the store.
  * `simt` / `mma` (entries *-1simt, *-1mma; tried first): gen_gemm.py's
    f32 SIMT kernel and mma.sync bf16/f16 kernel, imported read-only, with
    M, N and K masked (mask_nk: N and K multiples of 4 (f32) / 8 (16-bit))
    and the batch index on grid.z: their operands are given a batch prefix
    (`gpu.block_id z`) by a local Operand class swapped into gen_gemm while
    the kernel is generated. f32 covers nn, nt/ntm (gen_gemm's b_nk: B
    staged N x K) and tmpv; bf16/f16 (mma.sync reads B [K, N] only) cover
    nn and tmpv. A size they refuse falls to the `gen` entry.

Every kernel accumulates in f32 (a 16-bit IR's batch_matmul accumulates in
16 bits; the verifier judges it against the opmath reference,
docs/verification.md "16-bit accumulation") and runs the epilogue in f32.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
import gen_gemm  # noqa: E402  (read-only: not edited here)
from heldout import dtype_rewrite  # noqa: E402

ARCHS = ["sm_80", "sm_90", "sm_90a"]
WG = "#gpu.address_space<workgroup>"
DTYPES = ["f32", "bf16", "f16"]
NEG_INF = {"f32": "0xFF800000", "bf16": "0xFF80", "f16": "0xFC00"}

# The scale of the scaled forms: 1/sqrt(d) for these head sizes (an f32
# constant; its value is in the pattern key, so one key per head size).
SCALES = {64: "1.250000e-01", 96: "0.102062076", 128: "0.0883883461"}

# Example sizes per size pattern: (B, M, N, K), distinct where the pattern
# says distinct (and distinct from every other number in the example).
SHAPES = {
    "any": (12, 200, 136, 72),     # all four distinct
    "mn": (12, 200, 200, 72),      # M = N (self-attention scores)
    "mk": (12, 200, 72, 200),      # M = K (P V: [T, T] x [T, d])
    "mnk": (12, 200, 200, 200),    # M = N = K (a square GEMM)
}
FORM_SHAPES = {
    "nn": ["any", "mk", "mnk"],
    "nt": ["any", "mn", "mnk"],
    "ntm": ["any", "mn"],
    "tn": ["any", "mn", "mnk"],
}


# ---- The models -------------------------------------------------------------

def _t(dims, dt):
    return "tensor<%sx%s>" % ("x".join(str(d) for d in dims), dt)


def model_text(form, dt, B, M, N, K, d=None, comment=True):
    """The MLIR text of one batched product (f32, or rewritten to dt)."""
    f = "f32"
    z = "  %%zero = arith.constant 0.0 : %s\n" % f
    acc = ("  %%e = tensor.empty() : %s\n"
           "  %%acc = linalg.fill ins(%%zero : %s) outs(%%e : %s) -> %s\n") % (
        _t([B, M, N], f), f, _t([B, M, N], f), _t([B, M, N], f))
    c = _t([B, M, N], f)
    if form == "nn":
        body = ("func.func @bmm_nn(%%a: %s, %%b: %s) -> %s {\n" % (_t([B, M, K], f), _t([B, K, N], f), c) + z + acc +
                "  %%r = linalg.batch_matmul ins(%%a, %%b : %s, %s) outs(%%acc : %s) -> %s\n" % (
                    _t([B, M, K], f), _t([B, K, N], f), c, c) +
                "  return %%r : %s\n}\n" % c)
    elif form in ("nt", "nts"):
        body = ("func.func @bmm_nt(%%a: %s, %%b: %s) -> %s {\n" % (_t([B, M, K], f), _t([B, N, K], f), c) + z +
                "  %%bt0 = tensor.empty() : %s\n" % _t([B, K, N], f) +
                "  %%bt = linalg.transpose ins(%%b : %s) outs(%%bt0 : %s) permutation = [0, 2, 1]\n" % (
                    _t([B, N, K], f), _t([B, K, N], f)) + acc +
                "  %%r = linalg.batch_matmul ins(%%a, %%bt : %s, %s) outs(%%acc : %s) -> %s\n" % (
                    _t([B, M, K], f), _t([B, K, N], f), c, c))
        if form == "nts":
            body += ("  %%s = arith.constant %s : %s\n" % (SCALES[d], f) +
                     "  %%y = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, "
                     "affine_map<(b, i, j) -> (b, i, j)>], iterator_types = [\"parallel\", \"parallel\", "
                     "\"parallel\"]} ins(%%r : %s) outs(%%e : %s) {\n" % (c, c) +
                     "  ^bb0(%%in: %s, %%out: %s):\n    %%m = arith.mulf %%in, %%s : %s\n"
                     "    linalg.yield %%m : %s\n  } -> %s\n" % (f, f, f, f, c) +
                     "  return %%y : %s\n}\n" % c)
        else:
            body += "  return %%r : %s\n}\n" % c
    elif form == "ntm":
        body = ("func.func @bmm_ntm(%%a: %s, %%b: %s) -> %s {\n" % (_t([B, M, K], f), _t([B, N, K], f), c) + z + acc +
                "  %%r = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, "
                "affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]\n"
                "      ins(%%a, %%b : %s, %s) outs(%%acc : %s) -> %s\n" % (
                    _t([B, M, K], f), _t([B, N, K], f), c, c) +
                "  return %%r : %s\n}\n" % c)
    elif form == "tn":
        body = ("func.func @bmm_tn(%%a: %s, %%b: %s) -> %s {\n" % (_t([B, K, M], f), _t([B, K, N], f), c) + z +
                "  %%at0 = tensor.empty() : %s\n" % _t([B, M, K], f) +
                "  %%at = linalg.transpose ins(%%a : %s) outs(%%at0 : %s) permutation = [0, 2, 1]\n" % (
                    _t([B, K, M], f), _t([B, M, K], f)) + acc +
                "  %%r = linalg.batch_matmul ins(%%at, %%b : %s, %s) outs(%%acc : %s) -> %s\n" % (
                    _t([B, M, K], f), _t([B, K, N], f), c, c) +
                "  return %%r : %s\n}\n" % c)
    elif form == "tms":
        # B = H heads, M = N = T, K = d (torch-mlir, MiniGPT's att = q @ k^T * scale, masked)
        H, T = B, M
        q, kt = _t([1, H, T, K], f), _t([1, H, K, T], f)
        c3, c4 = _t([H, T, T], f), _t([1, H, T, T], f)
        body = ("func.func @bmm_scores(%%q: %s, %%kt: %s, %%mask: %s) -> %s {\n" % (
            q, kt, _t([1, 1, T, T], "i1"), c4) +
            "  %%zero = arith.constant 0.000000e+00 : f32\n"
            "  %%ninf = arith.constant 0xFF800000 : f32\n"
            "  %%s = arith.constant %s : f32\n" % SCALES[d] +
            "  %%q3 = tensor.collapse_shape %%q [[0, 1], [2], [3]] : %s into %s\n" % (q, _t([H, T, K], f)) +
            "  %%k3 = tensor.collapse_shape %%kt [[0, 1], [2], [3]] : %s into %s\n" % (kt, _t([H, K, T], f)) +
            "  %%e = tensor.empty() : %s\n" % c3 +
            "  %%acc = linalg.fill ins(%%zero : f32) outs(%%e : %s) -> %s\n" % (c3, c3) +
            "  %%r = linalg.batch_matmul ins(%%q3, %%k3 : %s, %s) outs(%%acc : %s) -> %s\n" % (
                _t([H, T, K], f), _t([H, K, T], f), c3, c3) +
            "  %%r4 = tensor.expand_shape %%r [[0, 1], [2], [3]] output_shape [1, %d, %d, %d] : %s into %s\n" % (
                H, T, T, c3, c4) +
            "  %%e4 = tensor.empty() : %s\n" % c4 +
            "  %%sc = linalg.generic {indexing_maps = [affine_map<(a, b, i, j) -> (a, b, i, j)>, "
            "affine_map<(a, b, i, j) -> (a, b, i, j)>], iterator_types = [\"parallel\", \"parallel\", \"parallel\", "
            "\"parallel\"]} ins(%%r4 : %s) outs(%%e4 : %s) {\n" % (c4, c4) +
            "  ^bb0(%%in: f32, %%out: f32):\n    %%m = arith.mulf %%in, %%s : f32\n    linalg.yield %%m : f32\n"
            "  } -> %s\n" % c4 +
            "  %%y = linalg.generic {indexing_maps = [affine_map<(a, b, i, j) -> (a, b, i, j)>, "
            "affine_map<(a, b, i, j) -> (0, 0, i, j)>, affine_map<(a, b, i, j) -> (a, b, i, j)>], "
            "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\"]} "
            "ins(%%sc, %%mask : %s, %s) outs(%%e4 : %s) {\n" % (c4, _t([1, 1, T, T], "i1"), c4) +
            "  ^bb0(%%in: f32, %%mk: i1, %%out: f32):\n    %%v = arith.select %%mk, %%ninf, %%in : f32\n"
            "    linalg.yield %%v : f32\n  } -> %s\n" % c4 +
            "  return %%y : %s\n}\n" % c4)
    elif form == "tmpv":
        # B = H heads, M = K = T, N = d (torch-mlir, MiniGPT's y = att @ v, heads back in place)
        H, T, D = B, M, N
        v, att, y = _t([1, T, H, D], f), _t([1, H, T, T], f), _t([1, T, H, D], f)
        body = ("func.func @bmm_pv(%%v: %s, %%att: %s) -> %s {\n" % (v, att, y) +
                "  %%zero = arith.constant 0.000000e+00 : f32\n"
                "  %%vt0 = tensor.empty() : %s\n" % _t([1, H, T, D], f) +
                "  %%vt = linalg.transpose ins(%%v : %s) outs(%%vt0 : %s) permutation = [0, 2, 1, 3]\n" % (
                    v, _t([1, H, T, D], f)) +
                "  %%a3 = tensor.collapse_shape %%att [[0, 1], [2], [3]] : %s into %s\n" % (att, _t([H, T, T], f)) +
                "  %%v3 = tensor.collapse_shape %%vt [[0, 1], [2], [3]] : %s into %s\n" % (
                    _t([1, H, T, D], f), _t([H, T, D], f)) +
                "  %%e = tensor.empty() : %s\n" % _t([H, T, D], f) +
                "  %%acc = linalg.fill ins(%%zero : f32) outs(%%e : %s) -> %s\n" % (_t([H, T, D], f), _t([H, T, D], f)) +
                "  %%r = linalg.batch_matmul ins(%%a3, %%v3 : %s, %s) outs(%%acc : %s) -> %s\n" % (
                    _t([H, T, T], f), _t([H, T, D], f), _t([H, T, D], f), _t([H, T, D], f)) +
                "  %%r4 = tensor.expand_shape %%r [[0, 1], [2], [3]] output_shape [1, %d, %d, %d] : %s into %s\n" % (
                    H, T, D, _t([H, T, D], f), _t([1, H, T, D], f)) +
                "  %%ye = tensor.empty() : %s\n" % y +
                "  %%y = linalg.transpose ins(%%r4 : %s) outs(%%ye : %s) permutation = [0, 2, 1, 3]\n" % (
                    _t([1, H, T, D], f), y) +
                "  return %%y : %s\n}\n" % y)
    else:
        raise ValueError(form)
    if comment:
        body = ("// bmm_any.py %s: batch %d, M %d, N %d, K %d (f32; rewritten to %s)\n" % (form, B, M, N, K, dt)) + body
    if dt != "f32":
        body = dtype_rewrite(body, "f32", dt)
    return body


# ---- How each form's kernel arguments are read -----------------------------
#
# Per form: the arguments in the subgraph's order, each (role, shape, index):
#   role   "a", "b" (the operands), "mask" (i1), "c" (the result);
#   shape  its dimensions as size roles "B", "M", "N", "K" or the literal 1;
#   index  its memref indices as expressions of b, m, n, k (the batch, the
#          row, the column and the depth index);
#   contig the index that runs along its last (contiguous) dimension.

def form_args(form):
    if form == "nn":
        return [("a", ["B", "M", "K"], ["b", "m", "k"]), ("b", ["B", "K", "N"], ["b", "k", "n"]),
                ("c", ["B", "M", "N"], ["b", "m", "n"])]
    if form in ("nt", "nts"):
        # the outliner orders the inputs by first use: the transpose of B comes first
        return [("b", ["B", "N", "K"], ["b", "n", "k"]), ("a", ["B", "M", "K"], ["b", "m", "k"]),
                ("c", ["B", "M", "N"], ["b", "m", "n"])]
    if form == "ntm":
        return [("a", ["B", "M", "K"], ["b", "m", "k"]), ("b", ["B", "N", "K"], ["b", "n", "k"]),
                ("c", ["B", "M", "N"], ["b", "m", "n"])]
    if form == "tn":
        return [("a", ["B", "K", "M"], ["b", "k", "m"]), ("b", ["B", "K", "N"], ["b", "k", "n"]),
                ("c", ["B", "M", "N"], ["b", "m", "n"])]
    if form == "tms":
        return [("a", [1, "B", "M", "K"], ["0", "b", "m", "k"]), ("b", [1, "B", "K", "N"], ["0", "b", "k", "n"]),
                ("mask", [1, 1, "M", "N"], ["0", "0", "m", "n"]), ("c", [1, "B", "M", "N"], ["0", "b", "m", "n"])]
    if form == "tmpv":
        return [("b", [1, "K", "B", "N"], ["0", "k", "b", "n"]), ("a", [1, "B", "M", "K"], ["0", "b", "m", "k"]),
                ("c", [1, "M", "B", "N"], ["0", "m", "b", "n"])]
    raise ValueError(form)


def form_epilogue(form, d=None):
    """(kind, scale text) of the form's elementwise tail"""
    if form == "nts":
        return "scale", SCALES[d]
    if form == "tms":
        return "scale_mask", SCALES[d]
    return "none", None


# ---- The general kernel (`gen`) ---------------------------------------------

GEN_BM, GEN_BN, GEN_BK = 64, 64, 16
GEN_T = (GEN_BM // 4) * (GEN_BN // 4)   # 256 threads, 4 x 4 outputs each
PAD = 4


def gen_kernel(form, dt, sym, d=None, name="bmm"):
    """The gpu.module text of the general kernel: sym maps the roles B, M,
    N, K to their size symbols ("S0", ...)."""
    em = gen_gemm.Emitter()
    BM, BN, BK, T = GEN_BM, GEN_BN, GEN_BK, GEN_T
    TX = BN // 4
    args = form_args(form)
    ep, scale = form_epilogue(form, d)
    Bs, Ms, Ns, Ks = sym["B"], sym["M"], sym["N"], sym["K"]
    gm, gn, kt = "(%s + %d) / %d" % (Ms, BM - 1, BM), "(%s + %d) / %d" % (Ns, BN - 1, BN), \
        "(%s + %d) / %d" % (Ks, BK - 1, BK)
    em.require("%s <= 65535" % Bs)
    names = ["%%arg%d" % i for i in range(len(args))]
    ty = {}
    for (role, shape, _), nm in zip(args, names):
        et = "i1" if role == "mask" else dt
        ty[role] = "memref<%sx%s>" % ("x".join("{{%s}}" % sym[s] if isinstance(s, str) else str(s)
                                               for s in shape), et)
    arg = {role: nm for (role, _, _), nm in zip(args, names)}
    idx_of = {role: ix for role, _, ix in args}
    f32 = "f32"
    LDA, LDB = BM + PAD, BN + PAD
    sa_ty = "memref<%dx%dxf32, %s>" % (BK, LDA, WG)
    sb_ty = "memref<%dx%dxf32, %s>" % (BK, LDB, WG)
    smem = BK * (LDA + LDB) * 4

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    gn_v = em.symc(gn)
    pid_m = em.div(pid, gn_v)
    pid_n = em.rem(pid, gn_v)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    tx = em.rem(tid, TX)
    ty_ = em.div(tid, TX)
    M_v, N_v, K_v = em.symc(Ms), em.symc(Ns), em.symc(Ks)
    M1, N1, K1 = em.symc("%s - 1" % Ms), em.symc("%s - 1" % Ns), em.symc("%s - 1" % Ks)
    zero = em.f32("0.000000e+00", "zero")

    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sa_ty), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(BK * LDA * 4), WG, sb_ty), "sB")

    def index(role, b, m, n, k):
        env = {"b": b, "m": m, "n": n, "k": k, "0": 0}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

    # Loads: each operand read along its contiguous index (the last of its
    # indices), so that consecutive threads read consecutive addresses.
    def plan(role, outer, outer_tile, outer_bound):
        last = idx_of[role][-1]
        out = []
        for i in range(BK * outer_tile // T):
            e = em.add(tid, i * T)
            if last == "k":
                kk, oo = em.rem(e, BK), em.div(e, BK)
            else:
                kk, oo = em.div(e, outer_tile), em.rem(e, outer_tile)
            go = em.add(outer, oo)
            ok_o = em.op("arith.cmpi ult, %s, %s : index" % (em.v(go), outer_bound[0]), "oko")
            goc = em.minu(go, outer_bound[1])
            out.append((kk, oo, goc, ok_o))
        return out

    a_plan = plan("a", m0, BM, (M_v, M1))
    b_plan = plan("b", n0, BN, (N_v, N1))

    def load(role, plan_, k0):
        vals = []
        for kk, oo, goc, ok_o in plan_:
            gk = em.add(k0, kk)
            ok_k = em.op("arith.cmpi ult, %s, %s : index" % (gk, K_v), "okk")
            gkc = em.minu(gk, K1)
            ok = em.op("arith.andi %s, %s : i1" % (ok_o, ok_k), "ok")
            if role == "a":
                ix = index("a", bz, goc, None, gkc)
            else:
                ix = index("b", bz, None, goc, gkc)
            x = em.op("memref.load %s[%s] : %s" % (arg[role], ix, ty[role]), "g")
            if dt != f32:
                x = em.op("arith.extf %s : %s to f32" % (x, dt), "g")
            vals.append(em.op("arith.select %s, %s, %s : f32" % (ok, x, zero), "g"))
        return vals

    def store(sm, sm_ty, plan_, vals):
        for (kk, oo, _, _), x in zip(plan_, vals):
            em.emit("memref.store %s, %s[%s, %s] : %s" % (x, sm, em.v(kk), em.v(oo), sm_ty))

    q_ty = "vector<4x4xf32>"
    v4 = "vector<4xf32>"
    zacc = em.const("dense<0.000000e+00>", q_ty, "zero44")
    ra = em.mul(ty_, 4)
    cb = em.mul(tx, 4)
    kt_v = em.symc(kt)
    res = em.fresh("acc")
    em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (%s) {" % (
        res, em.idx(0), kt_v, em.idx(1), zacc, q_ty))
    em.indent += 2
    k0 = em.mul("%kt", BK)
    av = load("a", a_plan, k0)
    bv = load("b", b_plan, k0)
    em.emit("gpu.barrier")
    store(sA, sa_ty, a_plan, av)
    store(sB, sb_ty, b_plan, bv)
    em.emit("gpu.barrier")
    acc = "%acc"
    for k in range(BK):
        a4 = em.op("vector.load %s[%s, %s] : %s, %s" % (sA, em.idx(k), em.v(ra), sa_ty, v4), "a")
        b4 = em.op("vector.load %s[%s, %s] : %s, %s" % (sB, em.idx(k), em.v(cb), sb_ty, v4), "b")
        acc = em.op("vector.outerproduct %s, %s, %s {kind = #vector.kind<add>} : %s, %s" % (a4, b4, acc, v4, v4), "acc")
    em.emit("scf.yield %s : %s" % (acc, q_ty))
    em.indent -= 2
    em.emit("}")

    if ep != "none":
        sc = em.f32(scale, "scale")
        if dt != f32:   # the IR's constant is the 16-bit one: widen it
            sc16 = em.const(scale, dt, "scale16")
            sc = em.op("arith.extf %s : %s to f32" % (sc16, dt), "sc")
    if ep == "scale_mask":
        ninf = em.f32("0xFF800000", "ninf")
    for i in range(4):
        row = em.add(em.add(m0, ra), i)
        okr = em.op("arith.cmpi ult, %s, %s : index" % (row, M_v), "okr")
        rv = em.op("vector.extract %s[%d] : %s from %s" % (res, i, v4, q_ty), "r")
        for j in range(4):
            col = em.add(em.add(n0, cb), j)
            okc = em.op("arith.cmpi ult, %s, %s : index" % (col, N_v), "okc")
            ok = em.op("arith.andi %s, %s : i1" % (okr, okc), "ok")
            x = em.op("vector.extract %s[%d] : f32 from %s" % (rv, j, v4), "x")
            em.emit("scf.if %s {" % ok)
            em.indent += 2
            if ep in ("scale", "scale_mask"):
                x = em.op("arith.mulf %s, %s : f32" % (x, sc), "y")
            if ep == "scale_mask":
                mk = em.op("memref.load %s[%s] : %s" % (arg["mask"], index("mask", bz, row, col, None),
                                                         ty["mask"]), "mk")
                x = em.op("arith.select %s, %s, %s : f32" % (mk, ninf, x), "y")
            if dt != f32:
                x = em.op("arith.truncf %s : f32 to %s" % (x, dt), "y")
            em.emit("memref.store %s, %s[%s] : %s" % (x, arg["c"], index("c", bz, row, col, None), ty["c"]))
            em.indent -= 2
            em.emit("}")
    em.emit("gpu.return")

    free = sorted(set(sym.values()), key=lambda s: int(s[1:]))
    lines = ["gpu.module @kernels {"]
    lines.append("  // Pattern-table template: kernels/table/bmm_any.py %s %s (general SIMT kernel): C[b] = A[b] @ B[b]"
                 % (form, dt))
    lines.append("  // with %s; B = %s, M = %s, N = %s, K = %s, every size masked." % (
        {"nn": "A [B,M,K], B [B,K,N]", "nt": "B read [B,N,K] (transposed)", "ntm": "B read [B,N,K] (indexing_maps)",
         "tn": "A read [B,K,M] (transposed)", "nts": "B read [B,N,K], scaled",
         "tms": "torch-mlir's scores [1,H,T,d] x [1,H,d,T], scaled and masked",
         "tmpv": "torch-mlir's att [1,H,T,T] x v [1,T,H,d] -> [1,T,H,d]"}[form], Bs, Ms, Ns, Ks))
    lines.append("  // CTA %d x %d x %d, %d threads of 4 x 4 f32 outputs (vector.outerproduct), A^T and B staged f32"
                 % (BM, BN, BK, T))
    lines.append("  // in shared memory (k-major, padded), global reads along each operand's contiguous dimension;")
    lines.append("  // grid (ceil(M/%d) * ceil(N/%d), 1, B), f32 accumulation, one rounding at the store." % (BM, BN))
    lines += ["  // llm-fuse.template-size %s" % s for s in free]
    for r in em.reqs:
        lines.append("  // llm-fuse.tune-require %s" % r)
    sig = ", ".join("%s: %s" % (nm, ty[role]) for (role, _, _), nm in zip(args, names))
    lines.append("  gpu.func @%s(%s) kernel" % (name, sig))
    lines.append("      attributes {known_block_size = array<i32: %d, 1, 1>," % T)
    lines.append("                  known_grid_size = array<i32: {{%s * %s}}, 1, {{%s}}>," % (
        gen_gemm.par(gm), gen_gemm.par(gn), Bs))
    lines.append("                  llm_fuse.dynamic_shared_memory = %d : i32} {" % smem)
    lines += em.body(4)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- gen_gemm.py's kernels with a batch index -------------------------------

class _Batched:
    """While active, gen_gemm.Operand gives every 3- or 4-dimensional
    argument the batch layout of the form (its indices as a function of the
    batch index, gpu.block_id z, the row and the column of gen_gemm's 2-D
    view) instead of its own views."""
    layouts = None   # memref name -> (index expressions, view shape)

    def __init__(self, layouts):
        self.layouts_ = layouts

    def __enter__(self):
        self.saved = gen_gemm.Operand
        layouts = self.layouts_
        base = gen_gemm.Operand

        class BOperand(base):
            def __init__(self, em, name, shape, dt):
                if name not in layouts:
                    return base.__init__(self, em, name, shape, dt)
                self.name, self.dt, self.em, self.rows = name, dt, em, None
                self.ty = gen_gemm.memref_ty(shape, dt)
                self.ix, self.shape = layouts[name]
                self.prefix = []

            def at(self, *idx):
                if self.rows is not None or not hasattr(self, "ix"):
                    return base.at(self, *idx)
                bz = self.em.const_op("gpu.block_id z", "bz")
                env = {"b": bz, "r": idx[0], "c": idx[1], "0": 0}
                return "%s[%s]" % (self.name, ", ".join(str(self.em.v(env[x])) for x in self.ix))

        gen_gemm.Operand = BOperand
        return self

    def __exit__(self, *exc):
        gen_gemm.Operand = self.saved


# ---- mma.sync with B stored [N, K] (the 16-bit Q K^T) ------------------------
#
# gen_gemm.py's bf16_mma kernel reads B as [K, N] (ldmatrix .trans from a
# [k][n] tile). For B stored [N, K] (b_nk) the mma's "col" B operand is B's
# own layout: the tile is staged [n][k] like A (the same cp.async chunks and
# XOR swizzle) and read by ldmatrix without .trans (lane l: n-row (l % 8) +
# 8 (l / 16), k-chunk (l / 8) % 2: registers b0, b1 of n8 tile 2j, then of
# 2j + 1). The variant is made from gen_gemm.gen_bf16_mma's own source by the
# edits below (each must apply once; gen_gemm.py is not edited): if that
# source changes so that one does not apply, the entries are left out with a
# warning (build.py runs whatever the generator's state).
_NK_EDITS = [
    ("sm_ty_b = memref_ty([S, BK, BN], dt, WG)", "sm_ty_b = memref_ty([S, BN, BK], dt, WG)"),
    ("""    b_copies = []
    for i in range(BK * nchunks // T):
        q = em.add(tid, i * T)
        r = em.div(q, nchunks)
        c = em.rem(q, nchunks)
        dcol = em.mul(em.xor(c, em.band(r, 7)), 8)
        gcol = em.add(n0, em.mul(c, 8))
        if nk:
            gcol = em.minu(gcol, n_last8)
        b_copies.append((r, dcol, gcol))
""", """    b_copies = []
    if nk:
        n_last1 = sval(em, "%s - 1" % N if is_sym(N) else N - 1)
    assert (BN * kchunks) % T == 0
    for i in range(BN * kchunks // T):
        q = em.add(tid, i * T)
        r = em.div(q, kchunks)
        c = em.rem(q, kchunks)
        dcol = em.mul(em.xor(c, swz_a(r)), 8)
        gn_ = em.add(n0, r)
        if nk:
            gn_ = em.minu(gn_, n_last1)
        b_copies.append((r, dcol, gn_, em.mul(c, 8)))
"""),
    ("""            for (r, dcol, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.add(k0, r)), em.v(gcol)),""",
     """            for (r, dcol, grow, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(grow), em.v(em.add(k0, gcol))),"""),
    ("""            for (r, dcol, gcol) in b_copies:
                kr = em.add(k0, r)
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.minu(kr, k_last)), em.v(gcol)),""",
     """            for (r, dcol, grow, gcol) in b_copies:
                kr = em.add(k0, gcol)
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(grow), em.v(em.minu(kr, k_last8))),"""),
    ("""    b_krow = em.add(em.band(lane, 7), em.mul(em.band(em.shr(lane, 3), 1), 8))
    b_swz = em.band(lane, 7)             # == k-row % 8
    b_col = [em.mul(em.xor(em.add(em.add(em.div(wn0, 8), 2 * nj), a_hi), b_swz), 8) for nj in range(WN // 16)]
""", """    b_nrow = [em.add(em.add(wn0, 16 * nj), em.add(em.band(lane, 7), em.mul(em.shr(lane, 4), 8)))
              for nj in range(WN // 16)]
    b_kc = em.band(em.shr(lane, 3), 1)
    b_col = {(nj, kk): em.mul(em.xor(em.add(b_kc, 2 * kk), swz_a(b_nrow[nj])), 8)
             for nj in range(WN // 16) for kk in range(BK // 16)}
"""),
    ("    b_krows = [em.add(b_krow, 16 * kk) for kk in range(BK // 16)]\n", ""),
    ("""{numTiles = 4 : i32, transpose = true} : %s -> vector<4x2x%s>" % (
                    sB[j], st, b_krows[kk], em.v(b_col[nj]), sm_ty_b, dt), "fb")""",
     """{numTiles = 4 : i32, transpose = false} : %s -> vector<4x2x%s>" % (
                    sB[j], st, b_nrow[nj], em.v(b_col[(nj, kk)]), sm_ty_b, dt), "fb")"""),
]
_MMA_NK = []


def mma_nk_generator():
    """gen_gemm.gen_bf16_mma with B read [N, K] (None, and a warning, where
    an edit does not apply)"""
    if _MMA_NK:
        return _MMA_NK[0]
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(gen_gemm.gen_bf16_mma))
    for old, new in _NK_EDITS:
        if src.count(old) != 1:
            print("bmm_any.py: gen_gemm.gen_bf16_mma changed (%r does not apply once); no 16-bit B [N, K] "
                  "mma entries" % old.strip()[:60], file=sys.stderr)
            _MMA_NK.append(None)
            return None
        src = src.replace(old, new)
    src = src.replace("def gen_bf16_mma(", "def gen_bf16_mma_nk(", 1)
    ns = dict(vars(gen_gemm))
    exec(compile(src, "<bmm_any: gen_bf16_mma with B [N, K]>", "exec"), ns)
    _MMA_NK.append(ns["gen_bf16_mma_nk"])
    return _MMA_NK[0]


class _NkGenerate:
    """While active, gen_gemm.generate sends a bf16_mma config with b_nk to
    the variant above (generate_alternatives calls gen_gemm.generate)."""

    def __enter__(self):
        self.saved = gen_gemm.generate
        saved, nkgen = self.saved, mma_nk_generator()

        def generate(cfg):
            if cfg.get("b_nk") and cfg["kind"] == "bf16_mma":
                cfg.setdefault("assumptions", ["B stored [N, K], read by ldmatrix without .trans",
                                               "buffers 16-byte aligned (contract guarantee)"])
                return nkgen(cfg)
            return saved(cfg)
        gen_gemm.generate = generate
        return self

    def __exit__(self, *exc):
        gen_gemm.generate = self.saved


def _ep_copy(em, ty, accs, bias, res):
    return accs[0]


def _ep_scale(scale):
    def ep(em, ty, accs, bias, res):
        c = em.const("dense<%s>" % scale, ty, "scale")
        return em.op("arith.mulf %s, %s : %s" % (accs[0], c, ty), "y")
    return ep


def _round16(text, dt):
    """the f32 text of a constant rounded to dt (the IR's 16-bit scale)"""
    import struct
    x = struct.unpack("<f", struct.pack("<f", float(text)))[0]
    if dt == "f16":
        x = struct.unpack("<e", struct.pack("<e", x))[0]
    elif dt == "bf16":
        u = struct.unpack("<I", struct.pack("<f", x))[0]
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        x = struct.unpack("<f", struct.pack("<I", u))[0]
    return "%.9e" % x


def _register_epilogues():
    gen_gemm.EPILOGUES.setdefault("bmm_copy", (_ep_copy, "y = acc"))
    for d, s in SCALES.items():
        for dt in DTYPES:
            v = s if dt == "f32" else _round16(s, dt)
            gen_gemm.EPILOGUES.setdefault("bmm_scale_%d_%s" % (d, dt), (_ep_scale(v), "y = acc * %s (the IR's %s "
                                                                        "constant)" % (v, dt)))


FAST_FORMS = {"f32": ["nn", "nt", "ntm", "nts", "tmpv"], "bf16": ["nn", "nt", "ntm", "nts", "tmpv"],
              "f16": ["nn", "nt", "ntm", "nts", "tmpv"]}


def fast_forms(dt):
    """the forms with a gen_gemm.py kernel in dt (16-bit B [N, K]: the mma
    variant, when it can be made)"""
    if dt != "f32" and mma_nk_generator() is None:
        return ["nn", "tmpv"]
    return FAST_FORMS[dt]
# gen_gemm.py's tilings: f32 the MiniGPT QKV GEMM's 64 x 128 x 8 (masked
# M, N, K), with its small-M 32 x 64 split-4 alternative; 16-bit the MLP
# down-projection's mma.sync 128 x 64 x 64.
F32_CFG = dict(kind="f32_simt", BM=64, BN=128, BK=8, group_m=8, mask_nk=4)
F32_SMALL = (dict(BM=32, BN=64, BK=8, KS=4, group_m=8), ("WX", "minctasm"), 1024)
MMA_CFG = dict(kind="bf16_mma", BM=128, BN=64, BK=64, WM=32, WN=32, stages=3, group_m=8, mask_nk=8)
MMA_SMALL = (dict(BM=32, BN=64, BK=64, WM=16, WN=16, stages=4, group_m=8), ("minctasm",), 256)


def fast_kernel(form, dt, sym, d=None):
    """gen_gemm.py's kernel for the form (FAST_FORMS) with the batch on
    grid.z and M, N, K masked: the gpu.module text."""
    _register_epilogues()
    args = form_args(form)
    ep, _ = form_epilogue(form, d)
    names = ["%%arg%d" % i for i in range(len(args))]
    shapes = {}
    layouts = {}
    role_ix = {}
    for (role, shape, ix), nm in zip(args, names):
        shapes[role] = "tensor<%sx%s>" % ("x".join("{{%s}}" % sym[s] if isinstance(s, str) else str(s)
                                                   for s in shape), dt)
        role_ix[role] = (nm, ix)
    # gen_gemm's 2-D views: A (r = m, c = k), B (r = k, c = n; b_nk: r = n, c = k), C (r = m, c = n)
    bnk = [x for x in role_ix["b"][1] if x in "kn"] == ["n", "k"]
    assert [x for x in role_ix["a"][1] if x in "mk"] == ["m", "k"]
    for role, (nm, ix) in role_ix.items():
        if role == "a":
            tr = {"m": "r", "k": "c"}
        elif role == "b":
            tr = {"n": "r", "k": "c"} if bnk else {"k": "r", "n": "c"}
        else:
            tr = {"m": "r", "n": "c"}
        view = {"a": ["{{%s}}" % sym["M"], "{{%s}}" % sym["K"]],
                "b": (["{{%s}}" % sym["N"], "{{%s}}" % sym["K"]] if bnk else
                      ["{{%s}}" % sym["K"], "{{%s}}" % sym["N"]]),
                "c": ["{{%s}}" % sym["M"], "{{%s}}" % sym["N"]]}[role]
        layouts[nm] = ([tr.get(x, x) for x in ix], view)
    order = [r for r, _, _ in args]
    ins = [shapes[r] for r in order if r != "c"]
    sig = "(%s) -> %s" % (", ".join(ins), shapes["c"])
    base = dict(F32_CFG if dt == "f32" else MMA_CFG)
    small = F32_SMALL if dt == "f32" else MMA_SMALL
    base.update(sg="bmm_%s_%s" % (form, dt), example="kernels/table/bmm_any.py", signature=sig,
                M=sym["M"], N=sym["N"], K=sym["K"], a=order.index("a"), b=[order.index("b")], bias=None, res=None,
                epilogue="bmm_copy" if ep == "none" else "bmm_scale_%d_%s" % (d, dt),
                product="A[b] @ B[b] (batch on grid.z; %s)" % ("f32 FMA" if dt == "f32" else "%s in, f32 accumulate" % dt),
                chips=["sm_90", "sm_80"])
    if bnk:
        base["b_nk"] = True
    alt = {k: v for k, v in base.items() if k not in small[1]}
    alt.update(small[0])
    with _Batched(layouts), _NkGenerate():
        _, text, _ = gen_gemm.generate_alternatives([(base, None), (alt, "%s <= %d" % (sym["M"], small[2]))])
    body = text[text.index("gpu.module"):]
    # the batch on grid.z (gen_gemm launches grid (tiles, 1, 1))
    body, n = re.subn(r"(known_grid_size = array<i32: [^,]+), 1, 1>", r"\1, 1, {{%s}}>" % sym["B"], body)
    assert n == 1, "grid line"
    lines = body.split("\n")
    free = sorted(set(sym.values()), key=lambda s: int(s[1:]))
    head = [lines[0],
            "  // Pattern-table template: kernels/table/bmm_any.py %s %s (gen_gemm.py %s, M, N and K masked, the"
            % (form, dt, base["kind"]),
            "  // batch index gpu.block_id z: B = %s, M = %s, N = %s, K = %s)." % (sym["B"], sym["M"], sym["N"], sym["K"])] + \
        ["  // llm-fuse.template-size %s" % s for s in free] + \
        ["  // llm-fuse.tune-require %s <= 65535" % sym["B"]]
    return "\n".join(head + lines[1:])


# ---- The entries -------------------------------------------------------------

def _roles(form, key):
    """role -> example size for (form, size pattern key)"""
    B, M, N, K = SHAPES[key]
    return {"B": B, "M": M, "N": N, "K": K}


def _pick(sizes):
    want = sorted(set(sizes.values()))

    def pick(groups):
        hit = [g for g in groups if g.get("class") == "contraction" and
               sorted(g["pattern_sizes"].values()) == want]
        return hit[0] if len(hit) == 1 else None
    return pick


def _render(form, dt, sizes, kernel, d=None):
    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in sizes.items()}
        # the kernel's argument order must be the subgraph's
        want = [[sizes[x] if isinstance(x, str) else x for x in shape] for _, shape, _ in form_args(form)]
        have = [x["shape"] for x in g["inputs"] + g["outputs"]]
        assert want == have, (form, want, have)
        text = gen_kernel(form, dt, sym, d) if kernel == "gen" else fast_kernel(form, dt, sym, d)
        return text, [None] * len(ps)
    return render


def entries_spec():
    """(name, form, dtype, size pattern, kernel, d, example sizes B M N K)"""
    out = []
    for dt in DTYPES:
        for form in ("nn", "nt", "ntm", "tn"):
            for key in FORM_SHAPES[form]:
                kernels = ["gen"] + (["fast"] if form in fast_forms(dt) else [])
                for k in kernels:
                    out.append((form, dt, key, k, None, SHAPES[key]))
        for d in SCALES:
            # scores: B = heads (x batch), M = N = T, K = d
            for form in ("nts", "tms"):
                for k in ["gen"] + (["fast"] if form in fast_forms(dt) else []):
                    out.append((form, dt, "mn", k, d, (12, 200, 200, d)))
        # att @ v: B = heads, M = K = T, N = d
        for k in ["gen"] + (["fast"] if "tmpv" in FAST_FORMS[dt] else []):
            out.append(("tmpv", dt, "mk", k, None, (12, 200, 72, 200)))
        # Fewer than 8 heads (the MiniGPT's 4): a head count under 8 stays a
        # literal in the reshapes' output_shape (docs/pattern-key.md, item
        # 2), so each such count is its own key; the MiniGPT's is made.
        for k in ["gen"] + (["fast"] if "tms" in FAST_FORMS[dt] else []):
            out.append(("tms", dt, "mn-h4", k, 64, (4, 200, 200, 64)))
        for k in ["gen"] + (["fast"] if "tmpv" in FAST_FORMS[dt] else []):
            out.append(("tmpv", dt, "mk-h4", k, None, (4, 200, 72, 200)))
    return out


def templates():
    out = []
    for form, dt, key, kernel, d, (B, M, N, K) in entries_spec():
        sizes = {"B": B, "M": M, "N": N, "K": K}
        tag = "%s%s-%s-%s-%s" % (form, "" if d is None else "-d%d" % d, key, dt,
                                 "9gen" if kernel == "gen" else ("1simt" if dt == "f32" else "1mma"))
        out.append(dict(
            name="bmm-any-" + tag,
            example=model_text(form, dt, B, M, N, K, d),
            pick=_pick(sizes),
            render=_render(form, dt, sizes, kernel, d),
            archs=ARCHS,
            source="kernels/table/bmm_any.py %s %s %s (%s kernel; from bmm_any.model_text at B %d, M %d, N %d, K %d)"
                   % (form, dt, key, "general SIMT" if kernel == "gen" else
                      "gen_gemm.py f32_simt" if dt == "f32" else "gen_gemm.py bf16_mma", B, M, N, K)))
    return out
