"""Outlines every example and runs llm-fuse-reference --build on it for one
chip; prints the tool's lines and FAILED for any non-zero exit.

  run_all.py OPT REFERENCE SRC_ROOT OUT_DIR CHIP
"""
import os
import subprocess
import sys

opt, ref, src, out, chip = sys.argv[1:6]
examples = ["gemm_epilogue", "mlp_block", "swiglu", "rmsnorm", "layernorm",
            "layernorm_f32", "softmax", "minigpt_block", "tosa/mlp_block",
            "tosa/rmsnorm", "tosa/softmax"]
os.makedirs(out, exist_ok=True)
for e in examples:
    mod = os.path.join(out, e.replace("/", "-") + ".outlined.mlir")
    subprocess.run([opt, "--llm-fuse-outline=remarks=false",
                    os.path.join(src, "examples", e + ".mlir"), "-o", mod],
                   check=True, stderr=subprocess.DEVNULL)
    r = subprocess.run([ref, "--build", "--chip", chip, "--out-dir",
                        os.path.join(out, chip), mod],
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        print("FAILED", e)
