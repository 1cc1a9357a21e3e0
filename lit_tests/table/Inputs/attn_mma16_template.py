#!/usr/bin/env python3
"""attn_mma16_template.py OPT DTYPE D FORM S0=V [S1=V] - prints
kernels/table/attn_any.py's "-0mma" template of (DTYPE, D, FORM)
(gen_rows.py gen_attention_mma16; attn_any.MMA16_ENTRIES turned on, as
bench/table/attn16_bench.py newtable does), rendered from the generator
rather than read from the table, with each `// llm-fuse.template-size SK`
line bound to `// llm-fuse.tune SK = V` as bind_template.py does, so that
llm-fuse-build-kernel --tune-variant 0 builds it."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
import attn_any  # noqa: E402
import build  # noqa: E402

opt, dtype, d, form = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sizes = dict(a.split("=") for a in sys.argv[5:])
attn_any.MMA16_ENTRIES = True
name = "zz-any-attention-%s-d%d-%s-0mma" % (dtype, d, form)
t = [t for t in attn_any.templates() if t["name"] == name][0]
text = t["render"](t["pick"](build.outline_text(opt, t["example"])))[0]
sys.stdout.write(re.sub(r"// llm-fuse\.template-size (S\d+)",
                        lambda m: "// llm-fuse.tune %s = %s" % (m.group(1), sizes[m.group(1)]), text))
