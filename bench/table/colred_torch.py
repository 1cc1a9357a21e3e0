#!/usr/bin/env python3
"""colred_torch.py STAGE OUT [report] - on the GPU machine: times every staged
variant of bench/table/colred_stage.py (the table's, v<k>, and the
experimental candidates, x<k>) side by side with torch eager,
torch.compile and a copy of the same bytes, in one process and with one
method, bench/gpu/run.py's (its Timer: a 256 MiB memset before each call,
CUDA events around it; time_variants: interleaved rounds, the median):
the same method as the held-out run's torch_time.py. Our cubins are
launched through libllm_fuse_rt (run.py's Runtime / launch_built), on
the case's inputs, after a check against torch eager on NaN-poisoned
outputs (run.py's compare, the verifier's tolerance); a variant that fails
the check is not timed. The big cases (64 MiB or more) are timed a second
time with a clean flush (run.py's Timer("clean"): the memset, then a 256
MiB read-only sweep, so the L2 holds no dirty lines; COLRED_CLEAN=0 skips
it, COLRED_CLEAN=all times every case and variant under both flushes, and
the 1 GiB copy and copies of COLRED_COPY_MB megabytes under both). A 1 GiB device copy gives
the bandwidth; the same-size copy moves the case's bytes (inputs + output,
half read, half written).

Prints per case: the fastest table variant and the fastest of all, eager,
compile, ours/compile, % of the 1 GiB copy's GB/s and of the same-size
copy's. OUT/colred.json keeps every variant's statistics, and
OUT/verify/<sg>.<tag>.json, where colred-device.sh left them, are read for
the verdicts (llm-fuse-verify); `report` merges them into OUT/colred.json
again and prints the tables."""
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from run import DT, Runtime, Timer, compare, launch_built, time_variants  # noqa: E402

ELT = {"f32": 4, "bf16": 2, "f16": 2}
BIG = 64 << 20


def fn(fam):
    return {
        "colsum": lambda x: x.sum(0),
        "colsum3": lambda x: x.sum(0),
        "colsum_bt": lambda x: x.sum((0, 1)),
        "colmean": lambda x: x.mean(0),
        "colmax": lambda x: x.amax(0),
        "colsumsq": lambda x: (x * x).sum(0),
        "coldiff": lambda x, y: (x - y).sum(0),
        # (colred_stage.py's OTHER_MODELS: the table's row softmax)
        "softmax_tosa": lambda x: torch.softmax(x, -1),
    }[fam]


def copies(res, timer, clean):
    """the 1 GiB copy and copies of COLRED_COPY_MB (MB moved, read +
    written) under both flushes, in the same rounds per flush"""
    sizes = [1 << 30] + [int(float(m) * 1e6) // 2 for m in
                         os.environ.get("COLRED_COPY_MB", "").split()]
    bufs = {}
    for n in sizes:
        src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
        bufs["copy_%d" % (2 * n)] = (src, torch.empty_like(src))
    runs = {k: (lambda s=s, d=d: d.copy_(s)) for k, (s, d) in bufs.items()}
    for tag, tm in (("dirty", timer), ("clean", clean)):
        if tm is None:
            continue
        for k, st in time_variants(tm, runs, 200).items():
            b = int(k.split("_")[1])
            res.setdefault("copies", {}).setdefault(k, dict(bytes=b))[tag] = dict(
                ms=st["median"], GBps=b / (st["median"] * 1e-3) / 1e9, stats=st)
    del bufs, runs
    torch.cuda.empty_cache()


def verdict(out, c, tag):
    p = os.path.join(out, "verify", "%s.%s.json" % (c["sg"], tag))
    try:
        v = json.load(open(p))
    except (OSError, ValueError):
        return None
    return bool(v.get("accepted")), (v.get("reason") or "")[:160]


def merge_verdicts(res, cases, out):
    for rec, c in zip(res["cases"], cases):
        for tag, vr in rec["variants"].items():
            v = verdict(out, c, tag)
            if v is not None:
                vr["verified"], vr["verify_reason"] = v


def main():
    stage, out = sys.argv[1:3]
    if sys.argv[3:] == ["report"]:  # after colred-device.sh's verify runs
        res = json.load(open(os.path.join(out, "colred.json")))
        merge_verdicts(res, json.load(open(os.path.join(stage, "cases.json"))), out)
        json.dump(res, open(os.path.join(out, "colred.json"), "w"), indent=1)
        report(res)
        return
    budget = float(os.environ.get("COLRED_BUDGET_MS", "20"))
    compile_budget = float(os.environ.get("COLRED_COMPILE_BUDGET_S", "120"))
    compile_spent = 0.0
    clean_on = os.environ.get("COLRED_CLEAN", "1") in ("1", "all")
    clean_all = os.environ.get("COLRED_CLEAN") == "all"
    cases = json.load(open(os.path.join(stage, "cases.json")))
    rt = Runtime(os.path.join(stage, "lib", "libllm_fuse_rt.so"))
    timer = Timer()
    res = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, cases=[],
               started=time.strftime("%Y-%m-%d %H:%M:%S"))
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    t = time_variants(timer, {"copy": lambda: dst.copy_(src)}, 200)["copy"]["median"]
    res["copy_ms"], res["copy_GBps"] = t, 2 * n / (t * 1e-3) / 1e9
    del src, dst
    torch.cuda.empty_cache()
    copy_bw = res["copy_GBps"]
    print("device %s, torch %s; 1 GiB copy: %.4f ms, %.0f GB/s (read + write)" % (
        res["device"], res["torch"], t, copy_bw), flush=True)
    # the clean flush: run.py's Timer("clean"), the same memset and then a
    # 256 MiB read-only sweep (COLRED_CLEAN=all: every case and variant
    # under it too; 1: the big cases' fastest; 0: none)
    clean = Timer("clean") if clean_on else None
    copies(res, timer, clean)
    if clean is not None:
        res["copy_clean_GBps"] = res["copies"]["copy_%d" % (2 * n)]["clean"]["GBps"]

    def save():
        json.dump(res, open(os.path.join(out, "colred.json"), "w"), indent=1)

    for i, c in enumerate(cases):
        fam, dt, sizes = c["family"], c["dtype"], c["sizes"]
        rec = dict(case=c["case"], sg=c["sg"], entry=c["entry"], sizes=sizes, dtype=dt,
                   variants={})
        res["cases"].append(rec)
        t0 = time.time()
        try:
            g = torch.Generator(device="cuda").manual_seed(1000 + i)
            nin = 2 if fam == "coldiff" else 1
            ins = [(torch.rand(*sizes, generator=g, device="cuda") * 2 - 1).to(DT[dt])
                   for _ in range(nin)]
            f = fn(fam)
            ref = f(*ins)
            outs = [torch.empty_like(ref)]
            nbytes = sum(x.numel() for x in ins) * ELT[dt] + ref.numel() * ELT[dt]
            rec["bytes"] = nbytes
            runs = {"eager": lambda: f(*ins)}
            tc = time.time()
            try:
                if compile_spent > compile_budget:
                    raise RuntimeError("compile budget spent")
                # a fresh compile per case: the lambdas of one family share
                # their code object, and dynamo would otherwise recompile
                # the second shape with dynamic shapes
                torch._dynamo.reset()
                cf = torch.compile(f, dynamic=False)
                cf(*ins)
                runs["compile"] = lambda: cf(*ins)
            except Exception as e:  # noqa: BLE001
                rec["compile_error"] = str(e)[-300:]
            compile_spent += time.time() - tc
            half = max(nbytes // 2, 1)
            cs = torch.empty(half, dtype=torch.uint8, device="cuda").random_()
            cd = torch.empty_like(cs)
            runs["copy"] = lambda: cd.copy_(cs)
            for tag, label in c["variants"].items():
                vr = rec["variants"][tag] = dict(label=label)
                try:
                    run = launch_built(rt, os.path.join(stage, c["sg"], tag), ins, outs)
                    outs[0].fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                    rt.check(tag)
                    ok, worst, bad = compare(outs[0], ref)
                    run()  # the same bits again (no atomics)
                    again = outs[0].clone()
                    run()
                    torch.cuda.synchronize()
                    vr.update(check=ok, worst=worst, bad=bad,
                              same_bits=bool(torch.equal(again.view(torch.uint8),
                                                         outs[0].view(torch.uint8))))
                    if ok:
                        runs[tag] = run
                except Exception as e:  # noqa: BLE001
                    vr["error"] = str(e)[-300:]
            ts = time_variants(timer, runs, budget)
            for k, s in ts.items():
                if k in rec["variants"]:
                    rec["variants"][k]["ms"] = s["median"]
                    rec["variants"][k]["stats"] = s
                else:
                    rec[k + "_ms"] = s["median"]
            if clean is not None and clean_all:
                for k, s in time_variants(clean, runs, budget).items():
                    if k in rec["variants"]:
                        rec["variants"][k]["clean_ms"] = s["median"]
                    else:
                        rec[k + "_clean_ms"] = s["median"]
            elif clean is not None and nbytes >= BIG:
                # the clean flush: compile, copy, and the five fastest of ours
                mine = sorted([k for k in ts if k in rec["variants"]], key=lambda k: ts[k]["median"])
                # the five fastest, and the fastest table variant and
                # experimental streaming and plain load variant (labels NT=1
                # / NT=0) if not among them
                pick = mine[:5]
                for want in (lambda k: k.startswith("v"),
                             lambda k: "NT=1" in c["variants"][k],
                             lambda k: "NT=0" in c["variants"][k]):
                    pick += [k for k in mine if want(k)][:1]
                sel = {k: runs[k] for k in ["compile", "copy"] + list(dict.fromkeys(pick))
                       if k in runs}
                for k, s in time_variants(clean, sel, budget).items():
                    if k in rec["variants"]:
                        rec["variants"][k]["clean_ms"] = s["median"]
                    else:
                        rec[k + "_clean_ms"] = s["median"]
            del cs, cd
        except Exception as e:  # noqa: BLE001
            import traceback
            rec["error"] = traceback.format_exc()[-800:]
        finally:
            ins = outs = ref = runs = cf = None
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        rec["seconds"] = round(time.time() - t0, 1)
        print("%s: %d variants, %.1f s" % (c["case"], len(c["variants"]), rec["seconds"]),
              flush=True)
        save()
    merge_verdicts(res, cases, out)
    save()
    report(res)


def best(rec, pick):
    vs = [(v["ms"], k, v) for k, v in rec["variants"].items()
          if v.get("ms") and v.get("check") and pick(k, v) and v.get("verified", True) is not False]
    return min(vs) if vs else None


def report_flushes(res):
    """the copies, then each case under both flushes (COLRED_CLEAN=all):
    % of the 1 GiB copy under the same flush"""
    cps = res.get("copies") or {}
    g1 = cps.get("copy_%d" % (2 << 30), {})
    if not g1.get("clean"):
        return
    print("\ncopies (MB moved, read + write), memset flush | clean flush:")
    print("| copy MB | memset ms | GB/s | % of 1 GiB | clean ms | GB/s | % of 1 GiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k, c in sorted(cps.items(), key=lambda kv: -kv[1]["bytes"]):
        d, cl = c.get("dirty", {}), c.get("clean", {})
        print("| %.0f | %.4f | %.0f | %.0f%% | %.4f | %.0f | %.0f%% |" % (
            c["bytes"] / 1e6, d.get("ms", 0), d.get("GBps", 0),
            100 * d.get("GBps", 0) / g1["dirty"]["GBps"], cl.get("ms", 0), cl.get("GBps", 0),
            100 * cl.get("GBps", 0) / g1["clean"]["GBps"]))
    print("\nper case, both flushes (ms; %% of the 1 GiB copy under the same flush: "
          "%.0f / %.0f GB/s; ours = the fastest verified table variant, all = of every "
          "variant):" % (g1["dirty"]["GBps"], g1["clean"]["GBps"]))
    print("| case | MB | flush | ours (variant) | o best | all (variant) | compile | eager "
          "| same-size copy | ours/compile | ours % 1 GiB copy | compile % 1 GiB copy "
          "| ours % same-size copy |")
    print("|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for rec in res["cases"]:
        if "error" in rec:
            continue
        for tag, key, sfx, bw in (("memset", "ms", "_ms", g1["dirty"]["GBps"]),
                                  ("clean", "clean_ms", "_clean_ms", g1["clean"]["GBps"])):
            def bst(pick):
                vs = [(v[key], k, v["label"]) for k, v in rec["variants"].items()
                      if v.get(key) and v.get("check") and pick(k)
                      and v.get("verified", True) is not False]
                return min(vs) if vs else None
            tb = bst(lambda k: k.startswith("v"))
            ob = bst(lambda k: k.startswith("o"))
            ab = bst(lambda k: True)
            comp, cp = rec.get("compile" + sfx), rec.get("copy" + sfx)
            mb = rec["bytes"] / 1e6

            def pct(ms):
                return "%.0f%%" % (100 * rec["bytes"] / ms / 1e6 / bw) if ms else "-"
            print("| %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                rec["case"], mb, tag,
                "%.4f (%s %s)" % tb if tb else "-", "%.4f (%s %s)" % ob if ob else "-",
                "%.4f (%s %s)" % ab if ab else "-",
                "%.4f" % comp if comp else "-",
                "%.4f" % rec["eager" + sfx] if rec.get("eager" + sfx) else "-",
                "%.4f" % cp if cp else "-",
                "%.2f" % (tb[0] / comp) if tb and comp else "-",
                pct(tb[0] if tb else None), pct(comp),
                "%.0f%%" % (100 * cp / tb[0]) if tb and cp else "-"))


def report(res):
    report_flushes(res)
    bw = res["copy_GBps"]
    print("\n1 GiB copy %.0f GB/s; ms medians (run.py Timer: memset flush, events)" % bw)
    print("| case | MB | table best (variant) | before (o) | all best (variant) | eager | compile | "
          "table/compile | best/compile | table % copy | same-size copy % | verified |")
    print("|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for rec in res["cases"]:
        if "error" in rec:
            print("| %s | error: %s |" % (rec["case"], rec["error"].splitlines()[-1][:100]))
            continue
        tb = best(rec, lambda k, v: k.startswith("v"))
        ab = best(rec, lambda k, v: not k.startswith("o"))
        ob = best(rec, lambda k, v: k.startswith("o"))
        comp = rec.get("compile_ms")
        mb = rec["bytes"] / 1e6
        big = rec["bytes"] >= BIG

        def pct(ms):
            return "%.0f%%" % (100 * rec["bytes"] / ms / 1e6 / bw) if ms and big else "-"
        nv = [v for k, v in rec["variants"].items() if k.startswith("v")]
        ver = "%d/%d" % (sum(1 for v in nv if v.get("verified")), len(nv))
        print("| %s | %.1f | %s | %s | %s | %.4f | %s | %s | %s | %s | %s | %s |" % (
            rec["case"], mb, "%.4f (%s %s)" % (tb[0], tb[1], tb[2]["label"]) if tb else "-",
            "%.4f" % ob[0] if ob else "-",
            "%.4f (%s %s)" % (ab[0], ab[1], ab[2]["label"]) if ab else "-",
            rec.get("eager_ms", 0), "%.4f" % comp if comp else "-",
            "%.2f" % (tb[0] / comp) if tb and comp else "-",
            "%.2f" % (ab[0] / comp) if ab and comp else "-",
            pct(tb[0] if tb else None),
            "%.0f%%" % (100 * rec["copy_ms"] / tb[0]) if tb and big else "-", ver))
    print("\nclean flush (memset + 256 MiB read), big cases: compile / copy / ours")
    for rec in res["cases"]:
        if rec.get("compile_clean_ms") or rec.get("copy_clean_ms"):
            mine = sorted([(v["clean_ms"], k, v["label"], v["ms"]) for k, v in
                           rec["variants"].items() if v.get("clean_ms")])
            print("%s: compile %.4f copy %.4f | %s" % (
                rec["case"], rec.get("compile_clean_ms", 0), rec.get("copy_clean_ms", 0),
                "; ".join("%s %s %.4f (dirty %.4f)" % (k, lab, ms, d) for ms, k, lab, d in mine)))
    print("\nevery variant (ms, dirty flush; clean= the clean flush's):")
    for rec in res["cases"]:
        for k, v in sorted(rec["variants"].items(), key=lambda kv: kv[1].get("ms") or 9):
            print("variant %s %s %s ms=%s clean=%s check=%s bits=%s verified=%s %s" % (
                rec["case"], k, v["label"], "%.4f" % v["ms"] if v.get("ms") else "-",
                "%.4f" % v["clean_ms"] if v.get("clean_ms") else "-",
                v.get("check"), v.get("same_bits"), v.get("verified"),
                v.get("error", "") or ("" if v.get("verified") is not False else
                                       v.get("verify_reason", ""))))


if __name__ == "__main__":
    main()
