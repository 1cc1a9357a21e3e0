"""tf32_wgmma_ptx.py CACHE_DIR - for each TF32 wgmma kernel
(gen_gemm.py tf32_wgmma_tma) in an llm-fuse cache, print what shows that it
rounds its operands to TF32 in shared memory before the tensor cores read
them (kernels/handwritten/gemm_wgmma_tma.py, "TF32 mode"): the kernel's
name, how many cvt.rna.tf32.f32 it has and how many 16-byte shared loads
and stores around them, and whether, in program order, the first rounding
comes before the async-proxy fence, that before the named barrier of the
rounding threads, and that before the first wgmma."""
import glob
import json
import re
import sys

for path in sorted(glob.glob(sys.argv[1] + "/v1/*/*.json")):
    ptx = json.load(open(path)).get("ptx") or ""
    name = re.search(r"\.entry (\w+)", ptx)
    if not name or "tf32_wgmma" not in name.group(1):
        continue
    first = lambda pat: (re.search(pat, ptx).start() if re.search(pat, ptx) else -1)
    at = [first(p) for p in (r"cvt\.rna\.tf32\.f32", r"fence\.proxy\.async\.shared::cta",
                             r"bar\.sync\s+1, (128|256);", r"wgmma\.mma_async")]
    print(name.group(1), "cvt.rna", ptx.count("cvt.rna.tf32.f32"), "ld.v4", len(re.findall(r"ld\.shared\.v4", ptx)),
          "st.v4", len(re.findall(r"st\.shared\.v4", ptx)),
          "order", "ok" if min(at) >= 0 and at == sorted(at) else "wrong %s" % at)
