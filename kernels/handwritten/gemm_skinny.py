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
