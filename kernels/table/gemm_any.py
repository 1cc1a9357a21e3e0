#!/usr/bin/env python3
"""gemm_any.py - the table's GEMM templates for any row count M, with N and K
free where the kernel's structure allows, in each element type the kernel
serves.

kernels/table/build.py imports this module (SPEC_MODULES) and writes one entry
per (family, element type, kernel) that `templates()` yields. The families are
the GEMM + epilogue subgraphs of the shipped examples that
bench/table/heldout.py draws its held-out models from:

  mlp_up      examples/mlp_block.mlir     x W1 + b1, GELU (tanh)      bf16, f16
  mlp_down    examples/mlp_block.mlir     h W2 + b2 + x (residual)    bf16, f16
  swiglu      examples/swiglu.mlir        silu(x Wg) * (x Wu)         bf16, f16
  qkv         examples/minigpt_block.mlir x Wqkv + b                  f32
  attn_proj   examples/minigpt_block.mlir o Wo + b + x  (Wo square)   f32
  fc          examples/minigpt_block.mlir x Wfc + b, GELU (tanh)      f32
  proj        examples/minigpt_block.mlir g Wpr + b + h               f32
  gemm_relu   examples/gemm_epilogue.mlir relu((x W - 0.5) * 2) (W square) f32

(minigpt_mlp's two GEMMs have fc's and proj's pattern keys.) The kernels are
kernels/handwritten/gen_gemm.py's, with the same tilings as the shipped
kernels of those subgraphs, generated in its symbolic mode: M, N, K are the
pattern's size symbols, so the memref types are {{S0}}-style placeholders,
every number derived from a size (grid, k-tile count, last row) a
placeholder expression, and what the structure needs a requirement:

  * M is free and masked: any M >= 1 (with M >= 2 here; M = 1 is another
    pattern key, a unit dimension). The grid has ceil(M / BM) row tiles; A
    rows past M - 1 are loaded as row M - 1 (an unsigned min on a
    loop-invariant address); their accumulator rows are never stored: the
    residual load, epilogue and store of a row run under scf.if row < M.
    The grouped raster handles a short last group (Triton's form), so
    GROUP_M needs no requirement; its values are the configured one, half,
    double and 1.
  * N free with `SN % BN == 0`, K free with `SK % BK == 0` (and enough
    k-tiles for the pipeline's prologue): a size that violates one is
    refused by name (e.g. N = 1000).
    The *_nk entries (f32 SIMT and mma.sync kernels) take the rest: N and K
    masked too (B columns and the last k-tile read at clamped addresses, k
    past K zero-filled, columns past N not stored), N and K only multiples
    of the 16-byte load (4 f32 / 8 16-bit elements), admitted only where
    the unmasked entry's default tiling refuses N or K (e.g. D = 1000).
  * bf16 and f16 for the tensor-core kernels (mma.sync m16n8k16 on sm_80 /
    sm_90; wgmma m64nNk16 on sm_90a), each from the example rewritten to
    that type (heldout.py's dtype_rewrite); f32 for the SIMT f32 kernels.

On sm_90a the TMA-fed wgmma entry is tried first (file names sort
`..._0tma` before `..._1wgmma` before `..._2mma`), then the wgmma entry;
where its BN does not divide N, the mma.sync entry (which lists sm_90a too)
may still admit the sizes.

The *_0tma entries (bf16 and f16, sm_90a; issue 15's wgmma forms with N and K
masked) are gen_gemm.py's `bf16_wgmma_tma` kernel
(kernels/handwritten/gemm_wgmma_tma.py, the kernel the suite ships for
SwiGLU and GEMM + bias + GELU): a producer thread feeding a 4-stage ring by
TMA (tensor-map arguments, encoded by the runtime on each launch's
buffers), two consumer warpgroups, persistent CTAs (at most 132, fewer
where there are fewer tiles). M, N and K are all free and masked: TMA
zero-fills the parts of a box past M, N or K, and the epilogue of a partial
tile masks its rows and columns (the GEMM + ReLU and down-projection
entries, A_SHIFT below, load the A box of a tile that crosses M from row
M - 128 instead: the zero fill of a box crossing M was measured slow). The
constraints, stated as the template's requirements: M >= BM (128: a box may not exceed the tensor), N and K
multiples of 8 (16-byte rows, the tensor map's rule), N >= 64, K >= 64.
At M <= 1024 a cooperative 128 x 64 tiling (SMALL_M below) is timed beside
the default where the default's grid is under one wave, and, where a
split-K grid fits one wave, three split-K tilings (thread-block clusters,
SMALL_M; four in the GEMM + ReLU entries: the 128 x 256 default's 2-way split too).
For wave quantization (TAIL_M, session 27) the GEMM + ReLU entries offer
a 128 x 192 tiling on 132 persistent CTAs where its waves beat the
default's (TILE 1xx, in place of the persistent 128 x 64), and the
down-projection entries a cooperative 256 x 128 tiling (two m64 row
blocks per consumer warpgroup) on 132 persistent CTAs over one wave of
tiles (TILE 5xx). Session 29: the bf16 qkv entry offers the same 128 x 192
tiling (TILE 5xx, same admission; held-out 029's 1024 x 1600 -> 4800), and
the bf16 SwiGLU entry a cooperative 128 x (2 x 128) tiling where K is not a
multiple of 64 (TILE 5xx; the ping-pong default lost ~20% to its K tail).
Every TMA kernel's k loop carries its stage index (gemm_wgmma_tma.py
stage_carry, a build-time change) except the qkv 3xTF32 entry's, and the
fc 3xTF32 entry runs only the masked epilogue (one_epilogue).
Where they refuse (M < 128: the small-M tilings of the wgmma and mma.sync
entries are the better kernels there anyway, and at M <= 8 SwiGLU's
skinny entries of kernels/table/skinny_any.py answer first; N = 1000 is
admitted, N = 1001 not), the next entry is tried. The f16 entries are the same kernels on f16
operands (wgmma .f16; on the H200 at 512 x 768 x 3072 the same times as
bf16, bench/tma/splitk-device.sh). B stored [N, K] (nn.Linear,
kernels/table/importer_any.py; the generator takes B [K, N] only in 16-bit
types) has no TMA form yet. The shipped entries of
build.py's sentinel method (M free, N and K fixed) have more fixed sizes, so
the table tries them first (llm_client/table.c): at the sizes they admit the
kernels are exactly the shipped ones.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
import gen_gemm  # noqa: E402
from heldout import dtype_rewrite, size_rewrite  # noqa: E402

EX_M = 1000  # the examples' row count: distinct from every other size in them

# name: (example, its dtype, its row count, base subgraph of gen_gemm.py,
#        element types, whether it has an sm_90a wgmma form)
FAMILIES = {
    "mlp_up": ("examples/mlp_block.mlir", "bf16", 4096, "sg_439a925e4900df20", ["bf16", "f16"], True),
    "mlp_down": ("examples/mlp_block.mlir", "bf16", 4096, "sg_5cdc21b0bac363b8", ["bf16", "f16"], True),
    "swiglu": ("examples/swiglu.mlir", "bf16", 8192, "sg_74ede17e00bf0352", ["bf16", "f16"], True),
    "qkv": ("examples/minigpt_block.mlir", "f32", 1024, "sg_775f56ec869d4b28", ["f32", "bf16", "f16"], True),
    "attn_proj": ("examples/minigpt_block.mlir", "f32", 1024, "sg_1c6bf422e56f7cc7", ["f32", "bf16", "f16"], True),
    "fc": ("examples/minigpt_block.mlir", "f32", 1024, "sg_208fdd59011a4518", ["f32", "bf16", "f16"], True),
    "proj": ("examples/minigpt_block.mlir", "f32", 1024, "sg_36d4248ce34e0c94", ["f32", "bf16", "f16"], True),
    "gemm_relu": ("examples/gemm_epilogue.mlir", "f32", 1024, "sg_5beaf48efb3a6ac0", ["f32", "bf16", "f16"], True),
}

# The f32 examples rewritten to bf16 / f16 (heldout.py does that: the whole
# computation, matmul accumulator and epilogue, in the 16-bit type) get the
# tensor-core kernels of the bf16 subgraph with the same shape of N (wide N:
# the MLP up-projection's tiling; N = the hidden size: the down-projection's).
# The kernel accumulates in f32 and runs the epilogue in f32, rounding once
# at the store: more accurate than the IR's 16-bit arithmetic, so whether it
# verifies is the verifier's call (tolerances of a 16-bit result).
TC_TILING = {
    "sg_775f56ec869d4b28": "sg_439a925e4900df20",
    "sg_1c6bf422e56f7cc7": "sg_5cdc21b0bac363b8",
    "sg_208fdd59011a4518": "sg_439a925e4900df20",
    "sg_36d4248ce34e0c94": "sg_5cdc21b0bac363b8",
    "sg_5beaf48efb3a6ac0": "sg_439a925e4900df20",
}
TILE_KEYS = ("BM", "BN", "BK", "WM", "WN", "stages", "group_m", "minctasm")

# sm_90a TMA forms (gemm_wgmma_tma.py), by the bf16 subgraph whose tiling a
# family uses (TC_TILING for the f32 examples): SwiGLU the suite's shipped
# ping-pong 128 x (2 x 64) kernel; bias + GELU the shipped GEMM + bias +
# GELU kernel (cooperative 128 x 256, GROUP_M 16); bias + residual
# cooperative 128 x 128 (its N is the hidden size: twice the tiles of 256).
# Measured at the suite's sizes: bench/tma/NOTES-draft.md.
TMA = {
    "sg_439a925e4900df20": dict(BN=256, stages=4, pingpong=0, persistent=1, group_m=16),
    "sg_5cdc21b0bac363b8": dict(BN=128, stages=4, pingpong=0, persistent=1, group_m=8),
    "sg_74ede17e00bf0352": dict(BM=128, BN=64, stages=4, pingpong=1, group_m=8),
}
TMA_BM = 128  # every TMA form's rows per tile: the requirement M >= 128

# sm_90a exact f32 forms (the *_0x3tma entries): gen_gemm.py's
# f32x3_wgmma_tma kernel (gemm_wgmma_tma.py "3xTF32 mode", the suite's
# shipped f32 kernels: cooperative 128 x 128, 3 stages, per k-tile
# promotion; bench/NOTES.md "3xTF32"), M, N and K masked by TMA's zero fill
# and the partial tiles' epilogue. Tried before the SIMT entries on sm_90a.
F32X3 = dict(BN=128, stages=3, pingpong=0, persistent=1, group_m=8)
# The A box of the *_0x3tma entries (gemm_wgmma_tma.py `a_rows`): 64 rows,
# two boxes per 128-row tile, so that the requirement is M >= 64 and the
# 65..127-row GEMMs (between kernels/table/skinny_any.py's M <= 64 and the
# 128-row box) get the 3xTF32 kernel and its split-K tilings (session 25;
# held-out 023_gemm_epilogue_r127 was 1.55x torch.compile on the SIMT
# entry). importer_any.py's entries keep the 128-row box (F32X3 alone).
F32X3_A_ROWS = 64
# stage_carry (gemm_wgmma_tma.py; session 29, build time) is set on every gemm_any TMA entry but these 3xTF32 ones:
# the qkv entry's kernels were not run on the H200 in session 29 (no held-out or staged case reached it: at the
# example's sizes the shipped sentinel entry answers). Drop it from here once verified.
F32X3_NO_CARRY = ("sg_775f56ec869d4b28",)

# sm_90a forms: gen_gemm.py's plain wgmma kernel (the SwiGLU's shipped sm_90a
# kernel is the warp-specialized persistent one of gemm_wgmma_ws.py, which is
# not templated; its plain-wgmma tiling is used here).
WGMMA = {
    # BN = 128, not the shipped 256: with masked M, the 256-wide tile's GELU
    # epilogue spills (255 registers, ~130 B of stack); 128 wide builds at
    # 182 registers without spills.
    "sg_439a925e4900df20": dict(WGS=2, BN=128, stages=4, group_m=8),
    "sg_5cdc21b0bac363b8": dict(WGS=2, BN=64, stages=4, group_m=8),
    "sg_74ede17e00bf0352": dict(WGS=2, BN=128, stages=4, group_m=8),
}


# Small-M alternatives (tune knob TILE of gen_gemm.generate_alternatives):
# tilings that make more, smaller CTAs where the default tile leaves most SMs
# idle, each admitted only at the row counts it is for, so that the pass
# times it beside the default tile there (and keeps the fastest) and nowhere
# else. Per kind: (overrides, keys dropped, admitted where M <= bound).
#   f32_simt: 16 x 32 tiles with the K loop split 16 ways inside the CTA
#     (KS = 16: 128 threads, the slices' partial tiles summed in shared
#     memory in slice order: deterministic), and 32 x 64 tiles split 4 ways.
#     At M = 17, N = 3072, K = 768 the default 64 x 128 tile makes 24 CTAs
#     with 96 k-tiles each; 16 x 32 x 16 makes 192 CTAs with 6 k-tiles per
#     slice.
#   bf16_mma: 32 x 64 tiles (8 warps of 16 x 16; 16 x 32 warp tiles spilled
#     8 bytes in the SwiGLU kernel), 4 stages.
#   bf16_wgmma: one warpgroup (64 rows) x 64 columns.
#   bf16_wgmma_tma (the *_0tma entries; persistent grid min(132, tiles)):
#     the defaults are cooperative 128 x 128 (N = 768: 6 CTAs per 128 rows,
#     12 at M = 256 and 24 at 512 on 132 SMs), 128 x 256 (N = 3072: 12 per
#     128 rows) and SwiGLU's ping-pong 128 x (2 x 64) (under 132 tiles one
#     of its two consumers idles). Cooperative 128 x 64, 8 stages (fewer
#     where a stage does not fit: SwiGLU's two B tiles, 7): 2x the CTAs of
#     128 x 128 and 4x of 128 x 256 (N = 768: 24 at M = 256, 48 at 512, 96
#     at 1024; at most one wave up to M = 1408); admitted at M <= 1024.
#     A ping-pong 64 x 64 tiling (4x the CTAs of 128 x 128) cannot be one
#     of these alternatives: all of them are one kernel with one set of
#     tensor-map arguments, and its A box is [64, 64] where the others' is
#     [128, 64] (the box is in the argument's type and in the kernel's
#     llm_fuse.tensor_maps; _alternatives checks it).
#     Split-K by thread-block clusters (gemm_wgmma_tma.py `splitk`: the S
#     CTAs of a cluster share a tile, each runs 1/S of the k-tiles, and
#     they sum their f32 partials in rank order through distributed shared
#     memory: deterministic, no workspace): 128 x 128 with S = 2, and
#     128 x 64 with S = 2 and 4, each admitted only where its grid
#     (tiles x S CTAs) is at most one wave of 132 CTAs (SPLITK_WAVE). On
#     the H200 (bench/tma/splitk-device.sh, 2026-11-25) at N = 768, K = 3072
#     the default 128 x 128 took 0.0236 / 0.0239 / 0.0252 ms at M = 256 /
#     512 / 1152; the best split-K 0.0112 (128 x 64, S 4: 96 CTAs) /
#     0.0137 (128 x 64, S 2: 96) / 0.0206 (128 x 128, S 2: 108), against
#     cuBLAS 0.0138 / 0.0146 / 0.0185; grids over one wave lost (S 4 at
#     216 CTAs: 0.0260), and at the suite's 4096 rows (192 tiles) every
#     split lost to the unsplit grid (0.0537 against 0.0485).
#     128 x 256 with S = 2 (TILE 5xx; session 26, issue 15 point 7): the
#     split of a 128 x 256 default, offered by the GEMM + ReLU entries
#     (SPLIT256: W square, K = N, so long k-loops at few row tiles), not
#     by SwiGLU (two B tiles of 256: 256 accumulators a thread). Admitted
#     where tiles x 2 is at most one wave. On the H200
#     (bench/table/gemm16-device.sh, 2026-11-25, two runs): GEMM + ReLU
#     f16 256 x 8192 x 8192 0.0621 ms against 0.0859 for the default's 64
#     CTAs (torch.compile 0.0583-0.0597, eager 0.0659); 142 x 8192 x 8192
#     0.0824-0.0827 against 0.0848-0.0852 (torch.compile 0.0490 / 0.0752
#     in the two runs: still 1.68x behind in the run where compile was
#     fast); on the down-projection 1024 x 8192 -> 2048 (128 x 128
#     default, same CTA count) 0.0557-0.0559 against 0.0562-0.0564: no
#     gain; at 512 x 768 -> 2304 (qkv) 0.0163-0.0164 and 512 x 768 ->
#     3072 (fc) 0.0180-0.0182 against 0.0149-0.0151 / 0.0170-0.0172 for
#     the 128 x 64 tiling (short k-loops): not offered there.
#     TAIL_M (session 27, issue 15 point 7; by family): GEMM + ReLU:
#     cooperative 128 x 192 on 132 persistent CTAs (grid_full), admitted
#     over one wave of the default's tiles where its waves x 3 are fewer
#     than the default's waves x 4 (a 128 x 192 tile is 0.75 of a 128 x 256
#     one; 533 rows: 215 tiles in 2 waves against 160 in 2; under one wave
#     the splits beat it: 0.0883 / 0.0724 / 0.0231 ms at 142 / 256 rows /
#     512 x 2048 x 2048 against 0.0661 / 0.0620 / 0.0215 for the 128 x 256
#     split), in place of the persistent 128 x 64 (TILE 1xx), which never
#     won: on the H200 (bench/table/gemm16-device.sh,
#     2026-11-25, session 27 runs 1 and 2) it took 0.1208-0.1213 ms at
#     142 x 8192 x 8192 f16 (best 0.0651), 0.2451-0.2468 at 533 x 8192 x
#     8192 bf16 (128 x 192: 0.1385-0.1404, default 0.1721-0.1748,
#     torch.compile 0.1019-0.1047), 0.0877 at 256 rows (best 0.0591), and
#     0.0161 at 512 x 2048 x 2048 (the 128 x 128 split 0.0159). Measured
#     and not offered: the cooperative 256 x 128 tile (gemm_wgmma_tma.py
#     BM 256) split 2 ways, one row tile up to 256 rows, so that each W
#     tile crosses L2 once: 0.0651 at 142 rows against 0.0661 for the
#     128 x 256 split, 0.0591 against 0.0620 at 256 rows (torch.compile
#     0.0493 / 0.0584), 0.0216 at 512 x 2048 x 2048; it does not fit beside
#     the others (seven tilings: 1.05-1.12 MB of kernel text, over the
#     builder's 1 MiB) and dropping the 128 x 128 split for it cost 35% at
#     512 x 2048 x 2048 (0.0215 against 0.0159). Also tried at 533 rows
#     (run 1): split-K past one wave (128 x 256 S 4: 0.1745, 128 x 192
#     S 3: 0.1761, 128 x 128 S 2: 0.1926), ping-pong 128 x 128 (0.1744),
#     256 x 128 persistent or S 2 (0.2081 / 0.2009).
#     MLP down-projection: cooperative 256 x 128 on 132 persistent CTAs,
#     admitted over one wave of the 128 x 128 default's tiles where the
#     256-row tiles take at most half the waves (in tile-pair units no more
#     than the default): at 9531 x 3072 -> 768 f16 (held-out 041) 0.0898 ms
#     against 0.0951 (default, GROUP_M 1; torch.compile 0.0771), ping-pong
#     128 x 128 0.0905, 128 x 192 0.1034, splits past one wave 0.12-0.14
#     (run 1); run 2: 0.0887-0.0896 against 0.0946 (torch.compile 0.0764);
#     at 4096 x 3072 -> 1024 bf16 0.0465-0.0473 against 0.0488; at 1024 x
#     8192 -> 2048 (one wave of 128 x 128) it lost (0.0860-0.0879 against
#     0.0567-0.0572): not admitted there.
#   f32x3_wgmma_tma (the *_0x3tma entries; cooperative tiles only, 128
#     rows): cooperative 128 x 64, 4 stages (48 KiB a stage with the small
#     halves: 193 KiB), 2x the CTAs of the default 128 x 128 (N = 768: 12
#     per 128 rows); admitted at M <= 1024. Split-K by clusters (session
#     25: gemm_wgmma_tma.py `splitk` on the 3xTF32 kernel, the same rank-
#     order sum of f32 partials through distributed shared memory, so
#     still exact f32 and deterministic): 128 x 128 with S = 2, 4 and 8,
#     each admitted only where tiles x S is at most one wave (SPLITK_WAVE).
#     At N = 768, K = 3072 (the MiniGPT MLP's down-projection) the default
#     makes 6 CTAs per 128 rows: 24 at M = 512, where S = 4 makes 96. On
#     the H200 (bench/tma/f32-splitk-device.sh, 2026-11-25) at N = 768,
#     K = 3072: M = 512 0.1498 ms default, 0.0467 S 4 (torch.compile
#     0.0677); M = 606 0.1514 / 0.0475 S 4 (0.0848); M = 256 0.1501 /
#     0.0287 S 8 (0.0445); M = 96 0.1475 / 0.0274 S 8 (0.0299); at
#     127 x 8192 x 8192 (GEMM + ReLU) 0.3824 / 0.2031 S 2 (0.3450). The
#     128 x 64 tiling lost to a split wherever one was admitted there.
# With GROUP_M fixed for the alternatives and the default's GROUP_M values
# other than the configured one kept only below its row-tile count, at most
# 4 variants survive at any size (the default's GROUP_M values: at most
# three up to M = 2048, where the TMA kinds' one alternative stops). The
# tune knob holds at most 8 values: where a TMA entry has five
# alternatives (the GEMM + ReLU and down-projection entries, with TAIL_M),
# the default's GROUP_M values are the configured one, half and 1
# (_group_m; session 26 kept double instead of 1: on the GEMM + ReLU
# entries at 142 and 256 rows 1 timed within 1% of GROUP_M 16, and at
# 1024 x 8192 -> 2048 / 1024 x 2048 -> 8192 within 0.5% of GROUP_M 4 / 16;
# session 27: 1 the fastest at 9531 x 3072 -> 768).
SMALL_M = {
    "f32_simt": [(dict(BM=16, BN=32, BK=8, KS=16, group_m=8), ("WX", "minctasm"), 128),
                 (dict(BM=32, BN=64, BK=8, KS=4, group_m=8), ("WX", "minctasm"), 1024)],
    "bf16_mma": [(dict(BM=32, BN=64, BK=64, WM=16, WN=16, stages=4, group_m=8), ("minctasm",), 256)],
    "bf16_wgmma": [(dict(WGS=1, BN=64, stages=4, group_m=8), (), 256)],
    "bf16_wgmma_tma": [(dict(BN=64, stages=8, pingpong=0, persistent=1, group_m=8), ("BM",), 1024),
                       (dict(BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), ("BM",),
                        lambda s: splitk_admit(s, 128, 2)),
                       (dict(BN=64, stages=8, pingpong=0, persistent=0, splitk=2, group_m=8), ("BM",),
                        lambda s: splitk_admit(s, 64, 2)),
                       (dict(BN=64, stages=8, pingpong=0, persistent=0, splitk=4, group_m=8), ("BM",),
                        lambda s: splitk_admit(s, 64, 4)),
                       (dict(BN=256, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), ("BM",),
                        lambda s: splitk_admit(s, 256, 2))],
    "f32x3_wgmma_tma": [(dict(BN=64, stages=4, pingpong=0, persistent=1, group_m=8), ("BM",), 1024),
                        (dict(BN=128, stages=3, pingpong=0, persistent=0, splitk=2, group_m=8), ("BM",),
                         lambda s: splitk_admit(s, 128, 2)),
                        (dict(BN=128, stages=3, pingpong=0, persistent=0, splitk=4, group_m=8), ("BM",),
                         lambda s: splitk_admit(s, 128, 4)),
                        (dict(BN=128, stages=3, pingpong=0, persistent=0, splitk=8, group_m=8), ("BM",),
                         lambda s: splitk_admit(s, 128, 8))],
}
TMA_KINDS = ("bf16_wgmma_tma", "f32x3_wgmma_tma")
# the families whose *_0tma entries offer the 128 x 256 2-way split (SMALL_M
# TILE 5xx): where it was measured to pay (its text adds ~0.24 MB an entry)
SPLIT256 = ("gemm_relu",)
# Tilings for the M tail and wave quantization (session 27, issue 15 point
# 7), by family: [(tiling, i[, element types])] for the *_0tma entries: i None, after
# SMALL_M's TMA tilings; else in place of SMALL_M's i-th (same TILE number); only in
# the element types named, where named.
# See SMALL_M's comment.


def _t(s, bm, bn):
    """tiles of a bm x bn tiling (syms: role -> size symbol)"""
    return "(%s + %d) / %d * ((%s + %d) / %d)" % (s["M"], bm - 1, bm, s["N"], bn - 1, bn)


def _waves(s, bm, bn):
    return "(%s + %d) / %d" % (_t(s, bm, bn), SPLITK_WAVE - 1, SPLITK_WAVE)


TAIL_M = {
    "gemm_relu": [
        # cooperative 128 x 192, G = 132 persistent CTAs, over one wave of the default's tiles where its
        # waves of 0.75 tiles beat the default's: in place of SMALL_M's persistent 128 x 64 (TILE 1xx)
        ((dict(BN=192, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=8), (),
          lambda s: "%s > %d && %s * 4 > %s * 3" % (_t(s, 128, 256), SPLITK_WAVE, _waves(s, 128, 256),
                                                     _waves(s, 128, 192))), 0),
        # cooperative 256 x 128 split 2 ways (one row tile up to 256 rows: each W tile crosses L2 once), in place
        # of SMALL_M's 128 x 256 split (TILE 5xx), where tiles x 2 fit one wave. H200 (session 28 run 2, with
        # a_shift, ms, torch_time.py's method / without its GPU sleep): 142 x 8192 x 8192 f16 0.0622 / 0.0588
        # against 0.0662 / 0.0605 for the 128 x 256 split; 256 rows 0.0607 / 0.0587 against 0.0675 / 0.0626;
        # 512 x 2048 x 2048 bf16 0.0219 / 0.0216 against 0.0219 / 0.0215 (the 128 x 128 split: 0.0160 / 0.0158)
        ((dict(BM=256, BN=128, stages=4, pingpong=0, persistent=0, splitk=2, group_m=8), (),
          lambda s: "%s * 2 <= %d" % (_t(s, 256, 128), SPLITK_WAVE)), 4)],
    # qkv (session 29): the GEMM + ReLU entries' cooperative 128 x 192 on 132 persistent CTAs, after SMALL_M's
    # tilings (TILE 5xx), admitted as there (over one wave of the 128 x 256 default's tiles where its waves of 0.75
    # tiles beat the default's): held-out 029 of seed 23, 1024 x 1600 -> 4800 bf16, makes 152 tiles of 128 x 256
    # (2 waves) and 200 of 128 x 192 (2 waves of 0.75 tiles). On the H200 (bench/table/gemm16-device.sh,
    # 2026-11-25, session 29 runs 1 and 2, ms, without / with torch_time.py's 200 us GPU sleep): 0.0388-0.0390 /
    # 0.0387-0.0388 against 0.0488 / 0.0488 (default, GROUP_M 1); torch.compile 0.0360-0.0366 / 0.0334-0.0364.
    # bf16 only: the f16 entry's form of it was not run on the H200 in session 29.
    "qkv": [
        ((dict(BN=192, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=8), (),
          lambda s: "%s > %d && %s * 4 > %s * 3" % (_t(s, 128, 256), SPLITK_WAVE, _waves(s, 128, 256),
                                                     _waves(s, 128, 192))), None, ("bf16",))],
    # SwiGLU (session 29): cooperative 128 x (2 x 128) on 132 persistent CTAs (grid_full: the grid placeholder of
    # six tilings under 512 bytes), after SMALL_M's tilings (TILE 5xx), where
    # K is not a multiple of 64 (a last k-tile of TMA's zero fill). On the H200 (bench/table/gemm16-device.sh,
    # 2026-11-25, session 29 run 1, bf16, ms): 2560 x 1000 -> 2048 0.0453 against 0.0513 for the ping-pong
    # 128 x (2 x 64) default; held-out seed 23 045 (2560 x 1000 -> 2008) 0.0610 against 0.0678 (torch.compile
    # 0.0470); at K = 1024 it lost (0.0450 against 0.0413 at N = 2048) and tied at N = 2008 (0.0517 / 0.0520)
    # bf16 only: the f16 entry's form of it was not run on the H200 in session 29 (a draft with n_shift was)
    "swiglu": [
        ((dict(BN=128, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=8), (),
          lambda s: "%s %% 64 != 0" % s["K"]), None, ("bf16",))],
    "mlp_down": [
        # cooperative 256 x 128, persistent: over one wave of the default's tiles, in no more waves of tile pairs
        # (TILE 5xx, after SMALL_M's)
        ((dict(BM=256, BN=128, stages=4, pingpong=0, persistent=1, grid_full=1, group_m=8), (),
          lambda s: "%s > %d && %s * 2 <= %s" % (_t(s, 128, 128), SPLITK_WAVE, _waves(s, 256, 128),
                                                  _waves(s, 128, 128))), None)],
}
# A boxes inside M (session 28, issue 15 point 7; gemm_wgmma_tma.py a_shift, every tiling of the entry): the
# families whose *_0tma entries load the A box of a row tile that crosses M from row M - 128 instead of letting
# TMA zero-fill the rows past M, which was measured slow. On the H200 (bench/table/gemm16-device.sh,
# 2026-11-25, session 28 run 2, ms, torch_time.py's method / without its GPU sleep): held-out 017 (142 x 8192 x
# 8192 f16) 0.0662 / 0.0605 (TILE 516) against 0.0826 / 0.0818 before (torch.compile 0.0488 / 0.0486); 023 (533
# x 8192 x 8192 bf16) 0.1396 / 0.1385 (TILE 116) against 0.1407 / 0.1402 (0.1046 / 0.1032); 041 (9531 x 3072
# -> 768 f16) 0.0892 / 0.0883 against 0.0899 / 0.0886; no change where no tile crosses M (256 and 512 rows, the
# down-projections at 256, 1024 and 4096 rows). The other families' entries are unchanged (not measured).
A_SHIFT = ("gemm_relu", "mlp_down")
TMA_MAX_ACC_N = 256  # gemm_wgmma_tma.py: B operands x BN <= 256 (at most 128 f32 accumulators per thread)
SPLITK_WAVE = 132   # the SMs of an H100 / H200: a split-K grid is admitted up to one wave


def splitk_admit(syms, bn, split):
    """where a split-K tiling's grid, ceil(M / 128) x ceil(N / bn) tiles of
    `split` CTAs, is at most one wave (syms: role -> size symbol)"""
    return "(%s + 127) / 128 * ((%s + %d) / %d) * %d <= %d" % (syms["M"], syms["N"], bn - 1, bn, split,
                                                              SPLITK_WAVE)


def tma_max_stages(cfg):
    """The most stages of a TMA kind's tiling that fit gemm_wgmma_tma.py's
    shared-memory budget (its assert: S * stage + 1 KiB <= 227 KiB - 16 S)."""
    x3 = cfg["kind"] == "f32x3_wgmma_tma"
    esz = 4 if x3 else 2
    bk = 128 // esz
    bm = cfg.get("BM", 128) if cfg.get("pingpong", 0) or cfg.get("BM") == 256 else 128
    stage = (bm * bk + len(cfg["b"]) * bk * cfg["BN"]) * esz * (2 if x3 else 1)
    return (227 * 1024 - 1024) // (stage + 16)


def tma_a_box_rows(cfg):
    """The rows of a TMA kind's A box (its tile's rows: BM under ping-pong,
    128 cooperative; `a_rows` where set), part of the kernel's tensor-map
    argument type."""
    return cfg.get("a_rows", cfg.get("BM", 128) if cfg.get("pingpong", 0) else 128)


# M = 1 (a unit dimension: its own pattern key, the entries *_row): the
# small tilings alone, M the literal 1 (masked: rows 1.. of the tile are
# row 0 again, never stored). f32: 16 x 32 x 16 slices, and 8 x 64 x 16
# slices (one row of 8 threads per slice); 16-bit: mma.sync, one m16 block
# of 4 warps x 16 columns (the wgmma's 64-row minimum would waste 63 rows,
# the mma.sync entry lists sm_90a too).
SINGLE_ROW = {
    "f32_simt": [dict(BM=16, BN=32, BK=8, KS=16, group_m=8), dict(BM=8, BN=64, BK=8, KS=16, group_m=8)],
    "bf16_mma": [dict(BM=16, BN=64, BK=64, WM=16, WN=16, stages=4, group_m=8)],
}
# Deeper pipelines for the single row (session 28, issue 15 point 7): a GEMV streams W through N / 64 CTAs, each
# with stages - 1 k-tiles of 8 KiB in flight, so at N = 640 (10 CTAs) the time is the k-tiles' round trips
# (held-out 050's 1 x 2560 -> 640 projection: 40 k-tiles, 3 in flight). 8 and 12 stages (TILE 1xx, 2xx; 80 and
# 120 KiB of shared memory; admitted where K >= 64 (stages - 1)). On the H200 (bench/table/gemm16-device.sh,
# 2026-11-25, session 28 runs 1 and 2, f16, ms, GPU sleep before each sample as torch_time.py does): 1 x 2560 ->
# 640 proj 0.0102-0.0103 (12 stages) against 0.0138-0.0140 (4 stages; torch.compile 0.0112); 1 x 640 -> 1920
# qkv 0.0072-0.0073 (8 stages) against 0.0078, -> 2560 fc 0.0074 against 0.0080, -> 640 attn_proj 0.0068
# against 0.0070-0.0072. Offered by the (family, element type) pairs measured and verified there; the other
# *_mma_row entries keep the one tiling.
SINGLE_ROW_DEEP = [dict(BM=16, BN=64, BK=64, WM=16, WN=16, stages=8, group_m=8),
                   dict(BM=16, BN=64, BK=64, WM=16, WN=16, stages=12, group_m=8)]
DEEP_ROW = (("qkv", "f16"), ("attn_proj", "f16"), ("fc", "f16"), ("proj", "f16"))


def tma_cfg(sg, dtype="bf16"):
    """The bf16_wgmma_tma form of a family's base subgraph (TMA above)."""
    cfg = base_cfg(sg, False, dtype)
    tiling = TC_TILING.get(sg, sg)
    for k in TILE_KEYS + ("KS", "WX", "WGS"):
        cfg.pop(k, None)
    cfg.update(kind="bf16_wgmma_tma", chips=["sm_90a"])
    cfg.update(TMA[tiling])
    cfg["stage_carry"] = 1   # the k loop carries its stage and lap (gemm_wgmma_tma.py stage_carry: build time)
    assert cfg.get("BM", TMA_BM) == TMA_BM
    return cfg


def f32x3_cfg(sg):
    """The f32x3_wgmma_tma form of an f32 family's base subgraph (F32X3)."""
    cfg = base_cfg(sg, False, "f32")
    for k in TILE_KEYS + ("KS", "WX", "WGS"):
        cfg.pop(k, None)
    cfg.update(kind="f32x3_wgmma_tma", chips=["sm_90a"])
    cfg.update(F32X3)
    cfg["a_rows"] = F32X3_A_ROWS
    cfg["vacc"] = 1   # the promoted accumulator as a vector: ~45% less text per tiling (gemm_wgmma_tma.py vacc)
    cfg["grid_compact"] = 1   # the grid placeholder of five tilings under the 512 bytes of an expression
    if sg not in F32X3_NO_CARRY:
        cfg["stage_carry"] = 1   # the k loop carries its stage and lap (gemm_wgmma_tma.py stage_carry: build time)
    if sg == "sg_208fdd59011a4518":
        # fc (bias + tanh GELU, 64 values per thread): the masked epilogue only, no unmasked copy
        # (gemm_wgmma_tma.py one_epilogue): held-out 024 fc builds in ~35% less cpu (ptxas and LLVM
        # on 5224 -> 3624 SASS instructions, 168 registers, no spills; BUILDT, session 28). Not
        # for proj / attn_proj: their masked-only epilogue spills (72 B at 168 registers)
        cfg["one_epilogue"] = 1
    cfg["product"] = cfg["product"].replace("(f32 FMA)", "(exact f32: 3xTF32 wgmma)")
    return cfg


def tma_symbolic():
    """Whether gemm_wgmma_tma.py generates bf16 kernels at symbolic sizes
    (None) or the reason it refuses (the entries are then left out, with a
    warning: build.py must run whatever the generator's state)."""
    c = tma_cfg("sg_74ede17e00bf0352")
    c.update(M="S0", N="S2", K="S1", signature="(tensor<{{S0}}x{{S1}}xbf16>, tensor<{{S1}}x{{S2}}xbf16>, "
             "tensor<{{S1}}x{{S2}}xbf16>) -> tensor<{{S0}}x{{S2}}xbf16>")
    try:
        gen_gemm.generate(c)
    except (AssertionError, TypeError, ValueError) as e:
        return "%s: %s" % (type(e).__name__, e)
    return None


def base_cfg(sg, wgmma, dtype="bf16"):
    cfg = dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == sg))
    if cfg["kind"] == "f32_simt" and dtype != "f32":
        tiling = next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == TC_TILING[sg])
        for k in TILE_KEYS + ("KS", "WX"):
            cfg.pop(k, None)
        cfg.update({k: tiling[k] for k in TILE_KEYS if k in tiling})
        cfg["kind"] = "bf16_mma"
        if wgmma:
            for k in ("BM", "BK", "WM", "WN", "minctasm"):
                cfg.pop(k, None)
            cfg.update(kind="bf16_wgmma", chips=["sm_90a"])
            cfg.update(WGMMA[TC_TILING[sg]])
        return cfg
    if wgmma:
        for k in ("BM", "BK", "WM", "WN", "minctasm"):
            cfg.pop(k, None)
        cfg.update(kind="bf16_wgmma", chips=["sm_90a"])
        cfg.update(WGMMA[sg])
    return cfg


def example_text(name, dtype, m=EX_M):
    src, sdt, rows = FAMILIES[name][:3]
    text = open(os.path.join(ROOT, src)).read()
    text = size_rewrite(text, {rows: m}, {})
    if dtype != sdt:
        text = dtype_rewrite(text, sdt, dtype)
    return text


def signature_sizes(sig, mapping):
    """The distinct dimensions above 1 of a gen_gemm signature in order of
    first appearance (docs/pattern-key.md), after mapping base -> example."""
    out = []
    for d in re.findall(r"(?<=[<x])(\d+)(?=x)", sig):
        v = mapping.get(int(d), int(d))
        if v > 1 and v not in out:
            out.append(v)
    return out


def _pick(cfg, m=EX_M):
    want = signature_sizes(cfg["signature"], {cfg["M"]: m})

    def pick(groups):
        hit = [g for g in groups if g.get("class") == "contraction" and
               [g["pattern_sizes"]["S%d" % i] for i in range(len(g["pattern_sizes"]))] == want]
        return hit[0] if len(hit) == 1 else None
    return pick


def _alternatives(c, small, m_sym, extra=None, syms=None):
    """[(cfg, admit)] for gen_gemm.generate_alternatives: c first (the
    default), then each small-M tiling of `small` [(overrides, dropped keys,
    M bound)]; extra: a condition every alternative is admitted under too.
    A bound is an int (admitted where M <= it) or a function of syms (role
    -> size symbol) giving the admission expression. A TMA tiling's stages
    are capped at what fits (tma_max_stages)."""
    alts = [(c, extra)]
    for ov, drop, bound in small:
        a = {k: v for k, v in c.items() if k not in drop}
        a.update(ov)
        if a["kind"] in TMA_KINDS and len(a["b"]) * a["BN"] > TMA_MAX_ACC_N:
            continue   # SwiGLU's two B tiles: 128 x 256 would need 256 accumulators per thread
        if a["kind"] in TMA_KINDS:
            a["stages"] = min(a["stages"], tma_max_stages(a))
            assert tma_a_box_rows(a) == tma_a_box_rows(c), \
                "TMA alternatives share the kernel's tensor-map arguments: A box rows %d, the default's %d" % (
                    tma_a_box_rows(a), tma_a_box_rows(c))
        admit = bound(syms) if callable(bound) else "%s <= %d" % (m_sym, bound)
        alts.append((a, admit + (" && (%s)" % extra if extra else "")))
    return alts


def _group_m(alts):
    """the default tiling's GROUP_M values to time (generate_alternatives
    group_m): all four (configured, half, double, 1) where they and the
    alternatives fit the tune knob's 8 values (llm_client/tune.h
    LF_TUNE_MAX_VALUES); with more alternatives the first of the
    configured one, half, 1 (the row-major raster) and double that fit:
    with six tilings (the default and five) three, with seven two. (On
    the H200, session 27: on the 9531-row down-projection GROUP_M 1 was
    the fastest of the four, 0.0946-0.0951 ms against 0.0974-0.0980 for
    4, 0.0988-0.0996 for 8, 0.1017-0.1025 for 16; on the GEMM + ReLU
    entries 1 was within 1% of 16 at 142, 256 and 512 rows, 6% slower at
    533.)"""
    c = alts[0][0]
    if c["kind"] not in TMA_KINDS or len(alts) <= 5:
        return None
    g = c["group_m"]
    return [g, g // 2, 1, 2 * g][:9 - len(alts)]


MAX_EXPR = 512   # bytes in one placeholder expression (llm_client/tune.h LF_TUNE_MAX_EXPR)


def _shorten(text):
    """Each placeholder {{e}} longer than MAX_EXPR rewritten with the fewest
    parentheses (the *_0tma entries' six tilings: the grid's sum of six
    products passes 512 bytes as gen_gemm.py writes it). The same
    expression: Python's grammar orders + - * / % and the comparisons as
    llm_client/tune.c does (left-associative, comparisons below
    arithmetic), and the rewrite is checked to parse back to the same tree.
    Placeholders within the limit are left as they are."""
    import ast

    def one(m):
        e = m.group(1)
        if len(e) <= MAX_EXPR or "&&" in e or "||" in e:
            return m.group(0)
        tree = ast.parse(e, mode="eval")
        short = ast.unparse(tree)
        assert ast.dump(ast.parse(short, mode="eval")) == ast.dump(tree), e
        assert len(short) <= MAX_EXPR, "placeholder of %d bytes: %s" % (len(short), short)
        return "{{%s}}" % short
    return re.sub(r"\{\{(.*?)\}\}", one, text)


# Masked N and K (the entries *_nk): the same kernels with N and K masked too
# (gen_gemm.py mask_nk: B columns and the last k-tile read at clamped
# addresses, the k part past K zero-filled, columns past N not stored), so
# that N and K need only be multiples of the 16-byte load (8 16-bit or 4 f32
# elements). Each is admitted only where the unmasked entry's default tiling
# refuses N or K (where it admits them, its kernels are the ones used, as
# before); its name sorts after the unmasked entry's.
NK_ALIGN = {"f32_simt": 4, "bf16_mma": 8}


def _old_refuses(cfg, n_sym, k_sym):
    """where the unmasked default tiling's N / K requirements fail"""
    if cfg["kind"] == "f32_simt":
        bn, kdiv, kmin = cfg["BN"], cfg["BK"] * cfg.get("KS", 1), 1
    else:
        bn, kdiv, kmin = cfg["BN"], cfg["BK"], cfg["stages"] - 1
    return "%s %% %d != 0 || %s %% %d != 0 || %s < %d" % (n_sym, bn, k_sym, kdiv, k_sym, kdiv * kmin)


def _render(name, dtype, cfg, small=(), single=None, nk=False):
    """single: the M = 1 form, a list of tilings (the first the default);
    nk: the masked N and K form. A bf16_wgmma_tma cfg: the TMA form (M, N
    and K masked by the kernel itself, its requirements stated by it)."""
    m_ex = 1 if single else EX_M

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        ex = {"N": cfg["N"], "K": cfg["K"]} if single else {"M": EX_M, "N": cfg["N"], "K": cfg["K"]}
        sym = {r: by_value[v] for r, v in ex.items()}       # role -> SK, by value
        c = dict(cfg)
        base = {cfg["N"]: sym["N"], cfg["K"]: sym["K"]}
        if not single:
            base[cfg["M"]] = sym["M"]
        sig = re.sub(r"(?<=[<x])(\d+)(?=x)",
                     lambda m: ("{{%s}}" % base[int(m.group(1))] if int(m.group(1)) in base else
                                "1" if single and int(m.group(1)) == cfg["M"] else m.group(1)),
                     cfg["signature"])
        sdt = FAMILIES[name][1]
        if dtype != sdt:
            sig = sig.replace(sdt, dtype)
        c.update(M=1 if single else sym["M"], N=sym["N"], K=sym["K"], signature=sig,
                 sg="ga_%s_%s%s" % (name, dtype, "_row" if single else ""))
        if single:
            c["mask_m"] = True
        if nk:
            c["mask_nk"] = NK_ALIGN[c["kind"]]
        c["product"] = re.sub(r"\d+", lambda m: ("1" if single and int(m.group(0)) == cfg["M"] else
                                                 base.get(int(m.group(0)), m.group(0))), cfg["product"])
        if dtype != sdt:
            c["product"] = c["product"].replace(sdt, dtype)
        if single:
            alts = []
            for i, ov in enumerate(single):
                a = {k: v for k, v in c.items() if k not in ("WX", "minctasm")}
                a.update(ov)
                alts.append((a, None))
        else:
            alts = _alternatives(c, small, sym["M"], _old_refuses(c, sym["N"], sym["K"]) if nk else None, syms=sym)
        if len(alts) > 1:
            _, text, _ = gen_gemm.generate_alternatives(alts, group_m=_group_m(alts))
        else:
            _, text, _ = gen_gemm.generate(dict(alts[0][0]))
        body = _shorten(text[text.index("gpu.module"):])
        lines = body.split("\n")
        free = sorted(set(sym.values()), key=lambda k: int(k[1:]))
        roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K") if r in sym)
        tma = c["kind"] == "bf16_wgmma_tma"
        what = ("M = 1 (a single row: the tile's other rows read row 0 and are never stored)" if single else
                "M, N and K are masked by TMA's zero fill and the partial tiles' epilogue (M >= %d; N and K "
                "multiples of 4, N >= 64, K >= 32); exact f32 by the 3xTF32 split" % c.get("a_rows", TMA_BM)
                if c["kind"] == "f32x3_wgmma_tma" else
                "M, N and K are masked by TMA's zero fill and the partial tiles' epilogue (M >= %d; N and K "
                "multiples of 8, at least 64)" % TMA_BM if tma else
                "M, N and K are masked (N and K multiples of %d, used where the unmasked entry refuses them)" % (
                    NK_ALIGN[c["kind"]]) if nk else
                "M is masked (any M)")
        head = [lines[0],
                "  // Pattern-table template: kernels/table/gemm_any.py %s %s (gen_gemm.py %s, %s)." % (
                    name, dtype, cfg["sg"], alts[0][0]["kind"]),
                "  // %s; %s, N and K as the requirements say." % (roles, what)] + \
               ["  // llm-fuse.template-size %s" % k for k in free]
        tmpl = "\n".join(head + lines[1:])
        sizes = [None if "S%d" % i in free else ps["S%d" % i] for i in range(len(ps))]
        return tmpl, sizes
    return render


def templates():
    out = []

    def entry(name, dtype, tag, cfg, archs, what, m=None, **render_kw):
        src, sg = FAMILIES[name][0], FAMILIES[name][3]
        out.append(dict(
            name="gemm_any_%s_%s_%s" % (name, dtype, tag),
            example=example_text(name, dtype, *([m] if m else [])),
            pick=_pick(cfg, *([m] if m else [])),
            render=_render(name, dtype, cfg, **render_kw),
            archs=archs,
            source="kernels/table/gemm_any.py %s %s %s (gen_gemm.py %s %s, %s; from %s at M = %d)"
                   % (name, dtype, tag, sg, cfg["kind"], what, src, m or EX_M)))

    def small_note(small):
        return ", with %d small-M tiling(s)" % len(small) if small else ""

    tma_refused = tma_symbolic()
    if tma_refused:
        print("gemm_any.py: no TMA entries: kernels/handwritten/gemm_wgmma_tma.py refuses symbolic sizes "
              "(%s)" % tma_refused, file=sys.stderr)
    for name in sorted(FAMILIES):
        src, sdt, rows, sg, dtypes, has_wgmma = FAMILIES[name]
        for dtype in dtypes:
            tc = dtype != "f32"
            if dtype in ("bf16", "f16") and has_wgmma and not tma_refused:
                # the TMA form: tried first on sm_90a (0tma sorts before 1wgmma)
                tc_cfg = tma_cfg(sg, dtype)
                if name in A_SHIFT:
                    tc_cfg["a_shift"] = 1
                base, tail = list(SMALL_M["bf16_wgmma_tma"]), []
                for t, at, *dts in TAIL_M.get(name, []):
                    if dts and dtype not in dts[0]:
                        continue
                    if at is None:
                        tail.append(t)
                    else:
                        base[at] = t
                small = [t for t in base if len(tc_cfg["b"]) * t[0]["BN"] <= TMA_MAX_ACC_N and
                         (t[0]["BN"] < 256 or name in SPLIT256)] + tail
                entry(name, dtype, "0tma", tc_cfg, ["sm_90a"],
                      "masked M, N and K by TMA, M >= %d" % TMA_BM + small_note(small), small=small)
            if dtype == "f32" and not tma_refused:
                # exact f32 on sm_90a: the 3xTF32 TMA form, tried before the SIMT entries (0x3tma sorts first)
                small = SMALL_M["f32x3_wgmma_tma"]
                entry(name, dtype, "0x3tma", f32x3_cfg(sg), ["sm_90a"],
                      "exact f32 by 3xTF32, masked M, N and K by TMA, M >= %d" % F32X3_A_ROWS + small_note(small),
                      small=small)
            forms = [("1wgmma", True), ("2mma", False)] if tc and has_wgmma else [("simt", False)]
            for tag, wg in forms:
                cfg = base_cfg(sg, wg, dtype)
                archs = ["sm_90a"] if wg else sorted(cfg["chips"]) + ["sm_90a"]
                small = SMALL_M.get(cfg["kind"], [])
                entry(name, dtype, tag, cfg, archs, "masked M" + small_note(small), small=small)
            # the masked N and K form (f32 SIMT, mma.sync)
            cfg = base_cfg(sg, False, dtype)
            archs = sorted(cfg["chips"]) + ["sm_90a"]
            small = SMALL_M.get(cfg["kind"], [])
            entry(name, dtype, "simt_nk" if cfg["kind"] == "f32_simt" else "3mma_nk", cfg, archs,
                  "masked M, N and K" + small_note(small), small=small, nk=True)
            # the single-row form (M = 1: another pattern key)
            tag = "simt" if cfg["kind"] == "f32_simt" else "mma"
            deep = SINGLE_ROW_DEEP if cfg["kind"] == "bf16_mma" and (name, dtype) in DEEP_ROW else []
            entry(name, dtype, tag + "_row", cfg, archs, "M = 1", m=1,
                  single=SINGLE_ROW[cfg["kind"]] + deep)
    return out
