#!/usr/bin/env python3
"""evict_stage.py - stages the streaming-load A/B for the GPU machine
(bench/table/evict-prepare.sh runs it; builder/streaming_loads.cpp).

    evict_stage.py STAGE BUILD_BIN MODEL.mlir...

For each model (one memory-bound subgraph each, e.g. held-out models made
by `heldout.py gen`): outlines it, builds the default lowering's plan
(llm-fuse-reference --build: STAGE/<sg>/plan.json, with the opmath truth for
16-bit IR), asks the pass offline (verify=none, sm_90a, replay set empty)
which table entry answers, and builds each tune variant the entry admits
at the subgraph's sizes twice (llm-fuse-build-kernel, sm_90a):
STAGE/<sg>/v<k>/ as the table has it and STAGE/<sg>/v<k>nt/ with every
load of a global buffer marked `nontemporal = true`, which the builder
emits as an L2 evict-first streaming load. STAGE/cases.json lists them.
(Since session 26 the table's row max and row sum entries stream already,
so their two builds are the same kernel.)
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)

# `vector.load %m[...] : memref<...>` / `memref.load ...` of a memref that
# is not in shared memory (address space 3): the attribute goes before ':'.
LOAD = re.compile(r"^(\s*%[\w.]+ = (?:vector|memref)\.load %[\w.]+\[[^\]]*\])( : memref<([^>]*)>)",
                  re.M)


def mark_nontemporal(text):
    n = 0

    def sub(m):
        nonlocal n
        if re.search(r",\s*3\s*$", m.group(3)):
            return m.group(0)
        n += 1
        return m.group(1) + " {nontemporal = true}" + m.group(2)
    return LOAD.sub(sub, text), n


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("evict_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-600:]))
    return r


def main():
    stage, binp, models = sys.argv[1], sys.argv[2], sys.argv[3:]
    opt = os.path.join(binp, "llm-fuse-opt")
    work = os.path.join(stage, "models")
    empty = os.path.join(stage, "empty")
    os.makedirs(work, exist_ok=True)
    os.makedirs(empty, exist_ok=True)
    cases = []
    for path in models:
        name = os.path.basename(path)[:-len(".mlir")]
        outl = os.path.join(work, name + ".outlined.mlir")
        run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
        run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90",
             "--out-dir", stage, outl])
        rep = os.path.join(work, name + ".json")
        cache = os.path.join(stage, "cache-" + name)
        run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
             "pattern-table=%s cache-dir=%s report=%s" % (
                 empty, os.path.join(ROOT, "kernels/table"), cache, rep), path, "-o", os.devnull],
            env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
        shutil.rmtree(cache, ignore_errors=True)
        for s in json.load(open(rep))["subgraphs"]:
            ent = s.get("model", "")
            case = dict(case=name, sg=s["name"], signature=s["signature"], entry=ent,
                        variants={})
            cases.append(case)
            if "/" not in ent:
                print("evict_stage: %s %s: no table entry (%s)" % (name, s["name"], ent))
                continue
            tmpl = read_entry(os.path.join(ROOT, "kernels/table/v1",
                                               ent.split("/", 1)[1]))["template"]
            for i, (label, text) in enumerate(variants(tmpl, bind_sizes(tmpl, s["signature"]))):
                nt, marked = mark_nontemporal(text)
                for tag, t in (("v%d" % i, text), ("v%dnt" % i, nt)):
                    j = build_kernel(binp, os.path.join(stage, s["name"], tag), t, s["signature"])
                    print("evict_stage: %-34s %s %-6s %-14s %s %s" % (
                        name, s["name"], tag, label, "built" if j.get("ok") else "FAILED",
                        (j.get("diagnostics") or j.get("message", ""))[:120].strip()))
                    if j.get("ok"):
                        case["variants"][tag] = dict(label=label, nontemporal_loads=marked
                                                     if tag.endswith("nt") else 0)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
