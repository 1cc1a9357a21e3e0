"""Builds every kernel lf_synth_tool --out-dir wrote (NAME.mlir with its
signature in NAME.sig) with llm-fuse-build-kernel for sm_90 and prints, per
kernel in name order, `NAME KIND cubin|ptx v4-loads=N`: the build's kind,
whether ptxas made a cubin, and how many 16-byte global loads
(ld.global.nc.v4.b32) the PTX holds."""
import json
import os
import subprocess
import sys

out = sys.argv[1]
for name in sorted(f[:-5] for f in os.listdir(out) if f.endswith(".mlir")):
    sig = open(os.path.join(out, name + ".sig")).read().strip()
    bdir = os.path.join(out, name + ".build")
    p = subprocess.run(["llm-fuse-build-kernel", "--signature", sig, "--chip",
                        "sm_90", "--out-dir", bdir,
                        os.path.join(out, name + ".mlir")],
                       capture_output=True, text=True)
    r = json.loads(p.stdout)
    ptx = open(os.path.join(bdir, "kernel.ptx")).read() if r["ok"] else ""
    print(name, r["kind"], "cubin" if r.get("cubin") else "ptx",
          "v4-loads=%d" % ptx.count("ld.global.nc.v4.b32"))
