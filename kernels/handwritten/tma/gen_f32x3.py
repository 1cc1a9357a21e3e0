#!/usr/bin/env python3
"""Writes the exact f32 GEMM variants on 3xTF32 wgmma (gen_gemm.py kind
`f32x3_wgmma_tma`, kernels/handwritten/gemm_wgmma_tma.py "3xTF32 mode") for
bench/tma/f32x3-device.sh:

    python3 kernels/handwritten/tma/gen_f32x3.py OUT_DIR [--only TAG|SG ...]

one `<sg>.<tag>.sm90a.mlir` per variant and `manifest-f32x3.json` (the
manifest-tma.json format) in OUT_DIR.  The subgraphs: the suite's two f32
cases (gen_gemm.py's sg_5beaf48efb3a6ac0, the GEMM+ReLU with W [K, N], and
the MiniGPT MLP's two GEMMs sg_ab992c66808cc4c2, sg_606c0e1c9184d8b4), and
bench/tma/f32x3.mlir's (outlined): the GEMM+ReLU at odd sizes (W [K, N])
and nn.Linear's x @ W^T + b (W [N, K]) at odd sizes and at P44's fc size.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import gen_gemm  # noqa: E402

EX = "../bench/tma/f32x3"
# (base subgraph of gen_gemm.SUBGRAPHS, new subgraph, fingerprint, signature, sizes, roles)
EXTRA = [
    ("sg_5beaf48efb3a6ac0", "sg_aea9b49628e57b4e",
     "aea9b49628e57b4e62f79c3810ad81fbaa451bd999623fe423b79271b2a4ab7f",
     "(tensor<300x264xf32>, tensor<264x520xf32>) -> tensor<300x520xf32>",
     dict(M=300, N=520, K=264), dict(a=0, b=[1], bias=None, res=None)),
    ("sg_775f56ec869d4b28", "sg_96e0ae69a9b5dd5a",
     "96e0ae69a9b5dd5ab60196aaf460b7d3390a4126679abfdc6e7ddba8c0d90f38",
     "(tensor<520x264xf32>, tensor<300x264xf32>, tensor<520xf32>) -> tensor<300x520xf32>",
     dict(M=300, N=520, K=264), dict(a=1, b=[0], bias=2, res=None, b_nk=True)),
    ("sg_775f56ec869d4b28", "sg_100c4c94b8d625b4",
     "100c4c94b8d625b45e0cebbb78d89268eab69780eb53bb7483de65fd99e84658",
     "(tensor<3072x768xf32>, tensor<16384x768xf32>, tensor<3072xf32>) -> tensor<16384x3072xf32>",
     dict(M=16384, N=3072, K=768), dict(a=1, b=[0], bias=2, res=None, b_nk=True)),
]

COOP = dict(BN=128, stages=3, pingpong=0, persistent=1, group_m=8)
# (sg, tag, overrides)
VARIANTS = [
    ("sg_5beaf48efb3a6ac0", "x3-coop", dict(COOP)),
    ("sg_5beaf48efb3a6ac0", "x3-coop-g16", dict(COOP, group_m=16)),
    ("sg_5beaf48efb3a6ac0", "x3-np", dict(COOP, persistent=0)),
    ("sg_5beaf48efb3a6ac0", "x3-terms1", dict(COOP, terms=1)),     # diagnostic: TF32 (rna) only
    ("sg_5beaf48efb3a6ac0", "x3-nopromo", dict(COOP, promote=0)),  # diagnostic: one accumulator over K
    ("sg_ab992c66808cc4c2", "x3-coop", dict(COOP)),
    ("sg_ab992c66808cc4c2", "x3-coop-g16", dict(COOP, group_m=16)),
    ("sg_606c0e1c9184d8b4", "x3-coop", dict(COOP)),
    ("sg_606c0e1c9184d8b4", "x3-coop-g16", dict(COOP, group_m=16)),
    ("sg_aea9b49628e57b4e", "x3-odd", dict(COOP, grid=4)),
    ("sg_96e0ae69a9b5dd5a", "x3-odd", dict(COOP, grid=4)),
    ("sg_100c4c94b8d625b4", "x3-coop", dict(COOP)),
    ("sg_100c4c94b8d625b4", "x3-terms1", dict(COOP, terms=1)),
    ("sg_100c4c94b8d625b4", "x3-nopromo", dict(COOP, promote=0)),
    # diagnostic: the TF32 mode's kernel (cvt.rna in place, 4 stages), on the same inputs as x3-terms1
    ("sg_100c4c94b8d625b4", "tf32-cvt", dict(kind="tf32_wgmma_tma", BN=128, stages=4, pingpong=0, persistent=1,
                                             group_m=8)),
]


def base(sg):
    for b, new, fp, sig, sizes, roles in EXTRA:
        if sg == new:
            cfg = dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == b))
            cfg.update(sg=new, fingerprint=fp, signature=sig, example=EX, **sizes, **roles)
            cfg["product"] = ("A[%(M)d,%(K)d] @ W[%(N)d,%(K)d]^T" if roles.get("b_nk") else
                              "A[%(M)d,%(K)d] @ B[%(K)d,%(N)d]") % sizes + " (exact f32, 3xTF32 wgmma)"
            cfg.pop("math_notes", None)
            return cfg
    return dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == sg))


def configs():
    out = []
    for sg, tag, ov in VARIANTS:
        cfg = base(sg)
        for k in ("BM", "BK", "WM", "WN", "WX", "KS", "minctasm"):
            cfg.pop(k, None)
        cfg.update(kind="f32x3_wgmma_tma", chips=["sm_90a"])
        cfg.pop("assumptions", None)
        cfg["product"] = re.sub(r"\(f32 FMA\)", "(exact f32, 3xTF32 wgmma)", cfg["product"])
        cfg.update(ov)
        out.append(("%s.%s.sm90a.mlir" % (sg, tag), tag, cfg))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--only", nargs="*", help="tags or subgraph names")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    manifest = []
    for fname, tag, cfg in configs():
        if args.only and tag not in args.only and cfg["sg"] not in args.only:
            continue
        kname, text, launch = gen_gemm.generate(cfg)
        with open(os.path.join(args.out_dir, fname), "w") as fh:
            fh.write(text)
        manifest.append(dict(subgraph=cfg["sg"], fingerprint=cfg["fingerprint"], example=cfg["example"],
                             signature=cfg["signature"], file=fname, kernel=kname, chips=cfg["chips"],
                             tag=tag))
    with open(os.path.join(args.out_dir, "manifest-f32x3.json"), "w") as fh:
        fh.write(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
