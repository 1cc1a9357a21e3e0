#!/usr/bin/env python3
"""write_entries.py - kernels/table/build.py's entries of some modules only.

    python3 bench/table/write_entries.py --opt BUILD/bin/llm-fuse-opt [--check] MODULE...

Makes the entries of the named spec modules of kernels/table (rows_any,
attn_any, importer_any, ...) with build.py's own code (spec_entries,
entry_of, write_entry_gz: the bytes build.py writes) and writes those that
are new or differ; every other entry of the table is left as it is. For a
helper who changed one generator while others change theirs: build.py
itself writes every stale entry of every module. Prints one line per entry
written (new / changed) and a count; with --check, writes nothing and exits
1 if any would be written. Entries that a module no longer makes are not
removed (kernels/table/build.py removes them).
"""
import argparse
import importlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "kernels", "table")
sys.path.insert(0, TABLE)
import build  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", default=os.path.join(ROOT, "build", "bin", "llm-fuse-opt"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("modules", nargs="+")
    a = ap.parse_args()
    out_dir = os.path.join(TABLE, "v1")
    changed = 0
    for m in a.modules:
        mod = importlib.import_module(m)
        for name, text in build.spec_entries(a.opt, mod):
            name += ".gz"
            path = os.path.join(out_dir, name)
            old = build.read_entry_text(path) if os.path.exists(path) else None
            if old == text:
                continue
            changed += 1
            print("%s %s" % ("new" if old is None else "changed", name))
            if not a.check:
                build.write_entry_gz(path, text)
    # the pattern index: these modules' keys added or updated (build.py
    # alone drops the keys no entry has any more)
    if build.PATTERN_TEXTS:
        texts = {}
        if os.path.exists(build.INDEX):
            texts = json.loads(build.read_entry_text(build.INDEX))["patterns"]
        merged = dict(texts, **build.PATTERN_TEXTS)
        if merged != texts:
            changed += 1
            print("changed %s" % os.path.basename(build.INDEX))
            if not a.check:
                build.write_entry_gz(build.INDEX, build.index_text(merged))
    print("write_entries: %d entr%s %s" % (changed, "y" if changed == 1 else "ies",
                                          "to write" if a.check else "written"))
    return 1 if a.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
