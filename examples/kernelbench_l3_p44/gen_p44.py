#!/usr/bin/env python3
"""gen_p44.py - KernelBench level 3 problem 44 (44_MiniGPTBlock.py) as linalg
on tensors, shaped the way torch-mlir's linalg-on-tensors backend emits it.

    python3 examples/kernelbench_l3_p44/gen_p44.py B [T] [-o FILE]
    python3 examples/kernelbench_l3_p44/gen_p44.py --all   (rewrites the
                                                  shipped p44_b32/p44_b128)

The block, f32, dropout p = 0 (KernelBench's attn_pdrop = resid_pdrop = 0):
  x = x + c_proj(attn(ln_1(x)));  x = x + mlp.c_proj(NewGELU(mlp.c_fc(ln_2(x))))
  NewGELU(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  attn: q, k, v = c_attn(x).split(C, dim=2), each .view(B, T, H, D).transpose(1, 2);
        att = (q @ k^T) * (1 / sqrt(D)), masked_fill(tril == 0, -inf), softmax;
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
with n_embd C = 768, H = 8 heads of D = 96, MLP 4C. x: B x T x C.

What makes it importer-shaped (as examples/importer/minigpt_torch_mlir.mlir,
whose header explains each point, at batch 1): one linalg.generic per aten
op, scalars hoisted to the entry, broadcasts as generic indexing maps with
constant 0 for keepdim dimensions, every Linear as collapse_shape to
[B*T, in], linalg.transpose of the [out, in] weight, fill + matmul, a bias
generic and expand_shape back; QKV split by tensor.extract_slice of the
fused [B, T, 3C]; heads by expand_shape to [B, T, H, D] and linalg.transpose
to [B, H, T, D] (k's to [B, H, D, T]); rank-4 matmuls collapsed to
[B*H, ...] for linalg.batch_matmul and expanded back; the causal mask from
linalg.index; LayerNorm and softmax decomposed; NewGELU as one generic
with math.fpowi (its eight aten ops as linalg's elementwise fusion merges
them; the body is the importer example's tanh GELU, op for op).
Here batch B > 1, so the Linear views and the head collapses merge
non-unit dimensions (at batch 1 they are unit reshapes).

The twelve parameters are function arguments after x, in nn.Module order
(ln_1.weight, ln_1.bias, c_attn.weight [3C, C], c_attn.bias, c_proj.weight
[C, C], c_proj.bias, ln_2.weight, ln_2.bias, c_fc.weight [4C, C],
c_fc.bias, mlp.c_proj.weight [C, 4C], mlp.c_proj.bias), as torch-mlir's
importer gives them when parameters are lifted to inputs; that keeps the
files small and lets a benchmark pass torch's own weights.
"""
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def f32_lit(x):
    """x rounded to f32, written so that it reads back exactly."""
    return "%.8e" % struct.unpack("f", struct.pack("f", x))[0]


def model(B, T=512, C=768, H=8):
    D = C // H
    C3, C4, M, BH = 3 * C, 4 * C, B * T, B * H
    ft = lambda *s: "tensor<%sxf32>" % "x".join(map(str, s))  # noqa: E731
    L = []
    w = L.append
    n = [0]

    def v():
        n[0] += 1
        return "%%%d" % n[0]

    def unary(src, shape, body, in_map="#map", out=None):
        """one elementwise generic on src (rank-3 maps #map/#map1 or rank-4)"""
        r = v()
        rank = len(shape)
        idm = "#map" if rank == 3 else "#map5"
        w("    %s = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]} "
          "ins(%s : %s) outs(%s : %s) {" % (r, in_map, idm, ", ".join(['"parallel"'] * rank),
                                            src[0], src[1], out, ft(*shape)))
        w("    ^bb0(%in: f32, %out: f32):")
        for line in body:
            w("      " + line)
        w("    } -> %s" % ft(*shape))
        return r

    def binary(a, b, bmap, shape, op, out, amap=None):
        r = v()
        rank = len(shape)
        idm = "#map" if rank == 3 else ("#map3" if rank == 2 else "#map5")
        w("    %s = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = [%s]} "
          "ins(%s, %s : %s, %s) outs(%s : %s) {" % (r, amap or idm, bmap, idm,
                                                    ", ".join(['"parallel"'] * rank),
                                                    a[0], b[0], a[1], b[1], out, ft(*shape)))
        w("    ^bb0(%in: f32, %in_0: f32, %out: f32):")
        w("      %%r = %s %%in, %%in_0 : f32" % op)
        w("      linalg.yield %r : f32")
        w("    } -> %s" % ft(*shape))
        return r

    def reduce(src, shape, op, init, rank4=False):
        r = v()
        imap, omap = ("#map5", "#map7") if rank4 else ("#map", "#map1")
        it = ", ".join(['"parallel"'] * (len(shape) - 1) + ['"reduction"'])
        oshape = shape[:-1] + [1]
        w("    %s = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]} "
          "ins(%s : %s) outs(%s : %s) {" % (r, imap, omap, it, src, ft(*shape), init,
                                            ft(*oshape)))
        w("    ^bb0(%in: f32, %out: f32):")
        w("      %%r = %s %%in, %%out : f32" % op)
        w("      linalg.yield %r : f32")
        w("    } -> %s" % ft(*oshape))
        return r

    def layer_norm(x, g, b, tag):
        w("    // ---- %s: native_layer_norm decomposed; reductions keepdim: [B, T, 1] ----" % tag)
        s = reduce(x, [B, T, C], "arith.addf", "%fill_row")
        mean = unary((s, ft(B, T, 1)), [B, T, 1],
                     ["%r = arith.divf %in, %cst_n : f32", "linalg.yield %r : f32"],
                     out="%empty_row")
        xc = binary((x, ft(B, T, C)), (mean, ft(B, T, 1)), "#map1", [B, T, C], "arith.subf",
                    "%empty_btc")
        sq = binary((xc, ft(B, T, C)), (xc, ft(B, T, C)), "#map", [B, T, C], "arith.mulf",
                    "%empty_btc")
        s2 = reduce(sq, [B, T, C], "arith.addf", "%fill_row")
        var = unary((s2, ft(B, T, 1)), [B, T, 1],
                    ["%r = arith.divf %in, %cst_n : f32", "linalg.yield %r : f32"],
                    out="%empty_row")
        ve = unary((var, ft(B, T, 1)), [B, T, 1],
                   ["%r = arith.addf %in, %cst_eps : f32", "linalg.yield %r : f32"],
                   out="%empty_row")
        rs = unary((ve, ft(B, T, 1)), [B, T, 1],
                   ["%r = math.rsqrt %in : f32", "linalg.yield %r : f32"], out="%empty_row")
        xn = binary((xc, ft(B, T, C)), (rs, ft(B, T, 1)), "#map1", [B, T, C], "arith.mulf",
                    "%empty_btc")
        xg = binary((xn, ft(B, T, C)), (g, ft(C)), "#map2", [B, T, C], "arith.mulf", "%empty_btc")
        return binary((xg, ft(B, T, C)), (b, ft(C)), "#map2", [B, T, C], "arith.addf",
                      "%empty_btc")

    def linear(x, wt, bias, k, nout, tag, fill):
        """x [B, T, k] @ W^T + b: collapse, transpose W [nout, k], matmul, bias, expand"""
        w("    // ---- %s: view(B*T, %d), x @ W^T + b (addmm), view(B, T, %d) ----" % (tag, k, nout))
        e = v()
        w("    %s = tensor.empty() : %s" % (e, ft(k, nout)))
        tw = v()
        w("    %s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [1, 0] "
          % (tw, wt, ft(nout, k), e, ft(k, nout)))
        if x[1] == ft(M, k):
            xc = x[0]
        else:
            xc = v()
            w("    %s = tensor.collapse_shape %s [[0, 1], [2]] : %s into %s"
              % (xc, x[0], ft(B, T, k), ft(M, k)))
        e2 = v()
        w("    %s = tensor.empty() : %s" % (e2, ft(M, nout)))
        if fill is None:
            fill = v()
            w("    %s = linalg.fill ins(%%cst_0 : f32) outs(%s : %s) -> %s"
              % (fill, e2, ft(M, nout), ft(M, nout)))
        mm = v()
        w("    %s = linalg.matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
          % (mm, xc, tw, ft(M, k), ft(k, nout), fill, ft(M, nout), ft(M, nout)))
        bb = binary((mm, ft(M, nout)), (bias, ft(nout)), "#map4", [M, nout], "arith.addf", e2)
        ex = v()
        w("    %s = tensor.expand_shape %s [[0, 1], [2]] output_shape [%d, %d, %d] : %s into %s"
          % (ex, bb, B, T, nout, ft(M, nout), ft(B, T, nout)))
        return ex, fill

    args = [("x", ft(B, T, C)), ("ln1_w", ft(C)), ("ln1_b", ft(C)), ("attn_w", ft(C3, C)),
            ("attn_b", ft(C3)), ("proj_w", ft(C, C)), ("proj_b", ft(C)), ("ln2_w", ft(C)),
            ("ln2_b", ft(C)), ("fc_w", ft(C4, C)), ("fc_b", ft(C4)), ("mproj_w", ft(C, C4)),
            ("mproj_b", ft(C))]
    w("// KernelBench level 3 problem 44 (MiniGPTBlock), f32, batch %d, sequence %d," % (B, T))
    w("// n_embd %d = %d heads of %d, MLP %d; importer-shaped linalg on tensors." % (C, H, D, C4))
    w("// Generated by examples/kernelbench_l3_p44/gen_p44.py (its header says how")
    w("// and why); regenerate rather than edit.")
    w("#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>")
    w("#map1 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>")
    w("#map2 = affine_map<(d0, d1, d2) -> (d2)>")
    w("#map3 = affine_map<(d0, d1) -> (d0, d1)>")
    w("#map4 = affine_map<(d0, d1) -> (d1)>")
    w("#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>")
    w("#map6 = affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>")
    w("#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>")
    w('module attributes {torch.debug_module_name = "Model"} {')
    w("  func.func @p44_b%d(%s) -> %s {" % (B, ", ".join("%%%s: %s" % a for a in args), ft(B, T, C)))
    w("    %cst = arith.constant 5.000000e-01 : f32")
    w("    %cst_1 = arith.constant 1.000000e+00 : f32")
    w("    %%cst_gelu = arith.constant %s : f32" % f32_lit(math.sqrt(2.0 / math.pi)))
    w("    %cst_c = arith.constant 4.471500e-02 : f32")
    w("    %c3_i64 = arith.constant 3 : i64")
    w("    %cst_0 = arith.constant 0.000000e+00 : f32")
    w("    %cst_ninf = arith.constant 0xFF800000 : f32")
    w("    %%cst_n = arith.constant %s : f32" % f32_lit(float(C)))
    w("    %cst_eps = arith.constant 9.99999974E-6 : f32")
    w("    %%cst_scale = arith.constant %s : f32" % f32_lit(1.0 / math.sqrt(D)))
    w("    %%empty_row = tensor.empty() : %s" % ft(B, T, 1))
    w("    %%fill_row = linalg.fill ins(%%cst_0 : f32) outs(%%empty_row : %s) -> %s"
      % (ft(B, T, 1), ft(B, T, 1)))
    w("    %%empty_btc = tensor.empty() : %s" % ft(B, T, C))
    h1 = layer_norm("%x", "%ln1_w", "%ln1_b", "ln_1")
    qkv, _ = linear((h1, ft(B, T, C)), "%attn_w", "%attn_b", C, C3, "c_attn", None)
    w("    // ---- q, k, v = split(%d, dim=2); view(B, T, %d, %d).transpose(1, 2) ----" % (C, H, D))
    w("    // (k's second transpose(-2, -1) is composed into [0, 2, 3, 1] by canonicalize)")
    sl = []
    for i in range(3):
        s = v()
        w("    %s = tensor.extract_slice %s[0, 0, %d] [%d, %d, %d] [1, 1, 1] : %s to %s"
          % (s, qkv, i * C, B, T, C, ft(B, T, C3), ft(B, T, C)))
        sl.append(s)
    ex = []
    for s in sl:
        e = v()
        w("    %s = tensor.expand_shape %s [[0], [1], [2, 3]] output_shape [%d, %d, %d, %d] : %s into %s"
          % (e, s, B, T, H, D, ft(B, T, C), ft(B, T, H, D)))
        ex.append(e)
    e_bhtd, e_bhdt = v(), v()
    w("    %s = tensor.empty() : %s" % (e_bhtd, ft(B, H, T, D)))
    w("    %s = tensor.empty() : %s" % (e_bhdt, ft(B, H, D, T)))
    qt, vt, kt = v(), v(), v()
    w("    %s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [0, 2, 1, 3] "
      % (qt, ex[0], ft(B, T, H, D), e_bhtd, ft(B, H, T, D)))
    w("    %s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [0, 2, 1, 3] "
      % (vt, ex[2], ft(B, T, H, D), e_bhtd, ft(B, H, T, D)))
    w("    %s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [0, 2, 3, 1] "
      % (kt, ex[1], ft(B, T, H, D), e_bhdt, ft(B, H, D, T)))
    w("    // ---- att = (q @ k^T) * (1/sqrt(%d)): collapse, batch_matmul, expand ----" % D)
    qc, kc = v(), v()
    w("    %s = tensor.collapse_shape %s [[0, 1], [2], [3]] : %s into %s"
      % (qc, qt, ft(B, H, T, D), ft(BH, T, D)))
    w("    %s = tensor.collapse_shape %s [[0, 1], [2], [3]] : %s into %s"
      % (kc, kt, ft(B, H, D, T), ft(BH, D, T)))
    es, fs, sc = v(), v(), v()
    w("    %s = tensor.empty() : %s" % (es, ft(BH, T, T)))
    w("    %s = linalg.fill ins(%%cst_0 : f32) outs(%s : %s) -> %s" % (fs, es, ft(BH, T, T), ft(BH, T, T)))
    w("    %s = linalg.batch_matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
      % (sc, qc, kc, ft(BH, T, D), ft(BH, D, T), fs, ft(BH, T, T), ft(BH, T, T)))
    sx = v()
    w("    %s = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [%d, %d, %d, %d] : %s into %s"
      % (sx, sc, B, H, T, T, ft(BH, T, T), ft(B, H, T, T)))
    e4 = v()
    w("    %s = tensor.empty() : %s" % (e4, ft(B, H, T, T)))
    scaled = unary((sx, ft(B, H, T, T)), [B, H, T, T],
                   ["%r = arith.mulf %in, %cst_scale : f32", "linalg.yield %r : f32"],
                   in_map="#map5", out=e4)
    w("    // ---- att.masked_fill(bias[:, :, :T, :T] == 0, -inf): tril mask from iota ----")
    em, mask = v(), v()
    w("    %s = tensor.empty() : tensor<1x1x%dx%dxi1>" % (em, T, T))
    w("    %s = linalg.generic {indexing_maps = [#map5], iterator_types = [\"parallel\", "
      "\"parallel\", \"parallel\", \"parallel\"]} outs(%s : tensor<1x1x%dx%dxi1>) {" % (mask, em, T, T))
    w("    ^bb0(%out: i1):")
    w("      %i = linalg.index 2 : index")
    w("      %j = linalg.index 3 : index")
    w("      %r = arith.cmpi ugt, %j, %i : index")
    w("      linalg.yield %r : i1")
    w("    } -> tensor<1x1x%dx%dxi1>" % (T, T))
    sel = v()
    w("    %s = linalg.generic {indexing_maps = [#map5, #map6, #map5], iterator_types = [\"parallel\", "
      "\"parallel\", \"parallel\", \"parallel\"]} ins(%s, %s : %s, tensor<1x1x%dx%dxi1>) outs(%s : %s) {"
      % (sel, scaled, mask, ft(B, H, T, T), T, T, e4, ft(B, H, T, T)))
    w("    ^bb0(%in: f32, %in_0: i1, %out: f32):")
    w("      %r = arith.select %in_0, %cst_ninf, %in : f32")
    w("      linalg.yield %r : f32")
    w("    } -> %s" % ft(B, H, T, T))
    w("    // ---- softmax(att, dim=-1): amax(keepdim), sub, exp, sum(keepdim), div ----")
    er, fm = v(), v()
    w("    %s = tensor.empty() : %s" % (er, ft(B, H, T, 1)))
    w("    %s = linalg.fill ins(%%cst_ninf : f32) outs(%s : %s) -> %s" % (fm, er, ft(B, H, T, 1), ft(B, H, T, 1)))
    mx = reduce(sel, [B, H, T, T], "arith.maximumf", fm, rank4=True)
    sub = binary((sel, ft(B, H, T, T)), (mx, ft(B, H, T, 1)), "#map7", [B, H, T, T], "arith.subf", e4)
    ex_ = unary((sub, ft(B, H, T, T)), [B, H, T, T], ["%r = math.exp %in : f32", "linalg.yield %r : f32"],
                in_map="#map5", out=e4)
    fz = v()
    w("    %s = linalg.fill ins(%%cst_0 : f32) outs(%s : %s) -> %s" % (fz, er, ft(B, H, T, 1), ft(B, H, T, 1)))
    sm = reduce(ex_, [B, H, T, T], "arith.addf", fz, rank4=True)
    p = binary((ex_, ft(B, H, T, T)), (sm, ft(B, H, T, 1)), "#map7", [B, H, T, T], "arith.divf", e4)
    w("    // ---- y = att @ v; y.transpose(1, 2).contiguous().view(B, T, C) ----")
    pc, vc = v(), v()
    w("    %s = tensor.collapse_shape %s [[0, 1], [2], [3]] : %s into %s" % (pc, p, ft(B, H, T, T), ft(BH, T, T)))
    w("    %s = tensor.collapse_shape %s [[0, 1], [2], [3]] : %s into %s" % (vc, vt, ft(B, H, T, D), ft(BH, T, D)))
    eo, fo, o = v(), v(), v()
    w("    %s = tensor.empty() : %s" % (eo, ft(BH, T, D)))
    w("    %s = linalg.fill ins(%%cst_0 : f32) outs(%s : %s) -> %s" % (fo, eo, ft(BH, T, D), ft(BH, T, D)))
    w("    %s = linalg.batch_matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
      % (o, pc, vc, ft(BH, T, T), ft(BH, T, D), fo, ft(BH, T, D), ft(BH, T, D)))
    ox = v()
    w("    %s = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [%d, %d, %d, %d] : %s into %s"
      % (ox, o, B, H, T, D, ft(BH, T, D), ft(B, H, T, D)))
    et, ot = v(), v()
    w("    %s = tensor.empty() : %s" % (et, ft(B, T, H, D)))
    w("    %s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [0, 2, 1, 3] "
      % (ot, ox, ft(B, H, T, D), et, ft(B, T, H, D)))
    y = v()
    w("    // (the view(B, T, C) and c_proj's view(B*T, C) merged by canonicalize)")
    w("    %s = tensor.collapse_shape %s [[0, 1], [2, 3]] : %s into %s" % (y, ot, ft(B, T, H, D), ft(M, C)))
    a, fill_c = linear((y, ft(M, C)), "%proj_w", "%proj_b", C, C, "attn.c_proj", None)
    w("    // ---- x = x + attn(...) ----")
    h = binary(("%x", ft(B, T, C)), (a, ft(B, T, C)), "#map", [B, T, C], "arith.addf", "%empty_btc")
    h2 = layer_norm(h, "%ln2_w", "%ln2_b", "ln_2")
    f, _ = linear((h2, ft(B, T, C)), "%fc_w", "%fc_b", C, C4, "mlp.c_fc", None)
    w("    // ---- NewGELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) ----")
    eg = v()
    w("    %s = tensor.empty() : %s" % (eg, ft(B, T, C4)))
    g = unary((f, ft(B, T, C4)), [B, T, C4], [
        "%p = math.fpowi %in, %c3_i64 : f32, i64",
        "%m = arith.mulf %p, %cst_c : f32",
        "%s = arith.addf %in, %m : f32",
        "%u = arith.mulf %s, %cst_gelu : f32",
        "%t = math.tanh %u : f32",
        "%o = arith.addf %t, %cst_1 : f32",
        "%q = arith.mulf %o, %cst : f32",
        "%r = arith.mulf %in, %q : f32",
        "linalg.yield %r : f32"], out=eg)
    m2, _ = linear((g, ft(B, T, C4)), "%mproj_w", "%mproj_b", C4, C, "mlp.c_proj", fill_c)
    w("    // ---- x = x + mlp(...) ----")
    out = binary((h, ft(B, T, C)), (m2, ft(B, T, C)), "#map", [B, T, C], "arith.addf", "%empty_btc")
    w("    return %s : %s" % (out, ft(B, T, C)))
    w("  }")
    w("}")
    text = "\n".join(L) + "\n"
    # SSA names: %N with a letter-free body are fine; the body's %r/%p/... are
    # block-local and each region is its own scope.
    return text


def main(argv):
    if argv[1:] == ["--all"]:
        for b in (32, 128):
            open(os.path.join(HERE, "p44_b%d.mlir" % b), "w").write(model(b))
        return 0
    out = None
    if "-o" in argv:
        i = argv.index("-o")
        out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    text = model(int(argv[1]), int(argv[2]) if len(argv) == 3 else 512)
    if out:
        open(out, "w").write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
