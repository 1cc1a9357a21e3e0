#!/usr/bin/env python3
"""table_entries.py - writes pattern table entries made from a shipped one,
for tests of the table's order (lit_tests/table/next-entry.test).

    table_entries.py SRC.json OUT_DIR NAME:SIZES:KERNEL[:corrupt] ...

Each NAME becomes OUT_DIR/v1/<pattern[0:16]>-NAME.json: SRC's entry with
its sizes replaced by SIZES ("*,4096": S0 free, S1 = 4096; "8192,4096":
both fixed) and every `@<kernel of SRC>` renamed to `@KERNEL` (the fake
verifier judges a candidate by its kernel's name: wrong_* is rejected), with
the checksum llm_client/table.c checks; ":corrupt" breaks the checksum.
"""
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (the shipped entries are .json.gz)


def checksum(e):
    sizes = ",".join("S%d=%s" % (i, "*" if v is None else v)
                     for i, v in enumerate(e["sizes"].values()))
    text = "llm-fuse-table-entry/1\n%s\n%s\n%s\n%s\n" % (
        e["pattern"], ",".join(e["archs"]), sizes, e["class"])
    if e.get("precision"):
        text += "precision=%s\n" % e["precision"]
    text += e["template"]
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def main():
    src = read_entry(sys.argv[1])
    out = os.path.join(sys.argv[2], "v1")
    os.makedirs(out, exist_ok=True)
    old = re.search(r"gpu\.func @(\w+)", src["template"]).group(1)
    for spec in sys.argv[3:]:
        parts = spec.split(":")
        name, sizes, kernel = parts[0], parts[1], parts[2]
        e = dict(src)
        e["sizes"] = {"S%d" % i: None if v == "*" else int(v)
                      for i, v in enumerate(sizes.split(","))}
        e["template"] = src["template"].replace("@" + old, "@" + kernel)
        e["source"] = "table_entries.py %s (from %s)" % (name, old)
        e["checksum"] = checksum(e)
        if parts[3:] == ["corrupt"]:
            e["checksum"] = e["checksum"][:-4] + "0000"
        path = os.path.join(out, "%s-%s.json" % (e["pattern"][:16], name))
        with open(path, "w") as f:
            json.dump(e, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
