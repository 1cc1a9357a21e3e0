// Legality: a group holds at most max-group-ops ops (free ops such as
// tensor.empty and constants not counted); what does not fit starts the
// next group.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.default.json' %s -o /dev/null
// RUN: %python %lf_src/scripts/outline_summary.py %t.default.json | FileCheck %s --check-prefix=DEFAULT
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false max-group-ops=2 report=%t.capped.json' %s -o /dev/null
// RUN: %python %lf_src/scripts/outline_summary.py %t.capped.json | FileCheck %s --check-prefix=CAPPED
// RUN: not %llm_fuse_opt --llm-fuse-outline='max-group-ops=0' %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO

// DEFAULT: chain: elementwise [negf exp abs sqrt tanh] in=1 out=1
// DEFAULT-NEXT: groups: 1
// CAPPED: chain: elementwise [negf exp] in=1 out=1
// CAPPED-NEXT: chain: elementwise [abs sqrt] in=1 out=1
// CAPPED-NEXT: chain: elementwise [tanh] in=1 out=1
// CAPPED-NEXT: groups: 3
// ZERO: max-group-ops
func.func @chain(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %a = linalg.negf ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %b = linalg.exp ins(%a : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = linalg.abs ins(%b : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %d = linalg.sqrt ins(%c : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %f = linalg.tanh ins(%d : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %f : tensor<8x16xf32>
}
