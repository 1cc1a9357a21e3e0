"""TMA-fed warp-specialized wgmma GEMM (sm_90a): kinds `bf16_wgmma_tma`,
`tf32_wgmma_tma` (TF32 mode) and `f32x3_wgmma_tma` (3xTF32 mode: exact f32).

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

* Split-K (splitk = S, 2..8; bf16/f16 cooperative tiles; issue 16 point 2,
  issue 15's small GEMMs): where the output tiles leave SMs idle, a
  thread-block cluster of S CTAs (known_cluster_size = (S, 1, 1),
  docs/kernel-contract.md section 3) shares one tile: grid = tiles x S, one
  tile per cluster (non-persistent), CTA rank r = pid % S (its rank in the
  cluster) runs the contiguous k-tiles [r KT / S, (r + 1) KT / S) through
  the same producer / consumer pipeline (K > 64 (S - 1): every CTA gets
  one). Then, deterministic by construction and without a global
  workspace: both consumer warpgroups pass named barrier 1 (every wgmma of
  the CTA retired, so the stages are free), each thread stores its f32
  accumulator fragment into the CTA's shared memory over the drained
  stages as a [nb x 128][BN] tile with row stride BN + 8 floats (the pad
  puts the 8 rows of a warp's 8-byte stores on distinct banks: two
  wavefronts, the minimum), then all threads of the cluster (the producer
  warpgroup too, so no barrier counts on exited threads) pass a cluster
  barrier (barrier.cluster.arrive (release) / wait (acquire)). CTA r then
  owns columns [r BN / S, (r + 1) BN / S) of the tile for all 128 rows: in
  the accumulator's thread layout, each consumer thread reads its pairs of
  that slice from the S partials through distributed shared memory
  (nvvm.mapa of the shared address to CTA q, ld.shared::cluster.v2.f32),
  summing partial 0, 1, ..., S - 1 in that order, and runs the usual
  epilogue (bias, GELU, SiLU x mul, residual; masked on partial tiles) and
  stores. A second cluster barrier keeps every CTA (and its shared memory)
  alive until the whole cluster has read it. Shared memory: max(stages,
  the partial tile) + 1 KiB. Measured on the H200 (bench/NOTES.md
  "Split-K"): 1.7-2.1x the unsplit kernel at 256-512 rows x 768, and a loss
  where tiles x S exceeds a wave, hence the table admits each split only up
  to one wave (kernels/table/gemm_any.py SMALL_M).

Split-K for exact f32 (session 25): f32x3_wgmma_tma takes `splitk` too
(cooperative 128 x BN tiles; not tf32_wgmma_tma). Each CTA of the cluster
runs its k-tiles [r KT / S, (r + 1) KT / S) with the usual per-k-tile
promotion (the promoted mainloop counts the CTA's own k-tiles), and the
partials written to shared memory are the promoted f32 accumulators, so
the rank-order sum is f32 adds of f32 partial sums: still exact f32 (the
f32 verifier, no TF32 tolerance) and deterministic. On the H200
(bench/tma/f32-splitk-device.sh, bench/NOTES.md session 25) at
512 x 3072 -> 768 S 4 took 0.0467 ms against 0.1498 unsplit.

A box of 64 rows (knob a_rows 64, cooperative tiles): the producer lands
the 128-row A tile as two [64, BK] boxes at rows m0 and m0 + 64, one
above the other in the stage (the second at 64 x 128 B: whole 1024-byte
swizzle atoms, so the layout is the one-box layout); the transaction
count is unchanged (a box wholly past M still lands, zero-filled, and
counts). So M >= 64 suffices where a 128-row box needs M >= 128
(runtime/tensor_map.c refuses a box larger than the tensor).

vacc (knob, f32x3 with promotion): the main accumulator M is a
vector<NACC x f32> rather than an LLVM struct: each k-tile's T (the
wgmma struct) is gathered into a vector and added with one vector
arith.addf; the epilogue takes pairs by vector.extract_strided_slice. The
same f32 adds in the same order; about 45% less kernel text (every
extractvalue / insertvalue spells the 64-field struct type), which a
template of five tilings needs to stay under the builder's 1 MiB.
grid_compact (knob): the persistent grid's min(G, tiles) placeholder in
the compact form the 16-bit kinds use (the f32 kinds default to the long
form, which five tilings push past 512 bytes). grid_full (knob,
persistent): the grid is G CTAs whatever the tile count (a CTA past the
last tile runs no tile loop: correct at any size, idle CTAs where there
are fewer tiles than G), a placeholder of 3 bytes instead of ~100: for a
tiling admitted only over one wave of tiles (gemm_any.py TAIL_M, the
grid placeholder of seven tilings).

Cooperative 256-row tiles (BM 256, pingpong 0; session 27, issue 15
point 7): each consumer warpgroup computes BM / 2 = 128 rows, two m64 row
blocks per wgmma step (rows 128 c .. of the tile; at BN 128, 2 x 64 f32
accumulators a thread), from an A tile of two stacked [128, 64] boxes (the
box of the 128-row tilings, so that a table template can offer both as
alternatives of one kernel: one tensor-map argument type). A W tile is
then loaded once for 256 rows: at 142 rows (one row tile instead of two
128-row tiles, the second with 14 rows) every B tile crosses L2 once, not
twice. Split-K takes it too (the partial tile is [BM][BN + 8] f32). On
the H200 (bench/table/gemm16-device.sh, session 27): 9531 x 3072 -> 768
f16 down-projection, persistent 256 x 128 0.0887-0.0898 ms against
0.0946-0.0951 for 128 x 128 (kernels/table/gemm_any.py TAIL_M); 142 x
8192 x 8192 split 2 ways 0.0651-0.0653 against 0.0661-0.0690 for the
128 x 256 split (not offered: see gemm_any.py). A consumer whose second
row block lies wholly past M still runs its wgmmas (at 142 rows a quarter
of the tensor work is such rows; skipping them is not done).

A boxes inside M (knob a_shift; session 28, issue 15 point 7; 16-bit
cooperative tiles with 128-row boxes): the A box of nominal first row
m0 + r 128 is loaded from row min(m0 + r 128, M - 128), so no A box crosses
M (M >= 128 is a requirement already). The accumulator rows of a shifted
box are the global rows d = nominal - loaded lower; the partial tile's
epilogue (the masked branch; full tiles never shift) stores row g only where
nominal <= g < M (gen_gemm.fragment_epilogue m_lo): rows below the box's
nominal first row belong to the tile above, which stores them. Why: TMA's
out-of-bounds fill of a box that crosses M was measured slow on the H200
(bench/table/gemm16-device.sh, 2026-11-25, session 28): 142 x 8192 x 8192
f16 GEMM + ReLU, the 128 x 256 2-way split 0.0818-0.0823 ms with the
second row tile's box 14 rows in and 114 out, 0.0605 with a_shift (at 256
rows, no box crossing M, 0.0625); the 256 x 128 split 0.0863-0.0873 against
0.0588 (256 rows: 0.0586). Work is the same (the shifted box loads real
rows instead of zeros), so it is the fill, not the tensor work: skipping
the wgmmas of m64 row blocks wholly past M (measured in run 1: 0.0887 and
0.0816 at 142 rows against 0.0873 / 0.0823 without) did not help, and is
not kept. Where the tiles do not cross M the shift folds away (the same
cubin as without it at 256 rows).

The stage ring's index (knob stage_carry, session 29): the consumer's k
loop carries the stage gk % S and lap gk / S as loop values (a compare
and two selects per k-tile) instead of dividing the induction variable;
LLVM's loop strength reduction spent ~0.1 s of the build on `% 3`
(BUILDT, session 28).

Knobs (--set K=V): BN (multiple of 64, <= 256), stages (S), BM (pingpong:
64 or 128; cooperative: 128 or 256), pingpong (0/1), persistent (0/1), grid, group_m, WGN, REGP,
REGC, l2promo (0/64/128/256), splitk (1 = off, 2..8), a_rows (64 or BM),
vacc (0/1), grid_compact (0/1), grid_full (0/1), a_shift (0/1), stage_carry (0/1),
one_epilogue (0/1). The 16-bit operands
are bf16 or f16 (the signature's; wgmma .bf16 / .f16), kind
bf16_wgmma_tma either way.

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

That last one is now the default (session 24, `tma_round` 1): the contract
gained `llm_fuse.tensor_maps_tf32` (docs/kernel-contract.md, "Tensor
maps"), which marks maps over f32 buffers that the runtime encodes as
CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 while the descriptor type keeps saying
f32. On the H200 (bench/tma/tma_tf32_probe.cu) such a map rounds every
element to nearest, ties to even, as it lands in shared memory: the stage
needs no pass at all, and the consumers go from the wait on full[s]
straight to their wgmmas, as in the bf16 kernels. `tma_round` 0 keeps the
cvt.rna pass described above (ties away instead of to even: the two differ
only on exact ties).

3xTF32 mode (kind `f32x3_wgmma_tma`: exact f32, the default precision; the
suite's f32 GEMMs and the table's sm_90a f32 entries): C = A @ B in f32
accuracy on TF32 tensor cores, as CUTLASS's "fast accurate FP32 via
3xTF32". Each f32 operand x is split into big = rna_tf32(x) and small =
rna_tf32(x - big) (x - big is exact in f32; |small| <= 2^-11 |x|), and
a b ~ small_a big_b + big_a small_b + big_a big_b (the dropped small_a
small_b is <= 2^-22 |a b|; small's own rounding adds <= 2^-22 |x| per
cross term), so a product carries about 2^-21 relative error where an f32
FMA carries 2^-24. The tensor cores' accumulation truncates (each wgmma
adds its products into the accumulator with the low bits cut): with one
accumulator over all of K the error grew with K (36x SGEMM's at K 8192).
So the wgmmas of each k-tile (3 terms x BK/8 steps) start from a zeroed
accumulator T, and after wgmma.wait_group 0 the consumers add T into the
main accumulator M with f32 adds (round to nearest): a blocked summation
(blocks of 32 k), which measured BELOW cuBLAS SGEMM's error (bench/NOTES.md
"3xTF32": normwise 5.3e-7 against 2.3e-6 at 1024 x 8192 x 8192). Knob
`promote` (1; 0 = one accumulator, a diagnostic), `terms` (3; 1 = big_a
big_b only: TF32 with rna operands, a diagnostic that measures like cuBLAS
TF32).
* The split (the 256 consumer threads, after full[s]): per stage the TMA
  lands [A | B] raw; each thread takes 16-byte chunks t, t + 256, ... of
  the K-major tiles (A; B too when stored [N, K]), computes big and small
  in integer arithmetic (big = (x + 0x1000) & ~0x1FFF: nearest, ties away,
  as cvt.rna; small the same on x - big), stores big in place and small at
  the same offset in the stage's second half [A_small | B_small] (so the
  128B swizzle and the wgmma descriptors carry over with a constant
  offset), then fence.proxy.async and named barrier 1 (256 threads).
* B stored [K, N] (row-major weights): TF32 wgmma cannot transpose, so the
  split transposes. The TMA lands B as BN/32 boxes [32 k][32 n] (32 f32 =
  128 B, 128B swizzle: chunk c of k-row k at c ^ (k % 8)); warp w of the 8
  takes k = 4w .. 4w + 3 and lane l the column n = 32 j + l of box j: four
  4-byte loads, each warp-wide load one k-row of 32 consecutive n (32
  distinct banks); the 4 k form one 16-byte chunk of B's K-major row n,
  stored at chunk w ^ (n % 8) (each 8-lane store phase 8 distinct chunks:
  conflict-free). All raw B loads come before a named barrier, the
  (in-place, transposed) stores after it; A's chunks are split in place
  between the two.
* Special values: |x| >= 0x7F7FF000 (bits of |x|: Inf, NaN, and finite x
  whose rounding would overflow) take big = (x - 0x2000 bits) & ~0x1FFF:
  +-Inf becomes +-max TF32 and small = x - big = +-Inf, so the infinity
  rides in small and a cross term never multiplies Inf by a zero small
  part (Inf x 0 would be NaN where the reference has Inf); NaN stays NaN
  (payloads in the low 13 bits only would read as Inf: no arithmetic makes
  those); huge finite x split from two TF32 ulps below. Subnormal parts are
  flushed by the tensor cores.
* Cost and budget: a stage is [A raw/big | B raw/big | A small | B small] =
  2 (128 + BN) 128 B (64 KiB at BN 128: 3 stages, 193 KiB of the 227); per
  k-tile each consumer thread loads 64 B (A) + 64 B (B) and stores twice
  that; 3 wgmmas m64nBNk8 per k8 step, 12 per k-tile; promotion waits for
  the k-tile's wgmmas (wait_group 0) but the next stage's wait, split and
  barrier run while they are in flight. Cooperative 128 x BN tiles only.
"""

import math

L2PROMO = {0: "none", 64: "l2promo_64b", 128: "l2promo_128b", 256: "l2promo_256b"}


def map_type(box, l2promo, dt="bf16"):
    return ("!nvgpu.tensormap.descriptor<tensor = memref<%s, 3>, swizzle = swizzle_128b, "
            "l2promo = %s, oob = zero, interleave = none>" % ("x".join(str(b) for b in box) + "x" + dt,
                                                              L2PROMO[l2promo]))


def grid_expr(ntiles, G, compact=False):
    """min(G, ntiles) for a symbolic tile count: a placeholder expression
    (comparisons are 0 or 1 in llm_client/tune.c's expressions). compact
    (the 16-bit kinds): G + (nt < G) * (nt - G), the tile count written
    twice instead of three times, so that a template choosing among five
    tilings (gemm_any.py SMALL_M) keeps its grid placeholder under the 512
    bytes of an expression"""
    nt = g_par(ntiles)
    if compact:
        return "%d + (%s < %d) * (%s - %d)" % (G, nt, G, nt, G)
    return "(%s < %d) * %s + (%s >= %d) * %d" % (nt, G, nt, nt, G, G)


def g_par(e):
    e = str(e)
    return e if e.replace("_", "").isalnum() else "(%s)" % e


def generate(cfg, g):
    ins, outs = g.parse_signature(cfg["signature"])
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    tf32 = cfg["kind"] == "tf32_wgmma_tma"
    # TF32 mode's rounding (docstring, "TF32 mode"): 1 (default): by the TMA unit (maps of data type TFLOAT32,
    # llm_fuse.tensor_maps_tf32: round to nearest even as the tiles land); 0: cvt.rna in shared memory
    tma_round = bool(tf32 and cfg.get("tma_round", 1))
    f32x3 = cfg["kind"] == "f32x3_wgmma_tma"     # exact f32 by the 3xTF32 split (docstring, "3xTF32 mode")
    f32 = tf32 or f32x3
    terms = cfg.get("terms", 3) if f32x3 else 1  # 1: big_a*big_b only (TF32 with rna operands; a diagnostic)
    promote = cfg.get("promote", 1) if f32x3 else 0   # 1: per k-tile partial sums added in f32 (docstring)
    # vacc 1: the promoted main accumulator M as a vector<NACCxf32> (one vector arith.addf per k-tile) instead of
    # an LLVM struct (an extractvalue / insertvalue pair per element, each spelling the struct type): the same
    # f32 adds in the same order, about 40% less kernel text (the table's templates: the builder takes at most
    # 1 MiB of kernel text, and a template holds every tiling it offers)
    vacc = bool(promote and cfg.get("vacc", 0))
    bnk = bool(cfg.get("b_nk"))
    dt = "f32" if f32 else ins[cfg["a"]][1]        # bf16 or f16 (wgmma with f32 accumulation either way)
    assert f32 or dt in ("bf16", "f16"), "16-bit operands: bf16 or f16"
    esz = 4 if f32 else 2
    KW = 8 if f32 else 16                        # k of one wgmma
    if f32x3:
        assert terms in (1, 3)
        assert not cfg.get("pingpong", 0), "f32x3_wgmma_tma: cooperative tiles only"
        assert len(cfg["b"]) == 1, "f32x3_wgmma_tma: one B operand"
    elif tf32:
        # TF32 wgmma reads both operands K-major from shared memory (no
        # transpose for 32-bit types): B must be stored [N, K]
        assert bnk, "tf32_wgmma_tma: B stored [N, K] (b_nk) only"
    else:
        assert not bnk, "bf16_wgmma_tma: B stored [K, N] only"
    pp = cfg.get("pingpong", 0)
    BN, BK, S = cfg["BN"], 128 // esz, cfg["stages"]   # BK: one 128-byte swizzle row of k
    # rows of a tile: ping-pong 64 or 128 (one consumer's); cooperative 128 or 256 (docstring, "Cooperative
    # 256-row tiles": each consumer its BM / 2 rows, BM / 128 m64 row blocks per wgmma step)
    BM = cfg.get("BM", 128) if pp or cfg.get("BM") == 256 else 128
    MB = BM // 64 if pp else BM // 128           # m64 row blocks one consumer computes per wgmma step
    GROUP_M = cfg["group_m"]
    nb = len(cfg["b"])
    T = 384
    persistent = cfg.get("persistent", 1)
    SPLIT = cfg.get("splitk", 1)                 # split-K: a cluster of SPLIT CTAs per tile (docstring)
    if SPLIT > 1:
        assert not tf32 and not pp, "split-K: bf16 / f16 / f32x3 cooperative tiles only"
        assert 2 <= SPLIT <= 8 and (BN // 8) % SPLIT == 0, "split-K: 2..8 CTAs, each BN / 8 / SPLIT n8 blocks"
        persistent = 0                           # one tile per cluster
    # a_shift (docstring, "A boxes inside M"): a box that would cross M loads the last AR rows instead
    SHIFT = bool(cfg.get("a_shift", 0))
    ONE_EPI = bool(cfg.get("one_epilogue", 0))   # masked epilogue only (no unmasked copy for full tiles)
    # stage_carry (knob): the consumer's k loop carries the stage gk % S and lap gk / S as iter_args (a
    # compare and two selects a k-tile) instead of dividing the induction variable: LLVM's loop strength
    # reduction spent ~0.1 s on the `% S` of S = 3 (build time, BUILDT session 28); off: the text as before
    CARRY = bool(cfg.get("stage_carry", 0))
    REGP, REGC = cfg.get("REGP", 40), cfg.get("REGC", 232)
    l2promo = cfg.get("l2promo", 256)
    assert BN % 64 == 0 and 64 <= BN <= 256 and S >= 2 and BM in ((64, 128) if pp else (128, 256))
    # the A box's rows (knob a_rows, docstring "A box of 64 rows"): BM (one box per stage) or 64 (BM / 64 boxes
    # per stage, stacked in the same tile: M >= 64 suffices where M >= BM would be needed)
    AR = cfg.get("a_rows", min(BM, 128))
    assert AR in (64, 128) and AR <= BM and BM % AR == 0
    assert not pp or persistent, "ping-pong needs persistent CTAs (two tiles per CTA at least)"
    assert 128 * REGP + 256 * REGC <= 65536 and REGP % 8 == 0 and REGC % 8 == 0 and REGP >= 24
    em = g.Emitter()
    if cfg.get("require"):   # an admission condition (a table entry's)
        em.require(cfg["require"])
    # sizes: ints, or (tf32 templates) expressions over the template's symbols
    need = [(N, 128 // 16 if not f32 else 4, 64 if not bnk else BN, "N"), (K, 16 // esz, BK, "K")]
    if g.is_sym(M):
        em.require("%s >= %d" % (M, AR))
    else:
        assert M >= AR, "a box may not exceed the tensor"
    for x, align, lo, what in need:
        if g.is_sym(x):
            em.require("%s %% %d == 0 && %s >= %d" % (x, align, x, lo))
        else:
            assert x % align == 0, "%s: 16-byte row strides for the tensor maps" % what
            assert x >= lo, "a box may not exceed the tensor"
    KT = g.scdiv(K, BK)
    if SPLIT > 1:   # every CTA of a cluster gets at least one k-tile
        if g.is_sym(K):
            em.require("%s > %d" % (K, BK * (SPLIT - 1)))
        else:
            assert KT >= SPLIT, "split-K %d: K = %d has %d k-tiles" % (SPLIT, K, KT)
    gm, gn = g.scdiv(M, BM), g.scdiv(N, BN)
    ntiles = g.smul(gm, gn)
    G = cfg.get("grid", 132)
    if SPLIT > 1:
        grid = g.smul(ntiles, SPLIT)
    elif not persistent:
        grid = ntiles
    elif cfg.get("grid_full"):
        grid = G          # G CTAs whatever the tile count (docstring, grid_full)
    elif g.is_sym(ntiles):
        # compact: the 16-bit kinds, and templates that set grid_compact (gemm_any.py's *_0x3tma: five tilings)
        grid = grid_expr(ntiles, G, compact=bool(cfg.get("grid_compact", not f32)))
    else:
        grid = min(G, ntiles)
    a_bytes = BM * BK * esz
    b_bytes = BK * BN * esz
    raw_bytes = a_bytes + nb * b_bytes              # what the TMA lands per stage: [A | B_0 | .. | B_nb-1]
    # f32x3: the split's small halves follow, [A_small | B_small], at raw_bytes (same swizzled layouts)
    stage_bytes = raw_bytes * (2 if f32x3 else 1)
    BW = 128 // esz                                 # n of one B box of B [K, N] (one 128-byte swizzle row)
    RS = BN + 8                                     # split-K: f32 row stride of a partial tile (docstring)
    part_bytes = nb * BM * RS * 4 if SPLIT > 1 else 0
    smem = max(S * stage_bytes, part_bytes) + 1024  # + alignment slack
    assert smem <= 227 * 1024 - 16 * S, "stages do not fit"
    WGN = cfg.get("WGN", min(nb * BN, 256))
    nsub = nb * BN // WGN
    assert (nb * BN) % WGN == 0 and WGN % 64 == 0 and WGN <= 256
    nacc = WGN // 2
    assert MB * nsub * nacc <= 128, "accumulators: at most 128 f32 registers per thread"
    sw_lbo, sw_sbo = BK * 128, 1024
    masked = any(g.is_sym(x) for x in (M, N)) or M % BM != 0 or N % BN != 0
    SHIFT = SHIFT and (g.is_sym(M) or M % BM != 0)   # only where a tile can cross M
    if SHIFT:
        assert not pp and AR == 128 and not f32, "a_shift: 16-bit cooperative tiles, 128-row A boxes"

    def box_row(nominal):
        """a_shift: the first row an A box of nominal first row `nominal` loads: min(nominal, M - AR)"""
        return em.minu(nominal, em.sub(g.sval(em, M), AR)) if SHIFT else nominal
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
    a_box = [1] * len(A.prefix) + [AR, BK]
    maps.append(("%map_a", cfg["a"], map_type(a_box, l2promo, dt), a_box, A))
    for j, bi in enumerate(cfg["b"]):
        b_box = [1] * len(Bs[j].prefix) + ([BN, BK] if bnk else [BK, BW])
        maps.append(("%%map_b%d" % j, bi, map_type(b_box, l2promo, dt), b_box, Bs[j]))

    grp_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = %d>" % (WG, S)
    ord_ty = "!nvgpu.mbarrier.group<memorySpace = %s, num_barriers = 2>" % WG
    tok_ty = "!nvgpu.mbarrier.token"
    ticks = em.idx(10000000)

    pid = em.op("gpu.block_id x", "pid")
    tid = em.op("gpu.thread_id x", "tid")
    wg = em.div(tid, 128)
    lane = em.rem(tid, 32)
    KTn, kbase = KTv, 0                              # k-tiles this CTA runs, from k-tile kbase
    if SPLIT > 1:
        em.comment("split-K: cluster (%d,1,1) = the CTAs of one tile; CTA rank r = pid %% %d (the cluster rank) "
                   "runs k-tiles [r KT / %d, (r + 1) KT / %d)" % (SPLIT, SPLIT, SPLIT, SPLIT))
        rank = em.rem(pid, SPLIT)
        ktile_pid = em.div(pid, SPLIT)
        kbase = em.div(em.mul(rank, KTv), SPLIT)
        KTn = em.sub(em.div(em.mul(em.add(rank, 1), KTv), SPLIT), kbase)

    if bnk:
        em.comment("shared memory, base aligned to 1024 B: per stage A[%d m][%d k], then B_j[%d n][%d k], %s "
                   "(rows of 128 B, 128B swizzle)" % (BM, BK, BN, BK, dt))
    else:
        em.comment("shared memory, base aligned to 1024 B: per stage A[%d x 64], then B_j[%d atoms][64 k][64 n], %s" % (
            BM, BN // 64, "f16" if dt == "f16" else "bf16"))
    sbase, sflat, sm_ty = g.aligned_smem_bf16(em, smem)
    dsm = em.op("gpu.dynamic_shared_memory : memref<?xi8, %s>" % WG, "smem")
    raw = em.op("memref.extract_aligned_pointer_as_index %s : memref<?xi8, %s> -> index" % (dsm, WG), "addr")
    pad = em.op("arith.subi %s, %s : index" % (sbase, raw), "pad")   # bytes from the window to the aligned base

    empty_n = 4 if pp else 8
    em.comment("mbarriers: full[s] (1 arrival + the stage's %d transaction bytes), empty[s] (%d arrivals: "
               "one per consumer warp%s)" % (raw_bytes, empty_n, " of the stage's owner" if pp else ""))
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
            body(ktile_pid if SPLIT > 1 else pid, 0)
            return
        t = em.fresh("tile")
        em.emit("scf.for %s = %s to %s step %s {" % (
            t, em.v(em.add(pid, em.mul(first, gridv))), em.v(ntv), em.v(em.mul(step, gridv))))
        em.indent += 2
        it = em.div(em.op("arith.subi %s, %s : index" % (t, pid), "i"), gridv)
        body(t, it)
        em.indent -= 2
        em.emit("}")

    def cluster_sync():
        """barrier.cluster.arrive (release) + wait (acquire), every thread on its own (not .aligned)"""
        em.emit("nvvm.cluster.arrive")
        em.emit("nvvm.cluster.wait")

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
    tx = em.idx(raw_bytes)

    def smem_tile(byte_off, box, hint):
        shape = "x".join(str(b) for b in box)
        return em.op("memref.view %s[%s][] : memref<?xi8, %s> to memref<%sx%s, %s>" % (
            dsm, em.v(em.add(pad, byte_off)), WG, shape, dt, WG), hint), "memref<%sx%s, %s>" % (shape, dt, WG)

    def producer_tile(tile, it):
        pid_m, pid_n = raster(tile)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        kt = em.fresh("kt")
        em.emit("scf.for %s = %s to %s step %s {" % (kt, em.idx(0), em.v(KTn), em.idx(1)))
        em.indent += 2
        gk = em.add(em.mul(it, KTn), kt)
        st = em.rem(gk, S)
        lap = em.div(gk, S)
        em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (empty, st, parity(lap, True), ticks, grp_ty))
        em.emit("nvgpu.mbarrier.arrive.expect_tx %s[%s], %s : %s" % (full, st, tx, grp_ty))
        k0 = em.mul(em.add(kbase, kt), BK)
        so = em.mul(st, stage_bytes)
        nm, _, ty, box, op = maps[0]
        for r in range(BM // AR):   # a_rows 64: the tile's row blocks of 64, each its own box (rows r * 64..)
            dst, dty = smem_tile(em.add(so, r * AR * BK * esz), box, "sa")
            coords = [em.v(k0), em.v(box_row(em.add(m0, r * AR)))] + [em.idx(0)] * len(op.prefix)
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
            for a in range(BN // BW):
                dst, dty = smem_tile(em.add(so, a_bytes + j * b_bytes + a * BK * 128), box, "sb")
                coords = [em.v(em.add(n0, BW * a)), em.v(k0)] + [em.idx(0)] * len(op.prefix)
                em.emit("nvgpu.tma.async.load %s[%s], %s[%s] to %s : %s, %s -> %s" % (
                    nm, ", ".join(coords), full, st, dst, ty, grp_ty, dty))
        em.indent -= 2
        em.emit("}")

    tile_loop(producer_tile)
    em.indent -= 2
    em.emit("}")
    if SPLIT > 1:
        em.comment("split-K: the producer warpgroup's threads take part in the consumers' two cluster barriers "
                   "(partials written; partials read)")
        cluster_sync()
        cluster_sync()
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
    if tf32 and not tma_round:
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
    if f32x3:
        # the 3xTF32 split (the docstring's "3xTF32 mode"): both consumer warpgroups, 256 threads; a flat f32 view
        sf_ty = "memref<%dxf32, %s>" % ((smem - 1024) // 4, WG)
        sf32 = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (dsm, pad, WG, sf_ty), "sf")
        ct = em.rem(tid, 256)                         # 0..255 over the two consumer warpgroups
        rt4 = em.mul(ct, 4)                           # f32 index of the thread's first chunk in a stage
        kmaj_bytes = a_bytes + (b_bytes if bnk else 0)   # the K-major raw tiles: split chunk by chunk, in place
        assert kmaj_bytes % (16 * 256) == 0
        xper = kmaj_bytes // (16 * 256)
        if not bnk:
            # B [K, N]: the raw tile lands as BN/32 boxes [32 k][32 n] (128B swizzle: 16-byte chunk c of k-row k
            # at c ^ (k % 8)); thread (warp w of the 8, lane l) takes, in box j, n = 32 j + l and k = 4 w .. 4 w + 3
            # (four 4-byte loads, each warp-wide load conflict-free: one k-row, 32 n), and writes the 4 k as one
            # 16-byte chunk of B's K-major row n: chunk w ^ (n % 8) (8 lanes per store phase: 8 distinct chunks)
            bl = em.rem(tid, 32)
            bw = em.div(ct, 32)
            bl_hi = em.shr(bl, 2)
            bl_lo4 = em.mul(em.band(bl, 3), 4)
            bw_par = em.mul(em.band(bw, 1), 4)
            b_rd = []                                 # per k in 0..3: byte offset in box 0 of raw (4 w + i, n = l)
            for i in range(4):
                kr = em.add(em.mul(bw, 4), i)         # the k-row
                cx = em.op("arith.xori %s, %s : index" % (em.v(bl_hi), em.v(em.add(bw_par, i))), "cx")
                b_rd.append(em.add(em.add(em.mul(kr, 128), em.mul(cx, 16)), bl_lo4))
            cw = em.op("arith.xori %s, %s : index" % (em.v(bw), em.v(em.band(bl, 7))), "cw")
            b_wr = em.add(em.mul(bl, 128), em.mul(cw, 16))   # byte offset of the thread's chunk in B's row block 0
        v4i = "vector<4xi32>"
        c_abs = em.const("dense<2147483647>", v4i, "x3abs")
        c_thr = em.const("dense<2139090944>", v4i, "x3thr")   # 0x7F7FF000: the first |x| whose rounding overflows
        c_half = em.const("dense<4096>", v4i, "x3half")       # 0x1000: half a TF32 ulp (13 dropped bits)
        c_msk = em.const("dense<-8192>", v4i, "x3msk")        # 0xFFFFE000
        c_m2 = em.const("dense<-8192>", v4i, "x3m2")        # -0x2000 (not ok: two TF32 ulps down, truncated)
        bar_id = em.const("1", "i32", "bar1")
        bar_n = em.const("256", "i32", "barn")

    acc_ty = "!llvm.struct<(%s)>" % ", ".join(["f32"] * nacc)
    undef = em.const_op("llvm.mlir.undef : %s" % acc_ty, "uacc")
    row_off = 0 if pp else em.mul(ci, BM // 2 * 128)   # bytes into the A tile of this consumer's first row
    nst = MB * nsub                                 # accumulator structs: (row block mi, column chunk sub)

    def consumer_tile(tile, it, c=None):
        pid_m, pid_n = raster(tile)
        m0 = em.mul(pid_m, BM)
        n0 = em.mul(pid_n, BN)
        g0 = em.mul(it, KTn)
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

        def ktile(gk, accs, first, pre_mma=None, sl=None):
            st, lap = sl if sl else (em.rem(gk, S), em.div(gk, S))
            em.emit("nvgpu.mbarrier.try_wait.parity %s[%s], %s, %s : %s" % (
                full, em.v(st), parity(lap, False), ticks, grp_ty))
            if tf32 and not tma_round:
                round_stage(st)
            if f32x3:
                split_stage(st)
            if pre_mma:
                pre_mma()
            stage = em.add(sbase, em.mul(st, stage_bytes))
            a_base = em.add(stage, row_off)
            b_base = em.add(stage, a_bytes)
            accs = list(accs)
            em.emit("nvvm.wgmma.fence.aligned")
            if f32x3:
                # small_a * big_b, big_a * small_b, big_a * big_b (small terms first) per k8 step
                for kk in range(BK // KW):
                    for sub in range(nsub):
                        i = sub
                        for t, (sa, sb) in enumerate([(raw_bytes, 0), (0, raw_bytes), (0, 0)][3 - terms:]):
                            da = desc(em.add(a_base, sa + kk * 32), k_hi_a)
                            db = desc(em.add(b_base, sb + kk * 32 + sub * WGN * 128), k_hi_a)
                            accs[i] = em.op(("nvvm.wgmma.mma_async %s, %s, %s, #nvvm.shape<m = 64, n = %d, k = 8>, "
                                             "D [<f32>, #nvvm.wgmma_scale_out<%s>], A [<tf32>, #nvvm.wgmma_scale_in<one>, "
                                             "<row>], B [<tf32>, #nvvm.wgmma_scale_in<one>, <col>] : %s -> %s") % (
                                                 da, db, accs[i], WGN,
                                                 "zero" if (first or promote) and kk == 0 and t == 0 else "one",
                                                 acc_ty, acc_ty), "w")
                em.emit("nvvm.wgmma.commit.group.sync.aligned")
                return accs
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
                                             "tf32" if tf32 else dt, "tf32" if tf32 else dt,
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

        def split_stage(st):
            em.comment("3xTF32 split of the stage: x -> big = rna_tf32(x) (in place), small = rna_tf32(x - big) "
                       "(at +%d B, the same swizzled layout)%s; then fence.proxy.async and named barrier 1 of the "
                       "256 consumer threads" % (raw_bytes, "" if bnk else "; B [K, N] transposed into K-major rows "
                                                 "(all raw loads first, barrier 1, then the stores)"))
            base = em.add(em.mul(st, stage_bytes // 4), rt4)
            bvals = []                               # B [K, N]: the raw loads, all before barrier 1
            if not bnk:
                sb = em.mul(st, stage_bytes)          # byte offset of the stage
                for j in range(BN // 32):
                    es = []
                    for i in range(4):
                        at = em.v(em.shr(em.add(em.add(sb, a_bytes + j * 4096), b_rd[i]), 2))
                        es.append(em.op("memref.load %s[%s] : %s" % (sf32, at, sf_ty), "xb"))
                    x = em.op("vector.from_elements %s : vector<4xf32>" % ", ".join(es), "x")
                    wat = em.v(em.shr(em.add(em.add(sb, a_bytes + j * 32 * 128), b_wr), 2))
                    bvals.append((wat, x))
            for j0 in range(0, xper, 2):             # the K-major tiles in place, two chunks in flight
                vals = []
                for j in range(j0, min(j0 + 2, xper)):
                    at = em.v(em.add(base, j * 256 * 4))
                    vals.append((at, em.op("vector.load %s[%s] {alignment = 16} : %s, vector<4xf32>" % (
                        sf32, at, sf_ty), "x")))
                split_store(vals)
            if not bnk:
                em.emit("nvvm.barrier id = %s number_of_threads = %s" % (bar_id, bar_n))
                split_store(bvals)
            em.emit("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}")
            em.emit("nvvm.barrier id = %s number_of_threads = %s" % (bar_id, bar_n))

        def split_store(vals):
            for at, x in vals:
                # big = rna_tf32(x) where |x| < 0x7F7FF000 (finite, no overflow), else (x - 0x2000 bits)
                # truncated: +-Inf -> +-max TF32 (so that small = x - big = +-Inf carries the infinity), huge
                # finite x stays finite, NaN stays NaN; small = rna_tf32(x - big)
                xi = em.op("vector.bitcast %s : vector<4xf32> to %s" % (x, v4i), "xi")
                ab = em.op("arith.andi %s, %s : %s" % (xi, c_abs, v4i), "xa")
                ok = em.op("arith.cmpi ult, %s, %s : %s" % (ab, c_thr, v4i), "ok")
                inc = em.op("arith.select %s, %s, %s : vector<4xi1>, %s" % (ok, c_half, c_m2, v4i), "inc")
                r0 = em.op("arith.addi %s, %s : %s" % (xi, inc, v4i), "xr")
                bi = em.op("arith.andi %s, %s : %s" % (r0, c_msk, v4i), "big")
                big = em.op("vector.bitcast %s : %s to vector<4xf32>" % (bi, v4i), "big")
                d = em.op("arith.subf %s, %s : vector<4xf32>" % (x, big), "d")
                di = em.op("vector.bitcast %s : vector<4xf32> to %s" % (d, v4i), "di")
                s0 = em.op("arith.addi %s, %s : %s" % (di, c_half, v4i), "sr")
                si = em.op("arith.andi %s, %s : %s" % (s0, c_msk, v4i), "small")
                sm = em.op("vector.bitcast %s : %s to vector<4xf32>" % (si, v4i), "small")
                em.emit("vector.store %s, %s[%s] {alignment = 16} : %s, vector<4xf32>" % (big, sf32, at, sf_ty))
                sat = em.v(em.add(at, raw_bytes // 4))
                em.emit("vector.store %s, %s[%s] {alignment = 16} : %s, vector<4xf32>" % (sm, sf32, sat, sf_ty))

        def release(gk, st=None):
            em.emit("scf.if %s {" % lane0)
            em.indent += 2
            st = em.rem(gk, S) if st is None else st
            em.op("nvgpu.mbarrier.arrive %s[%s] : %s -> %s" % (empty, em.v(st), grp_ty, tok_ty), "tok")
            em.indent -= 2
            em.emit("}")

        def acc_add(x, y):
            """x + y, element by element (f32 adds, round to nearest)"""
            for e in range(nacc):
                u = em.op("llvm.extractvalue %s[%d] : %s" % (x, e, acc_ty), "u")
                w = em.op("llvm.extractvalue %s[%d] : %s" % (y, e, acc_ty), "u")
                x = em.op("llvm.insertvalue %s, %s[%d] : %s" % (em.op("arith.addf %s, %s : f32" % (u, w), "u"), x, e,
                                                                  acc_ty), "m")
            return x

        vec_ty = "vector<%dxf32>" % nacc

        def vec_add(m, t):
            """m (vector) + t (the wgmma struct), element by element (f32 adds, round to nearest)"""
            es = [em.op("llvm.extractvalue %s[%d] : %s" % (t, e, acc_ty), "u") for e in range(nacc)]
            tv = em.op("vector.from_elements %s : %s" % (", ".join(es), vec_ty), "tv")
            return em.op("arith.addf %s, %s : %s" % (m, tv, vec_ty), "mv")

        def sl_init(g):
            """stage and lap of k-tile g, carried from here through the k loop"""
            return em.v(em.rem(g, S)), em.v(em.div(g, S))

        def sl_next(st, lap):
            """(st + 1) % S and lap + (st + 1) / S, and the previous stage (st + S - 1) % S"""
            n1 = em.add(st, 1)
            wrap = em.op("arith.cmpi eq, %s, %s : index" % (n1, em.idx(S)), "wrap")
            nst_ = em.op("arith.select %s, %s, %s : index" % (wrap, em.idx(0), n1), "st")
            nlap = em.op("arith.select %s, %s, %s : index" % (wrap, em.v(em.add(lap, 1)), lap), "lap")
            first = em.op("arith.cmpi eq, %s, %s : index" % (st, em.idx(0)), "wrap")
            prev = em.op("arith.select %s, %s, %s : index" % (first, em.idx(S - 1), em.v(em.add(st, -1))), "st")
            return nst_, nlap, prev

        def promoted_mainloop(g0):
            em.comment("3xTF32 with promotion: each k-tile's wgmmas accumulate from zero into T (the tensor cores' "
                       "accumulation truncates), then after wgmma.wait_group 0 the main accumulators M += T in f32 "
                       "(round to nearest); k-tile kt + 1's wait, split and barrier run while kt's wgmmas are in flight")
            t0 = ktile(g0, [undef] * nst, True)
            if vacc:
                zero = em.const_op("arith.constant dense<0.000000e+00> : %s" % vec_ty, "zvacc")
            else:
                zero = em.const_op("llvm.mlir.zero : %s" % acc_ty, "zacc")
            m_ty = vec_ty if vacc else acc_ty
            add = vec_add if vacc else acc_add
            res_names = em.fresh("acc")
            kt = em.fresh("kt")
            carried = []   # stage_carry: the stage and lap iter_args
            if CARRY:
                st0, lap0 = sl_init(em.add(g0, 1))
                kst, klap = em.fresh("kst"), em.fresh("klap")
                carried = ["%s = %s" % (kst, st0), "%s = %s" % (klap, lap0)]
            iter_args = ", ".join(["%%m%d = %s" % (j, zero) for j in range(nst)] +
                                  ["%%t%d = %s" % (j, t0[j]) for j in range(nst)] + carried)
            em.emit("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {" % (
                res_names, 2 * nst + len(carried), kt, em.idx(1), em.v(KTn), em.idx(1), iter_args,
                ", ".join([m_ty] * nst + [acc_ty] * nst + ["index"] * len(carried))))
            em.indent += 2
            gk = em.add(g0, kt)
            ms = []
            if CARRY:
                nxt, nlap, prev = sl_next(kst, klap)

            def pre():
                em.emit("nvvm.wgmma.wait.group.sync.aligned 0")
                em.comment("k-tile gk-1's wgmmas are retired: release its stage, add its partial sums")
                if CARRY:
                    release(None, prev)
                else:
                    release(em.add(gk, S - 1))
                for j in range(nst):
                    ms.append(add("%%m%d" % j, "%%t%d" % j))
            ts = ktile(gk, ["%%t%d" % j for j in range(nst)], True, pre_mma=pre, sl=(kst, klap) if CARRY else None)
            if CARRY:
                em.emit("scf.yield %s : %s" % (", ".join(ms + ts + [nxt, nlap]),
                                               ", ".join([m_ty] * nst + [acc_ty] * nst + ["index", "index"])))
            else:
                em.emit("scf.yield %s : %s" % (", ".join(ms + ts), ", ".join([m_ty] * nst + [acc_ty] * nst)))
            em.indent -= 2
            em.emit("}")
            em.emit("nvvm.wgmma.wait.group.sync.aligned 0")
            em.comment("release the last k-tile's stage (the producer may fill it for the next tile)")
            release(em.add(g0, em.sub(KTn, 1)))
            return [add("%s#%d" % (res_names, j), "%s#%d" % (res_names, nst + j)) for j in range(nst)]

        def plain_mainloop(g0):
            em.comment("k-tile 0 of the tile (peeled: scale-d 0 starts the accumulators)")
            first = ktile(g0, [undef] * nst, True)
            res_names = em.fresh("acc")
            kt = em.fresh("kt")
            carried = []   # stage_carry: the stage and lap iter_args
            if CARRY:
                st0, lap0 = sl_init(em.add(g0, 1))
                kst, klap = em.fresh("kst"), em.fresh("klap")
                carried = ["%s = %s" % (kst, st0), "%s = %s" % (klap, lap0)]
            iter_args = ", ".join(["%%a%d = %s" % (j, first[j]) for j in range(nst)] + carried)
            em.emit("%s:%d = scf.for %s = %s to %s step %s iter_args(%s) -> (%s) {" % (
                res_names, nst + len(carried), kt, em.idx(1), em.v(KTn), em.idx(1), iter_args,
                ", ".join([acc_ty] * nst + ["index"] * len(carried))))
            em.indent += 2
            gk = em.add(g0, kt)
            if CARRY:
                nxt, nlap, prev = sl_next(kst, klap)
            accs = ktile(gk, ["%%a%d" % j for j in range(nst)], False, sl=(kst, klap) if CARRY else None)
            em.emit("nvvm.wgmma.wait.group.sync.aligned 1")
            em.comment("k-tile gk-1's wgmmas are retired: lane 0 of each warp releases its stage")
            if CARRY:
                release(None, prev)
                em.emit("scf.yield %s : %s" % (", ".join(accs + [nxt, nlap]),
                                               ", ".join([acc_ty] * nst + ["index", "index"])))
            else:
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
            release(em.add(g0, em.sub(KTn, 1)))
            return ["%s#%d" % (res_names, j) for j in range(nst)]

        if promote:
            fin = promoted_mainloop(g0)
        else:
            fin = plain_mainloop(g0)

        em.comment("epilogue: D fragment = per warp 16 rows; register 4*ni + {0,1} at (lane/4, 8*ni + 2*(lane%4) + {0,1}), + {2,3} at row + 8")

        def pair(j, mi, ni, h):
            sub, nl = divmod(j * (BN // 8) + ni, WGN // 8)
            st_i = mi * nsub + sub
            if vacc:
                return em.op("vector.extract_strided_slice %s {offsets = [%d], sizes = [2], strides = [1]} : "
                             "%s to vector<2xf32>" % (fin[st_i], nl * 4 + 2 * h, vec_ty), "c")
            e0 = em.op("llvm.extractvalue %s[%d] : %s" % (fin[st_i], nl * 4 + 2 * h, acc_ty), "c")
            e1 = em.op("llvm.extractvalue %s[%d] : %s" % (fin[st_i], nl * 4 + 2 * h + 1, acc_ty), "c")
            return em.op("vector.from_elements %s, %s : vector<2xf32>" % (e0, e1), "c")
        if SPLIT > 1:
            splitk_epilogue(m0, n0, pair)
        else:
            epilogue(m0, n0, pair)

    def splitk_epilogue(m0, n0, pair):
        """split-K (docstring): partial tile to shared memory, cluster barrier, this CTA's 1/SPLIT of the
        columns summed over the cluster's partials in rank order (ld.shared::cluster), epilogue, barrier"""
        gq = em.shr(lane, 2)
        t2 = em.mul(em.band(lane, 3), 2)
        rowl = em.add(em.add(em.mul(ci, BM // 2), em.mul(wq, 16)), gq)    # the thread's first row in the tile
        em.comment("split-K: both consumer warpgroups are done with the stages (wgmma.wait_group 0 each): "
                   "named barrier 1, then the f32 partial tile [%d x %d] (row stride %d) over them" % (
                       nb * BM, BN, RS))
        em.emit("nvvm.barrier id = %s number_of_threads = %s" % (
            em.const("1", "i32", "bar1"), em.const("256", "i32", "barn")))
        pf_ty = "memref<%dxf32, %s>" % (part_bytes // 4, WG)
        pf = em.op("memref.view %s[%s][] : memref<?xi8, %s> to %s" % (dsm, pad, WG, pf_ty), "pf")
        for j in range(nb):
            for mi in range(MB):
                for ni in range(BN // 8):
                    for h in range(2):
                        at = em.add(em.mul(em.add(rowl, j * BM + 64 * mi + 8 * h), RS), em.add(t2, 8 * ni))
                        em.emit("vector.store %s, %s[%s] : %s, vector<2xf32>" % (pair(j, mi, ni, h), pf, em.v(at),
                                                                                 pf_ty))
        em.comment("split-K: every partial of the cluster written (release / acquire at cluster scope)")
        cluster_sync()
        cw = BN // SPLIT                               # the columns this CTA reduces: [rank * cw, rank * cw + cw)
        c0 = em.mul(rank, cw)
        ranks = [em.const(str(q), "i32", "rank%d" % q) for q in range(SPLIT)]

        def rpair(j, mi, ni, h):
            """the tile's (row, column pair) of product j summed over the cluster's partials, rank 0 first"""
            e = em.add(em.mul(em.add(rowl, j * BM + 64 * mi + 8 * h), RS), em.add(em.add(c0, t2), 8 * ni))
            a = em.op("arith.index_cast %s : index to i64" % em.v(em.add(sbase, em.mul(e, 4))), "pa")
            p3 = em.op("llvm.inttoptr %s : i64 to !llvm.ptr<3>" % a, "p3")
            acc = None
            for q in range(SPLIT):
                p7 = em.op("nvvm.mapa %s, %s : !llvm.ptr<3> -> !llvm.ptr<7>" % (p3, ranks[q]), "p7")
                x = em.op("llvm.load %s {alignment = 8 : i64} : !llvm.ptr<7> -> vector<2xf32>" % p7, "px")
                acc = x if acc is None else em.op("arith.addf %s, %s : vector<2xf32>" % (acc, x), "ps")
            return acc
        epilogue(m0, em.add(n0, c0), rpair, cw)
        em.comment("split-K: no CTA exits (its shared memory) while another may still read it")
        cluster_sync()

    def epilogue(m0, n0, pair, ncols=BN):
        gq = em.shr(lane, 2)
        t2 = em.mul(em.band(lane, 3), 2)
        row_base = em.add(em.add(em.add(m0, 0 if pp else em.mul(ci, BM // 2)), em.mul(wq, 16)), gq)
        col_base = em.add(n0, t2)
        row_offs = [64 * mi for mi in range(MB)]
        col_offs = [8 * ni for ni in range(ncols // 8)]
        if not masked:
            g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair)
            return
        Mv, Nv = em.v(g.sval(em, M)), em.v(g.sval(em, N))
        if ONE_EPI:
            # one_epilogue (knob): every tile through the masked epilogue (its row / column-pair
            # predicates are true on full tiles), not a second, unmasked copy: about half the
            # epilogue's code where the epilogue is large (a GELU's tanh on 64-128 values per
            # thread), hence ptxas and LLVM time (bench/NOTES.md "build time", BUILDT)
            g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair,
                                m_bound=Mv, n_bound=Nv)
            return
        # partial tiles (M % BM, N % BN): a CTA-uniform branch, the full tiles unmasked
        okm = em.op("arith.cmpi ule, %s, %s : index" % (em.v(em.add(m0, BM)), Mv), "full")
        okn = em.op("arith.cmpi ule, %s, %s : index" % (em.v(em.add(n0, ncols)), Nv), "full")
        ok = em.op("arith.andi %s, %s : i1" % (okm, okn), "full")
        em.emit("scf.if %s {" % ok)
        em.indent += 2
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair)
        em.indent -= 2
        em.emit("} else {")
        em.indent += 2
        m_lo = None
        if SHIFT:
            # the consumer's rows lie in A box r (its nominal first row m0 + r AR), loaded from row
            # min(m0 + r AR, M - AR): its accumulator rows are the global rows d lower; a row below the
            # box's nominal first row belongs to the tile above and is not stored here
            em.comment("a_shift: this consumer's A box loaded d = nominal - min(nominal, M - %d) rows higher" % AR)
            m_lo = em.add(m0, 0 if BM == AR else em.mul(ci, AR))
            row_base = em.sub(row_base, em.sub(m_lo, box_row(m_lo)))
        g.fragment_epilogue(em, helper, C, bias, res, nb, row_base, row_offs, col_base, col_offs, pair,
                            m_bound=Mv, n_bound=Nv, m_lo=m_lo)
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
    if SPLIT > 1:
        launch["cluster"] = [SPLIT, 1, 1]
    if pp:
        what = ("ping-pong: consumer warpgroups 1 and 2 own alternate %dx%d tiles (setmaxnreg %d), each %d x %d x %d "
                "wgmma.mma_async m64n%dk%d per k-tile, order barriers hand the tensor cores over" % (
                    BM, BN, REGC, BK // KW, MB, nsub, WGN, KW))
    elif MB > 1:
        what = ("cooperative: 2 consumer warpgroups of %d rows of the %dx%d tile (setmaxnreg %d), each %d x %d x %d "
                "wgmma.mma_async m64n%dk%d per k-tile" % (BM // 2, BM, BN, REGC, BK // KW, MB, nsub, WGN, KW))
    else:
        what = ("cooperative: 2 consumer warpgroups of 64 rows of the %dx%d tile (setmaxnreg %d), each %d x %d "
                "wgmma.mma_async m64n%dk%d per k-tile" % (BM, BN, REGC, BK // KW, nsub, WGN, KW))
    if f32x3:
        header = [
            "precision: exact f32 by 3xTF32 (%s): each f32 operand x is split into big = rna_tf32(x) and small = "
            "rna_tf32(x - big) in shared memory after its stage lands (the 256 consumer threads: ld.shared, integer "
            "rounding, st.shared of big in place and of small %d B further on, fence.proxy.async, named barrier 1), "
            "then per k8 step wgmma.mma_async m64n%dk8 .tf32 small_a*big_b, big_a*small_b, big_a*big_b into one f32 "
            "accumulator; relative error per product about 2^-21 against f32's 2^-24 (docstring)" % (
                "3 terms" if terms == 3 else "DIAGNOSTIC: big_a*big_b only", raw_bytes, WGN),
            "TMA warp-specialized (sm_90a): producer thread (warpgroup 0, setmaxnreg %d) issues per stage "
            "mbarrier.arrive.expect_tx(%d B) + %s + %s (nvgpu.tma.async.load, 128B swizzle); %s" % (
                REGP, raw_bytes, "1 A box [%d,%d]" % (BM, BK) if AR == BM else
                "%d A boxes [%d,%d] (the tile's rows 64 r.., so M >= 64 suffices)" % (BM // AR, AR, BK), "1 B box [%d,%d] (B [N, K], K-major)" % (BN, BK) if bnk else
                "%d B boxes [%d k,%d n] (B [K, N]; the split transposes them into K-major rows)" % (BN // BW, BK, BW),
                what),
            "pipeline: %d-stage ring, mbarriers full[s] (expect_tx, TMA bytes) and empty[s] (consumer warps after "
            "wgmma.wait_group 1); %s k-tiles of %d per tile" % (S, KT, BK),
            "smem: per stage [A %dx%d | B %dx%d | A_small | B_small] f32 = %d B, 128B-swizzled K-major layouts "
            "(SBO 1024), base aligned to 1024 B; %d stages = %d B" % (BM, BK, BN, BK, stage_bytes, S, smem),
            "tensor maps (trailing arguments, llm_fuse.tensor_maps): %s" % "; ".join(
                "%s views argument %d, box [%s]" % (nm, p, ", ".join(str(b) for b in box))
                for nm, p, _, box, _ in maps),
            "launch: grid (%s,1,1)%s over %s x %s tiles (grouped raster, GROUP_M=%d by default, a tune knob), "
            "block (%d,1,1), dynamic smem %d B" % (
                g.sgrid(grid), " persistent CTAs striding" if persistent else " = one CTA per tile", gm, gn,
                GROUP_M, T, smem),
        ]
    elif tf32:
        header = [
            ("precision: TF32 (tf32=1 only): wgmma.mma_async .tf32, f32 accumulation; both operands rounded to TF32 "
             "by the TMA unit as the tiles land (tensor maps of data type TFLOAT32, llm_fuse.tensor_maps_tf32: round "
             "to nearest, ties to even, measured on the H200 by bench/tma/tma_tf32_probe.cu), as PyTorch's "
             "allow_tf32 GEMMs round; no pass over shared memory (the tensor cores alone would truncate: they ignore "
             "the low 13 bits)") if tma_round else
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
        "mbarrier.arrive.expect_tx(%d B) + %s A box [%d,64] + %d B box(es) [64,64] (nvgpu.tma.async.load, "
        "128B swizzle)%s; %s" % (REGP, stage_bytes, "1" if AR == BM else "%d stacked" % (BM // AR), AR, nb * BN // 64,
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
    if SPLIT > 1:
        header[-1] = ("launch: grid (%s,1,1) = %d CTAs per tile over %s x %s tiles (grouped raster, GROUP_M=%d by "
                      "default, a tune knob), clusters (%d,1,1) (known_cluster_size), block (%d,1,1), dynamic smem "
                      "%d B" % (g.sgrid(grid), SPLIT, gm, gn, GROUP_M, SPLIT, T, smem))
        header.insert(1, "split-K %d (deterministic, no workspace): the %d CTAs of a cluster share one %dx%d tile, "
                      "CTA rank r runs k-tiles [r KT / %d, (r + 1) KT / %d); then each writes its f32 partial to its "
                      "shared memory (over the drained stages, row stride %d), cluster barrier, CTA r sums columns "
                      "[r %d, r %d + %d) of the %d partials in rank order through distributed shared memory "
                      "(nvvm.mapa + ld.shared::cluster), runs the epilogue and stores them; a second cluster barrier "
                      "keeps every CTA's shared memory until all have read it" % (
                          SPLIT, SPLIT, BM, BN, SPLIT, SPLIT, RS, BN // SPLIT, BN // SPLIT, BN // SPLIT, SPLIT))
    kname, text, launch = g.finish(cfg, em, ins, outs, names, launch, header, ["\n".join(helper.text)])
    # the tensor maps: trailing arguments and the attribute that names the viewed parameters
    sig_end = ") kernel\n"
    head, rest = text.split(sig_end, 1)
    assert head.rstrip().startswith("// ") or "gpu.func @" in head
    head += "".join(", %s: %s" % (nm, ty) for nm, _, ty, _, _ in maps)
    tf32_maps = ("llm_fuse.tensor_maps_tf32 = array<i32: %s>,\n                  " % ", ".join(
        str(j) for j in range(len(maps)))) if tma_round else ""
    rest = rest.replace("attributes {known_block_size", "attributes {llm_fuse.tensor_maps = array<i32: %s>,\n"
                        "                  %sknown_block_size" % (
                            ", ".join(str(p) for _, p, _, _, _ in maps), tf32_maps), 1)
    return kname, head + sig_end + rest, launch
