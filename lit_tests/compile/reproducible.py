#!/usr/bin/env python3
"""Reproducibility: two offline builds of the same model with the same
kernel cache are byte-identical (object and header).

1. Nothing swapped (no GPU here): two builds share one cache that the
   first run fills (unverified entries) and the second run reads.
2. Kernels swapped from the cache: the same entries re-stored as
   "verified", the way a build on a GPU machine leaves them (the cache is
   the lockfile). A build machine without a GPU then swaps them without
   verifying again; two such builds must be identical, and differ from the
   unswapped object. Marking entries verified by hand is this test's
   fixture only: the compiler itself marks an entry verified only after
   llm-fuse-verify accepted it.

  reproducible.py TOOLS_DIR SRC_ROOT TMP
"""
import filecmp
import glob
import json
import os
import subprocess
import sys

tools, src, tmp = sys.argv[1:4]
model = os.path.join(src, "examples", "minigpt_block.mlir")
env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_FUSE_")}
env["LLM_FUSE_LIBCUDA"] = os.path.join(tmp, "no-libcuda.so")  # no GPU
fails = 0


def check(cond, what):
    global fails
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    fails += not cond


def build(out_dir, cache):
    os.makedirs(out_dir, exist_ok=True)
    report = os.path.join(out_dir, "report.json")
    r = subprocess.run(
        [os.path.join(tools, "llm-fuse-compile"), model, "-o",
         os.path.join(out_dir, "model.o"), "--chip", "sm_90",
         "--llm-fuse-options",
         "offline=true arch=sm_90 remarks=false cache-dir=%s report=%s" % (
             cache, report)],
        capture_output=True, text=True, env=env, timeout=300)
    if r.returncode:
        print(r.stderr)
    check(r.returncode == 0, "llm-fuse-compile into %s" % os.path.basename(out_dir))
    return json.load(open(report))["summary"]


def same(a, b):
    return all(filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False)
               for f in ("model.o", "model.h"))


cache = os.path.join(tmp, "cache")
s1 = build(os.path.join(tmp, "a"), cache)
s2 = build(os.path.join(tmp, "b"), cache)
check(s1["swapped"] == 0 and s2["swapped"] == 0, "nothing swapped without a GPU")
check(same(os.path.join(tmp, "a"), os.path.join(tmp, "b")),
      "two builds with one cache: object and header byte-identical")

# The lockfile case.
locked = os.path.join(tmp, "locked")
n = 0
for path in glob.glob(os.path.join(cache, "v1", "*", "*.json")):
    e = json.load(open(path))
    k = e["key"]
    rec = e["verification"]
    rec["status"] = "verified"
    rec["fixture"] = "marked verified by lit_tests/compile/reproducible.py"
    files = {}
    for part in ("kernel", "ptx"):
        files[part] = os.path.join(tmp, "%s.%d" % (part, n))
        open(files[part], "w").write(e[part])
    cubin = os.path.join(tmp, "cubin.%d" % n)
    subprocess.run([os.path.join(tools, "llm-fuse-cache"), "--cache-dir", cache,
                    "show", e["digest"][:16], "--cubin-out", cubin],
                   check=True, capture_output=True)
    subprocess.run([os.path.join(tools, "llm-fuse-cache"), "--cache-dir", locked,
                    "put", "--fingerprint", k["fingerprint"], "--arch", k["arch"],
                    "--toolchain", k["toolchain"], "--provider", k["provider"],
                    "--model", k["model"], "--prompt-version", k["prompt_version"],
                    "--kernel", files["kernel"], "--ptx", files["ptx"],
                    "--cubin", cubin, "--status", "verified",
                    "--verification", json.dumps(rec),
                    "--created", "2026-01-01T00:00:00Z"],
                   check=True, capture_output=True)
    n += 1
check(n == 6, "6 cache entries re-stored as verified (%d)" % n)
s3 = build(os.path.join(tmp, "c"), locked)
s4 = build(os.path.join(tmp, "d"), locked)
check(s3["swapped"] == 6 and s4["swapped"] == 6,
      "6 kernels swapped from the cache without a GPU (%d, %d)" % (
          s3["swapped"], s4["swapped"]))
check(same(os.path.join(tmp, "c"), os.path.join(tmp, "d")),
      "two builds with swapped kernels: object and header byte-identical")
check(not filecmp.cmp(os.path.join(tmp, "a", "model.o"),
                      os.path.join(tmp, "c", "model.o"), shallow=False),
      "the swapped object differs from the unswapped one")
sys.exit(1 if fails else 0)
