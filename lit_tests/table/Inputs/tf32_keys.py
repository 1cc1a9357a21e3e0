"""tf32_keys.py EXACT.json TF32.json: per subgraph of two llm-fuse reports
(the same model without and with tf32=1), whether the cache key differs and
the TF32 report's precision member; the exact report must have none."""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("options.tf32", a["options"]["tf32"], b["options"]["tf32"])
for x, y in zip(a["subgraphs"], b["subgraphs"]):
    assert x["name"] == y["name"] and "precision" not in x, x["name"]
    print(x["name"], x["class"], "key", "same" if x["cache_key"] == y["cache_key"] else "differs",
          "precision", y.get("precision"))
print("summary.tf32_subgraphs", a["summary"].get("tf32_subgraphs"), b["summary"].get("tf32_subgraphs"))
