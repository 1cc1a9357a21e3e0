#!/usr/bin/env python3
"""bmm16_stage.py - stages the 16-bit batched-GEMM cases of session 28
(kernels/table/bmm16_any.py) for the GPU machine; bench/table/bmm16-prepare.sh
runs it twice: once against the table before bmm16_any.py's entries
(BMM_TABLE=DIR holding v1/), once against the repository's table.

    bmm16_stage.py STAGE BUILD_BIN [CASE...]

Per case (bmm_any.model_text), as bench/table/bmm_stage.py does it (its
helpers imported, not copied): outline, the default lowering's plan
(llm-fuse-reference), the entry the pass answers with offline (verify=none,
sm_90a, the replay set empty), and each admitted tune variant of that entry
built with llm-fuse-build-kernel (sm_90a): STAGE/<sg>/first-v<k>/result.json
+ kernel.cubin. Cases: CASES28 below (the held-out 16-bit Q K^T models 046
and 005 of `heldout.py gen --seed 7 --count 60`, in bf16 and f16, Q K^T
sizes the new entries admit, and the other 16-bit held-out batched GEMMs
022 (A^T B) and 052 (torch-mlir's P V, f16), whose entries bmm16_any.py does
not touch). STAGE/cases.json lists them (bench/table/bmm16_report.py).
"""
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
import bmm_any  # noqa: E402
import bmm_stage  # noqa: E402  (its run())
from entry_io import read_entry  # noqa: E402
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402

# (name, form, B, M, N, K, d, types, which): which None: staged on both
# sides; "new": only where BMM16_SIDE=new; "old": only where BMM16_SIDE=old
# (an entry bmm16_any.py does not change: the report uses its old figures
# for after too); "later": only when BMM16_LATER=1 (both sides)
CASES28 = [
    ("ho7_046_nt_r1024", "nt", 32, 1024, 1024, 64, None, ["bf16"], None),
    ("ho7_005_nt_r135", "nt", 32, 135, 135, 64, None, ["bf16"], None),
    ("ho7_022_tn_r16", "tn", 8, 16, 256, 1024, None, ["bf16"], None),
    ("ho7_046_nt_r1024", "nt", 32, 1024, 1024, 64, None, ["f16"], "new"),
    ("ho7_005_nt_r135", "nt", 32, 135, 135, 64, None, ["f16"], "new"),
    ("ho7_022_tn_r16", "tn", 8, 16, 256, 1024, None, ["f16"], "new"),
    ("qk_t512_d64", "nt", 32, 512, 512, 64, None, ["bf16"], None),
    ("qk_t2048_d128", "nt", 16, 2048, 2048, 128, None, ["bf16"], None),
    ("qk_t128_d64", "nt", 32, 128, 128, 64, None, ["f16"], None),
    ("qk_t55_d64", "nt", 12, 55, 55, 64, None, ["bf16"], None),
    ("tn_r8_k512", "tn", 12, 8, 256, 512, None, ["bf16"], None),
    ("tn_r16_k2048", "tn", 12, 16, 768, 2048, None, ["bf16"], None),
    ("qk_t16_d64", "nt", 12, 16, 16, 64, None, ["bf16"], None),
    ("qk_t512_d96", "nt", 32, 512, 512, 96, None, ["bf16"], None),
    ("ho7_052_pv_r512", "tmpv", 12, 512, 64, 512, None, ["f16"], "old"),
]


def main():
    stage, binp = sys.argv[1:3]
    only = sys.argv[3:] or os.environ.get("BMM16_CASES", "").split()
    opt = os.path.join(binp, "llm-fuse-opt")
    models, empty = os.path.join(stage, "models"), os.path.join(stage, "empty")
    os.makedirs(models, exist_ok=True)
    os.makedirs(empty, exist_ok=True)
    table = os.environ.get("BMM_TABLE") or os.path.join(ROOT, "kernels", "table")
    cases = []
    side = os.environ.get("BMM16_SIDE", "new")
    for name, form, B, M, N, K, d, types, which in CASES28:
        if which in ("old", "new") and side != which:
            continue
        if which == "later" and os.environ.get("BMM16_LATER") != "1":
            continue
        for dt in types:
            cname = "%s_%s" % (name, dt)
            if only and cname not in only and name not in only:
                continue
            for s, case in bmm_stage.stage_model(opt, binp, models, stage, empty, table, cname, form, dt,
                                                 B, M, N, K, d, who="bmm16_stage"):
                ent = case["entry"]
                cases.append(case)
                if "/" not in ent:
                    print("bmm16_stage: %s: no table entry (%s)" % (cname, ent), file=sys.stderr)
                    continue
                f = ent.split("/", 1)[1]
                tmpl = read_entry(os.path.join(table, "v1", f))["template"]
                label0 = re.sub(r"\.json(\.gz)?$", "", f[17:])
                for i, (label, text) in enumerate(variants(tmpl, bind_sizes(tmpl, s["signature"]))):
                    d2 = os.path.join(stage, s["name"], "first-v%d" % i)
                    j = build_kernel(binp, d2, text, s["signature"])
                    print("bmm16_stage: %-22s %s v%d %-28s %-8s %s %s" % (
                        cname, s["name"], i, label0, label, "built" if j.get("ok") else "FAILED",
                        (j.get("ptxas_info") or j.get("message", ""))[:100]), flush=True)
                    if j.get("ok"):
                        case["variants"]["first-v%d" % i] = "%s %s" % (label0, label)
    json.dump(cases, open(os.path.join(stage, "cases.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
