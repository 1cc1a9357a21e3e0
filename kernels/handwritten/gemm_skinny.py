"""Skinny-M f32 GEMM with a fused epilogue (kind "f32_skinny"): C[M, N] =
A[M, K] @ W + epilogue for few rows (M = 1 up to the table's bound), where
the product is bound by reading W (K * N * 4 bytes, read once) or by the
f32 FMA rate, not by tiles of A. Called as generate(cfg, gen_gemm) by
kernels/table/skinny_any.py (gen_gemm.py's Emitter, operands, epilogues and
module layout are reused; gen_gemm.py itself does not know this kind).

* Exact f32: fma.rn.f32 only (no TF32), like gen_gemm.py's f32_simt.
* 16-bit operands (kind "skinny16", session 26): A, W and C bf16 or f16
  (all one type), W [K, N] only, one B operand or two (SwiGLU: both W
  read in the same steps, two sets of accumulators, the epilogue on both
  sums). W and A are read in 8-byte loads of 4 elements and extended to
  f32 (arith.extf); the products accumulate in f32 FMAs as above and the
  epilogue runs in f32, rounded once at the store: gen_gemm.py's
  tensor-core kernels' arithmetic, so the verifier's 16-bit tolerances
  judge it the same way. The f32 kernel text is unchanged.
* Tensor cores (kind "skinny_mma16", session 27; generate_mma() below):
  16-bit SwiGLU at up to 48 rows on mma.sync m16n8k16 (the FMA kernels'
  conversion and FMA per weight element make them instruction bound past
  8 rows); its notes are at generate_mma().
* A CTA owns NB output columns and MT rows (grid = N / NB column slabs x
  ceil(M / MT) row tiles, the row tile fastest, so that the CTAs sharing a
  W slab run together and all but the first read it from L2). Its 256
  threads split K: each owns 4 columns and k-groups of 4, so that W is
  read in 16-byte loads along its contiguous dimension:
    W [K, N] (gemm_any.py, TOSA): lanes run along the columns (NB / 4
      column groups), four row loads W[k..k+3][n..n+3] per step;
    W [N, K] (nn.Linear as stored, cfg b_nk): lanes run along k (32 lanes
      x 16 bytes = 512 contiguous bytes of a W row), four column loads
      W[n+c][k..k+3], transposed in registers.
  Either way a step is a 4 x 4 block of W times a float4 of each of the
  MT rows of A (staged in shared memory per K chunk, zero past M and K):
  16 * MT FMAs, each thread's k in ascending order.
* K is masked: K % 4 == 0 only; the last chunk's k-groups past K - 1 read
  W at a clamped address and zero the values (a select, so an Inf in W
  never meets a zero). N must be a multiple of NB (no column masking).
* The partial sums over the threads' k-groups are reduced in a fixed
  order: a gpu.shuffle xor butterfly over the lanes that hold k-groups,
  then one partial per warp (W [K, N]) or per k-half (W [N, K]) to shared
  memory and a sum in warp order by the thread that applies the epilogue
  to its row and 4 columns. Deterministic: no atomics, every sum in one
  order whatever the scheduling.
* Alternatives (tilings (MT, NB, U)) are one kernel: an scf.if chain on
  the constant {{ALT}} (a tune knob; after instantiation a literal, so
  LLVM keeps the selected body only), each with its admission condition;
  the pass builds, verifies and times each admitted one and keeps the
  fastest.
"""

T = 256      # threads per CTA
PAD = 4      # words of padding per staged A row (16-byte aligned rows)


def _alt_shape(alt, bnk, nb=1):
    MT, NB, U = alt["MT"], alt["NB"], alt["U"]
    NG = NB // 4                 # column groups of 4
    assert NB % 4 == 0 and T % NG == 0
    KG = T // NG                 # k-groups of 4 (each thread one per step)
    KC = 4 * KG * U              # K chunk staged per iteration
    if bnk:
        assert NG <= 8, "W [N, K]: one column group per warp at least"
        P = 8 // NG              # k-halves (warps per column group)
    else:
        assert NG <= 32
        P = 8                    # one partial per warp
    a_bytes = MT * (KC + PAD) * 4
    red_bytes = P * nb * MT * NB * 4            # per B operand: a [P, MT, NB] block of partials
    return dict(MT=MT, NB=NB, U=U, NG=NG, KG=KG, KC=KC, P=P, a_bytes=a_bytes,
                smem=a_bytes + red_bytes)


def _body(em, gg, cfg, alt, ops, helper, smem_v):
    """one tiling's kernel body (no gpu.return)"""
    A, Ws, C, bias, res = ops
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    bnk = bool(cfg.get("b_nk"))
    nb = len(Ws)
    wide = A.dt != "f32"         # 16-bit operands: 8-byte loads of 4 elements, extended to f32 (module doc)
    v4in = "vector<4x%s>" % A.dt
    sh = _alt_shape(alt, bnk, nb)
    MT, NB, U, NG, KG, KC, P = (sh[k] for k in ("MT", "NB", "U", "NG", "KG", "KC", "P"))
    WG = gg.WG
    v4 = "vector<4xf32>"
    one_row = not gg.is_sym(M) and M == 1
    gm = 1 if one_row else gg.scdiv(M, MT)
    em.comment("tiling MT=%d rows x NB=%d columns per CTA, %d k-groups of 4, K chunk %d (U=%d steps per "
               "thread), W %s" % (MT, NB, KG, KC, U, "[N, K]" if bnk else "[K, N]"))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    if one_row:
        m0, nt = 0, pid
    else:
        gmv = em.v(gg.sval(em, gm))
        m0 = em.mul(em.rem(pid, gmv), MT)
        nt = em.div(pid, gmv)
    n0 = em.mul(nt, NB)
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    if bnk:
        # tid = lane + 32 * (cg + NG * kh): lanes along k
        cg = em.rem(warp, NG)
        kh = em.div(warp, NG)
        kgi = em.add(lane, em.mul(kh, 32))
        part, writer = kh, lane
    else:
        # lane = cg + NG * kl: lanes along the columns
        cg = em.rem(lane, NG)
        kgi = em.add(em.div(lane, NG), em.mul(warp, 32 // NG))
        part, writer = warp, em.div(lane, NG)
    ncol = em.add(n0, em.mul(cg, 4))
    sa_ty = gg.memref_ty([MT, KC + PAD], "f32", WG)
    red_ty = gg.memref_ty([P, nb * MT, NB], "f32", WG)
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sa_ty), "sA")
    red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(sh["a_bytes"]), WG, red_ty),
                "red")
    k_n = em.v(gg.sval(em, K))
    k_last4 = em.v(gg.sval(em, "%s - 4" % K if gg.is_sym(K) else K - 4))
    m_n = em.v(gg.sval(em, M))
    m_last = em.v(gg.sval(em, "%s - 1" % M if gg.is_sym(M) else M - 1))
    zero4 = em.const("dense<0.000000e+00>", v4, "zero4")
    nch = gg.scdiv(K, KC)
    nch_v = em.v(gg.sval(em, nch))

    # A staging assignments (loop invariant): float4 q -> row q / (KC/4), k (q % (KC/4)) * 4
    per_row = KC // 4
    assert (MT * per_row) % T == 0 or MT * per_row < T
    a_slots = []
    for i in range(-(-MT * per_row // T)):
        q = em.add(tid, i * T)
        r = em.div(q, per_row)
        kq = em.mul(em.rem(q, per_row), 4)
        grow = em.add(m0, r)
        okr = em.op("arith.cmpi ult, %s, %s : index" % (em.v(grow), m_n), "okr")
        if MT * per_row % T:
            inr = em.op("arith.cmpi ult, %s, %s : index" % (em.v(q), em.idx(MT * per_row)), "inr")
            okr = em.op("arith.andi %s, %s : i1" % (okr, inr), "okr")
        a_slots.append((r, kq, em.minu(grow, m_last), okr, MT * per_row % T != 0))

    NA = nb * MT                 # accumulators: operand b, row m at b * MT + m
    accs = [em.fresh("acc") for m in range(NA)]
    res_name = em.fresh("accs")
    em.emit("%s:%d = scf.for %%ch = %s to %s step %s iter_args(%s) -> (%s) {" % (
        res_name, NA, em.idx(0), nch_v, em.idx(1),
        ", ".join("%s = %s" % (a, zero4) for a in accs), ", ".join([v4] * NA)))
    em.indent += 2
    c0 = em.op("arith.muli %%ch, %s : index" % em.idx(KC), "c0")
    em.comment("W loads of this chunk first (they do not wait for A): %d steps x 4 x %d bytes%s" % (
        U, 8 if wide else 16, " x %d operands" % nb if nb > 1 else ""))
    steps = []
    for j in range(U):
        kloc = em.mul(em.add(kgi, j * KG), 4)
        kg_ = em.op("arith.addi %s, %s : index" % (c0, em.v(kloc)), "k")
        valid = em.op("arith.cmpi ult, %s, %s : index" % (kg_, k_n), "kv")
        kc = em.op("arith.minui %s, %s : index" % (kg_, k_last4), "kc")
        kks = []
        raws = []
        for W in Ws:
            raw = []
            for r in range(4):
                if bnk:
                    nn = em.add(ncol, r)
                    raw.append(em.op("vector.load %s : %s, %s" % (W.at(em.v(nn), kc), W.ty, v4), "w"))
                else:
                    if r and len(kks) < r:
                        kks.append(em.op("arith.addi %s, %s : index" % (kc, em.idx(r)), "kr"))
                    kk = kks[r - 1] if r else kc
                    raw.append(em.op("vector.load %s : %s, %s" % (W.at(kk, em.v(ncol)), W.ty, v4in), "w"))
            if wide:
                raw = [em.op("arith.extf %s : %s to %s" % (x, v4in, v4), "wf") for x in raw]
            raws.append(raw)
        raws = [[em.op("arith.select %s, %s, %s : %s" % (valid, x, zero4, v4), "w") for x in raw] for raw in raws]
        steps.append((kloc, raws))
    em.comment("stage A[m0 .. m0+%d, chunk] (zero past M and past K)" % (MT - 1))
    vals = []
    for (r, kq, grow, okr, partial) in a_slots:
        kk = em.op("arith.addi %s, %s : index" % (c0, em.v(kq)), "ka")
        okk = em.op("arith.cmpi ult, %s, %s : index" % (kk, k_n), "oka")
        ok = em.op("arith.andi %s, %s : i1" % (okr, okk), "ok")
        kcl = em.op("arith.minui %s, %s : index" % (kk, k_last4), "kac")
        x = em.op("vector.load %s : %s, %s" % (A.at(em.v(grow), kcl), A.ty, v4in), "a")
        if wide:
            x = em.op("arith.extf %s : %s to %s" % (x, v4in, v4), "af")
        vals.append((r, kq, em.op("arith.select %s, %s, %s : %s" % (ok, x, zero4, v4), "a"), partial, okr))
    em.emit("gpu.barrier")
    for (r, kq, x, partial, okr) in vals:
        st = "vector.store %s, %s[%s, %s] : %s, %s" % (x, sA, em.v(r), em.v(kq), sa_ty, v4)
        if partial:
            inr = em.op("arith.cmpi ult, %s, %s : index" % (em.v(r), em.idx(MT)), "inr")
            em.emit("scf.if %s {" % inr)
            em.emit("  " + st)
            em.emit("}")
        else:
            em.emit(st)
    em.emit("gpu.barrier")
    cur = list(accs)
    for kloc, raws in steps:
        wss = []
        for raw in raws:
            if bnk:
                # raw[c] = W[n + c][k .. k+3]: w_kk = (raw[0][kk], .., raw[3][kk])
                ws = []
                for kk in range(4):
                    el = [em.op("vector.extract %s[%d] : f32 from %s" % (raw[c], kk, v4), "e") for c in range(4)]
                    ws.append(em.op("vector.from_elements %s : %s" % (", ".join(el), v4), "wt"))
            else:
                ws = raw
            wss.append(ws)
        for m in range(MT):
            a = em.op("vector.load %s[%s, %s] : %s, %s" % (sA, em.idx(m), em.v(kloc), sa_ty, v4), "as")
            for kk in range(4):
                s = em.op("vector.extract %s[%d] : f32 from %s" % (a, kk, v4), "s")
                b = em.op("vector.broadcast %s : f32 to %s" % (s, v4), "b")
                for bi, ws in enumerate(wss):
                    i = bi * MT + m
                    cur[i] = em.op("vector.fma %s, %s, %s : %s" % (b, ws[kk], cur[i], v4), "f")
    em.emit("scf.yield %s : %s" % (", ".join(cur), ", ".join([v4] * NA)))
    em.indent -= 2
    em.emit("}")

    em.comment("reduce over the k-groups in a fixed order: lanes by a shuffle xor butterfly, then warps")
    offs = [16, 8, 4, 2, 1] if bnk else [o for o in (16, 8, 4, 2, 1) if o >= NG]
    width = em.const(32, "i32", "w32")
    tot = []
    for m in range(NA):
        v = "%s#%d" % (res_name, m)
        if offs:
            el = [em.op("vector.extract %s[%d] : f32 from %s" % (v, c, v4), "r") for c in range(4)]
            for off in offs:
                o = em.const(off, "i32", "o%d" % off)
                for c in range(4):
                    s = em.fresh("sh")
                    em.emit("%s, %%ok_%s = gpu.shuffle xor %s, %s, %s : f32" % (s, s[1:], el[c], o, width))
                    el[c] = em.op("arith.addf %s, %s : f32" % (el[c], s), "r")
            v = em.op("vector.from_elements %s : %s" % (", ".join(el), v4), "r")
        tot.append(v)
    isw = em.op("arith.cmpi eq, %s, %s : index" % (em.v(writer), em.idx(0)), "isw")
    em.emit("scf.if %s {" % isw)
    em.indent += 2
    for m in range(NA):
        em.emit("vector.store %s, %s[%s, %s, %s] : %s, %s" % (
            tot[m], red, em.v(part), em.idx(m), em.v(em.mul(cg, 4)), red_ty, v4))
    em.indent -= 2
    em.emit("}")
    em.emit("gpu.barrier")
    em.comment("epilogue: thread t < %d takes row t / %d, columns 4 * (t %% %d) .. +3; partials summed in order"
               % (MT * NG, NG, NG))
    for i in range(-(-MT * NG // T)):
        t = em.add(tid, i * T)
        r = em.div(t, NG)
        c = em.mul(em.rem(t, NG), 4)
        row = em.add(m0, r)
        ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(row), m_n), "ok")
        if MT * NG != T:
            inr = em.op("arith.cmpi ult, %s, %s : index" % (em.v(t), em.idx(MT * NG)), "inr")
            ok = em.op("arith.andi %s, %s : i1" % (ok, inr), "ok")
        em.emit("scf.if %s {" % ok)
        em.indent += 2
        sums = []
        for bi in range(nb):
            rb = em.add(r, bi * MT) if bi else r
            s = None
            for p in range(P):
                x = em.op("vector.load %s[%s, %s, %s] : %s, %s" % (red, em.idx(p), em.v(rb), em.v(c), red_ty, v4),
                          "p")
                s = x if s is None else em.op("arith.addf %s, %s : %s" % (s, x, v4), "p")
            sums.append(s)
        col = em.add(n0, c)
        bv = bias.load(em, [col], 4, "bias") if bias else None
        rv = res.load(em, [row, col], 4, "res") if res else None
        y = helper.call(em, sums, bv, rv)
        em.emit("vector.store %s, %s : %s, %s" % (y, C.at(row, col), C.ty, helper.out_ty))
        em.indent -= 2
        em.emit("}")
    return sh, gg.smul(gg.sdiv(N, NB) if gg.is_sym(N) else N // NB, gm)


def generate(cfg, gg, alts, admit=None):
    """cfg: gen_gemm-style (signature, a, b, bias, res, epilogue, b_nk, M, N,
    K ints or size symbols, sg, example, product); alts: [(dict(MT, NB, U),
    admission expression or None)], the first the default; admit: extra
    requirement lines (the table's bound on M). Returns (kernel name, text,
    launch) like gen_gemm.generate."""
    ins, outs = gg.parse_signature(cfg["signature"])
    em = gg.Emitter()
    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = gg.operands(em, cfg, ins, outs, names)
    wide = A.dt != "f32"
    if wide:   # 16-bit operands (kind skinny16): W [K, N]; one or two B operands (SwiGLU)
        assert A.dt in ("bf16", "f16") and all(b.dt == A.dt for b in Bs) and C.dt == A.dt, "skinny16: one 16-bit type"
        assert not cfg.get("b_nk") and len(Bs) in (1, 2), "skinny16: W [K, N], one or two B operands"
    else:
        assert len(Bs) == 1 and A.dt == "f32" and Bs[0].dt == "f32" and C.dt == "f32", "f32_skinny: f32 only"
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    for r in admit or []:
        em.require(r)
    if gg.is_sym(K):
        em.require("%s %% 4 == 0" % K)
    else:
        assert K % 4 == 0
    bnk = bool(cfg.get("b_nk"))
    helper = gg.EpilogueHelper(cfg, 4, len(Bs), bias.dt if bias else None, res.dt if res else None, C.dt)
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % gg.WG, "smem")
    sel = em.sym_idx("ALT", "ALT")
    shapes, grids, reqs = [], [], []
    nalt = len(alts)
    for i, (alt, cond) in enumerate(alts):
        need = "%s %% %d == 0" % (N, alt["NB"]) if gg.is_sym(N) else None
        if not gg.is_sym(N):
            assert N % alt["NB"] == 0 or nalt > 1
            if N % alt["NB"]:
                continue
        req = " && ".join("(%s)" % x for x in (need, cond) if x) or "1"
        reqs.append("(ALT == %d && %s)" % (i, req))
        if i < nalt - 1:
            isi = em.op("arith.cmpi eq, %s, %s : index" % (sel, em.idx(i)), "alt")
            em.emit("scf.if %s {" % isi)
            em.indent += 2
        sh, grid = _body(em, gg, cfg, alt, (A, Bs, C, bias, res), helper, smem_v)
        shapes.append((i, sh))
        grids.append((i, grid))
        if i < nalt - 1:
            em.indent -= 2
            em.emit("} else {")
            em.indent += 2
    for i in range(nalt - 1):
        em.indent -= 2
        em.emit("}")
    em.emit("gpu.return")
    em.tune.append(("ALT", [i for i, _ in shapes], " || ".join(reqs)))

    def pick(vals):
        vals = [(i, gg.sx(v)) for i, v in vals]
        if len(set(v for _, v in vals)) == 1:
            return vals[0][1]
        return " + ".join("(ALT == %d) * %s" % (i, gg.par(v)) for i, v in vals)
    grid = pick(grids)
    smem = pick([(i, sh["smem"]) for i, sh in shapes])
    launch = dict(block=[T, 1, 1], grid=["{{%s}}" % grid, 1, 1], smem=0)
    header = [
        ("skinny-M %s GEMM (%s operands, f32 FMA accumulation, one rounding at the store): each CTA owns NB "
         "columns x MT rows, its %d threads split K in k-groups of 4 (W [K, N] read in 8-byte loads of 4 "
         "columns%s)" % (A.dt, A.dt, T, ", both B operands" if len(Bs) > 1 else "")) if wide else
        "skinny-M f32 GEMM (exact f32 FMA): each CTA owns NB columns x MT rows, its %d threads split K in "
        "k-groups of 4 (W %s read in 16-byte loads along its contiguous dimension)" % (T, "[N, K]" if bnk else "[K, N]"),
        "alternatives (ALT): " + "; ".join("%d: MT=%d NB=%d U=%d%s" % (i, a["MT"], a["NB"], a["U"],
                                                                    " where " + c if c else "")
                                          for i, (a, c) in enumerate(alts)),
        "K chunks of A staged in shared memory (zero past M and K); partial sums reduced in a fixed order "
        "(shuffle xor butterfly, then warps in order): deterministic",
    ]
    kname, text, launch = gg.finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])
    # the dynamic shared memory is the selected alternative's (finish() writes a number)
    old = "llm_fuse.dynamic_shared_memory = 0 : i32"
    assert text.count(old) == 1
    text = text.replace(old, "llm_fuse.dynamic_shared_memory = {{%s}} : i32" % smem)
    launch["smem"] = "{{%s}}" % smem
    return kname, text, launch


# --------------------------------------------------------------------------
# Tensor-core small-M kernel (kind "skinny_mma16", session 27)
# --------------------------------------------------------------------------
# 16-bit SwiGLU at a few to tens of rows (one B operand works too; the
# table does not offer that, unmeasured): the weights must stream at copy
# bandwidth, and the per-element work of the FMA kernel above (one
# conversion and MT FMAs per weight element) makes that kernel instruction
# bound past 8 rows. Here the products run on mma.sync m16n8k16 (f32
# accumulation, gen_gemm.py's bf16_mma fragment layouts and XOR swizzles):
# * a CTA owns BN columns and all rows (M <= BM, BM a multiple of 16: one
#   row tile; rows past M - 1 are zero-filled by the copies, nothing read,
#   and never stored);
# * operands staged by cp.async (16-byte copies) in an S-stage ring of
#   BK-deep k-tiles: A [BM][BK], each B [BK][BN] (W [K, N]);
# * its 8 warps split the columns (BN / WN warps) and the k16 steps of
#   each k-tile (KW warps, warp wk takes steps wk, wk + KW, ...), so that
#   every warp has work at one row tile;
# * the KW partial sums are added in a fixed order (warp wk = 0's own,
#   then wk = 1, 2, ... through shared memory): deterministic, no atomics;
#   the epilogue runs in f32 on the sums, one rounding at the store.
# Requirements: M <= BM (per tiling), N % BN == 0, K % BK == 0 and at
# least S - 1 k-tiles. nvvm.minctasm = 2: <= 128 registers, two CTAs (and
# rings) per SM. H200 figures: kernels/table/skinny_any.py ALTSMMA.

T_MMA = 256


def _mma_shape(alt, nb):
    BM, BN, BK, WN, KW, S = (alt[k] for k in ("BM", "BN", "BK", "WN", "KW", "S"))
    warps_n = BN // WN
    assert warps_n * KW * 32 == T_MMA and BM % 16 == 0 and WN % 16 == 0 and BN % WN == 0
    assert BK % 16 == 0 and (BK // 16) % KW == 0 and BN // 8 in (4, 8, 16, 32) and BK // 8 in (4, 8, 16)
    MI, NI = BM // 16, WN // 8
    nacc = nb * MI * NI
    pipe = S * (BM * BK * 2 + nb * BK * BN * 2)
    red = (KW - 1) * warps_n * nacc * 32 * 16
    return dict(warps_n=warps_n, MI=MI, NI=NI, nacc=nacc, pipe=pipe, red=red, smem=max(pipe, red))


def _swz(em, row, chunks):
    """the XOR swizzle of the 16-byte chunks of a row of `chunks` chunks
    (conflict-free ldmatrix phases: 8 consecutive rows, one chunk column)"""
    if chunks == 4:
        return em.band(em.shr(row, 1), 3)
    return em.band(row, 7)


def _body_mma(em, gg, cfg, alt, ops, helper, smem_v):
    A, Bs, C, bias, res = ops
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    nb = len(Bs)
    dt = A.dt
    sh = _mma_shape(alt, nb)
    BM, BN, BK, WN, KW, S = (alt[k] for k in ("BM", "BN", "BK", "WN", "KW", "S"))
    warps_n, MI, NI, nacc = sh["warps_n"], sh["MI"], sh["NI"], sh["nacc"]
    WG = gg.WG
    kchunks, nchunks = BK // 8, BN // 8
    em.comment("tiling BM=%d rows (M <= BM) x BN=%d columns per CTA, k-tiles of %d in a %d-stage cp.async ring; "
               "%d warps over the columns (WN=%d) x %d over the k16 steps" % (BM, BN, BK, S, warps_n, WN, KW))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    n0 = em.mul(pid, BN)
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    wn = em.rem(warp, warps_n)
    wk = em.div(warp, warps_n)
    wn0 = em.mul(wn, WN)
    sm_ty_a = gg.memref_ty([S, BM, BK], dt, WG)
    sm_ty_b = gg.memref_ty([S, BK, BN], dt, WG)
    a_bytes, b_bytes = BM * BK * 2, BK * BN * 2
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sm_ty_a), "sA")
    sB = [em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (
        smem_v, em.idx(S * a_bytes + j * S * b_bytes), WG, sm_ty_b), "sB") for j in range(nb)]
    m_last = em.v(gg.sval(em, "%s - 1" % M if gg.is_sym(M) else M - 1))
    em.comment("cp.async assignments (loop invariant); A rows past M - 1 zero-filled (at a clamped address), never stored")

    def assign(total, per_row):
        out = []
        for i in range(-(-total // T_MMA)):
            q = em.add(tid, i * T_MMA)
            if (i + 1) * T_MMA > total:
                q = em.rem(q, total)          # the spare threads repeat a copy (same bytes, same data)
            out.append((em.div(q, per_row), em.rem(q, per_row)))
        return out
    m_n = em.v(gg.sval(em, M))
    a_copies = []
    for r, c in assign(BM * kchunks, kchunks):
        rok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(r), m_n), "rok")
        a_copies.append((r, em.mul(em.xor(c, _swz(em, r, kchunks)), 8), em.minu(r, m_last), em.mul(c, 8), rok))
    b_copies = []
    for r, c in assign(BK * nchunks, nchunks):
        b_copies.append((r, em.mul(em.xor(c, _swz(em, r, nchunks)), 8), em.add(n0, em.mul(c, 8))))

    def issue_loads(kt_load, stage, valid):
        if valid is None:
            ktc, tail = kt_load, ""
        else:
            ktc = em.op("arith.select %s, %s, %s : index" % (valid, em.v(kt_load), em.idx(0)), "kc")
            tail = ", %s" % em.op("arith.select %s, %s, %s : index" % (valid, em.idx(8), em.idx(0)), "n")
        k0 = em.mul(ktc, BK)
        toks = []
        for (r, dcol, grow, gcol, rok) in a_copies:
            # rows past M - 1: zero-filled, nothing read (a clamped row read by every masked row's
            # threads is a hot spot: the same 16-byte chunks from many CTAs and threads)
            ok = rok if valid is None else em.op("arith.andi %s, %s : i1" % (rok, valid), "ok")
            n = em.op("arith.select %s, %s, %s : index" % (ok, em.idx(8), em.idx(0)), "n")
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8, %s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(em.add(k0, gcol))), sA, em.v(stage), em.v(r), em.v(dcol), n, A.ty,
                sm_ty_a), "cp"))
        for j in range(nb):
            for (r, dcol, gcol) in b_copies:
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 8%s {bypassL1} : %s to %s" % (
                    Bs[j].at(em.v(em.add(k0, r)), em.v(gcol)), sB[j], em.v(stage), em.v(r), em.v(dcol), tail,
                    Bs[j].ty, sm_ty_b), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    em.comment("prologue: k-tiles 0..%d in flight" % (S - 2))
    grp = None
    for s in range(S - 1):
        grp = issue_loads(s, s, None)
    em.comment("ldmatrix lane addresses (loop invariant): A row lane%16, k-chunk lane/16 + 2 * (k16 step);")
    em.comment("B (.trans) k-row (lane%8) + 8*((lane/8)%2) + 16 * (k16 step), n-chunk lane/16 (+2 per n16 pair)")
    l15 = em.band(lane, 15)
    a_hi = em.shr(lane, 4)
    a_swz = _swz(em, l15, kchunks)
    steps = BK // 16 // KW
    kks = [em.add(wk, KW * j) for j in range(steps)]        # this warp's k16 steps of a k-tile
    a_col = [em.mul(em.xor(em.add(a_hi, em.mul(kk, 2)), a_swz), 8) for kk in kks]
    a_rows = [em.add(l15, 16 * mi) for mi in range(MI)]
    b_krow = em.add(em.band(lane, 7), em.mul(em.band(em.shr(lane, 3), 1), 8))
    b_swz = _swz(em, b_krow, nchunks)       # 16 * step leaves it unchanged
    b_col = [em.mul(em.xor(em.add(em.add(em.div(wn0, 8), 2 * nj), a_hi), b_swz), 8) for nj in range(WN // 16)]
    b_krows = [em.add(b_krow, em.mul(kk, 16)) for kk in kks]
    acc_ty = "vector<4xf32>"
    zero = em.const("dense<0.000000e+00>", acc_ty, "zero4")
    KT = gg.sdiv(K, BK)
    kt_n = em.v(gg.sval(em, KT))
    res_names = em.fresh("acc")
    em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%s) -> (%s) {" % (
        res_names, nacc, em.idx(0), kt_n, em.idx(1), ", ".join("%%a%d = %s" % (i, zero) for i in range(nacc)),
        ", ".join([acc_ty] * nacc)))
    em.indent += 2
    em.comment("k-tile kt has landed (<= %d younger groups pending); every warp is done with k-tile kt-1" % (S - 2))
    em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, S - 2))
    em.emit("gpu.barrier")
    kl = em.add("%kt", S - 1)
    valid = em.op("arith.cmpi ult, %s, %s : index" % (kl, kt_n), "p")
    issue_loads(kl, em.rem(kl, S), valid)
    st = em.rem("%kt", S)
    accs = ["%%a%d" % i for i in range(nacc)]

    def acc_i(j, mi, ni):
        return (j * MI + mi) * NI + ni
    for s in range(steps):
        afr = [em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = false} : %s -> vector<4x2x%s>" % (
            sA, st, em.v(a_rows[mi]), em.v(a_col[s]), sm_ty_a, dt), "fa") for mi in range(MI)]
        bfr = []
        for j in range(nb):
            bj = []
            for nj in range(WN // 16):
                r4 = em.op("nvgpu.ldmatrix %s[%s, %s, %s] {numTiles = 4 : i32, transpose = true} : %s -> vector<4x2x%s>" % (
                    sB[j], st, em.v(b_krows[s]), em.v(b_col[nj]), sm_ty_b, dt), "fb")
                for h in range(2):
                    bj.append(em.op("vector.extract_strided_slice %s {offsets = [%d, 0], sizes = [2, 2], strides = [1, 1]} "
                                    ": vector<4x2x%s> to vector<2x2x%s>" % (r4, 2 * h, dt, dt), "b"))
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
    sums = ["%s#%d" % (res_names, i) for i in range(nacc)]
    if KW > 1:
        em.comment("the k-warps' partial sums: warps wk > 0 store theirs (the ring is done), warp wk = 0 adds them in "
                   "order wk = 1 .. %d" % (KW - 1))
        em.emit("gpu.barrier")
        red_ty = gg.memref_ty([KW - 1, warps_n, nacc, 32, 4], "f32", WG)
        red = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, red_ty), "red")
        notz = em.op("arith.cmpi ne, %s, %s : index" % (em.v(wk), em.idx(0)), "kw")
        em.emit("scf.if %s {" % notz)
        em.indent += 2
        wk1 = em.sub(wk, 1)
        for i in range(nacc):
            em.emit("vector.store %s, %s[%s, %s, %s, %s, %s] : %s, %s" % (
                sums[i], red, em.v(wk1), em.v(wn), em.idx(i), em.v(lane), em.idx(0), red_ty, acc_ty))
        em.indent -= 2
        em.emit("}")
        em.emit("gpu.barrier")
        isz = em.op("arith.cmpi eq, %s, %s : index" % (em.v(wk), em.idx(0)), "kz")
        em.emit("scf.if %s {" % isz)
        em.indent += 2
        for i in range(nacc):
            s = sums[i]
            for p in range(KW - 1):
                x = em.op("vector.load %s[%s, %s, %s, %s, %s] : %s, %s" % (
                    red, em.idx(p), em.v(wn), em.idx(i), em.v(lane), em.idx(0), red_ty, acc_ty), "p")
                s = em.op("arith.addf %s, %s : %s" % (s, x, acc_ty), "p")
            sums[i] = s
    em.comment("epilogue on the fragments: rows lane/4 + 16*mi (+8), columns n0 + wn0 + 8*ni + 2*(lane%4) (+1)")
    g = em.shr(lane, 2)
    t2 = em.mul(em.band(lane, 3), 2)
    col_base = em.add(em.add(n0, wn0), t2)

    def pair(j, mi, ni, h):
        return em.op("vector.extract_strided_slice %s {offsets = [%d], sizes = [2], strides = [1]} : %s to vector<2xf32>" % (
            sums[acc_i(j, mi, ni)], 2 * h, acc_ty), "c")
    gg.fragment_epilogue(em, helper, C, bias, res, nb, g, [16 * mi for mi in range(MI)],
                         col_base, [8 * ni for ni in range(NI)], pair, m_bound=gg.sval(em, M))
    if KW > 1:
        em.indent -= 2
        em.emit("}")
    return sh, gg.sdiv(N, BN)


def generate_mma(cfg, gg, alts, admit=None):
    """kind skinny_mma16: as generate(), alts [(dict(BM, BN, BK, WN, KW, S),
    admission or None)]; 16-bit A, B (one or two, W [K, N]) and C."""
    ins, outs = gg.parse_signature(cfg["signature"])
    em = gg.Emitter()
    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = gg.operands(em, cfg, ins, outs, names)
    dt = A.dt
    assert dt in ("bf16", "f16") and all(b.dt == dt for b in Bs) and C.dt == dt and len(Bs) in (1, 2)
    assert not cfg.get("b_nk"), "skinny_mma16: W [K, N]"
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    for r in admit or []:
        em.require(r)
    helper = gg.EpilogueHelper(cfg, 2, len(Bs), bias.dt if bias else None, res.dt if res else None, C.dt)
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % gg.WG, "smem")
    sel = em.sym_idx("ALT", "ALT")
    shapes, grids = [], []
    nalt = len(alts)
    assert all(gg.is_sym(x) for x in (M, N, K)) and nalt <= 8
    # one requirement line per size (a tune expression is at most 512 bytes)
    m_req = " || ".join("(ALT == %d && %s <= %d%s)" % (i, M, a["BM"], " && " + c if c else "")
                        for i, (a, c) in enumerate(alts))
    em.require(" || ".join("(ALT == %d && %s %% %d == 0)" % (i, N, a["BN"]) for i, (a, c) in enumerate(alts)))
    em.require(" || ".join("(ALT == %d && %s %% %d == 0 && %s >= %d)" % (i, K, a["BK"], K, a["BK"] * (a["S"] - 1))
                           for i, (a, c) in enumerate(alts)))
    assert all(len(r) <= 512 for r in em.reqs + [m_req])
    for i, (alt, cond) in enumerate(alts):
        if i < nalt - 1:
            isi = em.op("arith.cmpi eq, %s, %s : index" % (sel, em.idx(i)), "alt")
            em.emit("scf.if %s {" % isi)
            em.indent += 2
        sh, grid = _body_mma(em, gg, cfg, alt, (A, Bs, C, bias, res), helper, smem_v)
        shapes.append((i, sh))
        grids.append((i, grid))
        if i < nalt - 1:
            em.indent -= 2
            em.emit("} else {")
            em.indent += 2
    for i in range(nalt - 1):
        em.indent -= 2
        em.emit("}")
    em.emit("gpu.return")
    em.tune.append(("ALT", [i for i, _ in shapes], m_req))

    def pick(vals):
        vals = [(i, gg.sx(v)) for i, v in vals]
        if len(set(v for _, v in vals)) == 1:
            return vals[0][1]
        return " + ".join("(ALT == %d) * %s" % (i, gg.par(v)) for i, v in vals)
    grid = pick(grids)
    smem = pick([(i, sh["smem"]) for i, sh in shapes])
    launch = dict(block=[T_MMA, 1, 1], grid=["{{%s}}" % grid, 1, 1], smem=0)
    header = [
        "skinny-M %s GEMM on tensor cores (mma.sync m16n8k16, f32 accumulation, one rounding at the store): each "
        "CTA owns BN columns and all M <= BM rows, operands in a cp.async ring, its %d warps split the columns "
        "and the k16 steps%s" % (dt, T_MMA // 32, ", both B operands" if len(Bs) > 1 else ""),
        "alternatives (ALT): " + "; ".join("%d: BM=%d BN=%d BK=%d WN=%d KW=%d S=%d%s" % (
            i, a["BM"], a["BN"], a["BK"], a["WN"], a["KW"], a["S"], " where " + c if c else "")
            for i, (a, c) in enumerate(alts)),
        "the k-warps' partial sums added in a fixed order through shared memory: deterministic",
    ]
    # two CTAs per SM (<= 128 registers a thread): the weights stream from two CTAs' rings
    cfg = dict(cfg, minctasm=2)
    kname, text, launch = gg.finish(cfg, em, ins, outs, names, launch, header,
                                    [gg.mma_helper(dt), "\n".join(helper.text)])
    old = "llm_fuse.dynamic_shared_memory = 0 : i32"
    assert text.count(old) == 1
    text = text.replace(old, "llm_fuse.dynamic_shared_memory = {{%s}} : i32" % smem)
    launch["smem"] = "{{%s}}" % smem
    return kname, text, launch
