#!/usr/bin/env python3
"""stage-verify.py - stages, on this machine, what scripts/verify-corpus.sh
runs on the GPU machine: the worker, libcjson (the GPU machine has none),
reference plans and cubins, candidate cubins, and cases.tsv.

  scripts/stage-verify.py [--stage DIR] [--worker BIN] [--tools BINDIR]
                          [--good DIR] [--corpus-only]

Cases:
  corpus-*   lit_tests/verify/Inputs/corpus/*.mlir (gen_corpus.py) against
             the subgraphs of lit_tests/verify/Inputs/corpus-model.mlir and
             corpus-model-f16.mlir;
  good-*     the hand-written kernels of kernels/handwritten/manifest-*.json
             against their example subgraphs (--good reuses a directory
             staged by scripts/stage-compare.sh; without it, that script
             is run);
  bench-*    the RMSNorm subgraph (16384x4096 bf16) alone, for
             bench/verify_bench.py.
Only cubins, PTX and JSON travel (a few MB): .device/verify by default.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("stage-verify: %s failed:\n%s%s" % (" ".join(cmd), r.stdout[-2000:],
                                                     r.stderr[-2000:]))
    return r.stdout


def header(path, key):
    for line in open(path):
        m = re.match(r"// %s: ?(.*)$" % key, line)
        if m:
            return m.group(1).strip()
    return ""


def outline(tools, model, out):
    run([os.path.join(tools, "llm-fuse-opt"), "--llm-fuse-outline=remarks=false",
         model, "-o", out])
    classes = {}
    for m in re.finditer(r"func\.func private @(sg_[0-9a-f]+)\(.*?llm_fuse\.class = \"([a-z-]+)\"",
                         open(out).read()):
        classes[m.group(1)] = m.group(2)
    return classes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", default=os.path.join(ROOT, ".device", "verify"))
    ap.add_argument("--worker", default=os.path.join(ROOT, "build-verify", "bin",
                                                     "llm-fuse-verify"))
    ap.add_argument("--tools", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--good", default=None)
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--corpus-only", action="store_true")
    args = ap.parse_args()
    st = args.stage
    shutil.rmtree(st, ignore_errors=True)
    os.makedirs(os.path.join(st, "bin"))
    os.makedirs(os.path.join(st, "lib"))
    shutil.copy(args.worker, os.path.join(st, "bin"))
    shutil.copy("/usr/lib/x86_64-linux-gnu/libcjson.so.1", os.path.join(st, "lib"))
    cases = []

    # ---- the corpus -------------------------------------------------------
    tmp = os.path.join(st, "tmp")
    os.makedirs(tmp)
    classes = outline(args.tools, os.path.join(ROOT, "lit_tests/verify/Inputs/corpus-model.mlir"),
                      os.path.join(tmp, "corpus.mlir"))
    run([os.path.join(args.tools, "llm-fuse-reference"), "--build", "--chip", args.chip,
         "--out-dir", os.path.join(st, "ref"), os.path.join(tmp, "corpus.mlir")])
    # the f16 subgraph (its plan has a wide/ plan: the overflow boundary)
    classes.update(outline(args.tools,
                           os.path.join(ROOT, "lit_tests/verify/Inputs/corpus-model-f16.mlir"),
                           os.path.join(tmp, "corpus-f16.mlir")))
    run([os.path.join(args.tools, "llm-fuse-reference"), "--build", "--chip", args.chip,
         "--out-dir", os.path.join(st, "ref"), os.path.join(tmp, "corpus-f16.mlir")])
    by_sig = {}
    for plan in glob.glob(os.path.join(st, "ref", "*", "plan.json")):
        by_sig[json.load(open(plan))["signature"]] = os.path.relpath(plan, st)
    for f in sorted(glob.glob(os.path.join(ROOT, "lit_tests/verify/Inputs/corpus/*.mlir"))):
        name = os.path.basename(f)[:-5]
        sig = header(f, "SIGNATURE")
        d = os.path.join(st, "corpus", name)
        run([os.path.join(args.tools, "llm-fuse-build-kernel"), "--signature", sig,
             "--chip", args.chip, "--out-dir", d, "--quiet", f])
        cases.append(("corpus-" + name, by_sig[sig], os.path.relpath(d, st) + "/result.json",
                      header(f, "EXPECT"), header(f, "ARGS")))

    # ---- the hand-written kernels ------------------------------------------
    good = args.good
    if args.corpus_only:
        good = os.path.join(tmp, "none")
    elif not good:
        good = os.path.join(tmp, "compare")
        run([os.path.join(ROOT, "scripts", "stage-compare.sh"), good, args.chip])
    for e in [] if args.corpus_only else ("gemm_epilogue mlp_block swiglu rmsnorm layernorm layernorm_f32 softmax "
              "minigpt_block tosa/mlp_block tosa/rmsnorm tosa/softmax").split():
        classes.update(outline(args.tools, os.path.join(ROOT, "examples", e + ".mlir"),
                               os.path.join(tmp, "x.mlir")))
    for d in sorted(glob.glob(os.path.join(good, "sg_*"))):
        if not os.path.isfile(os.path.join(d, "candidate", "result.json")):
            continue
        sg = os.path.basename(d)
        dst = os.path.join(st, "good", sg)
        os.makedirs(os.path.join(dst, "candidate"))
        for f in glob.glob(os.path.join(d, "*.cubin")) + [os.path.join(d, "plan.json")]:
            shutil.copy(f, dst)
        for f in ("result.json", "kernel.cubin"):
            shutil.copy(os.path.join(d, "candidate", f), os.path.join(dst, "candidate"))
        # masked (causal) attention: the reference computes the masked-out
        # products, so NaN/Inf there reaches its output but not the math's
        extra = "--lenient-nonfinite" if classes.get(sg) == "attention-like" else ""
        cases.append(("good-" + sg, os.path.relpath(dst, st) + "/plan.json",
                      os.path.relpath(dst, st) + "/candidate/result.json", "accept", extra))
    shutil.rmtree(tmp)
    with open(os.path.join(st, "cases.tsv"), "w") as f:
        f.write("# name\tplan\tcandidate\texpected\textra worker arguments\n")
        for c in cases:
            f.write("\t".join(c) + "\n")
    with open(os.path.join(st, "bench.tsv"), "w") as f:
        for c in cases:
            if c[0] == "good-sg_07f0dc6cb70576f3":
                f.write("\t".join(("bench-rmsnorm-16384x4096",) + c[1:]) + "\n")
    n = sum(1 for c in cases if c[0].startswith("corpus-"))
    print("stage-verify: %d corpus case(s), %d good case(s) in %s" % (n, len(cases) - n, st))


if __name__ == "__main__":
    main()
