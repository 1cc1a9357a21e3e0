#!/usr/bin/env python3
"""bench/remote/run.py [BUILD]: what the shared kernel cache costs a build,
on loopback with a real nginx WebDAV store (CPU only; prints tables).

1. Warm builds of the MiniGPT block (6 distinct subgraphs): every kernel in
   the local cache, against every kernel pulled from the store (a cold local
   cache each time), interleaved, 9 runs each. The store's entries are
   verified and signed by a "GPU runner" (the lit tests' fake driver and
   worker, so no GPU is needed) whose key the reader trusts: both builds
   swap all six kernels without verifying. Reported: the pass's own time
   (the report's summary.ms_total), median and spread, and the difference.
2. 100 distinct subgraphs (gen_many.py), a cold local cache and a store
   holding an entry for each key: the requests the build makes, per key,
   from nginx's access log.

Run from the project root after `make build`.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
OPT = os.path.join(BUILD, "bin", "llm-fuse-opt")
CACHE = os.path.join(BUILD, "bin", "llm-fuse-cache")
STORE = os.path.join(ROOT, "lit_tests", "remote", "Inputs", "store.py")
FAKE_ENV = {"LLM_FUSE_LIBCUDA": os.path.join(BUILD, "runtime", "liblf_fake_libcuda.so"),
            "LLM_FUSE_VERIFY": os.path.join(ROOT, "lit_tests", "loop", "Inputs", "fake_verify.py")}
NO_GPU = {"LLM_FUSE_LIBCUDA": "/nonexistent/libcuda.so"}
MINIGPT = os.path.join(ROOT, "examples", "minigpt_block.mlir")
W = tempfile.mkdtemp(prefix="lf-remote-bench.")


def run(cmd, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    e.setdefault("CUDA_HOME", "/usr/local/cuda")
    return subprocess.run(cmd, env=e, check=True, **kw)


def with_store(root, logs, cmd, env=None):
    return run([sys.executable, STORE, "nginx", root, logs, "--"] + cmd, env=env,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def opt(cache, report, extra, model=MINIGPT):
    return [OPT, "--llm-fuse=arch=sm_90 max-refinements=0 remarks=false cache-dir=%s report=%s %s"
            % (cache, report, extra), model, "-o", os.devnull]


def report(path):
    return json.load(open(path))


key = os.path.join(W, "runner.key")
trusted = os.path.join(W, "trusted")
with open(trusted, "w") as f:
    run([CACHE, "keygen", key], stdout=f, stderr=subprocess.DEVNULL)
store, logs = os.path.join(W, "store"), os.path.join(W, "logs")
access = os.path.join(logs, "access.log")

# The runner fills the store.
with_store(store, logs, opt(os.path.join(W, "runner"), os.path.join(W, "runner.json"),
                            "remote-cache=@URL@ signing-key=" + key), env=FAKE_ENV)
warm = os.path.join(W, "warm")
with_store(store, logs, opt(warm, os.path.join(W, "w0.json"),
                            "remote-cache=@URL@ trusted-keys=" + trusted), env=NO_GPU)

local_ms, remote_ms, store_ms = [], [], []
for i in range(9):
    r = os.path.join(W, "l%d.json" % i)
    run(opt(warm, r, "trusted-keys=" + trusted), env=NO_GPU,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    j = report(r)
    assert j["summary"]["swapped"] == 6, j["summary"]
    local_ms.append(j["summary"]["ms_total"])
    r = os.path.join(W, "r%d.json" % i)
    if os.path.exists(access):
        os.remove(access)
    with_store(store, logs, opt(os.path.join(W, "cold%d" % i), r,
                                "remote-cache=@URL@ trusted-keys=" + trusted), env=NO_GPU)
    j = report(r)
    assert j["summary"]["swapped"] == 6, j["summary"]
    sc = j["shared_cache"]
    assert sc["fetched"] == 6 and sc["demoted"] == 0, sc
    remote_ms.append(j["summary"]["ms_total"])
    store_ms.append(sc["requests"]["ms"])
    lines = open(access).read().split("\n")
    requests = [l for l in lines if l]

def fmt(xs):
    return "%7.1f  %7.1f  %7.1f" % (statistics.median(xs), min(xs), max(xs))

print("MiniGPT block, 6 kernels, warm build (pass ms: median  min  max over 9 runs)")
print("  %-44s %s" % ("every kernel in the local cache", fmt(local_ms)))
print("  %-44s %s" % ("every kernel pulled from the store (loopback)", fmt(remote_ms)))
print("  %-44s %s" % ("  of which inside the 6 GET requests", fmt(store_ms)))
print("  %-44s %7.1f ms (target < 100)" % ("added by the store (median difference)",
                                           statistics.median(remote_ms) - statistics.median(local_ms)))
print("  requests per build: %s" % ", ".join(sorted(set(
    "%d %s %s" % (sum(1 for l in requests if l.split()[0] == m and l.split()[2] == s), m, s)
    for m, s in {(l.split()[0], l.split()[2]) for l in requests}))))

# 2. 100 subgraphs.
many = os.path.join(W, "many.mlir")
with open(many, "w") as f:
    run([sys.executable, os.path.join(ROOT, "bench", "remote", "gen_many.py"), "100"], stdout=f)
probe = os.path.join(W, "probe.json")
run(opt(os.path.join(W, "probe"), probe, "", model=many), env=NO_GPU,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
fps = [s["fingerprint"] for s in report(probe)["subgraphs"]]
entry = json.loads(subprocess.run([CACHE, "--cache-dir", warm, "list", "--json"],
                                  capture_output=True, check=True).stdout)[0]
kernel = os.path.join(W, "kernel.mlir")
ptx = os.path.join(W, "kernel.ptx")
with open(kernel, "w") as f:
    f.write(subprocess.run([CACHE, "--cache-dir", warm, "show", entry["digest"], "--kernel"],
                           capture_output=True, check=True, text=True).stdout)
with open(ptx, "w") as f:
    f.write(subprocess.run([CACHE, "--cache-dir", warm, "show", entry["digest"], "--ptx"],
                           capture_output=True, check=True, text=True).stdout)
seed = os.path.join(W, "seed")
for fp in fps:
    run([CACHE, "--cache-dir", seed, "put", "--fingerprint", fp, "--arch", "sm_90",
         "--toolchain", entry["toolchain"], "--provider", "replay", "--model", entry["model"],
         "--prompt-version", entry["prompt_version"], "--kernel", kernel, "--ptx", ptx,
         "--status", "unverified"], stdout=subprocess.DEVNULL)
many_store = os.path.join(W, "many-store")
with_store(many_store, logs, [CACHE, "--cache-dir", seed, "--remote", "@URL@", "push", "--all"])
os.remove(access)
r = os.path.join(W, "many.json")
with_store(many_store, logs, opt(os.path.join(W, "many-cold"), r, "remote-cache=@URL@", model=many),
           env=NO_GPU)
j = report(r)
lines = [l.split() for l in open(access).read().split("\n") if l]
per_key = {}
for l in lines:
    per_key[l[1]] = per_key.get(l[1], 0) + 1
print()
print("100 distinct subgraphs, cold local cache, store holding all 100 entries")
print("  entries fetched: %d; requests: %d (%s); most requests for one key: %d"
      % (j["shared_cache"]["fetched"], len(lines),
         ", ".join("%d %s %s" % (sum(1 for x in lines if x[0] == m and x[2] == s), m, s)
                   for m, s in sorted({(x[0], x[2]) for x in lines})),
         max(per_key.values())))
print("  time inside requests: %.1f ms; pass: %.0f ms; entry size %d bytes"
      % (j["shared_cache"]["requests"]["ms"], j["summary"]["ms_total"],
         os.path.getsize(os.path.join(seed, "v1", os.listdir(os.path.join(seed, "v1"))[0],
                                      os.listdir(os.path.join(seed, "v1", os.listdir(os.path.join(seed, "v1"))[0]))[0]))))
subprocess.run(["rm", "-rf", W])
