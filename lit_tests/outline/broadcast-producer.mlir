// Rule 2: an elementwise producer over a smaller domain that broadcasts into
// the group (a bias cast to f32) is recomputed per element, so it fuses only
// when cheap; an expensive one stays a group of its own.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o /dev/null
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#bias = affine_map<(i, j) -> (0, j)>

// CHECK: cheap: contraction [generic fill matmul generic] in=3 out=1
func.func @cheap(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<1x4xbf16>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<1x4xf32>
  %bf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<1x4xbf16>) outs(%eb : tensor<1x4xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %f = arith.extf %x : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<1x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bf : tensor<8x4xf32>, tensor<1x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// CHECK-NEXT: expensive: contraction [fill matmul generic] in=3 out=1
// CHECK-NEXT: expensive: elementwise [generic] in=1 out=1
// CHECK-NEXT: groups: 3
func.func @expensive(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<1x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<1x4xf32>
  %bf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<1x4xf32>) outs(%eb : tensor<1x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    %u = math.exp %t : f32
    %v = math.sin %u : f32
    linalg.yield %v : f32
  } -> tensor<1x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bf : tensor<8x4xf32>, tensor<1x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
