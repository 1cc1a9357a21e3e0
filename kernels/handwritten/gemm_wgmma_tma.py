"""TMA-fed warp-specialized bf16 wgmma GEMM (sm_90a), kind `bf16_wgmma_tma`.

Called from gen_gemm.generate() as generate(cfg, g) with g = the gen_gemm
module.  The math, the 128-byte-swizzled shared-memory layouts and the wgmma
descriptors are gemm_wgmma_ws.py's (verified on the H200); what changes is
the producer, and optionally the consumers' division of work:

* Tensor maps (docs/kernel-contract.md, "Tensor maps"): the kernel takes,
  after the subgraph's buffers, one `!nvgpu.tensormap.descriptor` per GEMM
  operand (A, then each B), declared by `llm_fuse.tensor_maps`; the runtime
  encodes each with cuTensorMapEncodeTiled over the whole buffer (row-major,
  its static shape) and passes it as a __grid_constant__ parameter.  Boxes:
  A [BM, 64] and B [64, 64] (64 bf16 = 128 bytes = the swizzle span, so a
  BN-wide B tile is BN/64 boxes), swizzle 128B, L2 promotion 256B, OOB fill
  zero.  A box lands exactly as the cp.async producer laid the tile out:
  row r at r * 128 bytes, 16-byte chunk c at c ^ (r % 8), from a 1024-byte
  aligned address.  Coordinates of nvgpu.tma.async.load are innermost first
  (upstream MLIR's and PTX's convention): A at [k0, m0], B at [n0, k0].
* Producer: warpgroup 0 decreases its registers (setmaxnreg REGP) and all
  but thread 0 return.  Thread 0, per k-tile g (counted over all the tiles
  of the CTA): waits empty[g % S] (phase g / S - 1), arms full[g % S] with
  mbarrier.arrive.expect_tx(stage bytes) and issues the A box and the B
  boxes of the stage; the transaction count completes the phase when the
  bytes land (out-of-bounds parts of a box count and arrive as zeros).
  full[s] counts 1 arrival.  No proxy fence: the TMA writes and the wgmma
  reads are both async-proxy accesses ordered by the mbarrier.
* Consumers (warpgroups 1, 2; setmaxnreg REGC), per k-tile: wait full[s],
  wgmma.fence, the wgmmas, commit, wgmma.wait_group 1, lane 0 of each warp
  arrives on empty of the previous k-tile's stage (the first k16 step of a
  tile with scale-d 0).  Two ways to share the work:
  - pingpong=0 (cooperative, gemm_wgmma_ws.py's): the CTA tile is 128 x BN,
    each consumer its 64 rows; both consume every k-tile (empty[s] counts
    8 arrivals), both run the epilogue at the same time.
  - pingpong=1: a consumer owns a whole BM x BN tile (BM 64 or 128: one or
    two m64 row blocks per wgmma step), the two take the CTA's tiles
    alternately (consumer c: the CTA's tiles i = c, c + 2, ...); the ring
    carries the k-tiles of tile 0, then tile 1, ... (empty[s]: 4 arrivals,
    the owner's warps).  An order barrier pair hands the tensor cores over:
    consumer c waits order[c] before its mainloop and, once its last
    k-tile's wgmmas are issued, arrives on order[1 - c]; so one consumer's
    epilogue runs under the other's mainloop.  The order is also what makes
    the parity waits on full[s] sound: when consumer c starts tile i, the
    other consumer has waited every k-tile of tile i - 1, so full[s] is
    never two phases behind the awaited one.
* Persistent: grid = min(G, #tiles) CTAs striding over the tiles in grouped
  raster order (G, knob `grid`, default 132 = the H200's SMs; pingpong
  requires it).  persistent=0 (cooperative only): one CTA per tile.
* Any M, and N, K multiples of 8 (16-byte row strides, the tensor map's
  rule), with M >= BM, N >= 64, K >= 64 (a box may not exceed the tensor):
  the loads need no masks (TMA zero-fills the boxes' out-of-bounds parts, a
  zero k-tail adds nothing), and where M % BM or N % BN is not 0 the
  epilogue of a partial tile masks its rows and column pairs (a CTA-uniform
  branch: full tiles run the unmasked epilogue).

Knobs (--set K=V): BN (multiple of 64, <= 256), stages (S), BM (pingpong:
64 or 128), pingpong (0/1), persistent (0/1), grid, group_m, WGN, REGP,
REGC, l2promo (0/64/128/256).
"""

import math

L2PROMO = {0: "none", 64: "l2promo_64b", 128: "l2promo_128b", 256: "l2promo_256b"}


def map_type(box, l2promo):
    return ("!nvgpu.tensormap.descriptor<tensor = memref<%s, 3>, swizzle = swizzle_128b, "
            "l2promo = %s, oob = zero, interleave = none>" % ("x".join(str(b) for b in box) + "xbf16",
                                                              L2PROMO[l2promo]))


def generate(cfg, g):
    ins, outs = g.parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    assert all(isinstance(x, int) for x in (M, N, K)), "static sizes only"
    pp = cfg.get("pingpong", 0)
    BN, BK, S = cfg["BN"], 64, cfg["stages"]
    BM = cfg.get("BM", 128) if pp else 128       # rows of a tile
    MB = BM // 64 if pp else 1                   # m64 row blocks one consumer computes per wgmma step
    GROUP_M = cfg["group_m"]
    nb = len(cfg["b"])
    T = 384
    persistent = cfg.get("persistent", 1)
    REGP, REGC = cfg.get("REGP", 40), cfg.get("REGC", 232)
    l2promo = cfg.get("l2promo", 256)
    assert BN % 64 == 0 and 64 <= BN <= 256 and S >= 2 and BM in (64, 128)
    assert not pp or persistent, "ping-pong needs persistent CTAs (two tiles per CTA at least)"
    assert 128 * REGP + 256 * REGC <= 65536 and REGP % 8 == 0 and REGC % 8 == 0 and REGP >= 24
    assert N % 8 == 0 and K % 8 == 0, "16-byte row strides for the tensor maps"
    assert M >= BM and N >= 64 and K >= BK, "a box may not exceed the tensor"
    KT = -(-K // BK)
    gm, gn = -(-M // BM), -(-N // BN)
    ntiles = gm * gn
    grid = min(cfg.get("grid", 132), ntiles) if persistent else ntiles
    a_bytes = BM * BK * 2
    b_bytes = BK * BN * 2
    stage_bytes = a_bytes + nb * b_bytes            # stage-major: [A | B_0 | .. | B_nb-1] per stage
    smem = S * stage_bytes + 1024                   # + alignment slack
    assert smem <= 227 * 1024 - 16 * S, "stages do not fit"
    WGN = cfg.get("WGN", min(nb * BN, 256))
    nsub = nb * BN // WGN
    assert (nb * BN) % WGN == 0 and WGN % 64 == 0 and WGN <= 256
    nacc = WGN // 2
    assert MB * nsub * nacc <= 128, "accumulators: at most 128 f32 registers per thread"
    sw_lbo, sw_sbo = BK * 128, 1024
    masked = M % BM != 0 or N % BN != 0

    em = g.Emitter()
    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = g.operands(em, cfg, ins, outs, names)
    helper = g.EpilogueHelper(cfg, 2, nb, bias.dt if bias else None, res.dt if res else None, C.dt)
    WG = g.WG
    for op in [A] + Bs:
        assert op.dt == "bf16"

    # tensor maps: A box [BM, 64], B boxes [64, 64] (a leading 1 for TOSA's 1xMxK view)
    maps = []   # (name, viewed param index, type, box, operand)
    a_box = [1] * len(A.prefix) + [BM, BK]
    maps.append(("%map_a", cfg["a"], map_type(a_box, l2promo), a_box, A))
    for j, bi in enumerate(cfg["b"]):
        b_box = [1] * len(Bs[j].prefix) + [BK, 64]
        maps.append(("%%map_b%d" % j, bi, map_type(b_box, l2promo), b_box, Bs[j]))

    grp_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = %d>" % (WG, S)
    ord_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = 2>" % WG
    tok_ty = "!nvgpu.mbarrier.token"
    ticks = em.idx(10000000)

    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    wg = em.div(tid, 128)
    lane = em.rem(tid, 32)

    em.comment("shared memory, base aligned to 1024 B: per stage A[%d x 64], then B_j[%d atoms][64 k][64 n], bf16" % (
        BM, BN // 64))
    sbase, sflat, sm_ty = g.aligned_smem_bf16(em, smem)
    dsm = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    raw = em.op("memref.extract_aligned_pointer_as_index %s : memref<?xi8, %s> -> index" % (dsm, WG), "addr")
    pad = em.op("arith.subi %s, %s : index" % (sbase, raw), "pad")   # bytes from the window to the aligned base

    empty_n = 4 if pp else 8
    em.comment("mbarriers: full[s] (1 arrival + the stage's %d transaction bytes), empty[s] (%d arrivals: "
               "one per consumer warp%s)" % (stage_bytes, empty_n, " of the stage's owner" if pp else ""))
    full = em.op("nvgpu.mbarrier.create -> %s" % grp_ty, "full")
    empty = em.op("nvgpu.mbarrier.create -> %s" % grp_ty, "empty")
    order = em.op("nvgpu.mbarrier.create -> %s" % ord_ty, "order") if pp else None
    is_t0 = em.op("arith.cmpi eq, %s, %s : index" % (tid, em.idx(0)), "p")
    em.emit("scf.if %s {" % is_t0)
    em.indent += 2
    for s in range(S):
        em.emit("nvgpu.mbarrier.init %s[%s], %s : %s" % (full, em.idx(s), em.idx(1), grp_ty))
        em.emit("nvgpu.mbarrier.init %s[%s], %s : %s" % (empty, em.idx(s), em.idx(empty_n), grp_ty))
    if pp:
        for c in range(2):
            em.emit("nvgpu.mbarrier.init %s[%s], %s : %s" % (order, em.idx(c), em.idx(4), ord_ty))
    em.indent -= 2
    em.emit("}")
    em.emit("nvvm.fence.mbarrier.init")
    em.emit("gpu.barrier")

    def parity(lap, flip):
        b = em.band(lap, 1)
        if isinstance(b, int):
            return em.const_op("arith.constant %s" % ("true" if (b ^ flip) else "false"), "bool%d" % (b ^ flip))
        return em.op("arith.cmpi %s, %s, %s : index" % ("eq" if flip else "ne", b, em.idx(0)), "par")

    def raster(tile):
        if gm % GROUP_M == 0:
            return g.grouped_raster(em, tile, gm, gn, GROUP_M)
        return g.grouped_raster_any(em, tile, gm, gn, GROUP_M)

    def tile_loop(body, first=0, step=1):
        """body(tile, tile_iter) over the CTA's tiles first, first + step, ...
        (tile_iter counts the CTA's tiles: global k-tile = tile_iter * KT + kt)"""
        if not persistent:
            body(pid, 0)
            return
        t = em.fresh("tile")
        em.emit("scf.for %s = %s to %s step %s {" % (
            t, em.v(em.add(pid, em.mul(first, grid))), em.idx(ntiles), em.idx(step * grid)))
        em.indent += 2
        it = em.div(em.op("arith.subi %s, %s : index" % (t, pid), "i"), grid)
        body(t, it)
        em.indent -= 2
        em.emit("}")

    is_prod = em.op("arith.cmpi eq, %s, %s : index" % (wg, em.idx(0)), "p")
    em.emit("scf.if %s {" % is_prod)
    em.indent += 2
    # ------------------------------------------------------------------ producer
    em.comment("producer warpgroup: registers down to %d, thread 0 issues the TMA loads, the others return" % REGP)
    em.emit("nvvm.setmaxregister decrease %d" % REGP)
    em.emit("scf.if %s {" % is_t0)
    em.indent += 2
    for nm, _, ty, _, _ in maps:
        em.emit("nvgpu.tma.prefetch.descriptor %s : %s" % (nm, ty))
    tx = em.idx(stage_bytes)

    def smem_tile(byte_off, box, hint):
        shape = "x".join(str(b) for b in box)
        return em.op("memref.view %s[%s][] : memref<?xi8, %s> to memref<%sxbf16, %s>" % (
            dsm, em.v(em.add(pad, byte_off)), WG, shape, WG), hint), "memref<%sxbf16, %s>" % (shape, WG)

    def producer_tile(tile, it):
        pid_m, pid_n = raster(tile)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        kt = em.fresh("kt")
        em.emit("scf.for %s = %s to %s step %s {" % (kt, em.idx(0), em.idx(KT), em.idx(1)))
        em.indent += 2
        gk = em.add(em.mul(it, KT), kt)
        st = em.rem(gk, S)
        lap = em.div(gk, S)
        em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (empty, st, parity(lap, True), ticks, grp_ty))
        em.emit("nvgpu.mbarrier.arrive.expect_tx %s[%s], %s : %s" % (full, st, tx, grp_ty))
        k0 = em.mul(kt, BK)
        so = em.mul(st, stage_bytes)
        nm, _, ty, box, op = maps[0]
        dst, dty = smem_tile(so, box, "sa")
        coords = [em.v(k0), em.v(m0)] + [em.idx(0)] * len(op.prefix)
        em.emit("nvgpu.tma.async.load %s[%s], %s[%s] to %s : %s, %s -> %s" % (
            nm, ", ".join(coords), full, st, dst, ty, grp_ty, dty))
        for j in range(nb):
            nm, _, ty, box, op = maps[1 + j]
            for a in range(BN // 64):
                dst, dty = smem_tile(em.add(so, a_bytes + j * b_bytes + a * BK * 128), box, "sb")
                coords = [em.v(em.add(n0, 64 * a)), em.v(k0)] + [em.idx(0)] * len(op.prefix)
                em.emit("nvgpu.tma.async.load %s[%s], %s[%s] to %s : %s, %s -> %s" % (
                    nm, ", ".join(coords), full, st, dst, ty, grp_ty, dty))
        em.indent -= 2
        em.emit("}")

    tile_loop(producer_tile)
    em.indent -= 2
    em.emit("}")
    em.indent -= 2
    em.emit("} else {")
    em.indent += 2
    # ------------------------------------------------------------------ consumers
    if pp:
        em.comment("consumer warpgroups 1, 2: consumer c = wg - 1 owns the CTA's tiles c, c + 2, ... (%d x %d each)" % (
            BM, BN))
    else:
        em.comment("consumer warpgroups 1, 2: rows 64*(wg-1).. of the CTA tile")
    em.emit("nvvm.setmaxregister increase %d" % REGC)
    ci = em.add(wg, -1)
    wq = em.rem(em.div(tid, 32), 4)
    lane0 = em.op("arith.cmpi eq, %s, %s : index" % (lane, em.idx(0)), "p")

    desc, k_hi_a, k_hi_b = g.wgmma_descriptors(em, sw_lbo, sw_sbo)

    acc_ty = "!llvm.struct<(%s)>" % ", ".join(["f32"] * nacc)
    undef = em.const_op("llvm.mlir.undef : %s" % acc_ty, "uacc")
    row_off = 0 if pp else em.mul(ci, 64 * 128)     # bytes into the A tile of this consumer's first row
    nst = MB * nsub                                 # accumulator structs: (row block mi, column chunk sub)

    def consumer_tile(tile, it, c=None):
        pid_m, pid_n = raster(tile)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        g0 = em.mul(it, KT)
        if pp:
            # the order barrier: consumer c's n-th tile (it = 2n + c) waits for the other's mainloop of
            # tile it - 1: order[c] phase q = n - 1 + c = (it + c) / 2 - 1 (none for it = 0)
            go = em.op("arith.cmpi ne, %s, %s : index" % (it, em.idx(0)), "p")
            em.emit("scf.if %s {" % go)
            em.indent += 2
            q = em.add(em.div(em.add(it, c), 2), -1)
            em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (
                order, c, parity(q, False), ticks, ord_ty))
            em.indent -= 2
            em.emit("}")

        def ktile(gk, accs, first):
            st = em.rem(gk, S)
            lap = em.div(gk, S)
            em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (
                full, em.v(st), parity(lap, False), ticks, grp_ty))
            stage = em.add(sbase, em.mul(st, stage_bytes))
            a_base = em.add(stage, row_off)
            b_base = em.add(stage, a_bytes)
            accs = list(accs)
            em.emit("nvvm.wgmma.fence.aligned")
            for kk in range(BK // 16):
                for mi in range(MB):
                    da = desc(em.add(a_base, mi * 64 * 128 + kk * 32), k_hi_a)
                    for sub in range(nsub):
                        db = desc(em.add(b_base, kk * 2048 + sub * (WGN // 64) * BK * 128), k_hi_b)
                        i = mi * nsub + sub
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
        if pp:
            em.comment("every wgmma of this tile is issued: the other consumer's mainloop may start")
            em.emit("scf.if %s {" % lane0)
            em.indent += 2
            em.op("nvgpu.mbarrier.arrive %s[%s] : %s -> %s" % (order, other, ord_ty, tok_ty), "tok")
            em.indent -= 2
            em.emit("}")
        em.emit("nvvm.wgmma.wait.group.sync.aligned 0")
        em.comment("release the last k-tile's stage (the producer may fill it for the next tile)")
        release(em.add(g0, KT - 1))

        em.comment("epilogue: D fragment = per warp 16 rows; register 4*ni + {0,1} at (lane/4, 8*ni + 2*(lane%4) + {0,1}), + {2,3} at row + 8")

        def pair(j, mi, ni, h):
            sub, nl = divmod(j * (BN // 8) + ni, WGN // 8)
            st_i = mi * nsub + sub
            e0 = em.op("llvm.extractvalue %s#%d[%d] : %s" % (res_names, st_i, nl * 4 + 2 * h, acc_ty), "c")
            e1 = em.op("llvm.extractvalue %s#%d[%d] : %s" % (res_names, st_i, nl * 4 + 2 * h + 1, acc_ty), "c")
            return em.op("vector.from_elements %s, %s : vector<2xf32>" % (e0, e1), "c")

        gq = em.shr(lane, 2)
        t2 = em.mul(em.band(lane, 3), 2)
        row_base = em.add(em.add(em.add(m0, 0 if pp else em.mul(ci, 64)), em.mul(wq, 16)), gq)
        col_base = em.add(n0, t2)
        row_offs = [64 * mi for mi in range(MB)]
        col_offs = [8 * ni for ni in range(BN // 8)]
        if not masked:
            g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair)
            return
        # partial tiles (M % BM, N % BN): a CTA-uniform branch, the full tiles unmasked
        okm = em.op("arith.cmpi ule, %s, %s : index" % (em.v(em.add(m0, BM)), em.idx(M)), "full")
        okn = em.op("arith.cmpi ule, %s, %s : index" % (em.v(em.add(n0, BN)), em.idx(N)), "full")
        ok = em.op("arith.andi %s, %s : i1" % (okm, okn), "full")
        em.emit("scf.if %s {" % ok)
        em.indent += 2
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair)
        em.indent -= 2
        em.emit("} else {")
        em.indent += 2
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair,
                            m_bound=em.idx(M), n_bound=em.idx(N))
        em.indent -= 2
        em.emit("}")

    if pp:
        # one code path for both consumers (c = wg - 1 an SSA value): half the instruction footprint
        other = em.op("arith.subi %s, %s : index" % (em.idx(1), ci), "other")
        tile_loop(lambda t, it: consumer_tile(t, it, ci), first=ci, step=2)
    else:
        tile_loop(consumer_tile)
    em.indent -= 2
    em.emit("}")
    em.emit("gpu.return")

    launch = dict(block=[T, 1, 1], grid=[grid, 1, 1], smem=smem)
    if pp:
        what = ("ping-pong: consumer warpgroups 1 and 2 own alternate %dx%d tiles (setmaxnreg %d), each %d x %d x %d "
                "wgmma.mma_async m64n%dk16 per k-tile, order barriers hand the tensor cores over" % (
                    BM, BN, REGC, BK // 16, MB, nsub, WGN))
    else:
        what = ("cooperative: 2 consumer warpgroups of 64 rows of the %dx%d tile (setmaxnreg %d), each %d x %d "
                "wgmma.mma_async m64n%dk16 per k-tile" % (BM, BN, REGC, BK // 16, nsub, WGN))
    header = [
        "TMA warp-specialized (sm_90a): producer thread (warpgroup 0, setmaxnreg %d) issues per stage "
        "mbarrier.arrive.expect_tx(%d B) + 1 A box [%d,64] + %d B box(es) [64,64] (nvgpu.tma.async.load, "
        "128B swizzle)%s; %s" % (REGP, stage_bytes, BM, nb * BN // 64,
                                 ", the %d B tiles side by side" % nb if nb > 1 else "", what),
        "pipeline: %d-stage ring, mbarriers full[s] (expect_tx, TMA bytes) and empty[s] (consumer warps after "
        "wgmma.wait_group 1); %d k-tiles per tile" % (S, KT),
        "smem: stage-major [A %dx64 | B_j 64x%d ...], 128B-swizzled canonical layouts, A K-major (SBO 1024), "
        "B MN-major (LBO %d, SBO %d), base aligned to 1024 B" % (BM, BN, sw_lbo, sw_sbo),
        "tensor maps (trailing arguments, llm_fuse.tensor_maps): %s" % "; ".join(
            "%s views argument %d, box [%s]" % (nm, p, ", ".join(str(b) for b in box)) for nm, p, _, box, _ in maps),
        "launch: grid (%d,1,1)%s over %d x %d tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
            grid, " persistent CTAs striding" if persistent else " = one CTA per tile", gm, gn, GROUP_M, T, smem),
    ]
    kname, text, launch = g.finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])
    # the tensor maps: trailing arguments and the attribute that names the viewed parameters
    sig_end = ") kernel\n"
    head, rest = text.split(sig_end, 1)
    assert head.rstrip().startswith("// ") or "gpu.func @" in head
    head += "".join(", %s: %s" % (nm, ty) for nm, _, ty, _, _ in maps)
    rest = rest.replace("attributes {known_block_size", "attributes {llm_fuse.tensor_maps = array<i32: %s>,\n"
                        "                  known_block_size" % ", ".join(str(p) for _, p, _, _, _ in maps), 1)
    return kname, head + sig_end + rest, launch
