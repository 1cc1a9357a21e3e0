// Rule 0: indexing maps may broadcast a size-1 dimension with the constant 0
// (as tosa-to-linalg emits); such generics are elementwise and fuse as an
// epilogue. A map reading a fixed non-zero index is a window: left alone.
// RUN: %llm_fuse_opt --llm-fuse-outline -verify-diagnostics %s | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#bias = affine_map<(i, j) -> (0, j)>
#col1 = affine_map<(i, j) -> (i, 1)>

// CHECK-LABEL: func.func @bias_epilogue(
// CHECK-NEXT:    call @[[F:sg_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK-NEXT:    return
func.func @bias_epilogue(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<1x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  // expected-remark @+1 {{outlined contraction subgraph}}
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<8x4xf32>, tensor<1x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @window(
// CHECK:         linalg.generic
// CHECK-NOT:     call
func.func @window(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  // expected-remark @+1 {{op not handled by the partitioner: left in place}}
  %r = linalg.generic {indexing_maps = [#col1, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// The outlined functions follow the public ones.
// CHECK:       func.func private @[[F]]({{.*}}) -> tensor<8x4xf32> attributes {llm_fuse.class = "contraction"
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK:         return
