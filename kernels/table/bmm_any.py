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
the size patterns it is used with (SHAPES). So are unit dimensions (a 1
stays in the key: M = 1, M = K = 1, M = N = 1) and T equal to the head size
d (the scores and att @ v at T = d: M = N = K), and B equal to the rows
(session 27: B = M, B = M = N, B = M = K). A key not listed (e.g. B equal
to K alone, or torch-mlir's forms with T equal to the head count) has no
template.

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
    nn and tmpv. A size they refuse falls to the `gen` entry. (16-bit nt,
    ntm, nts: B [N, K] by _NK_EDITS; session 29, 16-bit tn: A [K, M] staged
    [k][m] and read by ldmatrix .trans, _AT_EDITS, M a multiple of 8.)

  * `vec` (unit-dimension keys, entries *-5vec; session 26): M = 1 (a
    decode step), M = K = 1 and M = N = 1 (the held-out T = 1 models) keep
    their 1 in the pattern key; a GEMV-like kernel (vec_kernel) answers
    them in every form and type.
  * More tilings inside the fast entries (session 26, TILINGS and
    ship_tilings; measured in bench/NOTES.md): 16-bit Q K^T ("mn" keys of
    nt, ntm, nts) also time the mma.sync kernel with its C tile staged in
    shared memory and stored in 16-byte rows ("sep", _SEP_EDITS); f32 nn
    and tmpv the 64 x 64 split-2 SIMT tiling where N <= 128; the general
    entries of f32 P V (nn-mk, tmpv-mk) time the general kernel with two
    k-slices beside the plain one (gen_tilings). EXPLORE holds what
    bench/table/bmm_stage.py can time besides (128 x 128 mma.sync, staged
    C at 128 x 128, and wgmma with B [K, N] or, via _WG_NK_EDITS, [N, K]:
    sm_90a only, so no all-arch entry offers it).

  * `gen2` and `dot` (session 27, issue 15 point 7: the held-out sizes
    where the batched GEMMs lost to torch.compile; bench/NOTES.md): every
    general entry but the unit-dimension and T = d keys' offers, after the
    general kernel (TILE 0, what a build without a GPU uses; and its
    two-slice form where gen_tilings says so), gen2_kernel's 128 x 128
    tiling with 8 x 8 outputs per thread and a double-buffered k loop
    (large products at odd N or K, A^T B, the f32 scores), in f32 and A^T B
    its 64 x 64 two-slice tiling and, where
    M <= 32 and K >= 128 in keys whose M is not K, its split-K tiling (16 x
    16 tiles, 32 k-slices added in shared memory in slice order: A^T B at
    M = 16, K = 1024); Q K^T's general entries (nt, ntm, nts) also
    dot_kernel (a warp per output, lanes along k) where M * N <= 16384 and
    K >= 256 (gen2_tilings). The f32 SIMT entries offer the split-K tiling
    (nn "any": "g2s16") or dot_kernel (nt, ntm, nts: "g2dot") too
    (ship_tilings). New keys: the batch equal to the rows (B = M for A^T B,
    B = M = N for Q K^T, B = M = K for P V; BATCH_KEYS), general entries.

  * `x3wg` (session 28, issue 15 point 7: the held-out f32 products at odd
    N or K that stayed 1.2-1.5x slower than torch.compile's exact-f32
    cuBLAS; bench/NOTES.md): exact f32 by the 3xTF32 split of
    docs/verification.md "Exact f32 on sm_90a (3xTF32)" on wgmma
    m64nBNk8 .tf32 (x3wg_kernel), fed without TMA (rows not 16-byte
    aligned) by masked loads that split each element into big + small and
    store them into 128B-swizzled K-major tiles, B [K, N] transposed on the
    way. sm_90a only: entries *-0x3wg (X3WG_KEYS: nn-mk where the SIMT
    entry refuses N or K, tn-any, tms-d64-mn), tried before the general
    entry of their key, offering its alternatives and three x3wg tilings
    (X3WG_TILINGS; nn-mk: the general kernel and its two slices, no gen2
    tilings, and two more x3wg tilings with k-tile kt + 2's loads in flight,
    X3WG_GEN2 / X3WG_EXTRA). Session 29: two more keys (nt-mn where N or K
    is odd and M * N > 16384, tmpv-mk where N or K is odd) and options of
    x3wg_kernel (no loads past the last k-tile, the prologue's loads first,
    the k-tiles split over two warpgroups, C stored in rows through shared
    memory; X3WG_SET). x3_kernel, the same split on mma.sync m16n8k8 (any
    arch), was measured and is not shipped (GEN2_TILINGS "x3*": no faster
    than the SIMT tilings but at the T = 1019 scores; mma.sync's TF32 rate
    on Hopper is the limit).

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
    # unit dimensions (a 1 stays in the key): the `vec` kernel
    "m1": (12, 1, 136, 72),        # M = 1 (a decode step's Q K^T or P V; A^T B at T = 1)
    "mk1": (12, 1, 136, 1),        # M = K = 1 (P V at T = 1: the held-out bmm_nn / torch att @ v)
    "mn1": (12, 1, 1, 72),         # M = N = 1 (Q K^T at T = 1: one dot product per batch)
    # the batch equal to the rows (session 27: the held-out A^T B at B = M =
    # 8; Q K^T and P V with as many heads as positions)
    "bm": (12, 12, 136, 72),       # B = M (A^T B)
    "bmn": (12, 12, 12, 72),       # B = M = N (Q K^T at T = B)
    "bmk": (12, 12, 136, 12),      # B = M = K (P V at T = B)
}
UNIT_KEYS = ("m1", "mk1", "mn1")
BATCH_KEYS = ("bm", "bmn", "bmk")
FORM_SHAPES = {
    "nn": ["any", "mk", "mnk", "m1", "mk1", "bmk"],
    "nt": ["any", "mn", "mnk", "m1", "mn1", "bmn"],
    "ntm": ["any", "mn", "mnk", "m1", "mn1", "bmn"],
    "tn": ["any", "mn", "mnk", "m1", "bm"],
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


def _operand_loads(em, idx_of, T, BK, tid, bz, arg, ty, dt, zero, K_v, K1):
    """The operand loads of the SIMT kernels (gen_kernel, gen2_kernel):
    index(role, b, m, n, k), the operand's index list in its own order;
    plan(role, outer, outer_tile, (bound, bound - 1)), each thread's
    (kk, oo, clamped outer index, in-bounds) per load of a BK x outer_tile
    tile, each operand read along its contiguous index (the last of its
    indices) so consecutive threads read consecutive addresses; load(role,
    plan, k0), those loads as f32, zero past M, N or K."""
    def index(role, b, m, n, k):
        env = {"b": b, "m": m, "n": n, "k": k, "0": 0}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

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

    def load(role, plan_, k0):
        vals = []
        for kk, oo, goc, ok_o in plan_:
            gk = em.add(k0, kk)
            ok_k = em.op("arith.cmpi ult, %s, %s : index" % (em.v(gk), K_v), "okk")
            gkc = em.minu(gk, K1)
            ok = em.op("arith.andi %s, %s : i1" % (ok_o, ok_k), "ok")
            ix = index("a", bz, goc, None, gkc) if role == "a" else index("b", bz, None, goc, gkc)
            x = em.op("memref.load %s[%s] : %s" % (arg[role], ix, ty[role]), "g")
            if dt != "f32":
                x = em.op("arith.extf %s : %s to f32" % (x, dt), "g")
            vals.append(em.op("arith.select %s, %s, %s : f32" % (ok, x, zero), "g"))
        return vals

    return index, plan, load


def gen_kernel(form, dt, sym, d=None, name="bmm", parts=None, pf=False, ks=1):
    """The gpu.module text of the general kernel: sym maps the roles B, M,
    N, K to their size symbols ("S0", ...). With parts (a dict), the
    pieces gen_gemm.generate_alternatives() combines instead (the kernel as
    one tiling alternative of a fast entry, _GenAlternative). pf: the
    next k-tile's global loads are issued before this one's products (held
    in registers, stored to shared memory at the top of the next
    iteration), so that their latency hides behind the arithmetic. ks = 2:
    two thread groups of 256 split the k-tiles (even, odd) and their 4 x 4
    blocks are added in shared memory (group 0 + group 1) before the
    epilogue (twice the warps per SM where the grid is small: P V)."""
    em = gen_gemm.Emitter()
    BM, BN, BK, T = GEN_BM, GEN_BN, GEN_BK, GEN_T
    TX = BN // 4
    args = form_args(form)
    ep, scale = form_epilogue(form, d)
    Bs, Ms, Ns, Ks = sym["B"], sym["M"], sym["N"], sym["K"]
    gm, gn, kt = "(%s + %d) / %d" % (Ms, BM - 1, BM), "(%s + %d) / %d" % (Ns, BN - 1, BN), \
        "(%s + %d) / %d" % (Ks, BK - 1, BK)
    em.require("%s <= 65535" % Bs)
    names, ty, arg, idx_of = _kernel_args(form, dt, sym)
    f32 = "f32"
    LDA, LDB = BM + PAD, BN + PAD
    sa_ty = "memref<%dx%dxf32, %s>" % (BK, LDA, WG)
    sb_ty = "memref<%dx%dxf32, %s>" % (BK, LDB, WG)
    smem = BK * (LDA + LDB) * 4
    slice_bytes = smem
    if ks > 1:
        assert ks == 2
        smem = max(2 * slice_bytes, T * 16 * 4)

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    if ks > 1:
        ksl = em.div(tid, T)        # the k-slice: k-tiles ksl, ksl + 2, ...
        tid = em.rem(tid, T)
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
    if ks > 1:
        so = em.mul(ksl, slice_bytes)
        sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, so, WG, sa_ty), "sA")
        sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.add(so, BK * LDA * 4), WG, sb_ty),
                   "sB")
    else:
        sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sa_ty), "sA")
        sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(BK * LDA * 4), WG, sb_ty), "sB")

    index, plan, load = _operand_loads(em, idx_of, T, BK, tid, bz, arg, ty, dt, zero, K_v, K1)
    a_plan = plan("a", m0, BM, (M_v, M1))
    b_plan = plan("b", n0, BN, (N_v, N1))

    def store(sm, sm_ty, plan_, vals):
        for (kk, oo, _, _), x in zip(plan_, vals):
            em.emit("memref.store %s, %s[%s, %s] : %s" % (x, sm, em.v(kk), em.v(oo), sm_ty))

    q_ty = "vector<4x4xf32>"
    v4 = "vector<4xf32>"
    zacc = em.const("dense<0.000000e+00>", q_ty, "zero44")
    ra = em.mul(ty_, 4)
    cb = em.mul(tx, 4)
    kt_v = em.symc(kt if ks == 1 else "(%s + 1) / 2" % kt)
    res = em.fresh("acc")
    if pf:
        pv = load("a", a_plan, 0) + load("b", b_plan, 0)
        names_pf = ["%%pf%d" % i for i in range(len(pv))]
        em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s, %s) -> (%s) {" % (
            res, 1 + len(pv), em.idx(0), kt_v, em.idx(1), zacc,
            ", ".join("%s = %s" % (n_, v_) for n_, v_ in zip(names_pf, pv)), ", ".join([q_ty] + ["f32"] * len(pv))))
        em.indent += 2
        av, bv = names_pf[:len(a_plan)], names_pf[len(a_plan):]
        em.emit("gpu.barrier")
        store(sA, sa_ty, a_plan, av)
        store(sB, sb_ty, b_plan, bv)
        em.emit("gpu.barrier")
        k1 = em.mul(em.add("%kt", 1), BK)   # past K on the last k-tile: clamped, zero
        nxt = load("a", a_plan, k1) + load("b", b_plan, k1)
    else:
        em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (%s) {" % (
            res, em.idx(0), kt_v, em.idx(1), zacc, q_ty))
        em.indent += 2
        k0 = em.mul("%kt", BK) if ks == 1 else em.mul(em.add(em.mul("%kt", 2), ksl), BK)
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
    if pf:
        em.emit("scf.yield %s, %s : %s" % (acc, ", ".join(nxt), ", ".join([q_ty] + ["f32"] * len(nxt))))
        res = res + "#0"
    else:
        em.emit("scf.yield %s : %s" % (acc, q_ty))
    em.indent -= 2
    em.emit("}")
    if ks > 1:
        em.comment("k-slice 1's 4 x 4 blocks to shared memory, added to slice 0's (in that order)")
        red_ty = "memref<%dx16xf32, %s>" % (T, WG)
        em.emit("gpu.barrier")
        red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, red_ty), "red")
        s1 = em.op("arith.cmpi eq, %s, %s : index" % (ksl, em.idx(1)), "s1")
        em.emit("scf.if %s {" % s1)
        em.indent += 2
        for i in range(4):
            r_ = em.op("vector.extract %s[%d] : %s from %s" % (res, i, v4, q_ty), "r")
            em.emit("vector.store %s, %s[%s, %s] : %s, %s" % (r_, red, tid, em.idx(4 * i), red_ty, v4))
        em.indent -= 2
        em.emit("}")
        em.emit("gpu.barrier")
        s0 = em.op("arith.cmpi eq, %s, %s : index" % (ksl, em.idx(0)), "s0")
        em.emit("scf.if %s {" % s0)
        em.indent += 2
        tot = zacc
        for i in range(4):
            r_ = em.op("vector.extract %s[%d] : %s from %s" % (res, i, v4, q_ty), "r")
            o_ = em.op("vector.load %s[%s, %s] : %s, %s" % (red, tid, em.idx(4 * i), red_ty, v4), "o")
            tot = em.op("vector.insert %s, %s [%d] : %s into %s" % (
                em.op("arith.addf %s, %s : %s" % (r_, o_, v4), "r"), tot, i, v4, q_ty), "r")
        res = tot

    sc, ninf = _epilogue_consts(em, ep, scale, dt)
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
    if ks > 1:
        em.indent -= 2
        em.emit("}")
    em.emit("gpu.return")

    if parts is not None:
        parts.update(em=em, launch=dict(block=[T * ks, 1, 1], grid=["{{%s * %s}}" % (gen_gemm.par(gm), gen_gemm.par(gn)),
                                                                1, 1], smem=smem),
                     header=["bmm_any.py general SIMT kernel: CTA %d x %d x %d, %d threads of 4 x 4 f32 outputs%s, "
                             "A^T and B staged f32 in shared memory, every size masked" % (
                                 BM, BN, BK, T, " x %d k-slices" % ks if ks > 1 else "")],
                     helpers=[])
        return None
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


# ---- The unit-dimension kernel (`vec`) ---------------------------------------
#
# A size pattern with a unit dimension (M = 1: a decode step's Q K^T or P V;
# the held-out T = 1 models: M = K = 1, M = N = 1) is its own key: the 1
# stays in the key (docs/pattern-key.md, item 1). A 64 x 64 tile would leave
# 63 of 64 rows idle there, so these keys get a GEMV-like kernel: a CTA of
# VEC_W warps x 32 lanes owns 32 consecutive outputs (m, n) of one batch
# (row-major over M x N, so lanes run along n: B [K, N] and C are read and
# written coalesced); warp w sums k = w, w + VEC_W, ... (VEC_U loads in
# flight per thread), and the VEC_W partial sums meet in shared memory and
# are added in warp order (deterministic). Every size is masked, any size is
# admitted (B <= 65535).

VEC_W, VEC_U = 16, 8


def _dim(sym, r):
    """a role's size: the int 1 (a unit dimension, literal in the key) or
    its symbol"""
    return 1 if sym[r] == 1 else sym[r]


def vec_kernel(form, dt, sym, d=None, name="bmm"):
    """The gpu.module text of the unit-dimension kernel: sym maps B, M, N,
    K to their symbols ("S0", ...) or to 1."""
    em = gen_gemm.Emitter()
    W, U = VEC_W, VEC_U
    T = 32 * W
    args = form_args(form)
    ep, scale = form_epilogue(form, d)
    Bs = sym["B"]
    Ms, Ns, Ks = _dim(sym, "M"), _dim(sym, "N"), _dim(sym, "K")
    em.require("%s <= 65535" % Bs)

    def txt(s):
        return "{{%s}}" % s if isinstance(s, str) else str(s)

    def size_v(s):
        return em.symc(s) if isinstance(s, str) else s

    names = ["%%arg%d" % i for i in range(len(args))]
    ty = {}
    for (role, shape, _), nm in zip(args, names):
        et = "i1" if role == "mask" else dt
        ty[role] = "memref<%sx%s>" % ("x".join(txt(sym[s]) if isinstance(s, str) else str(s) for s in shape), et)
    arg = {role: nm for (role, _, _), nm in zip(args, names)}
    idx_of = {role: ix for role, _, ix in args}
    mn = [s for s in (Ms, Ns) if isinstance(s, str)]
    mn_e = " * ".join(mn) if mn else "1"          # M * N (the outputs per batch)
    gx = "(%s + 31) / 32" % mn_e if mn else "1"

    def index(role, b, m, n, k):
        env = {"b": b, "m": m, "n": n, "k": k, "0": 0}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    lane = em.rem(tid, 32)
    w = em.div(tid, 32)
    o = em.add(em.mul(pid, 32), lane)
    zero = em.f32("0.000000e+00", "zero")
    if mn:
        MN = em.symc(mn_e)
        MN1 = em.symc("%s - 1" % mn_e)
        ok_o = em.op("arith.cmpi ult, %s, %s : index" % (o, MN), "oko")
        oc = em.minu(o, MN1)
    else:
        ok_o = em.op("arith.cmpi ult, %s, %s : index" % (o, em.idx(1)), "oko")
        oc = 0
    em.comment("output (m, n) = (o / N, o %% N) of o = 32 * pid + lane (clamped; stored where o < M * N)")
    if Ms == 1:
        m, n = 0, oc
    elif Ns == 1:
        m, n = oc, 0
    else:
        Nv = em.symc(Ns)
        m, n = em.div(oc, Nv), em.rem(oc, Nv)

    def load(role, k):
        ix = index(role, bz, m, n, k)
        x = em.op("memref.load %s[%s] : %s" % (arg[role], ix, ty[role]), "g")
        if dt != "f32":
            x = em.op("arith.extf %s : %s to f32" % (x, dt), "g")
        return x

    if Ks == 1:
        em.comment("K = 1: warp 0 multiplies, the other warps add zero")
        p = em.op("arith.mulf %s, %s : f32" % (load("a", 0), load("b", 0)), "p")
        w0 = em.op("arith.cmpi eq, %s, %s : index" % (w, em.idx(0)), "w0")
        res = em.op("arith.select %s, %s, %s : f32" % (w0, p, zero), "acc")
    else:
        Kv, K1 = em.symc(Ks), em.symc("%s - 1" % Ks)
        kt_v = em.symc("(%s + %d) / %d" % (Ks, W * U - 1, W * U))
        em.comment("warp w: k = %d * kt + %d * u + w (u < %d), clamped; zero past K" % (W * U, W, U))
        res = em.fresh("acc")
        em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (f32) {" % (
            res, em.idx(0), kt_v, em.idx(1), zero))
        em.indent += 2
        k0 = em.add(em.mul("%kt", W * U), w)
        prods = []
        for u in range(U):
            k = em.add(k0, W * u)
            okk = em.op("arith.cmpi ult, %s, %s : index" % (k, Kv), "okk")
            kc = em.minu(k, K1)
            p = em.op("arith.mulf %s, %s : f32" % (load("a", kc), load("b", kc)), "p")
            prods.append(em.op("arith.select %s, %s, %s : f32" % (okk, p, zero), "p"))
        acc = "%acc"
        for p in prods:
            acc = em.op("arith.addf %s, %s : f32" % (acc, p), "acc")
        em.emit("scf.yield %s : f32" % acc)
        em.indent -= 2
        em.emit("}")

    red_ty = "memref<%dx32xf32, %s>" % (W, WG)
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, red_ty), "red")
    em.emit("memref.store %s, %s[%s, %s] : %s" % (res, red, w, lane, red_ty))
    em.emit("gpu.barrier")
    is0 = em.op("arith.cmpi eq, %s, %s : index" % (w, em.idx(0)), "w0")
    ok = em.op("arith.andi %s, %s : i1" % (is0, ok_o), "ok")
    em.emit("scf.if %s {" % ok)
    em.indent += 2
    x = em.op("memref.load %s[%s, %s] : %s" % (red, em.idx(0), lane, red_ty), "s")
    for s in range(1, W):
        y = em.op("memref.load %s[%s, %s] : %s" % (red, em.idx(s), lane, red_ty), "s")
        x = em.op("arith.addf %s, %s : f32" % (x, y), "s")
    _store_scalar(em, x, ep, scale, dt, arg, ty, index("mask", bz, m, n, None) if ep == "scale_mask" else None,
                  index("c", bz, m, n, None))
    em.indent -= 2
    em.emit("}")
    em.emit("gpu.return")

    free = sorted(set(s for s in sym.values() if isinstance(s, str)), key=lambda s: int(s[1:]))
    lines = ["gpu.module @kernels {"]
    lines.append("  // Pattern-table template: kernels/table/bmm_any.py %s %s (unit-dimension kernel): C[b] = A[b] @ B[b]"
                 % (form, dt))
    lines.append("  // with B = %s, M = %s, N = %s, K = %s (a 1 is a unit dimension of the key), every size masked." % (
        Bs, Ms, Ns, Ks))
    lines.append("  // CTA %d warps x 32 lanes: lane = one of 32 consecutive outputs (m, n), warp w sums k = w mod %d"
                 % (W, W))
    lines.append("  // (%d loads in flight), partials added in warp order through shared memory; grid (ceil(M*N/32), 1, B),"
                 % U)
    lines.append("  // f32 accumulation, one rounding at the store.")
    lines += ["  // llm-fuse.template-size %s" % s for s in free]
    for r in em.reqs:
        lines.append("  // llm-fuse.tune-require %s" % r)
    sig = ", ".join("%s: %s" % (nm, ty[role]) for (role, _, _), nm in zip(args, names))
    lines.append("  gpu.func @%s(%s) kernel" % (name, sig))
    lines.append("      attributes {known_block_size = array<i32: %d, 1, 1>," % T)
    lines.append("                  known_grid_size = array<i32: %s, 1, {{%s}}>," % (
        "{{%s}}" % gx if mn else "1", Bs))
    lines.append("                  llm_fuse.dynamic_shared_memory = %d : i32} {" % (W * 32 * 4))
    lines += em.body(4)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- The general kernel, larger register tiles and k-slices (`gen2`) ---------
#
# Session 27 (issue 15 point 7: the held-out sizes where the batched GEMMs
# lost to torch.compile). The general kernel (gen_kernel) holds 4 x 4 f32
# outputs per thread and reads each k-tile once per barrier pair: two 16-byte
# shared loads per 16 FMA, and the global latency of every k-tile exposed.
# gen2_kernel is the same masked, layout-agnostic kernel (every size, every
# transposition: each operand read element by element along its contiguous
# dimension) with a choice of
#   TM = 8: 8 x 8 outputs per thread in four 4 x 4 quadrants (rows 4 ty +
#           {0..3} and BM/2 + 4 ty + {0..3}, columns alike): four 16-byte
#           shared loads per 64 FMA (gen_gemm.py f32_simt's register tile);
#   db:     two shared buffers and the next k-tile's global loads issued
#           before this one's products (held in registers, stored into the
#           other buffer after them): one barrier per k-tile;
#   KS > 1: KS thread groups split the k-tiles (slice s takes k-tiles
#           s, s + KS, ...); slices 1..KS-1 leave their blocks in shared
#           memory and slice 0 adds them in slice order (deterministic).
#           With a small tile (BM = 16) this is split-K inside the CTA for
#           a small M x N and a long K (A^T B at M = 16, K = 1024).
# Only as a tiling alternative (the TILE knob) of an entry (gen2_tilings).

def gen2_kernel(form, dt, sym, d, parts, BM=128, BN=128, BK=8, TM=8, KS=1, db=True, WX=None):
    em = gen_gemm.Emitter()
    assert TM in (4, 8) and BM % TM == 0 and BN % TM == 0
    TX, TY = BN // TM, BM // TM
    T = TX * TY
    TT = T * KS
    NQ = TM // 4                     # quadrants per dimension
    args = form_args(form)
    ep, scale = form_epilogue(form, d)
    Bs, Ms, Ns, Ks = sym["B"], sym["M"], sym["N"], sym["K"]
    gm, gn = "(%s + %d) / %d" % (Ms, BM - 1, BM), "(%s + %d) / %d" % (Ns, BN - 1, BN)
    kt = "(%s + %d) / %d" % (Ks, BK - 1, BK)
    em.require("%s <= 65535" % Bs)
    names, ty, arg, idx_of = _kernel_args(form, dt, sym)
    f32 = "f32"
    LDA, LDB = BM + PAD, BN + PAD
    NB = 2 if db else 1
    sa_ty = "memref<%dx%dx%dxf32, %s>" % (NB, BK, LDA, WG)
    sb_ty = "memref<%dx%dx%dxf32, %s>" % (NB, BK, LDB, WG)
    slice_bytes = NB * BK * (LDA + LDB) * 4
    red_bytes = KS * T * TM * TM * 4 if KS > 1 else 0
    smem = max(KS * slice_bytes, red_bytes)
    assert smem <= 48 * 1024, smem
    assert (BK * BM) % T == 0 and (BK * BN) % T == 0

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    tid_all = tid
    if KS > 1:
        ksl = em.div(tid, T)
        tid = em.rem(tid, T)
    else:
        ksl = 0
    gn_v = em.symc(gn)
    pid_m = em.div(pid, gn_v)
    pid_n = em.rem(pid, gn_v)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    if WX is None or WX == TX:
        tx = em.rem(tid, TX)
        ty_ = em.div(tid, TX)
    else:   # each warp a WX (n) x 32/WX (m) patch of thread positions (fewer shared wavefronts)
        WY = 32 // WX
        assert TX % WX == 0 and TY % WY == 0
        lane_, w_ = em.rem(tid, 32), em.div(tid, 32)
        tx = em.add(em.mul(em.rem(w_, TX // WX), WX), em.rem(lane_, WX))
        ty_ = em.add(em.mul(em.div(w_, TX // WX), WY), em.div(lane_, WX))
    M_v, N_v, K_v = em.symc(Ms), em.symc(Ns), em.symc(Ks)
    M1, N1, K1 = em.symc("%s - 1" % Ms), em.symc("%s - 1" % Ns), em.symc("%s - 1" % Ks)
    zero = em.f32("0.000000e+00", "zero")

    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    so = em.mul(ksl, slice_bytes)
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.v(so), WG, sa_ty), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.v(em.add(so, NB * BK * LDA * 4)), WG,
                                                                     sb_ty), "sB")

    index, plan, load = _operand_loads(em, idx_of, T, BK, tid, bz, arg, ty, dt, zero, K_v, K1)
    a_plan = plan("a", m0, BM, (M_v, M1))
    b_plan = plan("b", n0, BN, (N_v, N1))

    def store(sm, sm_ty, buf, plan_, vals):
        for (kk, oo, _, _), x in zip(plan_, vals):
            em.emit("memref.store %s, %s[%s, %s, %s] : %s" % (x, sm, em.v(buf), em.v(kk), em.v(oo), sm_ty))

    def kbase(t):   # the first k of this slice's t-th k-tile
        return em.mul(em.add(em.mul(t, KS), ksl), BK) if KS > 1 else em.mul(t, BK)

    q_ty = "vector<%dx%dxf32>" % (TM, TM)
    v4 = "vector<4xf32>"
    vT = "vector<%dxf32>" % TM
    zacc = em.const("dense<0.000000e+00>", q_ty, "zero%d" % TM)
    ra = [em.add(em.mul(ty_, 4), q * (BM // NQ)) for q in range(NQ)]
    cb = [em.add(em.mul(tx, 4), q * (BN // NQ)) for q in range(NQ)]
    ktn = em.symc("(%s + %d) / %d" % (kt, KS - 1, KS) if KS > 1 else kt)   # k-tiles per slice
    res = em.fresh("acc")

    def products(buf, acc):
        for k in range(BK):
            a = [em.op("vector.load %s[%s, %s, %s] : %s, %s" % (sA, em.v(buf), em.idx(k), em.v(ra[q]), sa_ty, v4), "a")
                 for q in range(NQ)]
            b = [em.op("vector.load %s[%s, %s, %s] : %s, %s" % (sB, em.v(buf), em.idx(k), em.v(cb[q]), sb_ty, v4), "b")
                 for q in range(NQ)]
            if NQ == 2:
                a = [em.op("vector.shuffle %s, %s [0, 1, 2, 3, 4, 5, 6, 7] : %s, %s" % (a[0], a[1], v4, v4), "a")]
                b = [em.op("vector.shuffle %s, %s [0, 1, 2, 3, 4, 5, 6, 7] : %s, %s" % (b[0], b[1], v4, v4), "b")]
            acc = em.op("vector.outerproduct %s, %s, %s {kind = #vector.kind<add>} : %s, %s" % (
                a[0], b[0], acc, vT, vT), "acc")
        return acc

    if db:
        em.comment("prologue: this slice's k-tile 0 -> shared buffer 0")
        k00 = kbase(0)
        store(sA, sa_ty, 0, a_plan, load("a", a_plan, k00))
        store(sB, sb_ty, 0, b_plan, load("b", b_plan, k00))
        em.emit("gpu.barrier")
        em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (%s) {" % (
            res, em.idx(0), ktn, em.idx(1), zacc, q_ty))
        em.indent += 2
        em.comment("k-tile kt + 1's loads in flight (past K: clamped, zero) while kt is multiplied")
        buf = em.op("arith.andi %%kt, %s : index" % em.idx(1), "buf")
        nbuf = em.op("arith.xori %s, %s : index" % (buf, em.idx(1)), "nbuf")
        k1 = kbase(em.add("%kt", 1))
        av, bv = load("a", a_plan, k1), load("b", b_plan, k1)
        acc = products(buf, "%acc")
        store(sA, sa_ty, nbuf, a_plan, av)
        store(sB, sb_ty, nbuf, b_plan, bv)
        em.emit("gpu.barrier")
    else:
        em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (%s) {" % (
            res, em.idx(0), ktn, em.idx(1), zacc, q_ty))
        em.indent += 2
        k0 = kbase("%kt")
        av, bv = load("a", a_plan, k0), load("b", b_plan, k0)
        em.emit("gpu.barrier")
        store(sA, sa_ty, 0, a_plan, av)
        store(sB, sb_ty, 0, b_plan, bv)
        em.emit("gpu.barrier")
        acc = products(0, "%acc")
    em.emit("scf.yield %s : %s" % (acc, q_ty))
    em.indent -= 2
    em.emit("}")
    rows = [em.op("vector.extract %s[%d] : %s from %s" % (res, i, vT, q_ty), "r") for i in range(TM)]
    sc, ninf = _epilogue_consts(em, ep, scale, dt)

    def finish_store(x, row, col):
        if ep in ("scale", "scale_mask"):
            x = em.op("arith.mulf %s, %s : f32" % (x, sc), "y")
        if ep == "scale_mask":
            mk = em.op("memref.load %s[%s] : %s" % (arg["mask"], index("mask", bz, row, col, None), ty["mask"]), "mk")
            x = em.op("arith.select %s, %s, %s : f32" % (mk, ninf, x), "y")
        if dt != f32:
            x = em.op("arith.truncf %s : f32 to %s" % (x, dt), "y")
        em.emit("memref.store %s, %s[%s] : %s" % (x, arg["c"], index("c", bz, row, col, None), ty["c"]))

    if KS > 1:
        em.comment("every slice's blocks to shared memory [%d][%d][%d]; then thread q sums outputs q, q + %d, ... of"
                   % (KS, T, TM * TM, TT))
        em.comment("the tile over the slices in slice order (deterministic) and stores them (row-major: coalesced)")
        red_ty = "memref<%dx%dx%dxf32, %s>" % (KS, T, TM * TM, WG)
        em.emit("gpu.barrier")
        red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, red_ty), "red")
        for i in range(TM):
            em.emit("vector.store %s, %s[%s, %s, %s] : %s, %s" % (rows[i], red, em.v(ksl), tid, em.idx(TM * i),
                                                                    red_ty, vT))
        em.emit("gpu.barrier")
        HM, HN = BM // NQ, BN // NQ
        for it in range((BM * BN + TT - 1) // TT):
            o = em.add(tid_all, it * TT)
            guard = None
            if (it + 1) * TT > BM * BN:
                guard = em.op("arith.cmpi ult, %s, %s : index" % (o, em.idx(BM * BN)), "oki")
                o = em.minu(o, BM * BN - 1)
            r, c = em.div(o, BN), em.rem(o, BN)
            qi, rr = em.div(r, HM), em.rem(r, HM)
            qj, cc = em.div(c, HN), em.rem(c, HN)
            t_r, i_r = em.div(rr, 4), em.rem(rr, 4)
            t_c, j_c = em.div(cc, 4), em.rem(cc, 4)
            if WX is None or WX == TX:
                t = em.add(em.mul(t_r, TX), t_c)
            else:   # the inverse of the warp layout above
                WY = 32 // WX
                t = em.add(em.mul(em.add(em.mul(em.div(t_r, WY), TX // WX), em.div(t_c, WX)), 32),
                           em.add(em.mul(em.rem(t_r, WY), WX), em.rem(t_c, WX)))
            e = em.add(em.mul(em.add(em.mul(qi, 4), i_r), TM), em.add(em.mul(qj, 4), j_c))
            tot = None
            for sl in range(KS):
                v = em.op("memref.load %s[%s, %s, %s] : %s" % (red, em.idx(sl), em.v(t), em.v(e), red_ty), "p")
                tot = v if tot is None else em.op("arith.addf %s, %s : f32" % (tot, v), "p")
            row, col = em.add(m0, r), em.add(n0, c)
            ok = em.op("arith.cmpi ult, %s, %s : index" % (row, M_v), "okr")
            ok = em.op("arith.andi %s, %s : i1" % (ok, em.op("arith.cmpi ult, %s, %s : index" % (col, N_v), "okc")),
                       "ok")
            if guard:
                ok = em.op("arith.andi %s, %s : i1" % (ok, guard), "ok")
            em.emit("scf.if %s {" % ok)
            em.indent += 2
            finish_store(tot, row, col)
            em.indent -= 2
            em.emit("}")
    else:
        cols = []
        for q in range(NQ):
            for j in range(4):
                col = em.add(em.add(n0, cb[q]), j)
                cols.append((col, em.op("arith.cmpi ult, %s, %s : index" % (col, N_v), "okc")))
        for i in range(TM):
            row = em.add(em.add(m0, ra[i // 4]), i % 4)
            okr = em.op("arith.cmpi ult, %s, %s : index" % (row, M_v), "okr")
            em.emit("scf.if %s {" % okr)
            em.indent += 2
            for j in range(TM):
                col, okc = cols[j]
                x = em.op("vector.extract %s[%d] : f32 from %s" % (rows[i], j, vT), "x")
                em.emit("scf.if %s {" % okc)
                em.indent += 2
                finish_store(x, row, col)
                em.indent -= 2
                em.emit("}")
            em.indent -= 2
            em.emit("}")
    em.emit("gpu.return")
    parts.update(em=em, launch=dict(block=[TT, 1, 1], grid=["{{%s * %s}}" % (gen_gemm.par(gm), gen_gemm.par(gn)),
                                                            1, 1], smem=smem),
                 header=["bmm_any.py general SIMT kernel (gen2): CTA %d x %d x %d, %d threads of %d x %d f32 "
                         "outputs%s%s, A^T and B staged f32 in shared memory, every size masked" % (
                             BM, BN, BK, TT, TM, TM, " x %d k-slices" % KS if KS > 1 else "",
                             ", double-buffered" if db else "")],
                 helpers=[])


def gen_alts_kernel(form, dt, sym, d, tilings, ks=None, admit_all=None):
    """A general entry whose TILE knob picks among the general kernel
    (alternative 0, the old one: what a build without a GPU uses) and the
    gen2 tilings named (GEN2_TILINGS): any form (A or B transposed, the
    torch-mlir forms with their mask), every size masked. admit_all: an
    expression over the roles M, N, K that every alternative needs besides
    its own (the sm_90a entries: where the key's fast entry refuses). The
    gpu.module text."""
    _register_epilogues()
    args = form_args(form)
    ep, _ = form_epilogue(form, d)

    def tt(role, shape):
        return "tensor<%sx%s>" % ("x".join("{{%s}}" % sym[s] if isinstance(s, str) else str(s) for s in shape),
                                  "i1" if role == "mask" else dt)
    ins = [tt(r, sh) for r, sh, _ in args if r != "c"]
    out = [tt(r, sh) for r, sh, _ in args if r == "c"][0]
    base = dict(kind="bmm_gen", sg="bmm_%s_%s" % (form, dt), example="kernels/table/bmm_any.py",
                signature="(%s) -> %s" % (", ".join(ins), out), M=sym["M"], N=sym["N"], K=sym["K"],
                epilogue="bmm_copy" if ep == "none" else "bmm_scale_%d_%s" % (d, dt),
                product="A[b] @ B[b] (batch on grid.z; general SIMT kernels, f32 FMA)")
    def subst(e):
        return re.sub(r"\b[MNK]\b", lambda m: sym[m.group(0)], e) if e else e
    alts = [(dict(base, gen_ks=k), subst(admit_all)) for k in (ks or [1])]
    for t in tilings:
        g2, admit = GEN2_TILINGS[t]
        if admit_all:
            admit = "(%s) && (%s)" % (admit_all, admit) if admit else admit_all
        admit = subst(admit)
        if t == "dot":
            alts.append((dict(base, kind="bmm_dot"), admit))
        elif t.startswith("x3wg"):
            alts.append((dict(base, kind="bmm_x3wg", g2=g2), admit))
        elif t.startswith("x3"):
            alts.append((dict(base, kind="bmm_x3", g2=g2), admit))
        else:
            alts.append((dict(base, kind="bmm_gen2", g2=g2), admit))
    with _GenAlternative(form, dt, sym, d):
        _, text, _ = gen_gemm.generate_alternatives(alts)
    body = text[text.index("gpu.module"):]
    body, n = re.subn(r"(known_grid_size = array<i32: [^,]+), 1, 1>", r"\1, 1, {{%s}}>" % sym["B"], body)
    assert n == 1, "grid line"
    lines = body.split("\n")
    free = sorted(set(s for s in sym.values() if isinstance(s, str)), key=lambda s: int(s[1:]))
    head = [lines[0],
            "  // Pattern-table template: kernels/table/bmm_any.py %s %s (general SIMT kernels, every size masked:"
            % (form, dt),
            "  // batch index gpu.block_id z: B = %s, M = %s, N = %s, K = %s)." % (
                sym["B"], sym["M"], sym["N"], sym["K"])] + \
        ["  // llm-fuse.template-size %s" % s for s in free] + \
        ["  // llm-fuse.tune-require %s <= 65535" % sym["B"]]
    return "\n".join(head + lines[1:])


# gen2 tilings: name -> (gen2_kernel's arguments, where admitted: an
# expression over the roles M, N, K, or None)
GEN2_TILINGS = {
    "g128": (dict(BM=128, BN=128, BK=8, TM=8, KS=1, db=True), None),
    "g128x64": (dict(BM=128, BN=64, BK=8, TM=8, KS=1, db=True), None),
    "g128k16": (dict(BM=128, BN=128, BK=16, TM=8, KS=1, db=True), None),
    "g128w": (dict(BM=128, BN=128, BK=8, TM=8, KS=1, db=True, WX=8), None),
    "g32k4": (dict(BM=32, BN=64, BK=8, TM=4, KS=4, db=True), None),
    "g64": (dict(BM=64, BN=64, BK=16, TM=4, KS=1, db=True), None),
    "g64k2": (dict(BM=64, BN=64, BK=8, TM=8, KS=2, db=True), None),
    "g64x2": (dict(BM=64, BN=64, BK=16, TM=4, KS=2, db=True), None),
    "s16": (dict(BM=16, BN=32, BK=8, TM=4, KS=16, db=False), "M <= 32"),
    "s16n64": (dict(BM=16, BN=64, BK=16, TM=4, KS=8, db=False), "M <= 32"),
    "s16d": (dict(BM=16, BN=32, BK=8, TM=4, KS=8, db=True), "M <= 32"),
    "s16x16": (dict(BM=16, BN=16, BK=8, TM=4, KS=32, db=False), "M <= 32 && K >= 128"),
    # not gen2: dot_kernel (A and B read along k only: nt, ntm, nts)
    "dot": (None, "M * N <= 16384 && K >= 256"),
    # not gen2: x3_kernel (exact f32 by 3xTF32 on mma.sync; session 28): CTA
    # BM x BN, warp tiles WM x WN
    "x3": (dict(BM=64, BN=128, BK=16, WM=32, WN=32), None),
    "x3s": (dict(BM=64, BN=64, BK=16, WM=32, WN=32), None),
    "x3l": (dict(BM=128, BN=128, BK=16, WM=32, WN=32), None),
    "x3w": (dict(BM=128, BN=128, BK=16, WM=64, WN=32), None),
    # x3wg_kernel (3xTF32 on wgmma: sm_90a only): WGS warpgroups of 64 rows x BN
    "x3wg": (dict(WGS=1, BN=128), None),
    "x3wgn64": (dict(WGS=1, BN=64), None),
    "x3wg2": (dict(WGS=2, BN=128), None),
    # session 28, helper BMMF32B (bench/table/bmm_stage.py "x3wgb"): two
    # warpgroups along n (WGN) sharing the A tile: explore only (018: 1.1408,
    # 1.1746 ms against x3wg's 1.1657)
    "x3wgn2": (dict(WGS=1, BN=64, WGN=2), None),      # 64 x 128, 256 threads, 99 KB
    "x3wgw": (dict(WGS=1, BN=128, WGN=2), None),      # 64 x 256, 256 threads, 161 KB: 1 CTA / SM
    # PF: k-tile kt + 2's loads issued in iteration kt (kt + 1's carried in
    # registers): x3wgp in the nn-mk entry (X3WG_EXTRA; x3wgn64p until session 29)
    "x3wgp": (dict(WGS=1, BN=128, PF=True), None),
    "x3wgn64p": (dict(WGS=1, BN=64, PF=True), None),
    # session 29 (helper F32BMM; measured in bench/NOTES.md): G (no loads,
    # splits, stores past the last k-tile) and LF (the prologue's loads
    # first) on the tilings above. In entries (X3WG_SET, X3WG_EXTRA): nn-mk
    # x3wgn64g, x3wgn64pk2, x3wgn64pg; tmpv-mk x3wgn64pk2, x3wgn64k2,
    # x3wgn64pg, x3wgn64g; nt-mn x3wgn64pgs, x3wg2n64pgs, x3wgpgs; the rest
    # explore only (bench/table/bmm_stage.py EXPLORE29)
    "x3wgg": (dict(WGS=1, BN=128, G=True, LF=True), None),
    "x3wgn64g": (dict(WGS=1, BN=64, G=True, LF=True), None),
    "x3wg2g": (dict(WGS=2, BN=128, G=True, LF=True), None),
    "x3wgpg": (dict(WGS=1, BN=128, PF=True, G=True, LF=True), None),
    "x3wgn64pg": (dict(WGS=1, BN=64, PF=True, G=True, LF=True), None),
    "x3wg2pg": (dict(WGS=2, BN=128, PF=True, G=True, LF=True), None),
    "x3wg2n64g": (dict(WGS=2, BN=64, G=True, LF=True), None),      # 128 x 64, 256 threads, 97 KB
    "x3wg2n64pg": (dict(WGS=2, BN=64, PF=True, G=True, LF=True), None),
    # KW: the k-tiles split over two warpgroups (a small grid's serial chain halved)
    "x3wgn64k2": (dict(WGS=1, BN=64, G=True, LF=True, KW=2), None),        # 64 x 64, 256 threads, 129 KB
    "x3wgn64pk2": (dict(WGS=1, BN=64, PF=True, G=True, LF=True, KW=2), None),
    "x3wgpk2": (dict(WGS=1, BN=128, PF=True, G=True, LF=True, KW=2), None),  # 64 x 128, 193 KB
    # 64 x 32 tiles (49 KB: 4 CTAs / SM) and SE (C stored in rows through shared memory)
    "x3wgn32pg": (dict(WGS=1, BN=32, PF=True, G=True, LF=True), None),
    "x3wgn32pgs": (dict(WGS=1, BN=32, PF=True, G=True, LF=True, SE=True), None),
    "x3wgn64pgs": (dict(WGS=1, BN=64, PF=True, G=True, LF=True, SE=True), None),
    "x3wg2n64pgs": (dict(WGS=2, BN=64, PF=True, G=True, LF=True, SE=True), None),
    "x3wgpgs": (dict(WGS=1, BN=128, PF=True, G=True, LF=True, SE=True), None),
    "x3wg2n32pg": (dict(WGS=2, BN=32, PF=True, G=True, LF=True), None),      # 128 x 32, 81 KB
    "x3wg2n32pgs": (dict(WGS=2, BN=32, PF=True, G=True, LF=True, SE=True), None),
    "x3wgn32g": (dict(WGS=1, BN=32, G=True, LF=True), None),
    # not measured yet (BMM_SET=session29se): x3wg2 with G, LF, PF and SE, for the
    # large P V products at odd N (051)
    "x3wg2pgs": (dict(WGS=2, BN=128, PF=True, G=True, LF=True, SE=True), None),
}


# ---- Lanes along k (`dot`) ---------------------------------------------------
#
# Session 27: where A and B are both read along k (A [M, K], B [N, K]: Q K^T,
# nt / ntm / nts) and M x N is small against K (held-out Q K^T at T = 8,
# d = 1536), one warp per output (m, n): lane l sums k = l, l + 32, ...
# (DOT_U loads of each operand in flight, coalesced 32-element rows), and
# a gpu.shuffle xor butterfly adds the 32 lanes (a fixed order:
# deterministic); lane 0 runs the epilogue and stores. A CTA of DOT_W warps
# owns DOT_W consecutive outputs of one batch. Every size masked.

DOT_W, DOT_U = 8, 8


def dot_kernel(form, dt, sym, d, parts, W=DOT_W, U=DOT_U):
    em = gen_gemm.Emitter()
    args = form_args(form)
    idx_of = {role: ix for role, _, ix in args}
    assert idx_of["a"][-1] == "k" and idx_of["b"][-1] == "k", form
    ep, scale = form_epilogue(form, d)
    Bs = sym["B"]
    Ms, Ns, Ks = _dim(sym, "M"), _dim(sym, "N"), _dim(sym, "K")
    assert isinstance(Ks, str)
    em.require("%s <= 65535" % Bs)

    def txt(s):
        return "{{%s}}" % s if isinstance(s, str) else str(s)

    names = ["%%arg%d" % i for i in range(len(args))]
    ty = {}
    for (role, shape, _), nm in zip(args, names):
        et = "i1" if role == "mask" else dt
        ty[role] = "memref<%sx%s>" % ("x".join(txt(sym[s]) if isinstance(s, str) else str(s) for s in shape), et)
    arg = {role: nm for (role, _, _), nm in zip(args, names)}
    mn = [s for s in (Ms, Ns) if isinstance(s, str)]
    mn_e = " * ".join(mn) if mn else "1"
    gx = "(%s + %d) / %d" % (mn_e, W - 1, W)

    def index(role, b, m, n, k):
        env = {"b": b, "m": m, "n": n, "k": k, "0": 0}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    lane = em.rem(tid, 32)
    w = em.div(tid, 32)
    o = em.add(em.mul(pid, W), w)
    zero = em.f32("0.000000e+00", "zero")
    MN = em.symc(mn_e) if mn else 1
    ok_o = em.op("arith.cmpi ult, %s, %s : index" % (o, em.v(MN)), "oko")
    oc = em.minu(o, em.symc("%s - 1" % mn_e)) if mn else 0
    em.comment("warp w: output (m, n) = (o / N, o %% N), o = %d * pid + w (clamped; stored where o < M * N)" % W)
    if Ms == 1:
        m, n = 0, oc
    elif Ns == 1:
        m, n = oc, 0
    else:
        Nv = em.symc(Ns)
        m, n = em.div(oc, Nv), em.rem(oc, Nv)
    Kv, K1 = em.symc(Ks), em.symc("%s - 1" % Ks)
    kt_v = em.symc("(%s + %d) / %d" % (Ks, 32 * U - 1, 32 * U))

    def load(role, k):
        x = em.op("memref.load %s[%s] : %s" % (arg[role], index(role, bz, m, n, k), ty[role]), "g")
        if dt != "f32":
            x = em.op("arith.extf %s : %s to f32" % (x, dt), "g")
        return x

    em.comment("lane l: k = %d * kt + 32 * u + l (u < %d), clamped; zero past K" % (32 * U, U))
    res = em.fresh("acc")
    em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%acc = %s) -> (f32) {" % (
        res, em.idx(0), kt_v, em.idx(1), zero))
    em.indent += 2
    k0 = em.add(em.mul("%kt", 32 * U), lane)
    prods = []
    for u in range(U):
        k = em.add(k0, 32 * u)
        okk = em.op("arith.cmpi ult, %s, %s : index" % (k, Kv), "okk")
        kc = em.minu(k, K1)
        p = em.op("arith.mulf %s, %s : f32" % (load("a", kc), load("b", kc)), "p")
        prods.append(em.op("arith.select %s, %s, %s : f32" % (okk, p, zero), "p"))
    acc = "%acc"
    for p in prods:
        acc = em.op("arith.addf %s, %s : f32" % (acc, p), "acc")
    em.emit("scf.yield %s : f32" % acc)
    em.indent -= 2
    em.emit("}")
    em.comment("butterfly over the 32 lanes (xor 16, 8, 4, 2, 1)")
    x = res
    w32 = em.op("arith.constant 32 : i32", "w32")
    for off in (16, 8, 4, 2, 1):
        oi = em.op("arith.constant %d : i32" % off, "off")
        y = em.fresh("sh")
        em.emit("%s, %%ok_%s = gpu.shuffle xor %s, %s, %s : f32" % (y, y[1:], x, oi, w32))
        x = em.op("arith.addf %s, %s : f32" % (x, y), "s")
    l0 = em.op("arith.cmpi eq, %s, %s : index" % (lane, em.idx(0)), "l0")
    ok = em.op("arith.andi %s, %s : i1" % (l0, ok_o), "ok")
    em.emit("scf.if %s {" % ok)
    em.indent += 2
    _store_scalar(em, x, ep, scale, dt, arg, ty, index("mask", bz, m, n, None) if ep == "scale_mask" else None,
                  index("c", bz, m, n, None))
    em.indent -= 2
    em.emit("}")
    em.emit("gpu.return")
    parts.update(em=em, launch=dict(block=[32 * W, 1, 1], grid=["{{%s}}" % gx if mn else 1, 1, 1], smem=16),
                 header=["bmm_any.py lanes-along-k kernel (dot): a warp per output, lane l sums k = l mod 32 "
                         "(%d loads in flight), shuffle-xor butterfly, %d warps per CTA" % (U, W)],
                 helpers=[])


# ---- Exact f32 on TF32 tensor cores (`x3`, session 28) ------------------------
#
# Session 28 (issue 15 point 7: the held-out f32 batched GEMMs at odd N or K,
# 1.2-1.5x torch.compile's exact-f32 cuBLAS with the SIMT kernels): the
# 3xTF32 split of docs/verification.md "Exact f32 on sm_90a (3xTF32)" on
# mma.sync m16n8k8 .tf32 (sm_80 and later), fed by the general kernel's
# masked, layout-agnostic loads (_operand_loads: every size, A or B
# transposed, each operand read along its contiguous dimension). Each f32
# element is split as it is stored to shared memory into big = rna_tf32(x)
# and small = rna_tf32(x - big), in integer arithmetic as
# gemm_wgmma_tma.py's split (|x| >= 0x7F7FF000: big from two TF32 ulps
# below, so +-Inf rides in small and a cross term never multiplies Inf by a
# zero small part; NaN stays NaN); shared tiles [buffer][big, small][k][m or
# n], rows padded to 8 mod 32 words (fragment loads on 32 distinct banks).
# Per k-tile each warp's m16n8 tiles take small_a big_b + big_a small_b +
# big_a big_b (small terms first) into a zeroed accumulator that is then
# added to the main one with f32 adds (the tensor cores' accumulation
# truncates: the blocked, promoted sum of the sm_90a 3xTF32 kernel). A CTA
# of (BM / WM) x (BN / WN) warps, warp tiles WM x WN; double-buffered: the
# next k-tile's global loads in registers while this one is multiplied, one
# barrier per k-tile. Every size masked; one rounding at the store.
# Measured (bench/NOTES.md session 28, run 1): no faster than the SIMT
# tilings but at the T = 1019 scores (mma.sync's TF32 rate on Hopper, over
# the three terms, lands at cuBLAS SGEMM); in no entry (GEN2_TILINGS "x3*",
# bench/table/bmm_stage.py's explore set "x3"). The sm_90a entries use
# x3wg_kernel below; both share the split and the epilogue helpers.

X3_ABS, X3_THR, X3_HALF, X3_MASK = 2147483647, 2139090944, 4096, -8192   # 0x7FFFFFFF, 0x7F7FF000, 0x1000, ~0x1FFF


def _epilogue_consts(em, ep, scale, dt):
    """(scale, -inf) constants of the scaled forms' epilogue (None where the
    form has none); a 16-bit IR's scale is its 16-bit constant, widened."""
    sc = ninf = None
    if ep != "none":
        sc = em.f32(scale, "scale")
        if dt != "f32":   # the IR's constant is the 16-bit one: widen it
            sc16 = em.const(scale, dt, "scale16")
            sc = em.op("arith.extf %s : %s to f32" % (sc16, dt), "sc")
    if ep == "scale_mask":
        ninf = em.f32("0xFF800000", "ninf")
    return sc, ninf


def _store_scalar(em, x, ep, scale, dt, arg, ty, mask_at, c_at):
    """The epilogue of one f32 output x: scaled, masked to -inf where the
    mask (at index mask_at) is set, rounded to dt, stored at c_at."""
    if ep != "none":
        sc = em.f32(scale, "scale")
        if dt != "f32":
            sc16 = em.const(scale, dt, "scale16")
            sc = em.op("arith.extf %s : %s to f32" % (sc16, dt), "sc")
        x = em.op("arith.mulf %s, %s : f32" % (x, sc), "y")
    if ep == "scale_mask":
        ninf = em.f32("0xFF800000", "ninf")
        mk = em.op("memref.load %s[%s] : %s" % (arg["mask"], mask_at, ty["mask"]), "mk")
        x = em.op("arith.select %s, %s, %s : f32" % (mk, ninf, x), "y")
    if dt != "f32":
        x = em.op("arith.truncf %s : f32 to %s" % (x, dt), "y")
    em.emit("memref.store %s, %s[%s] : %s" % (x, arg["c"], c_at, ty["c"]))


def _kernel_args(form, dt, sym):
    """(names, memref type, argument name, index list) per role of the
    form's kernel arguments (form_args)"""
    args = form_args(form)
    names = ["%%arg%d" % i for i in range(len(args))]
    ty = {}
    for (role, shape, _), nm in zip(args, names):
        et = "i1" if role == "mask" else dt
        ty[role] = "memref<%sx%s>" % ("x".join("{{%s}}" % sym[s] if isinstance(s, str) else str(s)
                                               for s in shape), et)
    arg = {role: nm for (role, _, _), nm in zip(args, names)}
    idx_of = {role: ix for role, _, ix in args}
    return names, ty, arg, idx_of


def _x3_split(em):
    """split(x) -> (big, small) of an f32 value (the module comment above)"""
    c_abs = em.const(str(X3_ABS), "i32", "x3abs")
    c_thr = em.const(str(X3_THR), "i32", "x3thr")
    c_half = em.const(str(X3_HALF), "i32", "x3half")
    c_msk = em.const(str(X3_MASK), "i32", "x3msk")

    def split(x):
        xi = em.op("arith.bitcast %s : f32 to i32" % x, "xi")
        ab = em.op("arith.andi %s, %s : i32" % (xi, c_abs), "xa")
        ok = em.op("arith.cmpi ult, %s, %s : i32" % (ab, c_thr), "fin")
        inc = em.op("arith.select %s, %s, %s : i32" % (ok, c_half, c_msk), "inc")
        bi = em.op("arith.andi %s, %s : i32" % (em.op("arith.addi %s, %s : i32" % (xi, inc), "xr"), c_msk), "bi")
        big = em.op("arith.bitcast %s : i32 to f32" % bi, "big")
        di = em.op("arith.bitcast %s : f32 to i32" % em.op("arith.subf %s, %s : f32" % (x, big), "df"), "di")
        si = em.op("arith.andi %s, %s : i32" % (em.op("arith.addi %s, %s : i32" % (di, c_half), "sr"), c_msk), "si")
        return big, em.op("arith.bitcast %s : i32 to f32" % si, "small")
    return split


def _x3_tail(em, form, d):
    """the form's elementwise tail (form_epilogue) and its f32 constants:
    (kind, scale, -inf), for _x3_store_c"""
    ep, scale = form_epilogue(form, d)
    sc = em.f32(scale, "scale") if ep != "none" else None
    ninf = em.f32("0xFF800000", "ninf") if ep == "scale_mask" else None
    return ep, sc, ninf


def _x3_store_c(em, tail, arg, ty, index, bz, M_v, rows, cols, value):
    """the f32 epilogue of the x3 kernels: for each row r (rows[r]() emits
    its index) and column c (cols[c]: index, in-bounds i1), the tail
    (_x3_tail: scale, mask) on value(r, c) and a store where both are in
    bounds"""
    ep, sc, ninf = tail
    for r, row_of in enumerate(rows):
        row = row_of()
        okr = em.op("arith.cmpi ult, %s, %s : index" % (row, M_v), "okr")
        em.emit("scf.if %s {" % okr)
        em.indent += 2
        for c, (col, okc) in enumerate(cols):
            x = value(r, c)
            em.emit("scf.if %s {" % okc)
            em.indent += 2
            if ep in ("scale", "scale_mask"):
                x = em.op("arith.mulf %s, %s : f32" % (x, sc), "y")
            if ep == "scale_mask":
                mk = em.op("memref.load %s[%s] : %s" % (arg["mask"], index("mask", bz, row, col, None), ty["mask"]),
                           "mk")
                x = em.op("arith.select %s, %s, %s : f32" % (mk, ninf, x), "y")
            em.emit("memref.store %s, %s[%s] : %s" % (x, arg["c"], index("c", bz, row, col, None), ty["c"]))
            em.indent -= 2
            em.emit("}")
        em.indent -= 2
        em.emit("}")


def x3_kernel(form, dt, sym, d, parts, BM=64, BN=128, BK=16, WM=32, WN=32):
    assert dt == "f32", "x3: f32 operands"
    em = gen_gemm.Emitter()
    warps_m, warps_n = BM // WM, BN // WN
    T = 32 * warps_m * warps_n
    MI, NI = WM // 16, WN // 8
    assert WM % 16 == 0 and WN % 8 == 0 and BK % 8 == 0
    assert (BK * BM) % T == 0 and (BK * BN) % T == 0
    Bs, Ms, Ns, Ks = sym["B"], sym["M"], sym["N"], sym["K"]
    gm, gn = "(%s + %d) / %d" % (Ms, BM - 1, BM), "(%s + %d) / %d" % (Ns, BN - 1, BN)
    kt = "(%s + %d) / %d" % (Ks, BK - 1, BK)
    em.require("%s <= 65535" % Bs)
    _, ty, arg, idx_of = _kernel_args(form, dt, sym)
    LDA, LDB = BM + 8, BN + 8      # 8 mod 32 words: fragment loads (k = t, row g) on banks 8t + g
    sa_ty = "memref<2x2x%dx%dxf32, %s>" % (BK, LDA, WG)
    sb_ty = "memref<2x2x%dx%dxf32, %s>" % (BK, LDB, WG)
    smem = 2 * 2 * BK * (LDA + LDB) * 4

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    gn_v = em.symc(gn)
    m0 = em.mul(em.div(pid, gn_v), BM)
    n0 = em.mul(em.rem(pid, gn_v), BN)
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    wm0 = em.mul(em.div(warp, warps_n), WM)
    wn0 = em.mul(em.rem(warp, warps_n), WN)
    M_v, N_v, K_v = em.symc(Ms), em.symc(Ns), em.symc(Ks)
    M1, N1, K1 = em.symc("%s - 1" % Ms), em.symc("%s - 1" % Ns), em.symc("%s - 1" % Ks)
    zero = em.f32("0.000000e+00", "zero")

    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sa_ty), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(2 * 2 * BK * LDA * 4), WG, sb_ty),
               "sB")
    index, plan, load = _operand_loads(em, idx_of, T, BK, tid, bz, arg, ty, dt, zero, K_v, K1)
    a_plan = plan("a", m0, BM, (M_v, M1))
    b_plan = plan("b", n0, BN, (N_v, N1))

    split = _x3_split(em)

    def store(sm, sm_ty, buf, plan_, vals):
        for (kk, oo, _, _), x in zip(plan_, vals):
            for part, y in enumerate(split(x)):
                em.emit("memref.store %s, %s[%s, %s, %s, %s] : %s" % (
                    y, sm, em.v(buf), em.idx(part), em.v(kk), em.v(oo), sm_ty))

    g = em.shr(lane, 2)
    t = em.band(lane, 3)
    a_rows = [[em.add(em.add(wm0, g), 16 * mi + 8 * h) for h in range(2)] for mi in range(MI)]
    b_ns = [em.add(em.add(wn0, g), 8 * ni) for ni in range(NI)]
    acc_ty = "vector<2x2xf32>"
    z22 = em.const("dense<0.000000e+00>", acc_ty, "zero22")
    nacc = MI * NI

    em.comment("prologue: k-tile 0 -> shared buffer 0 (split into big and small)")
    store(sA, sa_ty, 0, a_plan, load("a", a_plan, 0))
    store(sB, sb_ty, 0, b_plan, load("b", b_plan, 0))
    em.emit("gpu.barrier")
    res = em.fresh("acc")
    em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%s) -> (%s) {" % (
        res, nacc, em.idx(0), em.symc(kt), em.idx(1), ", ".join("%%a%d = %s" % (i, z22) for i in range(nacc)),
        ", ".join([acc_ty] * nacc)))
    em.indent += 2
    em.comment("k-tile kt + 1's loads in flight (past K: clamped, zero) while kt is multiplied")
    buf = em.op("arith.andi %%kt, %s : index" % em.idx(1), "buf")
    nbuf = em.op("arith.xori %s, %s : index" % (buf, em.idx(1)), "nbuf")
    k1 = em.mul(em.add("%kt", 1), BK)
    av, bv = load("a", a_plan, k1), load("b", b_plan, k1)

    def lds(sm, sm_ty, part, k, o):
        return em.op("memref.load %s[%s, %s, %s, %s] : %s" % (sm, buf, em.idx(part), em.v(k), em.v(o), sm_ty), "s")

    tmp = [None] * nacc
    for kk in range(BK // 8):
        k_lo, k_hi = em.add(t, 8 * kk), em.add(t, 8 * kk + 4)
        fa = [[em.op("vector.from_elements %s : vector<4x1xf32>" % ", ".join(
            [lds(sA, sa_ty, p, k_lo, a_rows[mi][0]), lds(sA, sa_ty, p, k_lo, a_rows[mi][1]),
             lds(sA, sa_ty, p, k_hi, a_rows[mi][0]), lds(sA, sa_ty, p, k_hi, a_rows[mi][1])]), "fa")
               for p in range(2)] for mi in range(MI)]
        fb = [[em.op("vector.from_elements %s : vector<2x1xf32>" % ", ".join(
            [lds(sB, sb_ty, p, k_lo, b_ns[ni]), lds(sB, sb_ty, p, k_hi, b_ns[ni])]), "fb")
               for p in range(2)] for ni in range(NI)]
        for mi in range(MI):
            for ni in range(NI):
                i = mi * NI + ni
                for pa, pb in ((1, 0), (0, 1), (0, 0)):   # small_a big_b, big_a small_b, big_a big_b
                    tmp[i] = em.op("nvgpu.mma.sync (%s, %s, %s) {mmaShape = [16, 8, 8], tf32Enabled} : "
                                   "(vector<4x1xf32>, vector<2x1xf32>, %s) -> %s" % (
                                       fa[mi][pa], fb[ni][pb], tmp[i] or z22, acc_ty, acc_ty), "d")
    accs = [em.op("arith.addf %%a%d, %s : %s" % (i, tmp[i], acc_ty), "acc") for i in range(nacc)]
    store(sA, sa_ty, nbuf, a_plan, av)
    store(sB, sb_ty, nbuf, b_plan, bv)
    em.emit("gpu.barrier")
    em.emit("scf.yield %s : %s" % (", ".join(accs), ", ".join([acc_ty] * nacc)))
    em.indent -= 2
    em.emit("}")

    tail = _x3_tail(em, form, d)
    em.comment("epilogue on the fragments: rows m0 + wm0 + 16 mi + g (+ 8), columns n0 + wn0 + 8 ni + 2 t (+ 1)")
    cols = []
    for ni in range(NI):
        for j in range(2):
            col = em.add(em.add(n0, em.add(wn0, em.mul(t, 2))), 8 * ni + j)
            cols.append((col, em.op("arith.cmpi ult, %s, %s : index" % (col, N_v), "okc")))
    pairs = {}

    def value(r, c):   # row r = (mi, h), column c = (ni, j)
        mi, h = divmod(r, 2)
        ni, j = divmod(c, 2)
        if j == 0:
            pairs[r, ni] = em.op("vector.extract %s#%d[%d] : vector<2xf32> from %s" % (res, mi * NI + ni, h, acc_ty),
                                 "c")
        return em.op("vector.extract %s[%d] : f32 from vector<2xf32>" % (pairs[r, ni], j), "x")
    _x3_store_c(em, tail, arg, ty, index, bz, M_v,
                [lambda mi=mi, h=h: em.add(m0, a_rows[mi][h]) for mi in range(MI) for h in range(2)], cols, value)
    em.emit("gpu.return")
    parts.update(em=em, launch=dict(block=[T, 1, 1], grid=["{{%s * %s}}" % (gen_gemm.par(gm), gen_gemm.par(gn)),
                                                           1, 1], smem=smem),
                 header=["bmm_any.py exact-f32 kernel (x3): 3xTF32 on mma.sync m16n8k8, CTA %d x %d x %d, %d warps "
                         "of %d x %d, operands split into big + small TF32 in shared memory (double-buffered), "
                         "per-k-tile promotion to f32, every size masked" % (BM, BN, BK, T // 32, WM, WN)],
                 helpers=[])


# ---- Exact f32 on TF32 wgmma (`x3wg`, sm_90a; session 28) ----------------------
#
# The same 3xTF32 split on wgmma m64nBNk8 .tf32 (sm_90a only: entries
# *-0x3wg, archs sm_90a, tried before the all-arch entries of their key):
# mma.sync's TF32 rate on Hopper caps x3_kernel near cuBLAS SGEMM (the
# session-22 mma.sync TF32 kernel: 132 TFLOP/s; /3 for the three terms).
# No TMA (odd N or K: rows not 16-byte aligned): each thread takes (row,
# 4 k) pairs of the k-tile (BK = 32), loads the 4 elements with the general
# kernel's masking (clamped indices, zero past M, N or K; consecutive
# threads along the operand's contiguous dimension), splits them into big
# and small and stores each as one 16-byte chunk into the K-major,
# 128B-swizzled wgmma tiles (row r of 128 B, chunk c at c ^ (r % 8): every
# 8-lane store phase hits 8 distinct chunks), so B [K, N] is transposed on
# the way (TF32 wgmma reads K-major operands only). Per stage [A big | B big
# | A small | B small], two stages (base aligned to 1024 B): k-tile kt + 1's
# loads are issued, kt's 12 wgmmas (4 k8 steps x small_a big_b, big_a
# small_b, big_a big_b) start from zero, kt + 1 is split and stored while
# they run, then wgmma.wait_group 0, the main accumulators += the k-tile's
# (f32 adds: the promotion of docs/verification.md "Exact f32 on sm_90a"),
# fence.proxy.async and one barrier. WGS warpgroups, each 64 rows x BN.
# WGN > 1 (helper BMMF32B, explore only): WGN warpgroups along n share the A
# tile (CTA 64 WGS x BN WGN). PF (x3wgp, x3wgn64p; x3wgp in the nn-mk entry):
# iteration kt issues k-tile kt + 2's loads and splits / stores kt + 1's,
# loaded one iteration earlier and carried in registers (scf.for iter_args),
# so a global load's latency hides behind a whole k-tile rather than the
# wgmmas alone (018: 1.1657 -> 1.0454 ms; 021: 0.0403 -> 0.0330).
#
# Session 29 (helper F32BMM), four more options, each off in the tilings
# above (their text unchanged): G, no loads, splits or stores past the last
# k-tile (scf.if on kt + 1 / kt + 2 < the k-tile count: without it the
# last iteration(s) load, split and store a zero tile, a third of the
# operand work at K = 64); LF, the prologue issues every load (k-tile 0's
# of A and B, with PF k-tile 1's) before the first split (one global
# latency instead of two or three). (16-byte loads along k need no option:
# the template is built with its sizes bound, and where K % 4 == 0 LLVM
# already merges a thread's 4 loads of an operand read along k into one
# ld.global.nc.v4.) KW = 2 (with WGS = WGN = 1, G): the k-tiles split over
# two warpgroups of one CTA (warpgroup kw takes k-tiles 2 j + kw into its
# own two stages; the loop runs over the pairs j, so a small grid's serial
# chain of k-tiles halves), the second warpgroup's sums added to the
# first's through shared memory (one fixed order) before the first stores C.
# SE (KW = WGN = 1): the C tile goes through shared memory ([BM][BN + 8] f32, 8-byte
# stores conflict-free per half-warp) and is stored in rows, consecutive
# threads along n (a warp's store: 32 consecutive floats of one row instead
# of 8 rows x 4 pairs).

def x3wg_kernel(form, dt, sym, d, parts, WGS=1, BN=128, WGN=1, PF=False, G=False, LF=False, KW=1, SE=False):
    assert dt == "f32", "x3wg: f32 operands"
    assert KW == 1 or (WGS == 1 and WGN == 1 and G), "KW > 1: one warpgroup per k-group, G"
    assert not SE or (KW == 1 and WGN == 1), "SE: KW = WGN = 1"
    em = gen_gemm.Emitter()
    BM, BK = 64 * WGS, 32
    BNT = BN * WGN                               # CTA columns: WGN warpgroups along n, BN each
    TL = 128 * WGS * WGN                         # the threads that load one k-tile
    T = TL * KW
    nacc = BN // 2
    Bs, Ms, Ns, Ks = sym["B"], sym["M"], sym["N"], sym["K"]
    gm, gn = "(%s + %d) / %d" % (Ms, BM - 1, BM), "(%s + %d) / %d" % (Ns, BNT - 1, BNT)
    kt = "(%s + %d) / %d" % (Ks, BK - 1, BK)
    kg = kt if KW == 1 else "(%s + %d) / %d" % (Ks, BK * KW - 1, BK * KW)   # the loop's trip count
    em.require("%s <= 65535" % Bs)
    _, ty, arg, idx_of = _kernel_args(form, dt, sym)
    tile_a, tile_b = BM * 128, BNT * 128         # bytes: rows of 32 f32
    part = tile_a + tile_b                       # [A | B] of one part (big or small)
    stage = 2 * part
    smem = 2 * KW * stage + 1024                 # two stages (per k-group), 1 KiB slack for the alignment
    nel = 2 * KW * stage // 4

    pid = em.op("gpu.block_id x", "pid")
    bz = em.op("gpu.block_id z", "bz")
    tid = em.op("gpu.thread_id x", "tid")
    ltid, kw = tid, None
    if KW > 1:   # warpgroup kw loads and multiplies k-tiles KW j + kw in its stages 2 kw, 2 kw + 1
        ltid, kw = em.rem(tid, 128), em.div(tid, 128)
    gn_v = em.symc(gn)
    m0 = em.mul(em.div(pid, gn_v), BM)
    n0 = em.mul(em.rem(pid, gn_v), BNT)
    M_v, N_v, K_v = em.symc(Ms), em.symc(Ns), em.symc(Ks)
    M1, N1, K1 = em.symc("%s - 1" % Ms), em.symc("%s - 1" % Ns), em.symc("%s - 1" % Ks)
    zero = em.f32("0.000000e+00", "zero")

    em.comment("shared memory from a base aligned to 1024 B: stage s, part p (big, small): A [%d][32], B [%d][32]"
               % (BM, BNT))
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    raw = em.op("memref.extract_aligned_pointer_as_index %s : memref<?xi8, %s> -> index" % (smem_v, WG), "addr")
    pad = em.band(em.op("arith.subi %s, %s : index" % (em.idx(1024), em.band(raw, 1023)), "i"), 1023)
    sbase = em.add(raw, pad)
    sf_ty = "memref<%dxf32, %s>" % (nel, WG)
    sf = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, pad, WG, sf_ty), "sf")

    def index(role, b, m, n, k):
        env = {"b": b, "m": m, "n": n, "k": k, "0": 0}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

    def plan(role, outer, outer_tile, bound, tile_off):
        """per (row, 4 k) pair of the thread: (k4, clamped row, row in bounds, f32 offset of its chunk in the
        part); consecutive threads along the operand's contiguous index"""
        out = []
        for i in range(outer_tile * (BK // 4) // TL):
            e = em.add(ltid, i * TL)
            if idx_of[role][-1] == "k":
                k4, oo = em.rem(e, BK // 4), em.div(e, BK // 4)
            else:
                oo, k4 = em.rem(e, outer_tile), em.div(e, outer_tile)
            go = em.add(outer, oo)
            ok_o = em.op("arith.cmpi ult, %s, %s : index" % (em.v(go), bound[0]), "oko")
            sw = em.op("arith.xori %s, %s : index" % (em.v(k4), em.v(em.band(oo, 7))), "sw")
            off = em.add(em.add(em.mul(oo, 32), em.mul(sw, 4)), tile_off // 4)
            out.append((k4, em.minu(go, bound[1]), ok_o, off))
        return out

    def load(role, plan_, k0):
        vals = []
        for k4, goc, ok_o, _ in plan_:
            kb = em.add(k0, em.mul(k4, 4))
            q = []
            for j in range(4):
                gk = em.add(kb, j)
                ok = em.op("arith.andi %s, %s : i1" % (
                    ok_o, em.op("arith.cmpi ult, %s, %s : index" % (em.v(gk), K_v), "okk")), "ok")
                gkc = em.minu(gk, K1)
                ix = index("a", bz, goc, None, gkc) if role == "a" else index("b", bz, None, goc, gkc)
                x = em.op("memref.load %s[%s] : %s" % (arg[role], ix, ty[role]), "g")
                q.append(em.op("arith.select %s, %s, %s : f32" % (ok, x, zero), "g"))
            vals.append(q)
        return vals

    split = _x3_split(em)

    def stq(st):   # the stage index of this warpgroup's stage st
        return st if KW == 1 else em.add(st, em.mul(kw, 2))

    def kofs(j):   # the first k of k-group j's k-tile for this warpgroup
        return em.mul(j, BK) if KW == 1 else em.mul(em.add(em.mul(j, KW), kw), BK)

    def store(st, plan_, vals):
        sbase_f = em.mul(stq(st), stage // 4)
        for (_, _, _, off), q in zip(plan_, vals):
            bs = [split(x) for x in q]
            for p in range(2):
                v = em.op("vector.from_elements %s : vector<4xf32>" % ", ".join(b[p] for b in bs), "v")
                at = em.add(em.add(sbase_f, off), p * part // 4)
                em.emit("vector.store %s, %s[%s] : %s, vector<4xf32>" % (v, sf, em.v(at), sf_ty))

    a_plan = plan("a", m0, BM, (M_v, M1), 0)
    b_plan = plan("b", n0, BNT, (N_v, N1), tile_a)
    desc, k_hi, _ = gen_gemm.wgmma_descriptors(em, 1024, 1024)
    wg = em.div(tid, 128) if KW == 1 else 0
    wgn = None
    if WGN > 1:   # warpgroup wg: rows 64 (wg / WGN), columns BN (wg % WGN) of the CTA's tile
        wgn = em.rem(wg, WGN)
        wg = em.div(wg, WGN)
    acc_ty = "!llvm.struct<(%s)>" % ", ".join(["f32"] * nacc)
    vec_ty = "vector<%dxf32>" % nacc
    undef = em.const_op("llvm.mlir.undef : %s" % acc_ty, "uacc")
    zv = em.const("dense<0.000000e+00>", vec_ty, "zvacc")

    def fence_barrier():
        em.emit("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}")
        em.emit("gpu.barrier")

    if LF:
        em.comment("prologue: k-tile 0's loads%s, then k-tile 0 -> stage 0 (split)" % (
            " and k-tile 1's (PF: carried into the loop)" if PF else ""))
        a0, b0 = load("a", a_plan, kofs(0)), load("b", b_plan, kofs(0))
        if PF:
            av, bv = load("a", a_plan, kofs(1)), load("b", b_plan, kofs(1))
        store(0, a_plan, a0)
        store(0, b_plan, b0)
    else:
        em.comment("prologue: k-tile 0 -> stage 0 (split)")
        store(0, a_plan, load("a", a_plan, 0))
        store(0, b_plan, load("b", b_plan, 0))
    if PF:
        if not LF:
            em.comment("PF: k-tile 1's loads, carried into the loop (stored in its first iteration)")
            av, bv = load("a", a_plan, BK), load("b", b_plan, BK)
        flat = [x for q in av + bv for x in q]
        cargs = [em.fresh("cv") for _ in flat]
    fence_barrier()

    def guarded_loads(kn, k0):
        """G: k-tile (k-group) kn's loads (A, B) where kn < their count, zeros past it"""
        if not G:
            return load("a", a_plan, k0), load("b", b_plan, k0)
        ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(kn), em.symc(kg)), "okt")
        n = 4 * (len(a_plan) + len(b_plan))
        res_ = em.fresh("gl")
        em.emit("%s:%d = scf.if %s -> (%s) {" % (res_, n, ok, ", ".join(["f32"] * n)))
        em.indent += 2
        la, lb = load("a", a_plan, k0), load("b", b_plan, k0)
        em.emit("scf.yield %s : %s" % (", ".join(x for q in la + lb for x in q), ", ".join(["f32"] * n)))
        em.indent -= 2
        em.emit("} else {")
        em.emit("  scf.yield %s : %s" % (", ".join([zero] * n), ", ".join(["f32"] * n)))
        em.emit("}")
        flat_ = ["%s#%d" % (res_, i) for i in range(n)]
        return ([flat_[4 * i:4 * i + 4] for i in range(len(a_plan))],
                [flat_[4 * (len(a_plan) + i):4 * (len(a_plan) + i) + 4] for i in range(len(b_plan))])
    res = em.fresh("acc")
    if PF:
        em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%%m = %s, %s) -> (%s, %s) {" % (
            res, 1 + len(flat), em.idx(0), em.symc(kg), em.idx(1), zv,
            ", ".join("%s = %s" % (c, x) for c, x in zip(cargs, flat)), vec_ty, ", ".join(["f32"] * len(flat))))
    else:
        em.emit("%s = scf.for %%kt = %s to %s step %s iter_args(%%m = %s) -> (%s) {" % (
            res, em.idx(0), em.symc(kg), em.idx(1), zv, vec_ty))
    em.indent += 2
    st = em.op("arith.andi %%kt, %s : index" % em.idx(1), "st")
    nst = em.op("arith.xori %s, %s : index" % (st, em.idx(1)), "nst")
    if PF:
        em.comment("PF: k-tile kt + 2's loads in flight (past K: clamped, zero); kt + 1's were loaded a k-tile ago")
        na, nb = len(av), len(bv)
        av = [cargs[4 * i:4 * i + 4] for i in range(na)]
        bv = [cargs[4 * (na + i):4 * (na + i) + 4] for i in range(nb)]
        kn2 = em.add("%kt", 2)
        av2, bv2 = guarded_loads(kn2, kofs(kn2))
    else:
        em.comment("k-tile kt + 1's loads in flight (past K: clamped, zero)")
        kn1 = em.add("%kt", 1)
        av, bv = guarded_loads(kn1, kofs(kn1))
    em.comment("k-tile kt: 4 k8 steps x (small_a big_b, big_a small_b, big_a big_b) from zero")
    sb = em.add(sbase, em.mul(stq(st), stage))
    a_big = em.add(sb, em.mul(wg, 64 * 128))
    sbn = sb if wgn is None else em.add(sb, em.mul(wgn, BN * 128))   # this warpgroup's B rows
    em.emit("nvvm.wgmma.fence.aligned")
    t = undef
    for kk in range(BK // 8):
        for i, (pa, pb) in enumerate(((1, 0), (0, 1), (0, 0))):
            da = desc(em.add(a_big, pa * part + kk * 32), k_hi)
            db = desc(em.add(sbn, tile_a + pb * part + kk * 32), k_hi)
            t = em.op(("nvvm.wgmma.mma_async %s, %s, %s, #nvvm.shape<m = 64, n = %d, k = 8>, "
                       "D [<f32>, #nvvm.wgmma_scale_out<%s>], A [<tf32>, #nvvm.wgmma_scale_in<one>, <row>], "
                       "B [<tf32>, #nvvm.wgmma_scale_in<one>, <col>] : %s -> %s") % (
                           da, db, t, BN, "zero" if kk == 0 and i == 0 else "one", acc_ty, acc_ty), "w")
    em.emit("nvvm.wgmma.commit.group.sync.aligned")
    em.comment("k-tile kt + 1 split and stored into the other stage while the wgmmas run")
    if G:   # none past the last k-tile
        em.emit("scf.if %s {" % em.op("arith.cmpi ult, %s, %s : index" % (
            em.v(em.add("%kt", 1)), em.symc(kg)), "okt"))
        em.indent += 2
    store(nst, a_plan, av)
    store(nst, b_plan, bv)
    if G:
        em.indent -= 2
        em.emit("}")
    em.emit("nvvm.wgmma.wait.group.sync.aligned 0")
    es = [em.op("llvm.extractvalue %s[%d] : %s" % (t, e, acc_ty), "u") for e in range(nacc)]
    tv = em.op("vector.from_elements %s : %s" % (", ".join(es), vec_ty), "tv")
    m_new = em.op("arith.addf %%m, %s : %s" % (tv, vec_ty), "mv")
    fence_barrier()
    if PF:
        nxt = [x for q in av2 + bv2 for x in q]
        em.emit("scf.yield %s, %s : %s, %s" % (m_new, ", ".join(nxt), vec_ty, ", ".join(["f32"] * len(nxt))))
    else:
        em.emit("scf.yield %s : %s" % (m_new, vec_ty))
    em.indent -= 2
    em.emit("}")
    if PF:
        res = res + "#0"

    if KW > 1:
        em.comment("KW: warpgroup 1's sums -> shared memory (element e of thread t at e * 128 + t), "
                   "warpgroup 0 adds them to its own")
        one = em.op("arith.cmpi eq, %s, %s : index" % (em.v(kw), em.idx(1)), "kw1")
        em.emit("scf.if %s {" % one)
        em.indent += 2
        for e in range(nacc):
            x = em.op("vector.extract %s[%d] : f32 from %s" % (res, e, vec_ty), "x")
            em.emit("memref.store %s, %s[%s] : %s" % (x, sf, em.v(em.add(ltid, e * 128)), sf_ty))
        em.indent -= 2
        em.emit("}")
        em.emit("gpu.barrier")
        em.emit("scf.if %s {" % em.op("arith.cmpi eq, %s, %s : index" % (em.v(kw), em.idx(0)), "kw0"))
        em.indent += 2
        ps = [em.op("memref.load %s[%s] : %s" % (sf, em.v(em.add(ltid, e * 128)), sf_ty), "p") for e in range(nacc)]
        pv = em.op("vector.from_elements %s : %s" % (", ".join(ps), vec_ty), "pv")
        res = em.op("arith.addf %s, %s : %s" % (res, pv, vec_ty), "sum")
    tail = _x3_tail(em, form, d)
    em.comment("epilogue: warp w of warpgroup wg, lane (g, t): element 4 ni + 2 h + j at row 64 wg + 16 w + g + 8 h, "
               "column 8 ni + 2 t + j")
    lane = em.rem(tid, 32)
    w = em.rem(em.div(tid, 32), 4)
    g = em.shr(lane, 2)
    tq = em.band(lane, 3)
    rbase = em.add(em.add(m0, em.mul(wg, 64)), em.add(em.mul(w, 16), g))
    cbase = em.add(n0 if wgn is None else em.add(n0, em.mul(wgn, BN)), em.mul(tq, 2))
    if SE:
        S = BN + 8
        assert BM * S <= nel and T % BN == 0
        em.comment("SE: the C tile -> shared memory [%d][%d] (pairs: 8-byte stores), then stored in rows" % (BM, S))
        lrow = em.add(em.mul(wg, 64), em.add(em.mul(w, 16), g))
        for h in range(2):
            rat = em.mul(em.add(lrow, 8 * h), S)
            for ni in range(BN // 8):
                xs = [em.op("vector.extract %s[%d] : f32 from %s" % (res, 4 * ni + 2 * h + j, vec_ty), "x")
                      for j in range(2)]
                v = em.op("vector.from_elements %s, %s : vector<2xf32>" % tuple(xs), "v")
                at = em.add(rat, em.add(em.mul(tq, 2), 8 * ni))
                em.emit("vector.store %s, %s[%s] : %s, vector<2xf32>" % (v, sf, em.v(at), sf_ty))
        em.emit("gpu.barrier")
        R = T // BN   # rows per pass: thread i at column i % BN, row i / BN
        cl, rl = em.rem(tid, BN), em.div(tid, BN)
        col = em.add(n0, cl)
        _x3_store_c(em, tail, arg, ty, index, bz, M_v, [lambda p=p: em.add(m0, em.add(rl, p * R)) for p in range(BM // R)],
                    [(col, em.op("arith.cmpi ult, %s, %s : index" % (col, N_v), "okc"))],
                    lambda p, c: em.op("memref.load %s[%s] : %s" % (
                        sf, em.v(em.add(em.mul(em.add(rl, p * R), S), cl)), sf_ty), "x"))
    else:
        cols = []
        for ni in range(BN // 8):
            for j in range(2):
                col = em.add(cbase, 8 * ni + j)
                cols.append((col, em.op("arith.cmpi ult, %s, %s : index" % (col, N_v), "okc")))
        _x3_store_c(em, tail, arg, ty, index, bz, M_v, [lambda h=h: em.add(rbase, 8 * h) for h in range(2)], cols,
                    lambda h, c: em.op("vector.extract %s[%d] : f32 from %s" % (
                        res, 4 * (c // 2) + 2 * h + c % 2, vec_ty), "x"))
    if KW > 1:
        em.indent -= 2
        em.emit("}")
    em.emit("gpu.return")
    parts.update(em=em, launch=dict(block=[T, 1, 1], grid=["{{%s * %s}}" % (gen_gemm.par(gm), gen_gemm.par(gn)),
                                                           1, 1], smem=smem),
                 header=["bmm_any.py exact-f32 kernel (x3wg, sm_90a): 3xTF32 on wgmma m64n%dk8, CTA %d x %d x %d, "
                         "%d warpgroup(s), masked loads split into 128B-swizzled K-major big + small tiles "
                         "(two stages%s), per-k-tile promotion to f32, every size masked" % (
                             BN, BM, BNT, BK, WGS * WGN * KW, "; k-tile kt + 2's loads in flight" if PF else "") +
                         "".join(t for t, on in (("; none past the last k-tile", G), ("; prologue loads first", LF),
                                                 ("; k-tiles split over 2 warpgroups", KW > 1),
                                                 ("; C stored in rows through shared memory", SE)) if on)],
                 helpers=[])


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
_EDITED = {}


def _edited(func, edits, name, what, extra=None):
    """`func` (a gen_gemm generator) recompiled from its source with each
    (old, new) of `edits` applied once, as `name`, with `extra` added to its
    globals; cached. None, and a warning naming `what`, where an edit does
    not apply exactly once (gen_gemm.py changed)."""
    key = (func.__name__, name)
    if key in _EDITED:
        return _EDITED[key]
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(func))
    for old, new in edits:
        if src.count(old) != 1:
            print("bmm_any.py: gen_gemm.%s changed (%r does not apply once); no %s"
                  % (func.__name__, old.strip()[:60], what), file=sys.stderr)
            _EDITED[key] = None
            return None
        src = src.replace(old, new)
    src = src.replace("def %s(" % func.__name__, "def %s(" % name, 1)
    ns = dict(vars(gen_gemm))
    ns.update(extra or {})
    exec(compile(src, "<bmm_any: %s>" % name, "exec"), ns)
    _EDITED[key] = ns[name]
    return _EDITED[key]


def mma_nk_generator():
    """gen_gemm.gen_bf16_mma with B read [N, K] (None, and a warning, where
    an edit does not apply)"""
    return _edited(gen_gemm.gen_bf16_mma, _NK_EDITS, "gen_bf16_mma_nk", "16-bit B [N, K] mma entries")


# ---- wgmma with B stored [N, K] (the 16-bit Q K^T on sm_90a) -----------------
#
# gen_gemm.py's bf16_wgmma kernel stages B [K, N] MN-major (128-byte
# swizzle, 64-column atoms) and sets wgmma's B-transpose bit. B stored
# [N, K] is K-major, the layout wgmma takes without transposition: the tile
# is staged [BN rows][64 k] exactly like A (16-byte chunk c of row r at
# c ^ (r % 8), 8-row atoms of 1024 B: A's descriptor constants), the k16
# step starts 32 B into the rows, a WGN-column sub-tile WGN * 128 B in, and
# the instruction reads B `<col>`. Made from gen_gemm.gen_bf16_wgmma's own
# source by the edits below (gen_gemm.py is not edited; where an edit does
# not apply, no entry offers the variant, with a warning).
_WG_NK_EDITS = [
    ("""    b_copies = []
    for i in range(BK * BN // 8 // T):
        q = em.add(tid, i * T)
        k = em.div(q, BN // 8)
        cc = em.rem(q, BN // 8)
        dst = em.add(em.add(em.mul(em.div(cc, 8), BK * 64), em.mul(k, 64)),
                     em.mul(em.xor(em.rem(cc, 8), em.band(k, 7)), 8))
        b_copies.append((dst, k, em.add(n0, em.mul(cc, 8))))
""", """    b_copies = []
    for i in range(BN * 8 // T):
        q = em.add(tid, i * T)
        r = em.div(q, 8)
        c = em.rem(q, 8)
        dst = em.add(em.mul(r, 64), em.mul(em.xor(c, em.band(r, 7)), 8))
        b_copies.append((dst, em.add(n0, r), em.mul(c, 8)))
"""),
    ("""            for (dst, k, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.add(k0, k)), em.v(gcol)),""",
     """            for (dst, grow, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(grow), em.v(em.add(k0, gcol))),"""),
    ("""                db = desc(em.add(b_base[j], kk * 2048 + sub * (WGN // 64) * BK * 128), k_hi_b)""",
     """                db = desc(em.add(b_base[j], kk * 32 + sub * WGN * 128), k_hi_a)"""),
    ("""B [<%s>, #nvvm.wgmma_scale_in<one>, <row>] : %s -> %s") % (""",
     """B [<%s>, #nvvm.wgmma_scale_in<one>, <col>] : %s -> %s") % ("""),
]
# K masked too (any K multiple of 8: the head sizes 64, 96, 128 alike): every
# copy's k index is clamped into [0, K - 8] and its source size is 0 (a
# zero-fill) at or past K, so k-tiles past the end (the prologue's, when K
# has fewer than S - 2 k-tiles) read zeros.
_WG_NK_EDITS += [
    ("""        gm, gn, KT = sizes_and_requirements(em, M, N, K, BM, BN, BK, S - 2)""",
     """        gm, gn, KT = _wg_nk_sizes(em, M, N, K, BM, BN, BK)"""),
    ("""    def issue_loads(kt_load, stage, valid):
        if valid is None:""", """    k_n = em.v(sval(em, K))
    k_last8 = sval(em, "%s - 8" % K if is_sym(K) else K - 8)

    def size(kidx, valid):
        ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(kidx), k_n), "kin")
        if valid is not None:
            ok = em.op("arith.andi %s, %s : i1" % (ok, valid), "kin")
        return em.op("arith.select %s, %s, %s : index" % (ok, em.idx(8), em.idx(0)), "n")

    def issue_loads(kt_load, stage, valid):
        k0 = em.mul(kt_load, BK)
        toks = []
        ao = em.mul(stage, a_bytes // 2)
        for (dst, grow, gcol) in a_copies:
            kc = em.add(k0, gcol)
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8, %s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.minu(kc, k_last8))), sflat, em.v(em.add(ao, dst)), size(kc, valid),
                A.ty, sm_ty), "cp"))
        for j in range(nb):
            bo = em.add(S * a_bytes // 2 + j * S * b_bytes // 2, em.mul(stage, b_bytes // 2))
            for (dst, grow, gcol) in b_copies:
                kc = em.add(k0, gcol)
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8, %s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(grow), em.v(em.minu(kc, k_last8))), sflat, em.v(em.add(bo, dst)),
                    size(kc, valid), Bs[j].ty, sm_ty), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    def issue_loads_unmasked(kt_load, stage, valid):
        if valid is None:"""),
]
def _wg_nk_sizes(em, M, N, K, BM, BN, BK):
    """(row tiles, column tiles, k-tiles) of the [N, K] wgmma variant: M
    masked, N a multiple of BN, K a multiple of 8 (masked)"""
    gen_gemm.sizes_and_requirements(em, M, N, K, BM, BN, 8, 1)   # N % BN, K % 8 (K >= 8)
    return gen_gemm.scdiv(M, BM), gen_gemm.sdiv(N, BN), gen_gemm.scdiv(K, BK)


def wgmma_nk_generator():
    """gen_gemm.gen_bf16_wgmma with B read [N, K] (None, and a warning,
    where an edit does not apply)"""
    return _edited(gen_gemm.gen_bf16_wgmma, _WG_NK_EDITS, "gen_bf16_wgmma_nk", "16-bit B [N, K] wgmma variant",
                   {"_wg_nk_sizes": _wg_nk_sizes})


# ---- mma.sync with A stored [K, M] (the 16-bit A^T B) ------------------------
#
# Session 29 (helper TN16): the held-out A^T B in 16 bits (seed 31's 051,
# A [8, 1024, 1024] read transposed, N = 14336) had only the general SIMT
# entry (15.9x torch.compile). gen_gemm.py's bf16_mma kernel reads A as [M,
# K] (ldmatrix without .trans from an [m][k] tile). For A stored [K, M]
# (a_km) the tile is staged [k][m] as B's [k][n] tile is (cp.async chunks
# of 8 m-columns per k-row, chunk c stored at c ^ (k % 8), or c ^ ((k >> 1)
# & 3) where the tile has 4 chunks per row) and read by ldmatrix .trans
# (lane l: k-row (l % 8) + 8 (l / 16), m-chunk (l / 8) % 2: registers a0..a3
# of the m16k16 fragment). Masked M: M a multiple of 8 (16-byte rows),
# m-chunks past M - 8 read at M - 8 (rows never stored); K as in the nn
# kernel (k-rows past K - 1 zero-filled). Made from gen_gemm.gen_bf16_mma's
# source by the edits below (each must apply once), as _NK_EDITS.
_AT_EDITS = [
    ("        gm, gn, KT = sizes_and_requirements(em, M, N, K, BM, BN, BK, S - 1, nk)\n",
     "        gm, gn, KT = sizes_and_requirements(em, M, N, K, BM, BN, BK, S - 1, nk)\n"
     "        if is_sym(M):\n"
     "            em.require(\"%s %% 8 == 0 && %s >= 8\" % (M, M))\n"
     "        else:\n"
     "            assert M % 8 == 0\n"),
    ("sm_ty_a = memref_ty([S, BM, BK], dt, WG)", "sm_ty_a = memref_ty([S, BK, BM], dt, WG)"),
    ("""    a_copies = []
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
""", """    a_copies = []
    mchunks = BM // 8
    assert mchunks in (4, 8, 16) and nk

    def swz_t(row):
        # A's [k][m] tile: conflict-free ldmatrix .trans phases (8 consecutive k-rows, one m-chunk)
        if mchunks == 4:
            return em.band(em.shr(row, 1), 3)
        return em.band(row, 7)
    if masked:
        m_last8 = sval(em, "%s - 8" % M if is_sym(M) else M - 8)
    assert (BK * mchunks) % T == 0 and (BK * nchunks) % T == 0
    for i in range(BK * mchunks // T):
        q = em.add(tid, i * T)
        r = em.div(q, mchunks)
        c = em.rem(q, mchunks)
        dcol = em.mul(em.xor(c, swz_t(r)), 8)
        gcol = em.add(m0, em.mul(c, 8))
        if masked:
            gcol = em.minu(gcol, m_last8)
        a_copies.append((r, dcol, gcol))
"""),
    ("""        for (r, dcol, grow, gcol) in a_copies:
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.add(k0, gcol))),""",
     """        for (r, dcol, gcol) in a_copies:
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                A.at(em.v(em.add(k0, r)), em.v(gcol)),"""),
    ("""        for (r, dcol, grow, gcol) in a_copies:
            kc = em.add(k0, gcol)
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.minu(kc, k_last8))), sA, em.v(stage), em.v(r), em.v(dcol), size(kc),""",
     """        for (r, dcol, gcol) in a_copies:
            kc = em.add(k0, r)
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                A.at(em.v(em.minu(kc, k_last)), em.v(gcol)), sA, em.v(stage), em.v(r), em.v(dcol), size(kc),"""),
    ("""    a_col = [em.mul(em.xor(em.add(a_hi, 2 * kk), a_swz), 8) for kk in range(BK // 16)]
""", """    at_krow = em.add(em.band(lane, 7), em.mul(a_hi, 8))
    at_mc = em.band(em.shr(lane, 3), 1)
    at_swz = swz_t(em.band(lane, 7))     # == k-row % 8 (and (k-row >> 1) % 4)
    at_krows = [em.add(at_krow, 16 * kk) for kk in range(BK // 16)]
    at_col = [em.mul(em.xor(em.add(em.add(em.div(wm0, 8), 2 * mi), at_mc), at_swz), 8) for mi in range(MI)]
"""),
    ("    a_rows = [em.add(a_row, 16 * mi) for mi in range(MI)]\n", ""),
    ("""        "smem: XOR-swizzled 16-byte chunks (A: chunk ^ %s, B: chunk ^ (k %% 8)), conflict-free ldmatrix" % (
            "((row >> 1) & 3)" if kchunks == 4 else "(row & 7)"),""",
     """        "smem: XOR-swizzled 16-byte chunks (A [k][m]: chunk ^ %s, B: chunk ^ (k %% 8)), conflict-free ldmatrix"
        " .trans" % ("((k >> 1) & 3)" if mchunks == 4 else "(k & 7)"),"""),
    ("""        afr = [em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = false} : %s -> vector<4x2x%s>" % (
            sA, st, a_rows[mi], em.v(a_col[kk]), sm_ty_a, dt), "fa") for mi in range(MI)]""",
     """        afr = [em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = true} : %s -> vector<4x2x%s>" % (
            sA, st, at_krows[kk], em.v(at_col[mi]), sm_ty_a, dt), "fa") for mi in range(MI)]"""),
]
def mma_at_generator():
    """gen_gemm.gen_bf16_mma with A read [K, M] (None, and a warning, where
    an edit does not apply)"""
    return _edited(gen_gemm.gen_bf16_mma, _AT_EDITS, "gen_bf16_mma_at", "16-bit A [K, M] mma entries")


# ---- mma.sync with the C tile staged in shared memory ------------------------
#
# gen_gemm.py's fragment epilogue stores each thread's bf16 pairs straight
# from the accumulators: 4-byte stores, eight rows per warp instruction, 16
# bytes per row. Where the output dominates (Q K^T at T = 2048: 134 MB of
# scores from 17 MB of operands) that ran at about 1 TB/s (session 25: 0.134
# ms against cuBLAS's 0.049). This variant ends the kernel by writing the
# epilogue's 16-bit values into a padded [BM][BN + 8] tile in shared memory
# (the pipeline's, free after the last k-tile; 4-byte stores, conflict-free:
# row stride 36 words), then stores the tile row by row with 16-byte vector
# stores (consecutive threads, consecutive chunks; rows past M and column
# chunks past N skipped; N is a multiple of 8). Made by one more edit of
# gen_gemm.gen_bf16_mma's source (plain or with B [N, K]).
_SEP_EDITS = [
    ("""    fragment_epilogue(em, helper, C, bias, res, nb, row_base, [16 * mi for mi in range(MI)],
                      col_base, [8 * ni for ni in range(NI)], pair,
                      m_bound=sval(em, M) if masked else None,
                      n_bound=sval(em, N) if nk else None)""",
     """    _smem_epilogue(em, cfg, C, smem_v, tid, m0, n0, wm0, wn0, lane, BM, BN, T, MI, NI, pair, M, N, masked, nk,
                   C.dt)"""),
]


def _smem_epilogue(em, cfg, C, smem_v, tid, m0, n0, wm0, wn0, lane, BM, BN, T, MI, NI, pair, M, N, masked, nk, dt):
    assert cfg["epilogue"].startswith("bmm_") and len(cfg["b"]) == 1
    epfn = gen_gemm.EPILOGUES[cfg["epilogue"]][0]
    LD = BN + 8
    sc_ty = gen_gemm.memref_ty([BM, LD], dt, WG)
    em.comment("C tile staged in shared memory [%d][%d + 8] (%s), then 16-byte row stores" % (BM, BN, dt))
    em.emit("gpu.barrier")
    sC = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sc_ty), "sC")
    g = em.shr(lane, 2)
    t2 = em.mul(em.band(lane, 3), 2)
    for mi in range(MI):
        for ni in range(NI):
            for h in range(2):
                r = em.add(em.add(wm0, g), 16 * mi + 8 * h)
                c = em.add(em.add(wn0, t2), 8 * ni)
                y = epfn(em, "vector<2xf32>", [pair(0, mi, ni, h)], None, None)
                yb = em.op("arith.truncf %s : vector<2xf32> to vector<2x%s>" % (y, dt), "o")
                em.emit("vector.store %s, %s[%s, %s] : %s, vector<2x%s>" % (yb, sC, em.v(r), em.v(c), sc_ty, dt))
    em.emit("gpu.barrier")
    cpr = BN // 8
    assert (BM * cpr) % T == 0
    m_n = em.v(gen_gemm.sval(em, M))
    n_n = em.v(gen_gemm.sval(em, N))
    for i in range(BM * cpr // T):
        q = em.add(tid, i * T)
        r = em.div(q, cpr)
        c = em.mul(em.rem(q, cpr), 8)
        v = em.op("vector.load %s[%s, %s] : %s, vector<8x%s>" % (sC, em.v(r), em.v(c), sc_ty, dt), "o")
        grow = em.add(m0, r)
        gcol = em.add(n0, c)
        conds = []
        if masked:
            conds.append(em.op("arith.cmpi ult, %s, %s : index" % (em.v(grow), m_n), "okr"))
        if nk:
            conds.append(em.op("arith.cmpi ult, %s, %s : index" % (em.v(gcol), n_n), "okc"))
        st = "vector.store %s, %s : %s, vector<8x%s>" % (v, C.at(em.v(grow), em.v(gcol)), C.ty, dt)
        if conds:
            ok = conds[0] if len(conds) == 1 else em.op("arith.andi %s, %s : i1" % tuple(conds), "ok")
            em.emit("scf.if %s {" % ok)
            em.indent += 2
            em.emit(st)
            em.indent -= 2
            em.emit("}")
        else:
            em.emit(st)


def mma_generator(nk, sep):
    """gen_gemm.gen_bf16_mma, with B read [N, K] (nk) and/or the C tile
    staged in shared memory (sep); None (and a warning) where an edit does
    not apply"""
    return _edited(gen_gemm.gen_bf16_mma, (_NK_EDITS if nk else []) + (_SEP_EDITS if sep else []),
                   "gen_bf16_mma_v%d%d" % (nk, sep), "such mma variant", {"_smem_epilogue": _smem_epilogue})


class _NkGenerate:
    """While active, gen_gemm.generate sends a bf16_mma config with b_nk to
    the variant above (generate_alternatives calls gen_gemm.generate)."""

    def __enter__(self):
        self.saved = gen_gemm.generate
        saved, nkgen = self.saved, mma_nk_generator()

        def generate(cfg):
            if cfg.get("smem_ep") and cfg["kind"] == "bf16_mma":
                cfg.setdefault("assumptions", ["B stored [N, K], read by ldmatrix without .trans" if cfg.get("b_nk")
                                               else "B stored [K, N]",
                                               "C tile staged in shared memory, stored in 16-byte rows",
                                               "buffers 16-byte aligned (contract guarantee)"])
                return mma_generator(bool(cfg.get("b_nk")), True)(cfg)
            if cfg.get("a_km") and cfg["kind"] == "bf16_mma":
                cfg.setdefault("assumptions", ["A stored [K, M], staged [k][m], read by ldmatrix .trans",
                                               "buffers 16-byte aligned (contract guarantee)"])
                return mma_at_generator()(cfg)
            if cfg.get("b_nk") and cfg["kind"] == "bf16_mma":
                cfg.setdefault("assumptions", ["B stored [N, K], read by ldmatrix without .trans",
                                               "buffers 16-byte aligned (contract guarantee)"])
                return nkgen(cfg)
            if cfg.get("b_nk") and cfg["kind"] == "bf16_wgmma":
                cfg.setdefault("assumptions", ["B stored [N, K] (K-major), read by wgmma without transposition",
                                               "sm_90a (wgmma); the dynamic shared memory window can be aligned "
                                               "to 1024 B (1 KiB slack reserved)",
                                               "buffers 16-byte aligned (contract guarantee)"])
                return wgmma_nk_generator()(cfg)
            if cfg["kind"] == "bf16_wgmma":
                cfg.setdefault("assumptions", ["sm_90a (wgmma); the dynamic shared memory window can be aligned "
                                               "to 1024 B (1 KiB slack reserved)",
                                               "buffers 16-byte aligned (contract guarantee)"])
                return gen_gemm.gen_bf16_wgmma(cfg)
            return saved(cfg)
        gen_gemm.generate = generate
        return self

    def __exit__(self, *exc):
        gen_gemm.generate = self.saved


class _GenAlternative:
    """While active, gen_gemm.generate sends a config of kind "bmm_gen" to
    gen_kernel (the general kernel as a tiling alternative of a fast entry:
    generate_alternatives() takes its body, launch and shared memory; the
    batch index is its own gpu.block_id z, so its grid is (tiles, 1, 1)
    like gen_gemm's, and fast_kernel() moves B to grid.z for all)."""

    def __init__(self, form, dt, sym, d):
        self.args = (form, dt, sym, d)

    def __enter__(self):
        self.saved = gen_gemm.generate
        saved, args = self.saved, self.args

        def generate(cfg):
            if cfg["kind"] not in ("bmm_gen", "bmm_genpf", "bmm_gen2", "bmm_dot", "bmm_x3", "bmm_x3wg"):
                return saved(cfg)
            ins, outs = gen_gemm.parse_signature(cfg["signature"])
            parts = cfg["_parts"]
            if cfg["kind"] == "bmm_dot":
                dot_kernel(*args, parts=parts)
            elif cfg["kind"] == "bmm_x3":
                x3_kernel(*args, parts=parts, **cfg["g2"])
            elif cfg["kind"] == "bmm_x3wg":
                x3wg_kernel(*args, parts=parts, **cfg["g2"])
            elif cfg["kind"] == "bmm_gen2":
                gen2_kernel(*args, parts=parts, **cfg["g2"])
            else:
                gen_kernel(*args, parts=parts, pf=cfg["kind"] == "bmm_genpf", ks=cfg.get("gen_ks", 1))
            parts.update(ins=ins, outs=outs, names=["%%arg%d" % i for i in range(len(ins) + len(outs))],
                         kname=cfg["sg"] + "_" + cfg["kind"])
            return parts["kname"], "", parts["launch"]
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


FAST_FORMS = {"f32": ["nn", "nt", "ntm", "nts", "tmpv"], "bf16": ["nn", "nt", "ntm", "nts", "tmpv", "tn"],
              "f16": ["nn", "nt", "ntm", "nts", "tmpv", "tn"]}


def fast_forms(dt):
    """the forms with a gen_gemm.py kernel in dt (16-bit B [N, K]: the mma
    variant, when it can be made)"""
    if dt != "f32" and mma_nk_generator() is None:
        return ["nn", "tmpv"] + (["tn"] if mma_at_generator() is not None else [])
    if dt != "f32" and mma_at_generator() is None:
        return [f for f in FAST_FORMS[dt] if f != "tn"]
    return FAST_FORMS[dt]
# gen_gemm.py's tilings: f32 the MiniGPT QKV GEMM's 64 x 128 x 8 (masked
# M, N, K), with its small-M 32 x 64 split-4 alternative; 16-bit the MLP
# down-projection's mma.sync 128 x 64 x 64.
F32_CFG = dict(kind="f32_simt", BM=64, BN=128, BK=8, group_m=8, mask_nk=4)
F32_SMALL = (dict(BM=32, BN=64, BK=8, KS=4, group_m=8), ("WX", "minctasm"), 1024)
MMA_CFG = dict(kind="bf16_mma", BM=128, BN=64, BK=64, WM=32, WN=32, stages=3, group_m=8, mask_nk=8)
MMA_SMALL = (dict(BM=32, BN=64, BK=64, WM=16, WN=16, stages=4, group_m=8), ("minctasm",), 256)
# More tilings (session 26), each (overrides of the default tiling, the
# keys it drops, where admitted: an expression over the roles M, N, K, or
# None: wherever its own requirements hold). EXPLORE (run 1) and
# EXPLORE_RUN2 (run 2) hold the tilings bench/table/bmm_stage.py times
# besides the entries' (BMM_EXPLORE); ship_tilings() and gen_tilings() those
# the entries offer (bench/NOTES.md, session 26: what was measured).
_MMA_DROP = ("minctasm",)
_WG_DROP = ("minctasm", "BM", "BK", "WM", "WN", "mask_nk")
_SIMT_DROP = ("WX", "minctasm")
TILINGS = {
    "mma128": (dict(BM=128, BN=128, BK=64, WM=64, WN=32, stages=3), _MMA_DROP, None),
    "mma128k32": (dict(BM=128, BN=128, BK=32, WM=64, WN=32, stages=4), _MMA_DROP, None),
    "wg128": (dict(kind="bf16_wgmma", WGS=2, BN=128, stages=4), _WG_DROP, None),
    "wg64": (dict(kind="bf16_wgmma", WGS=1, BN=128, stages=4), _WG_DROP, None),
    "wg256": (dict(kind="bf16_wgmma", WGS=2, BN=256, stages=4), _WG_DROP, None),
    "sep": (dict(smem_ep=1), (), None),
    "sep128": (dict(BM=128, BN=128, BK=64, WM=64, WN=32, stages=3, smem_ep=1), _MMA_DROP, None),
    "sepsmall": (dict(BM=64, BN=64, BK=64, WM=32, WN=32, stages=3, smem_ep=1), _MMA_DROP, None),
    "sep2": (dict(stages=2, smem_ep=1), _MMA_DROP, None),
    "sep128s2": (dict(BM=128, BN=128, BK=64, WM=64, WN=32, stages=2, smem_ep=1), _MMA_DROP, None),
    "simt64": (dict(BM=64, BN=64, BK=8, KS=2), _SIMT_DROP, None),
    "simt64n": (dict(BM=64, BN=64, BK=8, KS=2), _SIMT_DROP, "N <= 128"),
    "simt64k4": (dict(BM=64, BN=64, BK=8, KS=4), _SIMT_DROP, None),
    "gen": (dict(kind="bmm_gen"), (), "N % 4 == 0 && K % 4 == 0"),
    "genpf": (dict(kind="bmm_genpf"), (), "N % 4 == 0 && K % 4 == 0"),
    # session 27: gen2_kernel's split-K tiling inside a fast entry (a small
    # M with a long K), and dot_kernel (Q K^T: a small M x N with a long K,
    # the held-out T = 8, d = 1536)
    "g2s16": (dict(kind="bmm_gen2", g2=GEN2_TILINGS["s16x16"][0]), (), GEN2_TILINGS["s16x16"][1]),
    "g2dot": (dict(kind="bmm_dot"), (), GEN2_TILINGS["dot"][1]),
}
EXPLORE = {"f32": ["simt64", "simt64k4", "gen", "genpf"],
           "16": ["mma128", "mma128k32", "wg128", "wg64", "wg256"]}
EXPLORE_RUN2 = {"f32": [], "16": ["sep", "sep128", "sepsmall", "wg64", "wg256"]}


def gen_tilings(form, dt, key):
    """the k-slice counts a general-kernel entry times (None: the one
    kernel): f32 P V (N the head size: a small grid), 1 and 2"""
    if dt == "f32" and form in ("nn", "tmpv") and key in ("mk", "mk-h4"):
        return [1, 2]
    return None


def gen2_tilings(form, dt, key):
    """the gen2_kernel tilings a general entry offers besides the general
    kernel (session 27, bench/NOTES.md): every general entry but those of
    the unit-dimension and T = d keys (the general entry is what odd N or K
    get, in 16 bits too: Q K^T at an odd T; and the only kernel of A^T B,
    of f32 torch-mlir scores and of the keys with the batch equal to the
    rows). None: the general kernel alone."""
    if key in UNIT_KEYS or (key == "mnk" and form in ("ntm", "nts", "tms", "tmpv")):
        return None   # T = 1 (the vec kernel); T = d (small sizes: the general kernel alone, the table's size)
    # the 64 x 64 two-slice tiling where it was measured to win (f32, A^T
    # B); the split-K tiling where M is free of K (not P V's M = K = T);
    # lanes along k where both operands are read along k (Q K^T)
    return ["g128"] + (["g64x2"] if dt == "f32" or form == "tn" else []) + (
        [] if "k" in key else ["s16x16"]) + (["dot"] if form in ("nt", "ntm", "nts") and "k" not in key else [])


# The sm_90a exact-f32 entries (session 28; *-0x3wg, archs sm_90a): (form,
# size pattern, head size) -> where the entry admits (an expression over M,
# N, K: the complement of the key's f32 SIMT entry, N and K multiples of 4,
# so that entry keeps its sizes; None: wherever the general entry does).
# Each offers the general entry's alternatives and x3wg_kernel's tilings
# (X3WG_TILINGS): the held-out f32 cases of bench/NOTES.md session 28.
X3WG_KEYS = {("nn", "mk", None): "N % 4 != 0 || K % 4 != 0", ("tn", "any", None): None, ("tms", "mn", 64): None}
X3WG_TILINGS = ["x3wg", "x3wgn64", "x3wg2"]
# Per key (session 28, helper BMMF32B, bench/NOTES.md): X3WG_GEN2, the gen2
# tilings the sm_90a entry offers instead of gen2_tilings' (nn-mk: none;
# g128 and g64x2 were never the fastest there once x3wg was: 018, 051, 011,
# 021), and X3WG_EXTRA, x3wg tilings after X3WG_TILINGS (nn-mk: k-tile kt +
# 2's loads in flight, 018 1.1657 -> 1.0454 ms, 021 0.0403 -> 0.0330, 011
# 0.0184 -> 0.0168). At most 7 alternatives in all: one require line each
# plus the entry's own (llm_client/tune.h: LF_TUNE_MAX_REQUIRES 8).
X3WG_GEN2 = {("nn", "mk", None): []}
X3WG_EXTRA = {("nn", "mk", None): ["x3wgp", "x3wgn64p"]}
# Session 29 (helper F32BMM, bench/NOTES.md): two more keys, Q K^T at an
# odd T (nt-mn; seed 23's 007, T = 1721, d = 64: the general entry's
# CUDA-core kernels at 1.41x torch.compile) and torch-mlir's P V at an odd
# T (tmpv-mk; seed 23's 020, T = 677: 1.11x), each with its own x3wg
# tilings (X3WG_SET, instead of X3WG_TILINGS) and no gen2 tiling (slower at
# 007 and 020). nt-mn's entry leaves the small scores (M * N <= 16384: T <=
# 128, where the general entry's split-K and lanes-along-k tilings are) to
# the general entry; its tilings store C in rows through shared memory (SE:
# 007 0.4865 -> 0.2726 ms). nn-mk's x3wg, x3wgn64 and x3wgn64p became
# x3wgn64g, x3wgn64pk2 and x3wgn64pg (G, LF, KW: 011 0.0168 -> 0.0131 ms,
# 016 0.0132 -> 0.0116, 021 0.0329 -> 0.0307; x3wg was nowhere the fastest
# once x3wgp was); x3wg2 and x3wgp (the 051 and 018 winners) stay.
X3WG_KEYS.update({("nt", "mn", None): "(N % 4 != 0 || K % 4 != 0) && M * N > 16384",
                  ("tmpv", "mk", None): "N % 4 != 0 || K % 4 != 0"})
X3WG_GEN2.update({("nt", "mn", None): [], ("tmpv", "mk", None): []})
X3WG_SET = {("nt", "mn", None): ["x3wgn64pgs", "x3wg2n64pgs", "x3wgpgs"],
            ("tmpv", "mk", None): ["x3wgn64pk2", "x3wgn64k2", "x3wgn64pg", "x3wgn64g"],
            ("nn", "mk", None): ["x3wgn64g", "x3wgn64pk2", "x3wg2"]}
X3WG_EXTRA[("nn", "mk", None)] = ["x3wgp", "x3wgn64pg"]


def ship_tilings(form, dt, key):
    """the extra tilings an entry offers (session 26, bench/NOTES.md): in
    16 bits the staged-C epilogue at the default tile for the scores Q K^T
    (B [N, K], M = N = T: the output is most of the bytes); in f32 the 64 x
    64 split-2 SIMT tiling where N <= 128 (P V: N the head size). The
    staged-C 128 x 128 tiling ("sep128") was faster still at T = 2048 (H200:
    0.0873 against 0.0966 ms, bf16) but adds 65 KB to each of the 10 entries;
    left out while the repository's size is tight (bench/NOTES.md)."""
    if dt != "f32":
        if form in ("nt", "ntm", "nts") and key == "mn":
            return ["sep"]
        return []
    if form in ("nn", "tmpv"):
        return ["simt64n"] + (["g2s16"] if key == "any" else [])
    if form in ("nt", "ntm", "nts") and key in ("any", "mn"):
        return ["g2dot"]
    return []


def fast_kernel(form, dt, sym, d=None, tilings=None, gen_ks=None):
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
    # gen_gemm's 2-D views: A (r = m, c = k; a_km: r = k, c = m), B (r = k, c = n; b_nk: r = n, c = k), C (r = m, c = n)
    bnk = [x for x in role_ix["b"][1] if x in "kn"] == ["n", "k"]
    akm = [x for x in role_ix["a"][1] if x in "mk"] == ["k", "m"]   # A^T B (16-bit: mma_at_generator)
    assert akm or [x for x in role_ix["a"][1] if x in "mk"] == ["m", "k"]
    assert not (akm and (bnk or dt == "f32"))
    for role, (nm, ix) in role_ix.items():
        if role == "a":
            tr = {"k": "r", "m": "c"} if akm else {"m": "r", "k": "c"}
        elif role == "b":
            tr = {"n": "r", "k": "c"} if bnk else {"k": "r", "n": "c"}
        else:
            tr = {"m": "r", "n": "c"}
        # (a_km: A's view keeps the shape [M, K] that gen_gemm.operands checks;
        # the A [K, M] kernel indexes it at (k, m): r = k, c = m)
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
    if akm:
        base["a_km"] = True
    alt = {k: v for k, v in base.items() if k not in small[1]}
    alt.update(small[0])
    alts = [(base, None), (alt, "%s <= %d" % (sym["M"], small[2]))]
    if gen_ks:   # the general kernel alone, in these k-slice counts (a 9gen entry)
        alts = [(dict(base, kind="bmm_gen", gen_ks=k), None) for k in gen_ks]
    if tilings is None:
        tilings = []
    for t in tilings:
        over, drop, admit = TILINGS[t]
        a = {k: v for k, v in base.items() if k not in drop}
        a.update(over)
        if admit:
            admit = re.sub(r"\b[MNK]\b", lambda m: sym[m.group(0)], admit)
        alts.append((a, admit))
    with _Batched(layouts), _NkGenerate(), _GenAlternative(form, dt, sym, d):
        _, text, _ = gen_gemm.generate_alternatives(alts)
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
    want = sorted(set(v for v in sizes.values() if v != 1))   # a unit dimension is no pattern size

    def pick(groups):
        hit = [g for g in groups if g.get("class") == "contraction" and
               sorted(g["pattern_sizes"].values()) == want]
        return hit[0] if len(hit) == 1 else None
    return pick


def _render(form, dt, sizes, kernel, d=None, key=None):
    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: 1 if v == 1 else by_value[v] for r, v in sizes.items()}
        # the kernel's argument order must be the subgraph's
        want = [[sizes[x] if isinstance(x, str) else x for x in shape] for _, shape, _ in form_args(form)]
        have = [x["shape"] for x in g["inputs"] + g["outputs"]]
        assert want == have, (form, want, have)
        if kernel == "vec":
            text = vec_kernel(form, dt, sym, d)
        elif kernel == "x3wg":
            text = gen_alts_kernel(form, dt, sym, d, X3WG_GEN2.get((form, key, d), gen2_tilings(form, dt, key)) +
                                   X3WG_SET.get((form, key, d), X3WG_TILINGS) + X3WG_EXTRA.get((form, key, d), []),
                                   ks=gen_tilings(form, dt, key), admit_all=X3WG_KEYS[(form, key, d)])
        elif kernel == "gen" and gen2_tilings(form, dt, key):
            text = gen_alts_kernel(form, dt, sym, d, gen2_tilings(form, dt, key), ks=gen_tilings(form, dt, key))
        elif kernel == "gen" and gen_tilings(form, dt, key):
            text = fast_kernel(form, dt, sym, d, gen_ks=gen_tilings(form, dt, key))
        elif kernel == "gen":
            text = gen_kernel(form, dt, sym, d)
        else:
            text = fast_kernel(form, dt, sym, d, tilings=ship_tilings(form, dt, key))
        return text, [None] * len(ps)
    return render


def entries_spec():
    """(name, form, dtype, size pattern, kernel, d, example sizes B M N K)"""
    out = []

    def kernels(form, dt, key, d=None):
        # the sm_90a exact-f32 entry first where there is one (X3WG_KEYS)
        x3 = ["x3wg"] if dt == "f32" and (form, key, d) in X3WG_KEYS else []
        if key in UNIT_KEYS:
            return ["vec"]
        if key == "mnk" and form in ("ntm", "nts", "tms", "tmpv"):
            return ["gen"]   # T = d: small sizes; the general kernel alone (the table's size)
        if key in BATCH_KEYS:
            # T = B: small sizes; the general kernels (16-bit A^T B at B = M:
            # the A [K, M] mma.sync entry too, session 29)
            return ["gen"] + (["fast"] if form == "tn" and form in fast_forms(dt) else [])
        return x3 + ["gen"] + (["fast"] if form in fast_forms(dt) else [])
    for dt in DTYPES:
        for form in ("nn", "nt", "ntm", "tn"):
            for key in FORM_SHAPES[form]:
                for k in kernels(form, dt, key):
                    out.append((form, dt, key, k, None, SHAPES[key]))
        for d in SCALES:
            # scores: B = heads (x batch), M = N = T, K = d; T = d (equal
            # sizes: another key); T = 1 (M = N = 1)
            for form in ("nts", "tms"):
                for key, shape in (("mn", (12, 200, 200, d)), ("mnk", (12, d, d, d)), ("mn1", (12, 1, 1, d))):
                    for k in kernels(form, dt, key, d):
                        out.append((form, dt, key, k, d, shape))
        # att @ v: B = heads, M = K = T, N = d; T = d; T = 1
        for key, shape in (("mk", (12, 200, 72, 200)), ("mnk", (12, 72, 72, 72)), ("mk1", (12, 1, 72, 1))):
            for k in kernels("tmpv", dt, key):
                out.append(("tmpv", dt, key, k, None, shape))
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
                                 {"gen": "9gen", "vec": "5vec", "x3wg": "0x3wg"}.get(
                                     kernel, "1simt" if dt == "f32" else "1mma"))
        out.append(dict(
            name="bmm-any-" + tag,
            example=model_text(form, dt, B, M, N, K, d),
            pick=_pick(sizes),
            render=_render(form, dt, sizes, kernel, d, key),
            archs=["sm_90a"] if kernel == "x3wg" else ARCHS,
            source="kernels/table/bmm_any.py %s %s %s (%s kernel; from bmm_any.model_text at B %d, M %d, N %d, K %d)"
                   % (form, dt, key, "general SIMT" if kernel == "gen" else "unit-dimension" if kernel == "vec" else
                      "general SIMT and 3xTF32 wgmma" if kernel == "x3wg" else
                      "gen_gemm.py f32_simt" if dt == "f32" else "gen_gemm.py bf16_mma", B, M, N, K)))
    return out
