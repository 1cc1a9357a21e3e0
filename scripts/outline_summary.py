#!/usr/bin/env python3
"""Prints an llm-fuse-outline report (report=FILE.json) one group per line.

    <function>: <class> [<op> <op> ...] in=<n> out=<n>

The grouping tests check these lines; people read them to see at a glance
what the partitioner did with a model (`linalg.` is dropped from op names).
"""
import json
import sys


def main(argv):
    if len(argv) != 2:
        print("usage: outline_summary.py REPORT.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        report = json.load(f)
    if report.get("schema") != "llm-fuse-outline/0":
        print("not an llm-fuse-outline/0 report", file=sys.stderr)
        return 1
    groups = report["subgraphs"]
    for g in groups:
        ops = " ".join(o.replace("linalg.", "") for o in g["ops"])
        print("%s: %s [%s] in=%d out=%d" % (g["function"], g["class"], ops,
                                            len(g["inputs"]),
                                            len(g["outputs"])))
    print("groups: %d" % len(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
