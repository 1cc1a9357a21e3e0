#!/usr/bin/env python3
"""What the llm-fuse pass adds to a compile when every kernel is cached:
prints a table. Runs here (no GPU): the pass outlines, looks each
subgraph up in a warm cache, and keeps the original ops (nothing verified),
so this is the pass's fixed cost: partition, outline, cache lookups,
report. Medians of --repeat runs of the whole process.

  bench/pass_overhead.py [--build build] [--repeat 9] [--model examples/minigpt_block.mlir]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, env, repeat):
    ts = []
    for _ in range(repeat):
        t = time.monotonic()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ts.append((time.monotonic() - t) * 1000.0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--model", default=os.path.join(ROOT, "examples", "minigpt_block.mlir"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="lf-overhead.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_FUSE_")}
    env["LLM_FUSE_LIBCUDA"] = os.path.join(tmp, "none.so")
    opt = os.path.join(a.build, "bin", "llm-fuse-opt")
    comp = os.path.join(a.build, "bin", "llm-fuse-compile")
    cache = os.path.join(tmp, "cache")
    fuse = "--llm-fuse=offline=true arch=sm_90 remarks=false cache-dir=%s report=%s" % (
        cache, os.path.join(tmp, "r.json"))
    # Warm the cache (this run asks the replay provider and builds).
    subprocess.run([opt, fuse, a.model, "-o", os.devnull], check=True, env=env,
                   stderr=subprocess.DEVNULL)
    n = len(json.load(open(os.path.join(tmp, "r.json")))["subgraphs"])
    rows = [
        ("llm-fuse-opt, no pass", [opt, a.model, "-o", os.devnull]),
        ("llm-fuse-opt --llm-fuse, warm cache", [opt, fuse, a.model, "-o", os.devnull]),
        ("llm-fuse-compile --no-llm-fuse", [comp, a.model, "-o", os.path.join(tmp, "a.o"),
                                            "--chip", "sm_90", "--no-llm-fuse"]),
        ("llm-fuse-compile with the pass, warm cache",
         [comp, a.model, "-o", os.path.join(tmp, "b.o"), "--chip", "sm_90",
          "--llm-fuse-options", fuse.split("=", 1)[1]]),
    ]
    res = [(name, timed(cmd, env, a.repeat)) for name, cmd in rows]
    print("| run (%s, %d distinct subgraphs) | median ms |" % (os.path.basename(a.model), n))
    print("|---|---:|")
    for name, ms in res:
        print("| %s | %.1f |" % (name, ms))
    print("\npass overhead with a warm cache: %.1f ms in llm-fuse-opt (%.1f ms per "
          "subgraph), %.1f ms in llm-fuse-compile (%.1f ms per subgraph)" % (
              res[1][1] - res[0][1], (res[1][1] - res[0][1]) / n,
              res[3][1] - res[2][1], (res[3][1] - res[2][1]) / n))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
