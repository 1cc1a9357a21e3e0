#!/usr/bin/env python3
"""build.py - the shipped pattern table's row-kernel templates.

    kernels/table/build.py [--opt BUILD/bin/llm-fuse-opt] [--check]

For every row kernel of kernels/handwritten/gen_rows.py (norms, softmax,
row reductions, residual + RMSNorm, bias + GELU; not attention), emits a
template in which the row count is free: the generator runs with a sentinel
row count, which becomes the template's S0 (`{{S0}}` in the memref types and
the grid, `S0` inside placeholders and requirements), with a
`// llm-fuse.template-size S0` line; the row length stays fixed (S1 and any
other size are the kernel's). The pattern key and the sizes come from the
outliner run on the kernel's example model, so the entry is found for the
same math at any row count. Writes kernels/table/v1/<pattern[0:16]>-<name>.json
(format in docs/pattern-table.md; the checksum is llm_client/table.c's).

Python runs here, when the table is built; instantiation at compile time is
C (llm_client/table.c). The kernels a template yields are verified on the
GPU like any candidate before they are swapped.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "kernels", "handwritten"))
import gen_rows  # noqa: E402

SENTINEL = 8 * 1000003  # a row count no other number in a kernel equals
SCHEMA = "llm-fuse-table-entry/1"
ARCHS = ["sm_80", "sm_90", "sm_90a"]


def checksum(pattern, archs, sizes, klass, text):
    s = "%s\n%s\n%s\n" % (SCHEMA, pattern, ",".join(archs))
    s += ",".join("S%d=%s" % (i, "*" if v is None else v) for i, v in enumerate(sizes))
    s += "\n%s\n" % klass + text
    return "sha256:" + hashlib.sha256(s.encode()).hexdigest()


def templatize(text):
    """The sentinel row count becomes S0: bare in placeholders and in
    requirement lines, {{S0}} elsewhere. The generated header comment (its
    launch arithmetic is for the sentinel) gives way to a short one."""
    out = []
    body = text[text.index("gpu.module"):]
    for line in body.split("\n"):
        s = str(SENTINEL)
        if "llm-fuse.tune-require" in line:
            line = line.replace(s, "S0")
        else:
            while "{{" + s in line or s + " " in line and "{{" in line:
                i = line.find("{{")
                j = line.find("}}", i)
                if i < 0 or j < 0:
                    break
                inner = line[i + 2:j].replace(s, "S0")
                if inner == line[i + 2:j]:
                    break
                line = line[:i + 2] + inner + line[j:]
            line = line.replace(s, "{{S0}}")
        for derived in (SENTINEL // 2, SENTINEL // 4, SENTINEL // 8):
            assert str(derived) not in line, ("a row-derived number survived", line)
        out.append(line)
    return "\n".join(out)


def outline(opt, example):
    path = os.path.join(ROOT, "examples", example + ".mlir")
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.json")
        subprocess.run([opt, "--llm-fuse-outline=remarks=false report=" + rep, path, "-o",
                        os.devnull], check=True)
        return json.load(open(rep))


def groups_of(report):
    gs = report.get("groups") or report.get("subgraphs") or []
    return {g["fingerprint"]: g for g in gs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", default=os.path.join(ROOT, "build", "bin", "llm-fuse-opt"))
    ap.add_argument("--check", action="store_true", help="exit 1 if an entry is stale")
    a = ap.parse_args()
    out_dir = os.path.join(HERE, "v1")
    os.makedirs(out_dir, exist_ok=True)
    wanted, stale = {}, []
    reports = {}
    for p in gen_rows.KERNELS:
        if p["gen"] == "attention":
            continue
        fp = gen_rows.FINGERPRINTS[p["sg"]]
        if p["example"] not in reports:
            reports[p["example"]] = groups_of(outline(a.opt, p["example"]))
        g = reports[p["example"]].get(fp)
        if not g:
            sys.exit("build.py: %s not outlined from examples/%s.mlir" % (p["sg"], p["example"]))
        sizes = [g["pattern_sizes"]["S%d" % i] for i in range(len(g["pattern_sizes"]))]
        if sizes[0] != p["R"]:
            sys.exit("build.py: %s: S0 is %d, not the row count %d" % (p["sg"], sizes[0], p["R"]))
        if p["R"] in sizes[1:]:
            sys.exit("build.py: %s: the row count is also another size" % p["sg"])
        q = dict(p, R=SENTINEL)
        if p.get("rpb", 1) > 1:  # RPB variants must divide the sentinel too
            assert SENTINEL % (2 * p["rpb"]) == 0
        text = gen_rows.generate(q)
        tmpl = templatize(text)
        lines = tmpl.split("\n")
        assert lines[0].startswith("gpu.module")
        head = [
            lines[0],
            "  // Pattern-table template from kernels/handwritten/gen_rows.py: %s (%s)."
            % (p["kernel"], p["sg"]),
            "  // The row count is S0 (free); the other sizes are fixed: %s."
            % ", ".join("S%d = %d" % (i, v) for i, v in enumerate(sizes) if i),
            "  // llm-fuse.template-size S0",
        ]
        tmpl = "\n".join(head + lines[1:])
        fixed = [None] + sizes[1:]
        klass = g.get("class", "?")
        entry = {
            "schema": SCHEMA,
            "pattern": g["pattern"],
            "archs": ARCHS,
            "class": klass,
            "sizes": {"S%d" % i: v for i, v in enumerate(fixed)},
            "template": tmpl,
            "source": "kernels/handwritten/gen_rows.py %s (%s, verified on an H200 at %d rows)"
                      % (p["kernel"], p["sg"], p["R"]),
            "checksum": checksum(g["pattern"], ARCHS, fixed, klass, tmpl),
        }
        name = "%s-%s.json" % (g["pattern"][:16], p["kernel"])
        text = json.dumps(entry, indent=1) + "\n"
        wanted[name] = text
        path = os.path.join(out_dir, name)
        if a.check:
            if not os.path.exists(path) or open(path).read() != text:
                stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    for old in os.listdir(out_dir):
        if old.endswith(".json") and old not in wanted:
            if a.check:
                stale.append(os.path.join(out_dir, old))
            else:
                os.remove(os.path.join(out_dir, old))
    if stale:
        sys.exit("stale (rerun kernels/table/build.py): " + ", ".join(stale))
    if not a.check:
        print("%d template(s) in %s" % (len(wanted), out_dir))


if __name__ == "__main__":
    main()
