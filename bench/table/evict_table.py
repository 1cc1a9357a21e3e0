#!/usr/bin/env python3
"""evict_table.py STAGE OUT - the table of bench/table/evict-device.sh: per
case and variant, the verdicts and llm-fuse-verify's candidate_ms of the
table's kernel (plain loads) and of the same kernel with evict-first
streaming loads, their ratio, and GB/s (the subgraph's inputs and outputs
once each). OUT/evict.json keeps it."""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict_json import find  # noqa: E402

ELT = {"f32": 4, "bf16": 2, "f16": 2, "i1": 1}


def sig_bytes(sig):
    n = 0
    for t in re.findall(r"tensor<([^>]*)>", sig):
        *dims, elt = t.split("x")
        n += math.prod(int(d) for d in dims) * ELT.get(elt, 4)
    return n


def main():
    stage, out = sys.argv[1:3]
    cases = json.load(open(os.path.join(stage, "cases.json")))
    rows = []
    print("%-34s %-6s %-16s %-9s %9s %9s %7s %8s %8s" % (
        "case", "var", "knobs", "verified", "plain ms", "stream ms", "s/p", "GB/s p", "GB/s s"))
    for c in cases:
        nb = sig_bytes(c["signature"])
        tags = sorted({t.rstrip("nt") for t in c["variants"]}, key=lambda t: int(t[1:]))
        for t in tags:
            r = dict(case=c["case"], sg=c["sg"], variant=t,
                     label=c["variants"].get(t, {}).get("label"), bytes=nb)
            for kind, tag in (("plain", t), ("stream", t + "nt")):
                try:
                    v = json.load(open(os.path.join(out, "verify", "%s.%s.json" % (c["sg"], tag))))
                except (OSError, ValueError):
                    v = None
                acc = None if v is None else find(v, "accepted")  # a bool is a number
                r[kind + "_accepted"] = None if acc is None else bool(acc)
                r[kind + "_ms"] = None if v is None else find(v, "candidate_ms")
            rows.append(r)

            def f(x):
                return "%.4f" % x if x else "-"
            p, s = r["plain_ms"], r["stream_ms"]
            print("%-34s %-6s %-16s %-9s %9s %9s %7s %8s %8s" % (
                c["case"][:34], t, (r["label"] or "")[:16],
                "%s/%s" % ("y" if r["plain_accepted"] else "n", "y" if r["stream_accepted"] else "n"),
                f(p), f(s), "%.3f" % (s / p) if p and s else "-",
                "%.0f" % (nb / p / 1e6) if p else "-", "%.0f" % (nb / s / 1e6) if s else "-"))
    json.dump(rows, open(os.path.join(out, "evict.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
