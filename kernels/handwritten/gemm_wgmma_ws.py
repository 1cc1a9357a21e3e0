"""Warp-specialized bf16 wgmma GEMM (sm_90a), kind `bf16_wgmma_ws`.

Called from gen_gemm.generate() as generate(cfg, g) with g = the gen_gemm
module (Emitter, operands, EpilogueHelper, grouped_raster, fragment_epilogue,
finish, ...).  Same math, shared-memory layouts and wgmma descriptors as
gen_gemm.gen_bf16_wgmma (verified on the H200); what changes is who loads and
how the warpgroups synchronize:

* 3 warpgroups, 384 threads.  Warpgroup 0 is the producer: it only issues
  cp.async (nvgpu.device_async_copy, 16 B, bypassL1) into an S-stage ring of
  128-byte-swizzled stages.  Warpgroups 1 and 2 are the consumers: 64 rows x
  BN of the 128 x BN CTA tile each, wgmma.mma_async m64nWGNk16 straight from
  shared memory, f32 accumulators in registers, then the fused epilogue on
  the fragments (gen_gemm.fragment_epilogue).
* No CTA barrier after the set-up: two groups of S mbarriers (nvgpu.mbarrier),
  full[s] ("stage s holds its k-tile", 32 arrivals: the lanes of the producer
  warp that loaded it) and empty[s] ("stage s may be overwritten", one
  arrival per consumer warp = 8).  Waits are nvgpu.mbarrier.try_wait.parity
  (a suspend/retry loop).  The k-tile with global index g (g counts k-tiles
  over all the tiles a CTA computes) lives in stage g % S, lap L = g / S:
  consumers wait full[s] for the completion of phase L (parity L & 1); the
  producer waits empty[s] for phase L - 1 (parity (L & 1) ^ 1: on lap 0 the
  "preceding phase" of a fresh barrier counts as complete, so the first S
  stages are filled without waiting).
* cp.async has no completion-to-mbarrier path here (cp.async.mbarrier.arrive
  wants an LLVM pointer; the contract forbids pointer casts and inline asm),
  so each producer warp signals its own loads: producer warp w (of P = gcd(S,
  4)) owns the k-tiles g = w mod P, i.e. the stages s = w mod P.  Per k-tile:
  wait empty[s]; all 32 lanes issue the whole k-tile's copies; commit;
  cp.async.wait_group 0 (its own copies landed); fence.proxy.async.shared::cta
  (the generic-proxy writes ordered before the async-proxy wgmma reads, by
  the writing thread, before its release); mbarrier.arrive (release) on
  full[s].  A warp blocks only on its own k-tile, while the other P-1 warps
  keep theirs in flight: no coupling between "signal tile j" and "issue tile
  j+D" as with one producer thread set holding D groups.  A parity wait is
  only sound if the barrier is at most one phase behind the awaited one: a
  producer warp at k-tile g has finished its k-tile g-P, so the consumers
  (which go in order) released g-P-S >= g-2S, i.e. empty[s] is past phase
  L-2 when the warp waits for L-1 (P <= S suffices; S % P == 0 is asserted
  anyway, each stage then has one warp).  Consumers pass every lap of every
  stage in order, and no arrival can land in a phase early: a producer
  arrival for lap L needs empty phase L-1, which needs every consumer warp
  to have waited full phase L-1; a consumer arrival for lap L needs full
  phase L, which needs empty phase L-1.
* The smem layout is stage-major, [A | B_0 | .. | B_nb-1] per stage, so that
  the nb B tiles of a stage are consecutive 64-column atoms LBO apart and one
  wgmma may span them: WGN defaults to min(nb*BN, 256), i.e. one
  m64n256k16 per k16 step for both targets (the SwiGLU's gate and up tiles
  side by side: accumulator columns 0..BN-1 = A@B_0, BN.. = A@B_1).  Fewer,
  wider wgmmas read A from shared memory once per 256 columns instead of
  per 128 (80 instead of 96 B/clk of wgmma operand reads per SM at full
  rate, beside the 48 B/clk of cp.async writes; 128 B/clk is the SM's
  shared-memory bandwidth).
* Consumers, per k-tile: wait full[s] (acquire), [optional extra
  fence.proxy.async, cfg cfence=1], wgmma.fence, the BK/16 x nb x BN/WGN
  wgmmas, commit, wgmma.wait_group 1 (the k-tile before is retired), lane 0
  of each warp arrives on empty of that previous k-tile's stage.  After the
  k loop: wait_group 0 and release the last stage, then the epilogue.
* nvvm.setmaxregister: producer decrease to REGP, consumers increase to REGC:
  40/232 (56/224 when persistent; the persistent producer spills at 40),
  128 x 40 + 256 x 232 = 128 x 56 + 256 x 224 = 64512 = 384 x 168, the launch
  allocation (ptxas reports 168 registers; a smaller entry count would make
  the consumers' increase wait forever).
* The first k-tile of a tile is peeled with scale-d 0 on its first k16 step
  (undefined accumulator inputs): no zeroing moves between wgmma.fence and
  the wgmmas, which made ptxas inject a warpgroup.wait (C7517).
* persistent=1: grid = G CTAs (default 132, the H200's SMs), each walking the
  tiles t = pid, pid+G, ... in grouped raster order; the barrier phases
  continue across tiles (global k-tile counter), so the producer fills the
  ring for tile i+1 while the consumers run the epilogue of tile i.
  persistent=0: one tile per CTA (grid = #tiles), same code.

Knobs (--set K=V): BN (<= 256, multiple of 64), stages (S), WGN (N of one
wgmma, default min(nb*BN, 256)), group_m, persistent (0/1), grid (persistent
CTAs, default 132), P (producer warps, default gcd(S, 4)), REGP / REGC,
cfence (0/1).
"""

import math


def generate(cfg, g):
    ins, outs = g.parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    BN, BK, S = cfg["BN"], 64, cfg["stages"]
    BM = 128
    GROUP_M = cfg["group_m"]
    nb = len(cfg["b"])
    T = 384
    P = cfg.get("P", math.gcd(S, 4))
    persistent = cfg.get("persistent", 0)
    # the persistent producer keeps more addresses live (40 spills 24 B on the SwiGLU)
    REGP, REGC = cfg.get("REGP", 56 if persistent else 40), cfg.get("REGC", 224 if persistent else 232)
    cfence = cfg.get("cfence", 0)
    assert BN % 64 == 0 and BN <= 256 and S >= 2 and S % P == 0 and 1 <= P <= 4
    assert 128 * REGP + 256 * REGC <= 65536 and REGP % 8 == 0 and REGC % 8 == 0
    assert M % BM == 0 and N % BN == 0 and K % BK == 0
    KT = K // BK
    assert KT % P == 0
    gm, gn = M // BM, N // BN
    ntiles = gm * gn
    grid = min(cfg.get("grid", 132), ntiles) if persistent else ntiles
    a_bytes = BM * BK * 2
    b_bytes = BK * BN * 2
    stage_bytes = a_bytes + nb * b_bytes            # stage-major: [A | B_0 | .. | B_nb-1] per stage
    smem = S * stage_bytes + 1024                   # + alignment slack
    assert smem <= 227 * 1024 - 16 * S, "stages do not fit"
    # the nb B tiles of a stage are adjacent 64-column atoms (LBO apart), so one
    # wgmma may span them: N of one wgmma over the nb*BN combined columns
    WGN = cfg.get("WGN", min(nb * BN, 256))
    nsub = nb * BN // WGN
    assert (nb * BN) % WGN == 0 and WGN % 64 == 0 and WGN <= 256
    nacc = WGN // 2
    sw_lbo, sw_sbo = BK * 128, 1024
    cpr = BN // 8                                    # 16-byte chunks per B k-row

    em = g.Emitter()
    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = g.operands(em, cfg, ins, outs, names)
    helper = g.EpilogueHelper(cfg, 2, nb, bias.dt if bias else None, res.dt if res else None, C.dt)
    WG = g.WG

    grp_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = %d>" % (WG, S)
    tok_ty = "!nvgpu.mbarrier.token"
    ticks = em.idx(10000000)

    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    wg = em.div(tid, 128)
    lane = em.rem(tid, 32)

    em.comment("shared memory, base aligned to 1024 B: A[S][128 x 64], then B_j[S][%d atoms][64 k][64 n], bf16" % (BN // 64))
    sbase, sflat, sm_ty = g.aligned_smem_bf16(em, smem)

    em.comment("mbarriers: full[s] (32 arrivals: the producer warp's lanes), empty[s] (%d arrivals: one per consumer warp)" % 8)
    full = em.op("nvgpu.mbarrier.create -> %s" % grp_ty, "full")
    empty = em.op("nvgpu.mbarrier.create -> %s" % grp_ty, "empty")
    is_t0 = em.op("arith.cmpi eq, %s, %s : index" % (tid, em.idx(0)), "p")
    em.emit("scf.if %s {" % is_t0)
    em.indent += 2
    for s in range(S):
        em.emit("nvgpu.mbarrier.init %s[%s], %s : %s" % (full, em.idx(s), em.idx(32), grp_ty))
        em.emit("nvgpu.mbarrier.init %s[%s], %s : %s" % (empty, em.idx(s), em.idx(8), grp_ty))
    em.indent -= 2
    em.emit("}")
    em.emit("nvvm.fence.mbarrier.init")
    em.emit("gpu.barrier")

    def parity(lap, flip):
        b = em.band(lap, 1)
        if isinstance(b, int):
            return em.const_op("arith.constant %s" % ("true" if (b ^ flip) else "false"), "bool%d" % (b ^ flip))
        return em.op("arith.cmpi %s, %s, %s : index" % ("eq" if flip else "ne", b, em.idx(0)), "par")

    def tile_loop(body):
        """body(tile_index, tile_iter) once (grid = #tiles) or over the CTA's tiles."""
        if not persistent:
            body(pid, 0)
            return
        t = em.fresh("tile")
        em.emit("scf.for %s = %s to %s step %s {" % (t, pid, em.idx(ntiles), em.idx(grid)))
        em.indent += 2
        it = em.div(em.op("arith.subi %s, %s : index" % (t, pid), "i"), grid)
        body(t, it)
        em.indent -= 2
        em.emit("}")

    is_prod = em.op("arith.cmpi eq, %s, %s : index" % (wg, em.idx(0)), "p")
    em.emit("scf.if %s {" % is_prod)
    em.indent += 2
    # ------------------------------------------------------------------ producer
    em.comment("producer warpgroup: %d warp(s) load, warp w the k-tiles g = w mod %d" % (P, P))
    em.emit("nvvm.setmaxregister decrease %d" % REGP)
    pw = em.div(tid, 32)
    act = em.op("arith.cmpi ult, %s, %s : index" % (pw, em.idx(P)), "p")
    em.emit("scf.if %s {" % act)
    em.indent += 2

    # lane -> copies of one k-tile (element offsets); A: chunk lane%8 of rows lane/8 + 4i
    a_c = em.rem(lane, 8)
    a_r = em.div(lane, 8)
    a_r64 = em.mul(a_r, 64)
    a_x = [em.mul(em.xor(em.xor(a_c, a_r), 4 * h), 8) for h in range(2)]   # (c ^ (r % 8)) * 8, r%8 = lane/8 + 4*(i%2)
    if cpr >= 32:
        b_sets = [(em.add(lane, 32 * q), 0, 1) for q in range(cpr // 32)]   # (chunk, k-row of lane, rows per instr)
    else:
        rp = 32 // cpr
        b_sets = [(em.rem(lane, cpr), em.div(lane, cpr), rp)]

    def producer_tile(tile, it):
        pid_m, pid_n = g.grouped_raster(em, tile, gm, gn, GROUP_M)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        kt = em.fresh("kt")
        em.emit("scf.for %s = %s to %s step %s {" % (kt, pw, em.idx(KT), em.idx(P)))
        em.indent += 2
        gk = em.add(em.mul(it, KT), kt)
        st = em.rem(gk, S)
        lap = em.div(gk, S)
        em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (empty, st, parity(lap, True), ticks, grp_ty))
        k0 = em.mul(kt, BK)
        toks = []
        ao = em.mul(st, stage_bytes // 2)
        arow = em.add(m0, a_r)
        acol = em.add(k0, em.mul(a_c, 8))
        for i in range(BM // 4):
            dst = em.add(em.add(ao, a_x[i % 2]), em.add(a_r64, i * 4 * 64))   # row a_r + 4i
            toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8 {bypassL1} : %s to %s" % (
                A.at(em.v(em.add(arow, 4 * i)), em.v(acol)), sflat, em.v(dst), A.ty, sm_ty), "cp"))
        for j in range(nb):
            bo = em.add(em.mul(st, stage_bytes // 2), (a_bytes + j * b_bytes) // 2)
            for (cc, kl, rp) in b_sets:
                # chunk cc of k-row k = kl + rp*i: atom cc/8, chunk (cc%8) ^ (k%8), k%8 = kl + rp*(i % (8/rp))
                inv = em.xor(em.rem(cc, 8), kl)
                gcol = em.add(n0, em.mul(cc, 8))
                base = em.add(bo, em.mul(em.div(cc, 8), BK * 64))
                for i in range(BK // rp):
                    k = em.add(kl, rp * i)
                    x = em.mul(em.xor(inv, rp * (i % (8 // rp))), 8)
                    dst = em.add(em.add(base, x), em.mul(k, 64))
                    toks.append(em.op("nvgpu.device_async_copy %s, %s[%s], 8 {bypassL1} : %s to %s" % (
                        Bs[j].at(em.v(em.add(k0, k)), em.v(gcol)), sflat, em.v(dst), Bs[j].ty, sm_ty), "cp"))
        grp = em.op("nvgpu.device_async_create_group %s" % ", ".join(toks), "grp")
        em.emit("nvgpu.device_async_wait %s {numGroups = 0 : i32}" % grp)
        em.emit("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}")
        em.op("nvgpu.mbarrier.arrive %s[%s] : %s -> %s" % (full, st, grp_ty, tok_ty), "tok")
        em.indent -= 2
        em.emit("}")

    tile_loop(producer_tile)
    em.indent -= 2
    em.emit("}")
    em.indent -= 2
    em.emit("} else {")
    em.indent += 2
    # ------------------------------------------------------------------ consumers
    em.comment("consumer warpgroups 1, 2: rows 64*(wg-1).. of the CTA tile")
    em.emit("nvvm.setmaxregister increase %d" % REGC)
    ci = em.add(wg, -1)
    wq = em.rem(em.div(tid, 32), 4)
    lane0 = em.op("arith.cmpi eq, %s, %s : index" % (lane, em.idx(0)), "p")

    desc, k_hi_a, k_hi_b = g.wgmma_descriptors(em, sw_lbo, sw_sbo)

    acc_ty = "!llvm.struct<(%s)>" % ", ".join(["f32"] * nacc)
    undef = em.const_op("llvm.mlir.undef : %s" % acc_ty, "uacc")
    wg_row_bytes = em.mul(ci, 64 * 128)
    nst = nsub

    def consumer_tile(tile, it):
        pid_m, pid_n = g.grouped_raster(em, tile, gm, gn, GROUP_M)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        g0 = em.mul(it, KT)
        def ktile(gk, accs, first):
            """wait for k-tile gk's stage, issue its wgmmas (the first k16 step of a
            tile with scale-d 0: no zeroed accumulators, no register writes between
            wgmma.fence and the wgmmas), commit"""
            st = em.rem(gk, S)
            lap = em.div(gk, S)
            em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (
                full, em.v(st), parity(lap, False), ticks, grp_ty))
            if cfence:
                em.emit("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}")
            stage = em.add(sbase, em.mul(st, stage_bytes))
            a_base = em.add(stage, wg_row_bytes)
            b_base = em.add(stage, a_bytes)
            accs = list(accs)
            em.emit("nvvm.wgmma.fence.aligned")
            for kk in range(BK // 16):
                da = desc(em.add(a_base, kk * 32), k_hi_a)
                for sub in range(nsub):
                    if True:
                        # columns WGN*sub.. of [B_0 | B_1 ..]: (WGN/64)*sub atoms of LBO bytes in
                        db = desc(em.add(b_base, kk * 2048 + sub * (WGN // 64) * BK * 128), k_hi_b)
                        i = sub
                        accs[i] = em.op(("nvvm.wgmma.mma_async %s, %s, %s, #nvvm.shape<m = 64, n = %d, k = 16>, "
                                         "D [<f32>, #nvvm.wgmma_scale_out<%s>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>], "
                                         "B [<bf16>, #nvvm.wgmma_scale_in<one>, <row>] : %s -> %s") % (
                                             da, db, accs[i], WGN, "zero" if first and kk == 0 else "one",
                                             acc_ty, acc_ty), "w")
            em.emit("nvvm.wgmma.commit.group.sync.aligned")
            return accs

        def release(gk):
            em.emit("scf.if %s {" % lane0)
            em.indent += 2
            em.op("nvgpu.mbarrier.arrive %s[%s] : %s -> %s" % (empty, em.v(em.rem(gk, S)), grp_ty, tok_ty), "tok")
            em.indent -= 2
            em.emit("}")

        em.comment("k-tile 0 of the tile (peeled: scale-d 0 starts the accumulators)")
        first = ktile(g0, [undef] * nst, True)
        res_names = em.fresh("acc")
        kt = em.fresh("kt")
        iter_args = ", ".join("%%a%d = %s" % (j, first[j]) for j in range(nst))
        em.emit("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {" % (
            res_names, nst, kt, em.idx(1), em.idx(KT), em.idx(1), iter_args, ", ".join([acc_ty] * nst)))
        em.indent += 2
        gk = em.add(g0, kt)
        accs = ktile(gk, ["%%a%d" % j for j in range(nst)], False)
        em.emit("nvvm.wgmma.wait.group.sync.aligned 1")
        em.comment("k-tile gk-1's wgmmas are retired: lane 0 of each warp releases its stage")
        release(em.add(gk, S - 1))
        em.emit("scf.yield %s : %s" % (", ".join(accs), ", ".join([acc_ty] * nst)))
        em.indent -= 2
        em.emit("}")
        em.emit("nvvm.wgmma.wait.group.sync.aligned 0")
        em.comment("release the last k-tile's stage (the producer may fill it for the next tile)")
        release(em.add(g0, KT - 1))

        em.comment("epilogue: D fragment = per warp 16 rows; register 4*ni + {0,1} at (lane/4, 8*ni + 2*(lane%4) + {0,1}), + {2,3} at row + 8")

        def pair(j, mi, ni, h):
            sub, nl = divmod(j * (BN // 8) + ni, WGN // 8)
            st_i = sub
            e0 = em.op("llvm.extractvalue %s#%d[%d] : %s" % (res_names, st_i, nl * 4 + 2 * h, acc_ty), "c")
            e1 = em.op("llvm.extractvalue %s#%d[%d] : %s" % (res_names, st_i, nl * 4 + 2 * h + 1, acc_ty), "c")
            return em.op("vector.from_elements %s, %s : vector<2xf32>" % (e0, e1), "c")

        gq = em.shr(lane, 2)
        t2 = em.mul(em.band(lane, 3), 2)
        row_base = em.add(em.add(em.add(m0, em.mul(ci, 64)), em.mul(wq, 16)), gq)
        col_base = em.add(n0, t2)
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, [0], col_base, [8 * ni for ni in range(BN // 8)], pair)

    tile_loop(consumer_tile)
    em.indent -= 2
    em.emit("}")
    em.emit("gpu.return")

    launch = dict(block=[T, 1, 1], grid=[grid, 1, 1], smem=smem)
    header = [
        "warp-specialized (sm_90a): CTA %dx%dx%d, producer warpgroup (%d cp.async warp(s), setmaxnreg %d) + 2 consumer "
        "warpgroups of 64 rows (setmaxnreg %d), each %d x %d wgmma.mma_async m64n%dk16 per k-tile%s" % (
            BM, BN, BK, P, REGP, REGC, BK // 16, nsub, WGN, " over the %d B tiles side by side" % nb if nb > 1 else ""),
        "pipeline: %d-stage ring, mbarriers full[s] (producer warp: cp.async.wait_group 0, fence.proxy.async, arrive) "
        "and empty[s] (consumer warps after wgmma.wait_group 1); %d k-tiles per tile" % (S, KT),
        "smem: stage-major [A 128x64 | B_j 64x%d ...], 128B-swizzled canonical layouts, A K-major (SBO 1024), "
        "B MN-major (LBO %d, SBO %d), base aligned to 1024 B" % (BN, sw_lbo, sw_sbo),
        "launch: grid (%d,1,1)%s over %d x %d tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
            grid, " persistent CTAs striding" if persistent else " = one CTA per tile", gm, gn, GROUP_M, T, smem),
    ]
    return g.finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])
