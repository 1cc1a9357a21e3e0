#!/usr/bin/env python3
"""attn-p44-specials.py - host emulation (numpy) of the 3xTF32 causal
attention of gen_rows.py's gen_attention_tf32 on inputs holding one special
value (+-Inf, NaN, +-3.4e38 in q, k or v), against an f32 reference with
the causal mask applied by select (as the IR's lowering does), judged by
the verifier's f32 rule on the elements where the reference is finite (the
lenient rule for attention-like subgraphs: docs/verification.md).

    python3 bench/table/attn-p44-specials.py

Emulates the math, not the kernel: big = rna(x) by adding half a TF32 ulp
and masking, small = rna(x - big), S = small_q big_k + big_q small_k +
big_q big_k, O = P V in three terms; "noclamp" splits the raw inputs (the
kernel the GPU rejected in the NaN/Inf trial: a key holding +-Inf splits
into big = Inf, small = Inf - Inf = NaN, so its scores are NaN where the
reference's -Inf is a weight of 0), "clamp" first clamps q, k, v to
+-max TF32 (clamp_own). Prints the elements out of tolerance per case.
"""
import numpy as np

T, D = 64, 96
MAX = np.array([0x7F7FE000], dtype=np.uint32).view(np.float32)[0]


def rna(x):
    xi = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((xi + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def split(x):
    big = rna(x)
    return big, rna((x - big).astype(np.float32))


def attn(q, k, v, mode):
    if mode == "clamp":
        q, k, v = [np.fmax(np.fmin(x, MAX), -MAX).astype(np.float32) for x in (q, k, v)]
    if mode == "ref":
        s = (q @ k.T).astype(np.float64)
    else:
        (qb, qs), (kb, ks) = split(q), split(k)
        s = (qs @ kb.T + qb @ ks.T + qb @ kb.T).astype(np.float64)
    s = s / np.sqrt(D)
    s[np.triu_indices(T, 1)] = -np.inf
    m = s.max(1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(1, keepdims=True)
    if mode == "ref":
        return (p.astype(np.float32) @ v).astype(np.float64) / l
    (pb, ps), (vb, vs) = split(p.astype(np.float32)), split(v)
    return (ps @ vb + pb @ vs + pb @ vb) / l


def main():
    rng = np.random.default_rng(1)
    total = {"noclamp": 0, "clamp": 0}
    with np.errstate(all="ignore"):
        for ti, name in enumerate("qkv"):
            for sv in (np.inf, -np.inf, np.nan, 3.4e38, -3.4e38):
                bad = {"noclamp": 0, "clamp": 0}
                nfin = 0
                for _ in range(20):
                    qkv = [rng.standard_normal((T, D)).astype(np.float32) for _ in range(3)]
                    qkv[ti][rng.integers(T), rng.integers(D)] = sv
                    r = attn(*qkv, "ref")
                    fin = np.isfinite(r)
                    if not fin.any():
                        continue
                    nfin += fin.sum()
                    tol = 1e-3 * np.abs(r) + 1e-3 * np.abs(r[fin]).mean()
                    for mode in bad:
                        c = attn(*qkv, mode)
                        bad[mode] += int((fin & ~(np.abs(c - r) <= tol)).sum())
                for mode in bad:
                    total[mode] += bad[mode]
                print("%s holds %-8g finite reference elements %6d, out of tolerance: %s"
                      % (name, sv, nfin, bad))
    print("total out of tolerance: %s" % total)
    return 0 if total["clamp"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
