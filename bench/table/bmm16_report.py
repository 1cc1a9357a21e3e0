#!/usr/bin/env python3
"""bmm16_report.py STAGE VERIFY_ROOT OUT - on the GPU machine, after
bench/table/bmm16-device.sh's verify runs: per case of STAGE/old and
STAGE/new (bench/table/bmm16-prepare.sh), the entry the table answers with
before and after kernels/table/bmm16_any.py's entries, each entry's best
verified variant (llm-fuse-verify's candidate median, L2 flushed), and torch
eager / torch.compile of the same product timed in this process
(bench/table/bmm_torch.py's functions and operands, do_bench medians).
OUT/bmm16.json keeps everything."""
import json
import os
import re
import sys
import time

import torch
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmm_torch import operands, torch_fn  # noqa: E402
from verdict_json import find  # noqa: E402


def verdicts(stage, vdir, side):
    p = os.path.join(stage, side, "cases.json")
    if not os.path.exists(p):
        return {}
    out = {}
    for c in json.load(open(p)):
        ver, best = {}, None
        for tag, label in c["variants"].items():
            try:
                v = json.load(open(os.path.join(vdir, side, "%s.%s.json" % (c["sg"], tag))))
            except Exception:  # noqa: BLE001
                ver[tag] = dict(accepted=None, label=label, reason="not run")
                continue
            ms = find(v, "candidate_ms")
            ver[tag] = dict(accepted=v.get("accepted"), reason=v.get("reason"), ms=ms, label=label)
            if v.get("accepted") and ms and (best is None or ms < best[0]):
                best = (ms, label)
        c["verify"], c["best"] = ver, best
        out[c["case"]] = c
    return out


def short(entry):
    return re.sub(r"\.json(\.gz)?$", "", entry.split("/")[-1][17:]) if entry else "-"


def main():
    stage, vdir, out = sys.argv[1:4]
    deadline = time.time() + float(os.environ.get("BMM16_TORCH_BUDGET_S", "90"))
    old, new = verdicts(stage, vdir, "old"), verdicts(stage, vdir, "new")
    names = list(old) + [n for n in new if n not in old]
    print("device %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    rows = []
    for n in names:
        c = old.get(n) or new.get(n)
        # a case staged on the old side alone: an entry bmm16_any.py does not change
        r = dict(case=n, B=c["B"], M=c["M"], N=c["N"], K=c["K"], old=old.get(n), new=new.get(n) or old.get(n))
        if time.time() < deadline:
            f = torch_fn(c["form"], c.get("d"))
            ops = operands(c)
            r["eager_ms"] = do_bench(lambda: f(*ops), warmup=10, rep=50, return_mode="median")
            try:
                torch._dynamo.reset()
                fc = torch.compile(f, dynamic=False)
                fc(*ops)
                r["compile_ms"] = do_bench(lambda: fc(*ops), warmup=10, rep=50, return_mode="median")
            except Exception as e:  # noqa: BLE001
                r["compile_ms"] = None
                r["compile_error"] = str(e)[:200]
        rows.append(r)
    json.dump(rows, open(os.path.join(out, "bmm16.json"), "w"), indent=1)

    def ms(x):
        return "%.4f" % x if x else "-"
    print("| case | B x M x N x K | entry before | before ms | entry after | after ms (variant) | eager | compile | "
          "before / compile | after / compile |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        o, w = r["old"], r["new"]
        ob = o["best"] if o else None
        nb = w["best"] if w else None
        comp = r.get("compile_ms")
        print("| %s | %d x %d x %d x %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["case"], r["B"], r["M"], r["N"], r["K"], short(o["entry"]) if o else "-", ms(ob[0] if ob else None),
            short(w["entry"]) if w else "-", "%.4f (%s)" % (nb[0], nb[1].split()[-1]) if nb else "-",
            ms(r.get("eager_ms")), ms(comp), "%.2f" % (ob[0] / comp) if ob and comp else "-",
            "%.2f" % (nb[0] / comp) if nb and comp else "-"))
    print("\nper variant (ms; * = not accepted):")
    for r in rows:
        for side in ("old", "new"):
            c = r[side]
            if not c or (side == "new" and c is r["old"]):
                continue
            vs = sorted(c["verify"].items())
            print("%s %s (%s): %s" % (r["case"], side, short(c["entry"]), "; ".join("%s %s%s" % (
                v["label"].split(" ", 1)[-1], ms(v.get("ms")), "" if v["accepted"] else "*") for _, v in vs)))
    for r in rows:
        for side in ("old", "new"):
            for tag, v in ((r[side] or {}).get("verify") or {}).items():
                if not v["accepted"]:
                    print("not accepted: %s %s %s (%s): %s" % (r["case"], side, tag, v["label"], v.get("reason")))


if __name__ == "__main__":
    main()
