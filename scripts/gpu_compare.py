#!/usr/bin/env python3
"""gpu_compare.py - runs each hand-written kernel and its subgraph's reference
plan on the GPU with the same random inputs and compares the outputs.

A stop-gap check of the hand-written kernels (the real verifier, with
poisoning, checksums, several trials and timing, is the verification
issue's worker). Needs CuPy and NumPy; reads only files built elsewhere:

  DIR/<subgraph>/plan.json, k<N>.cubin   (llm-fuse-reference --build)
  DIR/<subgraph>/candidate/result.json, kernel.cubin
                                          (llm-fuse-build-kernel --out-dir)

usage: gpu_compare.py DIR [--seed N]   prints one line per subgraph and a
summary; exit 1 if any output differs beyond tolerance or fails to run.
Times are CUDA-event medians of 5 runs after a warm-up, on this GPU.
"""
import json
import os
import re
import sys

import cupy as cp
import numpy as np

DT = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
      "bf16": np.uint16, "i32": np.int32, "i64": np.int64, "i8": np.int8,
      "i1": np.uint8, "i16": np.int16}


def parse_type(t):
    m = re.match(r"(?:memref|tensor)<((?:\d+x)*)(\w+)>", t)
    dims = [int(d) for d in m.group(1).split("x") if d]
    return dims, m.group(2)


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(f):
    u = f.astype(np.float32).view(np.uint32)
    return ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)


def random_input(rng, dims, et):
    n = int(np.prod(dims)) if dims else 1
    x = rng.standard_normal(n, dtype=np.float32)
    if et == "bf16":
        return f32_to_bf16(x).reshape(dims)
    if et.startswith("i"):
        return rng.integers(-8, 8, n).astype(DT[et]).reshape(dims)
    return x.astype(DT[et]).reshape(dims)


def as_f64(a, et):
    return (bf16_to_f32(a) if et == "bf16" else a).astype(np.float64)


def signature_types(sig):
    ins, outs = sig.split("->")
    return re.findall(r"tensor<[^>]*>", ins), re.findall(r"tensor<[^>]*>", outs)


def scalar(arg):
    t = arg["type"]
    if t == "index" or t.startswith("i"):
        return np.int64(arg["value"]) if t in ("index", "i64") else np.int32(arg["value"])
    if t == "f32":
        return np.array([int(arg["bits"], 16)], dtype=np.uint32).view(np.float32)[0]
    if t == "f64":
        return np.array([int(arg["bits"], 16)], dtype=np.uint64).view(np.float64)[0]
    raise ValueError("scalar type " + t)


def run_plan(d, plan, inputs, outputs, timing):
    temps = []
    for t in plan["temps"]:
        buf = cp.zeros(t["bytes"], dtype=np.uint8)
        if "init_hex" in t:
            init = np.frombuffer(bytes.fromhex(t["init_hex"]), dtype=np.uint8)
            buf.set(np.resize(init, t["bytes"]))
        temps.append(buf)
    funcs = {k: cp.RawModule(path=os.path.join(d, k + ".cubin")).get_function(k)
             for k in plan["kernels"]}

    def step_all():
        for st in plan["steps"]:
            bufs = []
            for a in st["args"]:
                k = a["kind"]
                bufs.append(inputs[a["index"]] if k == "input" else
                            outputs[a["index"]] if k == "output" else
                            temps[a["index"]] if k == "temp" else scalar(a))
            if st["op"] == "copy":
                cp.cuda.runtime.memcpy(bufs[1].data.ptr, bufs[0].data.ptr,
                                       min(bufs[0].nbytes, bufs[1].nbytes),
                                       cp.cuda.runtime.memcpyDeviceToDevice)
            else:
                funcs[st["kernel"]](tuple(st["grid"]), tuple(st["block"]), tuple(bufs))
    return timed(step_all, timing)


def timed(fn, timing):
    fn()
    cp.cuda.Device().synchronize()
    if not timing:
        return None
    ts = []
    for _ in range(5):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(ts))


def main():
    root = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 1
    rng = np.random.default_rng(seed)
    bad = 0
    rows = []
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        cand = os.path.join(d, "candidate")
        if not os.path.isfile(os.path.join(cand, "result.json")):
            continue
        plan = json.load(open(os.path.join(d, "plan.json")))
        res = json.load(open(os.path.join(cand, "result.json")))
        ins, outs = signature_types(plan["signature"])
        host_in = [random_input(rng, *parse_type(t)) for t in ins]
        dev_in = [cp.asarray(h) for h in host_in]
        out_t = [parse_type(t) for t in outs]
        ref_out = [cp.zeros(dims, dtype=DT[et]) for dims, et in out_t]
        cand_out = [cp.full(dims, 0x7FC0 if et == "bf16" else np.nan, dtype=DT[et])
                    if et in ("bf16", "f32", "f16", "f64") else cp.zeros(dims, dtype=DT[et])
                    for dims, et in out_t]
        try:
            t_ref = run_plan(d, plan, dev_in, ref_out, True)
            fn = cp.RawModule(path=os.path.join(cand, "kernel.cubin")).get_function(res["kernel"])
            smem = res.get("dynamic_shared_memory", 0)
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            args = tuple(dev_in + cand_out)
            t_cand = timed(lambda: fn(tuple(res["grid"]), tuple(res["block"]), args,
                                      shared_mem=smem), True)
        except Exception as e:  # a launch failure is a failed kernel
            print("%s: ERROR %s" % (name, e))
            bad += 1
            continue
        worst, ok = 0.0, True
        for (dims, et), r, c in zip(out_t, ref_out, cand_out):
            rr, cc = as_f64(cp.asnumpy(r), et), as_f64(cp.asnumpy(c), et)
            tol_rel = 2e-2 if et in ("bf16", "f16") else 1e-3
            nan_r, nan_c = int(np.isnan(rr).sum()), int(np.isnan(cc).sum())
            if nan_r or nan_c:
                print("  %s: NaN in reference %d, in hand-written %d of %d" % (
                    name, nan_r, nan_c, rr.size))
            # Same rule as the verifier: |c - r| <= rtol*|r| + atol, with
            # atol = rtol * mean|r| (long sums have near-zero outputs whose
            # relative error means nothing), written so NaN fails.
            atol = tol_rel * float(np.nanmean(np.abs(rr[np.isfinite(rr)]))) if np.isfinite(rr).any() else 0.0
            bound = tol_rel * np.abs(rr) + atol
            diff = np.abs(rr - cc)
            both_inf = np.isinf(rr) & (rr == cc)
            good = (diff <= bound) | both_inf
            ratio = np.where(both_inf, 0.0, diff / bound)
            w = float(np.nanmax(ratio)) if ratio.size and not np.isnan(ratio).all() else float('nan')
            worst = max(worst, w)
            nbad = int((~good).sum())
            if nbad:
                i = int(np.argmax(np.where(good, -1.0, np.nan_to_num(ratio, nan=np.inf))))
                print("  %s: %d of %d elements out of tolerance; worst at flat index %d: "
                      "reference %.6g, hand-written %.6g (atol %.3g)" % (
                          name, nbad, rr.size, i, rr.flat[i], cc.flat[i], atol))
            ok &= nbad == 0
        bad += not ok
        rows.append((name, ok, worst, t_ref, t_cand))
        print("%s: %s max err/tolerance %.2f  reference %.3f ms  hand-written %.3f ms  (%.1fx)" % (
            name, "OK" if ok else "MISMATCH", worst, t_ref, t_cand, t_ref / t_cand))
    print("%d subgraph(s) compared, %d failed" % (len(rows) + bad - sum(1 for r in rows if not r[1]), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
