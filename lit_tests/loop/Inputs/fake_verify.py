#!/usr/bin/env python3
"""fake_verify.py - a stand-in llm-fuse-verify for the closed-loop tests on
machines without a GPU (LLM_FUSE_VERIFY points the pass at it).

It judges a candidate by its kernel's name (result.json's "kernel_name"):
  wrong_*       rejected: a mismatch on output 0, with a located first bad
                element, in a heavy-tailed trial; its message names the seed
                (the pass must not pass the seed on to the model)
  hang_*        sleeps for an hour (the watchdog must end it)
  ms_<N>_*      accepted, timed at N/10 ms against a 10 ms fallback and a
                1 ms roofline floor
Every call appends "seed <hex>" to $FAKE_VERIFY_LOG, so a test can check
that each candidate was verified with a fresh seed.
"""
import json
import os
import sys
import time

args = sys.argv[1:]
opt = {}
i = 0
while i < len(args):
    if args[i].startswith("--") and i + 1 < len(args) and \
            not args[i + 1].startswith("--"):
        opt[args[i]] = args[i + 1]
        i += 2
    else:
        opt[args[i]] = True
        i += 1
cand = json.load(open(opt["--candidate"]))
name = cand.get("kernel_name") or cand.get("kernel") or ""
seed = opt.get("--seed", "?")
log = os.environ.get("FAKE_VERIFY_LOG")
if log:
    with open(log, "a") as f:
        f.write("seed %s kernel %s flops %s\n" % (seed, name,
                                                  opt.get("--flops", "?")))

sig = "(tensor<16384x4096xbf16>, tensor<4096xbf16>) -> tensor<16384x4096xbf16>"
trials = [{"index": k, "distribution": "normal", "seed": "0x%016x" % (k + 1),
           "result": "ok"} for k in range(5)]
verdict = {"schema": "llm-fuse-verdict/0", "subgraph": "x", "signature": sig,
           "kernel": name, "trials": trials}
if name.startswith("hang_"):
    time.sleep(3600)
if name.startswith("wrong_"):
    trials[1] = {
        "index": 1, "distribution": "heavy-tailed",
        "seed": "0x1234abcd5678ef90", "result": "mismatch",
        "outputs": [{"index": 0, "dtype": "bf16", "rtol": 0.0078125,
                     "atol": 0.001, "bad_nan_poison": 4096,
                     "bad_sentinel_poison": 4096, "unwritten": 0,
                     "runs_differ": 0,
                     "first_bad_sentinel_poison": {
                         "index": 8195, "reference": 1.5,
                         "candidate": -3.25}}]}
    del trials[2:]
    verdict.update(accepted=False, reason="mismatch", message=(
        "trial 1 (heavy-tailed, seed 0x1234abcd5678ef90): output 0: 4096 of "
        "67108864 element(s) out of tolerance"))
    print(json.dumps(verdict))
    sys.exit(1)
ms = float(name.split("_")[1]) / 10 if name.startswith("ms_") else 5.0
verdict.update(accepted=True, reason="ok", message="verified", timing={
    "candidate_ms": ms, "reference_ms": 10.0, "speedup": 10.0 / ms,
    "roofline_ms": 0.5, "dense_roofline_ms": 1.0, "bytes_in": 134225920,
    "bytes_out": 134217728, "measured_bandwidth_gbs": 268.4, "flops": 0,
    "peak_flops": 1.5e15, "dense_peak_flops": 9.9e14})
print(json.dumps(verdict))
sys.exit(0)
