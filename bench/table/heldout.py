#!/usr/bin/env python3
"""heldout.py - held-out models for the pattern table (issue 15, point 7).

The shipped examples that the table's entries come from, with their sizes
rewritten to random values (the row count always; sometimes the row length
or hidden sizes; sometimes the element type), compiled by the llm-fuse pass
on the offline default (provider=replay: the replay set, then the table).

  heldout.py gen OUTDIR [--seed N] [--count K] [--opt BIN]
      OUTDIR/models/NAME.mlir and OUTDIR/models.json. Every model parses and
      verifies (llm-fuse-opt), its largest tensor is at most 1 GiB, and none
      of its subgraphs' fingerprints is in the replay set or is a table
      entry's source (the table has never seen it).
  heldout.py offline OUTDIR [--opt BIN] [--jobs N] [--keep-cache]
      Compiles every model with the pass without a GPU
      (LLM_FUSE_LIBCUDA=/nonexistent), reports in OUTDIR/reports, and prints
      the table and totals; OUTDIR/offline.json.
  heldout.py summarize OUTDIR [--json FILE] [--torch FILE]
      The same table from OUTDIR/reports (with kernel / fallback ms, speedup
      and verified counts when the reports come from a GPU run);
      OUTDIR/summary.json unless --json. With OUTDIR/torch.json (or
      --torch; bench/table/torch_time.py writes it on the GPU machine), a
      second table per subgraph: ours ms, fallback ms, torch eager ms,
      torch.compile ms, ours/compile, and for memory-bound subgraphs
      (reduction, elementwise) with a tensor of 64 MiB or more the
      fraction of the measured copy bandwidth (bytes moved = inputs +
      outputs, once each); totals against issue 15 point 7's targets.
  heldout.py device-script OUTDIR [--opt BIN]
      Copies OUTDIR's models to .device/heldout (ignored by git, carried to
      the GPU machine with .device/loop), with .device/heldout/torch/
      manifest.json: every distinct subgraph translated to a torch
      function (bench/table/torch_ref.py) with its signature; prints the
      command to run there (bench/table/heldout-device.sh).

Python 3 standard library only.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)
CAP_BYTES = 1 << 30
MAX_ROWS = 65536

# ---- The source models ---------------------------------------------------
#
# Per example: its file, element type, row count, the other sizes it may
# vary (name -> value in the file), which of them also appear as float
# constants (a mean's divisor: `4096.0` must follow the row length), the
# hidden-size choices, and the element types a textual substitution may
# try (the verifier decides; see dtype_rewrite).

ROW_WIDTHS = [256, 512, 768, 1000, 1024, 1536, 2048, 2560, 3072, 4000, 4096,
              5120, 6144, 8192, 11008, 12288, 14336, 16384]

FAMILIES = {
    "rmsnorm": dict(src="examples/rmsnorm.mlir", dtype="bf16", rows=16384,
                    hidden={"H": 4096}, floats=["H"]),
    "layernorm": dict(src="examples/layernorm.mlir", dtype="bf16", rows=16384,
                      hidden={"H": 4096}, floats=["H"]),
    "layernorm_f32": dict(src="examples/layernorm_f32.mlir", dtype="f32",
                          rows=4096, hidden={"H": 16384}, floats=["H"]),
    "softmax": dict(src="examples/softmax.mlir", dtype="bf16", rows=16384,
                    hidden={"H": 8192}),
    "softmax_tosa": dict(src="examples/tosa/softmax.mlir", dtype="f32",
                         rows=4096, hidden={"H": 16384}),
    "rmsnorm_tosa": dict(src="examples/tosa/rmsnorm.mlir", dtype="bf16",
                         rows=16384, hidden={"H": 4096}, floats=["H"]),
    "rowsum": dict(src="examples/bench/rowsum.mlir", dtype="f32", rows=16384,
                   hidden={"H": 8192}),
    "rowmax": dict(src="examples/bench/rowmax.mlir", dtype="f32", rows=16384,
                   hidden={"H": 8192}),
    "add_rmsnorm": dict(src="examples/bench/add_rmsnorm.mlir", dtype="bf16",
                        rows=16384, hidden={"H": 4096}, floats=["H"]),
    "bias_gelu": dict(src="examples/bench/bias_gelu.mlir", dtype="bf16",
                      rows=16384, hidden={"H": 8192}),
    "mlp_block": dict(src="examples/mlp_block.mlir", dtype="bf16", rows=4096,
                      hidden={"D": 768, "F": 3072}),
    "swiglu": dict(src="examples/swiglu.mlir", dtype="bf16", rows=8192,
                   hidden={"D": 4096, "F": 14336}),
    "minigpt_block": dict(src="examples/minigpt_block.mlir", dtype="f32",
                          rows=1024,
                          # hidden = 64 x heads; q/k/v offsets and widths follow
                          hidden={"D": 768, "D2": 1536, "D3": 2304, "F": 3072,
                                  "HEADS": 12},
                          floats=["D"]),
    "minigpt_mlp": dict(src="examples/bench/minigpt_mlp.mlir", dtype="f32",
                        rows=65536, hidden={"D": 768, "F": 3072},
                        floats=["D"]),
    "gemm_epilogue": dict(src="examples/gemm_epilogue.mlir", dtype="f32",
                          rows=1024, hidden={"H": 8192}),
    # batched GEMMs (kernels/table/bmm_any.py): rows = T (M, and N or K where
    # the form makes them equal), H = the head size or the other dimension
    "bmm_nt": dict(src="examples/bench/bmm_nt.mlir", dtype="f32", rows=512,
                   hidden={"H": 64}),
    "bmm_nn": dict(src="examples/bench/bmm_nn.mlir", dtype="f32", rows=512,
                   hidden={"H": 64}),
    "bmm_tn": dict(src="examples/bench/bmm_tn.mlir", dtype="f32", rows=512,
                   hidden={"H": 256}),
    "bmm_scores_torch": dict(src="examples/bench/bmm_scores_torch.mlir",
                             dtype="f32", rows=512, hidden={"H": 64}),
    "bmm_pv_torch": dict(src="examples/bench/bmm_pv_torch.mlir", dtype="f32",
                         rows=512, hidden={"H": 64}),
    # Reductions over the leading dimension(s) (kernels/table/colred_any.py):
    # "rows" is the reduced dimension (B for the rank-3 colsum_bt, whose T
    # stays 256), H the columns. colmean is left out: its divisor (8192.0)
    # would have to follow the rows, which this table does not rewrite.
    "colsum": dict(src="examples/bench/colsum.mlir", dtype="f32", rows=8192,
                   hidden={"H": 3072}),
    "colmax": dict(src="examples/bench/colmax.mlir", dtype="f32", rows=8192,
                   hidden={"H": 3072}),
    "colsumsq": dict(src="examples/bench/colsumsq.mlir", dtype="f32",
                     rows=8192, hidden={"H": 3072}),
    "colsum_bt": dict(src="examples/bench/colsum_bt.mlir", dtype="f32",
                      rows=64, hidden={"H": 768}),
}

OTHER_DTYPES = {"bf16": ["f16", "f32"], "f16": ["bf16", "f32"],
                "f32": ["f16", "bf16"]}
ELT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4, "i64": 8,
             "index": 8, "i1": 1}
NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}


def draw_hidden(rng, fam):
    """New values for the family's other sizes (a dict name -> value)."""
    h = fam["hidden"]
    if "HEADS" in h:  # the MiniGPT block: hidden 64 x heads, MLP 4 x hidden
        heads = rng.choice([4, 6, 8, 10, 16, 20, 25])
        d = 64 * heads
        return {"HEADS": heads, "D": d, "D2": 2 * d, "D3": 3 * d, "F": 4 * d}
    if set(h) == {"D", "F"}:
        if h["D"] == 4096:  # SwiGLU: Llama-like widths
            d = rng.choice([2048, 2560, 3072, 4096, 5120, 1000])
            f = rng.choice([5632, 8192, 11008, 13824, 14336, 2 * d + 8])
        else:
            d = rng.choice([512, 640, 768, 1024, 1280, 1600, 1000, 2048])
            f = rng.choice([4 * d, 4 * d, 3 * d, 2 * d + 8])
        return {"D": d, "F": f}
    old = h["H"]
    if rng.random() < 0.25:
        v = rng.randint(8, 16384)  # anything, odd values too
    else:
        v = rng.choice([w for w in ROW_WIDTHS if w != old])
    return {"H": v}


def draw_rows(rng, hi):
    """A row count, log-uniform on [1, hi]: half of them as drawn (odd, or a
    multiple of no tile), half rounded to a batch-like granularity."""
    x = math.exp(rng.uniform(0.0, math.log(hi + 0.999)))
    if rng.random() < 0.5:
        return max(1, min(hi, int(x))), "raw"
    g = rng.choice([8, 16, 32, 64, 128, 256, 512, 1024])
    g = min(g, 1 << int(math.log2(hi)))
    return max(g, min(hi // g * g, int(round(x / g)) * g)), "multiple of %d" % g


# ---- Textual rewriting ----------------------------------------------------

# Numbers as tokens: a hex literal, a float (4096.0, 1.0e-06, 4.096000e+03),
# or an integer. Only whole tokens are rewritten, so 0xFF800000, 0.7978...
# and 1.0e-06 never change by accident.
NUM = re.compile(r"0x[0-9A-Fa-f]+|\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+")


def size_rewrite(text, ints, floats):
    """Rewrites integer tokens by `ints` (old -> new) and float tokens whose
    value is a key of `floats` (old value -> new value), all at once."""
    def sub(m):
        t = m.group(0)
        if t.startswith("0x"):
            return t
        if re.fullmatch(r"\d+", t):
            v = int(t)
            return str(ints[v]) if v in ints else t
        try:
            v = float(t)
        except ValueError:
            return t
        if v in floats:
            return "%.1f" % floats[v]
        return t
    return NUM.sub(sub, text)


def heads_rewrite(text, old, new):
    """The head count of the MiniGPT block: `12x` in tensor types and
    `, 12, 64]` in output shapes (12 occurs nowhere else as a size)."""
    if old == new:
        return text
    text = re.sub(r"(?<=[<x])%d(?=x)" % old, str(new), text)
    text = re.sub(r"(?<=, )%d(?=, 64\])" % old, str(new), text)
    return re.sub(r"\b%d heads\b" % old, "%d heads" % new, text)


DT = re.compile(r"(?:(?<=\dx)|(?<![A-Za-z0-9_]))(bf16|f16|f32)(?![A-Za-z0-9_])")


def dtype_rewrite(text, old, new):
    """Replaces the element type `old` by `new` everywhere (for a bf16 model
    only its storage type; for an f32 model the computation too), with the
    -inf hex constant of the new type. The verifier decides whether that
    is still valid IR (bf16 -> f32 is not where arith.extf widens bf16)."""
    text = DT.sub(lambda m: new if m.group(1) == old else m.group(1), text)
    return text.replace("%s : %s" % (NEG_INF[old], new),
                        "%s : %s" % (NEG_INF.get(new, NEG_INF[old]), new))


def max_tensor_bytes(text):
    best = 0
    for m in re.finditer(r"tensor<((?:\d+x)*)([a-z]+\d*)>", text):
        dims = [int(d) for d in m.group(1).split("x") if d]
        n = 1
        for d in dims:
            n *= d
        best = max(best, n * ELT_BYTES.get(m.group(2), 4))
    return best


# ---- The tools ------------------------------------------------------------

def default_opt():
    return os.path.join(ROOT, "build", "bin", "llm-fuse-opt")


def tool_env(extra=None):
    env = dict(os.environ)
    env.setdefault("LLM_FUSE_TABLE_DIR", os.path.join(ROOT, "kernels", "table"))
    env.setdefault("LLM_FUSE_REPLAY_DIR", os.path.join(ROOT, "kernels", "replay"))
    env.setdefault("LLM_FUSE_PROMPTS_DIR",
                   os.path.join(ROOT, "llm_client", "prompts"))
    env.update(extra or {})
    return env


def check_and_outline(opt, path):
    """(None, subgraphs) when `path` parses, verifies and outlines;
    (why, None) otherwise."""
    r = subprocess.run([opt, path, "-o", "/dev/null"], capture_output=True,
                       text=True, env=tool_env())
    if r.returncode:
        return "does not parse/verify: " + r.stderr.strip()[-300:], None
    with tempfile.TemporaryDirectory() as td:
        rep = os.path.join(td, "outline.json")
        r = subprocess.run([opt, "--llm-fuse-outline=report=%s remarks=false" % rep,
                            path, "-o", "/dev/null"], capture_output=True,
                           text=True, env=tool_env())
        if r.returncode:
            return "does not outline: " + r.stderr.strip()[-300:], None
        return None, json.load(open(rep)).get("subgraphs", [])


def table_entries():
    """The shipped table: pattern -> [(file, archs, sizes)]; and the
    fingerprint prefixes of the kernels its entries were made from."""
    pats, seen = {}, set()
    d = os.path.join(ROOT, "kernels", "table", "v1")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".json") and not f.endswith(".json.gz"):
            continue
        e = read_entry(os.path.join(d, f))
        f = f[:-3] if f.endswith(".gz") else f  # the name the pass reports
        pats.setdefault(e["pattern"], []).append((f, e["archs"], e["sizes"]))
        seen.update(re.findall(r"sg_([0-9a-f]{16})", e.get("source", "")))
    return pats, seen


def replay_fingerprints():
    d = os.path.join(ROOT, "kernels", "replay")
    return {f.split(".")[0] for f in os.listdir(d) if f.endswith(".json")}


# ---- gen --------------------------------------------------------------------

def make_model(rng, name, fam, opts):
    """One draw: (text, record) or (None, why)."""
    src = open(os.path.join(ROOT, fam["src"])).read()
    hidden_old = fam["hidden"]
    vary_hidden = rng.random() < opts.p_hidden
    vary_dtype = rng.random() < opts.p_dtype
    hidden_new = draw_hidden(rng, fam) if vary_hidden else dict(hidden_old)
    dtype = fam["dtype"]
    dtypes = [dtype]
    if vary_dtype:
        others = list(OTHER_DTYPES[dtype])
        rng.shuffle(others)
        dtypes = others + [dtype]

    def render(rows, dt):
        ints = {fam["rows"]: rows}
        for k, v in hidden_old.items():
            if k != "HEADS":
                ints[v] = hidden_new[k]
        floats = {float(hidden_old[k]): hidden_new[k]
                  for k in fam.get("floats", [])}
        t = size_rewrite(src, ints, floats)
        if "HEADS" in hidden_old:
            t = heads_rewrite(t, hidden_old["HEADS"], hidden_new["HEADS"])
        if dt != fam["dtype"]:
            t = dtype_rewrite(t, fam["dtype"], dt)
        return t

    # The row count: log-uniform on [1, 65536], truncated where the largest
    # tensor would pass the cap (drawn again, so log-uniform on what fits).
    hi = MAX_ROWS
    while hi > 1 and max_tensor_bytes(render(hi, dtypes[-1])) > CAP_BYTES:
        hi = hi * 3 // 4
    rows = kind = None
    for _ in range(200):
        r, k = draw_rows(rng, hi)
        if r == fam["rows"] and not vary_hidden and not vary_dtype:
            continue  # the shipped example itself
        if max_tensor_bytes(render(r, dtypes[-1])) <= CAP_BYTES:
            rows, kind = r, k
            break
    if rows is None:
        return None, "no row count fits the 1 GiB cap"
    rejected = []
    for dt in dtypes:
        text = render(rows, dt)
        if max_tensor_bytes(text) > CAP_BYTES:
            rejected.append("%s: over the cap" % dt)
            continue
        header = ("// heldout.py (seed %d): %s with rows %d%s%s; the table "
                  "has not seen these sizes.\n" % (
                      opts.seed, fam["src"], rows,
                      "".join(", %s %d" % (k, hidden_new[k])
                              for k in sorted(hidden_new)
                              if hidden_new[k] != hidden_old[k]),
                      ", %s (was %s)" % (dt, fam["dtype"])
                      if dt != fam["dtype"] else ""))
        text = header + text
        fd, tmp = tempfile.mkstemp(suffix=".mlir")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            why, sgs = check_and_outline(opts.opt, tmp)
        finally:
            os.unlink(tmp)
        if why:
            rejected.append("%s: %s" % (dt, why.splitlines()[0][:160]))
            continue
        rec = dict(name=name, source=fam["src"], rows=rows, rows_kind=kind,
                   sizes=dict(rows=rows, **{k: v for k, v in hidden_new.items()}),
                   source_sizes=dict(rows=fam["rows"], **hidden_old),
                   dtype=dt, source_dtype=fam["dtype"],
                   changed=(["rows"] +
                            (["hidden"] if hidden_new != hidden_old else []) +
                            (["dtype"] if dt != fam["dtype"] else [])),
                   dtype_rejected=rejected,
                   max_tensor_bytes=max_tensor_bytes(text),
                   subgraphs=[dict(name=s["name"], fingerprint=s["fingerprint"],
                                   pattern=s.get("pattern"),
                                   pattern_sizes=s.get("pattern_sizes"),
                                   cls=s.get("class"))
                              for s in sgs])
        return text, rec
    return None, "no element type verifies: " + "; ".join(rejected)


def final_name(fam_name, rec, i):
    parts = ["%03d" % i, fam_name, "r%d" % rec["rows"]]
    for k in sorted(rec["sizes"]):
        if k in ("rows", "D2", "D3"):
            continue
        if rec["sizes"][k] != rec["source_sizes"][k]:
            parts.append("%s%d" % (k.lower(), rec["sizes"][k]))
    if rec["dtype"] != rec["source_dtype"]:
        parts.append(rec["dtype"])
    return "_".join(parts)


def cmd_gen(opts):
    rng = random.Random(opts.seed)
    out = os.path.abspath(opts.outdir)
    mdir = os.path.join(out, "models")
    if os.path.isdir(mdir):
        shutil.rmtree(mdir)
    os.makedirs(mdir)
    pats, seen_prefixes = table_entries()
    replay = replay_fingerprints()
    fams = sorted(FAMILIES)
    models, log = [], []
    seen_fp = set()
    tries = 0
    while len(models) < opts.count and tries < opts.count * 20:
        tries += 1
        fam_name = rng.choice(fams)
        text, rec = make_model(rng, "tmp", FAMILIES[fam_name], opts)
        if text is None:
            log.append("%s: dropped: %s" % (fam_name, rec))
            continue
        fps = [s["fingerprint"] for s in rec["subgraphs"]]
        known = [f[:16] for f in fps if f in replay or f[:16] in seen_prefixes]
        if known:
            log.append("%s rows %d: dropped: the replay set or the table has "
                       "seen subgraph(s) %s" % (fam_name, rec["rows"],
                                                ", ".join(known)))
            continue
        key = tuple(sorted(fps))
        if key in seen_fp:
            log.append("%s rows %d: dropped: a duplicate" % (fam_name, rec["rows"]))
            continue
        seen_fp.add(key)
        rec["family"] = fam_name
        rec["name"] = final_name(fam_name, rec, len(models))
        for s in rec["subgraphs"]:
            s["table_entries"] = [f for f, _, _ in pats.get(s["pattern"], [])]
        with open(os.path.join(mdir, rec["name"] + ".mlir"), "w") as f:
            f.write(text)
        models.append(rec)
        for r in rec["dtype_rejected"]:
            log.append("%s: element type rejected: %s" % (rec["name"], r))
    meta = dict(schema="llm-fuse-heldout/1", seed=opts.seed, count=len(models),
                cap_bytes=CAP_BYTES, max_rows=MAX_ROWS,
                p_hidden=opts.p_hidden, p_dtype=opts.p_dtype,
                generator="bench/table/heldout.py", log=log, models=models)
    with open(os.path.join(out, "models.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("%-44s %-32s %-6s %6s  %s" % ("model", "source", "dtype", "rows",
                                        "changed"))
    for m in models:
        print("%-44s %-32s %-6s %6d  %s" % (m["name"], m["source"], m["dtype"],
                                            m["rows"], ",".join(m["changed"])))
    for line in log:
        print("note: " + line)
    print("%d model(s) in %s (%d draw(s))" % (len(models), mdir, tries))
    return 0 if len(models) == opts.count else 1


# ---- offline ----------------------------------------------------------------

def snapshot_tools(opt, out):
    """Copies llm-fuse-opt and llm-fuse-build-kernel (beside it) to
    OUTDIR/bin, so a rebuild during the run does not change the binaries
    midway. Returns (opt, extra env)."""
    bdir = os.path.join(out, "bin")
    os.makedirs(bdir, exist_ok=True)
    src_dir = os.path.dirname(os.path.abspath(opt))
    env = {}
    for t in (os.path.basename(opt), "llm-fuse-build-kernel"):
        s = os.path.join(src_dir, t)
        for _ in range(60):  # a tool being relinked is empty for a moment
            if os.path.isfile(s) and os.access(s, os.X_OK) and os.path.getsize(s):
                break
            time.sleep(5)
        shutil.copy2(s, os.path.join(bdir, t))
    env["LLM_FUSE_BUILD_KERNEL"] = os.path.join(bdir, "llm-fuse-build-kernel")
    return os.path.join(bdir, os.path.basename(opt)), env


def compile_one(opt, env, out, m, extra_options, timeout):
    name = m["name"]
    rep = os.path.join(out, "reports", name + ".json")
    err = os.path.join(out, "logs", name + ".err")
    if os.path.exists(rep):
        os.unlink(rep)
    option = "--llm-fuse=cache-dir=%s report=%s remarks=false%s" % (
        os.path.join(out, "cache"), rep, extra_options)
    t0 = time.time()
    try:
        with open(err, "w") as ef:
            r = subprocess.run([opt, option, os.path.join(out, "models", name + ".mlir"),
                                "-o", "/dev/null"], stdout=subprocess.DEVNULL,
                               stderr=ef, env=env, timeout=timeout)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    return dict(name=name, rc=rc, wall_s=round(time.time() - t0, 2))


def cmd_offline(opts):
    out = os.path.abspath(opts.outdir)
    meta = json.load(open(os.path.join(out, "models.json")))
    for d in ("reports", "logs"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    if not opts.keep_cache and os.path.isdir(os.path.join(out, "cache")):
        shutil.rmtree(os.path.join(out, "cache"))
    opt, extra = (opts.opt, {}) if opts.no_snapshot else snapshot_tools(opts.opt, out)
    env = tool_env(dict(extra, LLM_FUSE_LIBCUDA="/nonexistent"))
    t0 = time.time()
    runs = {}
    with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as ex:
        futs = [ex.submit(compile_one, opt, env, out, m, "", opts.timeout)
                for m in meta["models"]]
        for i, f in enumerate(futs):
            r = f.result()
            runs[r["name"]] = r
            print("[%d/%d] %s: exit %s in %.1f s" % (i + 1, len(futs), r["name"],
                                                    r["rc"], r["wall_s"]),
                  flush=True)
    wall = time.time() - t0
    res = summarize(out, meta, runs, gpu=False)
    res["wall_s"] = round(wall, 1)
    res["opt"] = os.path.abspath(opts.opt)
    with open(os.path.join(out, "offline.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("offline: %d model(s) compiled in %.0f s; %s" % (
        len(runs), wall, os.path.join(out, "offline.json")))
    return 0


# ---- summarize --------------------------------------------------------------

SEG = re.compile(r"([0-9a-f]{16}/[^ :;]+\.json): ")


def table_message(detail):
    """The table's part of a no-candidate detail (the replay set's
    'no recorded exchange ...' taken out)."""
    d = re.sub(r"^the provider gave no kernel: ", "", detail or "")
    d = re.sub(r"no recorded exchange \S+\.json; ", "", d)
    return d


def refusals(msg):
    """Per template in a refusal message: (entry, 'fixed'|'requirement'|
    'other', text)."""
    parts = SEG.split(msg)
    out = []
    for i in range(1, len(parts) - 1, 2):
        entry, text = parts[i], parts[i + 1].rstrip("; ")
        if text.endswith("...") and "requirement(s)" not in text and \
                "the template is for" not in text:
            continue  # cut off by the report
        if "the template is for" in text:
            kind = "fixed"
            m = re.search(r"S\d+ = \d+, the template is for S\d+ = \d+", text)
            short = m.group(0) if m else text[:120]
        elif "requirement(s)" in text:
            kind = "requirement"
            m = re.search(r"requirement\(s\) (.*?)(?: \(with [^)]*\))?(?:;|\.\.\.|$)",
                          text)
            short = "requires " + (m.group(1) if m else text[:120])
        else:
            kind, short = "other", text[:160]
        out.append((entry.split("/")[-1], kind, short))
    return out


def _eval_req(expr, env):
    """A tune-require expression (C integer arithmetic: `/` truncates)."""
    if not re.fullmatch(r"[A-Za-z0-9_ %/*+()<>=!-]+", expr):
        return None
    try:
        return bool(eval(expr.replace("/", "//"), {"__builtins__": {}}, env))
    except Exception:
        return None


def requirement_cause(entry_file, sizes):
    """Which of a template's requirements refuse `sizes`: ('tile', text)
    when one without knobs fails (the template's tiles do not divide the
    size), ('knob', text) when only those over a knob (GROUP_M, RPB) fail
    for every value the template lists; None when unknown."""
    try:
        t = read_entry(os.path.join(ROOT, "kernels", "table", "v1",
                                        entry_file))["template"]
    except (OSError, ValueError, KeyError):
        return None
    knobs = {}
    reqs = []
    for kind, body in re.findall(r"// llm-fuse\.(tune(?:-require)?) (.*)", t):
        if kind == "tune":
            k, _, vals = body.partition("=")
            knobs[k.strip()] = [int(v) for v in re.findall(r"-?\d+", vals)]
        else:
            reqs.append(body.strip())
    env0 = {k: v for k, v in (sizes or {}).items()}
    failed = []
    for r in reqs:
        used = [k for k in knobs if re.search(r"\b%s\b" % k, r)]
        if not used and _eval_req(r, env0) is False:
            failed.append(r)
    if failed:
        return "tile", " and ".join(failed)
    for r in reqs:
        used = [k for k in knobs if re.search(r"\b%s\b" % k, r)]
        if used and len(used) == 1:
            k = used[0]
            if all(_eval_req(r, dict(env0, **{k: v})) is False for v in knobs[k]):
                return "knob", "%s for %s in %s" % (
                    r, k, ", ".join(map(str, knobs[k])))
    return None


def classify(s, report_arch, pats, sizes=None):
    """(outcome, cause, short why) of one report subgraph."""
    prov = s.get("provider")
    build = s.get("build") or {}
    reason = s.get("reason") or ""
    if build.get("kind") == "ok":
        src = "table" if prov == "table" else ("replay" if prov else "cache")
        return "built", "%s candidate built" % src, ""
    if reason == "build-failed" or (build and build.get("kind") != "ok"):
        return "miss", "build failed", (build.get("message") or
                                        s.get("detail", ""))[:200]
    if reason == "no-candidate":
        msg = table_message(s.get("detail", ""))
        for a in s.get("attempt_log") or []:
            if len(a.get("message") or "") > len(msg):
                msg = table_message(a["message"])
        m = re.search(r"no template for pattern ([0-9a-f]+) on (\S+)", msg)
        if m:
            full = [p for p in pats if p.startswith(m.group(1))]
            if full:
                return "miss", "no template for this arch", msg[:200]
            return "miss", "no template for the pattern", msg[:200]
        if "refuse these sizes" in msg:
            rs = refusals(msg)
            kinds = {k for _, k, _ in rs}
            why = "; ".join("%s: %s" % (e, t) for e, t in
                            {(k, t): (e, t) for e, k, t in rs}.values())
            if "requirement" in kinds:
                sub = [requirement_cause(e, sizes) for e, k, _ in rs
                       if k == "requirement"]
                sub = [x for x in sub if x]
                if sub and all(x[0] == "knob" for x in sub):
                    return ("miss", "template refused: only a knob's values "
                            "(GROUP_M/RPB) fail", why + " [" + sub[0][1] + "]")
                if sub:
                    t = [x for x in sub if x[0] == "tile"][0]
                    return ("miss", "template refused: tile does not divide "
                            "the rows", why + " [fails: " + t[1] + "]")
                return "miss", "template refused: requirement", why
            if kinds == {"fixed"}:
                return "miss", "template refused: a fixed size differs", why
            return "miss", "template refused: other", why or msg[:200]
        return "miss", "no candidate: other", msg[:200]
    return "miss", reason or "?", (s.get("detail") or "")[:200]


def verified_of(s):
    v = s.get("verification")
    if s.get("decision") == "swapped":
        return True
    if not isinstance(v, dict):
        return None
    if "accepted" in v:
        return bool(v["accepted"])
    if v.get("status") == "verified":
        return True
    vd = v.get("verdict")
    if isinstance(vd, dict) and "accepted" in vd:
        return bool(vd["accepted"])
    if v.get("status") == "rejected":
        return False
    return None


def hints(model, sg):
    """Why a pattern may be new: what the generator changed."""
    h = []
    if "dtype" in model.get("changed", []):
        h.append("dtype %s" % model["dtype"])
    if model.get("rows") == 1:
        h.append("a single row (unit dimension)")
    rows = model.get("rows")
    others = [v for k, v in (model.get("sizes") or {}).items()
              if k not in ("rows", "HEADS")]
    if rows in others:
        h.append("equal sizes (rows = a hidden size)")
    if rows and 1 < rows < 8:
        h.append("rows < 8, literal in shape attributes")
    return h


def fmt_ms(x):
    return "%.4f" % x if x else "-"


def summarize(out, meta, runs=None, gpu=None, present=False):
    pats, _ = table_entries()
    unavailable = set()
    rows, totals = [], {}
    causes = {}
    n_sg = n_built = n_table = n_replay = n_verified = n_swapped = 0
    n_rejected = n_unjudged = 0
    missing = []
    print("%-40s %-20s %-14s %-7s %-8s %-9s %-8s %10s %10s %8s  %s" % (
        "model", "subgraph", "class", "from", "outcome", "decision", "verified",
        "kernel ms", "fallback", "speedup", "cause / why not"))
    for m in meta["models"]:
        name = m["name"]
        path = os.path.join(out, "reports", name + ".json")
        if present and not os.path.exists(path):
            continue
        try:
            r = json.load(open(path))
        except (OSError, ValueError) as e:
            run = (runs or {}).get(name, {})
            why = "no report (exit %s): %s" % (run.get("rc", "?"), e)
            errf = os.path.join(out, "logs", name + ".err")
            if os.path.exists(errf):
                tail = open(errf).read().strip().splitlines()[-1:]
                why += (" | " + tail[0][:200]) if tail else ""
            print("%-40s %s" % (name, why))
            missing.append(dict(model=name, why=why))
            continue
        if gpu is None:
            gpu_here = not r.get("verification_unavailable")
        else:
            gpu_here = gpu
        if r.get("verification_unavailable"):
            unavailable.add(r["verification_unavailable"])
        groups = {g["name"]: g for g in r.get("groups", [])}
        arch = (r.get("options") or {}).get("arch")
        for s in r.get("subgraphs", []):
            g = groups.get(s["name"], {})
            outcome, cause, why = classify(s, arch, pats, g.get("pattern_sizes"))
            n_sg += 1
            if outcome == "built":
                n_built += 1
                if s.get("provider") == "table":
                    n_table += 1
                elif s.get("provider"):
                    n_replay += 1
            else:
                hs = hints(m, g)
                if cause.startswith("no template"):
                    if s.get("class") == "attention-like":
                        hs.insert(0, "attention")
                    cause += " (%s)" % (
                        "element type changed" if hs and hs[0].startswith("dtype")
                        else hs[0] if hs else "other")
                    if len(hs) > 1:
                        why = "(also %s) %s" % (", ".join(hs[1:]), why)
            causes[cause] = causes.get(cause, 0) + 1
            ver = verified_of(s)
            if ver:
                n_verified += 1
            elif ver is False:
                n_rejected += 1
            if s.get("decision") == "swapped":
                n_swapped += 1
            if s.get("reason") in ("verify-error",) or (
                    outcome == "built" and gpu_here and ver is None):
                n_unjudged += 1
            p = s.get("performance") or {}
            row = dict(model=name, family=m.get("family"), subgraph=s["name"],
                       cls=s.get("class"), provider=s.get("provider"),
                       template=s.get("model") if s.get("provider") == "table" else None,
                       pattern=(g.get("pattern") or "")[:16],
                       pattern_sizes=g.get("pattern_sizes"),
                       outcome=outcome, cause=cause, why=why,
                       decision=s.get("decision"), reason=s.get("reason"),
                       verified=ver, kernel_ms=p.get("kernel_ms"),
                       fallback_ms=p.get("fallback_ms"), speedup=s.get("speedup"),
                       build_ms=(s.get("ms") or {}).get("build"),
                       signature=s.get("signature"))
            rows.append(row)
            print("%-40s %-20s %-14s %-7s %-8s %-9s %-8s %10s %10s %8s  %s%s" % (
                name[:40], s["name"], (s.get("class") or "")[:14],
                {"table": "table", "handwritten": "replay"}.get(
                    s.get("provider"), s.get("provider") or "-")[:7],
                outcome, s.get("decision", ""),
                {True: "yes", False: "REJECTED", None: "-"}[ver],
                fmt_ms(p.get("kernel_ms")), fmt_ms(p.get("fallback_ms")),
                "%.2fx" % s["speedup"] if s.get("speedup") else "-",
                cause if outcome == "miss" else cause,
                (": " + why) if why else ""))
    print()
    n_models = len({r["model"] for r in rows}) + len(missing)
    print("models: %d (%d without a report)" % (n_models, len(missing)))
    print("subgraphs: %d (distinct per model)" % n_sg)
    print("  with a candidate that BUILT: %d (table %d, replay set %d, other %d)" % (
        n_built, n_table, n_replay, n_built - n_table - n_replay))
    gpu_any = any(r["verified"] is not None or r["kernel_ms"] for r in rows)
    if gpu is False or not gpu_any:
        print("  verified: none -- no GPU here, so nothing was verified, timed "
              "or swapped (built means PTX and cubin were made)")
        for u in sorted(unavailable):
            print("    (the pass: %s)" % u[:160])
    else:
        print("  verified on the GPU: %d, rejected by verification: %d, "
              "swapped: %d" % (n_verified, n_rejected, n_swapped))
    misses = n_sg - n_built
    print("  misses: %d" % misses)
    for c, n in sorted(causes.items(), key=lambda kv: -kv[1]):
        if c.endswith("candidate built"):
            continue
        print("    %-62s %3d" % (c, n))
    # Misses by family and by what changed.
    by = {}
    for r in rows:
        m = next(x for x in meta["models"] if x["name"] == r["model"])
        k = "+".join(m.get("changed", []))
        b = by.setdefault(k, [0, 0])
        b[0] += 1
        b[1] += r["outcome"] == "built"
    print("  by what the generator changed (built / subgraphs):")
    for k, (n, b) in sorted(by.items()):
        print("    %-20s %3d / %3d" % (k, b, n))
    by_cls = {}
    for r in rows:
        m = next(x for x in meta["models"] if x["name"] == r["model"])
        if m.get("changed") == ["rows"]:
            b = by_cls.setdefault(r["cls"], [0, 0])
            b[0] += 1
            b[1] += r["outcome"] == "built"
    print("  only the row count changed, by class (built / subgraphs):")
    for k, (n, b) in sorted(by_cls.items()):
        print("    %-20s %3d / %3d" % (k, b, n))
    return dict(schema="llm-fuse-heldout-result/1", gpu=bool(gpu_any and gpu is not False),
                models=n_models, missing=missing, subgraphs=n_sg,
                built=n_built, built_table=n_table, built_replay=n_replay,
                verified=n_verified, rejected=n_rejected, swapped=n_swapped,
                causes=causes, by_change={k: dict(subgraphs=v[0], built=v[1])
                                          for k, v in by.items()},
                rows=rows)


MEM_CLASSES = ("reduction", "elementwise")
BIG_BYTES = 64 << 20


def sig_bytes(sig):
    """(sum of the tensors' bytes, the largest) of [(shape, elt)]."""
    total = big = 0
    for shape, elt in sig or []:
        n = ELT_BYTES.get(elt, 4)
        for d in shape:
            n *= d
        total += n
        big = max(big, n)
    return total, big


def sig_types(text):
    """[(shape, elt)] of the tensor types in a signature's text."""
    return [([int(d) for d in dims.split("x") if d], elt)
            for dims, elt in re.findall(r"tensor<((?:\d+x)*)([a-z]+\d*)>", text)]


def torch_table(rows, tres):
    """The comparison with torch eager and torch.compile (torch_time.py's
    OUT/torch.json) per subgraph row of summarize(), and the totals
    against issue 15 point 7's targets. Prints; returns a dict."""
    subs = tres.get("subgraphs", {})
    copy = tres.get("copy") or {}
    bw = copy.get("GBps")
    print()
    print("against torch (%s, torch %s; eager and torch.compile default mode "
          "of the subgraph's translation, bench/table/torch_ref.py):" % (
              tres.get("device", "?"), tres.get("torch", "?")))
    if tres.get("error"):
        print("  no torch timings: %s" % tres["error"])
    print("  copy bandwidth (1 GiB device-to-device, read + write): %s" % (
        "%.0f GB/s" % bw if bw else copy.get("error", "not measured")))
    print("  ours ms: the swapped kernel timed by torch_time.py in the same rounds "
          "as eager and torch.compile (%s); pass ms: the pass's own timing "
          "(llm-fuse-verify), used where the first is missing" % tres.get("timer", "run.py"))
    print("%-40s %-20s %-11s %-8s %9s %9s %9s %9s %9s %8s %7s %7s  %s" % (
        "model", "subgraph", "class", "decision", "ours ms", "pass ms", "fallback",
        "eager ms", "compile", "ours/cmp", "ours bw", "cmp bw", "note"))
    out_rows = []
    n_cmp = n_within = n_same = 0
    slower, mem_rows, missing = [], [], 0
    for r in rows:
        t = subs.get(r["subgraph"])
        pass_ms = r["kernel_ms"] if r.get("decision") == "swapped" else None
        ours = pass_ms
        eager = compile_ = None
        note = []
        if t is None:
            missing += 1
            note.append("no torch record")
            t = {}
        # ours timed by torch_time.py beside torch (one process, one
        # timer), where it could run the swapped kernel; else the pass's
        # own timing (llm-fuse-verify's)
        same_harness = bool(pass_ms and t.get("ours_ms"))
        if same_harness:
            ours = t["ours_ms"]
            n_same += 1
        elif pass_ms and t.get("ours_error"):
            note.append("ours not timed beside torch: " + t["ours_error"][:100])
        eager, compile_ = t.get("eager_ms"), t.get("compile_ms")
        if t.get("error"):
            note.append("torch error: " + t["error"][:120])
        elif t.get("compile_error"):
            note.append("compile: " + t["compile_error"][:120])
        if t.get("compile_vs_eager_ok") is False:
            note.append("compile != eager (worst %.3g of tolerance)" %
                        t.get("compile_vs_eager_worst", float("nan")))
        args, results = t.get("args"), t.get("results")
        if args is None and r.get("signature"):  # the report's signature
            ins, _, outs_ = r["signature"].partition("->")
            args, results = sig_types(ins), sig_types(outs_)
        nbytes_in, big_in = sig_bytes(args)
        nbytes_out, big_out = sig_bytes(results)
        nbytes, big = nbytes_in + nbytes_out, max(big_in, big_out)
        ratio = ours / compile_ if ours and compile_ else None
        mem = r.get("cls") in MEM_CLASSES and big >= BIG_BYTES
        frac_ours = (nbytes / (ours * 1e-3) / (bw * 1e9)
                     if mem and ours and bw else None)
        frac_cmp = (nbytes / (compile_ * 1e-3) / (bw * 1e9)
                    if mem and compile_ and bw else None)
        if ratio is not None:
            n_cmp += 1
            if ratio <= 1.10:
                n_within += 1
            else:
                slower.append(dict(model=r["model"], subgraph=r["subgraph"],
                                   cls=r.get("cls"), ours_ms=ours,
                                   compile_ms=compile_, ratio=ratio))
        same_ms = t.get("same_size_copy_ms")
        frac_same = same_ms / ours if mem and ours and same_ms else None
        if mem and ours:
            # torch_time.py --flush both: the same rounds under the clean
            # flush too (the memset, then a read-only sweep: no dirty L2
            # lines for the timed call to write back)
            bw_c = (tres.get("copy_clean") or {}).get("GBps")
            ours_c = t.get("ours_clean_ms") if same_harness else None
            mem_rows.append(dict(model=r["model"], subgraph=r["subgraph"],
                                 bytes=nbytes, ours_ms=ours, frac=frac_ours,
                                 frac_same=frac_same,
                                 frac_clean=(nbytes / (ours_c * 1e-3) / (bw_c * 1e9)
                                             if ours_c and bw_c else None),
                                 frac_same_clean=(t["same_size_copy_clean_ms"] / ours_c
                                                  if ours_c and t.get("same_size_copy_clean_ms")
                                                  else None)))
        if r.get("decision") != "swapped" and r.get("kernel_ms"):
            note.append("kernel %.4f ms not swapped (%s)" % (
                r["kernel_ms"], r.get("reason") or "?"))
        row = dict(model=r["model"], subgraph=r["subgraph"], cls=r.get("cls"),
                   decision=r.get("decision"), ours_ms=ours, pass_ms=pass_ms,
                   ours_timed_beside_torch=same_harness,
                   fallback_ms=r.get("fallback_ms"), eager_ms=eager,
                   compile_ms=compile_, ours_over_compile=ratio,
                   compile_s=t.get("compile_s"), bytes=nbytes,
                   largest_tensor_bytes=big, memory_bound_64mb=mem,
                   copy_fraction_ours=frac_ours,
                   copy_fraction_compile=frac_cmp,
                   same_size_copy_ms=same_ms,
                   same_size_copy_fraction_ours=frac_same,
                   note="; ".join(note))
        out_rows.append(row)
        print("%-40s %-20s %-11s %-8s %9s %9s %9s %9s %9s %8s %7s %7s  %s" % (
            r["model"][:40], r["subgraph"], (r.get("cls") or "")[:11],
            (r.get("decision") or "")[:8], fmt_ms(ours) if same_harness or not ours
            else fmt_ms(ours) + "*", fmt_ms(pass_ms),
            fmt_ms(r.get("fallback_ms")), fmt_ms(eager), fmt_ms(compile_),
            "%.2fx" % ratio if ratio else "-",
            "%.0f%%" % (100 * frac_ours) if frac_ours else "-",
            "%.0f%%" % (100 * frac_cmp) if frac_cmp else "-",
            "; ".join(note)))
    n_sg = len(rows)
    n_ver = sum(1 for r in rows if r.get("verified"))
    print()
    print("targets (issue 15 point 7):")
    print("  verified kernel on the offline default: %d of %d subgraphs "
          "(%.0f%%; target >= 90%%)" % (n_ver, n_sg,
                                        100.0 * n_ver / n_sg if n_sg else 0))
    ok_mem = [m for m in mem_rows if m["frac"] is not None and m["frac"] >= 0.9]
    print("  memory-bound swapped kernels on tensors >= 64 MiB: %d, at >= 90%% "
          "of the copy bandwidth: %d%s" % (
              len(mem_rows), len(ok_mem), "" if bw else
              " (no copy bandwidth measured)"))
    ok_same = [m for m in mem_rows
               if m["frac_same"] is not None and m["frac_same"] >= 0.9]
    print("    at >= 90%% of a copy of the same bytes timed in the same rounds: "
          "%d of %d (%d with that copy measured)" % (
              len(ok_same), len(mem_rows),
              sum(1 for m in mem_rows if m["frac_same"] is not None)))
    clean = [m for m in mem_rows if m["frac_clean"] is not None]
    if clean:
        bw_c = (tres.get("copy_clean") or {}).get("GBps")
        print("    under the clean flush (torch_time.py --flush both; 1 GiB copy %.0f GB/s): "
              "%d of %d at >= 90%% of the copy bandwidth, %d at >= 90%% of a same-size copy" % (
                  bw_c, sum(1 for m in clean if m["frac_clean"] >= 0.9), len(clean),
                  sum(1 for m in clean if (m["frac_same_clean"] or 0) >= 0.9)))
    for m in mem_rows:
        if m not in ok_mem:
            print("    below: %-40s %-20s %.4f ms, %.1f MB, %s of copy, %s of "
                  "a same-size copy" % (
                      m["model"][:40], m["subgraph"], m["ours_ms"],
                      m["bytes"] / 1e6,
                      "%.0f%%" % (100 * m["frac"]) if m["frac"] is not None
                      else "?",
                      "%.0f%%" % (100 * m["frac_same"])
                      if m["frac_same"] is not None else "?") +
                  ("; clean flush: %.0f%% of copy, %s of a same-size copy" % (
                      100 * m["frac_clean"], "%.0f%%" % (100 * m["frac_same_clean"])
                      if m["frac_same_clean"] is not None else "?")
                   if m.get("frac_clean") is not None else ""))
    print("  swapped kernels with a torch.compile time: %d, within 10%% of "
          "torch.compile (or faster): %d, more than 10%% slower: %d" % (
              n_cmp, n_within, len(slower)))
    print("    (ours timed beside torch in torch_time.py's process: %d; the pass's "
          "own timing, marked *: the rest)" % n_same)
    for x in sorted(slower, key=lambda x: -x["ratio"]):
        print("    slower: %-40s %-20s %-11s ours %.4f ms, compile %.4f ms "
              "(%.2fx)" % (x["model"][:40], x["subgraph"], (x["cls"] or "")[:11],
                           x["ours_ms"], x["compile_ms"], x["ratio"]))
    n_sw = sum(1 for r in rows if r.get("decision") == "swapped")
    if n_sw > n_cmp:
        print("    (%d swapped without a torch.compile time: see the notes)" % (
            n_sw - n_cmp))
    if missing:
        print("  %d row(s) without a torch record (a stage from another build "
              "names subgraphs differently?)" % missing)
    if tres.get("wall_s") is not None:
        print("  torch part: %.0f s (compiles %.0f s, budget %.0f s)" % (
            tres["wall_s"], tres.get("compile_spent_s", 0),
            tres.get("compile_budget_s", 0)))
    return dict(device=tres.get("device"), torch=tres.get("torch"),
                copy_GBps=bw, rows=out_rows, verified=n_ver, subgraphs=n_sg,
                mem_bound_64mb=len(mem_rows), mem_bound_at_90pct=len(ok_mem),
                mem_bound_at_90pct_same_size_copy=len(ok_same),
                mem_bound_clean=[dict(model=m["model"], subgraph=m["subgraph"],
                                      copy_fraction=m["frac_clean"],
                                      same_size_copy_fraction=m["frac_same_clean"])
                                 for m in mem_rows if m.get("frac_clean") is not None],
                flush=tres.get("flush", "memset"),
                swapped_with_compile=n_cmp, within_10pct=n_within,
                ours_timed_beside_torch=n_same, timer=tres.get("timer"),
                slower_than_compile=slower, error=tres.get("error"))


def cmd_summarize(opts):
    out = os.path.abspath(opts.outdir)
    meta = json.load(open(os.path.join(out, "models.json")))
    res = summarize(out, meta, present=opts.present)
    tpath = opts.torch or os.path.join(out, "torch.json")
    if os.path.exists(tpath):
        try:
            tres = json.load(open(tpath))
        except (OSError, ValueError) as e:
            tres = dict(error="%s does not read: %s" % (tpath, e))
        try:
            res["torch"] = torch_table(res["rows"], tres)
        except Exception as e:  # noqa: BLE001 (the table above stands)
            print("the torch table failed: %s: %s" % (type(e).__name__, e))
    elif opts.torch:
        print("no %s" % tpath)
    dest = opts.json or os.path.join(out, "summary.json")
    with open(dest, "w") as f:
        json.dump(res, f, indent=1)
    print("written to %s" % dest)
    return 0


# ---- device-script ------------------------------------------------------------

def torch_manifest(opt, dest, meta):
    """DEST/torch/manifest.json: each distinct subgraph of DEST's models
    (outlined by `opt`, so the names are the pass's) translated to a torch
    function by torch_ref.py, with its signature; a subgraph that does not
    translate carries the error instead. Returns the manifest."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_ref
    subs, order = {}, []
    cls = {}
    for m in meta["models"]:
        for sg in m.get("subgraphs", []):
            cls[sg["name"]] = sg.get("cls")
    for m in meta["models"]:
        path = os.path.join(dest, "models", m["name"] + ".mlir")
        r = subprocess.run([opt, "--llm-fuse-outline=remarks=false", path],
                           capture_output=True, text=True, env=tool_env())
        if r.returncode:
            why = "does not outline: " + r.stderr.strip()[-200:]
            names = [sg["name"] for sg in m.get("subgraphs", [])]
            for n in names:
                if n not in subs:
                    order.append(n)
                    subs[n] = dict(name=n, models=[], cls=cls.get(n), error=why)
                subs[n]["models"].append(m["name"])
            continue
        try:
            gtext = torch_ref.prepare(opt, r.stdout)
            fns = torch_ref.functions(gtext)
        except (torch_ref.Unsupported, subprocess.SubprocessError) as e:
            gtext, fns = None, [sg["name"] for sg in m.get("subgraphs", [])]
            prep_err = str(e)
        for fn in fns:
            if fn in subs:
                subs[fn]["models"].append(m["name"])
                continue
            rec = dict(name=fn, models=[m["name"]], cls=cls.get(fn))
            try:
                if gtext is None:
                    raise torch_ref.Unsupported(prep_err)
                src, sig = torch_ref.translate(gtext, fn)
                rec.update(source=src, args=sig["args"], results=sig["results"])
            except Exception as e:  # noqa: BLE001 (recorded per subgraph)
                rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            order.append(fn)
            subs[fn] = rec
    man = dict(schema="llm-fuse-heldout-torch-manifest/1",
               translator="bench/table/torch_ref.py", opt=opt,
               subgraphs=[subs[n] for n in order])
    os.makedirs(os.path.join(dest, "torch"), exist_ok=True)
    with open(os.path.join(dest, "torch", "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    return man


def cmd_device_script(opts):
    out = os.path.abspath(opts.outdir)
    meta = json.load(open(os.path.join(out, "models.json")))
    sh = os.path.join(ROOT, "bench", "table", "heldout-device.sh")
    dest = os.path.join(ROOT, ".device", "heldout")
    if os.path.abspath(dest) != out:
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.makedirs(os.path.join(dest, "models"))
        shutil.copy2(os.path.join(out, "models.json"), dest)
        for m in meta["models"]:
            shutil.copy2(os.path.join(out, "models", m["name"] + ".mlir"),
                         os.path.join(dest, "models"))

    man = torch_manifest(opts.opt, dest, meta)
    print("torch translations: %d distinct subgraph(s), %d untranslated%s" % (
        len(man["subgraphs"]), sum(1 for x in man["subgraphs"] if x.get("error")),
        "".join("\n  %s (%s): %s" % (x["name"], ", ".join(x["models"]), x["error"])
                for x in man["subgraphs"] if x.get("error"))))

    def du(p):
        n = 0
        for d, _, fs in os.walk(p):
            for f in fs:
                n += os.path.getsize(os.path.join(d, f))
        return n
    held, stage = du(dest), du(os.path.join(ROOT, ".device", "loop"))
    print("run on the GPU machine: %s" % sh)
    print("models: %d in %s (%.2f MiB); stage .device/loop %.1f MiB; carry "
          "limit 64 MiB: %s" % (len(meta["models"]), dest, held / 2**20,
                                stage / 2**20,
                                "ok" if held + stage < 64 * 2**20 else "TOO BIG"))
    if not stage:
        print("no .device/loop stage: run bench/loop/prepare.sh first")
    print("on the GPU machine (carry .device/loop and .device/heldout):")
    print("  bash bench/table/heldout-device.sh .device/heldout $OUT/heldout")
    print("  (TORCH=0 skips the torch eager / torch.compile timing; "
          "TORCH_COMPILE_BUDGET_S caps the compiles, default 180)")
    return 0


# ---- main ---------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write held-out models")
    g.add_argument("outdir")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--count", type=int, default=40)
    g.add_argument("--opt", default=default_opt())
    g.add_argument("--p-hidden", type=float, default=0.25,
                   help="chance that the row length / hidden sizes change too")
    g.add_argument("--p-dtype", type=float, default=0.2,
                   help="chance that the element type changes too")
    o = sub.add_parser("offline", help="compile without a GPU and summarize")
    o.add_argument("outdir")
    o.add_argument("--opt", default=default_opt())
    o.add_argument("--jobs", type=int, default=1)
    o.add_argument("--timeout", type=int, default=900)
    o.add_argument("--keep-cache", action="store_true",
                   help="keep OUTDIR/cache from an earlier run")
    o.add_argument("--no-snapshot", action="store_true",
                   help="run --opt in place (not a copy in OUTDIR/bin)")
    s = sub.add_parser("summarize", help="the table from OUTDIR/reports")
    s.add_argument("outdir")
    s.add_argument("--json")
    s.add_argument("--torch", help="torch_time.py's results "
                   "(default OUTDIR/torch.json when it exists)")
    s.add_argument("--present", action="store_true",
                   help="only the models that have a report")
    d = sub.add_parser("device-script", help="stage the models and their "
                       "torch translations for heldout-device.sh")
    d.add_argument("outdir")
    d.add_argument("--opt", default=default_opt(),
                   help="llm-fuse-opt that outlines for the translations "
                   "(the same build as the stage's)")
    opts = ap.parse_args(argv)
    if getattr(opts, "opt", None):
        opts.opt = os.path.abspath(opts.opt)
    return {"gen": cmd_gen, "offline": cmd_offline, "summarize": cmd_summarize,
            "device-script": cmd_device_script}[opts.cmd](opts)


if __name__ == "__main__":
    sys.exit(main())
