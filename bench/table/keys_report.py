#!/usr/bin/env python3
"""keys_report.py - the table of bench/table/keys-device.sh's verdicts.

    keys_report.py CASES.json OUT

Per case and variant: how many seeds accepted, and for each rejection its
reason and the first bad element (reference / candidate); then the timed
cases: llm-fuse-verify's candidate_ms per round for the table's template
(v0), the earlier generator's (o0) and an alternative (x0), and the ratios
of their medians to o0's.
Python 3 standard library only.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict_json import find  # noqa: E402


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def first_bad(v):
    for t in v.get("trials", []):
        for o in t.get("outputs", []):
            for k in ("first_bad_nan_poison", "first_bad_sentinel_poison"):
                if o.get(k):
                    return "%s trial: [%s] ref %s cand %s" % (
                        t.get("distribution"), o[k].get("index"), o[k].get("reference"),
                        o[k].get("candidate"))
    return ""


def main():
    cases = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    vd = os.path.join(out, "verdicts")
    print("%-36s %-4s %-24s %s" % ("case", "tag", "variant", "verdicts (seeds)"))
    tot = {"v": [0, 0], "o": [0, 0], "x": [0, 0]}
    for c in cases:
        if not c["variants"]:
            print("%-36s -    no variant staged (%s)" % (c["case"], c.get("entry") or "no entry"))
        for tag in sorted(c["variants"], key=lambda t: (t[0] != "v", int(t[1:]))):
            acc, notes, seen = 0, [], 0
            for s in c["seeds"]:
                v = load(os.path.join(vd, "%s.%s.s%d.json" % (c["case"], tag, s)))
                if v is None:
                    continue
                seen += 1
                if v.get("accepted"):
                    acc += 1
                else:
                    notes.append("seed %d %s %s" % (s, v.get("reason"), first_bad(v)))
            tot[tag[0]][0] += acc
            tot[tag[0]][1] += seen
            print("%-36s %-4s %-24s %d of %d accepted%s" % (
                c["case"], tag, c["variants"][tag][:24], acc, seen,
                "" if not notes else "; " + "; ".join(notes[:3])))
    print("verdicts: table's variants %d of %d accepted; the earlier generator's %d of %d; "
          "the alternative's %d of %d" % (tot["v"][0], tot["v"][1], tot["o"][0], tot["o"][1],
                                          tot["x"][0], tot["x"][1]))
    print()
    print("%-36s %-22s %-22s %-22s %-6s %-6s %s" % (
        "timed case", "v0 ms", "o0 ms", "x0 ms", "v0/o0", "x0/o0", "reference ms"))
    for c in cases:
        if not c["timed"]:
            continue
        ms = {}
        ref = []
        for tag in ("v0", "o0", "x0"):
            for r in range(3):
                v = load(os.path.join(vd, "%s.%s.t%d.json" % (c["case"], tag, r)))
                if v and v.get("accepted") and find(v, "candidate_ms") is not None:
                    ms.setdefault(tag, []).append(find(v, "candidate_ms"))
                    ref.append(find(v, "reference_ms"))
        med = {t: statistics.median(x) for t, x in ms.items()}

        def ratio(a, b):
            return "%.3f" % (med[a] / med[b]) if a in med and b in med else "-"
        print("%-36s %-22s %-22s %-22s %-6s %-6s %s" % (
            c["case"], " ".join("%.4f" % x for x in ms.get("v0", [])) or "-",
            " ".join("%.4f" % x for x in ms.get("o0", [])) or "-",
            " ".join("%.4f" % x for x in ms.get("x0", [])) or "-",
            ratio("v0", "o0"), ratio("x0", "o0"),
            "%.4f" % statistics.median(ref) if ref else "-"))


if __name__ == "__main__":
    main()
