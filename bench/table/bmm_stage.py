#!/usr/bin/env python3
"""bmm_stage.py - stages the batched-GEMM cases for the GPU machine
(bench/table/bmm-prepare.sh runs it; kernels/table/bmm_any.py).

    bmm_stage.py STAGE BUILD_BIN [CASE...]   (or BMM_CASES="CASE ..."; all by default)

For each case (a form of bmm_any.model_text at attention-like or GEMM-like
sizes, in f32, bf16 and f16), outlines it, builds the default lowering's
plan (llm-fuse-reference), asks the pass offline (verify=none, sm_90a, the
shipped table, the replay set empty) which table entry answers, and builds
up to 3 admitted tune variants of that entry ("first-v<k>") and, where
that entry is a gen_gemm.py kernel, the general kernel's entry too
("gen-v0"), with llm-fuse-build-kernel (sm_90a):
STAGE/<sg>/<tag>/result.json + kernel.cubin. STAGE/cases.json lists them
for bmm_torch.py and bmm-device.sh.
"""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
import bmm_any  # noqa: E402
from skinny_stage import bind_sizes, variants  # noqa: E402

# (name, form, B, M, N, K, d): attention scores Q K^T (nt, M = N = T,
# K = d), P V (nn, M = K = T, N = d), and GEMM-like B = 4, 1024^3.
CASES = [
    ("qk_t7_d64", "nt", 32, 7, 7, 64, None),
    ("qk_t128_d64", "nt", 32, 128, 128, 64, None),
    ("qk_t512_d96", "nt", 32, 512, 512, 96, None),
    ("qk_t2048_d128", "nt", 16, 2048, 2048, 128, None),
    ("pv_t512_d64", "nn", 32, 512, 64, 512, None),
    ("pv_t2048_d128", "nn", 16, 2048, 128, 2048, None),
    ("nt_b4_1024", "nt", 4, 1024, 1024, 1024, None),
    ("nn_b4_1024", "nn", 4, 1024, 1024, 1024, None),
]
# The other forms, each in two types: verified (torch times them too).
EXTRA = [
    ("ntm_t256_d64", "ntm", 16, 256, 256, 64, None, ["f32", "bf16"]),
    ("tn_b8", "tn", 8, 384, 256, 512, None, ["f32", "bf16"]),
    ("nts_t512_d128", "nts", 16, 512, 512, 128, 128, ["f32", "bf16"]),
    ("tms_h12_t256_d64", "tms", 12, 256, 256, 64, 64, ["f32", "f16"]),
    ("tmpv_h12_t256_d64", "tmpv", 12, 256, 64, 256, None, ["f32", "bf16"]),
    ("tms_h4_t128_d64", "tms", 4, 128, 128, 64, 64, ["f32"]),
    ("tmpv_h4_t128_d64", "tmpv", 4, 128, 64, 128, None, ["f32"]),
]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("bmm_stage: %s failed: %s" % (" ".join(cmd[:2]), r.stderr[-600:]))
    return r


def build(binp, sig, text, d2):
    os.makedirs(d2, exist_ok=True)
    kp = os.path.join(d2, "kernel.mlir")
    open(kp, "w").write(text)
    r = subprocess.run([os.path.join(binp, "llm-fuse-build-kernel"), "--chip", "sm_90a", "--signature", sig,
                        "--out-dir", d2, kp], capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {"ok": False, "message": r.stderr[-300:]}
    return j


def main():
    stage, binp = sys.argv[1:3]
    only = sys.argv[3:] or os.environ.get("BMM_CASES", "").split()
    opt = os.path.join(binp, "llm-fuse-opt")
    models = os.path.join(stage, "models")
    os.makedirs(models, exist_ok=True)
    empty = os.path.join(stage, "empty")
    os.makedirs(empty, exist_ok=True)
    tdir = os.path.join(ROOT, "kernels", "table", "v1")
    cases = []
    todo = [(c, dt) for dt in bmm_any.DTYPES for c in CASES] + \
        [(c[:7], dt) for c in EXTRA for dt in c[7]]
    for (name, form, B, M, N, K, d), dt in todo:
        if True:
            cname = "%s_%s" % (name, dt)
            if only and cname not in only:
                continue
            path = os.path.join(models, cname + ".mlir")
            open(path, "w").write(bmm_any.model_text(form, dt, B, M, N, K, d))
            outl = os.path.join(models, cname + ".outlined.mlir")
            run([opt, "--llm-fuse-outline=remarks=false", path, "-o", outl])
            run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90", "--out-dir", stage, outl])
            rep = os.path.join(models, cname + ".json")
            cache = os.path.join(stage, "cache-" + cname)
            r = subprocess.run([opt, "--llm-fuse=offline verify=none arch=sm_90a remarks=false replay-dir=%s "
                                "cache-dir=%s report=%s" % (empty, cache, rep), path, "-o", os.devnull],
                               capture_output=True, text=True, env=dict(os.environ, LLM_FUSE_LIBCUDA="/nonexistent"))
            shutil.rmtree(cache, ignore_errors=True)
            if r.returncode:
                sys.exit("bmm_stage: the pass failed on %s: %s" % (cname, r.stderr[-400:]))
            for s in json.load(open(rep))["subgraphs"]:
                if s["class"] != "contraction":
                    continue
                ent = s.get("model") or ""
                case = dict(case=cname, form=form, dtype=dt, B=B, M=M, N=N, K=K, d=d, sg=s["name"],
                            signature=s["signature"], entry=ent, variants={})
                if "/" not in ent:
                    print("bmm_stage: %s %s: no table entry (%s)" % (cname, s["name"], ent), file=sys.stderr)
                    cases.append(case)
                    continue
                f = ent.split("/", 1)[1]
                todo = [("first", f, 3)]
                if "-9gen" not in f:
                    todo.append(("gen", f.split("-bmm-any-")[0] + "-bmm-any-" +
                                 f.split("-bmm-any-")[1].rsplit("-", 1)[0] + "-9gen.json", 1))
                for tag, fname, cap in todo:
                    tmpl = json.load(open(os.path.join(tdir, fname)))["template"]
                    sizes = bind_sizes(tmpl, s["signature"])
                    for i, (label, text) in enumerate(variants(tmpl, sizes)[:cap]):
                        d2 = os.path.join(stage, s["name"], "%s-v%d" % (tag, i))
                        j = build(binp, s["signature"], text, d2)
                        print("bmm_stage: %-22s %s %-5s v%d %-12s %s %s" % (
                            cname, s["name"], tag, i, label, "built" if j.get("ok") else "FAILED",
                            (j.get("ptxas_info") or j.get("message", ""))[:100]), flush=True)
                        if j.get("ok"):
                            case["variants"]["%s-v%d" % (tag, i)] = "%s %s" % (fname.split("-bmm-any-")[1][:-5], label)
                cases.append(case)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
