#!/usr/bin/env python3
"""llm_bench.py - how long the acquire step takes (llm-fuse-acquire).

    bench/llm_bench.py [--build-dir build] [--delay 2] [--subgraphs 16]
                       [--concurrency 8] [--opt build/bin/llm-fuse-opt]

1. Concurrency: a loopback chat server (llm_client/tests/kernel_server.py)
   that answers every request after --delay seconds; --subgraphs subgraphs
   at --concurrency in flight. Expected: delay * ceil(N / C) plus overhead,
   not delay * N. Also at concurrency 1 with 4 subgraphs, for contrast.
2. A fully cached run: the MiniGPT block's subgraphs (outlined with --opt
   when given, else the 18 hand-written subgraphs) acquired once through
   the shipped replay set into a fresh cache, then again from the cache;
   the acquire step's own time per subgraph (the report's wall_ms / N), and
   the whole process against a provider=none run of the same tasks.
Prints a table. Python 3 standard library only; no GPU, no network.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "llm_client", "tests", "kernel_server.py")


def acquire(tool, args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("LLM_FUSE_")}
    e["LLM_FUSE_LOG"] = "warn"
    e.update(env or {})
    t0 = time.monotonic()
    r = subprocess.run([tool] + args, capture_output=True, text=True, env=e)
    return r, time.monotonic() - t0


def synthetic_tasks(path, n):
    tasks = []
    for i in range(n):
        fp = "%016x" % (0xb0b0b0b0b0b0b000 + i) + "0" * 48
        tasks.append({"name": "sg_" + fp[:16], "fingerprint": fp, "class": "reduction",
                      "ir": "func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                            "  return %a : tensor<4xf32>\n}\n",
                      "signature": "(tensor<4xf32>) -> tensor<4xf32>", "arch": "sm_90"})
    with open(path, "w") as f:
        json.dump({"tasks": tasks}, f)


def slow_server(tmp, delay):
    cfg = os.path.join(tmp, "server.json")
    with open(cfg, "w") as f:
        json.dump({"rules": [{"match": "*", "delay": delay, "replies": ["good"],
                              "usage": [4000, 800]}]}, f)
    p = subprocess.Popen([sys.executable, SERVER, cfg, os.path.join(tmp, "log.jsonl")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--delay", type=float, default=2.0)
    ap.add_argument("--subgraphs", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--opt")
    args = ap.parse_args()
    tool = os.path.join(args.build_dir, "bin", "llm-fuse-acquire")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server, port = slow_server(tmp, args.delay)
        url = "http://127.0.0.1:%d/v1" % port
        for n, c in ((args.subgraphs, args.concurrency), (4, 1)):
            tasks = os.path.join(tmp, "tasks%d.json" % n)
            synthetic_tasks(tasks, n)
            rep = os.path.join(tmp, "rep%d_%d.json" % (n, c))
            r, wall = acquire(tool, ["--provider", "openai", "--endpoint", url,
                                     "--build", "none", "--max-concurrency", str(c),
                                     "--report", rep, tasks])
            if r.returncode != 0:
                sys.exit("llm-fuse-acquire failed:\n" + r.stdout + r.stderr)
            expect = args.delay * math.ceil(n / c)
            rows.append(("%d subgraphs, %.0f s server, concurrency %d" % (n, args.delay, c),
                         "%.2f s" % wall, "%.2f s" % (json.load(open(rep))["wall_ms"] / 1000),
                         "%.1f s (serial: %.1f s)" % (expect, args.delay * n)))
        server.stdin.close()
        server.wait(timeout=10)

        # Cached run.
        tasks = os.path.join(tmp, "cached.json")
        label = "hand-written set"
        if args.opt:
            out, sg = os.path.join(tmp, "o.mlir"), os.path.join(tmp, "sg.json")
            subprocess.run([args.opt, "--llm-fuse-outline=remarks=false report=" + sg,
                            os.path.join(ROOT, "examples", "minigpt_block.mlir"), "-o", out],
                           check=True, capture_output=True)
            src = ["--outlined", out, "--subgraphs", sg]
            label = "MiniGPT block"
        else:
            ex = json.load(open(os.path.join(ROOT, "llm_client", "prompts", "examples.json")))
            seen, ts = set(), []
            for e in ex["examples"]:
                if e["fingerprint"] in seen:
                    continue
                seen.add(e["fingerprint"])
                ts.append({"name": e["subgraph"], "fingerprint": e["fingerprint"],
                           "class": e["class"], "signature": e["signature"],
                           "ir": "func.func private @%s() { return }" % e["subgraph"],
                           "arch": "sm_90a"})
            with open(tasks, "w") as f:
                json.dump({"tasks": ts}, f)
            src = [tasks]
        cache = os.path.join(tmp, "cache")
        common = ["--offline", "--build", "none", "--cache-dir", cache]
        r, fill = acquire(tool, common + src)
        if r.returncode != 0:
            sys.exit("filling the cache failed:\n" + r.stdout + r.stderr)
        best = None
        for _ in range(5):
            rep = os.path.join(tmp, "cached-rep.json")
            r, wall = acquire(tool, common + ["--report", rep] + src)
            data = json.load(open(rep))
            n = len(data["subgraphs"])
            if any(g["outcome"] != "cached" for g in data["subgraphs"]):
                sys.exit("expected only cache hits:\n" + r.stdout)
            _, none_wall = acquire(tool, ["--provider", "none"] + src)
            cur = (data["wall_ms"], wall, none_wall)
            best = cur if best is None or cur[1] < best[1] else best
        rows.append(("%s, %d subgraphs, all cached (acquire step)" % (label, n),
                     "%.3f s" % best[1], "%.1f ms" % best[0],
                     "%.2f ms per subgraph" % (best[0] / n)))
        rows.append(("  same, whole process minus provider=none",
                     "%.3f s" % best[1], "%.3f s" % best[2],
                     "%.1f ms per subgraph" % ((best[1] - best[2]) * 1000 / n)))
    w = max(len(r[0]) for r in rows)
    print("%-*s  %9s  %12s  %s" % (w, "case", "process", "acquire", "expected / per subgraph"))
    for r in rows:
        print("%-*s  %9s  %12s  %s" % (w, r[0], r[1], r[2], r[3]))


if __name__ == "__main__":
    main()
