#!/usr/bin/env python3
"""Whether two builds of llm-fuse-build-kernel make the same kernels: builds
each kernel with both and compares the cubins (and the PTX, comments
stripped) byte for byte. For builder changes that must not change a kernel
(bench/NOTES.md, session 26: the tiling-switch prune; no GPU run needed
when every cubin is identical).

  bench/table/build_same_cubin.py kernels WORK --old OLD --new NEW
      the kernels `build_time.py collect` put in WORK (index.json), as the
      pass's child builds them (--in-process)
  bench/table/build_same_cubin.py variants --old OLD --new NEW GLOB...
      every tune variant (--tune-variant K) of the pattern-table entries
      kernels/table/v1/GLOB, their template sizes bound to --size (1024);
      the signature is guessed from the kernel's memref arguments (the last
      one the output), so entries with several outputs are skipped

Prints one line per kernel (SAME / DIFF, cubin sha1) and the counts; exit
status 1 if any cubin differs. Python 3 standard library only.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)


def sha(data):
    return hashlib.sha1(data).hexdigest()[:12]


def build(tool, args, out_dir):
    for f in ("result.json", "kernel.ptx", "kernel.cubin"):
        p = os.path.join(out_dir, f)
        if os.path.exists(p):
            os.unlink(p)
    r = subprocess.run([tool, "--quiet", "--out-dir", out_dir] + args,
                       capture_output=True, text=True)
    try:
        with open(os.path.join(out_dir, "result.json")) as f:
            res = json.load(f)
    except (OSError, ValueError):
        return None, r.stderr
    ptx = cubin = b""
    if os.path.exists(os.path.join(out_dir, "kernel.ptx")):
        with open(os.path.join(out_dir, "kernel.ptx"), "rb") as f:
            ptx = b"\n".join(l for l in f.read().split(b"\n") if not l.startswith(b"//"))
    if os.path.exists(os.path.join(out_dir, "kernel.cubin")):
        with open(os.path.join(out_dir, "kernel.cubin"), "rb") as f:
            cubin = f.read()
    return (res.get("ok"), res.get("kind"), sha(cubin), sha(ptx)), r.stderr


def compare(old, new, args, label, tmp, counts):
    a, err = build(old, args, os.path.join(tmp, "a"))
    b, _ = build(new, args, os.path.join(tmp, "b"))
    if a is None or b is None:
        return False, err
    same = a[:3] == b[:3]
    counts["same" if same else "diff"] += 1
    counts["ptx_differs"] += a[3] != b[3]
    print("%-70s %s ok=%s cubin %s%s%s" % (
        label[:70], "SAME" if same else "DIFF", a[0], a[2],
        "" if same else " vs %s (%s)" % (b[2], b[1]),
        "" if a[3] == b[3] else " (PTX text differs)"), flush=True)
    return True, err


def kernels(args, tmp, counts):
    with open(os.path.join(args.work, "index.json")) as f:
        index = json.load(f)
    seen = set()
    for e in index:
        if e["file"] in seen:
            continue
        seen.add(e["file"])
        compare(args.old, args.new, ["--in-process", "--signature", e["signature"],
                                     "--chip", e["chip"], e["file"]],
                "%s %s" % (e["model"], e["subgraph"]), tmp, counts)


def variants(args, tmp, counts):
    files = []
    for g in args.globs:
        files += sorted(glob.glob(os.path.join(ROOT, "kernels", "table", "v1", g)) or
                        glob.glob(os.path.join(ROOT, "kernels", "table", "v1", g + ".gz")))
    for path in files:
        t = read_entry(path)["template"]
        bound = re.sub(r"// llm-fuse.template-size S(\d+)",
                       lambda m: "// llm-fuse.tune S%s = %d" % (m.group(1), args.size), t)
        head = re.search(r"gpu.func @\w+\(([^)]*)\) kernel", bound)
        if not head:
            continue
        tys = [x for x in re.findall(r"memref<([^>]*)>", head.group(1)) if ", 3" not in x]
        tys = ["tensor<%s>" % re.sub(r"\{\{S\d+\}\}", str(args.size), x) for x in tys]
        sig = "(%s) -> %s" % (", ".join(tys[:-1]), tys[-1])
        kfile = os.path.join(tmp, "kernel.mlir")
        with open(kfile, "w") as f:
            f.write(bound)
        for k in range(64):
            ok, err = compare(args.old, args.new,
                              ["--tune-variant", str(k), "--signature", sig,
                               "--chip", "sm_90a", kfile],
                              "%s v%d" % (os.path.basename(path)[:-5], k), tmp, counts)
            if not ok:  # past the last variant, or a signature that does not fit
                if k == 0:
                    print("%-70s skipped: %s" % (os.path.basename(path)[:70],
                                                  err.strip().split("\n")[-1][:100]))
                break


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernels")
    k.add_argument("work")
    v = sub.add_parser("variants")
    v.add_argument("globs", nargs="+")
    v.add_argument("--size", type=int, default=1024)
    for p in (k, v):
        p.add_argument("--old", required=True)
        p.add_argument("--new", required=True)
    args = ap.parse_args()
    counts = {"same": 0, "diff": 0, "ptx_differs": 0}
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "a"))
        os.makedirs(os.path.join(tmp, "b"))
        (kernels if args.cmd == "kernels" else variants)(args, tmp, counts)
    print("cubins: %d same, %d differ; PTX text differs on %d" % (
        counts["same"], counts["diff"], counts["ptx_differs"]))
    return 1 if counts["diff"] else 0


if __name__ == "__main__":
    sys.exit(main())
