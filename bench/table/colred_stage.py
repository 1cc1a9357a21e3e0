#!/usr/bin/env python3
"""colred_stage.py - stages the leading-dimension reduction cases for the
GPU machine (bench/table/colred-prepare.sh runs it; kernels/table/
colred_any.py).

    colred_stage.py STAGE BUILD_BIN

For each case (a family of examples/bench/col*.mlir at some sizes and
element type), writes the model, outlines it, builds the default
lowering's plan (llm-fuse-reference --build: STAGE/<sg>/plan.json, and the
opmath truth reference for 16-bit IR), asks the pass offline (verify=none,
sm_90a, the replay set empty) which table entry answers, and builds every
tune variant the entry's requirements admit at the subgraph's sizes
(llm-fuse-build-kernel, sm_90a): STAGE/<sg>/v<k>/result.json +
kernel.cubin. STAGE/cases.json lists them for colred-device.sh and
colred_torch.py.
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import colred_any  # noqa: E402
from skinny_stage import bind_sizes, variants  # noqa: E402

# (case, family, dtype, sizes: (R, N) or (B, T, N))
CASES = [
    ("colsum_f32_8192x3072", "colsum", "f32", (8192, 3072)),
    ("colsum_f32_65536x1", "colsum", "f32", (65536, 1)),
    ("colsum_f16_1x16384", "colsum", "f16", (1, 16384)),
    ("colmean_bf16_65536x64", "colmean", "bf16", (65536, 64)),
    ("colmax_f16_4096x16384", "colmax", "f16", (4096, 16384)),
    ("colmax_f32_777x1000", "colmax", "f32", (777, 1000)),
    ("colsumsq_bf16_2048x2048", "colsumsq", "bf16", (2048, 2048)),
    ("coldiff_f32_16384x4096", "coldiff", "f32", (16384, 4096)),
    ("colsum3_bf16_64x256x768", "colsum3", "bf16", (64, 256, 768)),
    ("colsum_bt_f32_64x256x768", "colsum_bt", "f32", (64, 256, 768)),
    ("colsum_bf16_32768x16384", "colsum", "bf16", (32768, 16384)),
]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("colred_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-600:]))
    return r


def main():
    stage, binp = sys.argv[1:3]
    opt = os.path.join(binp, "llm-fuse-opt")
    models = os.path.join(stage, "models")
    os.makedirs(models, exist_ok=True)
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    cases = []
    for name, fam, dt, sizes in CASES:
        path = os.path.join(models, name + ".mlir")
        open(path, "w").write(colred_any.example_text(fam, dt, sizes))
        outl = os.path.join(models, name + ".outlined.mlir")
        run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
        run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", stage,
             outl])
        rep = os.path.join(models, name + ".json")
        cache = os.path.join(stage, "cache-" + name)
        run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
             "pattern-table=%s cache-dir=%s report=%s" % (
                 empty, os.path.join(ROOT, "kernels/table"), cache, rep), path, "-o", os.devnull],
            env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
        shutil.rmtree(cache, ignore_errors=True)
        subs = json.load(open(rep))["subgraphs"]
        assert len(subs) == 1, (name, len(subs))
        s = subs[0]
        ent = s.get("model", "")
        case = dict(case=name, family=fam, dtype=dt, sizes=list(sizes), sg=s["name"],
                    signature=s["signature"], entry=ent, variants={})
        if "/" not in ent or "colred" not in ent:
            print("colred_stage: %s: not answered by a colred entry (%s)" % (name, ent),
                  file=sys.stderr)
            cases.append(case)
            continue
        f = ent.split("/", 1)[1]
        tmpl = json.load(open(os.path.join(ROOT, "kernels/table/v1", f)))["template"]
        bound = bind_sizes(tmpl, s["signature"])
        for i, (label, text) in enumerate(variants(tmpl, bound)):
            d2 = os.path.join(stage, s["name"], "v%d" % i)
            os.makedirs(d2, exist_ok=True)
            kp = os.path.join(d2, "kernel.mlir")
            open(kp, "w").write(text)
            r = subprocess.run([os.path.join(binp, "llm-fuse-build-kernel"), "--chip", "sm_90a",
                                "--signature", s["signature"], "--out-dir", d2, kp],
                               capture_output=True, text=True)
            try:
                j = json.loads(r.stdout)
            except ValueError:
                j = {"ok": False, "message": r.stderr[-300:]}
            print("colred_stage: %-26s %s v%d %-16s %s %s" % (
                name, s["name"], i, label, "built" if j.get("ok") else "FAILED",
                (j.get("ptxas_info") or j.get("message", ""))[:150]))
            if j.get("ok"):
                case["variants"]["v%d" % i] = label
        cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
