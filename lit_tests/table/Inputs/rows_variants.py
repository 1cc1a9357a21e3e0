#!/usr/bin/env python3
"""rows_variants.py - build every tune variant of a pattern-table row entry
at given sizes (lit_tests/table/rows-small*.test).

  rows_variants.py ENTRY.json S0=..,S1=.. SIGNATURE OUTDIR [BUILD_KERNEL]

Binds the entry's free sizes as the pass does (`// llm-fuse.tune SK = v`),
then runs llm-fuse-build-kernel --tune-variant k for k = 0, 1, ... (sm_90a)
and prints one line per variant: its label, built or FAILED, and how many
global loads its PTX issues before the first shuffle (the loads in flight
before the first reduction step: one memory round trip when that is every
load of the row)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (the shipped entries are .json.gz)


def main():
    entry, sizes, sig, out = sys.argv[1:5]
    tool = sys.argv[5] if len(sys.argv) > 5 else "llm-fuse-build-kernel"
    sz = dict(kv.split("=") for kv in sizes.split(","))
    text = read_entry(entry)["template"]
    text = re.sub(r"^(\s*)// llm-fuse\.template-size (S\d+)\s*$",
                  lambda m: "%s// llm-fuse.tune %s = %s" % (m.group(1), m.group(2), sz[m.group(2)]),
                  text, flags=re.M)
    os.makedirs(out, exist_ok=True)
    src = os.path.join(out, "entry.mlir")
    with open(src, "w") as fh:
        fh.write(text)
    k = 0
    while k < 16:
        d = os.path.join(out, "v%d" % k)
        r = subprocess.run([tool, "--signature", sig, "--chip", "sm_90a", "--out-dir", d,
                            "--tune-variant", str(k), src], capture_output=True, text=True)
        m = re.search(r"variant \d+ of (\d+): (.*)", r.stderr)
        if not m:
            if k == 0:
                sys.exit("rows_variants: no variant: %s" % r.stderr[-400:])
            break
        label = " ".join(x for x in m.group(2).split() if not re.match(r"S\d+=", x))
        try:
            ok = bool(json.loads(r.stdout).get("ok"))
        except ValueError:
            ok = False
        early = "-"
        ptx = os.path.join(d, "kernel.ptx")
        if ok and os.path.exists(ptx):
            body = open(ptx).read()
            cut = body.find("shfl.sync")
            early = len(re.findall(r"\bld\.global", body[:cut if cut >= 0 else len(body)]))
        print("variant %d of %s: %s %s, %s global loads before the first shuffle"
              % (k, m.group(1), label, "built" if ok else "FAILED", early))
        k += 1
        if k >= int(m.group(1)):
            break


if __name__ == "__main__":
    main()
