#!/usr/bin/env python3
"""skinny_stage.py - stages the skinny-M GEMM cases for the GPU machine
(bench/table/skinny-prepare.sh runs it; kernels/table/skinny_any.py).

    skinny_stage.py STAGE BUILD_BIN

For each case (a shipped example at a few rows), outlines it, builds the
default lowering's plan (llm-fuse-reference), asks the pass offline
(verify=none, sm_90a) which table entry answers each contraction, once
with the shipped table ("skinny": the 0skinny entries first) and once with
the table without them ("today"), and builds every tune variant of both
entries that their requirements admit at the subgraph's sizes
(llm-fuse-build-kernel, sm_90a): STAGE/<sg>/<tag>-v<k>/result.json +
kernel.cubin. STAGE/cases.json lists them with M, N, K and W's layout for
skinny_torch.py and skinny-device.sh.
"""
import itertools
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (kernels/table/v1/*.json.gz)
CASES = [
    # (name, example, rows token, rows)
    ("mlp_r1", "examples/bench/minigpt_mlp.mlir", "65536", 1),
    ("mlp_r17", "examples/bench/minigpt_mlp.mlir", "65536", 17),
    ("mlp_r64", "examples/bench/minigpt_mlp.mlir", "65536", 64),
    ("mlp_r127", "examples/bench/minigpt_mlp.mlir", "65536", 127),
    ("relu_r1", "examples/gemm_epilogue.mlir", "1024x", 1),
    ("relu_r17", "examples/gemm_epilogue.mlir", "1024x", 17),
    ("relu_r127", "examples/gemm_epilogue.mlir", "1024x", 127),
    ("p44_b1_t17", None, None, 17),
]


def knobs(text):
    """[(name, values)] and requirement expressions of a template"""
    ks = [(m.group(1), [int(v) for v in m.group(2).split(",")])
          for m in re.finditer(r"//\s*llm-fuse\.tune ([A-Z][A-Z0-9_]*) = ([-0-9, ]+)", text)]
    reqs = re.findall(r"//\s*llm-fuse\.tune-require (.*)", text)
    return ks, reqs


def ev(expr, env):
    e = expr.replace("&&", " and ").replace("||", " or ").replace("/", "//")
    return int(eval(e, {"__builtins__": {}}, dict(env)))


def variants(text, sizes):
    """the instantiated texts of the admitted variants (the contract's
    order: first knob slowest), sizes bound"""
    ks, reqs = knobs(text)
    free = [(k, v) for k, v in ks if k not in sizes]
    out = []
    for combo in itertools.product(*[v for _, v in free]):
        env = dict(sizes)
        env.update({k: c for (k, _), c in zip(free, combo)})
        try:
            if not all(ev(r, env) for r in reqs):
                continue
        except ZeroDivisionError:
            continue
        t = re.sub(r"\{\{(.*?)\}\}", lambda m: str(ev(m.group(1), env)), text)
        t = re.sub(r"//(\s*)llm-fuse\.tune-require", r"//\1llm-fuse.tuned-require", t)
        t = re.sub(r"//(\s*)llm-fuse\.tune ", r"//\1llm-fuse.tuned ", t)
        t = re.sub(r"//(\s*)llm-fuse\.template-size", r"//\1llm-fuse.template-sized", t)
        out.append((" ".join("%s=%d" % (k, c) for (k, _), c in zip(free, combo)), t))
    return out


def build_kernel(binp, d, text, sig, chip="sm_90a", keep_failed=True):
    """llm-fuse-build-kernel (from binp; "" for PATH) on text into folder d
    (kernel.mlir, result.json, kernel.cubin): its JSON result, or ok False
    with the tool's stderr; a failed build's folder is removed unless
    keep_failed"""
    os.makedirs(d, exist_ok=True)
    kp = os.path.join(d, "kernel.mlir")
    open(kp, "w").write(text)
    r = subprocess.run([os.path.join(binp, "llm-fuse-build-kernel"), "--chip", chip,
                        "--signature", sig, "--out-dir", d, kp], capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {"ok": False, "message": r.stderr[-300:]}
    if not j.get("ok") and not keep_failed:
        shutil.rmtree(d, ignore_errors=True)
    return j


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("skinny_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-600:]))
    return r


def main():
    stage, binp = sys.argv[1:3]
    opt = os.path.join(binp, "llm-fuse-opt")
    models = os.path.join(stage, "models")
    os.makedirs(models, exist_ok=True)
    today = os.path.join(stage, "table-today")
    if os.path.exists(today):
        shutil.rmtree(today)
    os.makedirs(os.path.join(today, "v1"))
    for f in os.listdir(os.path.join(ROOT, "kernels/table/v1")):
        if "-0skinny-" not in f:
            shutil.copy(os.path.join(ROOT, "kernels/table/v1", f), os.path.join(today, "v1", f))
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    cases = []
    for name, src, tok, rows in CASES:
        path = os.path.join(models, name + ".mlir")
        if src is None:
            run([sys.executable, os.path.join(ROOT, "examples/kernelbench_l3_p44/gen_p44.py"), "1", str(rows),
                 "-o", path])
        else:
            text = open(os.path.join(ROOT, src)).read()
            open(path, "w").write(text.replace(tok, "%d%s" % (rows, "x" if tok.endswith("x") else "")))
        outl = os.path.join(models, name + ".outlined.mlir")
        run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
        run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", stage, outl])
        picked = {}
        for tag, table in (("skinny", os.path.join(ROOT, "kernels/table")), ("today", today)):
            rep = os.path.join(models, "%s.%s.json" % (name, tag))
            cache = os.path.join(stage, "cache-%s-%s" % (name, tag))
            shutil.rmtree(cache, ignore_errors=True)
            run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s pattern-table=%s "
                 "cache-dir=%s report=%s" % (empty, table, cache, rep), path, "-o", os.devnull],
                env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
            shutil.rmtree(cache, ignore_errors=True)
            for s in json.load(open(rep))["subgraphs"]:
                if s["class"] != "contraction":
                    continue
                picked.setdefault(s["name"], {"signature": s["signature"]})[tag] = s.get("model", "")
        for sg, p in sorted(picked.items()):
            ins = re.findall(r"tensor<([^>]*)>", p["signature"])
            case = dict(case=name, sg=sg, signature=p["signature"], entries={}, variants={})
            for tag in ("skinny", "today"):
                ent = p.get(tag) or ""
                if "/" not in ent:
                    print("skinny_stage: %s %s: no table entry (%s)" % (name, sg, ent), file=sys.stderr)
                    continue
                f = ent.split("/", 1)[1]
                d = os.path.join(ROOT, "kernels/table/v1") if tag == "skinny" else os.path.join(today, "v1")
                tmpl = read_entry(os.path.join(d, f))["template"]
                # the sizes: those the pass bound (the first variant's "tuned" lines of its log are not
                # kept; read them back from the subgraph's signature through the entry's placeholders)
                sizes = bind_sizes(tmpl, p["signature"])
                case["entries"][tag] = f
                vs = variants(tmpl, sizes)[:6]
                for i, (label, text) in enumerate(vs):
                    d2 = os.path.join(stage, sg, "%s-v%d" % (tag, i))
                    j = build_kernel(binp, d2, text, p["signature"])
                    print("skinny_stage: %-10s %s %-6s v%d %-22s %s %s" % (
                        name, sg, tag, i, label, "built" if j.get("ok") else "FAILED",
                        (j.get("ptxas_info") or j.get("message", ""))[:120]))
                    if j.get("ok"):
                        case["variants"]["%s-v%d" % (tag, i)] = label
            cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


def bind_sizes(tmpl, signature):
    """S0.. of a template from the subgraph's signature: the gpu.func's
    memref types against the signature's tensor types, in order"""
    m = re.search(r"gpu\.func @\w+\((.*?)\)\s*kernel", tmpl, re.S)
    kt = re.findall(r"memref<([^>]*)>", m.group(1))
    st = re.findall(r"tensor<([^>]*)>", signature)
    sizes = {}
    for a, b in zip(kt, st):
        for x, y in zip(a.split("x")[:-1], b.split("x")[:-1]):
            mm = re.fullmatch(r"\{\{(S\d+)\}\}", x)
            if mm:
                sizes[mm.group(1)] = int(y)
    return sizes


if __name__ == "__main__":
    main()
