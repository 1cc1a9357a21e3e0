#!/usr/bin/env python3
"""Writes the TMA-fed GEMM variants (gen_gemm.TMA_VARIANTS, the generator
kernels/handwritten/gemm_wgmma_tma.py) into this folder:

    python3 kernels/handwritten/tma/gen_tma.py [--out-dir DIR] [--only TAG|SG ...]
    python3 kernels/handwritten/tma/gen_tma.py --check   # checked-in files up to date?

one `<sg>.<tag>.sm90a.mlir` per variant (a gpu.module per
docs/kernel-contract.md, with tensor-map arguments) and `manifest-tma.json`
(the manifest-gemm.json format plus "tag"; kernels/handwritten/check_manifest.py
checks it against the outliner).  These are the candidates measured by
bench/tma/gemm-device.sh; the best of each subgraph is also the shipped
sm_90a kernel (gen_gemm.py's WGMMA_VARIANTS: manifest-gemm.json, the replay
set), byte for byte the same file as its tma-pp128 / tma-coop-g16 here.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import gen_gemm  # noqa: E402


# Odd sizes (bench/tma/gemm-odd.mlir, outlined): the suite's two subgraphs at
# M = 1000, N = 1032, K = 1000, for the masked paths (partial tiles, zero-filled
# boxes past M, N and K). (base subgraph, new subgraph, fingerprint, signature)
M_ODD, N_ODD, K_ODD = 1000, 1032, 1000
ODD = [
    ("sg_89b05da5eb3c1a6b", "sg_d454fd31932badb9",
     "d454fd31932badb9a8ceec49c86bb42d9d58f279cb7cc341ad57fe816431393f",
     "(tensor<1000x1000xbf16>, tensor<1000x1032xbf16>, tensor<1032xbf16>) -> tensor<1000x1032xbf16>"),
    ("sg_74ede17e00bf0352", "sg_19ba871f0e8fade3",
     "19ba871f0e8fade3bfd5766dbc362e7e6a47d6a0ec5a97e79e616ba0a1ed5676",
     "(tensor<1000x1000xbf16>, tensor<1000x1032xbf16>, tensor<1000x1032xbf16>) -> tensor<1000x1032xbf16>"),
]


# every kind of tile on the odd sizes: cooperative BN 256 / 128, ping-pong 128 and 64 rows;
# 16 CTAs, so that each walks several tiles (ping-pong alternation, barrier phases wrapping)
ODD_VARIANTS = [
    ("sg_d454fd31932badb9", "odd-coop", dict(BN=256, stages=4, pingpong=0, persistent=1, grid=16)),
    ("sg_d454fd31932badb9", "odd-pp128", dict(BM=128, BN=128, stages=6, pingpong=1, grid=16)),
    ("sg_d454fd31932badb9", "odd-pp64", dict(BM=64, BN=256, stages=5, pingpong=1, grid=16)),
    ("sg_19ba871f0e8fade3", "odd-coop", dict(BN=128, stages=4, pingpong=0, persistent=1, grid=16)),
    ("sg_19ba871f0e8fade3", "odd-pp128", dict(BM=128, BN=64, stages=6, pingpong=1, grid=16)),
    ("sg_19ba871f0e8fade3", "odd-pp64", dict(BM=64, BN=128, stages=5, pingpong=1, grid=16)),
]


def base(sg):
    for b, new, fp, sig in ODD:
        if sg == new:
            cfg = dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == b))
            cfg.update(sg=new, fingerprint=fp, signature=sig, M=M_ODD, N=N_ODD, K=K_ODD,
                       example="../bench/tma/gemm-odd",
                       product=re.sub(r"A\[\d+,\d+\] @ B(1?)\[\d+,\d+\]", lambda m: "A[%d,%d] @ B%s[%d,%d]" % (
                           M_ODD, K_ODD, m.group(1), K_ODD, N_ODD), cfg["product"]))
            return cfg
    return dict(next(c for c in gen_gemm.SUBGRAPHS if c["sg"] == sg))


def configs():
    out = []
    for sg, tag, ov in gen_gemm.TMA_VARIANTS + ODD_VARIANTS:
        cfg = base(sg)
        for k in ("BM", "BK", "WM", "WN", "minctasm"):
            cfg.pop(k, None)
        cfg.update(kind="bf16_wgmma_tma", chips=["sm_90a"], group_m=8)
        cfg.update(ov)
        out.append(("%s.%s.sm90a.mlir" % (sg, tag), tag, cfg))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--only", nargs="*", help="tags or subgraph names")
    ap.add_argument("--set", nargs="*", default=[], help="override a knob for --only, e.g. stages=5")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    outputs, manifest = {}, []
    for fname, tag, cfg in configs():
        if args.only and tag not in args.only and cfg["sg"] not in args.only and fname not in args.only:
            continue
        for kv in args.set:
            k, v = kv.split("=")
            cfg[k] = int(v) if v.lstrip("-").isdigit() else v
        kname, text, launch = gen_gemm.generate(cfg)
        outputs[fname] = text
        manifest.append(dict(subgraph=cfg["sg"], fingerprint=cfg["fingerprint"], example=cfg["example"],
                             signature=cfg["signature"], file=fname, kernel=kname, chips=cfg["chips"],
                             tag=tag))
    if not args.only and not args.set:
        outputs["manifest-tma.json"] = json.dumps(manifest, indent=2) + "\n"
    if args.check:
        stale = [f for f, t in sorted(outputs.items())
                 if not os.path.exists(os.path.join(args.out_dir, f)) or
                 open(os.path.join(args.out_dir, f)).read() != t]
        for f in stale:
            print("STALE %s (rerun kernels/handwritten/tma/gen_tma.py)" % f)
        print("%d file(s) checked, %d stale" % (len(outputs), len(stale)))
        return 1 if stale else 0
    os.makedirs(args.out_dir, exist_ok=True)
    for f, t in outputs.items():
        with open(os.path.join(args.out_dir, f), "w") as fh:
            fh.write(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
