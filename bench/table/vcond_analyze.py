#!/usr/bin/env python3
"""vcond_analyze.py - on the GPU machine (numpy): examines a dumped trial of
the one-row f16 SwiGLU (y = silu(x Wg) * (x Wu), f32 sums rounded once to
f16), written by llm-fuse-verify with LF_VERIFY_DUMP_DIR
(bench/table/vcond-device.sh).

    vcond_analyze.py DUMP_DIR TRIAL

Prints, for the elements the verifier's rule rejects (and a few more):
the float64 truth, the reference, the candidate, the unrounded (wide)
reference, g and u with their error scales s = sum (x_k W_kj)^2 and
sum |x_k W_kj|; and how several valid f32 summation orders of g and u
(sequential, reversed, pairwise, 16-product chunks added with
round-to-nearest or truncation, as mma.sync does) move the output, and how
many elements each order fails under the verifier's rule.
"""
import sys

import numpy as np

d, t = sys.argv[1], int(sys.argv[2])
K, N = 4096, 13824


def load(name, dt, shape):
    return np.fromfile("%s/t%d.%s.bin" % (d, t, name), dtype=dt).reshape(shape)


x = load("in0", np.float16, (K,)).astype(np.float64)
wg = load("in1", np.float16, (K, N))
wu = load("in2", np.float16, (K, N))
ref = load("ref0", np.float16, (N,)).astype(np.float64)
cand = load("cand0", np.float16, (N,)).astype(np.float64)
wide = load("wide0", np.float32, (N,)).astype(np.float64)


def silu(g):
    with np.errstate(over="ignore"):
        return g / (1.0 + np.exp(-g))


def dsilu(g):
    with np.errstate(over="ignore"):
        s = 1.0 / (1.0 + np.exp(-g))
    return s * (1 + g * (1 - s))


def f16(v):
    with np.errstate(over="ignore"):
        return np.asarray(v, np.float64).astype(np.float32).astype(np.float16).astype(np.float64)


def epilogue32(g, u):
    """the IR's epilogue in f32 (exp, add, div, mul), rounded to f16"""
    g = np.asarray(g, np.float32)
    u = np.asarray(u, np.float32)
    with np.errstate(over="ignore"):
        e = np.exp(-g)
        p = (g / (e + np.float32(1))) * u
    return f16(p)


# which of inputs 1 and 2 is the gate: the one that matches the wide output
cols = np.arange(0, N, 97)
a = (x[:, None] * wg[:, cols].astype(np.float64)).sum(0)
b = (x[:, None] * wu[:, cols].astype(np.float64)).sum(0)
ok = np.isfinite(wide[cols])
e1 = np.abs(silu(a) * b - wide[cols])[ok].sum()
e2 = np.abs(silu(b) * a - wide[cols])[ok].sum()
print("input 1 as the gate: mean error %.4g; input 2: %.4g" % (e1 / ok.sum(), e2 / ok.sum()))
if e2 < e1:
    wg, wu = wu, wg
    print("swapped: input 2 is the gate")

spikes = np.nonzero(np.abs(x) >= 999)[0]
print("x spikes at", list(spikes), "values", list(x[spikes]))
print("Wg spikes:", np.argwhere(np.abs(wg.astype(np.float32)) >= 999).tolist())
print("Wu spikes:", np.argwhere(np.abs(wu.astype(np.float32)) >= 999).tolist())

# float64 truth (products of f16 values are exact in f64; the sum over
# K = 4096 in f64 is exact to ~1e-16 relative to sum |x w|)
pg = x[:, None] * wg.astype(np.float64)
g64 = pg.sum(0)
sg = (pg * pg).sum(0)
ag = np.abs(pg).sum(0)
mg = np.abs(np.cumsum(pg, 0)).max(0)
del pg
pu = x[:, None] * wu.astype(np.float64)
u64 = pu.sum(0)
su = (pu * pu).sum(0)
au = np.abs(pu).sum(0)
mu = np.abs(np.cumsum(pu, 0)).max(0)
del pu
y64 = silu(g64) * u64

fin = np.isfinite(ref)
atol = 0.01 * np.abs(ref[fin]).mean()
print("reference: %d finite of %d, mean |ref| %.4f, atol %.4f" % (fin.sum(), N, np.abs(ref[fin]).mean(), atol))


def bad_of(c):
    """the verifier's rule for f16 (no wide-boundary rule here: both finite)"""
    both = np.isfinite(ref) & np.isfinite(c)
    err = np.abs(c - ref)
    tol = 0.01 * np.abs(ref) + atol
    b = both & ~(err <= tol)
    b |= (np.isfinite(ref) != np.isfinite(c))
    b |= (~np.isfinite(ref)) & (~np.isfinite(c)) & (ref != c)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(both, err / tol, 0.0)
    return b, ratio


bc, rc = bad_of(cand)
print("candidate: %d bad, worst error/tolerance %.4f" % (bc.sum(), rc.max()))
print("truth (f16 of the f64 value): %d bad vs the reference, worst %.4f" % (
    bad_of(f16(y64))[0].sum(), bad_of(f16(y64))[1].max()))


# f32 summation orders of g and u
def seq(p_rows, order):
    acc = np.zeros(N, np.float32)
    for k in order:
        acc = acc + p_rows(k)
    return acc


def rows_of(w):
    w32 = w.astype(np.float32)
    x32 = x.astype(np.float32)
    return lambda k: x32[k] * w32[k]   # exact: an f16 x f16 product fits f32


def chunked(w, trunc, chunk=16):
    """acc_f32 = round(acc + exact sum of the next `chunk` products): the
    mma.sync m16n8k16 chain over K of the kernel (one warp, one column
    block, k ascending), with round-to-nearest or truncation (toward zero)"""
    w64 = w.astype(np.float64)
    acc = np.zeros(N, np.float64)
    for k0 in range(0, K, chunk):
        v = acc + (x[k0:k0 + chunk, None] * w64[k0:k0 + chunk]).sum(0)
        r = v.astype(np.float32).astype(np.float64)
        if trunc:
            over = np.abs(r) > np.abs(v)
            r = np.where(over, np.nextafter(r.astype(np.float32), np.float32(0)).astype(np.float64), r)
        acc = r
    return acc


def pairwise(w):
    p = x.astype(np.float32)[:, None] * w.astype(np.float32)
    while p.shape[0] > 1:
        p = p[0::2] + p[1::2]
    return p[0].astype(np.float64)


orders = {}
orders["seq f32 RN (k up)"] = (seq(rows_of(wg), range(K)), seq(rows_of(wu), range(K)))
orders["seq f32 RN (k down)"] = (seq(rows_of(wg), range(K - 1, -1, -1)), seq(rows_of(wu), range(K - 1, -1, -1)))
orders["pairwise f32 RN"] = (pairwise(wg), pairwise(wu))
orders["mma chain k16 RN"] = (chunked(wg, False), chunked(wu, False))
orders["mma chain k16 trunc"] = (chunked(wg, True), chunked(wu, True))
orders["chain k8 trunc"] = (chunked(wg, True, 8), chunked(wu, True, 8))
orders["chain k4 trunc"] = (chunked(wg, True, 4), chunked(wu, True, 4))
outs = {}
print("\n%-22s %6s %9s %12s %12s %14s" % ("order of g, u", "bad", "worst", "max|dg|/rt(sg)", "max|du|/rt(su)", "max|dg|"))
for name, (g, u) in orders.items():
    y = epilogue32(g, u)
    outs[name] = y
    b, r = bad_of(y)
    print("%-22s %6d %9.4f %12.3e %12.3e %14.4e" % (name, b.sum(), r.max(),
          np.max(np.abs(np.asarray(g, np.float64) - g64) / np.sqrt(sg)),
          np.max(np.abs(np.asarray(u, np.float64) - u64) / np.sqrt(su)),
          np.max(np.abs(np.asarray(g, np.float64) - g64))))

# the elements of interest: the candidate's bad ones and the worst of each order
idx = set(np.nonzero(bc)[0].tolist())
idx |= set(np.argsort(-rc)[:3].tolist())
for y in outs.values():
    idx |= set(np.nonzero(bad_of(y)[0])[0].tolist()[:3])
print()
for j in sorted(idx):
    print("element %d: truth %.4f (f16 %g)  reference %g  wide %.4f  candidate %g  err/tol %.3f" % (
        j, y64[j], f16(y64[j]), ref[j], wide[j], cand[j], rc[j]))
    print("   g %.6f  sqrt(s_g) %.2f  sum|xw| %.2f  max|partial| %.2f  silu'(g) %.4f" % (
        g64[j], np.sqrt(sg[j]), ag[j], mg[j], dsilu(g64[j])))
    print("   u %.6f  sqrt(s_u) %.2f  sum|xw| %.2f  max|partial| %.2f  silu(g) %.6f" % (
        u64[j], np.sqrt(su[j]), au[j], mu[j], silu(g64[j])))
    tol = 0.01 * abs(ref[j]) + atol
    print("   |cand - truth| %.4f  |ref - truth| %.4f  |wide - truth| %.4f  tolerance %.3f" % (
        abs(cand[j] - y64[j]), abs(ref[j] - y64[j]), abs(wide[j] - y64[j]), tol))
    # the g error that would explain the candidate (u exact): dy = (silu'(g) u) dg
    sens = dsilu(g64[j]) * u64[j]
    print("   dy/dg %.2f  dy/du %.5f -> candidate's error as dg alone: %.5f (= %.2e sqrt(s_g))" % (
        sens, silu(g64[j]), (cand[j] - y64[j]) / sens if sens else float("nan"),
        abs((cand[j] - y64[j]) / sens) / np.sqrt(sg[j]) if sens else float("nan")))
    print("   orders: " + ", ".join("%s %g" % (n, outs[n][j]) for n in outs))
    sc = silu(sg[j]) * su[j]
    print("   squared-input scale silu(s_g) s_u = %.4e, sqrt %.4e; |cand - ref| / sqrt = %.3e" % (
        sc, np.sqrt(sc), abs(cand[j] - ref[j]) / np.sqrt(sc)))
    lin = abs(dsilu(g64[j]) * u64[j]) * np.sqrt(sg[j]) + abs(silu(g64[j])) * np.sqrt(su[j])
    print("   first-order scale |silu'(g) u| sqrt(s_g) + |silu(g)| sqrt(s_u) = %.4e; |cand - ref| / it = %.3e" % (
        lin, abs(cand[j] - ref[j]) / lin))

# the whole output: |cand - ref| against the two scales, where both finite
both = np.isfinite(ref) & np.isfinite(cand)
sc = silu(sg) * su
lin = np.abs(dsilu(g64) * u64) * np.sqrt(sg) + np.abs(silu(g64)) * np.sqrt(su)
e = np.abs(cand - ref)
with np.errstate(invalid="ignore", divide="ignore"):
    r1 = np.where(both & (sc > 0), e / np.sqrt(sc), 0)
    r2 = np.where(both & (lin > 0), e / lin, 0)
print("\nall finite elements: max |cand-ref|/sqrt(silu(s_g) s_u) %.3e at %d; max |cand-ref|/first-order %.3e at %d" % (
    r1.max(), r1.argmax(), r2.max(), r2.argmax()))
for name, y in outs.items():
    e = np.abs(y - ref)
    ok = np.isfinite(ref) & np.isfinite(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(ok & (sc > 0), e / np.sqrt(sc), 0)
        b = np.where(ok & (lin > 0), e / lin, 0)
    print("  %-22s max/sqrt(scale) %.3e  max/first-order %.3e" % (name, a.max(), b.max()))

# a compact copy for off-line work (no W: 226 MB): per element g, u and
# their scales in f64, the outputs; x; the W columns of the worst elements
if len(sys.argv) > 3:
    worst = np.unique(np.concatenate([np.nonzero(bc)[0], np.argsort(-rc)[:40], np.argsort(-r1)[:20]]))
    np.savez_compressed(sys.argv[3], x=x, g64=g64, u64=u64, sg=sg, su=su, ag=ag, au=au, mg=mg, mu=mu,
                        ref=ref, cand=cand, wide=wide, cols=worst,
                        wg_cols=wg[:, worst], wu_cols=wu[:, worst],
                        **{"order_" + n.replace(" ", "_").replace("(", "").replace(")", ""): y
                           for n, y in outs.items()})
    print("saved", sys.argv[3], "columns", list(worst))
