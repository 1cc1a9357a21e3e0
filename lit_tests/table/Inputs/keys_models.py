#!/usr/bin/env python3
"""keys_models.py OUT KIND ARGS... - writes one model for the session-27
table-key tests (the held-out subgraphs that had no entry), from the
generators' own example makers:
  rows FAMILY DTYPE R N          kernels/table/rows_any.py example_text
  attn S H D DTYPE               kernels/table/attn_any.py example_text
  bmm FORM DTYPE B M N K [D]     kernels/table/bmm_any.py model_text"""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "kernels", "table"))
out, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if kind == "rows":
    import rows_any
    text = rows_any.example_text(args[0], args[1], int(args[2]), int(args[3]))
elif kind == "attn":
    import attn_any
    text = attn_any.example_text(int(args[0]), int(args[1]), int(args[2]), args[3])
elif kind == "bmm":
    import bmm_any
    b, m, n, k = (int(x) for x in args[2:6])
    text = bmm_any.model_text(args[0], args[1], b, m, n, k, int(args[6]) if len(args) > 6 else None)
else:
    sys.exit("keys_models.py: unknown kind %s" % kind)
open(out, "w").write(text)
