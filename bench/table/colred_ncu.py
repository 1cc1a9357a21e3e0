#!/usr/bin/env python3
"""colred_ncu.py - the kernel-only durations of the small leading-dimension
reductions (where both sides sit at the launch floor of the event timing):
ours (each staged table variant, bench/table/colred_stage.py) and
torch.compile's kernels, read by Nsight Compute.

  ncu --profile-from-start off --clock-control none --csv \\
      --metrics gpu__time_duration.sum --log-file OUT/ncu.csv \\
      python3 bench/table/colred_ncu.py run STAGE OUT CASE...
  python3 bench/table/colred_ncu.py parse OUT

`run` compiles and warms everything first, then, between
cudaProfilerStart and Stop, launches every kernel REPS times in a recorded
order (OUT/ncu_order.json), synchronizing after each; `parse` matches
ncu's rows (in launch order) to that order and prints the median
duration of each (ours: our kernel; compile: every kernel of one call,
summed)."""
import json
import os
import statistics
import sys

REPS = 5


def run(stage, out, names):
    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.join(here, "..", "gpu"))
    from colred_torch import fn  # noqa: E402
    from run import DT, Runtime, launch_built  # noqa: E402
    cases = [c for c in json.load(open(os.path.join(stage, "cases.json"))) if c["case"] in names]
    rt = Runtime(os.path.join(stage, "lib", "libllm_fuse_rt.so"))
    calls = []
    keep = []
    for i, c in enumerate(cases):
        g = torch.Generator(device="cuda").manual_seed(1000 + i)
        nin = 2 if c["family"] == "coldiff" else 1
        ins = [(torch.rand(*c["sizes"], generator=g, device="cuda") * 2 - 1).to(DT[c["dtype"]])
               for _ in range(nin)]
        f = fn(c["family"])
        ref = f(*ins)
        outs = [torch.empty_like(ref)]
        keep.append((ins, outs))
        for tag in sorted(c["variants"]):
            if tag.startswith("v") or tag.startswith("o"):
                r = launch_built(rt, os.path.join(stage, c["sg"], tag), ins, outs)
                r()
                calls.append((c["case"], tag, c["variants"][tag], r))
        torch._dynamo.reset()
        cf = torch.compile(f, dynamic=False)
        cf(*ins)
        cf(*ins)
        calls.append((c["case"], "compile", "", lambda cf=cf, ins=ins: cf(*ins)))
    torch.cuda.synchronize()
    order = []
    torch.cuda.profiler.start()
    for case, tag, label, call in calls:
        for _ in range(REPS):
            call()
            torch.cuda.synchronize()
            order.append([case, tag, label])
    torch.cuda.profiler.stop()
    json.dump(order, open(os.path.join(out, "ncu_order.json"), "w"))


def parse(out):
    import csv
    rows = []
    lines = open(os.path.join(out, "ncu.csv")).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    for r in csv.DictReader(lines[start:]):
        if r.get("Metric Name") == "gpu__time_duration.sum":
            unit = r.get("Metric Unit", "ns")
            v = float(r["Metric Value"].replace(",", ""))
            v = v / 1000.0 if unit in ("ns", "nsecond") else v * 1000.0 if unit in ("ms", "msecond") \
                else v
            rows.append((int(r["ID"]), r["Kernel Name"], v))
    rows.sort()
    order = json.load(open(os.path.join(out, "ncu_order.json")))
    # walk both lists: ours is one kernel, compile's call the Triton
    # kernels in a row (Inductor's are named triton_*)
    res, i = {}, 0
    for case, tag, label in order:
        k = (case, tag, label)
        if tag != "compile":
            res.setdefault(k, []).append(rows[i][2])
            i += 1
            continue
        t = 0.0
        while i < len(rows) and rows[i][1].startswith("triton"):
            t += rows[i][2]
            i += 1
        res.setdefault(k, []).append(t)
    print("kernel durations (ncu gpu__time_duration, us, median of %d)" % REPS)
    for k, v in res.items():
        print("%-32s %-8s %-26s %.2f" % (k[0], k[1], k[2], statistics.median(v)))
    print("(%d kernels profiled, %d matched)" % (len(rows), i))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        parse(sys.argv[2])
