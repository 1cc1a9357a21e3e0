#!/usr/bin/env python3
"""verify_bench.py - wall time of verifying one candidate, on the GPU machine.

Verifies the hand-written RMSNorm kernel for the 16384x4096 bf16 subgraph
(sg_07f0dc6cb70576f3) end to end, the way the compiler does: the client
starts llm-fuse-verify as a child (its own process group, watchdog), the
worker sets up CUDA, runs every trial (5 random + spike + signed-zero/
denormal + NaN/Inf, two candidate launches each) and the timing, and prints
its verdict. Target: under 2 s wall.

  scripts/stage-verify.py            # on the build machine
  python3 bench/verify_bench.py [STAGE] [--repeat N]   # on the GPU machine
"""
import json
import os
import subprocess
import sys
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
stage = args[0] if args else os.path.join(root, ".device", "verify")
repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
env = dict(os.environ)
env["LD_LIBRARY_PATH"] = os.path.join(stage, "lib") + ":/usr/local/nvidia/lib64"
name, plan, cand, _, extra = open(os.path.join(stage, "bench.tsv")).read().rstrip("\n").split("\t")
cmd = [os.path.join(stage, "bin", "llm-fuse-verify"), "--isolated",
       "--plan", os.path.join(stage, plan), "--candidate", os.path.join(stage, cand)]
cmd += extra.split()
walls = []
for i in range(repeat):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    walls.append(wall)
    v = json.loads(r.stdout)
    t = v.get("timing", {})
    w = v.get("worker", {})
    print("%s run %d: %s (%s) wall %.3f s; worker %.0f ms (CUDA set-up and loads "
          "%.0f ms); %d trials; candidate %.4f ms, reference %.4f ms median of %d, "
          "speed-up %.1fx" % (name, i, "accepted" if v["accepted"] else "REJECTED",
                              v["reason"], wall, w.get("wall_ms", 0), w.get("setup_ms", 0),
                              len(v["trials"]), t.get("candidate_ms", 0),
                              t.get("reference_ms", 0), t.get("runs", 0),
                              t.get("speedup", 0)))
walls.sort()
print("verify_bench: median wall %.3f s over %d run(s) (target < 2 s): %s" % (
    walls[len(walls) // 2], repeat, "PASS" if walls[len(walls) // 2] < 2 else "FAIL"))
