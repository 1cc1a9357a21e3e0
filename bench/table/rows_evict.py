#!/usr/bin/env python3
"""rows_evict.py - why the wide f32 row max (036: 1664 x 14336, 95 MB read)
and the 512-row one (027) stay behind torch.compile: the L2 state the
timing leaves and the loads' cache policy.

bench/gpu/run.py's Timer flushes the L2 with a 256 MiB memset before each
timed call: the L2 is then full of dirty lines, and a kernel whose loads
evict them pays their write-back inside its own time. Inductor's reduction
loads x with eviction_policy='evict_first' (its generated code, in
rows-speed-device.sh's OUT/inductor.log); the table's kernels load with
plain ld.global.nc (no policy: the kernel contract has no cache-hinted load
op). This times, on the same inputs, under two flushes ("dirty": the
memset; "clean": a 256 MiB read, which leaves clean lines):
  - for the row maxes, a Triton row max shaped like Inductor's (XBLOCK 1,
    R0_BLOCK 2048, 8 warps) with eviction_policy '' and 'evict_first';
  - every staged variant of the table entry (rows_tune.py's stage), each
    checked against torch eager first;
  - torch.compile of the subgraph's translation and torch copy_ of the
    same bytes.
The small cases (005, 022, 038, 024) are in it for the same question: does
the gap to torch.compile close when the flush leaves no dirty lines?

  python3 bench/table/rows_evict.py STAGE OUT.json   (GPU machine)
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = ["036_rowmax_r1664_h14336", "027_rowmax_r512", "005_rmsnorm_r1024_h2560",
         "022_layernorm_f32_r6_h768", "038_rmsnorm_r43", "024_minigpt_mlp_r17"]


def main():
    import torch
    import triton
    import triton.language as tl
    sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
    os.environ.pop("TORCH_LOGS", None)
    from run import Runtime, Timer, launch_built, time_variants  # noqa: E402

    @triton.jit
    def rowmax_plain(x, y, N: tl.constexpr, RB: tl.constexpr):
        r = tl.program_id(0)
        acc = tl.full([RB], float("-inf"), tl.float32)
        for off in range(0, N, RB):
            c = off + tl.arange(0, RB)
            v = tl.load(x + r * N + c, mask=c < N, other=float("-inf"))
            acc = tl.maximum(acc, v)
        tl.store(y + r, tl.max(acc, 0))

    @triton.jit
    def rowmax_ef(x, y, N: tl.constexpr, RB: tl.constexpr):
        r = tl.program_id(0)
        acc = tl.full([RB], float("-inf"), tl.float32)
        for off in range(0, N, RB):
            c = off + tl.arange(0, RB)
            v = tl.load(x + r * N + c, mask=c < N, other=float("-inf"),
                        eviction_policy="evict_first")
            acc = tl.maximum(acc, v)
        tl.store(y + r, tl.max(acc, 0))

    class Clean(Timer):
        """The flush as a read: the L2 ends full of clean lines."""

        def __init__(self):
            super().__init__()
            self.flush.random_()
            self.sink = torch.empty((), dtype=torch.int64, device="cuda")

        def once(self, fn):
            return self.series(fn, 1)[0]

        def series(self, fn, n):
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(n)]
            f = self.flush.view(torch.int64)
            for a, b in ev:
                torch.sum(f, dim=0, out=self.sink)
                a.record()
                fn()
                b.record()
            torch.cuda.synchronize()
            return [a.elapsed_time(b) for a, b in ev]

    stage = os.path.abspath(sys.argv[1])
    cases = {c["model"]: c for c in json.load(open(os.path.join(stage, "cases.json")))["cases"]}
    rt = Runtime(os.path.join(stage, "libllm_fuse_rt.so"))
    timers = {"dirty": Timer(), "clean": Clean()}
    res = {}

    def one(model, c):
            import importlib.util
            import tempfile
            from run import DT, compare  # noqa: E402
            mpath = os.path.join(tempfile.gettempdir(), "lf_ev_%s.py" % c["sg"])
            with open(mpath, "w") as fh:
                fh.write("import torch\n" + c["source"])
            spec = importlib.util.spec_from_file_location("lf_ev_" + c["sg"], mpath)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            fn = mod.subgraph
            g = torch.Generator(device="cuda").manual_seed(5)
            ins = [(torch.rand(s_, generator=g, dtype=torch.float32, device="cuda") * 2 - 1)
                   .to(DT[e]) for s_, e in c["args"]]
            ref = fn(*ins)
            outs = [torch.empty(s_, dtype=DT[e], device="cuda") for s_, e in c["results"]]
            runs = {}
            if "rowmax" in model:
                R, N = c["args"][0][0]
                x, y = ins[0], outs[0]
                for ev, kern in (("", rowmax_plain), ("evict_first", rowmax_ef)):
                    def tr(kern=kern):
                        kern[(R,)](x, y, N, 2048, num_warps=8)
                    tr()
                    torch.cuda.synchronize()
                    if torch.equal(y, ref[0]):
                        runs["triton rowmax%s" % (" " + ev if ev else "")] = tr
                    else:
                        print("  triton rowmax %s: wrong result, not timed" % ev)
            cf = torch.compile(fn)
            cf(*ins)
            runs["compile"] = lambda: cf(*ins)
            half = c["bytes"] // 2
            cs = torch.empty(half, dtype=torch.uint8, device="cuda").random_()
            cd = torch.empty_like(cs)
            runs["copy"] = lambda: cd.copy_(cs)
            for v in c["variants"]:
                run = launch_built(rt, os.path.join(stage, v["dir"]), ins, outs)
                for o in outs:
                    o.fill_(float("nan"))
                run()
                torch.cuda.synchronize()
                rt.check(v["tag"])
                if all(ok for ok, _, _ in (compare(o, r) for o, r in zip(outs, ref))):
                    runs["ours " + v["tag"]] = run
            rec = res[model] = {}
            for tn, tm in timers.items():
                ts = time_variants(tm, runs, 60)
                rec[tn] = {k: s["median"] for k, s in ts.items()}
            print("%s (%d MB moved): median ms, L2 flushed by a memset (dirty) / by a read (clean)"
                  % (model, c["bytes"] // 1000000))
            for k in runs:
                d, cl = rec["dirty"][k], rec["clean"][k]
                print("  %-34s dirty %.4f (%4.0f GB/s)  clean %.4f (%4.0f GB/s)" % (
                    k, d, c["bytes"] / d / 1e6, cl, c["bytes"] / cl / 1e6))

    for model in CASES:
        c = cases.get(model)
        if not c:
            continue
        try:
            one(model, c)
        except Exception:  # noqa: BLE001
            import traceback
            print("%s: failed\n%s" % (model, traceback.format_exc()[-600:]), flush=True)
        torch.cuda.empty_cache()
    with open(sys.argv[2], "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
