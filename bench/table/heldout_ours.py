#!/usr/bin/env python3
"""heldout_ours.py - on the GPU machine, after heldout-device.sh's pass runs:
stages every kernel the pass swapped in, so that torch_time.py can time it
in its own process, with its own timer, beside torch eager and
torch.compile (one harness for both sides of the ratio; the pass's own
timing, llm-fuse-verify's, is kept in the reports).

    heldout_ours.py OUT [--arch sm_90a] [--jobs 8]

For each subgraph a report in OUT/reports/ says was swapped: its kernel
text from the pass's cache (OUT/cache/v1/<key[:2]>/<cache_key>.json, the
text the pass verified and swapped, its tune knobs bound) is built again
with llm-fuse-build-kernel (on PATH: bench/loop/device-env.sh) into
OUT/ours/<subgraph>/ (result.json: grid, block, parameters, tensor maps;
kernel.cubin), and the cubin is compared with the cache's. Prints one line
per subgraph; OUT/ours/index.json lists them.
"""
import argparse
import base64
import concurrent.futures
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skinny_stage import build_kernel  # noqa: E402


def stage_one(out, arch, s):
    name, key = s["name"], s.get("cache_key") or ""
    d = os.path.join(out, "ours", name)
    rec = dict(subgraph=name, cache_key=key, signature=s.get("signature"))
    entry = os.path.join(out, "cache", "v1", key[:2], key + ".json")
    try:
        e = json.load(open(entry))
    except (OSError, ValueError) as ex:
        rec["error"] = "no cache entry %s: %s" % (entry, ex)
        return rec
    j = build_kernel("", d, e["kernel"], s["signature"], chip=arch)  # the tool on PATH
    if not j.get("ok"):
        rec["error"] = "build: %s" % (j.get("message") or "?")[:300]
        return rec
    cub = open(os.path.join(d, "kernel.cubin"), "rb").read()
    if e.get("cubin"):
        cached = base64.b64decode(e["cubin"])
        rec["same_cubin"] = hashlib.sha256(cached).digest() == hashlib.sha256(cub).digest()
        if not rec["same_cubin"]:  # time what the pass swapped in
            open(os.path.join(d, "kernel.cubin"), "wb").write(cached)
    rec["dir"] = d
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--jobs", type=int, default=8)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    todo, seen = [], set()
    rdir = os.path.join(out, "reports")
    for f in sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []:
        try:
            rep = json.load(open(os.path.join(rdir, f)))
        except (OSError, ValueError):
            continue
        for s in rep.get("subgraphs", []):
            if s.get("decision") == "swapped" and s["name"] not in seen:
                seen.add(s["name"])
                todo.append(s)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        recs = list(ex.map(lambda s: stage_one(out, a.arch, s), todo))
    for r in recs:
        print("ours %-20s %s" % (r["subgraph"], r.get("error") or (
            "staged" + ("" if r.get("same_cubin", True) else " (rebuilt cubin differs: "
                        "the cache's is timed)"))))
    os.makedirs(os.path.join(out, "ours"), exist_ok=True)
    json.dump(recs, open(os.path.join(out, "ours", "index.json"), "w"), indent=1)
    print("ours: %d swapped kernel(s) staged, %d failed" % (
        sum(1 for r in recs if "dir" in r), sum(1 for r in recs if "error" in r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
