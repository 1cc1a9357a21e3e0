#!/usr/bin/env python3
"""cached_kernels.py REPORT CACHE_DIR OUT_DIR - writes the kernel text the
pass stored in the cache for each subgraph of an llm-fuse report
(subgraphs[].cache_key -> CACHE_DIR/v1/<key[0:2]>/<key>.json, "kernel") to
OUT_DIR/<subgraph>.mlir, and prints one line per subgraph: its name, the
file, or why there is none."""
import json
import os
import sys

report, cache, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
for s in sorted(json.load(open(report))["subgraphs"], key=lambda s: s["name"]):
    key = s.get("cache_key") or ""
    path = os.path.join(cache, "v1", key[:2], key + ".json")
    if not key or not os.path.exists(path):
        print("%s: no cache entry" % s["name"])
        continue
    text = json.load(open(path)).get("kernel")
    if not isinstance(text, str):
        print("%s: cache entry without a kernel" % s["name"])
        continue
    dst = os.path.join(out, s["name"] + ".mlir")
    with open(dst, "w") as f:
        f.write(text)
    print("%s: %d bytes" % (s["name"], len(text)))
