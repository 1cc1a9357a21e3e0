#!/usr/bin/env python3
"""entry_io.py - read and write pattern-table entry files.

    kernels/table/entry_io.py cat ENTRY     print an entry's JSON text

The shipped table's entries are gzip files, kernels/table/v1/<name>.json.gz
(a fixed header: no file name, mtime 0, so the bytes are the same on every
build); entries a user's cache grows are plain <name>.json. The C loader
(llm_client/table.c) reads both. A path named X.json that does not exist is
read from X.json.gz, so scripts may name an entry either way.
"""
import gzip
import json
import os
import sys


def resolve(path):
    """The file an entry path names: X.json, else X.json.gz."""
    if not path.endswith(".gz") and not os.path.exists(path) and os.path.exists(path + ".gz"):
        return path + ".gz"
    return path


def read_entry_text(path):
    """The JSON text of an entry file, compressed or not."""
    path = resolve(path)
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read()
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def read_entry(path):
    """An entry file's JSON object."""
    return json.loads(read_entry_text(path))


def write_entry_gz(path, text):
    """Writes `text` gzip-compressed with a fixed header (no name, mtime 0)."""
    with open(path, "wb") as fh:
        fh.write(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "cat":
        sys.exit(__doc__.split("\n\n")[1])
    sys.stdout.write(read_entry_text(sys.argv[2]))


if __name__ == "__main__":
    main()
