#!/usr/bin/env python3
"""bind_template.py ENTRY.json S0=V S1=V ... - prints a pattern-table
entry's template with each `// llm-fuse.template-size SK` line bound to
`// llm-fuse.tune SK = V`, as the pass binds a subgraph's sizes
(docs/kernel-contract.md section 10), so that llm-fuse-build-kernel
--tune-variant can build any of its variants."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "kernels", "table"))
from entry_io import read_entry  # noqa: E402  (the shipped entries are .json.gz)

sizes = dict(a.split("=") for a in sys.argv[2:])
text = read_entry(sys.argv[1])["template"]
sys.stdout.write(re.sub(r"// llm-fuse\.template-size (S\d+)",
                        lambda m: "// llm-fuse.tune %s = %s" % (m.group(1), sizes[m.group(1)]), text))
