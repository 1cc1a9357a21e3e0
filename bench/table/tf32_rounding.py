#!/usr/bin/env python3
"""tf32_rounding.py - what PyTorch's allow_tf32 GEMM does to f32 operands on
this GPU, and how its error compares with the verifier's TF32 tolerance
(docs/verification.md, "TF32 mode"; runtime/verify_protocol.c
lf_vtolerance_tf32).

For each shape and input distribution (the verifier's normal and
heavy-tailed draws: N(0,1), and N(0,1) * u^-0.4), it computes the float64
product of the f32 operands (the reference) and four candidates:

  torch tf32   torch.matmul with allow_tf32 = True (cuBLAS)
  torch f32    torch.matmul with allow_tf32 = False
  sim rna      operands rounded to TF32 (10-bit mantissa, to nearest, ties
               away: PTX cvt.rna.tf32), then multiplied in float64
  sim trunc    operands truncated to TF32 (the low 13 bits dropped), then
               multiplied in float64

and prints, per candidate, the worst error over the tolerance (the
verifier's rule: |c - r| <= t |r| + t mean|r|, t = lf_vtolerance_tf32(K))
and which simulation torch's TF32 result is closer to.

    python3 bench/table/tf32_rounding.py          (on the GPU machine)
"""
import math
import torch


def tol(k):
    t = 10.0 * 2.0 ** -11 + k * 2.0 ** -24
    return max(min(t, 2e-2), 1e-3)


def draw(shape, dist, gen):
    x = torch.randn(shape, generator=gen, dtype=torch.float32, device="cuda")
    if dist == "heavy-tailed":
        u = torch.rand(shape, generator=gen, dtype=torch.float32, device="cuda").clamp_min(1e-7)
        x = x * u.pow(-0.4)
    return x


def to_tf32(x, mode):
    b = x.contiguous().view(torch.int32)
    if mode == "rna":
        b = b + (1 << 12)  # ties away from zero: add half an ulp of the 10-bit mantissa
    b = b & ~((1 << 13) - 1)
    return b.view(torch.float32)


def worst(c, r, t):
    m = r.abs().mean()
    return ((c.double() - r).abs() / (t * r.abs() + t * m)).max().item()


def main():
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    print("device %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    print("%-22s %-13s %9s %10s %10s %10s %10s  %s" % (
        "M x N x K", "inputs", "tolerance", "torch tf32", "torch f32", "sim rna", "sim trunc",
        "torch tf32 is closer to"))
    for (m, n, k) in [(4096, 2304, 768), (4096, 768, 3072), (2048, 2048, 8192)]:
        for dist in ("normal", "heavy-tailed"):
            a = draw((m, k), dist, gen)
            b = draw((k, n), dist, gen)
            r = a.double() @ b.double()
            t = tol(k)
            torch.backends.cuda.matmul.allow_tf32 = True
            c_tf32 = a @ b
            torch.backends.cuda.matmul.allow_tf32 = False
            c_f32 = a @ b
            s_rna = to_tf32(a, "rna").double() @ to_tf32(b, "rna").double()
            s_tr = to_tf32(a, "trunc").double() @ to_tf32(b, "trunc").double()
            d_rna = (c_tf32.double() - s_rna).abs().mean().item()
            d_tr = (c_tf32.double() - s_tr).abs().mean().item()
            closer = "trunc" if d_tr < d_rna else "rna"
            print("%-22s %-13s %9.2e %10.3f %10.3f %10.3f %10.3f  %s (mean |diff| rna %.3g, trunc %.3g)" % (
                "%d x %d x %d" % (m, n, k), dist, t, worst(c_tf32, r, t), worst(c_f32, r, t),
                worst(s_rna, r, t), worst(s_tr, r, t), closer, d_rna, d_tr))


if __name__ == "__main__":
    main()
