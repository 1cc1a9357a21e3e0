#!/usr/bin/env python3
"""check_abi.py UNDEF STATIC SHARED: every mgpu* symbol undefined in the
objects' llvm-nm listing UNDEF must be defined in both library listings."""
import re
import sys


def names(path, pattern):
    with open(path) as f:
        return {m.group(1) for m in re.finditer(pattern, f.read(), re.M)}


need = names(sys.argv[1], r"^\s*U (mgpu\w+)$")
for lib in sys.argv[2:]:
    have = names(lib, r"^[0-9a-f]+ [TW] (mgpu\w+)$")
    missing = sorted(need - have)
    if missing:
        sys.exit("%s lacks %s" % (lib, ", ".join(missing)))
if not need:
    sys.exit("no mgpu symbols used: the objects do not drive the GPU?")
print("ok: %d mgpu functions used, all defined by libllm_fuse_rt.a and "
      "libllm_fuse_rt.so: %s" % (len(need), " ".join(sorted(need))))
