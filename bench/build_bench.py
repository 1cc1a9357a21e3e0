#!/usr/bin/env python3
"""Candidate build time: prints a table.

Builds every hand-written kernel listed in kernels/handwritten/manifest-*.json
from text to cubin with llm-fuse-build-kernel (the isolated child process the
compiler uses, so process start is included) and reports per-stage times from
the build result, the median of --repeat runs each.

  bench/build_bench.py [--tool build/bin/llm-fuse-build-kernel] [--repeat 3]
                       [--chip sm_90]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(tool, sig, path, chip):
    t = time.monotonic()
    r = subprocess.run([tool, "--signature", sig, "--chip", chip, path],
                       capture_output=True, text=True)
    wall = (time.monotonic() - t) * 1000.0
    try:
        res = json.loads(r.stdout)
    except ValueError:
        sys.exit("no JSON from %s:\n%s" % (path, r.stderr[-2000:]))
    return wall, res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", default=os.path.join(
        ROOT, "build/bin/llm-fuse-build-kernel"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chip", default="sm_90")
    args = ap.parse_args()
    entries = []
    for m in sorted(glob.glob(os.path.join(ROOT, "kernels/handwritten/manifest-*.json"))):
        with open(m) as f:
            entries += json.load(f)
    if not entries:
        sys.exit("no kernels listed in kernels/handwritten/manifest-*.json")
    print("| subgraph | example | ok | wall ms | parse | lower | llvm+ptx | ptxas |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    worst = 0.0
    for e in entries:
        chip = args.chip if args.chip in e.get("chips", [args.chip]) else e["chips"][-1]
        path = os.path.join(ROOT, "kernels/handwritten", e["file"])
        runs = [build(args.tool, e["signature"], path, chip)
                for _ in range(args.repeat)]
        walls = [w for w, _ in runs]
        res = runs[-1][1]

        def stage(key):
            return statistics.median((r.get("ms") or {}).get(key, 0)
                                     for _, r in runs)

        wall = statistics.median(walls)
        worst = max(worst, wall)
        print("| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f |" % (
            e["subgraph"], e["example"], "yes" if res.get("ok") else res.get("kind"),
            wall, stage("parse"), stage("lower"), stage("llvm"), stage("ptxas")))
    print("\nslowest build: %.0f ms (text to %s cubin, isolated child included)"
          % (worst, args.chip))
    return 0


if __name__ == "__main__":
    sys.exit(main())
