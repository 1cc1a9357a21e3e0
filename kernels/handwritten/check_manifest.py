#!/usr/bin/env python3
"""check_manifest.py - keep hand-written kernels in sync with the outliner.

    check_manifest.py MANIFEST LLM_FUSE_OPT EXAMPLES_DIR

For every manifest entry, outlines EXAMPLES_DIR/<example>.mlir with
`LLM_FUSE_OPT --llm-fuse-outline=remarks=false` and checks that

  * a function with the entry's llm_fuse.fingerprint exists, named as the
    entry's subgraph (sg_ + the fingerprint's first 16 hex digits),
  * its function type equals the entry's signature (the kernel's argument
    list is derived from it: one memref per input, then per result),
  * the entry's file exists beside the manifest and holds a
    `gpu.func @<kernel>`.

Prints one line per entry and exits 1 on the first kind of mismatch found
(after checking all entries). Python 3 standard library only.
"""
import json
import os
import re
import subprocess
import sys

FUNC_RE = re.compile(r"func\.func private @(sg_[0-9a-f]+)\((.*?)\)\s*->\s*(.*?)\s+attributes\s*\{(.*)\}\s*\{\s*$")
ARG_RE = re.compile(r"%[A-Za-z0-9_]+:\s*")


def split_top(text):
    """Split on commas outside <...>, (...) and [...]."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def outlined_functions(opt, path):
    r = subprocess.run([opt, "--llm-fuse-outline=remarks=false", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed on %s: %s" % (opt, path, r.stderr.strip()[:500]))
    funcs = {}
    for line in r.stdout.splitlines():
        m = FUNC_RE.search(line.strip())
        if not m:
            continue
        name, args, results, attrs = m.groups()
        fp = re.search(r'llm_fuse\.fingerprint\s*=\s*"([0-9a-f]+)"', attrs)
        ins = [ARG_RE.sub("", a) for a in split_top(args)]
        sig = "(%s) -> %s" % (", ".join(ins), results.strip())
        funcs[fp.group(1) if fp else name] = (name, sig)
    return funcs


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    manifest, opt, examples = sys.argv[1:]
    here = os.path.dirname(os.path.abspath(manifest))
    entries = json.load(open(manifest))
    cache, bad = {}, 0
    for e in entries:
        ex = e["example"]
        if ex not in cache:
            cache[ex] = outlined_functions(opt, os.path.join(examples, ex + ".mlir"))
        funcs = cache[ex]
        problems = []
        if e["fingerprint"] not in funcs:
            problems.append("no outlined function with fingerprint %s in %s (outliner "
                            "changed? outlined now: %s)"
                            % (e["fingerprint"], ex, ", ".join(n for n, _ in funcs.values())))
        else:
            name, sig = funcs[e["fingerprint"]]
            if name != e["subgraph"]:
                problems.append("function is @%s, manifest says @%s" % (name, e["subgraph"]))
            if sig != e["signature"]:
                problems.append("signature %r, manifest says %r" % (sig, e["signature"]))
        kpath = os.path.join(here, e["file"])
        if not os.path.exists(kpath):
            problems.append("missing kernel file %s" % e["file"])
        elif not re.search(r"gpu\.func @%s\(" % re.escape(e["kernel"]), open(kpath).read()):
            problems.append("%s has no gpu.func @%s" % (e["file"], e["kernel"]))
        if problems:
            bad += 1
            print("MISMATCH %s (%s): %s" % (e["subgraph"], ex, "; ".join(problems)))
        else:
            print("ok %s %s %s" % (e["subgraph"], ex, e["signature"]))
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
