#!/usr/bin/env python3
"""vcond_stage.py - stages the seed-23 one-row f16 SwiGLU refusal
(012_swiglu_r1_f13824_f16, entry gemm_any_swiglu_f16_mma_row) for the GPU
machine (bench/table/vcond-prepare.sh runs it; bench/table/vcond-device.sh
uses it).

    vcond_stage.py STAGE BUILD_BIN MODEL

Outlines MODEL, stages its reference with llm-fuse-reference --build
(sm_90: plan.json, the wide/ plan, cubins) into STAGE/sw/ref, and builds
(sm_90a) every variant the entry's requirements admit at the subgraph's
sizes into STAGE/sw/<tag>/. STAGE/sw/cases.json lists them (the form of
bench/table/overflow_stage.py).
"""
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
sys.path.insert(0, os.path.join(ROOT, "bench", "table"))
from entry_io import read_entry  # noqa: E402
from skinny_stage import bind_sizes, build_kernel, variants  # noqa: E402

PAT = "c0a22f8ca712dc5b"
ENTRY = "gemm_any_swiglu_f16_mma_row"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("vcond_stage: %s failed: %s" % (" ".join(cmd[:2]), (r.stdout + r.stderr)[-800:]))
    return r.stdout + r.stderr


def main():
    stage, binp, model = sys.argv[1:4]
    d = os.path.join(stage, "sw")
    os.makedirs(d, exist_ok=True)
    outl = os.path.join(d, "outlined.mlir")
    run([os.path.join(binp, "llm-fuse-opt"), "--llm-fuse-outline=remarks=false", model, "-o", outl])
    log = run([os.path.join(binp, "llm-fuse-reference"), "--build", "--chip", "sm_90",
               "--out-dir", os.path.join(d, "ref"), outl])
    print("\n".join("stage: %s" % l for l in log.splitlines() if l.strip()))
    plans = glob.glob(os.path.join(d, "ref", "*", "plan.json"))
    assert len(plans) == 1, plans
    sig = json.load(open(plans[0]))["signature"]
    c = dict(case="012", model=os.path.basename(model), signature=sig,
             plan=os.path.relpath(plans[0], stage), variants=[])
    tmpl = read_entry(os.path.join(ROOT, "kernels", "table", "v1",
                                   "%s-%s.json.gz" % (PAT, ENTRY)))["template"]
    bad = 0
    for label, text in variants(tmpl, bind_sizes(tmpl, sig)):
        tag = "%s.%s" % (ENTRY, label.replace("=", "").replace(" ", "_"))
        j = build_kernel(binp, os.path.join(d, tag), text, sig, chip="sm_90a", keep_failed=False)
        print("stage: %-44s %s %s" % (tag, "built" if j.get("ok") else "FAILED", j.get("grid")))
        if j.get("ok"):
            c["variants"].append(dict(tag=tag, label=label,
                                      candidate=os.path.relpath(os.path.join(d, tag, "result.json"),
                                                                stage)))
        else:
            bad += 1
    os.remove(outl)
    for f in glob.glob(os.path.join(d, "**", "*"), recursive=True):
        if f.endswith(".mlir") or (f.endswith(".ptx") and os.path.exists(f[:-4] + ".cubin")):
            os.remove(f)
    json.dump([c], open(os.path.join(d, "cases.json"), "w"), indent=1)
    return 1 if bad or not c["variants"] else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main())
