#!/usr/bin/env python3
"""The API-key canary through the whole llm-fuse pass.

A loopback chat server answers the MLP block's two subgraphs with the
hand-written kernels; one reply also echoes the Authorization header (a
hostile server). The pass runs with a fake key in OPENAI_API_KEY, trace
logging, a cache, a record folder and a report. The key must appear in
none of: stdout (the IR), stderr, the report, any file of the cache or the
record folder. The kernels must still have been built and cached, so the
run really went through every stage. Python 3 standard library only.

  canary.py LLM_FUSE_OPT SRC_ROOT TMP
"""
import json
import os
import subprocess
import sys

opt, src, tmp = sys.argv[1:4]
KEY = "sk-canary-pass-8c1f2e9d7a6b5043"
os.makedirs(tmp, exist_ok=True)
hw = os.path.join(src, "kernels", "handwritten")
cfg = os.path.join(tmp, "server.json")
json.dump({"rules": [
    {"match": "@sg_439a925e4900df20(",
     "replies": ["echo-auth-file:" + os.path.join(hw, "sg_439a925e4900df20.mlir")]},
    {"match": "@sg_5cdc21b0bac363b8(",
     "replies": ["file:" + os.path.join(hw, "sg_5cdc21b0bac363b8.mlir")],
     "usage": [1200, 800]}]}, open(cfg, "w"))
server = subprocess.Popen(
    [sys.executable, os.path.join(src, "llm_client", "tests", "kernel_server.py"),
     cfg, os.path.join(tmp, "server.jsonl")],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
port = int(server.stdout.readline())
env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_FUSE_")}
env.update({"OPENAI_API_KEY": KEY, "LLM_FUSE_LOG": "trace",
            "LLM_FUSE_LIBCUDA": os.path.join(tmp, "no-libcuda.so")})
report = os.path.join(tmp, "report.json")
opts = ("pattern-table=none provider=openai endpoint=http://127.0.0.1:%d/v1 model=canary-model "
        "arch=sm_90 cache-dir=%s record-dir=%s report=%s" % (
            port, os.path.join(tmp, "cache"), os.path.join(tmp, "record"), report))
r = subprocess.run([opt, "--llm-fuse=" + opts,
                    os.path.join(src, "examples", "mlp_block.mlir")],
                   capture_output=True, text=True, env=env, timeout=120)
server.stdin.close()
server.wait(timeout=10)

fails = 0


def check(cond, what):
    global fails
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    fails += not cond


check(r.returncode == 0, "llm-fuse-opt exit status %d" % r.returncode)
rep = json.load(open(report))
built = [s["name"] for s in rep["subgraphs"] if (s.get("build") or {}).get("kind") == "ok"]
check(len(built) == 2, "both subgraphs built from the server's replies (%s)" % built)
requests = [json.loads(l) for l in open(os.path.join(tmp, "server.jsonl"))]
check(len(requests) == 2 and all(q["auth_present"] for q in requests),
      "two requests reached the server, each with an Authorization header")
check(any("you sent: Bearer" in (m.get("content") or "")
          for q in requests for m in q["messages"]) is False,
      "the prompts carry no echoed key")

files = {"stdout (the IR)": r.stdout, "stderr (trace log)": r.stderr}
for d in ("cache", "record"):
    for root, _, names in os.walk(os.path.join(tmp, d)):
        for n in names:
            p = os.path.join(root, n)
            files[os.path.relpath(p, tmp)] = open(p, "rb").read().decode("latin-1")
files["report.json"] = open(report).read()
check(any(k.startswith("cache") for k in files), "the cache holds entries")
check(any(k.startswith("record") for k in files), "the exchanges were recorded")
check("REDACTED" in "".join(files.values()), "the echoed key was redacted somewhere")
leaks = [k for k, v in files.items() if KEY in v or KEY[3:] in v]
check(not leaks, "the key is in none of %d outputs%s" % (
    len(files), (": LEAKED in " + ", ".join(leaks)) if leaks else ""))
sys.exit(1 if fails else 0)
