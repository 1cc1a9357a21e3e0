#!/usr/bin/env python3
"""torch_time.py - the torch half of bench/table/heldout-device.sh: times
every held-out subgraph's torch translation (bench/table/torch_ref.py,
made on the build machine by `heldout.py device-script` into
HELDOUT/torch/manifest.json) in torch eager and torch.compile (default
mode) on this GPU, on the subgraph's own sizes and element types, and
measures the device-to-device copy bandwidth once.

  python3 bench/table/torch_time.py MANIFEST OUT.json [--budget-ms 100]
          [--compile-budget-s 240] [--only REGEX] [--no-compile]

The timing method is bench/gpu/run.py's (its Timer, stats and
time_variants, copied here so that this script imports nothing but torch):
CUDA events around one call, a 256 MiB memset before each (an L2 flush;
--flush clean adds a 256 MiB read-only sweep after it, so that the L2
holds no dirty lines when the call starts, and --flush both times
everything under each),
a warm-up call first, then iterations filling --budget-ms per variant
(3 to 200) spread over 3 interleaved rounds; the median is reported. The
copy bandwidth is the median of a 1 GiB device-to-device copy, counting
bytes read plus written (bench/gpu/run.py's ceilings(), copy only). For a memory-bound subgraph (reduction, elementwise) whose
largest tensor is 64 MiB or more, a copy of the same number of bytes (its
inputs and outputs once each, half read and half written) is timed with it,
in the same rounds: same_size_copy_ms.

With --ours DIR (heldout_ours.py's OUT/ours: the kernels the pass swapped
in, rebuilt from its cache) and --rt (libllm_fuse_rt.so), each swapped
subgraph's kernel is launched here too (bench/gpu/run.py's launch_built),
checked against eager's outputs by the same rule as torch.compile's, and
timed as the variant "ours" in the same rounds as eager and torch.compile:
one process, one timer for both sides of the ratio (ours_ms). With
--pad-us P (heldout-device.sh: 200) every sample waits P us of GPU sleep
before its flush (run.py's PadTimer), so that a call's host cost (torch.
compile's guards and launcher) is not counted as GPU time.

torch.compile compiles per shape: its first call (the compile) is timed
by the host clock and reported as compile_s, a second call warms up, then
it is timed like eager. Compiles stop once their total passes
--compile-budget-s (default 180 s; one compile is typically a few
seconds): later subgraphs get eager only, with the reason. With --reports
(the pass's reports of the same run) the subgraphs the pass swapped go
first, so the budget is spent where the target "no swapped kernel more
than 10% slower than torch.compile" needs it. A compile that hangs cannot
be cut short from here, so heldout-device.sh also runs this script under
`timeout`.

TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False), as for the
f32 GEMM kernels it is compared with. Inputs are uniform in [-1, 1).

Every subgraph is guarded: an exception (translation, out of memory,
compile) becomes that subgraph's `error`, never a crash. OUT.json is
rewritten after every subgraph, so that a run cut short keeps what it
measured.
"""
import argparse
import json
import math
import os
import re
import sys
import time
import traceback


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--budget-ms", type=float, default=100.0)
    ap.add_argument("--compile-budget-s", type=float, default=180.0)
    ap.add_argument("--only", help="regex over model names")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--ours", help="heldout_ours.py's folder of the swapped "
                    "kernels (<subgraph>/result.json + kernel.cubin)")
    ap.add_argument("--rt", help="libllm_fuse_rt.so, to launch --ours' kernels")
    ap.add_argument("--pad-us", type=float, default=0.0,
                    help="GPU sleep before each sample's flush (run.py's PadTimer)")
    ap.add_argument("--flush", choices=("memset", "clean", "both"), default="memset",
                    help="the L2 flush before each sample (run.py's Timer): memset (the "
                    "default), clean (the memset, then a 256 MiB read-only sweep), or both: "
                    "every subgraph and the copy timed under the memset, then under the "
                    "clean flush (the *_clean_ms fields)")
    ap.add_argument("--reports", help="the pass's reports (a folder): the "
                    "subgraphs it swapped are timed first, so that the "
                    "compile budget goes to them first")
    a = ap.parse_args()
    res = dict(schema="llm-fuse-heldout-torch/1", manifest=a.manifest,
               budget_ms=a.budget_ms, compile_budget_s=a.compile_budget_s,
               subgraphs={}, started=time.strftime("%Y-%m-%d %H:%M:%S"))

    def save():
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, a.out)

    if a.only and os.path.exists(a.out):
        try:  # a run split by --only: keep the other parts' records
            old = json.load(open(a.out))
            res["subgraphs"] = old.get("subgraphs", {})
        except (OSError, ValueError):
            pass
    try:
        man = json.load(open(a.manifest))
    except (OSError, ValueError) as e:
        res["error"] = "no manifest: %s" % e
        save()
        print("torch_time: %s" % res["error"])
        return 0
    t_import = time.time()
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        res["error"] = "no torch: %s: %s" % (type(e).__name__, e)
        save()
        print("torch_time: %s" % res["error"])
        return 0
    res["import_s"] = round(time.time() - t_import, 2)
    res["torch"] = torch.__version__
    if not torch.cuda.is_available():
        res["error"] = "torch sees no GPU"
        save()
        print("torch_time: %s" % res["error"])
        return 0
    res["device"] = torch.cuda.get_device_name(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # bench/gpu/run.py's timing method: its Timer (L2 flush, CUDA events),
    # stats and time_variants, and its element types.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "gpu"))
    from run import DT, PadTimer, Runtime, Timer, launch_built, stats, time_variants  # noqa: E402,F401
    DT = dict(DT, i1=torch.bool)  # an attention mask (run.py's DT has no i1)

    timer = PadTimer(a.pad_us) if a.pad_us > 0 else Timer()
    res["timer"] = "pad %g us" % a.pad_us if a.pad_us > 0 else "run.py"
    ctimer = None  # the clean flush's timer (--flush clean or both)
    if a.flush != "memset":
        ctimer = PadTimer(a.pad_us, "clean") if a.pad_us > 0 else Timer("clean")
        res["flush"] = a.flush
        if a.flush == "clean":
            timer, ctimer = ctimer, None
    rt = None
    if a.ours and a.rt:
        try:
            rt = Runtime(a.rt)
        except OSError as e:
            res["ours_error"] = "no runtime %s: %s" % (a.rt, e)
    # ---- copy bandwidth ----
    try:
        n = 1 << 30
        src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        ts = time_variants(timer, {"copy": lambda: dst.copy_(src)}, 200)["copy"]
        res["copy"] = dict(bytes=2 * n, ms=ts,
                           GBps=2 * n / (ts["median"] * 1e-3) / 1e9)
        if ctimer is not None:
            tc = time_variants(ctimer, {"copy": lambda: dst.copy_(src)}, 200)["copy"]
            res["copy_clean"] = dict(bytes=2 * n, ms=tc,
                                     GBps=2 * n / (tc["median"] * 1e-3) / 1e9)
            print("copy bandwidth, clean flush: %.0f GB/s" % res["copy_clean"]["GBps"],
                  flush=True)
        del src, dst
        torch.cuda.empty_cache()
        print("copy bandwidth: %.0f GB/s (1 GiB, read + write, median of %d)" % (
            res["copy"]["GBps"], ts["n"]), flush=True)
    except Exception as e:  # noqa: BLE001
        res["copy"] = dict(error="%s: %s" % (type(e).__name__, str(e)[:300]))
    save()

    def compare(out, ref):
        """eager vs compiled output, by the verifier's rule: (ok, worst),
        on at most 4M evenly spaced elements (the outputs can be 1 GiB)."""
        rtol = {torch.bfloat16: 2e-2, torch.float16: 1e-2}.get(out.dtype, 1e-3)
        step = max(1, out.numel() // (1 << 22))
        r = ref.reshape(-1)[::step].double()
        c = out.reshape(-1)[::step].double()
        fin = torch.isfinite(r)
        atol = rtol * (r[fin].abs().mean().item() if fin.any() else 0.0)
        bound = rtol * r.abs() + atol
        diff = (c - r).abs()
        same = (c == r) | (torch.isnan(c) & torch.isnan(r))
        ratio = torch.where(same, torch.zeros_like(diff), diff / bound)
        worst = ratio.nan_to_num(nan=float("inf")).max().item() if ratio.numel() else 0.0
        return worst <= 1.0, worst

    compile_spent = 0.0
    todo = [s for s in man.get("subgraphs", [])
            if not a.only or any(re.search(a.only, m) for m in s.get("models", []))]
    swapped = set()
    if a.reports and os.path.isdir(a.reports):
        for f in sorted(os.listdir(a.reports)):
            try:
                rep = json.load(open(os.path.join(a.reports, f)))
            except (OSError, ValueError):
                continue
            for x in rep.get("subgraphs", []):
                if x.get("decision") == "swapped":
                    swapped.add(x.get("name"))
    todo.sort(key=lambda s: s["name"] not in swapped)  # stable
    res["swapped_first"] = len([s for s in todo if s["name"] in swapped])
    t_all = time.time()
    for i, s in enumerate(todo):
        name = s["name"]
        rec = dict(models=s.get("models"), cls=s.get("cls"),
                   args=s.get("args"), results=s.get("results"))
        res["subgraphs"][name] = rec
        if s.get("error"):
            rec["error"] = "translation: " + s["error"]
            save()
            print("[%d/%d] %s: %s" % (i + 1, len(todo), name, rec["error"]),
                  flush=True)
            continue
        ins = outs = fn = cf = csrc = cdst = oo = orun = None
        t0 = time.time()
        try:
            # A real module from a real file: torch.compile (dynamo)
            # imports the function's module and reads its source.
            import importlib.util
            import tempfile
            mdir = os.path.join(tempfile.gettempdir(), "lf_torch_ref")
            os.makedirs(mdir, exist_ok=True)
            mpath = os.path.join(mdir, "lf_%s.py" % name)
            with open(mpath, "w") as fh:
                fh.write("import torch\n" + s["source"])
            spec = importlib.util.spec_from_file_location("lf_" + name, mpath)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["lf_" + name] = mod
            spec.loader.exec_module(mod)
            fn = mod.subgraph
            g = torch.Generator(device="cuda").manual_seed(1000 + i)
            ins = []
            for shape, elt in s["args"]:
                x = torch.rand(shape, generator=g, dtype=torch.float32,
                               device="cuda") * 2 - 1
                # an i1 input (an attention mask): half true
                ins.append(x > 0 if elt == "i1" else x.to(DT[elt]))
            args = list(ins)
            outs = fn(*args)
            torch.cuda.synchronize()
            for o, (shape, elt) in zip(outs, s["results"]):
                if list(o.shape) != list(shape) or o.dtype != DT[elt]:
                    raise RuntimeError("eager result %s %s, want %s %s" % (
                        list(o.shape), o.dtype, shape, elt))
            variants = {"eager": lambda: fn(*args)}
            od = os.path.join(a.ours, name) if a.ours else None
            if rt is not None and od and os.path.exists(os.path.join(od, "result.json")):
                try:  # the swapped kernel, on the same inputs (a guard: never costs the rest)
                    oo = [torch.empty(shape, dtype=DT[elt], device="cuda")
                          for shape, elt in s["results"]]
                    for o in oo:  # poisoned: an output the kernel skips fails the check
                        if o.is_floating_point():
                            o.fill_(float("nan"))
                    orun = launch_built(rt, od, list(ins), oo)
                    orun()
                    torch.cuda.synchronize()
                    rt.check("ours")
                    oks = [compare(x, y) for x, y in zip(oo, outs)]
                    rec["ours_vs_eager_ok"] = all(ok for ok, _ in oks)
                    rec["ours_vs_eager_worst"] = max(w for _, w in oks)
                    if rec["ours_vs_eager_ok"]:
                        variants["ours"] = orun
                    else:
                        rec["ours_error"] = "outputs differ from eager's (not timed)"
                except Exception as e:  # noqa: BLE001
                    rec["ours_error"] = "%s: %s" % (type(e).__name__, str(e)[-300:])
            if a.no_compile:
                rec["compile_error"] = "--no-compile"
            elif compile_spent > a.compile_budget_s:
                rec["compile_error"] = ("compile budget spent (%.0f s > %.0f s)"
                                        % (compile_spent, a.compile_budget_s))
            else:
                tc = time.time()
                try:
                    cf = torch.compile(fn)
                    couts = cf(*args)
                    torch.cuda.synchronize()
                    rec["compile_s"] = round(time.time() - tc, 2)
                    try:  # a sanity check only: never costs the timing
                        oks = [compare(c, o) for c, o in zip(couts, outs)]
                        rec["compile_vs_eager_ok"] = all(ok for ok, _ in oks)
                        rec["compile_vs_eager_worst"] = max(w for _, w in oks)
                    except Exception as e:  # noqa: BLE001
                        rec["compile_vs_eager_error"] = "%s: %s" % (
                            type(e).__name__, str(e)[:200])
                    del couts
                    variants["compile"] = lambda: cf(*args)
                except Exception as e:  # noqa: BLE001
                    rec["compile_error"] = "%s: %s" % (type(e).__name__,
                                                       str(e)[-400:])
                    try:
                        torch._dynamo.reset()
                    except Exception:  # noqa: BLE001
                        pass
                compile_spent += time.time() - tc
            del outs
            outs = None
            # A memory-bound subgraph on a tensor of 64 MiB or more: a copy
            # of the same number of bytes (half read, half written), timed
            # with it, is the bandwidth its size allows.
            nbytes, big = 0, 0
            for shape, elt in list(s["args"]) + list(s["results"]):
                b = math.prod(shape) * torch.empty((), dtype=DT[elt]).element_size()
                nbytes, big = nbytes + b, max(big, b)
            if s.get("cls") in ("reduction", "elementwise") and big >= 64 << 20:
                csrc = torch.empty((nbytes + 1) // 2, dtype=torch.uint8,
                                   device="cuda")
                cdst = torch.empty_like(csrc)
                variants["same_size_copy"] = lambda: cdst.copy_(csrc)
                rec["same_size_copy_bytes"] = 2 * csrc.numel()
            ts = time_variants(timer, variants, a.budget_ms)
            if ctimer is not None:  # --flush both: the same variants, clean flush
                rec["clean"] = time_variants(ctimer, variants, a.budget_ms)
                for k, st in rec["clean"].items():
                    rec[k + "_clean_ms"] = st["median"]
            if "same_size_copy" in ts:
                rec["same_size_copy_ms"] = ts["same_size_copy"]["median"]
                csrc = cdst = None
            rec["eager_ms"] = ts["eager"]["median"]
            rec["eager"] = ts["eager"]
            if "ours" in ts:
                rec["ours_ms"] = ts["ours"]["median"]
                rec["ours"] = ts["ours"]
            if "compile" in ts:
                rec["compile_ms"] = ts["compile"]["median"]
                rec["compile"] = ts["compile"]
        except Exception as e:  # noqa: BLE001
            rec["error"] = "%s: %s" % (type(e).__name__, str(e)[-400:])
            rec["traceback"] = traceback.format_exc()[-1500:]
        finally:
            ins = outs = fn = cf = args = variants = csrc = cdst = oo = orun = None
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
            torch.cuda.empty_cache()
        rec["wall_s"] = round(time.time() - t0, 2)
        save()
        print("[%d/%d] %s: ours %s ms, eager %s ms, compile %s ms (compiled in %s s)%s" % (
            i + 1, len(todo), name,
            "%.4f" % rec["ours_ms"] if "ours_ms" in rec else "-",
            "%.4f" % rec["eager_ms"] if "eager_ms" in rec else "-",
            "%.4f" % rec["compile_ms"] if "compile_ms" in rec else "-",
            rec.get("compile_s", "-"),
            "; " + (rec.get("error") or rec.get("compile_error") or "")
            if rec.get("error") or rec.get("compile_error") else ""),
            flush=True)
    res["wall_s"] = round(time.time() - t_all, 1)
    res["compile_spent_s"] = round(compile_spent, 1)
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save()
    print("torch: %d subgraph(s) in %.0f s (compiles %.0f s); %s" % (
        len(todo), res["wall_s"], compile_spent, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
