#!/usr/bin/env python3
"""check_corpus.py CORPUS_DIR OUT_DIR - builds every corpus kernel with
llm-fuse-build-kernel (from PATH) for sm_90 and checks the headers: each
names a subgraph, a known expected reason and a category, and the corpus
has at least 30 wrong kernels covering every category of the issue.
Prints one line per kernel and a summary; exit 1 on any failure."""
import glob
import os
import re
import subprocess
import sys

REASONS = {"accept", "unwritten-output", "poison-dependent", "mismatch",
           "nondeterministic", "input-modified", "out-of-bounds-write",
           "launch-failed", "timeout", "watchdog-timeout", "load-failed",
           "degenerate-reference", "implausible-time", "slower"}
CATEGORIES = ["output never written", "a copy of an input", "constant fill",
              "reading stale or uninitialized memory", "modifying an input",
              "unwritten tail", "reduction that skips elements",
              "lower-precision accumulation", "hard-coded shape",
              "a result cache keyed on an address", "out-of-bounds write",
              "infinite loop", "missing barrier (race)", "no-op kernel"]


def header(text, key):
    m = re.search(r"^// %s: ?(.*)$" % key, text, re.M)
    return m.group(1).strip() if m else None


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(corpus, "*.mlir")))
    built = bad = good = failed = 0
    seen = set()
    for f in files:
        name = os.path.basename(f)[:-5]
        text = open(f).read()
        sig, expect, cat = (header(text, k) for k in ("SIGNATURE", "EXPECT", "CATEGORY"))
        problems = []
        if not sig or not expect or not cat or header(text, "WHY") is None:
            problems.append("header incomplete")
        elif not set(expect.split("|")) <= REASONS:
            problems.append("unknown reason in EXPECT: " + expect)
        r = subprocess.run(["llm-fuse-build-kernel", "--signature", sig or "", "--chip",
                            "sm_90", "--out-dir", os.path.join(out, name), "--quiet", f],
                           capture_output=True, text=True)
        if r.returncode:
            problems.append("does not build: " + (r.stdout + r.stderr)[-300:])
        else:
            built += 1
        if expect == "accept":
            good += 1
        else:
            bad += 1
            seen.update(c for c in CATEGORIES if c in (cat or ""))
        failed += bool(problems)
        print("%-28s %-48s %s" % (name, expect, "; ".join(problems) or "built"))
    missing = [c for c in CATEGORIES if c not in seen]
    if missing:
        print("categories not covered: " + ", ".join(missing))
    if bad < 30:
        print("fewer than 30 wrong kernels")
    print("%d kernel(s): %d built, %d bad with an expected reason, %d good" % (
        len(files), built, bad, good))
    return 1 if failed or missing or bad < 30 else 0


if __name__ == "__main__":
    sys.exit(main())
