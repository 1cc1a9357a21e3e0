#!/usr/bin/env python3
"""keys_stage.py - stages, on the build machine, the cases of
bench/table/keys-device.sh (session 27, issue 15 point 7: the held-out
subgraphs that had no verified kernel).

    keys_stage.py STAGE BUILD_BIN

Cases (CASES below):
  * attention (kernels/table/attn_any.py over gen_rows.py's gen_attention):
    held-out seed 1's model 001 (causal attention at S = 5, H = 12, D = 64,
    rejected on the NaN/Inf trial before the V rows past S were zeroed) and
    other sizes, element types and the fused-QKV SIMT form, each with the
    table's template (tag v<k>) and, with $KEYS_OLD_GEN_ROWS (the earlier
    gen_rows.py), the same template from that generator (o<k>), and with
    $KEYS_ALT_GEN_ROWS another one (x<k>: the zeroing by a select on every
    V load, session 27's first fix), for the verdicts on several seeds and
    the times side by side;
  * the new keys: TOSA RMSNorm in f32 (rows_any.py; seeds 7 and 11), the
    TOSA row families at fewer than 8 rows (rows_any.py r2..r7; seed 11's
    RMSNorm at 2 rows), torch-mlir's attention scores and att @ v at
    T < 8 (importer_any.py small_t_templates; seed 7's scores at T = 6).
For each case: the model, outlined; the default lowering's plan
(llm-fuse-reference --build: STAGE/<sg>/plan.json, truth/ for 16-bit IR);
the entry that answers (the pass offline, verify=none, sm_90a, no replay
set), or the entry the case names; every tune variant its requirements
admit at the subgraph's sizes, built for sm_90a
(llm-fuse-build-kernel: STAGE/<sg>/<tag>/result.json + kernel.cubin).
STAGE/cases.json lists them for keys-device.sh.
"""
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_any  # noqa: E402
import bmm_any  # noqa: E402  (read-only: the models of importer_any's small-T entries)
import rows_any  # noqa: E402
from entry_io import read_entry  # noqa: E402
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402

SEEDS = list(range(1, 9))  # verify seeds of the NaN/Inf check cases (True below)
SEEDS_FEW = list(range(1, 5))


def attn_model(s, h, d, dt="f32"):
    return attn_any.example_text(s, h, d, dt)


def p44_model(b, t, h, d):
    return attn_any.importer_example(h, d, b, t)


def rows_model(fam, dt, r, n):
    return rows_any.example_text(fam, dt, r, n)


# (case, model text thunk, class of the target subgraph, entry name suffix
#  to use instead of the pass's answer (None: the pass's), old: stage the
#  earlier generator's template too, seeds: verify on SEEDS (True), on a
#  list of seeds, or on seed 1 (False),
#  timed: llm-fuse-verify's timing too)
CASES = [
    ("s1-001_attn_f32_5x12x64", lambda: attn_model(5, 12, 64), "attention-like", None, True, True, True),
    ("attn_f32_1000x12x64", lambda: attn_model(1000, 12, 64), "attention-like", None, True, False, True),
    ("attn_bf16_777x20x128", lambda: attn_model(777, 20, 128, "bf16"), "attention-like", None, True,
     False, True),
    ("attn_f32_2048x16x96", lambda: attn_model(2048, 16, 96), "attention-like", None, True, False,
     True),
    ("attn_f16_37x12x32", lambda: attn_model(37, 12, 32, "f16"), "attention-like", None, False,
     SEEDS_FEW, False),
    ("attn_f32_1x12x64", lambda: attn_model(1, 12, 64), "attention-like", None, False, False, False),
    ("attn_f32_69x1x96", lambda: attn_model(69, 1, 96), "attention-like", None, False, SEEDS_FEW,
     False),
    ("p44attn_simt_b2_t77_h12", lambda: p44_model(2, 77, 12, 64), "attention-like",
     "zz-any-attention-importer-f32-h12-d64", True, SEEDS_FEW, False),
    ("p44attn_simt_b32_t512_h8", lambda: p44_model(32, 512, 8, 96), "attention-like",
     "zz-any-attention-importer-f32-h8-d96", True, False, True),
    ("s7-003_rmsnorm_tosa_f32_128x4096", lambda: rows_model("rmsnorm_tosa", "f32", 128, 4096),
     "reduction", None, False, False, True),
    ("s11-026_rmsnorm_tosa_f32_1024x4000", lambda: rows_model("rmsnorm_tosa", "f32", 1024, 4000),
     "reduction", None, False, False, False),
    ("rmsnorm_tosa_f32_1x4096", lambda: rows_model("rmsnorm_tosa", "f32", 1, 4096), "reduction",
     None, False, False, False),
    ("s11-001_rmsnorm_tosa_bf16_2x1536", lambda: rows_model("rmsnorm_tosa", "bf16", 2, 1536),
     "reduction", None, False, False, True),
    ("rmsnorm_tosa_f16_7x4096", lambda: rows_model("rmsnorm_tosa", "f16", 7, 4096), "reduction",
     None, False, False, False),
    ("softmax_tosa_f32_5x1000", lambda: rows_model("softmax_tosa", "f32", 5, 1000), "reduction",
     None, False, False, False),
    ("softmax_tosa_bf16_3x16384", lambda: rows_model("softmax_tosa", "bf16", 3, 16384), "reduction",
     None, False, False, False),
    ("s7-014_tms_f32_t6_h12_d64", lambda: bmm_any.model_text("tms", "f32", 12, 6, 6, 64, 64),
     "contraction", None, False, SEEDS_FEW, True),
    ("tms_bf16_t3_h16_d128", lambda: bmm_any.model_text("tms", "bf16", 16, 3, 3, 128, 128),
     "contraction", None, False, False, False),
    ("tmpv_f16_t5_h12_d64", lambda: bmm_any.model_text("tmpv", "f16", 12, 5, 64, 5),
     "contraction", None, False, False, False),
]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("keys_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-800:]))
    return r


def old_template(case, entry_name, var="KEYS_OLD_GEN_ROWS"):
    """the template of entry_name made by another gen_rows.py (the file
    $var names: KEYS_OLD_GEN_ROWS, the earlier one; KEYS_ALT_GEN_ROWS, an
    alternative) through attn_any.py: (text) or None"""
    path = os.environ.get(var)
    if not path:
        return None
    loader = importlib.machinery.SourceFileLoader("gen_rows_old", path)  # any file name
    spec = importlib.util.spec_from_loader("gen_rows_old", loader)
    old = importlib.util.module_from_spec(spec)
    loader.exec_module(old)
    from build import outline_text
    opt = os.path.join(BIN, "llm-fuse-opt")
    saved = attn_any.gen_rows
    try:
        attn_any.gen_rows = old
        for t in attn_any.templates():
            if entry_name.endswith(t["name"] + ".json.gz") or entry_name.endswith(t["name"] + ".json"):
                g = t["pick"](outline_text(opt, t["example"]))
                return t["render"](g)[0]
    finally:
        attn_any.gen_rows = saved
    return None


BIN = None


def main():
    global BIN
    stage, BIN = sys.argv[1:3]
    opt = os.path.join(BIN, "llm-fuse-opt")
    models = os.path.join(stage, "models")
    os.makedirs(models, exist_ok=True)
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    only = os.environ.get("KEYS_ONLY")
    cases, keep = [], set()
    for name, thunk, klass, want_entry, old, seeds, timed in CASES:
        if only and not re.search(only, name):
            continue
        path = os.path.join(models, name + ".mlir")
        open(path, "w").write(thunk())
        outl = os.path.join(models, name + ".outlined.mlir")
        run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
        rep = os.path.join(models, name + ".json")
        cache = os.path.join(stage, "cache-" + name)
        run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
             "pattern-table=%s cache-dir=%s report=%s" % (
                 empty, os.path.join(ROOT, "kernels/table"), cache, rep), path, "-o", os.devnull],
            env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
        shutil.rmtree(cache, ignore_errors=True)
        subs = [s for s in json.load(open(rep))["subgraphs"] if s.get("class") == klass]
        assert len(subs) == 1, (name, len(subs))
        s = subs[0]
        ent = s.get("model", "")
        if want_entry:
            # another entry of the key that answers (<pattern[0:16]>/<file>)
            pat = ent.split("/", 1)[0]
            hits = [f for f in os.listdir(os.path.join(ROOT, "kernels/table/v1"))
                    if f.startswith(pat) and re.search("-%s\\.json" % want_entry, f)]
            assert len(hits) == 1, (name, want_entry, hits)
            ent = "%s/%s" % (pat, hits[0])
        case = dict(case=name, sg=s["name"], cls=klass, signature=s["signature"], entry=ent,
                    seeds=SEEDS if seeds is True else (seeds or [1]), timed=timed, variants={})
        if "/" not in ent:
            print("keys_stage: %s: no table entry answers (%s)" % (name, ent), file=sys.stderr)
            cases.append(case)
            continue
        run([os.path.join(BIN, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir",
             stage, outl])
        keep.add(s["name"])
        f = ent.split("/", 1)[1]
        tmpl = read_entry(os.path.join(ROOT, "kernels/table/v1", f))["template"]
        todo = [("v%d" % i, label, text) for i, (label, text) in
                enumerate(variants(tmpl, bind_sizes(tmpl, s["signature"])))]
        for var, pre in (("KEYS_OLD_GEN_ROWS", "o"), ("KEYS_ALT_GEN_ROWS", "x")):
            t_old = old_template(name, f, var) if old else None
            if t_old:
                todo += [("%s%d" % (pre, i), label, text) for i, (label, text) in
                         enumerate(variants(t_old, bind_sizes(t_old, s["signature"])))]
        for tag, label, text in todo:
            j = build_kernel(BIN, os.path.join(stage, s["name"], tag), text, s["signature"],
                             keep_failed=False)
            print("keys_stage: %-34s %s %-3s %-22s %s %s" % (
                name, s["name"], tag, label, "built" if j.get("ok") else "FAILED",
                (j.get("ptxas_info") or j.get("message", ""))[:120]), flush=True)
            if j.get("ok"):
                case["variants"][tag] = label
        cases.append(case)
    # the plans of the other subgraphs of the models are not needed
    for d in os.listdir(stage):
        if d.startswith("sg_") and d not in keep:
            shutil.rmtree(os.path.join(stage, d))
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
