"""TF32 tensor-core GEMM with a fused epilogue (kind "tf32_mma";
gen_gemm.generate() calls generate(cfg, gen_gemm)).

Only for subgraphs compiled with the pass option tf32=1 (the precision of
PyTorch's allow_tf32: 10-bit mantissa products, f32 accumulation); the
verifier judges these kernels with the TF32 tolerance of docs/verification.md
("TF32 mode"), never with the f32 one.  The f32 data stays f32 in memory.

* mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32 through nvgpu.mma.sync
  {tf32Enabled} (sm_80, sm_90): A fragment vector<4x1xf32>, B vector<2x1xf32>,
  C/D vector<2x2xf32>; every operand element is rounded to TF32 (cvt.rna.tf32,
  round to nearest, ties away: nvvm.convert.float.to.tf32) as it leaves
  shared memory, like cuBLAS and CUTLASS do, so the error is that of a
  rounding, not of the hardware's truncation.
* A [M, K] and B, either [K, N] (n contiguous) or [N, K] (cfg b_nk: the
  nn.Linear weight as stored, k contiguous), copied global -> shared by
  nvgpu.device_async_copy (cp.async.cg, 16 bytes = 4 f32) into an S-stage
  ring: one commit group, one wait and one barrier per k-tile (gen_bf16_mma's
  pipeline).
* Shared tiles are padded, not swizzled: A [BM][BK + 4] (and B [BN][BK + 4]
  with b_nk), B [BK][BN + 8] otherwise.  A lane (g = lane / 4, t = lane % 4)
  reads A[g][t]: bank 4g + t, B[t][g] (row stride = 8 mod 32 words): bank
  8t + g, B_nk[g][t]: 4g + t -- 32 distinct banks per fragment load.
  (ldmatrix moves 16-bit elements; the 32-bit fragment elements are read
  with scalar ld.shared, 6 per m16n8k8 block row/column pair.)
* Fragment layouts (PTX ISA, mma.m16n8k8 .tf32, g = lane / 4, t = lane % 4):
    A (16x8, row): a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4)
    B (8x8, col):  b0 = (k = t, n = g), b1 = (k = t+4, n = g)
    C (16x8, f32): row 0 = (g, 2t..2t+1), row 1 = (g+8, 2t..2t+1)
  so the epilogue is gen_gemm.fragment_epilogue's (the m16n8 C layout).
* Masked M (symbolic M or mask_m): A rows past M - 1 read as row M - 1,
  never stored.  Masked N and K (mask_nk = 4): B columns (rows with b_nk)
  read at clamped addresses, the k part past K - 1 zero-filled in A and B
  (cp.async source size 0), columns past N - 1 never stored.
"""

PAD_A = 4   # words: A row stride BK + 4 (16-byte aligned rows, banks 4g + t)
PAD_BN = 8  # words: B [k][n] row stride BN + 8 (banks 8t + g)


def tf32_helper():
    return """\
  // One mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32 (nvgpu.mma.sync, tf32Enabled).
  // a = a0..a3, b = b0,b1 (f32 registers holding TF32 values), c = d = the
  // m16n8 f32 tile: row 0 = (g, 2t..2t+1), row 1 = (g+8, 2t..2t+1).
  func.func private @mma_tf32(%a: vector<4x1xf32>, %b: vector<2x1xf32>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    return %d : vector<2x2xf32>
  }
  // x rounded to TF32 (cvt.rna.tf32.f32: nearest, ties away from zero), as f32 bits.
  func.func private @to_tf32(%x: f32) -> f32 {
    %r = nvvm.convert.float.to.tf32 %x {rnd = #nvvm.fp_rnd_mode<rna>}
    %f = arith.bitcast %r : i32 to f32
    return %f : f32
  }"""


def generate(cfg, gg):
    ins, outs = gg.parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    WM, WN = cfg["WM"], cfg["WN"]
    S = cfg["stages"]
    GROUP_M = cfg["group_m"]
    bnk = bool(cfg.get("b_nk"))
    nb = len(cfg["b"])
    warps_m, warps_n = BM // WM, BN // WN
    T = 32 * warps_m * warps_n
    MI, NI = WM // 16, WN // 8
    assert WM % 16 == 0 and WN % 8 == 0 and BK % 8 == 0 and BN % 8 == 0
    em = gg.Emitter()
    masked = gg.masked_m(cfg)
    nk = gg.masked_nk(cfg)
    assert nk in (0, 4)
    if cfg.get("require"):   # an admission condition (the table's masked N/K form)
        em.require(cfg["require"])
    if masked or gg.is_sym(N) or gg.is_sym(K):
        gm, gn, KT = gg.sizes_and_requirements(em, M, N, K, BM, BN, BK, S - 1, nk)
        grid = gg.smul(gm, gn)
    else:
        assert M % BM == 0 and N % BN == 0 and K % BK == 0, "shapes must divide the tiles"
        KT = K // BK
        assert KT >= S - 1
        gm, gn = M // BM, N // BN
        grid = gm * gn
    lda = BK + PAD_A
    a_words = BM * lda
    b_shape = [BN, BK + PAD_A] if bnk else [BK, BN + PAD_BN]
    b_words = b_shape[0] * b_shape[1]
    smem = S * 4 * (a_words + nb * b_words)
    kchunks = BK // 4           # 16-byte chunks per A (and B_nk) row
    nchunks = BN // 4           # 16-byte chunks per B [k][n] row

    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = gg.operands(em, cfg, ins, outs, names)
    assert A.dt == "f32" and all(b.dt == "f32" for b in Bs), "tf32_mma: f32 operands"
    WG = gg.WG
    sm_ty_a = gg.memref_ty([S, BM, lda], "f32", WG)
    sm_ty_b = gg.memref_ty([S] + b_shape, "f32", WG)
    acc_ty = "vector<2x2xf32>"
    helper = gg.EpilogueHelper(cfg, 2, nb, bias.dt if bias else None, res.dt if res else None, C.dt)

    em.comment("CTA tile (pid_m, pid_n): grouped raster over %sx%s tiles, GROUP_M=%d by default (a tune knob)"
               % (gm, gn, GROUP_M))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    if masked:
        pid_m, pid_n = gg.grouped_raster_any(em, pid, gm, gn, GROUP_M)
    else:
        pid_m, pid_n = gg.grouped_raster(em, pid, gm, gn, GROUP_M)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    wm0 = em.mul(em.div(warp, warps_n), WM)
    wn0 = em.mul(em.rem(warp, warps_n), WN)

    em.comment("shared memory: A[S][%d][%d], then %d x B[S][%d][%d] (f32, padded rows)"
               % (BM, lda, nb, b_shape[0], b_shape[1]))
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), WG, sm_ty_a), "sA")
    sB = []
    for j in range(nb):
        off = 4 * (S * a_words + j * S * b_words)
        sB.append(em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (
            smem_v, em.idx(off), WG, sm_ty_b), "sB"))

    em.comment("cp.async assignments (loop invariant): consecutive threads copy consecutive 16-byte chunks of a row")
    if masked:
        em.comment("masked M: A rows past M-1 are read as row M-1 (clamped); their accumulator rows are never stored")
        m_last = em.symc("%s - 1" % M) if gg.is_sym(M) else M - 1
    if nk:
        em.comment("masked N and K: B columns past N-1 read at clamped addresses (never stored); the k part past")
        em.comment("K-1 of the last k-tile zero-filled in A and B (cp.async source size 0, clamped address)")
        n_last = gg.sval(em, "%s - 1" % N if gg.is_sym(N) else N - 1)
        n_last4 = gg.sval(em, "%s - 4" % N if gg.is_sym(N) else N - 4)
        k_last4 = gg.sval(em, "%s - 4" % K if gg.is_sym(K) else K - 4)
        k_last = gg.sval(em, "%s - 1" % K if gg.is_sym(K) else K - 1)
        k_n = em.v(gg.sval(em, K))
    assert (BM * kchunks) % T == 0
    a_copies = []
    for i in range(BM * kchunks // T):
        q = em.add(tid, i * T)
        r = em.div(q, kchunks)
        c = em.mul(em.rem(q, kchunks), 4)
        grow = em.add(m0, r)
        if masked:
            grow = em.minu(grow, m_last)
        a_copies.append((r, c, grow))
    b_copies = []
    if bnk:
        assert (BN * kchunks) % T == 0
        for i in range(BN * kchunks // T):
            q = em.add(tid, i * T)
            r = em.div(q, kchunks)          # n row of the tile
            c = em.mul(em.rem(q, kchunks), 4)
            gn_row = em.add(n0, r)
            if nk:
                gn_row = em.minu(gn_row, n_last)
            b_copies.append((r, c, gn_row))
    else:
        assert (BK * nchunks) % T == 0
        for i in range(BK * nchunks // T):
            q = em.add(tid, i * T)
            r = em.div(q, nchunks)          # k row of the tile
            c = em.mul(em.rem(q, nchunks), 4)
            gcol = em.add(n0, c)
            if nk:
                gcol = em.minu(gcol, n_last4)
            b_copies.append((r, c, gcol))

    def issue_loads(kt_load, stage, valid):
        """k-tile kt_load -> stage; when valid (i1) is false the copies read
        nothing and zero-fill, so that every iteration commits one group."""
        if valid is not None and not nk:   # an invalid tile reads nothing, at k-tile 0
            kt_load = em.op("arith.select %s, %s, %s : index" % (valid, em.v(kt_load), em.idx(0)), "kc")
        k0 = em.mul(kt_load, BK)

        def size(kidx):
            if nk:
                ok = em.op("arith.cmpi ult, %s, %s : index" % (em.v(kidx), k_n), "kin")
                if valid is not None:
                    ok = em.op("arith.andi %s, %s : i1" % (ok, valid), "kin")
            elif valid is not None:
                ok = valid
            else:
                return ""
            return ", %s" % em.op("arith.select %s, %s, %s : index" % (ok, em.idx(4), em.idx(0)), "n")

        def kclamp(kidx, last):
            return em.minu(kidx, last) if nk else kidx
        toks = []
        for (r, c, grow) in a_copies:
            kc = em.add(k0, c)
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 4%s {bypassL1} : %s to %s" % (
                A.at(em.v(grow), em.v(kclamp(kc, k_last4 if nk else None))), sA, em.v(stage), em.v(r), em.v(c),
                size(kc), A.ty, sm_ty_a), "cp"))
        for j in range(nb):
            for (r, c, g) in b_copies:
                if bnk:
                    kc = em.add(k0, c)
                    src = Bs[j].at(em.v(g), em.v(kclamp(kc, k_last4 if nk else None)))
                else:
                    kc = em.add(k0, r)
                    src = Bs[j].at(em.v(kclamp(kc, k_last if nk else None)), em.v(g))
                toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 4%s {bypassL1} : %s to %s" % (
                    src, sB[j], em.v(stage), em.v(r), em.v(c), size(kc), Bs[j].ty, sm_ty_b), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    em.comment("prologue: k-tiles 0..%d in flight" % (S - 2))
    grp = None
    for s in range(S - 1):
        grp = issue_loads(s, s, None)

    em.comment("fragment lane coordinates (loop invariant): g = lane/4, t = lane%4")
    g = em.shr(lane, 2)
    t = em.band(lane, 3)
    a_rows = [em.add(em.add(wm0, g), 16 * mi + 8 * h) for mi in range(MI) for h in range(2)]
    b_ns = [em.add(em.add(wn0, g), 8 * ni) for ni in range(NI)]
    ks = [em.add(t, 8 * kk + 4 * h) for kk in range(BK // 8) for h in range(2)]

    zero = em.const("dense<0.000000e+00>", acc_ty, "zero22")
    nacc = nb * MI * NI
    em.comment("accumulators: %s per m16n8 tile, index (j*%d + mi)*%d + ni for B_j, 16-row block mi, n8 block ni"
               % (acc_ty, MI, NI))
    res_names = em.fresh("acc")
    iter_args = ", ".join("%%a%d = %s" % (i, zero) for i in range(nacc))
    em.idx(0)
    kt_n = em.v(gg.sval(em, KT))
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

    def lds(buf, ty, i0, i1):
        x = em.op("memref.load %s[%s, %s, %s] : %s" % (buf, st, em.v(i0), em.v(i1), ty), "s")
        return em.op("func.call @to_tf32(%s) : (f32) -> f32" % x, "x")

    for kk in range(BK // 8):
        em.comment("k8 step %d" % kk)
        k_lo, k_hi = ks[2 * kk], ks[2 * kk + 1]
        afr = []
        for mi in range(MI):
            r0, r1 = a_rows[2 * mi], a_rows[2 * mi + 1]
            el = [lds(sA, sm_ty_a, r0, k_lo), lds(sA, sm_ty_a, r1, k_lo),
                  lds(sA, sm_ty_a, r0, k_hi), lds(sA, sm_ty_a, r1, k_hi)]
            afr.append(em.op("vector.from_elements %s : vector<4x1xf32>" % ", ".join(el), "fa"))
        bfr = []
        for j in range(nb):
            bj = []
            for ni in range(NI):
                if bnk:
                    el = [lds(sB[j], sm_ty_b, b_ns[ni], k_lo), lds(sB[j], sm_ty_b, b_ns[ni], k_hi)]
                else:
                    el = [lds(sB[j], sm_ty_b, k_lo, b_ns[ni]), lds(sB[j], sm_ty_b, k_hi, b_ns[ni])]
                bj.append(em.op("vector.from_elements %s : vector<2x1xf32>" % ", ".join(el), "fb"))
            bfr.append(bj)
        for j in range(nb):
            for mi in range(MI):
                for ni in range(NI):
                    i = acc_i(j, mi, ni)
                    accs[i] = em.op("func.call @mma_tf32(%s, %s, %s) : (vector<4x1xf32>, vector<2x1xf32>, %s) -> %s" % (
                        afr[mi], bfr[j][ni], accs[i], acc_ty, acc_ty), "d")
    em.emit("scf.yield %s : %s" % (", ".join(accs), ", ".join([acc_ty] * nacc)))
    em.indent -= 2
    em.emit("}")
    em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)

    em.comment("epilogue on the fragments: rows m0+wm0+16*mi+lane/4 (+8), columns n0+wn0+8*ni+2*(lane%4) (+1)")
    t2 = em.mul(t, 2)
    row_base = em.add(em.add(m0, wm0), g)
    col_base = em.add(em.add(n0, wn0), t2)

    def pair(j, mi, ni, h):
        return em.op("vector.extract %s#%d[%d] : vector<2xf32> from %s" % (
            res_names, acc_i(j, mi, ni), h, acc_ty), "c")

    gg.fragment_epilogue(em, helper, C, bias, res, nb, row_base, [16 * mi for mi in range(MI)],
                         col_base, [8 * ni for ni in range(NI)], pair,
                         m_bound=gg.sval(em, M) if masked else None,
                         n_bound=gg.sval(em, N) if nk else None)
    em.emit("gpu.return")

    launch = dict(block=[T, 1, 1], grid=[gg.sgrid(grid), 1, 1], smem=smem)
    header = [
        "precision: TF32 (tf32=1 only): operands rounded to TF32 (cvt.rna), f32 accumulation",
        "tiling: CTA %dx%dx%d, %d warps (%dx%d), warp tile %dx%d = %dx%d m16n8k8 tiles%s" % (
            BM, BN, BK, T // 32, warps_m, warps_n, WM, WN, MI, NI, " per B" if nb > 1 else ""),
        "pipeline: %d-stage cp.async.cg ring (16 B copies), one barrier per k-tile, %s k-tiles" % (S, KT),
        "smem: padded rows (A stride %d, B %s), conflict-free scalar fragment loads" % (
            lda, "[n][k] stride %d" % b_shape[1] if bnk else "[k][n] stride %d" % b_shape[1]),
        "launch: grid (%s,1,1) = %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), "
        "block (%d,1,1), dynamic smem %d B" % (grid, gm, gn, GROUP_M, T, smem),
    ]
    return gg.finish(cfg, em, ins, outs, names, launch, header, [tf32_helper(), "\n".join(helper.text)])
