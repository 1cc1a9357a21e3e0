#!/usr/bin/env python3
"""summarize.py OUT CASE... - the table of bench/loop/run-device.sh: per case
and subgraph the decision, requests, refinements, candidates, the kept
kernel's time against the fallback and the roofline, and the wall time of
the pass; for the corpus cases, every attempt's verdict against the
corpus file's EXPECT header. Exit 1 when a wrong kernel was kept or swapped,
or a verdict is not one the corpus expects."""
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def expect_of(path):
    m = re.search(r"^// EXPECT: ?(.*)$", open(path).read(), re.M)
    return set(m.group(1).strip().split("|")) if m else set()


def main():
    out, cases = sys.argv[1], sys.argv[2:]
    bad = 0
    print("%-14s %-20s %-8s %4s %4s %4s %10s %10s %8s  %s" % (
        "case", "subgraph", "decision", "req", "ref", "cand", "kernel ms",
        "fallback", "roofline", "reason"))
    for case in cases:
        d = os.path.join(out, case)
        try:
            rep = json.load(open(os.path.join(d, "report.json")))
        except (OSError, ValueError) as e:
            print("%-14s no report: %s" % (case, e))
            bad += 1
            continue
        cfg = json.load(open(os.path.join(d, "config.json")))
        wall = open(os.path.join(d, "wall")).read().strip()
        for s in rep["subgraphs"]:
            p = s.get("performance") or {}
            k, f, r = p.get("kernel_ms"), p.get("fallback_ms"), \
                p.get("roofline_fraction")
            print("%-14s %-20s %-8s %4d %4d %4d %10s %10s %8s  %s" % (
                case, s["name"], s["decision"], s.get("requests", 0),
                s.get("refinements", 0), s.get("candidates", 0),
                "%.4f" % k if k else "-", "%.4f" % f if f else "-",
                "%.1f%%" % (100 * r) if r else "-", s["reason"]))
            if not case.startswith("corpus"):
                for a in s.get("attempt_log") or []:
                    print("    request %d %-6s %-9s %-8s %10s %8s %s" % (
                        a["request"], a["kind"], a["outcome"],
                        a.get("verify_reason") or "-",
                        "%.4f ms" % a["time_ms"] if a.get("time_ms") else "-",
                        "%.1f%%" % (100 * a["roofline_fraction"])
                        if a.get("roofline_fraction") else "-",
                        "kept" if a.get("kept") else ""))
                continue
            replies = next(x["replies"] for x in cfg["rules"]
                           if s["name"] in x["match"] or x["match"] == "*")
            for a in s.get("attempt_log") or []:
                n = a["request"] - 1
                path = replies[min(n, len(replies) - 1)][5:]
                path = path if os.path.isabs(path) else os.path.join(ROOT, path)
                want = expect_of(path)
                got = a.get("verify_reason") or a["outcome"]
                ok = got in want or (want == {"accept"} and got == "ok")
                kept = a.get("kept")
                if "accept" not in want and (kept and s["decision"] == "swapped"):
                    ok = False
                bad += not ok
                print("    %-44s %-10s %-26s %s" % (
                    os.path.basename(path), a["outcome"], got,
                    "ok" if ok else "NOT AS EXPECTED (%s)" % "|".join(
                        sorted(want))))
            if case == "corpus-bad" and s["decision"] == "swapped":
                bad += 1
        print("%-14s wall %s s" % (case, wall))
    print("%d problem(s)" % bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
