#!/usr/bin/env python3
"""p44_report_summary.py - what each subgraph of an llm-fuse report kept and
how its verification went, compactly: per subgraph the decision, the
precision (TF32 mode: K and the tolerance), every attempt (table entry or
provider, outcome, the verifier's reason, timed ms, kept), and from the
verdict the worst error/tolerance over all trials and outputs and how many
elements passed only by the TF32 componentwise bound
(docs/verification.md, "TF32 mode").

    p44_report_summary.py REPORT.json... [--json OUT.json]
"""
import json
import sys


def verdict_of(sg):
    """The worker's verdict: the report's "verification" is the verdict
    itself for a kernel verified in this run, a cache record holding it as
    "verdict" for a cached one."""
    v = sg.get("verification")
    if not isinstance(v, dict):
        return None
    return v if "trials" in v else v.get("verdict")


def summarize(path):
    r = json.load(open(path))
    rows = []
    for sg in r.get("subgraphs", []):
        row = dict(name=sg.get("name"), cls=sg.get("class"), decision=sg.get("decision"),
                   precision=sg.get("precision"), attempts=[])
        for a in sg.get("attempt_log") or []:
            row["attempts"].append(dict(entry=(a.get("model") or "").split("/")[-1], provider=a.get("provider"),
                                        variant=a.get("variant"), outcome=a.get("outcome"),
                                        verify_reason=a.get("verify_reason"), ms=a.get("time_ms"),
                                        kept=a.get("kept")))
        v = verdict_of(sg)
        if v:
            worst, by_bound = 0.0, 0
            for t in v.get("trials", []):
                for o in t.get("outputs", []):
                    w = o.get("max_err_over_tol")
                    if isinstance(w, (int, float)):
                        worst = max(worst, w)
                    by_bound += int(o.get("passed_by_tf32_bound", 0))
            row["verdict"] = dict(result=v.get("result"), worst_err_over_tol=worst,
                                  passed_by_tf32_bound=by_bound,
                                  tf32_scale_tol=(v.get("protocol") or {}).get("tf32_scale_tol"))
        rows.append(row)
    return dict(report=path, summary=r.get("summary"), subgraphs=rows)


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        i = args.index("--json")
        out = args[i + 1]
        del args[i:i + 2]
    res = []
    for p in args:
        try:
            s = summarize(p)
        except (OSError, ValueError) as e:
            print("%s: %s" % (p, e))
            continue
        res.append(s)
        print("== %s" % p.rsplit("/", 1)[-1])
        for sg in s["subgraphs"]:
            prec = sg["precision"] or {}
            v = sg.get("verdict") or {}
            kept = [a for a in sg["attempts"] if a["kept"]]
            print("  %-20s %-14s %-9s %s%s%s" % (
                sg["name"], sg["cls"], sg["decision"],
                "tf32 K=%s " % prec.get("k") if prec.get("mode") == "tf32" else "",
                "kept %s %s; " % (kept[0]["entry"], "%.4f ms" % kept[0]["ms"]
                                  if isinstance(kept[0]["ms"], (int, float)) else "") if kept else "",
                "worst err/tol %.3g, %d by the TF32 bound" % (v["worst_err_over_tol"], v["passed_by_tf32_bound"])
                if v else ""))
            for a in sg["attempts"]:
                print("      %-58s %-9s %-16s %s%s" % (
                    (a["entry"] or a["provider"] or "")[:58], a["outcome"], a["verify_reason"] or "",
                    "%.4f ms" % a["ms"] if isinstance(a["ms"], (int, float)) else "",
                    "  kept" if a["kept"] else ""))
    if out:
        json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
