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
same math at any row count. Writes kernels/table/v1/<pattern[0:16]>-<name>.json.gz
(gzip of the entry's JSON, no name and time in its header, so the bytes are
the same on every run; format in docs/pattern-table.md; the checksum is
llm_client/table.c's). entry_io.read_entry() (also build.read_entry) reads an
entry, compressed or not.

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
import gen_gemm  # noqa: E402
import gen_rows  # noqa: E402
sys.path.insert(0, HERE)
from entry_io import read_entry, read_entry_text, write_entry_gz  # noqa: E402,F401

SENTINEL = 8 * 1000003  # rows: a count no other number in a kernel equals
SCHEMA = "llm-fuse-table-entry/1"
ARCHS = ["sm_80", "sm_90", "sm_90a"]


def checksum(pattern, archs, sizes, klass, text, precision=None):
    s = "%s\n%s\n%s\n" % (SCHEMA, pattern, ",".join(archs))
    s += ",".join("S%d=%s" % (i, "*" if v is None else v) for i, v in enumerate(sizes))
    s += "\n%s\n" % klass
    if precision:  # only entries with a precision (tf32) have the line
        s += "precision=%s\n" % precision
    s += text
    return "sha256:" + hashlib.sha256(s.encode()).hexdigest()


P = 1000003  # prime: every number the sentinel size yields is a multiple


def size_expr(x, d):
    """The expression in S0 of a number x = c * P made from the sentinel
    S0 = d * P: x = S0 * c / d, written with exact integer steps."""
    from fractions import Fraction
    f = Fraction(x // P, d)
    a, b = f.numerator, f.denominator
    if a == 1 and b == 1:
        return "S0"
    if a == 1:
        return "S0 / %d" % b
    if b == 1:
        return "S0 * %d" % a
    return "S0 / %d * %d" % (b, a)


def templatize(text, d):
    """Every number derived from the sentinel S0 = d * P (the size itself,
    tile counts, grids) becomes its expression in S0: bare inside
    placeholders and requirement lines, a {{...}} placeholder elsewhere.
    The generated header comment (its arithmetic is for the sentinel) is
    dropped."""
    import re
    body = text[text.index("gpu.module"):]
    num = re.compile(r"(?<![0-9A-Za-wyz_.])([0-9]{7,})(?![0-9])")
    out = []
    for line in body.split("\n"):
        def rewrite(seg, inside):
            def one(m):
                x = int(m.group(1))
                if x % P:
                    return m.group(1)
                e = size_expr(x, d)
                return ("(%s)" % e if " " in e else e) if inside else "{{%s}}" % e
            return num.sub(one, seg)
        if "llm-fuse.tune-require" in line:
            line = rewrite(line, True)
        else:
            parts = re.split(r"(\{\{.*?\}\})", line)
            line = "".join(rewrite(x, x.startswith("{{")) for x in parts)
        assert not re.search(r"\b\d*%d\d*\b" % P, line) or "{{" in line, line
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


def families():
    """(name, sg, fingerprint, example, size key, sentinel multiplier d,
    archs, generate(sentinel) -> text, source) of every templated kernel:
    the row kernels (rows free) and the GEMMs (M free; d = 4096 keeps every
    row-tile count a multiple of 16 for tiles up to 256 rows)."""
    out = []
    for p in gen_rows.KERNELS:
        if p["gen"] == "attention":
            continue
        out.append(dict(name=p["kernel"], sg=p["sg"], fp=gen_rows.FINGERPRINTS[p["sg"]],
                        example=p["example"], size=p["R"], d=8, archs=ARCHS,
                        # the row reductions read x once: streaming loads
                        # (docs/kernel-contract.md "Streaming loads"; 7-9%
                        # faster on the H200, bench/NOTES.md session 26)
                        gen=lambda r, p=p: gen_rows.generate(
                            dict(p, R=r, nt=p["gen"] == "rowreduce")),
                        source="kernels/handwritten/gen_rows.py %s (%s, verified on an H200 at "
                               "%d rows)" % (p["kernel"], p["sg"], p["R"])))
    wgmma = {sg for sg, _ in gen_gemm.WGMMA_VARIANTS}
    for fname, cfg in gen_gemm.all_configs():
        sm90a = fname.endswith(".sm90a.mlir")
        archs = ["sm_90a"] if sm90a else sorted(cfg["chips"]) + (
            [] if cfg["sg"] in wgmma else ["sm_90a"])

        def gen(m, cfg=cfg):
            c = dict(cfg)
            M = cfg["M"]
            c["signature"] = cfg["signature"].replace("tensor<%dx" % M, "tensor<%dx" % m) \
                .replace("tensor<1x%dx" % M, "tensor<1x%dx" % m)
            c["product"] = cfg["product"].replace("[%d," % M, "[%d," % m)
            c["M"] = m
            return gen_gemm.generate_sentinel(c, M)
        out.append(dict(name=fname[:-5].replace(".", "_"), sg=cfg["sg"], fp=cfg["fingerprint"],
                        example=cfg["example"], size=cfg["M"], d=4096, archs=archs, gen=gen,
                        source="kernels/handwritten/gen_gemm.py %s (%s %s, verified on an H200 "
                               "at M = %d)" % (fname, cfg["sg"], cfg["kind"], cfg["M"])))
    return out


def outline_text(opt, text):
    """The outline report's groups of a model given as text."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.mlir")
        with open(path, "w") as fh:
            fh.write(text)
        rep = os.path.join(d, "r.json")
        r = subprocess.run([opt, "--llm-fuse-outline=remarks=false report=" + rep, path, "-o",
                            os.devnull], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("does not outline: " + r.stderr.strip()[-400:])
        rep = json.load(open(rep))
        return rep.get("groups") or rep.get("subgraphs") or []


# llm_client/tune.h's limits on one text's declarations: a template over them
# is refused by the pass when it is instantiated, so refuse it here instead.
TUNE_MAX_DECLS, TUNE_MAX_VALUES, TUNE_MAX_REQUIRES = 12, 8, 8


def check_tune_limits(tmpl, what):
    """Raises ValueError when the template declares more tune lines, knob
    values or requirement lines than llm_client/tune.h accepts."""
    decls = [l for l in tmpl.split("\n") if "// llm-fuse.tune " in l]
    reqs = [l for l in tmpl.split("\n") if "// llm-fuse.tune-require" in l]
    problems = []
    if len(decls) > TUNE_MAX_DECLS:
        problems.append("%d llm-fuse.tune lines (at most %d)" % (len(decls), TUNE_MAX_DECLS))
    if len(reqs) > TUNE_MAX_REQUIRES:
        problems.append("%d tune-require lines (at most %d)" % (len(reqs), TUNE_MAX_REQUIRES))
    for l in decls:
        knob, _, values = l.split("// llm-fuse.tune ", 1)[1].partition("=")
        n = len([v for v in values.split(",") if v.strip()])
        if n > TUNE_MAX_VALUES:
            problems.append("knob %s has %d values (at most %d)" % (knob.strip(), n, TUNE_MAX_VALUES))
    if problems:
        raise ValueError("%s: over llm_client/tune.h's limits: %s" % (what, "; ".join(problems)))


# The pattern index (kernels/table/patterns.json.gz): each entry's pattern
# key -> the abstracted text it is the hash of (the outline record's
# `pattern_text`), so that a subgraph whose sizes coincide finds the same
# pattern at distinct sizes (llm_client/table.h, lf_table_coincident;
# docs/pattern-key.md, "Coincident sizes"). Filled by entry_of().
INDEX = os.path.join(HERE, "patterns.json.gz")
INDEX_SCHEMA = "llm-fuse-table-patterns/1"
PATTERN_TEXTS = {}


def index_text(texts):
    """The index file's JSON text for {key: text}."""
    return json.dumps({"schema": INDEX_SCHEMA, "patterns": dict(sorted(texts.items()))}, indent=1) + "\n"


def entry_of(g, archs, sizes, tmpl, source, precision=None):
    """The JSON text of one entry: sizes is the list S0.. with None for a free
    size; precision "tf32" for an entry only TF32-mode requests get (exact
    entries have no such member). A template over tune.h's limits is an
    error (check_tune_limits)."""
    check_tune_limits(tmpl, source)
    if g.get("pattern_text"):
        PATTERN_TEXTS[g["pattern"]] = g["pattern_text"]
    klass = g.get("class", "?")
    entry = {
        "schema": SCHEMA,
        "pattern": g["pattern"],
        "archs": archs,
        "class": klass,
        "sizes": {"S%d" % i: v for i, v in enumerate(sizes)},
    }
    if precision:
        entry["precision"] = precision
    entry.update({
        "template": tmpl,
        "source": source,
        "checksum": checksum(g["pattern"], archs, sizes, klass, tmpl, precision),
    })
    return json.dumps(entry, indent=1) + "\n"


def sentinel_entries(opt):
    """(file name, text) of the generators' kernels with S0 free."""
    out = []
    reports = {}
    for f in families():
        if f["example"] not in reports:
            reports[f["example"]] = groups_of(outline(opt, f["example"]))
        g = reports[f["example"]].get(f["fp"])
        if not g:
            sys.exit("build.py: %s not outlined from examples/%s.mlir" % (f["sg"], f["example"]))
        sizes = [g["pattern_sizes"]["S%d" % i] for i in range(len(g["pattern_sizes"]))]
        if sizes[0] != f["size"]:
            print("build.py: %s: S0 is %d, not the free size %d; not templated"
                  % (f["name"], sizes[0], f["size"]), file=sys.stderr)
            continue
        if f["size"] in sizes[1:]:
            print("build.py: %s: the free size is also another size; not templated" % f["name"],
                  file=sys.stderr)
            continue
        try:
            tmpl = templatize(f["gen"](f["d"] * P), f["d"])
        except AssertionError as e:
            print("build.py: %s: the generator refuses the sentinel size (%s); not templated"
                  % (f["name"], e or "assertion"), file=sys.stderr)
            continue
        import re
        divisors = sorted({int(b) for b in re.findall(r"S0 / (\d+)", tmpl)})
        lines = tmpl.split("\n")
        assert lines[0].startswith("gpu.module")
        head = [
            lines[0],
            "  // Pattern-table template: %s." % f["source"],
            "  // S0 is free; the other sizes are fixed: %s."
            % ", ".join("S%d = %d" % (i, v) for i, v in enumerate(sizes) if i),
            "  // llm-fuse.template-size S0",
        ] + ["  // llm-fuse.tune-require S0 %% %d == 0" % b for b in divisors]
        tmpl = "\n".join(head + lines[1:])
        fixed = [None] + sizes[1:]
        name = "%s-%s.json" % (g["pattern"][:16], f["name"])
        out.append((name, entry_of(g, f["archs"], fixed, tmpl, f["source"])))
    return out


def spec_entries(opt, module):
    """(file name, text) of the templates a module of this folder writes
    directly. module.templates() yields dicts:
      name     the entry's file-name suffix (unique in the table);
      example  the MLIR text of a model, one of whose subgraphs is the target;
      pick     callable(groups) -> the target group of the outline report;
      render   callable(group) -> (template text, sizes): the gpu.module text
               with `// llm-fuse.template-size SK` lines for its free sizes,
               and the list S0.. with None for a free size, a number for a
               fixed one;
      archs, source; optional precision ("tf32").
    """
    out = []
    for t in module.templates():
        groups = outline_text(opt, t["example"])
        g = t["pick"](groups)
        if g is None:
            sys.exit("build.py: %s: the example has no such subgraph" % t["name"])
        tmpl, sizes = t["render"](g)
        if len(sizes) != len(g["pattern_sizes"]):
            sys.exit("build.py: %s: %d sizes for a pattern of %d" % (
                t["name"], len(sizes), len(g["pattern_sizes"])))
        name = "%s-%s.json" % (g["pattern"][:16], t["name"])
        out.append((name, entry_of(g, t["archs"], sizes, tmpl, t["source"], t.get("precision"))))
    return out


SPEC_MODULES = ["rows_any", "gemm_any", "attn_any", "importer_any", "tf32_any", "skinny_any", "bmm_any"]
SPEC_MODULES += ["colred_any"]  # reductions over the leading dimension(s)
SPEC_MODULES += ["bmm16_any"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", default=os.path.join(ROOT, "build", "bin", "llm-fuse-opt"))
    ap.add_argument("--check", action="store_true", help="exit 1 if an entry is stale")
    ap.add_argument("--index-only", action="store_true",
                    help="write (or --check) only the pattern index, not the entries")
    a = ap.parse_args()
    out_dir = os.path.join(HERE, "v1")
    os.makedirs(out_dir, exist_ok=True)
    wanted, stale = {}, []
    entries = sentinel_entries(a.opt)
    sys.path.insert(0, HERE)
    import importlib
    for m in SPEC_MODULES:
        if os.path.exists(os.path.join(HERE, m + ".py")):
            entries += spec_entries(a.opt, importlib.import_module(m))
    for name, text in ([] if a.index_only else entries):
        if name + ".gz" in wanted:
            sys.exit("build.py: two entries named %s" % name)
        wanted[name + ".gz"] = text
        path = os.path.join(out_dir, name + ".gz")
        if a.check:
            if not os.path.exists(path) or read_entry_text(path) != text:
                stale.append(path)
        else:
            if not os.path.exists(path) or read_entry_text(path) != text:
                write_entry_gz(path, text)
    for old in ([] if a.index_only else os.listdir(out_dir)):
        if (old.endswith(".json") or old.endswith(".json.gz")) and old not in wanted:
            if a.check:
                stale.append(os.path.join(out_dir, old))
            else:
                os.remove(os.path.join(out_dir, old))
    if PATTERN_TEXTS:
        text = index_text(PATTERN_TEXTS)
        if not os.path.exists(INDEX) or read_entry_text(INDEX) != text:
            if a.check:
                stale.append(INDEX)
            else:
                write_entry_gz(INDEX, text)
    else:
        print("build.py: %s reports no pattern_text (an older llm-fuse-opt): %s left as it is"
              % (a.opt, INDEX), file=sys.stderr)
    if stale:
        sys.exit("stale (rerun kernels/table/build.py): " + ", ".join(stale))
    if not a.check:
        print("%d template(s) in %s" % (len(wanted), out_dir))


if __name__ == "__main__":
    main()
