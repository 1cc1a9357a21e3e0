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

TF32 mode (kind `tf32_wgmma_tma`, the pass option tf32=1 only): f32
operands, both K-major (B stored [N, K]: TF32 wgmma cannot transpose
32-bit operands), boxes of 32 f32 (128 bytes) of k, wgmma m64nNk8 .tf32.
The tensor cores take the f32 bits as they lie in shared memory and ignore
the low 13 (truncation toward zero: a relative error in [0, 2^-10) of one
sign, which adds up over K with the output instead of averaging out;
heavy-tailed trials failed the verifier at 1.2 to 1.8 x its tolerance).
PyTorch's allow_tf32 GEMM (cuBLAS) rounds to nearest (its results match
cvt.rna operands, bench/table/tf32_rounding.py), so the consumers round
each stage in place before their wgmmas read it: after the wait on
full[s], the threads that read the stage (cooperative: the 256 of both
consumer warpgroups, which share the B tile; ping-pong: the owner's 128)
each take 16-byte chunks t, t + n, ... of the whole stage (A and B tiles
are contiguous; rounding is elementwise, so the swizzle does not matter),
load them (ld.shared.v4), round each element (nvvm.convert.float.to.tf32
rna = cvt.rna.tf32.f32: nearest, ties away; NaN and Inf kept), store them
back, then fence.proxy.async.shared::cta (the generic-proxy stores become
visible to the wgmma's async-proxy reads, and are ordered before the TMA
refill that follows the empty[s] arrival) and a named barrier of those
threads (bar.sync 1 + c, n), then the wgmmas. Zeros of the out-of-bounds
fill stay zeros. Cost: a load and a store of every stage byte per k-tile
(shared-memory bandwidth beside the TMA writes and the wgmma reads); the
rounding of k-tile kt runs while the wgmmas of kt - 1 are in flight
(wgmma.wait_group 1), so the tensor cores wait only where shared memory
or the issue slots are short. Alternatives weighed: a rounding warpgroup
between producer and consumers costs the same bytes and 128 more threads
(registers: 24 for it and for the producer leave the consumers 232, no
more); A from registers (wgmma with A in registers, rounded as loaded)
saves A's store and load but keeps B's, needs the A fragments of two
k-tiles live beside up to 128 accumulators, and ptxas serializes wgmmas
whose A registers it cannot prove stable; the TMA unit itself can round
(a tensor map of data type CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 over the f32
buffer: no shared-memory traffic at all), which needs a contract and
runtime change (a map whose element type differs from its buffer's; the
nvgpu descriptor type cannot say tf32: its 19-bit width fails the swizzle
span check), noted in bench/tma/NOTES-draft.md.
"""

import math

L2PROMO = {0: "none", 64: "l2promo_64b", 128: "l2promo_128b", 256: "l2promo_256b"}


def map_type(box, l2promo, dt="bf16"):
    return ("!nvgpu.tensormap.descriptor<tensor = memref<%s, 3>, swizzle = swizzle_128b, "
            "l2promo = %s, oob = zero, interleave = none>" % ("x".join(str(b) for b in box) + "x" + dt,
                                                              L2PROMO[l2promo]))


def grid_expr(ntiles, G):
    """min(G, ntiles) for a symbolic tile count: a placeholder expression
    (comparisons are 0 or 1 in llm_client/tune.c's expressions)"""
    nt = g_par(ntiles)
    return "(%s < %d) * %s + (%s >= %d) * %d" % (nt, G, nt, nt, G, G)


def g_par(e):
    e = str(e)
    return e if e.replace("_", "").isalnum() else "(%s)" % e


def generate(cfg, g):
    ins, outs = g.parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    tf32 = cfg["kind"] == "tf32_wgmma_tma"
    bnk = bool(cfg.get("b_nk"))
    dt = "f32" if tf32 else "bf16"
    esz = 4 if tf32 else 2
    KW = 8 if tf32 else 16                       # k of one wgmma
    if tf32:
        # TF32 wgmma reads both operands K-major from shared memory (no
        # transpose for 32-bit types): B must be stored [N, K]
        assert bnk, "tf32_wgmma_tma: B stored [N, K] (b_nk) only"
    else:
        assert not bnk, "bf16_wgmma_tma: B stored [K, N] only"
    pp = cfg.get("pingpong", 0)
    BN, BK, S = cfg["BN"], 128 // esz, cfg["stages"]   # BK: one 128-byte swizzle row of k
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
    em = g.Emitter()
    if cfg.get("require"):   # an admission condition (a table entry's)
        em.require(cfg["require"])
    # sizes: ints, or (tf32 templates) expressions over the template's symbols
    need = [(N, 128 // 16 if not tf32 else 4, 64 if not bnk else BN, "N"), (K, 16 // esz, BK, "K")]
    if g.is_sym(M):
        em.require("%s >= %d" % (M, BM))
    else:
        assert M >= BM, "a box may not exceed the tensor"
    for x, align, lo, what in need:
        if g.is_sym(x):
            em.require("%s %% %d == 0 && %s >= %d" % (x, align, x, lo))
        else:
            assert x % align == 0, "%s: 16-byte row strides for the tensor maps" % what
            assert x >= lo, "a box may not exceed the tensor"
    KT = g.scdiv(K, BK)
    gm, gn = g.scdiv(M, BM), g.scdiv(N, BN)
    ntiles = g.smul(gm, gn)
    G = cfg.get("grid", 132)
    if not persistent:
        grid = ntiles
    elif g.is_sym(ntiles):
        grid = grid_expr(ntiles, G)
    else:
        grid = min(G, ntiles)
    a_bytes = BM * BK * esz
    b_bytes = BK * BN * esz
    stage_bytes = a_bytes + nb * b_bytes            # stage-major: [A | B_0 | .. | B_nb-1] per stage
    smem = S * stage_bytes + 1024                   # + alignment slack
    assert smem <= 227 * 1024 - 16 * S, "stages do not fit"
    WGN = cfg.get("WGN", min(nb * BN, 256))
    nsub = nb * BN // WGN
    assert (nb * BN) % WGN == 0 and WGN % 64 == 0 and WGN <= 256
    nacc = WGN // 2
    assert MB * nsub * nacc <= 128, "accumulators: at most 128 f32 registers per thread"
    sw_lbo, sw_sbo = BK * 128, 1024
    masked = any(g.is_sym(x) for x in (M, N)) or M % BM != 0 or N % BN != 0
    KTv = g.sval(em, KT)                             # k-tiles per tile (an index value or an int)
    gridv = g.sval(em, grid)
    ntv = g.sval(em, ntiles)
    names = ["%%arg%d" % i for i in range(len(ins) + len(outs))]
    A, Bs, C, bias, res = g.operands(em, cfg, ins, outs, names)
    helper = g.EpilogueHelper(cfg, 2, nb, bias.dt if bias else None, res.dt if res else None, C.dt)
    WG = g.WG
    for op in [A] + Bs:
        assert op.dt == dt, "%s operands" % dt
        assert op.rows is None, "TMA: 2-D operands (or TOSA's 1 x M x K)"

    # tensor maps: A box [BM, BK], B boxes [BK, 64] (B [K, N]) or [BN, BK] (B [N, K], K-major like A);
    # a leading 1 for TOSA's 1xMxK view
    maps = []   # (name, viewed param index, type, box, operand)
    a_box = [1] * len(A.prefix) + [BM, BK]
    maps.append(("%map_a", cfg["a"], map_type(a_box, l2promo, dt), a_box, A))
    for j, bi in enumerate(cfg["b"]):
        b_box = [1] * len(Bs[j].prefix) + ([BN, BK] if bnk else [BK, 64])
        maps.append(("%%map_b%d" % j, bi, map_type(b_box, l2promo, dt), b_box, Bs[j]))

    grp_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = %d>" % (WG, S)
    ord_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = 2>" % WG
    tok_ty = "!nvgpu.mbarrier.token"
    ticks = em.idx(10000000)

    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    wg = em.div(tid, 128)
    lane = em.rem(tid, 32)

    if bnk:
        em.comment("shared memory, base aligned to 1024 B: per stage A[%d m][%d k], then B_j[%d n][%d k], %s "
                   "(rows of 128 B, 128B swizzle)" % (BM, BK, BN, BK, dt))
    else:
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
        if not g.is_sym(gm) and gm % GROUP_M == 0:
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
            t, em.v(em.add(pid, em.mul(first, gridv))), em.v(ntv), em.v(em.mul(step, gridv))))
        em.indent += 2
        it = em.div(em.op("arith.subi %s, %s : index" % (t, pid), "i"), gridv)
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
        return em.op("memref.view %s[%s][] : memref<?xi8, %s> to memref<%sx%s, %s>" % (
            dsm, em.v(em.add(pad, byte_off)), WG, shape, dt, WG), hint), "memref<%sx%s, %s>" % (shape, dt, WG)

    def producer_tile(tile, it):
        pid_m, pid_n = raster(tile)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        kt = em.fresh("kt")
        em.emit("scf.for %s = %s to %s step %s {" % (kt, em.idx(0), em.v(KTv), em.idx(1)))
        em.indent += 2
        gk = em.add(em.mul(it, KTv), kt)
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
            if bnk:   # one K-major box [BN n][BK k] at (k0, n0)
                dst, dty = smem_tile(em.add(so, a_bytes + j * b_bytes), box, "sb")
                coords = [em.v(k0), em.v(n0)] + [em.idx(0)] * len(op.prefix)
                em.emit("nvgpu.tma.async.load %s[%s], %s[%s] to %s : %s, %s -> %s" % (
                    nm, ", ".join(coords), full, st, dst, ty, grp_ty, dty))
                continue
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
    if tf32:
        # rounding to TF32 in place (the docstring's "TF32 mode"): the stage's readers, n of them, take its
        # 16-byte chunks t, t + n, ...; a flat f32 view of the aligned shared memory
        rn = 128 if pp else 256
        nchunk = stage_bytes // 16
        assert nchunk % rn == 0, "stage of %d B: not a whole number of chunks per rounding thread" % stage_bytes
        rper = nchunk // rn
        sf_ty = "memref<%dxf32, %s>" % ((smem - 1024) // 4, WG)
        sf32 = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (dsm, pad, WG, sf_ty), "sf")
        rt4 = em.mul(em.rem(tid, rn), 4)              # f32 index of the thread's first chunk in a stage
        bar_id = (em.op("arith.index_cast %s : index to i32" % em.add(ci, 1), "bar") if pp
                  else em.const("1", "i32", "bar1"))
        bar_n = em.const(str(rn), "i32", "barn")

    acc_ty = "!llvm.struct<(%s)>" % ", ".join(["f32"] * nacc)
    undef = em.const_op("llvm.mlir.undef : %s" % acc_ty, "uacc")
    row_off = 0 if pp else em.mul(ci, 64 * 128)     # bytes into the A tile of this consumer's first row
    nst = MB * nsub                                 # accumulator structs: (row block mi, column chunk sub)

    def consumer_tile(tile, it, c=None):
        pid_m, pid_n = raster(tile)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        g0 = em.mul(it, KTv)
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
            if tf32:
                round_stage(st)
            stage = em.add(sbase, em.mul(st, stage_bytes))
            a_base = em.add(stage, row_off)
            b_base = em.add(stage, a_bytes)
            accs = list(accs)
            em.emit("nvvm.wgmma.fence.aligned")
            for kk in range(BK // KW):
                for mi in range(MB):
                    da = desc(em.add(a_base, mi * 64 * 128 + kk * 32), k_hi_a)
                    for sub in range(nsub):
                        if bnk:   # K-major like A: WGN rows of 128 B per chunk, the k step 32 B into the row
                            db = desc(em.add(b_base, kk * 32 + sub * WGN * 128), k_hi_a)
                        else:
                            db = desc(em.add(b_base, kk * 2048 + sub * (WGN // 64) * BK * 128), k_hi_b)
                        i = mi * nsub + sub
                        accs[i] = em.op(("nvvm.wgmma.mma_async %s, %s, %s, #nvvm.shape<m = 64, n = %d, k = %d>, "
                                         "D [<f32>, #nvvm.wgmma_scale_out<%s>], A [<%s>, #nvvm.wgmma_scale_in<one>, <row>], "
                                         "B [<%s>, #nvvm.wgmma_scale_in<one>, <%s>] : %s -> %s") % (
                                             da, db, accs[i], WGN, KW, "zero" if first and kk == 0 else "one",
                                             "tf32" if tf32 else "bf16", "tf32" if tf32 else "bf16",
                                             "col" if bnk else "row", acc_ty, acc_ty), "w")
            em.emit("nvvm.wgmma.commit.group.sync.aligned")
            return accs

        def round_stage(st):
            em.comment("round the stage's f32 operands to TF32 in place (cvt.rna: nearest, ties away), %d chunks "
                       "of 16 B per thread, then make the stores visible to the wgmmas (async proxy) of all %d "
                       "readers" % (rper, rn))
            base = em.add(em.mul(st, stage_bytes // 4), rt4)
            for j0 in range(0, rper, 4):            # four chunks in flight: 16 registers
                js = range(j0, min(j0 + 4, rper))
                vals = []
                for j in js:
                    at = em.v(em.add(base, j * rn * 4))
                    vals.append((at, em.op("vector.load %s[%s] {alignment = 16} : %s, vector<4xf32>" % (
                        sf32, at, sf_ty), "x")))
                for at, x in vals:
                    xi = em.op("vector.bitcast %s : vector<4xf32> to vector<4xi32>" % x, "xi")
                    for e in range(4):
                        xe = em.op("vector.extract %s[%d] : f32 from vector<4xf32>" % (x, e), "xe")
                        re = em.op("nvvm.convert.float.to.tf32 %s {rnd = #nvvm.fp_rnd_mode<rna>}" % xe, "rt")
                        xi = em.op("vector.insert %s, %s [%d] : i32 into vector<4xi32>" % (re, xi, e), "xi")
                    y = em.op("vector.bitcast %s : vector<4xi32> to vector<4xf32>" % xi, "y")
                    em.emit("vector.store %s, %s[%s] {alignment = 16} : %s, vector<4xf32>" % (y, sf32, at, sf_ty))
            em.emit("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}")
            em.emit("nvvm.barrier id = %s number_of_threads = %s" % (bar_id, bar_n))

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
            res_names, nst, kt, em.idx(1), em.v(KTv), em.idx(1), iter_args, ", ".join([acc_ty] * nst)))
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
        release(em.add(g0, em.sub(KTv, 1)))

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
        Mv, Nv = em.v(g.sval(em, M)), em.v(g.sval(em, N))
        okm = em.op("arith.cmpi ule, %s, %s : index" % (em.v(em.add(m0, BM)), Mv), "full")
        okn = em.op("arith.cmpi ule, %s, %s : index" % (em.v(em.add(n0, BN)), Nv), "full")
        ok = em.op("arith.andi %s, %s : i1" % (okm, okn), "full")
        em.emit("scf.if %s {" % ok)
        em.indent += 2
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair)
        em.indent -= 2
        em.emit("} else {")
        em.indent += 2
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair,
                            m_bound=Mv, n_bound=Nv)
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

    launch = dict(block=[T, 1, 1], grid=[g.sgrid(grid), 1, 1], smem=smem)
    if pp:
        what = ("ping-pong: consumer warpgroups 1 and 2 own alternate %dx%d tiles (setmaxnreg %d), each %d x %d x %d "
                "wgmma.mma_async m64n%dk%d per k-tile, order barriers hand the tensor cores over" % (
                    BM, BN, REGC, BK // KW, MB, nsub, WGN, KW))
    else:
        what = ("cooperative: 2 consumer warpgroups of 64 rows of the %dx%d tile (setmaxnreg %d), each %d x %d "
                "wgmma.mma_async m64n%dk%d per k-tile" % (BM, BN, REGC, BK // KW, nsub, WGN, KW))
    if tf32:
        header = [
            "precision: TF32 (tf32=1 only): wgmma.mma_async .tf32, f32 accumulation; both operands rounded to TF32 "
            "as PyTorch's allow_tf32 does (cvt.rna: nearest, ties away), in shared memory after each stage lands: the "
            "%d threads that read the stage round %d 16-byte chunks each (ld.shared.v4, 4 x cvt.rna.tf32.f32, "
            "st.shared.v4), fence.proxy.async, named barrier %s (%d threads), then the wgmmas (the tensor cores "
            "alone would truncate: they ignore the low 13 bits)" % (
                rn, rper, "1 + consumer" if pp else "1", rn),
            "TMA warp-specialized (sm_90a): producer thread (warpgroup 0, setmaxnreg %d) issues per stage "
            "mbarrier.arrive.expect_tx(%d B) + 1 A box [%d,%d] + %d B box(es) [%d,%d] (K-major, nvgpu.tma.async.load, "
            "128B swizzle); %s" % (REGP, stage_bytes, BM, BK, nb, BN, BK, what),
            "pipeline: %d-stage ring, mbarriers full[s] (expect_tx, TMA bytes) and empty[s] (consumer warps after "
            "wgmma.wait_group 1); %s k-tiles of %d per tile" % (S, KT, BK),
            "smem: stage-major [A %dx%d | B_j %dx%d ...] f32, 128B-swizzled K-major layouts (SBO 1024), "
            "base aligned to 1024 B" % (BM, BK, BN, BK),
            "tensor maps (trailing arguments, llm_fuse.tensor_maps): %s" % "; ".join(
                "%s views argument %d, box [%s]" % (nm, p, ", ".join(str(b) for b in box))
                for nm, p, _, box, _ in maps),
            "launch: grid (%s,1,1)%s over %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), "
            "block (%d,1,1), dynamic smem %d B" % (
                g.sgrid(grid), " persistent CTAs striding" if persistent else " = one CTA per tile", gm, gn,
                GROUP_M, T, smem),
        ]
    else:
        header = None
    header = header or [
        "TMA warp-specialized (sm_90a): producer thread (warpgroup 0, setmaxnreg %d) issues per stage "
        "mbarrier.arrive.expect_tx(%d B) + 1 A box [%d,64] + %d B box(es) [64,64] (nvgpu.tma.async.load, "
        "128B swizzle)%s; %s" % (REGP, stage_bytes, BM, nb * BN // 64,
                                 ", the %d B tiles side by side" % nb if nb > 1 else "", what),
        "pipeline: %d-stage ring, mbarriers full[s] (expect_tx, TMA bytes) and empty[s] (consumer warps after "
        "wgmma.wait_group 1); %s k-tiles per tile" % (S, KT),
        "smem: stage-major [A %dx64 | B_j 64x%d ...], 128B-swizzled canonical layouts, A K-major (SBO 1024), "
        "B MN-major (LBO %d, SBO %d), base aligned to 1024 B" % (BM, BN, sw_lbo, sw_sbo),
        "tensor maps (trailing arguments, llm_fuse.tensor_maps): %s" % "; ".join(
            "%s views argument %d, box [%s]" % (nm, p, ", ".join(str(b) for b in box)) for nm, p, _, box, _ in maps),
        "launch: grid (%s,1,1)%s over %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), block (%d,1,1), dynamic smem %d B" % (
            g.sgrid(grid), " persistent CTAs striding" if persistent else " = one CTA per tile", gm, gn, GROUP_M, T, smem),
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
