#!/usr/bin/env python3
"""Build time of pattern-table instantiations: prints a table (a benchmark,
not a timed test; issue 15's budget is 0.5 s per subgraph).

Step 1 (collect): runs the pass offline (no GPU: only variant 0 of each
subgraph is built) over every model of a held-out folder with one fresh
cache, and keeps each cached kernel (the instantiated text), its signature
and the build times the pass recorded:

  bench/table/build_time.py collect MODELS_DIR WORK [--opt BUILD/bin/llm-fuse-opt]

Step 2 (time): builds every collected kernel again as the pass's child
does (`llm-fuse-build-kernel --in-process`: process start included),
--repeat times, and prints per kernel its cpu time (user+system of the
build and its ptxas: about its time on an idle core), wall time, stage
times, and the count under the budget; with --tool-b, two builds of the
tool alternate on each kernel (an A/B under the same load):

  bench/table/build_time.py time WORK [--tool BUILD/bin/llm-fuse-build-kernel]
                                 [--tool-b OTHER] [--repeat 3]
                                 [--budget-ms 500] [--json OUT]
                                 [--a-batch MODE] [--b-batch MODE]
                                 [--tool-c THIRD] [--c-batch MODE]

--a-batch / --b-batch server|plain: that side's builds go through one
long-lived `TOOL --batch` process, i.e. lf_build_kernel() as the pass
calls it, with the build server (builder/server.c: each build a fork of a
pre-started tool, so no process start per build) or with a plain child
(LLM_FUSE_BUILD_SERVER=0: fork + exec per build, as before the server).
cpu is then the child's own (user+system of the build process and its
ptxas, from wait4); the server's one start per process is not in it and
is printed once (`--serve` start-up cpu, measured as a plain `--help`).

MODELS_DIR: e.g. from `python3 bench/table/heldout.py gen DIR --seed 1
--count 40 --opt BUILD/bin/llm-fuse-opt` (DIR/models). Times are CPU-bound
and noisy on a shared machine: compare medians taken under the same load.
"""
import argparse
import glob
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ("parse", "contract", "lower", "llvm", "ptxas")


def collect(args):
    work = os.path.abspath(args.work)
    cache = os.path.join(work, "cache")
    if os.path.exists(cache):
        sys.exit("%s exists: collect into a fresh WORK" % cache)
    os.makedirs(os.path.join(work, "kernels"))
    env = dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent")
    models = sorted(glob.glob(os.path.join(args.models, "*.mlir")))
    if not models:
        sys.exit("no *.mlir in %s" % args.models)
    index = []
    for m in models:
        name = os.path.basename(m)[:-5]
        report = os.path.join(work, "report-%s.json" % name)
        t = time.monotonic()
        r = subprocess.run(
            [args.opt, "--llm-fuse=cache-dir=%s arch=%s max-concurrency=1 "
             "report=%s" % (cache, args.chip, report), m, "-o", os.devnull],
            env=env, capture_output=True, text=True)
        wall = (time.monotonic() - t) * 1000.0
        if r.returncode != 0 or not os.path.exists(report):
            print("%s: pass failed:\n%s" % (name, r.stderr[-1500:]))
            continue
        with open(report) as f:
            rep = json.load(f)
        # "N variant(s) declared (M excluded by their requirements)": with a
        # GPU the pass builds (and times) all N, one after another.
        declared = {m.group(1): int(m.group(2)) for m in re.finditer(
            r"acquire: (\S+): request \d+: (\d+) variant\(s\) declared",
            r.stderr)}
        for sg in rep["subgraphs"]:
            key = sg.get("cache_key") or ""
            log = sg.get("attempt_log") or []
            path = os.path.join(cache, "v1", key[:2], key + ".json")
            if not key or not os.path.exists(path):
                continue
            with open(path) as f:
                entry = json.load(f)
            if (entry.get("provenance") or {}).get("provider") != "table":
                continue
            b = entry["verification"]["build"]
            kfile = os.path.join(work, "kernels", "%s-%s.mlir" % (name, sg["name"]))
            with open(kfile, "w") as f:
                f.write(entry["kernel"])
            index.append({
                "model": name, "subgraph": sg["name"], "class": sg["class"],
                "signature": sg["signature"], "chip": b.get("chip", args.chip),
                "kernel": b.get("kernel"), "file": kfile,
                "template": entry["provenance"].get("model", ""),
                "text_bytes": len(entry["kernel"]),
                "pass_build_ms": [a.get("build_ms") for a in log],
                "variants_built": len(log),
                "variants_declared": declared.get(sg["name"], 1),
                "cached_ms": b.get("ms"), "model_wall_ms": wall})
        print("%s: %d table kernel(s) so far, %.0f ms" % (name, len(index), wall),
              flush=True)
    with open(os.path.join(work, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print("%d kernels in %s/index.json" % (len(index), work))
    return 0


def family(e):
    t = os.path.basename(e["template"]).split("-", 1)[-1][:-5]
    return t if len(t) < 40 else t[:37] + "..."


def cpu_ms():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000.0


def build_once(tool, e, out_dir):
    """One build as the pass's child runs it: `--in-process` (one process
    start, the MLIR libraries loaded once, ptxas run from it)."""
    t, c = time.monotonic(), cpu_ms()
    r = subprocess.run([tool, "--in-process", "--quiet", "--out-dir", out_dir,
                        "--signature", e["signature"], "--chip", e["chip"],
                        e["file"]], capture_output=True, text=True)
    wall = (time.monotonic() - t) * 1000.0
    cpu = cpu_ms() - c
    try:
        with open(os.path.join(out_dir, "result.json")) as f:
            res = json.load(f)
    except (OSError, ValueError):
        sys.exit("no result for %s:\n%s" % (e["file"], r.stderr[-2000:]))
    return wall, cpu, res


class Batch:
    """One `TOOL --batch` process: lf_build_kernel() per request line."""

    def __init__(self, tool, mode):
        env = dict(os.environ, LLM_FUSE_BUILD_SERVER="1" if mode == "server" else "0")
        self.p = subprocess.Popen([tool, "--batch"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env, text=True)

    def build(self, e):
        t = time.monotonic()
        self.p.stdin.write("%s\t%s\t%s\n" % (e["file"], e["signature"], e["chip"]))
        self.p.stdin.flush()
        res = json.loads(self.p.stdout.readline())
        wall = (time.monotonic() - t) * 1000.0
        if "error" in res:
            sys.exit("batch build of %s: %s" % (e["file"], res["error"]))
        return wall, res["cpu_ms"], res

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def startup_cpu(tool, n=5):
    """cpu ms of starting the tool (`--help`: the dynamic linking of
    libMLIR / libLLVM and nothing else), the median of n"""
    out = []
    for _ in range(n):
        c = cpu_ms()
        subprocess.run([tool, "--help"], capture_output=True)
        out.append(cpu_ms() - c)
    return statistics.median(out)


def summarize(e, runs):
    res = runs[-1][2]
    # Stage times: the fastest of the runs (the least disturbed by other
    # load); cpu: user+system of the process tree (the build and its
    # ptxas), about its time on an idle core (it is single-threaded).
    ms = {k: min((r.get("ms") or {}).get(k, 0) for _, _, r in runs)
          for k in STAGES + ("total",)}
    ms["other"] = max(0.0, min(w for w, _, _ in runs) -
                      sum(ms[k] for k in STAGES))
    return {"model": e["model"], "subgraph": e["subgraph"],
            "family": family(e), "kb": e["text_bytes"] / 1024.0,
            "ok": bool(res.get("ok")), "kind": res.get("kind"),
            "wall": statistics.median(w for w, _, _ in runs),
            "cpu": statistics.median(c for _, c, _ in runs), "ms": ms,
            "variants": e.get("variants_declared", 1)}


def report(rows, args, label):
    print("\n### %s\n" % label)
    print("| model | subgraph | template | KB | variants | ok | cpu ms | wall ms "
          "| parse | lower | llvm | ptxas | other |")
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        m = r["ms"]
        print("| %s | %s | %s | %.0f | %d | %s | %.0f | %.0f | %.0f | %.0f "
              "| %.0f | %.0f | %.0f |" % (
                  r["model"], r["subgraph"], r["family"], r["kb"],
                  r["variants"], "yes" if r["ok"] else r["kind"], r["cpu"],
                  r["wall"], m["parse"], m["lower"], m["llvm"], m["ptxas"],
                  m["other"]))
    cpus = [r["cpu"] for r in rows]
    walls = [r["wall"] for r in rows]
    print("\n%s: %d kernels built (%d failed), %d builds each; cpu: %d under "
          "%.0f ms, median %.0f ms, max %.0f ms, sum %.0f ms; wall: %d under, "
          "median %.0f ms, max %.0f ms"
          % (label, len(rows), sum(not r["ok"] for r in rows), args.repeat,
             sum(c < args.budget_ms for c in cpus), args.budget_ms,
             statistics.median(cpus), max(cpus), sum(cpus),
             sum(w < args.budget_ms for w in walls), statistics.median(walls),
             max(walls)))
    print("  stage sums (fastest run of each): " + ", ".join(
        "%s %.0f ms" % (k, sum(r["ms"][k] for r in rows))
        for k in STAGES + ("other",)))
    print("  with a GPU every declared variant is built, one after another: "
          "variants median %.0f, max %d; variant 0's cpu x count: median "
          "%.0f ms, max %.0f ms"
          % (statistics.median(r["variants"] for r in rows),
             max(r["variants"] for r in rows),
             statistics.median(r["cpu"] * r["variants"] for r in rows),
             max(r["cpu"] * r["variants"] for r in rows)))
    fams = {}
    for r in rows:
        fams.setdefault(r["family"], []).append(r["cpu"])
    print("\n| template | kernels | median cpu ms | max |")
    print("|---|---:|---:|---:|")
    for f, c in sorted(fams.items(), key=lambda x: -statistics.median(x[1])):
        print("| %s | %d | %.0f | %.0f |" % (f, len(c), statistics.median(c),
                                             max(c)))


def time_all(args):
    with open(os.path.join(args.work, "index.json")) as f:
        index = json.load(f)
    tools = [args.tool] + ([args.tool_b] if args.tool_b else [])
    tools += [args.tool_c] if args.tool_b and args.tool_c else []
    out_dir = os.path.join(os.path.abspath(args.work), "out")
    os.makedirs(out_dir, exist_ok=True)
    modes = [args.a_batch, args.b_batch, args.c_batch][:len(tools)]
    batches = [Batch(t, m) if m else None for t, m in zip(tools, modes)]
    seen, rows = set(), [[] for _ in tools]
    for e in index:
        if e["file"] in seen:
            continue
        seen.add(e["file"])
        runs = [[] for _ in tools]
        for _ in range(args.repeat):  # A and B alternate: the same load
            for i, tool in enumerate(tools):
                runs[i].append(batches[i].build(e) if batches[i] else
                               build_once(tool, e, out_dir))
        for i in range(len(tools)):
            rows[i].append(summarize(e, runs[i]))
    for b in batches:
        if b:
            b.close()
    for i, tool in enumerate(tools):
        how = {"server": " (batch, build server)", "plain": " (batch, plain child)"}.get(modes[i], "")
        report(rows[i], args, "ABC"[i] + ": " + tool + how)
    if "server" in modes:
        print("\nthe build server's start, once per process (not in the cpu "
              "above): %.0f ms cpu (`%s --help`, median of 5)"
              % (startup_cpu(tools[modes.index("server")]), tools[modes.index("server")]))
    for i in range(1, len(tools)):
        a = sum(r["cpu"] for r in rows[0])
        b = sum(r["cpu"] for r in rows[i])
        print("\n%s - A: cpu sum %+.0f ms (%+.1f%%), median per kernel %+.0f "
              "ms" % ("ABC"[i], b - a, 100.0 * (b - a) / a, statistics.median(
                  y["cpu"] - x["cpu"] for x, y in zip(rows[0], rows[i]))))
    print("load average at the end: %.2f (2 cores)" % os.getloadavg()[0])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("models")
    c.add_argument("work")
    c.add_argument("--opt", default=os.path.join(ROOT, "build/bin/llm-fuse-opt"))
    c.add_argument("--chip", default="sm_90a")
    t = sub.add_parser("time")
    t.add_argument("work")
    t.add_argument("--tool", default=os.path.join(
        ROOT, "build/bin/llm-fuse-build-kernel"))
    t.add_argument("--tool-b", help="a second build of the tool, timed "
                   "alternately with --tool on each kernel (an A/B)")
    t.add_argument("--tool-c", help="a third build, with --tool-b: A, B, C "
                   "alternate")
    t.add_argument("--c-batch", choices=("server", "plain"),
                   help="C's builds through `TOOL-C --batch` (lf_build_kernel)")
    t.add_argument("--a-batch", choices=("server", "plain"),
                   help="A's builds through `TOOL --batch` (lf_build_kernel)")
    t.add_argument("--b-batch", choices=("server", "plain"),
                   help="B's builds through `TOOL-B --batch` (lf_build_kernel)")
    t.add_argument("--repeat", type=int, default=3)
    t.add_argument("--budget-ms", type=float, default=500.0)
    t.add_argument("--json")
    args = ap.parse_args()
    return collect(args) if args.cmd == "collect" else time_all(args)


if __name__ == "__main__":
    sys.exit(main())
