#!/usr/bin/env python3
"""overflow_stage.py - stages the f16 overflow-boundary check for the GPU
machine (bench/table/overflow-prepare.sh runs it; docs/verification.md,
"The f16 overflow boundary").

    overflow_stage.py STAGE BUILD_BIN HO1 HO7

HO1, HO7: `python3 bench/table/heldout.py gen DIR --seed 1 --count 50` and
`--seed 7 --count 60`. For the held-out SwiGLU f16 models seed 1's
016_swiglu_r61_f16 and seed 7's 031_swiglu_r30_f16: outlines the model,
stages its reference with llm-fuse-reference --build (sm_90: plan.json,
the wide/ plan, cubins) into STAGE/sw/<case>/ref, and builds (sm_90a)
every tune variant the requirements admit of the table entries the pass
tried for it in the session-27 held-out run (bench/gpu/results/
2026-11-25d-h200-heldout-seed{1-016,7-031}.err): 016 (61 rows) the wgmma
and mma.sync SwiGLU entries of gemm_any.py (the skinny mma.sync entry
admits M <= 48 only), 031 (30 rows) the skinny mma.sync entry and the
wgmma one. STAGE/sw/cases.json lists them. Only JSON and cubins stay.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
from entry_io import read_entry  # noqa: E402
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402

PAT = "cbb332eaad22e1a9"
CASES = [
    # (case, held-out set, model, table entries)
    ("016", 1, "016_swiglu_r61_f16", ["gemm_any_swiglu_f16_1wgmma", "gemm_any_swiglu_f16_2mma",
                                      "0skinny-mma-swiglu-f16"]),
    ("031", 7, "031_swiglu_r30_f16", ["0skinny-mma-swiglu-f16", "gemm_any_swiglu_f16_1wgmma"]),
]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("overflow_stage: %s failed: %s" % (" ".join(cmd[:2]), (r.stdout + r.stderr)[-800:]))
    return r.stdout + r.stderr


def main():
    stage, binp, ho1, ho7 = sys.argv[1:5]
    ho = {1: ho1, 7: ho7}
    cases, bad = [], 0
    for case, seed, model, entries in CASES:
        d = os.path.join(stage, "sw", case)
        os.makedirs(d, exist_ok=True)
        outl = os.path.join(d, "outlined.mlir")
        run([os.path.join(binp, "llm-fuse-opt"), "--llm-fuse-outline=remarks=false",
             os.path.join(ho[seed], "models", model + ".mlir"), "-o", outl])
        log = run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90",
                   "--out-dir", os.path.join(d, "ref"), outl])
        print("\n".join("stage %s: %s" % (case, l) for l in log.splitlines() if l.strip()))
        plans = glob.glob(os.path.join(d, "ref", "*", "plan.json"))
        assert len(plans) == 1, plans
        plan = json.load(open(plans[0]))
        sig = plan["signature"]
        c = dict(case=case, model=model, signature=sig,
                 plan=os.path.relpath(plans[0], stage), variants=[])
        for ent in entries:
            tmpl = read_entry(os.path.join(ROOT, "kernels", "table", "v1",
                                           "%s-%s.json.gz" % (PAT, ent)))["template"]
            vs = variants(tmpl, bind_sizes(tmpl, sig))
            if not vs:
                print("stage %s: %s admits no variant at %s" % (case, ent, sig))
            for label, text in vs:
                tag = "%s.%s" % (ent, label.replace("=", "").replace(" ", "_"))
                vd = os.path.join(d, tag)
                j = build_kernel(binp, vd, text, sig, chip="sm_90a", keep_failed=False)
                print("stage %s: %-44s %s %s" % (case, tag, "built" if j.get("ok") else "FAILED",
                                                 j.get("grid")))
                if j.get("ok"):
                    c["variants"].append(dict(tag=tag, entry=ent, label=label,
                                              candidate=os.path.relpath(
                                                  os.path.join(vd, "result.json"), stage)))
                else:
                    bad += 1
        os.remove(outl)
        cases.append(c)
    # only what the worker reads: JSON and cubins (PTX where no cubin)
    for f in glob.glob(os.path.join(stage, "sw", "**", "*"), recursive=True):
        if f.endswith(".mlir") or (f.endswith(".ptx") and os.path.exists(f[:-4] + ".cubin")):
            os.remove(f)
    json.dump(cases, open(os.path.join(stage, "sw", "cases.json"), "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main())
