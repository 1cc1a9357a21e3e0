#!/usr/bin/env python3
"""Partitioning/outlining speed: prints a table.

Times the llm-fuse-outline pass alone (MLIR's -mlir-timing, the pass's own
wall time, parsing and printing excluded) on
  * the MiniGPT block (examples/minigpt_block.mlir), and
  * generated modules of about 1k, 2k, 5k and 10k ops: one function holding
    a stack of transformer-like layers (RMSNorm as reduce + normalize,
    a GEMM with a bias + GELU epilogue, a GEMM with a bias + residual
    epilogue, a softmax over rows, elementwise chains), every layer feeding
    the next, so the dependence graph is as long as the module.
Each figure is the median of --repeat runs. The last column divides the
time by the op count: linear growth keeps it flat.

  bench/partition_bench.py [--opt build/bin/llm-fuse-opt] [--repeat 5]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

H = 64  # hidden size of the generated layers (shape does not matter here)
F = 256  # MLP width


def layer(i, x):
    """Returns (text, result name, op count) of one layer reading %x."""
    t = []
    p = "l%d_" % i
    t.append(f"""
  %{p}z = arith.constant 0.0 : f32
  %{p}er = tensor.empty() : tensor<32xf32>
  %{p}acc = linalg.fill ins(%{p}z : f32) outs(%{p}er : tensor<32xf32>) -> tensor<32xf32>
  %{p}ss = linalg.reduce ins(%{x} : tensor<32x{H}xf32>) outs(%{p}acc : tensor<32xf32>) dimensions = [1]
    (%in: f32, %a: f32) {{
      %m = arith.mulf %in, %in : f32
      %s = arith.addf %m, %a : f32
      linalg.yield %s : f32
    }}
  %{p}ex = tensor.empty() : tensor<32x{H}xf32>
  %{p}xn = linalg.generic {{indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%{x}, %{p}ss, %g : tensor<32x{H}xf32>, tensor<32xf32>, tensor<{H}xf32>) outs(%{p}ex : tensor<32x{H}xf32>) {{
  ^bb0(%v: f32, %s: f32, %w: f32, %o: f32):
    %n = arith.constant {float(H)} : f32
    %e = arith.constant 1.0e-06 : f32
    %d = arith.divf %s, %n : f32
    %de = arith.addf %d, %e : f32
    %r = math.rsqrt %de : f32
    %y = arith.mulf %v, %r : f32
    %yw = arith.mulf %y, %w : f32
    linalg.yield %yw : f32
  }} -> tensor<32x{H}xf32>
  %{p}ef = tensor.empty() : tensor<32x{F}xf32>
  %{p}af = linalg.fill ins(%{p}z : f32) outs(%{p}ef : tensor<32x{F}xf32>) -> tensor<32x{F}xf32>
  %{p}mf = linalg.matmul ins(%{p}xn, %w1 : tensor<32x{H}xf32>, tensor<{H}x{F}xf32>) outs(%{p}af : tensor<32x{F}xf32>) -> tensor<32x{F}xf32>
  %{p}h = linalg.generic {{indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%{p}mf, %b1 : tensor<32x{F}xf32>, tensor<{F}xf32>) outs(%{p}ef : tensor<32x{F}xf32>) {{
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = math.tanh %s : f32
    %u = arith.mulf %s, %t : f32
    linalg.yield %u : f32
  }} -> tensor<32x{F}xf32>
  %{p}mx = linalg.softmax dimension(1) ins(%{p}h : tensor<32x{F}xf32>) outs(%{p}ef : tensor<32x{F}xf32>) -> tensor<32x{F}xf32>
  %{p}sq = math.sqrt %{p}mx : tensor<32x{F}xf32>
  %{p}ng = arith.negf %{p}sq : tensor<32x{F}xf32>
  %{p}ap = linalg.fill ins(%{p}z : f32) outs(%{p}ex : tensor<32x{H}xf32>) -> tensor<32x{H}xf32>
  %{p}mp = linalg.matmul ins(%{p}ng, %w2 : tensor<32x{F}xf32>, tensor<{F}x{H}xf32>) outs(%{p}ap : tensor<32x{H}xf32>) -> tensor<32x{H}xf32>
  %{p}y = linalg.generic {{indexing_maps = [#id, #col, #id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%{p}mp, %b2, %{x} : tensor<32x{H}xf32>, tensor<{H}xf32>, tensor<32x{H}xf32>) outs(%{p}ex : tensor<32x{H}xf32>) {{
  ^bb0(%a: f32, %b: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %r : f32
    linalg.yield %t : f32
  }} -> tensor<32x{H}xf32>""")
    text = "".join(t)
    ops = len(re.findall(r"^  %\S+ = ", text, re.M))
    return text, p + "y", ops


def generate(target_ops):
    head = f"""#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @stack(%x0: tensor<32x{H}xf32>, %g: tensor<{H}xf32>,
    %w1: tensor<{H}x{F}xf32>, %b1: tensor<{F}xf32>,
    %w2: tensor<{F}x{H}xf32>, %b2: tensor<{H}xf32>) -> tensor<32x{H}xf32> {{"""
    body, x, ops, i = [], "x0", 0, 0
    while ops < target_ops:
        text, x, n = layer(i, x)
        body.append(text)
        ops += n
        i += 1
    return head + "".join(body) + f"\n  return %{x} : tensor<32x{H}xf32>\n}}\n", ops + 1


def pass_ms(opt, path):
    """Wall time of the llm-fuse-outline pass in ms, from -mlir-timing."""
    r = subprocess.run([opt, "--llm-fuse-outline=remarks=false", "-mlir-timing",
                        "-mlir-timing-display=list", path, "-o", os.devnull],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("llm-fuse-opt failed on %s:\n%s" % (path, r.stderr[-2000:]))
    for line in r.stderr.splitlines():
        if "LLMFuseOutline" in line or "llm-fuse-outline" in line.lower():
            m = re.match(r"\s*([0-9.]+)", line)
            if m:
                return float(m.group(1)) * 1000.0
    sys.exit("no pass timing in output:\n" + r.stderr[-2000:])


def count_ops(path):
    with open(path) as f:
        return len(re.findall(r"^  %\S+ = ", f.read(), re.M))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", default=os.path.join(ROOT, "build/bin/llm-fuse-opt"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = []
    gpt = os.path.join(ROOT, "examples/minigpt_block.mlir")
    rows.append(("MiniGPT block", count_ops(gpt), gpt))
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1000, 2000, 5000, 10000):
            text, ops = generate(n)
            path = os.path.join(tmp, "stack_%d.mlir" % n)
            with open(path, "w") as f:
                f.write(text)
            rows.append(("generated %dk" % (n // 1000), ops, path))
        print("| module | ops | llm-fuse-outline median ms | min ms | us per op |")
        print("|---|---:|---:|---:|---:|")
        for name, ops, path in rows:
            times = [pass_ms(args.opt, path) for _ in range(args.repeat)]
            med = statistics.median(times)
            print("| %s | %d | %.1f | %.1f | %.1f |" % (
                name, ops, med, min(times), 1000.0 * med / ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
