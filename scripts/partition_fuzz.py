#!/usr/bin/env python3
"""Random-DAG stress test of the partitioner's legality rules.

Generates functions whose ops (matmuls, reductions, softmax, elementwise
with one or two inputs, broadcasts, transposes) read random earlier values,
so groups could easily form cycles. Each module is outlined and the result
re-verified: a cycle would place a call before a value it uses, which the
verifier rejects as a dominance error. Also checks that every op of the
original function is accounted for (as a call argument chain: the outlined
module must still return values of the same types).

  scripts/partition_fuzz.py --opt build/bin/llm-fuse-opt --count 200 --seed 1
"""
import argparse
import random
import subprocess
import sys

N = 8  # every tensor is NxN f32 or N f32


def gen(rng, nops):
    vals = [("%a0", 2), ("%a1", 2), ("%v0", 1)]  # (name, rank)
    lines = []
    for i in range(nops):
        two = [v for v in vals if v[1] == 2]
        one = [v for v in vals if v[1] == 1]
        kind = rng.choice(["ew1", "ew2", "ew2", "mm", "red", "bcast", "tr",
                           "softmax", "rowop"])
        r = "%%t%d" % i
        if kind == "ew1":
            x = rng.choice(vals)
            shape = "tensor<%s>" % ("8x8xf32" if x[1] == 2 else "8xf32")
            lines.append("  %s = math.%s %s : %s" % (
                r, rng.choice(["exp", "tanh", "sqrt"]), x[0], shape))
            vals.append((r, x[1]))
        elif kind == "ew2":
            rank = rng.choice([1, 2])
            pool = two if rank == 2 else one
            x, y = rng.choice(pool), rng.choice(pool)
            shape = "tensor<%s>" % ("8x8xf32" if rank == 2 else "8xf32")
            lines.append("  %s = arith.%s %s, %s : %s" % (
                r, rng.choice(["addf", "mulf", "subf"]), x[0], y[0], shape))
            vals.append((r, rank))
        elif kind == "mm":
            x, y = rng.choice(two), rng.choice(two)
            lines.append("  %s_i = linalg.fill ins(%%z : f32) outs(%%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>" % r)
            lines.append("  %s = linalg.matmul ins(%s, %s : tensor<8x8xf32>, tensor<8x8xf32>) outs(%s_i : tensor<8x8xf32>) -> tensor<8x8xf32>" % (r, x[0], y[0], r))
            vals.append((r, 2))
        elif kind == "red":
            x = rng.choice(two)
            lines.append("  %s_i = linalg.fill ins(%%z : f32) outs(%%e1 : tensor<8xf32>) -> tensor<8xf32>" % r)
            lines.append("  %s = linalg.reduce ins(%s : tensor<8x8xf32>) outs(%s_i : tensor<8xf32>) dimensions = [1]\n"
                         "    (%%in: f32, %%acc: f32) {\n      %%s = arith.addf %%in, %%acc : f32\n      linalg.yield %%s : f32\n    }" % (r, x[0], r))
            vals.append((r, 1))
        elif kind == "bcast":
            x = rng.choice(one)
            lines.append("  %s = linalg.broadcast ins(%s : tensor<8xf32>) outs(%%e2 : tensor<8x8xf32>) dimensions = [1]" % (r, x[0]))
            vals.append((r, 2))
        elif kind == "tr":
            x = rng.choice(two)
            lines.append("  %s = linalg.transpose ins(%s : tensor<8x8xf32>) outs(%%e2 : tensor<8x8xf32>) permutation = [1, 0]" % (r, x[0]))
            vals.append((r, 2))
        elif kind == "softmax":
            x = rng.choice(two)
            lines.append("  %s = linalg.softmax dimension(1) ins(%s : tensor<8x8xf32>) outs(%%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>" % (r, x[0]))
            vals.append((r, 2))
        else:  # row-broadcast generic: x[i,j] * v[i]
            x, v = rng.choice(two), rng.choice(one)
            lines.append("  %s = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = [\"parallel\", \"parallel\"]} "
                         "ins(%s, %s : tensor<8x8xf32>, tensor<8xf32>) outs(%%e2 : tensor<8x8xf32>) {\n"
                         "  ^bb0(%%p: f32, %%q: f32, %%o: f32):\n    %%m = arith.mulf %%p, %%q : f32\n    linalg.yield %%m : f32\n  } -> tensor<8x8xf32>" % (r, x[0], v[0]))
            vals.append((r, 2))
    # Return a random handful of values (some used elsewhere too).
    outs = rng.sample(vals[3:], min(len(vals) - 3, rng.randint(1, 4)))
    types = ", ".join("tensor<8x8xf32>" if v[1] == 2 else "tensor<8xf32>" for v in outs)
    text = ["#id = affine_map<(i, j) -> (i, j)>", "#row = affine_map<(i, j) -> (i)>",
            "func.func @f(%%a0: tensor<8x8xf32>, %%a1: tensor<8x8xf32>, %%v0: tensor<8xf32>) -> (%s) {" % types,
            "  %z = arith.constant 0.0 : f32",
            "  %e1 = tensor.empty() : tensor<8xf32>",
            "  %e2 = tensor.empty() : tensor<8x8xf32>"]
    text += lines
    text.append("  return %s : %s" % (", ".join(v[0] for v in outs), types))
    text.append("}")
    return "\n".join(text) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opt", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-group-ops", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    groups = 0
    for n in range(args.count):
        text = gen(rng, rng.randint(4, 40))
        opts = "remarks=false" + (" max-group-ops=%d" % args.max_group_ops
                                  if args.max_group_ops else "")
        r = subprocess.run([args.opt, "--llm-fuse-outline=" + opts],
                           input=text, capture_output=True, text=True)
        if r.returncode != 0:
            print("case %d: outline failed:\n%s\n--- input ---\n%s" % (
                n, r.stderr[-3000:], text))
            return 1
        v = subprocess.run([args.opt, "-o", "/dev/null"], input=r.stdout,
                           capture_output=True, text=True)
        if v.returncode != 0:
            print("case %d: outlined module does not verify:\n%s\n--- input ---\n%s" % (
                n, v.stderr[-3000:], text))
            return 1
        groups += r.stdout.count("func.func private @sg_")
    print("%d random modules outlined and verified (%d outlined functions)" % (
        args.count, groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
