#!/usr/bin/env python3
"""gen_corpus.py - writes the bad-kernel corpus of the GPU verifier.

Every kernel is written to the kernel contract (docs/kernel-contract.md) for
one of the three subgraphs of Inputs/corpus-model.mlir or the f16 one of
Inputs/corpus-model-f16.mlir, and builds; all but
the good ones are wrong in one deliberate way that only the GPU can see.
Each file starts with a header the corpus scripts read:

  // SUBGRAPH: ew | rowsum | mm | mm16 | sw16 (mm16, sw16:
  //           Inputs/corpus-model-f16.mlir)
  // EXPECT: accept, or the acceptable rejection reasons joined by '|'
  // ARGS: extra llm-fuse-verify arguments (optional)
  // CATEGORY: the issue's category
  // WHY: what is wrong

Run it after editing; it rewrites Inputs/corpus/*.mlir (checked in):
  python3 lit_tests/verify/gen_corpus.py [--out DIR]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs", "corpus")

SIGS = {
    "ew": "(tensor<1000x257xf32>, tensor<1000x257xf32>) -> tensor<1000x257xf32>",
    "rowsum": "(tensor<512x1000xf32>) -> tensor<512xf32>",
    "mm": "(tensor<128x256xf32>, tensor<256x96xf32>) -> tensor<128x96xf32>",
    "mm16": "(tensor<64x256xf16>, tensor<256x80xf16>) -> tensor<64x80xf16>",
    "sw16": "(tensor<1x2048xf16>, tensor<2048x256xf16>, tensor<2048x256xf16>) -> tensor<1x256xf16>",
}

ATTR = ("attributes {{known_block_size = array<i32: {block}, 1, 1>,\n"
        "                  known_grid_size = array<i32: {grid}, 1, 1>}}")


# ---- ew: y = a * b + a over 1000x257 f32 (257000 elements, an odd tail) ---

def ew(grid=1004, n="257000", cols="257", guard="ult", value="%s", pre="",
       post="", helpers="", extra_store="", oob_n=None):
    """One thread per element, flat index i -> (i / cols, i % cols)."""
    bound = oob_n or n
    return f"""gpu.module @kernels {{
{helpers}  gpu.func @ew(%a: memref<1000x257xf32>, %b: memref<1000x257xf32>,
                %y: memref<1000x257xf32>) kernel
      {ATTR.format(block=256, grid=grid)} {{
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c256 = arith.constant 256 : index
    %n = arith.constant {bound} : index
    %cols = arith.constant {cols} : index
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
{pre}    %in = arith.cmpi {guard}, %i, %n : index
    scf.if %in {{
      %r = arith.divui %i, %cols : index
      %c = arith.remui %i, %cols : index
      %x = memref.load %a[%r, %c] : memref<1000x257xf32>
      %z = memref.load %b[%r, %c] : memref<1000x257xf32>
      %m = arith.mulf %x, %z : f32
      %s = arith.addf %m, %x : f32
{extra_store}      memref.store {value}, %y[%r, %c] : memref<1000x257xf32>
    }}
{post}    gpu.return
  }}
}}
"""


SPIN = """    scf.while : () -> () {
      %t = arith.constant true
      scf.condition(%t)
    } do {
      gpu.barrier
      scf.yield
    }
"""


# ---- rowsum: y[r] = sum_j a[r, j] over 512x1000 f32 ------------------------

def rowsum(grid=512, bound="1000", acc_t="f32", start="%tid", skip="",
           barrier1="    gpu.barrier\n", barrier2="      gpu.barrier\n",
           init_store="    memref.store %part, %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>\n",
           result="%total", extra_tid0=""):
    """One 256-thread block per row: strided partial sums, then a tree in
    shared memory; thread 0 writes."""
    to_acc = "" if acc_t == "f32" else f"""        %xa = arith.truncf %x : f32 to {acc_t}
"""
    xv = "%x" if acc_t == "f32" else "%xa"
    from_acc = ("    %part = arith.addf %acc, %zero_f : f32\n" if acc_t == "f32"
                else f"    %part = arith.extf %acc : {acc_t} to f32\n")
    return f"""gpu.module @kernels {{
  gpu.func @rowsum(%a: memref<512x1000xf32>, %y: memref<512xf32>)
      workgroup(%sh : memref<256xf32, #gpu.address_space<workgroup>>) kernel
      {ATTR.format(block=256, grid=grid)} {{
    %row = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %nb = arith.constant {bound} : index
    %zero_f = arith.constant 0.0 : f32
    %zero = arith.constant 0.0 : {acc_t}
    %acc = scf.for %j = {start} to %nb step %c256 iter_args(%s = %zero) -> ({acc_t}) {{
      %x = memref.load %a[%row, %j] : memref<512x1000xf32>
{to_acc}{skip}      %s2 = arith.addf %s, {xv} : {acc_t}
      scf.yield %s2 : {acc_t}
    }}
{from_acc}{init_store}{barrier1}    %c128 = arith.constant 128 : index
    %c2 = arith.constant 2 : index
    %fin = scf.while (%st = %c128) : (index) -> index {{
      %more = arith.cmpi ugt, %st, %c0 : index
      scf.condition(%more) %st : index
    }} do {{
    ^bb0(%st2: index):
      %lo = arith.cmpi ult, %tid, %st2 : index
      scf.if %lo {{
        %k = arith.addi %tid, %st2 : index
        %u = memref.load %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
        %v = memref.load %sh[%k] : memref<256xf32, #gpu.address_space<workgroup>>
        %w = arith.addf %u, %v : f32
        memref.store %w, %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      }}
{barrier2}      %nx = arith.divui %st2, %c2 : index
      scf.yield %nx : index
    }}
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {{
      %total = memref.load %sh[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
{extra_tid0}      memref.store {result}, %y[%row] : memref<512xf32>
    }}
    gpu.return
  }}
}}
"""


def rowsum_serial(acc_t):
    """One thread per row, serial accumulation in `acc_t`."""
    return f"""gpu.module @kernels {{
  gpu.func @rowsum(%a: memref<512x1000xf32>, %y: memref<512xf32>) kernel
      {ATTR.format(block=128, grid=4)} {{
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c1000 = arith.constant 1000 : index
    %b0 = arith.muli %bid, %c128 : index
    %row = arith.addi %b0, %tid : index
    %zero = arith.constant 0.0 : {acc_t}
    %acc = scf.for %j = %c0 to %c1000 step %c1 iter_args(%s = %zero) -> ({acc_t}) {{
      %x = memref.load %a[%row, %j] : memref<512x1000xf32>
      %xa = arith.truncf %x : f32 to {acc_t}
      %s2 = arith.addf %s, %xa : {acc_t}
      scf.yield %s2 : {acc_t}
    }}
    %r = arith.extf %acc : {acc_t} to f32
    memref.store %r, %y[%row] : memref<512xf32>
    gpu.return
  }}
}}
"""


def rowsum_atomic():
    """Thread 0 zeroes the row's sum, then every thread adds its partial
    with an atomic: the order of the additions varies from run to run."""
    return f"""gpu.module @kernels {{
  gpu.func @rowsum(%a: memref<512x1000xf32>, %y: memref<512xf32>) kernel
      {ATTR.format(block=256, grid=512)} {{
    %row = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %c1000 = arith.constant 1000 : index
    %zero = arith.constant 0.0 : f32
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {{
      memref.store %zero, %y[%row] : memref<512xf32>
    }}
    gpu.barrier
    %acc = scf.for %j = %tid to %c1000 step %c256 iter_args(%s = %zero) -> (f32) {{
      %x = memref.load %a[%row, %j] : memref<512x1000xf32>
      %s2 = arith.addf %s, %x : f32
      scf.yield %s2 : f32
    }}
    %old = memref.atomic_rmw addf %acc, %y[%row] : (f32, memref<512xf32>) -> f32
    gpu.return
  }}
}}
"""


# ---- mm: y = a(128x256) x b(256x96) in f32 ---------------------------------

def mm(grid=48, kbound="256", acc_t="f32", bcol="%col", body_pre="",
       store=True, helpers="", extra="", value="%res", post=""):
    """One thread per output element (12288 = 48 blocks of 256)."""
    to_acc = "" if acc_t == "f32" else f"""        %pa = arith.truncf %p : f32 to {acc_t}
"""
    pv = "%p" if acc_t == "f32" else "%pa"
    res = ("      %res = arith.addf %acc, %zf : f32\n" if acc_t == "f32"
           else f"      %res = arith.extf %acc : {acc_t} to f32\n")
    st = f"      memref.store {value}, %y[%row, %col] : memref<128x96xf32>\n" if store else \
        "      %dead = memref.load %y[%row, %col] : memref<128x96xf32>\n"
    return f"""gpu.module @kernels {{
{helpers}  gpu.func @mm(%a: memref<128x256xf32>, %b: memref<256x96xf32>,
                %y: memref<128x96xf32>) kernel
      {ATTR.format(block=256, grid=grid)} {{
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c96 = arith.constant 96 : index
    %c256 = arith.constant 256 : index
    %n = arith.constant 12288 : index
    %kn = arith.constant {kbound} : index
    %zf = arith.constant 0.0 : f32
    %zero = arith.constant 0.0 : {acc_t}
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
{body_pre}    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {{
      %row = arith.divui %i, %c96 : index
      %col = arith.remui %i, %c96 : index
      %acc = scf.for %k = %c0 to %kn step %c1 iter_args(%s = %zero) -> ({acc_t}) {{
        %x = memref.load %a[%row, %k] : memref<128x256xf32>
        %w = memref.load %b[%k, {bcol}] : memref<256x96xf32>
        %p = arith.mulf %x, %w : f32
{to_acc}        %s2 = arith.addf %s, {pv} : {acc_t}
        scf.yield %s2 : {acc_t}
      }}
{res}{extra}{st}    }}
{post}    gpu.return
  }}
}}
"""


# ---- mm16: y = f16(256 * a(64x256) x b(256x80)), f16 in and out, f32 sums -

def mm16(value="%h", extra="", acc_t="f32"):
    """One thread per output element (5120 = 20 blocks of 256); sums the
    k terms from the last to the first (another order than the
    reference's), in f32, scales by 256 and rounds once to f16. `extra`
    computes `value` (f16) from %h and %v (the f32 result)."""
    return f"""gpu.module @kernels {{
  gpu.func @mm16(%a: memref<64x256xf16>, %b: memref<256x80xf16>,
                %y: memref<64x80xf16>) kernel
      {ATTR.format(block=256, grid=20)} {{
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c80 = arith.constant 80 : index
    %c255 = arith.constant 255 : index
    %c256 = arith.constant 256 : index
    %n = arith.constant 5120 : index
    %zero = arith.constant 0.0 : f32
{"" if acc_t == "f32" else f"    %zacc = arith.constant 0.0 : {acc_t}{chr(10)}"}    %scale = arith.constant 256.0 : f32
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {{
      %row = arith.divui %i, %c80 : index
      %col = arith.remui %i, %c80 : index
      {"%acc" if acc_t == "f32" else "%acc0"} = scf.for %kk = %c0 to %c256 step %c1 iter_args(%s = {"%zero" if acc_t == "f32" else "%zacc"}) -> ({acc_t}) {{
        %k = arith.subi %c255, %kk : index
        %xh = memref.load %a[%row, %k] : memref<64x256xf16>
        %wh = memref.load %b[%k, %col] : memref<256x80xf16>
        %x = arith.extf %xh : f16 to f32
        %w = arith.extf %wh : f16 to f32
        %p = arith.mulf %x, %w : f32
{_acc_add(acc_t, "%p", "%s", "%s2")}        scf.yield %s2 : {acc_t}
      }}
{"" if acc_t == "f32" else _acc_f32(acc_t, "%acc0", "%acc")}      %v = arith.mulf %acc, %scale : f32
      %h = arith.truncf %v : f32 to f16
{extra}      memref.store {value}, %y[%row, %col] : memref<64x80xf16>
    }}
    gpu.return
  }}
}}
"""


def _acc_add(acc_t, p, s, out):
    """`out` = `s` + `p` (f32) in the accumulator's type"""
    if acc_t == "f32":
        return f"        {out} = arith.addf {s}, {p} : f32\n"
    return (f"        {p}t = arith.truncf {p} : f32 to {acc_t}\n"
            f"        {out} = arith.addf {s}, {p}t : {acc_t}\n")


def _acc_f32(acc_t, v, out):
    """`out` = the accumulator `v` in f32"""
    if acc_t == "f32":
        return f"      {out} = arith.addf {v}, %zero : f32\n"
    return f"      {out} = arith.extf {v} : {acc_t} to f32\n"


# ---- sw16: y = f16(silu(x Wg) * (x Wu)), one row, K = 2048, f32 sums -------
# (the form of seed 23's 012_swiglu_r1_f13824_f16, docs/verification.md
# "16-bit contractions accumulated in f32": the plan carries "acc32")

def sw16(acc_t="f32"):
    """One thread per output column (256 = 1 block); sums the k terms from
    the last to the first (another order than the reference's) in
    `acc_t`, then silu(g) * u in f32, rounded once to f16."""
    return f"""gpu.module @kernels {{
  gpu.func @sw16(%x: memref<1x2048xf16>, %wg: memref<2048x256xf16>,
                %wu: memref<2048x256xf16>, %y: memref<1x256xf16>) kernel
      {ATTR.format(block=256, grid=1)} {{
    %j = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2047 = arith.constant 2047 : index
    %c2048 = arith.constant 2048 : index
    %zero = arith.constant 0.0 : f32
    %zacc = arith.constant 0.0 : {acc_t}
    %one = arith.constant 1.0 : f32
    %r:2 = scf.for %kk = %c0 to %c2048 step %c1 iter_args(%sg = %zacc, %su = %zacc) -> ({acc_t}, {acc_t}) {{
      %k = arith.subi %c2047, %kk : index
      %xh = memref.load %x[%c0, %k] : memref<1x2048xf16>
      %gh = memref.load %wg[%k, %j] : memref<2048x256xf16>
      %uh = memref.load %wu[%k, %j] : memref<2048x256xf16>
      %xf = arith.extf %xh : f16 to f32
      %gf = arith.extf %gh : f16 to f32
      %uf = arith.extf %uh : f16 to f32
      %pg = arith.mulf %xf, %gf : f32
      %pu = arith.mulf %xf, %uf : f32
{_acc_add(acc_t, "%pg", "%sg", "%sg2")}{_acc_add(acc_t, "%pu", "%su", "%su2")}      scf.yield %sg2, %su2 : {acc_t}, {acc_t}
    }}
{_acc_f32(acc_t, "%r#0", "%g")}{_acc_f32(acc_t, "%r#1", "%u")}    %ng = arith.negf %g : f32
    %ex = math.exp %ng : f32
    %den = arith.addf %ex, %one : f32
    %silu = arith.divf %g, %den : f32
    %p = arith.mulf %silu, %u : f32
    %h = arith.truncf %p : f32 to f16
    memref.store %h, %y[%c0, %j] : memref<1x256xf16>
    gpu.return
  }}
}}
"""


CLOBBER = """  func.func @touch(%m: {t}, %i: index, %j: index) {{
    %v = arith.constant 7.0 : f32
    memref.store %v, %m[%i, %j] : {t}
    return
  }}
"""

NAN_CHECK_EW = """    %c0 = arith.constant 0 : index
    %probe = memref.load %y[%c0, %c0] : memref<1000x257xf32>
    %fresh = arith.cmpf uno, %probe, %probe : f32
"""

CASES = [
    # name, subgraph, expect, category, why, text[, args]
    ("ew-good", "ew", "accept", "good", "a correct kernel", ew()),
    ("ew-never-written", "ew", "unwritten-output", "output never written",
     "the guard (i > 300000) holds for no thread, so nothing is stored",
     ew(guard="ugt", oob_n="300000")),
    ("ew-inverted-guard", "ew", "out-of-bounds-write", "out-of-bounds write",
     "the guard is inverted (i > n): no element is written, and the 23 "
     "threads past the end write past it (the first corpus run caught "
     "this as an out-of-bounds write, not as unwritten output)",
     ew(guard="ugt")),
    ("ew-copy-input", "ew", "mismatch", "a copy of an input",
     "stores a instead of a*b + a", ew(value="%x")),
    ("ew-constant-fill", "ew", "mismatch", "constant fill",
     "stores 1.0 everywhere",
     ew(value="%one", extra_store="      %one = arith.constant 1.0 : f32\n")),
    ("ew-tail-unwritten", "ew", "unwritten-output", "unwritten tail on odd sizes",
     "1003 blocks of 256 cover 256768 of the 257000 elements",
     ew(grid=1003)),
    ("ew-hardcoded-shape", "ew", "mismatch|unwritten-output", "hard-coded shape",
     "assumes rows of 256 columns (a power of two) instead of 257",
     ew(n="256000", cols="256")),
    ("ew-modify-input", "ew", "input-modified", "modifying an input",
     "a helper function writes 7.0 into input a after reading it (the "
     "static contract check does not follow values into helpers)",
     ew(helpers=CLOBBER.format(t="memref<1000x257xf32>"),
        extra_store="      func.call @touch(%a, %r, %c) : (memref<1000x257xf32>, index, index) -> ()\n")),
    ("ew-oob-write", "ew", "out-of-bounds-write", "out-of-bounds write",
     "24 threads past the end store too (the guard is n + 24)",
     ew(oob_n="257024")),
    ("ew-read-output", "ew", "poison-dependent|mismatch",
     "reading stale or uninitialized memory",
     "adds 0 * y[i] (the output's previous contents) to the result: right "
     "when the output held a finite value, NaN when it held NaN",
     ew(value="%s2", extra_store=(
         "      %old = memref.load %y[%r, %c] : memref<1000x257xf32>\n"
         "      %zz = arith.constant 0.0 : f32\n"
         "      %od = arith.mulf %old, %zz : f32\n"
         "      %s2 = arith.addf %s, %od : f32\n"))),
    ("ew-cache-on-output", "ew", "poison-dependent|unwritten-output",
     "a result cache keyed on an address",
     "treats a non-NaN y[0,0] as 'this output buffer already holds the "
     "result' and skips the work: right on a fresh NaN-poisoned buffer, "
     "stale otherwise",
     ew(pre=NAN_CHECK_EW, guard="ult",
        extra_store="", value="%s").replace(
            "    scf.if %in {", "    %go = arith.andi %in, %fresh : i1\n    scf.if %go {")),
    ("ew-infinite-loop", "ew", "timeout|watchdog-timeout", "infinite loop",
     "every thread spins forever after storing (a barrier in the loop keeps "
     "LLVM from deleting it)", ew(post=SPIN)),
    ("ew-noop", "ew", "unwritten-output", "no-op kernel",
     "a no-op in place of the real kernel: it only reads its output",
     ew(guard="ult").split("    %in =")[0] +
     "    %c0 = arith.constant 0 : index\n"
     "    %dead = memref.load %y[%c0, %c0] : memref<1000x257xf32>\n"
     "    gpu.return\n  }\n}\n"),
    ("ew-bf16-roundtrip", "ew", "mismatch", "lower precision beyond tolerance",
     "computes in bf16 (8 significant bits): relative error ~4e-3 > 1e-3",
     ew(value="%s3", extra_store=(
         "      %sb = arith.truncf %s : f32 to bf16\n"
         "      %s3 = arith.extf %sb : bf16 to f32\n"))),
    ("ew-nan-scrub", "ew", "mismatch", "special values",
     "replaces NaN results by 0: fine on ordinary inputs, wrong on the "
     "NaN/Inf trial where the reference propagates NaN",
     ew(value="%s4", extra_store=(
         "      %isn = arith.cmpf uno, %s, %s : f32\n"
         "      %z0 = arith.constant 0.0 : f32\n"
         "      %s4 = arith.select %isn, %z0, %s : f32\n"))),

    ("rowsum-good", "rowsum", "accept", "good", "a correct kernel", rowsum()),
    ("rowsum-atomic-declared", "rowsum", "accept", "good",
     "atomic accumulation, declared (--atomics): the bitwise repeat check "
     "is waived, the tolerance check is not", rowsum_atomic(), "--atomics"),
    ("rowsum-atomic-undeclared", "rowsum", "nondeterministic",
     "missing barrier (race) / nondeterminism",
     "atomic accumulation in a varying order without declaring atomics: two "
     "runs on identical inputs differ bit for bit", rowsum_atomic()),
    ("rowsum-skip-last", "rowsum", "mismatch", "reduction that skips elements",
     "sums 999 of the 1000 columns", rowsum(bound="999")),
    ("rowsum-skip-lane", "rowsum", "mismatch", "reduction that skips elements",
     "thread 255's elements are dropped",
     rowsum(skip="", init_store=(
         "    %c255 = arith.constant 255 : index\n"
         "    %last = arith.cmpi eq, %tid, %c255 : index\n"
         "    %keep = arith.select %last, %zero_f, %part : f32\n"
         "    memref.store %keep, %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>\n"))),
    ("rowsum-bf16-accum", "rowsum", "mismatch", "lower-precision accumulation",
     "accumulates the partial sums in bf16", rowsum(acc_t="bf16")),
    ("rowsum-f16-serial", "rowsum", "mismatch", "lower-precision accumulation",
     "one thread per row adds 1000 values in f16", rowsum_serial("f16")),
    ("rowsum-no-barrier", "rowsum", "mismatch|nondeterministic|poison-dependent",
     "missing barrier (race)",
     "no barrier between the shared-memory tree's steps",
     rowsum(barrier1="", barrier2="")),
    ("rowsum-uninit-shared", "rowsum", "mismatch|nondeterministic|poison-dependent",
     "reading stale or uninitialized memory",
     "only threads below 128 store their partial, but the tree reads all 256 "
     "slots: the rest is whatever shared memory held",
     rowsum(init_store=(
         "    %c128i = arith.constant 128 : index\n"
         "    %low = arith.cmpi ult, %tid, %c128i : index\n"
         "    scf.if %low {\n"
         "      memref.store %part, %sh[%tid] : memref<256xf32, #gpu.address_space<workgroup>>\n"
         "    }\n"))),
    ("rowsum-tail-rows", "rowsum", "unwritten-output", "unwritten tail",
     "511 blocks for 512 rows", rowsum(grid=511)),
    ("rowsum-hardcoded-shape", "rowsum", "mismatch|launch-failed", "hard-coded shape",
     "rows assumed 1024 long: reads 24 elements of the next row",
     rowsum(bound="1024")),
    ("rowsum-constant", "rowsum", "mismatch", "constant fill",
     "writes 0.0 for every row", rowsum(result="%zero_f")),
    ("rowsum-copy-input", "rowsum", "mismatch", "a copy of an input",
     "writes a[r, 0]",
     rowsum(result="%a0", extra_tid0="      %a0 = memref.load %a[%row, %c0] : memref<512x1000xf32>\n")),

    ("mm-good", "mm", "accept", "good", "a correct kernel", mm()),
    ("mm-bf16-accum", "mm", "mismatch", "lower-precision accumulation",
     "accumulates the dot products in bf16", mm(acc_t="bf16")),
    ("mm-skip-k", "mm", "mismatch", "reduction that skips elements",
     "the k loop stops at 255", mm(kbound="255")),
    ("mm-wrong-index", "mm", "mismatch", "a hard-coded shape",
     "reads b's column as row % 96 (a square-matrix assumption)",
     mm(bcol="%rc", extra="", body_pre="").replace(
         "      %acc = scf.for", "      %rc = arith.remui %row, %c96 : index\n      %acc = scf.for")),
    ("mm-oob-write", "mm", "out-of-bounds-write", "out-of-bounds write",
     "the last row's threads also store one row further (row 128)",
     mm(extra=(
         "      %c127 = arith.constant 127 : index\n"
         "      %lastrow = arith.cmpi eq, %row, %c127 : index\n"
         "      scf.if %lastrow {\n"
         "        %c128 = arith.constant 128 : index\n"
         "        memref.store %res, %y[%c128, %col] : memref<128x96xf32>\n"
         "      }\n"))),
    ("mm-noop", "mm", "unwritten-output", "no-op kernel",
     "computes every dot product but never stores one", mm(store=False)),
    ("mm-partial-grid", "mm", "unwritten-output", "unwritten tail",
     "47 blocks for 48 blocks' worth of outputs", mm(grid=47)),
    ("mm-modify-input", "mm", "input-modified", "modifying an input",
     "a helper writes into b", mm(
         helpers=CLOBBER.format(t="memref<256x96xf32>"),
         extra="      func.call @touch(%b, %row, %col) : (memref<256x96xf32>, index, index) -> ()\n")),
    ("mm-cache-on-output", "mm", "poison-dependent|unwritten-output",
     "a result cache keyed on an address",
     "skips the work when y[row, col] already holds a finite value",
     mm(extra=(
         "      %prev = memref.load %y[%row, %col] : memref<128x96xf32>\n"
         "      %stale = arith.cmpf ord, %prev, %prev : f32\n"
         "      %res2 = arith.select %stale, %prev, %res : f32\n"),
        value="%res2")),
    ("mm-infinite-loop", "mm", "timeout|watchdog-timeout", "infinite loop",
     "spins forever after storing", mm(post=SPIN)),

    # The f16 overflow boundary (docs/verification.md): the reference
    # rounds its f32 value to f16 once, so it holds infinities where the
    # value passes 65520; only a rounding at that threshold may differ.
    ("mm16-good", "mm16", "accept", "good",
     "a correct kernel: f32 sums in another order (k descending), one "
     "rounding to f16; where the value sits at the overflow threshold its "
     "rounding may go the other way than the reference's (65504 for inf), "
     "which the wide reference accepts", mm16()),
    ("mm16-saturate", "mm16", "mismatch", "special values",
     "saturates: clamps the f32 value to +-65504 before the rounding, so "
     "it writes the largest finite f16 where the value overflows (inf in "
     "the reference; loss scaling relies on that inf)",
     mm16(value="%hs", extra=(
         "      %hi = arith.constant 65504.0 : f32\n"
         "      %lo = arith.constant -65504.0 : f32\n"
         "      %v1 = arith.minimumf %v, %hi : f32\n"
         "      %v2 = arith.maximumf %v1, %lo : f32\n"
         "      %hs = arith.truncf %v2 : f32 to f16\n"))),
    ("mm16-inf-early", "mm16", "mismatch", "special values",
     "overflows too early: writes an infinity of the value's sign wherever "
     "|value| >= 32768, a magnitude well inside f16's range",
     mm16(value="%hx", extra=(
         "      %lim = arith.constant 32768.0 : f32\n"
         "      %av = math.absf %v : f32\n"
         "      %big = arith.cmpf oge, %av, %lim : f32\n"
         "      %pinf = arith.constant 0x7C00 : f16\n"
         "      %ninf = arith.constant 0xFC00 : f16\n"
         "      %neg = arith.cmpf olt, %v, %zero : f32\n"
         "      %sinf = arith.select %neg, %ninf, %pinf : f16\n"
         "      %hx = arith.select %big, %sinf, %h : f16\n"))),
    ("mm16-f16-accum", "mm16", "mismatch", "lower-precision accumulation",
     "accumulates the dot products in f16 (the IR sums in f32; its plan "
     "carries the f32-accumulation bound, which must not let this pass)",
     mm16(acc_t="f16")),
    # 16-bit contractions summed in f32 (docs/verification.md): the bound
    # stol * sqrt(s) accepts the rounding of any f32 summation order on
    # ill-conditioned elements, not sums in 16 bits.
    ("sw16-good", "sw16", "accept", "good",
     "a correct kernel: f32 sums in another order (k descending), the gate "
     "in f32, one rounding to f16", sw16()),
    ("sw16-f16-accum", "sw16", "mismatch", "lower-precision accumulation",
     "accumulates both projections in f16", sw16(acc_t="f16")),
    ("mm16-inf-one", "mm16", "mismatch", "special values",
     "writes +inf at element [0, 0] (its value is an ordinary number)",
     mm16(value="%hx", extra=(
         "      %first = arith.cmpi eq, %i, %c0 : index\n"
         "      %pinf = arith.constant 0x7C00 : f16\n"
         "      %hx = arith.select %first, %pinf, %h : f16\n"))),
]


def main():
    global OUT
    if len(sys.argv) > 2 and sys.argv[1] == "--out":
        OUT = sys.argv[2]
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".mlir"):
            os.remove(os.path.join(OUT, old))
    for case in CASES:
        name, sg, expect, cat, why, text = case[:6]
        args = case[6] if len(case) > 6 else ""
        head = [f"// {name}: generated by lit_tests/verify/gen_corpus.py; edit "
                "the generator, not this file.",
                f"// SUBGRAPH: {sg}", f"// SIGNATURE: {SIGS[sg]}",
                f"// EXPECT: {expect}", f"// ARGS: {args}",
                f"// CATEGORY: {cat}", f"// WHY: {why}"]
        with open(os.path.join(OUT, name + ".mlir"), "w") as f:
            f.write("\n".join(head) + "\n" + text)
    bad = sum(1 for c in CASES if c[2] != "accept")
    print("gen_corpus: %d kernels (%d bad, %d good) in %s" % (
        len(CASES), bad, len(CASES) - bad, OUT))


if __name__ == "__main__":
    main()
