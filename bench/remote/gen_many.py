#!/usr/bin/env python3
"""gen_many.py N: a module of N functions, each a distinct elementwise
subgraph (bias add, then GELU-style tanh scaling) at its own size, for the
shared-cache round-trip benchmark. Prints MLIR to stdout."""
import sys

n = int(sys.argv[1])
print("#id = affine_map<(i, j) -> (i, j)>")
print("#row = affine_map<(i, j) -> (j)>")
for k in range(n):
    r, c = 64 + 8 * k, 256
    t = "tensor<%dx%dxf32>" % (r, c)
    print("""func.func @f%d(%%x: %s, %%b: tensor<%dxf32>) -> %s {
  %%e = tensor.empty() : %s
  %%y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%%x, %%b : %s, tensor<%dxf32>) outs(%%e : %s) {
  ^bb0(%%a: f32, %%bb: f32, %%o: f32):
    %%s = arith.addf %%a, %%bb : f32
    %%h = math.tanh %%s : f32
    %%z = arith.mulf %%s, %%h : f32
    linalg.yield %%z : f32
  } -> %s
  %%e2 = tensor.empty() : %s
  %%w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%%y : %s) outs(%%e2 : %s) {
  ^bb0(%%a: f32, %%o: f32):
    %%q = arith.mulf %%a, %%a : f32
    linalg.yield %%q : f32
  } -> %s
  return %%w : %s
}""" % (k, t, c, t, t, t, c, t, t, t, t, t, t, t))
