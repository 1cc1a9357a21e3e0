#!/usr/bin/env python3
"""bmm16_any.py - the table's 16-bit batched-GEMM templates on tensor cores
for the held-out shapes where bmm_any.py's entries lost to torch.compile
(issue 15 point 7, session 28): Q K^T with a short depth (the held-out
046_bmm_nt_r1024_bf16 and 005_bmm_nt_r135_bf16: 1.46x and 1.16x
torch.compile's time) and A^T B with few rows and a long depth
(022_bmm_tn_r16_bf16: 1.44x).

kernels/table/build.py imports this module (SPEC_MODULES) and writes one
entry per template that `templates()` yields, in bf16 and f16:

  0bmm16-nt-mn-<dt>   bmm_any.py's form `nt` (linalg.transpose [0, 2, 1] of
                      B [B, N, K] feeding linalg.batch_matmul: S[b] = Q[b] @
                      K[b]^T) at the scores' size pattern M = N = T (key
                      `mn`); K % 16 == 0, K <= 128, 16 <= T <= 2048
                      (QK_ADMIT: the sizes measured);
  0bmm16-tn-any-<dt>  the form `tn` (A [B, K, M] read transposed) with all
                      four sizes distinct (key `any`); M % 8 == 0, M <= 16.

The file names start with `0bmm16-`, so that at the sizes these entries
admit they answer before bmm_any.py's `bmm-any-*` entries of the same key
(docs/pattern-table.md: same number of fixed sizes, then file name order);
where their requirements refuse the sizes, bmm_any.py's entries answer as
before.

The Q K^T kernel (qk_kernel): the depth K is short, so a CTA holds a whole
BT x K slab of A and of B in shared memory and its output tile is the bulk
of its traffic (at T = 1024, d = 64 the output is 64 MB of the 72 MB
moved). CTAs are persistent: a CTA walks the output tiles t = pid, pid +
grid, ... and, before it multiplies tile t, it has issued the cp.async
loads of tile t + grid into the other of two stages, so the loads of the
next tile are in flight while this one is multiplied and stored. Products
on mma.sync m16n8k16 (f32 accumulation; A and B [N, K] read by ldmatrix
without .trans, rows padded by 8 elements: conflict-free), the tile rounded
once to 16 bits and staged in shared memory, then stored in row order:
16-byte stores where N % 8 == 0 (VEC 8), 2-byte stores otherwise (VEC 1,
any N). Rows or columns past M or N are zero-filled (nothing read) and
never stored. The grid is the CTAs the H100's / H200's 132 SMs hold at once
(fewer for the 64 x 64 tiles where there are fewer tiles); CTAs past the
tile count exit at once. The A^T B kernel: tn_kernel below.

Tilings (tune knob TILE; the first admitted value is what a build without
a GPU uses): ALTS and TN_ALTS.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
import bmm_any  # noqa: E402  (read-only: the forms, models and pattern picks)
import gen_gemm  # noqa: E402  (read-only: the emitter and the mma.sync helper)

ARCHS = ["sm_80", "sm_90", "sm_90a"]   # mma.sync and cp.async: sm_80 and later
WG = gen_gemm.WG
NSM = 132          # the H100's and H200's SMs: the persistent grid's cap
KMAX = 128         # the whole depth in shared memory (two stages)
SMEM_MAX = 200704  # dynamic shared memory a template may ask (of the 227 KB an H100 / H200 CTA may have)
PAD = 8            # elements of padding per shared row (ldmatrix: conflict-free)

# TILE value -> (BT: the square output tile (or BTM x BTN), warps over rows x
# columns, VEC: the elements per global store, CPS: CTAs per SM at K <= 64
# (at K = 128 half as many fit), the persistent grid's cap being NSM * CPS).
# Measured on the H200 (bench/table/bmm16-device.sh, 2026-11-25, run 2; ms,
# the best of the entry before in brackets): T = 1024, d = 64 (046) TILE 0
# 0.0324 (0.0395); T = 512, d = 64 TILE 0 0.0126 (0.0148); T = 2048, d =
# 128 TILE 0 0.0940 (0.0957); T = 512, d = 96 TILE 0 / 300 0.0165 (0.0176);
# T = 128 (f16) TILE 200 0.0062 (0.0065); T = 135 (005: N odd, only the
# 2-byte stores) TILE 200 0.0068 (0.0147); T = 55 TILE 200 0.0057 (0.0088);
# T = 16 TILE 100 0.0052 (0.0053). Measured and not shipped (never the
# fastest): 128 x 256 tiles of 16 or 8 warps (0.0354, 0.0348 at 046), 256 x
# 128 of 16 warps (0.0355), 64 x 128 of 8 warps at 3 CTAs per SM (0.0347).
ALTS = {
    0: dict(BT=128, WGM=2, WGN=4, VEC=8, CPS=2),
    100: dict(BT=64, WGM=2, WGN=2, VEC=8, CPS=4),
    200: dict(BT=64, WGM=2, WGN=2, VEC=1, CPS=4),
    300: dict(BT=128, WGM=2, WGN=4, VEC=1, CPS=2),
}

def _p(e):
    return "(%s)" % e


# where the Q K^T entries answer at all (the sizes measured, bench/NOTES.md
# session 28; bmm_any.py's entries answer elsewhere)
QK_ADMIT = "{M} >= 16 && {M} <= 2048"


def _bt(a):
    """(rows, columns) of a tiling's output tile"""
    return a.get("BTM", a.get("BT")), a.get("BTN", a.get("BT"))


def _tiles(sym, a):
    BTM, BTN = _bt(a)
    return "%s * ((%s + %d) / %d) * ((%s + %d) / %d)" % (sym["B"], sym["M"], BTM - 1, BTM, sym["N"], BTN - 1, BTN)


def _grid(sym, a):
    """the persistent grid: the CTAs the SMs hold at once, CPS per SM at K
    <= 64, half as many above (the stages grow with K); CTAs past the tile
    count exit at once"""
    if a["CPS"] == 1:
        return "%d" % NSM
    cap = "%d / (1 + %s / 65)" % (NSM * a["CPS"], sym["K"])    # K <= 128
    if _bt(a) != (64, 64):
        return cap
    # the small tiles (small products): no more CTAs than tiles
    t, c = _p(_tiles(sym, a)), _p(cap)
    return "(%s < %s) * %s + (%s >= %s) * %s" % (t, c, t, t, c, c)


def _smem(sym, a):
    BTM, BTN = _bt(a)
    return "%d * (%s + %d) + %d" % (2 * (BTM + BTN) * 2, sym["K"], PAD, BTM * (BTN + PAD) * 2)


def _pick_alt(expr_of, alts=None):
    """a placeholder expression choosing expr_of(alt) by TILE"""
    groups = {}
    for t, a in sorted((alts or ALTS).items()):
        groups.setdefault(expr_of(a), []).append(t)
    if len(groups) == 1:
        return next(iter(groups))
    return " + ".join("(%s) * %s" % (" || ".join("TILE == %d" % t for t in ts), _p(v)) for v, ts in groups.items())


def _body(em, a, dt, sym, arg, ty, smem_v, idx_of, sfx):
    (BTM, BTN), WGM, WGN, VEC = _bt(a), a["WGM"], a["WGN"], a["VEC"]
    # loop variables, one set per tiling (the tilings' bodies are sibling regions)
    CI, TT, ST, KS = ("%%%s_%s" % (x, sfx) for x in ("ci", "t", "st", "ks"))
    T = WGM * WGN * 32
    WTM, WTN = BTM // WGM, BTN // WGN
    MI, NI = WTM // 16, WTN // 8
    assert NI % 2 == 0 and BTM * 8 % T == 0 and BTN * 8 % T == 0
    Ms, Ns, Ks = sym["M"], sym["N"], sym["K"]
    em.comment("tiling %d x %d x K, %d warps (%d x %d, %d x %d each), 2 stages, VEC %d" % (
        BTM, BTN, WGM * WGN, WGM, WGN, WTM, WTN, VEC))
    tid = em.op("gpu.thread_id x", "tid")
    pid = em.op("gpu.block_id x", "pid")
    nprog = em.op("gpu.grid_dim x", "nprog")
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    wm0 = em.mul(em.div(warp, WGN), WTM)
    wn0 = em.mul(em.rem(warp, WGN), WTN)
    gn = em.symc("(%s + %d) / %d" % (Ns, BTN - 1, BTN))
    per_b = em.symc("((%s + %d) / %d) * ((%s + %d) / %d)" % (Ms, BTM - 1, BTM, Ns, BTN - 1, BTN))
    tiles = em.symc(_tiles(sym, a))
    M_v, N_v = em.symc(Ms), em.symc(Ns)
    M1, N1 = em.symc("%s - 1" % Ms), em.symc("%s - 1" % Ns)
    kc = em.symc("%s / 8" % Ks)            # 16-byte chunks per row
    k16 = em.symc("%s / 16" % Ks)          # k16 steps
    ncp = {"a": em.symc("%s * %d / %d" % (Ks, BTM, 8 * T)), "b": em.symc("%s * %d / %d" % (Ks, BTN, 8 * T))}
    sl_ty = {"a": "memref<2x%dx{{%s + %d}}x%s, %s>" % (BTM, Ks, PAD, dt, WG),
             "b": "memref<2x%dx{{%s + %d}}x%s, %s>" % (BTN, Ks, PAD, dt, WG)}
    sc_ty = "memref<%dx%dx%s, %s>" % (BTM, BTN + PAD, dt, WG)
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sl_ty["a"]), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (
        smem_v, em.symc("%d * (%s + %d)" % (2 * BTM * 2, Ks, PAD)), WG, sl_ty["b"]), "sB")
    sC = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (
        smem_v, em.symc("%d * (%s + %d)" % (2 * (BTM + BTN) * 2, Ks, PAD)), WG, sc_ty), "sC")

    def decode(t):
        b = em.div(t, per_b)
        r = em.rem(t, per_b)
        return b, em.mul(em.div(r, gn), BTM), em.mul(em.rem(r, gn), BTN)

    def index(role, b, m, n, k):
        env = {"b": b, "m": m, "n": n, "k": k}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

    def copy(role, b, o0, i, stage, valid):
        """copy i of this thread of operand role's BTM (a) or BTN (b) x K slab (rows o0..)"""
        q = em.add(tid, em.mul(i, T)) if not isinstance(i, int) else em.add(tid, i * T)
        r = em.div(q, kc)
        c8 = em.mul(em.rem(q, kc), 8)
        go = em.add(o0, r)
        bound, last = (M_v, M1) if role == "a" else (N_v, N1)
        ok = em.op("arith.cmpi ult, %s, %s : index" % (go, bound), "ok")
        if valid is not None:
            ok = em.op("arith.andi %s, %s : i1" % (ok, valid), "ok")
        n = em.op("arith.select %s, %s, %s : index" % (ok, em.idx(8), em.idx(0)), "n")
        goc = em.minu(go, last)
        src = index(role, b, goc if role == "a" else None, goc if role == "b" else None, c8)
        dst = sA if role == "a" else sB
        return em.op("nvgpu.device_async_copy %s[%s], %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
            arg[role], src, dst, em.v(stage), r, c8, n, ty[role], sl_ty[role]), "cp")

    def load(t, stage, valid):
        """the cp.async loads of tile t's A and B slabs into stage, one group"""
        b, m0, n0 = decode(t)
        tok = copy("a", b, m0, 0, stage, valid)
        for role, o0, lo in (("a", m0, 1), ("b", n0, 0)):
            em.emit("scf.for %s = %s to %s step %s {" % (CI, em.idx(lo), ncp[role], em.idx(1)))
            em.indent += 2
            copy(role, b, o0, CI, stage, valid)
            em.indent -= 2
            em.emit("}")
        return em.op("nvgpu.device_async_create_group %s" % tok, "grp")

    em.comment("prologue: tile pid's slabs into stage 0 (none past the tile count)")
    v0 = em.op("arith.cmpi ult, %s, %s : index" % (pid, tiles), "v0")
    grp = load(em.minu(pid, em.symc("%s - 1" % _tiles(sym, a))), 0, v0)
    acc_ty = "vector<4xf32>"
    zero = em.const("dense<0.000000e+00>", acc_ty, "zero4")
    l15 = em.band(lane, 15)
    a_kc = em.mul(em.shr(lane, 4), 8)
    b_row = em.add(em.band(lane, 7), em.mul(em.shr(lane, 4), 8))
    b_kc = em.mul(em.band(em.shr(lane, 3), 1), 8)
    a_rows = [em.add(em.add(wm0, 16 * mi), l15) for mi in range(MI)]
    b_rows = [em.add(em.add(wn0, 16 * nj), b_row) for nj in range(NI // 2)]
    g = em.shr(lane, 2)
    t2 = em.mul(em.band(lane, 3), 2)
    em.emit("%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (index) {" % (
        em.fresh("stl"), TT, pid, tiles, nprog, ST, em.idx(0)))
    em.indent += 2
    em.comment("tile t + grid's slabs into the other stage (read by every warp before the last barrier)")
    tn = em.add(TT, nprog)
    vn = em.op("arith.cmpi ult, %s, %s : index" % (tn, tiles), "vn")
    tnc = em.op("arith.select %s, %s, %s : index" % (vn, tn, TT), "tn")
    st1 = em.sub(1, ST)
    load(tnc, st1, vn)
    em.emit("nvgpu.device_async_wait %s {numGroups = 1 : i32}" % grp)
    em.emit("gpu.barrier")
    nacc = MI * NI
    res = em.fresh("acc")
    em.emit("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {" % (
        res, nacc, KS, em.idx(0), k16, em.idx(1), ", ".join("%%c%d_%d_%s = %s" % (i // NI, i % NI, sfx, zero)
                                                         for i in range(nacc)), ", ".join([acc_ty] * nacc)))
    em.indent += 2
    k0 = em.mul(KS, 16)
    acol = em.add(k0, a_kc)
    bcol = em.add(k0, b_kc)
    fa = [em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = false} : %s -> vector<4x2x%s>" % (
        sA, ST, a_rows[mi], acol, sl_ty["a"], dt), "fa") for mi in range(MI)]
    fb = []
    for nj in range(NI // 2):
        r4 = em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = false} : %s -> vector<4x2x%s>" % (
            sB, ST, b_rows[nj], bcol, sl_ty["b"], dt), "fb")
        for h in range(2):
            fb.append(em.op("vector.extract_strided_slice %s {offsets = [%d, 0], sizes = [2, 2], strides = [1, 1]} "
                            ": vector<4x2x%s> to vector<2x2x%s>" % (r4, 2 * h, dt, dt), "b"))
    outs = []
    for mi in range(MI):
        for ni in range(NI):
            outs.append(em.op("func.call @mma_%s(%s, %s, %%c%d_%d_%s) : (vector<4x2x%s>, vector<2x2x%s>, %s) -> %s" % (
                dt, fa[mi], fb[ni], mi, ni, sfx, dt, dt, acc_ty, acc_ty), "d"))
    em.emit("scf.yield %s : %s" % (", ".join(outs), ", ".join([acc_ty] * nacc)))
    em.indent -= 2
    em.emit("}")
    em.comment("the tile rounded once to %s into shared memory (free since the barrier above)" % dt)
    for mi in range(MI):
        for ni in range(NI):
            for h in range(2):
                v = em.op("vector.extract_strided_slice %s#%d {offsets = [%d], sizes = [2], strides = [1]} : "
                          "%s to vector<2xf32>" % (res, mi * NI + ni, 2 * h, acc_ty), "c")
                y = em.op("arith.truncf %s : vector<2xf32> to vector<2x%s>" % (v, dt), "y")
                em.emit("vector.store %s, %s[%s, %s] : %s, vector<2x%s>" % (
                    y, sC, em.add(em.add(wm0, g), 16 * mi + 8 * h), em.add(em.add(wn0, t2), 8 * ni), sc_ty, dt))
    em.emit("gpu.barrier")
    b, m0, n0 = decode(TT)
    per_row = BTN // VEC
    em.comment("the tile's rows to C, %d element(s) per store, in row order" % VEC)
    SI = "%%si_%s" % sfx
    em.emit("scf.for %s = %s to %s step %s {" % (SI, em.idx(0), em.idx(BTM * per_row), em.idx(T)))
    em.indent += 2
    if True:
        q = em.add(tid, SI)
        r = em.div(q, per_row)
        c = em.mul(em.rem(q, per_row), VEC)
        grow = em.add(m0, r)
        gcol = em.add(n0, c)
        okr = em.op("arith.cmpi ult, %s, %s : index" % (grow, M_v), "okr")
        okc = em.op("arith.cmpi ult, %s, %s : index" % (gcol, N_v), "okc")
        ok = em.op("arith.andi %s, %s : i1" % (okr, okc), "ok")
        if VEC == 1:
            x = em.op("memref.load %s[%s, %s] : %s" % (sC, r, c, sc_ty), "o")
        else:
            x = em.op("vector.load %s[%s, %s] : %s, vector<%dx%s>" % (sC, r, c, sc_ty, VEC, dt), "o")
        em.emit("scf.if %s {" % ok)
        em.indent += 2
        ix = index("c", b, grow, gcol, None)
        if VEC == 1:
            em.emit("memref.store %s, %s[%s] : %s" % (x, arg["c"], ix, ty["c"]))
        else:
            em.emit("vector.store %s, %s[%s] : %s, vector<%dx%s>" % (x, arg["c"], ix, ty["c"], VEC, dt))
        em.indent -= 2
        em.emit("}")
    em.indent -= 2
    em.emit("}")
    em.emit("scf.yield %s : index" % st1)
    em.indent -= 2
    em.emit("}")
    em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)


def _tile_chain(em, sel, alts, body):
    """Emits an scf.if chain on the TILE index `sel` over sorted(alts), with
    body(t) emitting tiling t (the last one is the final else); returns the
    sorted keys."""
    keys = sorted(alts)
    for j, t in enumerate(keys):
        if j < len(keys) - 1:
            em.emit("%%is%d = arith.cmpi eq, %s, %s : index" % (t, sel, em.idx(t)))
            em.emit("scf.if %%is%d {" % t)
            em.indent += 2
        body(t)
        if j < len(keys) - 1:
            em.indent -= 2
            em.emit("} else {")
            em.indent += 2
    for j in range(len(keys) - 1):
        em.indent -= 2
        em.emit("}")
    return keys


def qk_kernel(form, dt, sym, admit=None, alts=None):
    """the gpu.module text of the kernel for Q K^T (form nt or ntm) in dt
    (bf16, f16); sym maps the roles B, M, N, K to size symbols; admit:
    {TILE: an expression over the symbols or None}"""
    assert form in ("nt", "ntm") and dt in ("bf16", "f16")
    em = gen_gemm.Emitter()
    args = bmm_any.form_args(form)
    names = ["%%arg%d" % i for i in range(len(args))]
    ty = {role: "memref<%sx%s>" % ("x".join("{{%s}}" % sym[s] for s in shape), dt) for role, shape, _ in args}
    arg = {role: nm for (role, _, _), nm in zip(args, names)}
    idx_of = {role: ix for role, _, ix in args}
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sel = em.sym_idx("TILE", "TILE")
    alts = alts or ALTS
    keys = _tile_chain(em, sel, alts, lambda t: _body(em, alts[t], dt, sym, arg, ty, smem_v, idx_of, t))
    em.emit("gpu.return")
    Ks, Ns = sym["K"], sym["N"]
    reqs = ["%s %% 16 == 0 && %s <= %d" % (Ks, Ks, KMAX), "%s <= 65535" % sym["B"],
            QK_ADMIT.format(**sym)]
    per = []
    for t in keys:
        c = []
        if alts[t]["VEC"] > 1:
            c.append("%s %% %d == 0" % (Ns, alts[t]["VEC"]))
        T = alts[t]["WGM"] * alts[t]["WGN"] * 32
        step = max(16, max(8 * T // x for x in _bt(alts[t])))
        if step > 16:     # whole copies per thread
            c.append("%s %% %d == 0" % (Ks, step))
        if KMAX > 64 and _smem({"K": str(KMAX)}, alts[t]).count("*") and \
                eval(_smem({"K": str(KMAX)}, alts[t])) > SMEM_MAX:
            c.append("%s <= %d" % (_p(_smem(sym, alts[t])), SMEM_MAX))
        if admit and admit.get(t):
            c.append(_p(admit[t]))
        per.append("(TILE == %d%s)" % (t, "".join(" && " + x for x in c)))
    reqs.append(" || ".join(per))
    assert all(len(r) <= 512 for r in reqs)
    free = sorted(set(sym.values()), key=lambda s: int(s[1:]))
    lines = ["gpu.module @kernels {"]
    lines.append("  // Pattern-table template: kernels/table/bmm16_any.py %s %s (persistent mma.sync kernel, the whole"
                 % (form, dt))
    lines.append("  // depth in shared memory, next tile's slabs prefetched, C staged): C[b] = A[b] @ B[b]^T, B read")
    lines.append("  // [B,N,K]; B = %s, M = %s, N = %s, K = %s; M, N masked, K %% 16 == 0, K <= %d; f32 accumulation,"
                 % (sym["B"], sym["M"], Ns, Ks, KMAX))
    lines.append("  // one rounding at the store. TILE: " + "; ".join(
        "%d: %d x %d tile, %d threads, %d-element stores" % (
            t, _bt(a)[0], _bt(a)[1], a["WGM"] * a["WGN"] * 32, a["VEC"]) for t, a in sorted(alts.items())) + ".")
    lines += ["  // llm-fuse.template-size %s" % s for s in free]
    lines.append("  // llm-fuse.tune TILE = %s" % ", ".join(str(t) for t in keys))
    lines += ["  // llm-fuse.tune-require %s" % r for r in reqs]
    lines.append(gen_gemm.mma_helper(dt))
    sig = ", ".join("%s: %s" % (nm, ty[role]) for (role, _, _), nm in zip(args, names))
    block = _pick_alt(lambda a: str(a["WGM"] * a["WGN"] * 32), alts)
    minc = _pick_alt(lambda a: str(a["CPS"]), alts)
    lines.append("  gpu.func @bmm16(%s) kernel" % sig)
    lines.append("      attributes {known_block_size = array<i32: {{%s}}, 1, 1>," % block)
    grid = _pick_alt(lambda a: _grid(sym, a), alts)
    lines.append("                  known_grid_size = array<i32: {{%s}}, 1, 1>," % grid)
    lines.append("                  llm_fuse.dynamic_shared_memory = {{%s}} : i32, nvvm.minctasm = {{%s}} : i32} {"
                 % (_pick_alt(lambda a: _smem(sym, a), alts), minc))
    lines += em.body(4)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- A^T B at few rows and a long depth (tn_kernel) --------------------------
#
# The held-out 022_bmm_tn_r16_bf16: A [B, K, M] read transposed, B [B, K, N],
# M = 16 rows, K = 1024, N = 256 (bmm_any.py's general entry: 1.44x
# torch.compile's time). A CTA owns all M <= 16 rows and BN columns of one
# batch: it loads the whole K x M slab of A and K x BN slab of B with
# cp.async (one group, every load in flight at once), its KW warps take the
# k16 steps w, w + KW, ... on mma.sync (A and B through ldmatrix .trans, rows
# padded by 8 elements: conflict-free), and warp 0 adds the warps' 16 x BN
# blocks in warp order (deterministic) and stores them. Grid: B * N / BN CTAs.
# Requirements: M % 8 == 0 and M <= 16 (16-byte rows of A), N % BN == 0, K a
# multiple of the copies per thread, the slabs within shared memory.
# (BN columns per CTA, KW warps over k, G cp.async groups of K / G rows,
# the warps starting on group g while the later ones land). Measured on the
# H200 (run 2, ms; the entry before in brackets): 022 (B 8, M 16, N 256, K
# 1024) TILE 400 0.0082 (0.0124; torch eager 0.0081), 100 0.0089, 300
# 0.0092; M = 8, K = 512 TILE 400 0.0073 (0.0108); M = 16, N = 768, K = 2048
# TILE 300 0.0387 (0.0612; 400 needs more shared memory than K = 2048
# leaves). Not shipped (never the fastest): 16 columns x 8 warps in one
# group (0.0094 at 022), 16 x 16 warps in one or two groups (0.0092,
# 0.0091).
TN_ALTS = {
    100: dict(BN=32, KW=8, G=1),
    300: dict(BN=16, KW=8, G=4),
    400: dict(BN=32, KW=8, G=4),
}


def _tn_body(em, a, dt, sym, arg, ty, smem_v, idx_of, sfx):
    BN, KW, G = a["BN"], a["KW"], a["G"]
    T = KW * 32
    NI = BN // 8
    Ms, Ns, Ks = sym["M"], sym["N"], sym["K"]
    LA, LB = 16 + PAD, BN + PAD
    CI = "%%ci_%s" % sfx
    em.comment("tiling: all M <= 16 rows x %d columns, the whole K in shared memory, %d warps over the k16 steps"
               % (BN, KW))
    tid = em.op("gpu.thread_id x", "tid")
    pid = em.op("gpu.block_id x", "pid")
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    gn = em.symc("%s / %d" % (Ns, BN))
    b = em.div(pid, gn)
    n0 = em.mul(em.rem(pid, gn), BN)
    M_v = em.symc(Ms)
    sa_ty = "memref<{{%s}}x%dx%s, %s>" % (Ks, LA, dt, WG)
    sb_ty = "memref<{{%s}}x%dx%s, %s>" % (Ks, LB, dt, WG)
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sa_ty), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (
        smem_v, em.symc("%s * %d" % (Ks, LA * 2)), WG, sb_ty), "sB")

    def index(role, bb, m, n, k):
        env = {"b": bb, "m": m, "n": n, "k": k}
        return ", ".join(em.v(env[x]) for x in idx_of[role])

    def copy_a(i):
        q = em.add(tid, em.mul(i, T)) if not isinstance(i, int) else em.add(tid, i * T)
        r = em.div(q, 2)
        c8 = em.mul(em.rem(q, 2), 8)
        ok = em.op("arith.cmpi ult, %s, %s : index" % (c8, M_v), "ok")
        n = em.op("arith.select %s, %s, %s : index" % (ok, em.idx(8), em.idx(0)), "n")
        cc = em.op("arith.select %s, %s, %s : index" % (ok, c8, em.idx(0)), "m")
        return em.op("nvgpu.device_async_copy %s[%s], %s[%s, %s], 8, %s {bypassL1} : %s to %s" % (
            arg["a"], index("a", b, cc, None, r), sA, r, c8, n, ty["a"], sa_ty), "cp")

    def copy_b(i):
        q = em.add(tid, em.mul(i, T)) if not isinstance(i, int) else em.add(tid, i * T)
        r = em.div(q, BN // 8)
        c8 = em.mul(em.rem(q, BN // 8), 8)
        return em.op("nvgpu.device_async_copy %s[%s], %s[%s, %s], 8 {bypassL1} : %s to %s" % (
            arg["b"], index("b", b, None, em.add(n0, c8), r), sB, r, c8, ty["b"], sb_ty), "cp")

    em.comment("the slabs: A K x 16 (columns past M zero-filled), B K x %d, in %d cp.async group(s) of K / %d rows"
               % (BN, G, G))
    na = em.symc("%s * 2 / %d" % (Ks, T * G))            # copies per thread and group
    nb = em.symc("%s * %d / %d" % (Ks, BN // 8, T * G))
    grp = None
    for gi in range(G):
        tok = copy_a(em.mul(gi, na) if gi else 0)
        em.emit("scf.for %s = %s to %s step %s {" % (CI, em.add(em.mul(gi, na), 1), em.mul(gi + 1, na), em.idx(1)))
        em.indent += 2
        copy_a(CI)
        em.indent -= 2
        em.emit("}")
        em.emit("scf.for %s = %s to %s step %s {" % (CI, em.mul(gi, nb), em.mul(gi + 1, nb), em.idx(1)))
        em.indent += 2
        copy_b(CI)
        em.indent -= 2
        em.emit("}")
        g0 = em.op("nvgpu.device_async_create_group %s" % tok, "grp")
        grp = grp or g0
    acc_ty = "vector<4xf32>"
    zero = em.const("dense<0.000000e+00>", acc_ty, "zero4")
    # ldmatrix .trans lane addresses: A's four 8 x 8 blocks (k 0-7 / 8-15 x m
    # 0-7 / 8-15), B's k rows (lane % 8) + 8 * ((lane / 8) % 2), n-chunk lane / 16
    a_k = em.add(em.band(lane, 7), em.mul(em.band(em.shr(lane, 4), 1), 8))
    a_m = em.mul(em.band(em.shr(lane, 3), 1), 8)
    b_k = em.add(em.band(lane, 7), em.mul(em.band(em.shr(lane, 3), 1), 8))
    b_c = [em.mul(em.add(em.shr(lane, 4), 2 * nj), 8) for nj in range(NI // 2)]
    accs = [zero] * NI
    kg = em.symc("%s / %d" % (Ks, G))
    for gi in range(G):
      em.comment("k rows of group %d landed (%d younger groups pending), visible to every warp" % (gi, G - 1 - gi))
      em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, G - 1 - gi))
      em.emit("gpu.barrier")
      KS = "%%ks_%s_%d" % (sfx, gi)
      res = em.fresh("acc")
      em.emit("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {" % (
          res, NI, KS, em.add(em.mul(gi, kg), em.mul(warp, 16)), em.mul(gi + 1, kg), em.idx(16 * KW),
          ", ".join("%%c%d_%s_%d = %s" % (i, sfx, gi, accs[i]) for i in range(NI)), ", ".join([acc_ty] * NI)))
      em.indent += 2
      fa = em.op("nvgpu.ldmatrix %s[%s, %s] {numTiles = 4 : i32, transpose = true} : %s -> vector<4x2x%s>" % (
          sA, em.add(KS, a_k), a_m, sa_ty, dt), "fa")
      fb = []
      for nj in range(NI // 2):
          r4 = em.op("nvgpu.ldmatrix %s[%s, %s] {numTiles = 4 : i32, transpose = true} : %s -> vector<4x2x%s>" % (
              sB, em.add(KS, b_k), b_c[nj], sb_ty, dt), "fb")
          for h in range(2):
              fb.append(em.op("vector.extract_strided_slice %s {offsets = [%d, 0], sizes = [2, 2], strides = [1, 1]} "
                              ": vector<4x2x%s> to vector<2x2x%s>" % (r4, 2 * h, dt, dt), "b"))
      outs = [em.op("func.call @mma_%s(%s, %s, %%c%d_%s_%d) : (vector<4x2x%s>, vector<2x2x%s>, %s) -> %s" % (
          dt, fa, fb[ni], ni, sfx, gi, dt, dt, acc_ty, acc_ty), "d") for ni in range(NI)]
      em.emit("scf.yield %s : %s" % (", ".join(outs), ", ".join([acc_ty] * NI)))
      em.indent -= 2
      em.emit("}")
      accs = ["%s#%d" % (res, i) for i in range(NI)]
    em.comment("warps 1..%d leave their blocks in shared memory (after the slabs are read); warp 0 adds them in order"
               % (KW - 1))
    red_ty = "memref<%dx%dx32x4xf32, %s>" % (KW, NI, WG)
    em.emit("gpu.barrier")
    red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, red_ty), "red")
    for ni in range(NI):
        em.emit("vector.store %s, %s[%s, %s, %s, %s] : %s, %s" % (
            accs[ni], red, warp, em.idx(ni), lane, em.idx(0), red_ty, acc_ty))
    em.emit("gpu.barrier")
    w0 = em.op("arith.cmpi eq, %s, %s : index" % (warp, em.idx(0)), "w0")
    em.emit("scf.if %s {" % w0)
    em.indent += 2
    g = em.shr(lane, 2)
    t2 = em.mul(em.band(lane, 3), 2)
    for ni in range(NI):
        s = em.op("vector.load %s[%s, %s, %s, %s] : %s, %s" % (red, em.idx(0), em.idx(ni), lane, em.idx(0), red_ty,
                                                                acc_ty), "s")
        for w in range(1, KW):
            x = em.op("vector.load %s[%s, %s, %s, %s] : %s, %s" % (red, em.idx(w), em.idx(ni), lane, em.idx(0),
                                                                    red_ty, acc_ty), "p")
            s = em.op("arith.addf %s, %s : %s" % (s, x, acc_ty), "s")
        for h in range(2):
            v = em.op("vector.extract_strided_slice %s {offsets = [%d], sizes = [2], strides = [1]} : %s to "
                      "vector<2xf32>" % (s, 2 * h, acc_ty), "c")
            y = em.op("arith.truncf %s : vector<2xf32> to vector<2x%s>" % (v, dt), "y")
            row = em.add(g, 8 * h)
            ok = em.op("arith.cmpi ult, %s, %s : index" % (row, M_v), "ok")
            em.emit("scf.if %s {" % ok)
            em.indent += 2
            em.emit("vector.store %s, %s[%s] : %s, vector<2x%s>" % (
                y, arg["c"], index("c", b, row, em.add(em.add(n0, 8 * ni), t2), None), ty["c"], dt))
            em.indent -= 2
            em.emit("}")
    em.indent -= 2
    em.emit("}")


def tn_kernel(dt, sym, admit=None):
    """the gpu.module text of the A^T B kernel (form tn) in dt at M <= 16;
    admit: {TILE: an expression over the symbols or None}"""
    form = "tn"
    em = gen_gemm.Emitter()
    args = bmm_any.form_args(form)
    names = ["%%arg%d" % i for i in range(len(args))]
    ty = {role: "memref<%sx%s>" % ("x".join("{{%s}}" % sym[s] for s in shape), dt) for role, shape, _ in args}
    arg = {role: nm for (role, _, _), nm in zip(args, names)}
    idx_of = {role: ix for role, _, ix in args}
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sel = em.sym_idx("TILE", "TILE")
    keys = _tile_chain(em, sel, TN_ALTS,
                       lambda t: _tn_body(em, TN_ALTS[t], dt, sym, arg, ty, smem_v, idx_of, t))
    em.emit("gpu.return")
    Bs, Ms, Ns, Ks = sym["B"], sym["M"], sym["N"], sym["K"]
    reqs = ["%s %% 8 == 0 && %s <= 16 && %s * %s <= 65535" % (Ms, Ms, Bs, Ns)]
    per = []
    for t in keys:
        a = TN_ALTS[t]
        T = a["KW"] * 32
        c = ["%s %% %d == 0" % (Ns, a["BN"]), "%s %% %d == 0" % (Ks, a["G"] * max(16 * a["KW"], T // 2,
                                                                                      T * 8 // a["BN"])),
             "%s * %d <= %d" % (Ks, 2 * (16 + PAD + a["BN"] + PAD), SMEM_MAX)]
        if admit and admit.get(t):
            c.append(_p(admit[t]))
        per.append("(TILE == %d && %s)" % (t, " && ".join(c)))
    reqs.append(" || ".join(per))
    assert all(len(r) <= 512 for r in reqs), reqs
    free = sorted(set(sym.values()), key=lambda s: int(s[1:]))
    lines = ["gpu.module @kernels {"]
    lines.append("  // Pattern-table template: kernels/table/bmm16_any.py tn %s (mma.sync, few rows, the whole depth"
                 % dt)
    lines.append("  // in shared memory, warps over k, added in warp order): C[b] = A[b]^T @ B[b], A read [B,K,M];")
    lines.append("  // B = %s, M = %s <= 16, N = %s, K = %s; f32 accumulation, one rounding at the store. TILE: %s."
                 % (Bs, Ms, Ns, Ks, "; ".join("%d: %d columns, %d warps" % (t, a["BN"], a["KW"])
                                              for t, a in sorted(TN_ALTS.items()))))
    lines += ["  // llm-fuse.template-size %s" % s for s in free]
    lines.append("  // llm-fuse.tune TILE = %s" % ", ".join(str(t) for t in keys))
    lines += ["  // llm-fuse.tune-require %s" % r for r in reqs]
    lines.append(gen_gemm.mma_helper(dt))
    sig = ", ".join("%s: %s" % (nm, ty[role]) for (role, _, _), nm in zip(args, names))
    groups = {}
    for t, a in sorted(TN_ALTS.items()):
        groups.setdefault((a["KW"] * 32, a["BN"]), []).append(t)

    def pick(f):
        g2 = {}
        for (T, BN), ts in groups.items():
            g2.setdefault(f(T, BN), []).extend(ts)
        if len(g2) == 1:
            return next(iter(g2))
        return " + ".join("(%s) * %s" % (" || ".join("TILE == %d" % t for t in ts), _p(v)) for v, ts in g2.items())
    lines.append("  gpu.func @bmm16_tn(%s) kernel" % sig)
    lines.append("      attributes {known_block_size = array<i32: {{%s}}, 1, 1>," % pick(lambda T, BN: str(T)))
    lines.append("                  known_grid_size = array<i32: {{%s}}, 1, 1>," % pick(
        lambda T, BN: "%s * (%s / %d)" % (Bs, Ns, BN)))
    lines.append("                  llm_fuse.dynamic_shared_memory = {{%s}} : i32} {" % pick(
        lambda T, BN: "%s * %d" % (Ks, 2 * (16 + PAD + BN + PAD))))
    lines += em.body(4)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- The entries -------------------------------------------------------------

# (form, dtype, size pattern key, {TILE: admission}) of the shipped entries
ENTRIES = [("nt", "bf16", "mn", None), ("nt", "f16", "mn", None),
           ("tn", "bf16", "any", None), ("tn", "f16", "any", None)]


def _render(form, dt, sizes, admit):
    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in sizes.items()}
        want = [[sizes[x] for x in shape] for _, shape, _ in bmm_any.form_args(form)]
        have = [x["shape"] for x in g["inputs"] + g["outputs"]]
        assert want == have, (form, want, have)
        if form == "tn":
            text = tn_kernel(dt, sym, admit)
        else:
            text = qk_kernel(form, dt, sym, admit)
        return text, [None] * len(ps)
    return render


def templates():
    out = []
    for form, dt, key, admit in ENTRIES:
        B, M, N, K = bmm_any.SHAPES[key]
        sizes = {"B": B, "M": M, "N": N, "K": K}
        out.append(dict(
            name="0bmm16-%s-%s-%s" % (form, key, dt),
            example=bmm_any.model_text(form, dt, B, M, N, K),
            pick=bmm_any._pick(sizes),
            render=_render(form, dt, sizes, admit),
            archs=ARCHS,
            source="kernels/table/bmm16_any.py %s %s %s (%s; from bmm_any.model_text at B %d, M %d, N %d, K %d)" % (
                form, dt, key, "mma.sync, M <= 16, the whole K in shared memory" if form == "tn" else
                "persistent mma.sync kernel, K <= %d" % KMAX, B, M, N, K)))
    return out
