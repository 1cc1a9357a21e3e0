#!/usr/bin/env python3
"""Prepares an ahead-of-time run of an example model on the GPU machine.

Here (the build machine, no GPU): takes the example's small or full-size
variant (scripts/cpu_equivalence.py's substitution table), compiles it with
llm-fuse-compile into model.o + model.h, writes its inputs as raw files
(in<i>.bin: cpu_equivalence.py's pseudo-random values, a hash of argument
and element index, in [-1, 1]) and the CPU reference outputs (ref<j>.bin:
the same model on the same inputs through the upstream CPU pipeline and
mlir-runner-22, exact f32 bits), and copies the runtime library, its header
and driver.c beside them. bench/aot/run-device.sh then builds and runs the
driver there. f32 models only.

  bench/aot/prepare.py --build build-aot --out .device/aot [--size small]
"""
import argparse
import math
import os
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "scripts"))
import cpu_equivalence as ce  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory")
    ap.add_argument("--out", required=True, help="where the run's files go")
    ap.add_argument("--example", default="minigpt_block")
    ap.add_argument("--size", choices=["small", "full"], default="small")
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--compile-args", default="",
                    help="extra llm-fuse-compile arguments")
    args = ap.parse_args()

    spec = ce.EXAMPLES[args.example]
    with open(os.path.join(SRC, spec["file"])) as f:
        text = f.read()
    if args.size == "small":
        text = ce.make_small(args.example, spec, text)
    os.makedirs(args.out, exist_ok=True)
    model = os.path.join(args.out, "model.mlir")
    ce.write(model, text)
    entry, arg_types, result_types = ce.find_entry(text, spec.get("func"))
    for t in arg_types + result_types:
        if ce.parse_tensor_type(t)[1] != "f32":
            sys.exit("prepare.py: f32 models only (%s)" % t)

    # Inputs, exactly as cpu_equivalence's @main builds them.
    for a, t in enumerate(arg_types):
        shape, _ = ce.parse_tensor_type(t)
        vals = ce.input_values(a, math.prod(shape))
        with open(os.path.join(args.out, "in%d.bin" % a), "wb") as f:
            f.write(struct.pack("<%df" % len(vals), *vals))

    # The CPU reference: upstream CPU pipeline + mlir-runner-22.
    opt = ce.find_tool(["mlir-opt-22", "mlir-opt"])
    runner = ce.find_tool(["mlir-runner-22", "mlir-runner"])
    full = ce.insert_into_module(text, ce.make_main(entry, arg_types,
                                                    result_types, text))
    src = os.path.join(args.out, "reference.main.mlir")
    ce.write(src, full)
    lowered = os.path.join(args.out, "reference.lowered.mlir")
    t0 = time.time()
    ce.run_tool([opt, "--pass-pipeline=" + ce.CPU_PIPELINE, src, "-o",
                 lowered], "CPU lowering")
    out = ce.run_tool([runner, lowered, "-e", "main",
                       "-entry-point-result=void",
                       "-shared-libs=" + ",".join(ce.RUNNER_LIBS)],
                      "mlir-runner", timeout=1800)
    cpu_s = time.time() - t0
    os.remove(lowered)
    os.remove(src)  # the inputs as text: large, and in in<i>.bin already
    heads = list(ce._MEMREF_HEAD.finditer(out))
    if len(heads) != 2 * len(result_types):
        sys.exit("prepare.py: unexpected mlir-runner output")
    for j in range(len(result_types)):
        k = 2 * j + 1  # the i32 (bit pattern) view
        end = heads[k + 1].start() if k + 1 < len(heads) else len(out)
        bits = [int(v) for v in ce._NUMBER.findall(out[heads[k].end():end])]
        with open(os.path.join(args.out, "ref%d.bin" % j), "wb") as f:
            f.write(struct.pack("<%di" % len(bits), *bits))

    # Ahead-of-time compilation and what the device needs.
    t0 = time.time()
    cmd = [os.path.join(args.build, "bin", "llm-fuse-compile"), model, "-o",
           os.path.join(args.out, "model.o"), "--chip", args.chip]
    cmd += args.compile_args.split()
    subprocess.run(cmd, check=True)
    aot_s = time.time() - t0
    shutil.copy(os.path.join(args.build, "lib", "libllm_fuse_rt.a"), args.out)
    shutil.copy(os.path.join(SRC, "runtime", "mgpu", "llm_fuse_rt.h"),
                args.out)
    shutil.copy(os.path.join(HERE, "driver.c"), args.out)
    with open(os.path.join(args.out, "entry"), "w") as f:
        f.write(entry + "\n")
    print("prepared %s (%s): %s -> %s; CPU reference %.1f s, "
          "llm-fuse-compile %.1f s, in %s" % (
              args.example, args.size, ", ".join(arg_types),
              ", ".join(result_types), cpu_s, aot_s, args.out))


if __name__ == "__main__":
    main()
