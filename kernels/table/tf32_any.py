#!/usr/bin/env python3
"""tf32_any.py - the table's TF32 GEMM templates (precision "tf32"): the f32
GEMM + epilogue families of gemm_any.py (MiniGPT block, GEMM + ReLU; B is
[K, N]) and importer_any.py (torch-mlir nn.Linear, W read as stored [N, K];
TOSA, W [K, N]) with gen_gemm.py's tf32_mma kernel (gemm_tf32_mma.py:
mma.sync m16n8k8 on TF32-rounded operands, f32 accumulation, cp.async ring).

kernels/table/build.py imports this module (SPEC_MODULES) and writes these
entries with "precision": "tf32": the table gives them only to subgraphs
compiled with the pass option tf32=1 (before the exact entries), never to an
exact request (llm_client/table.h). Two entries per family:

  *-tf32      M masked (any M), N % 128 == 0, K % 32 == 0 and K >= 64
  *-tf32_nk   M, N and K masked (N and K multiples of 4), admitted only
              where the first refuses N or K

Tiling: CTA 128 x 128 x 32, 8 warps of 64 x 32 (4 x 4 m16n8k8 tiles), 3
stages (105 KiB of shared memory), GROUP_M a tune knob.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
import gen_gemm  # noqa: E402
import gemm_any  # noqa: E402
import importer_any  # noqa: E402

ARCHS = ["sm_80", "sm_90", "sm_90a"]
TILE = dict(BM=128, BN=128, BK=32, WM=64, WN=32, stages=3, group_m=8)
GEMM_ANY = ["attn_proj", "fc", "gemm_relu", "proj", "qkv"]  # the f32 families


def _tf32(c, sym, nk):
    c = {k: v for k, v in c.items() if k not in ("KS", "WX", "minctasm", "fingerprint", "math_notes")}
    c.update(TILE, kind="tf32_mma")
    c["product"] = c["product"].replace("f32 FMA", "TF32 tensor cores, f32 accumulate")
    if nk:
        c["mask_nk"] = 4
        c["require"] = "%s %% %d != 0 || %s %% %d != 0 || %s < %d" % (
            sym["N"], TILE["BN"], sym["K"], TILE["BK"], sym["K"], TILE["BK"] * (TILE["stages"] - 1))
    return c


def _finish(text, sym, ps, what):
    lines = text[text.index("gpu.module"):].split("\n")
    free = sorted(set(sym.values()), key=lambda k: int(k[1:]))
    roles = ", ".join("%s = %s" % (r, sym[r]) for r in ("M", "N", "K"))
    head = [lines[0],
            "  // Pattern-table template: kernels/table/tf32_any.py (gen_gemm.py tf32_mma, %s)." % what[0],
            "  // Precision tf32 (pass option tf32=1 only): %s; %s." % (roles, what[1])] + \
           ["  // llm-fuse.template-size %s" % k for k in free]
    return "\n".join(head + lines[1:]), [None if "S%d" % i in free else ps["S%d" % i] for i in range(len(ps))]


def _what(nk):
    return ("M, N and K are masked (N and K multiples of 4, used where the tf32 entry refuses them)" if nk
            else "M is masked (any M), N and K as the requirements say")


def _render_gemm_any(name, nk):
    src, sdt, rows, sg = gemm_any.FAMILIES[name][:4]
    base = dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == sg))

    def render(g):
        import re
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in dict(M=gemm_any.EX_M, N=base["N"], K=base["K"]).items()}
        dims = {base["N"]: sym["N"], base["K"]: sym["K"], base["M"]: sym["M"]}
        c = dict(base)
        c.update(M=sym["M"], N=sym["N"], K=sym["K"], sg="tf_%s_f32" % name,
                 signature=re.sub(r"(?<=[<x])(\d+)(?=x)",
                                  lambda m: "{{%s}}" % dims[int(m.group(1))] if int(m.group(1)) in dims
                                  else m.group(1), base["signature"]),
                 product=re.sub(r"\d+", lambda m: dims.get(int(m.group(0)), m.group(0)), base["product"]))
        _, text, _ = gen_gemm.generate(_tf32(c, sym, nk))
        return _finish(text, sym, ps, ("%s tiling of %s" % (name, sg), _what(nk)))
    return render


def _render_importer(name, nk):
    ex = importer_any.GEMMS[name][2]

    def render(g):
        ps = g["pattern_sizes"]
        by_value = {v: k for k, v in ps.items()}
        sym = {r: by_value[v] for r, v in ex.items()}
        c = importer_any._gemm_cfg(name, sym)
        _, text, _ = gen_gemm.generate(_tf32(c, sym, nk))
        return _finish(text, sym, ps, ("importer %s%s" % (
            name, ", B read as stored N x K" if c.get("b_nk") else ""), _what(nk)))
    return render


def templates():
    out = []
    for name in GEMM_ANY:
        src, sdt, rows, sg = gemm_any.FAMILIES[name][:4]
        base = next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == sg)
        for nk in (False, True):
            tag = "tf32_nk" if nk else "tf32"
            out.append(dict(
                name="tf32-any-%s-f32-%s" % (name.replace("_", ""), tag),
                example=gemm_any.example_text(name, "f32"), pick=gemm_any._pick(base),
                render=_render_gemm_any(name, nk), archs=ARCHS, precision="tf32",
                source="kernels/table/tf32_any.py %s f32 %s (gen_gemm.py tf32_mma, %s tiling; from %s at "
                       "M = %d)" % (name, tag, sg, src, gemm_any.EX_M)))
    for name in importer_any.GEMMS:
        src = importer_any.GEMMS[name][0]
        for nk in (False, True):
            tag = "tf32_nk" if nk else "tf32"
            out.append(dict(
                name="tf32-importer-%s-f32-%s" % (name.replace("_", ""), tag),
                example=importer_any._read(src), pick=importer_any._gemm_pick(name),
                render=_render_importer(name, nk), archs=ARCHS, precision="tf32",
                source="kernels/table/tf32_any.py importer %s f32 %s (gen_gemm.py tf32_mma; from %s at "
                       "M = 128)" % (name, tag, src)))
    return out
