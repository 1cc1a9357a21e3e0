"""f32 FMA GEMM (exact f32, fma.rn.f32, no tf32) fed by a cp.async ring
(kind "f32_cpasync"; gen_gemm.generate() calls generate(cfg, gen_gemm)).

Why: the f32_simt kernel is issue-bound (every non-FFMA instruction takes an
FFMA issue slot) and spends ~10% of its slots beside the 64 FFMA of a k-step:
global float4 loads into registers, scalar transposing stores of A into
shared memory, the register prefetch.  Here:

* A and B go global -> shared by nvgpu.device_async_copy (cp.async.cg, 16
  bytes, no register staging) into an S-stage ring; one commit group per
  k-tile, one cp.async.wait_group + one bar.sync per k-tile.
* A stays row-major in shared memory, [BM][BK + PAD] floats (PAD 4, or 8
  when BK/4 is odd): the pad keeps the 16-byte alignment of the copies and
  makes the row stride an odd number of
  16-byte units, so the (32/WTN) distinct rows that a warp reads at one
  k-offset fall in distinct bank groups.  A thread reads a float4 along k per
  row (4 k-steps of that row at once): TM LDS.128 per 4 k-steps.
* B is [BK][BN] row-major (n contiguous), read as float4 along n: TN/4
  LDS.128 per k-step; a warp reads WTN consecutive float4 of one k-row
  (one shared wavefront, the rest broadcast).
* Thread tile TM x TN (default 8 x 16, cuBLAS's SIMT SGEMM shape: 128
  accumulators): rows wm0 + ty + (32/WTN)*i (i < TM; strided, so that the
  rows read together are consecutive), columns wn0 + 4*tx + 4*WTN*j + {0..3}
  (j < TN/4; a warp reads and stores WTN contiguous float4).  The products
  are explicit vector.fma (vector<4xf32>, one lane per column) = TM*TN
  fma.rn.f32 per k-step per thread.  Per 4 k-steps: TM + TN LDS.128 for
  4*TM*TN FFMA (8 x 16: 24 per 512, 4.7%).
* PF=1 (default): software pipelining across the k-tile boundary.  All S
  stages are in flight (tiles kt+1..kt+S-1 land while kt is computed); at
  the last k-step of a tile the thread waits for tile kt+1, passes the
  barrier (after which nobody reads tile kt's stage any more: its last
  fragments are in registers), refills that stage with tile kt+S, loads the
  first fragments (A group 0, B row 0) of tile kt+1, and only then does the
  FFMA of the last k-step, so the LDS latency after the barrier is hidden
  behind TM*TN FFMA.  The fragments of step 0 are loop-carried.
  PF=0: the plain ring of gen_bf16_mma (wait, barrier, refill the stage of
  k-tile kt-1 with kt+S-1, compute kt; S-1 tiles in flight).
  The refill is issued after the fragment loads (also in the prologue):
  with no memory write after them in their block, LLVM's InstCombine folds
  the phi of the loop-carried loads into one load at the loop top, which
  undoes the prefetch and, the alignment of a phi'd address being unknown,
  turns each LDS.128 into 4 scalar LDS (seen in the PTX: 48 ld.shared.b32).
* PEEL=1 (default, PF only): the last S k-tiles run in a second copy of the
  loop whose refills are zero-size copies from a fixed address (one commit
  group per tile keeps the wait counts constant); the main loop's refills
  are always in range, so their addresses are affine in kt (no select; LLVM
  turns them into two pointer increments).  The copy assignments are
  written as row tid/W + i*T/W, so all copies of a thread are one base
  address plus immediate offsets.
* BK: the k-tile loop is fully unrolled (BK * TM * TN FFMA per iteration);
  per-tile overhead (barrier, wait, cp.async, addresses, loop) shrinks with
  BK, the loop body grows (BK 8: ~1100 instructions = ~17 KB of SASS, BK
  16: ~35 KB, BK 4: ~9 KB).  f32_simt lost 7-10% going from a ~19 KB to a
  ~37 KB body (bench/NOTES.md), possibly instruction fetch, so BK 8
  (cuBLAS's SIMT kernels use x8) is the first choice, BK 4 and 16 bracket it.
* Epilogue on the registers: EpilogueHelper on float4 row pieces, float4
  stores (each warp store: 32/WTN rows x WTN contiguous float4).

Knobs (cfg): BM, BN, BK (multiple of 4), TM, TN (multiple of 4), WTN (threads
of a warp along N), stages, PF, PEEL, PAD, group_m, minctasm.  Block = 32 * (BM / (TM *
32/WTN)) * (BN / (TN * WTN)) threads.  Registers: 8 x 16 needs ~200-230, so
minctasm must leave 255 (minctasm 2 with 128 threads: ptxas uses 255 on
sm_90, 208-255 on sm_80, no spills, for the three f32 subgraphs).  Checked
before any device run by interpreting the generated MLIR for small shapes
(every thread, all CTAs, cp.async landing at issue and at the latest wait)
against an exact reference; shapes must divide the tiles (asserted).
"""

V4 = "vector<4xf32>"


def generate(cfg, g):
    ins, outs = g.parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    TM, TN = cfg.get("TM", 8), cfg.get("TN", 16)
    WTN = cfg.get("WTN", 4)                  # threads of a warp along N
    WTM = 32 // WTN                          # threads of a warp along M
    S = cfg.get("stages", 4)
    PF = cfg.get("PF", 1)
    PEEL = cfg.get("PEEL", 1)                # PF only: peel the last S k-tiles (no zero-fill selects)
    GROUP_M = cfg["group_m"]
    assert WTM * WTN == 32 and TN % 4 == 0 and BK % 4 == 0
    WR, WC = WTM * TM, WTN * TN              # warp tile rows, columns
    assert BM % WR == 0 and BN % WC == 0, "CTA tile must be a whole number of warp tiles"
    WARPS_M, WARPS_N = BM // WR, BN // WC
    T = 32 * WARPS_M * WARPS_N
    assert M % BM == 0 and N % BN == 0 and K % BK == 0, "shapes must divide the tiles"
    KT = K // BK
    assert KT >= S, "the prologue fills all stages"
    assert S >= 2
    PAD = cfg.get("PAD", 4 if (BK // 4) % 2 == 0 else 8)
    LDA = BK + PAD
    assert (LDA // 4) % 2 == 1, "row stride must be an odd number of 16-byte units"
    gm, gn = M // BM, N // BN
    grid = gm * gn
    a_floats = S * BM * LDA
    b_floats = S * BK * BN
    smem = (a_floats + b_floats) * 4
    NA = BM * BK // 4                        # 16-byte chunks of an A tile
    NB = BK * BN // 4
    assert NA % T == 0 and NB % T == 0, "copies must divide among the threads"
    TNC = TN // 4                            # float4 column chunks per thread
    G = BK // 4                              # k groups (one A float4 per row) per tile

    em = g.Emitter()
    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = g.operands(em, cfg, ins, outs, names)
    assert len(Bs) == 1
    B = Bs[0]
    helper = g.EpilogueHelper(cfg, 4, 1, bias.dt if bias else None, res.dt if res else None, C.dt)
    sa_ty = g.memref_ty([S, BM, LDA], "f32", g.WG)
    sb_ty = g.memref_ty([S, BK, BN], "f32", g.WG)

    em.comment("CTA tile (pid_m, pid_n): grouped raster over %dx%d tiles, GROUP_M=%d by default (a tune knob)" % (gm, gn, GROUP_M))
    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    pid_m, pid_n = g.grouped_raster(em, pid, gm, gn, GROUP_M)
    m0 = em.mul(pid_m, BM)
    n0 = em.mul(pid_n, BN)
    lane = em.rem(tid, 32)
    warp = em.div(tid, 32)
    wm0 = em.mul(em.div(warp, WARPS_N), WR)
    wn0 = em.mul(em.rem(warp, WARPS_N), WC)
    ty = em.div(lane, WTN)
    tx = em.rem(lane, WTN)

    em.comment("shared memory: A[%d stages][%d m][%d k + %d pad], then B[%d][%d k][%d n], f32" % (
        S, BM, BK, PAD, S, BK, BN))
    smem_v = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % g.WG, "smem")
    sA = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(0), g.WG, sa_ty), "sA")
    sB = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (smem_v, em.idx(a_floats * 4), g.WG, sb_ty), "sB")

    em.comment("cp.async assignments (loop invariant): consecutive threads copy consecutive 16-byte chunks of a row")
    # chunk q = tid + i*T of a tile with W chunks per row: row q / W, chunk q % W; with T % W == 0
    # written as row tid/W + i*T/W, chunk tid%W, so that all copies of a thread differ by constants
    assert T % (BK // 4) == 0 and T % (BN // 4) == 0
    a_r0 = em.div(tid, BK // 4)
    a_c = em.mul(em.rem(tid, BK // 4), 4)
    a_copies = []
    for i in range(NA // T):
        r = em.add(a_r0, i * (T // (BK // 4)))
        a_copies.append((r, a_c, em.add(m0, r)))
    b_r0 = em.div(tid, BN // 4)
    b_c = em.mul(em.rem(tid, BN // 4), 4)
    b_gc = em.add(n0, b_c)
    b_copies = []
    for i in range(NB // T):
        b_copies.append((em.add(b_r0, i * (T // (BN // 4))), b_c, b_gc))

    def issue_loads(kt_load, stage, valid):
        """k-tile kt_load -> stage; when valid (i1) is false the copies read
        nothing and zero-fill, so that every k-tile commits one group."""
        if valid is None:
            ktc, tail = kt_load, ""
        elif valid is False:
            # past the end (peeled tail loop): read nothing from a fixed address, zero-fill
            ktc, tail = None, ", %s" % em.idx(0)
        else:
            ktc = em.op("arith.select %s, %s, %s : index" % (valid, em.v(kt_load), em.idx(0)), "kc")
            tail = ", %s" % em.op("arith.select %s, %s, %s : index" % (valid, em.idx(4), em.idx(0)), "n")
        k0 = em.mul(ktc, BK) if ktc is not None else None
        toks = []
        for (r, c, grow) in a_copies:
            src = A.at(em.v(grow), em.v(em.add(k0, c))) if k0 is not None else A.at(em.idx(0), em.idx(0))
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 4%s {bypassL1} : %s to %s" % (
                src, sA, em.v(stage), em.v(r), em.v(c), tail, A.ty, sa_ty), "cp"))
        for (kr, c, gcol) in b_copies:
            src = B.at(em.v(em.add(k0, kr)), em.v(gcol)) if k0 is not None else B.at(em.idx(0), em.idx(0))
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s, %s, %s], 4%s {bypassL1} : %s to %s" % (
                src, sB, em.v(stage), em.v(kr), em.v(c), tail, B.ty, sb_ty), "cp"))
        return em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")

    em.comment("this thread's rows: wm0 + ty + %d*i (i < %d); columns wn0 + 4*tx + %d*j + {0..3} (j < %d)" % (
        WTM, TM, 4 * WTN, TNC))
    rows = [em.add(em.add(wm0, ty), WTM * i) for i in range(TM)]
    cols = [em.add(em.add(wn0, em.mul(tx, 4)), 4 * WTN * j) for j in range(TNC)]

    def load_a(stage, grp_k):
        """A[rows[i]][4*grp_k .. +3] of stage: TM float4 (4 k-steps of each row)"""
        return [em.op("vector.load %s[%s, %s, %s] : %s, %s" % (
            sA, em.v(stage), em.v(rows[i]), em.idx(4 * grp_k), sa_ty, V4), "a") for i in range(TM)]

    def load_b(stage, k):
        """B[k][cols[j] .. +3] of stage: TNC float4"""
        return [em.op("vector.load %s[%s, %s, %s] : %s, %s" % (
            sB, em.v(stage), em.idx(k), em.v(cols[j]), sb_ty, V4), "b") for j in range(TNC)]

    def fma_step(accs, av, kk, bv):
        """accs[i][j] += A[row i][k] * B[k][cols j]; A[row i][k] = lane kk of av[i]"""
        out = []
        for i in range(TM):
            a = em.op("vector.extract %s[%d] : f32 from %s" % (av[i], kk, V4), "s")
            ab = em.op("vector.broadcast %s : f32 to %s" % (a, V4), "s")
            out.append([em.op("vector.fma %s, %s, %s : %s" % (ab, bv[j], accs[i][j], V4), "acc")
                        for j in range(TNC)])
        return out

    def stage_next(st):
        if S & (S - 1) == 0:
            return em.band(em.add(st, 1), S - 1)
        n1 = em.add(st, 1)
        wrap = em.op("arith.cmpi eq, %s, %s : index" % (n1, em.idx(S)), "p")
        return em.op("arith.select %s, %s, %s : index" % (wrap, em.idx(0), n1), "st")

    zero = em.const("dense<0.000000e+00>", V4, "zero4")
    nacc = TM * TNC
    res_names = em.fresh("acc")
    if PF:
        em.comment("prologue: k-tiles 0..%d in flight; wait for k-tile 0; its first fragments; k-tile %d" % (S - 2, S - 1))
        grp = None
        for s in range(S - 1):
            grp = issue_loads(s, s, None)
        em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, S - 2))
        em.emit("gpu.barrier")
        a0 = load_a(0, 0)
        b0 = load_b(0, 0)
        # k-tile S-1 is issued after the fragment loads: a memory write after
        # them in their block keeps LLVM's InstCombine from folding the phi of
        # the loop-carried fragment loads into one load at the loop top (which
        # undoes the prefetch and loses the 16-byte alignment: scalar LDS)
        grp = issue_loads(S - 1, S - 1, None)
        em.comment("loop-carried: %d accumulators %s (i*%d + j: row i, column chunk j), A group 0 (%d), B row 0 (%d), stage of kt" % (
            nacc, V4, TNC, TM, TNC))
        init = [zero] * nacc + a0 + b0 + [em.idx(0)]
        tys = [V4] * (nacc + TM + TNC) + ["index"]

        def kloop(lo, hi, init, peeled_tail):
            """k-tiles [lo, hi); the refill is tile kt+S: always in range in the
            main loop when PEEL, past the end (zero-fill) in the peeled tail"""
            names = ["%%a%d" % i for i in range(nacc)] + ["%%fa%d" % i for i in range(TM)] + \
                ["%%fb%d" % j for j in range(TNC)] + ["%st"]
            res = em.fresh("acc")
            em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%s) -> (%s) {" % (
                res, len(tys), em.idx(lo), em.idx(hi), em.idx(1),
                ", ".join("%s = %s" % (n, v) for n, v in zip(names, init)), ", ".join(tys)))
            em.indent += 2
            accs = [["%%a%d" % (i * TNC + j) for j in range(TNC)] for i in range(TM)]
            av = ["%%fa%d" % i for i in range(TM)]
            bv = ["%%fb%d" % j for j in range(TNC)]
            st = "%st"
            for k in range(BK):
                kk = k % 4
                if k + 1 < BK:
                    em.comment("k-step %d; fragments of k-step %d" % (k, k + 1))
                    bn = load_b(st, k + 1)
                    an = load_a(st, (k + 1) // 4) if (k + 1) % 4 == 0 else av
                else:
                    em.comment("k-step %d (last): k-tile kt+1 has landed (<= %d younger groups pending); after the barrier" % (k, S - 2))
                    em.comment("no warp reads this stage any more: refill it with k-tile kt+%d%s" % (
                        S, " (past the end: zero-fill)" if peeled_tail else ""))
                    em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, S - 2))
                    em.emit("gpu.barrier")
                    stn = stage_next(st)
                    em.comment("first fragments of k-tile kt+1 (stage %s), the refill (after the loads: see the prologue)," % stn)
                    em.comment("then the FFMA of k-step %d" % k)
                    an = load_a(stn, 0)
                    bn = load_b(stn, 0)
                    kl = em.add("%kt", S)
                    if peeled_tail:
                        issue_loads(kl, st, False)
                    elif PEEL:
                        issue_loads(kl, st, None)
                    else:
                        valid = em.op("arith.cmpi ult, %s, %s : index" % (kl, em.idx(KT)), "p")
                        issue_loads(kl, st, valid)
                accs = fma_step(accs, av, kk, bv)
                av, bv = an, bn
            flat = [accs[i][j] for i in range(TM) for j in range(TNC)]
            em.emit("scf.yield %s : %s" % (", ".join(flat + av + bv + [stn]), ", ".join(tys)))
            em.indent -= 2
            em.emit("}")
            return res

        if PEEL:
            em.comment("main loop: k-tiles 0..%d, refills in range (no select: affine addresses)" % (KT - S - 1))
            r1 = kloop(0, KT - S, init, False)
            em.comment("peeled tail: the last %d k-tiles, zero-size refills keep one commit group per tile" % S)
            res_names = kloop(KT - S, KT, ["%s#%d" % (r1, i) for i in range(len(tys))], True)
        else:
            res_names = kloop(0, KT, init, False)
        em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)
    else:
        em.comment("prologue: k-tiles 0..%d in flight" % (S - 2))
        grp = None
        for s in range(S - 1):
            grp = issue_loads(s, s, None)
        iter_args = ["%%a%d = %s" % (i, zero) for i in range(nacc)]
        tys = [V4] * nacc
        em.emit("%s:%d = scf.for %%kt = %s to %s step %s iter_args(%s) -> (%s) {" % (
            res_names, nacc, em.idx(0), em.idx(KT), em.idx(1), ", ".join(iter_args), ", ".join(tys)))
        em.indent += 2
        em.comment("k-tile kt has landed (<= %d younger groups pending); every warp is done with k-tile kt-1" % (S - 2))
        em.emit("nvgpu.device_async_wait %s {numGroups = %d : i32}" % (grp, S - 2))
        em.emit("gpu.barrier")
        em.comment("refill the stage of k-tile kt-1 with k-tile kt+%d (zero-fill past the end)" % (S - 1))
        kl = em.add("%kt", S - 1)
        valid = em.op("arith.cmpi ult, %s, %s : index" % (kl, em.idx(KT)), "p")
        issue_loads(kl, em.rem(kl, S), valid)
        st = em.rem("%kt", S)
        accs = [["%%a%d" % (i * TNC + j) for j in range(TNC)] for i in range(TM)]
        for k in range(BK):
            if k % 4 == 0:
                av = load_a(st, k // 4)
            em.comment("k-step %d" % k)
            bv = load_b(st, k)
            accs = fma_step(accs, av, k % 4, bv)
        flat = [accs[i][j] for i in range(TM) for j in range(TNC)]
        em.emit("scf.yield %s : %s" % (", ".join(flat), ", ".join(tys)))
        em.indent -= 2
        em.emit("}")
        em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)

    em.comment("epilogue: row m0 + rows[i], float4 column chunk n0 + cols[j]")
    gcols = [em.add(n0, cols[j]) for j in range(TNC)]
    bvs = [bias.load(em, [gcols[j]], 4, "bias") if bias else None for j in range(TNC)]
    for i in range(TM):
        row = em.add(m0, rows[i])
        for j in range(TNC):
            rv = res.load(em, [row, gcols[j]], 4, "res") if res else None
            y = helper.call(em, ["%s#%d" % (res_names, i * TNC + j)], bvs[j], rv)
            em.emit("vector.store %s, %s : %s, %s" % (y, C.at(row, gcols[j]), C.ty, V4))
    em.emit("gpu.return")

    launch = dict(block=[T, 1, 1], grid=[grid, 1, 1], smem=smem)
    header = [
        "tiling: CTA %dx%dx%d, %d threads = %d warps (%d m x %d n), warp tile %dx%d = %d x %d threads of %dx%d outputs" % (
            BM, BN, BK, T, T // 32, WARPS_M, WARPS_N, WR, WC, WTM, WTN, TM, TN),
        "  thread rows wm0 + ty + %d*i, columns wn0 + 4*tx + %d*j + {0..3}; vector.fma on float4 = fma.rn.f32 (no tf32)" % (
            WTM, 4 * WTN),
        "smem: A row-major [%d][%d][%d+%d pad] (float4 along k per row), B [%d][%d][%d] (float4 along n)" % (
            S, BM, BK, PAD, S, BK, BN),
        "pipeline: %d-stage cp.async.cg ring (16 B copies, no register staging), one barrier per k-tile, %d k-tiles%s" % (
            S, KT, "; fragments of k-step 0 of tile kt+1 loaded before the last k-step of kt (PF)" if PF else ""),
        "launch: grid (%d,1,1) = %d x %d tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
            grid, gm, gn, GROUP_M, T, smem),
    ]
    return g.finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])
