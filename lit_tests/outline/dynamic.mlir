// Dynamic shapes are left alone, with a remark saying so; static
// neighbours are still outlined.
// RUN: %llm_fuse_opt --llm-fuse-outline -verify-diagnostics %s | FileCheck %s

#id = affine_map<(i) -> (i)>
// CHECK-LABEL: func.func @dyn(
// CHECK:         linalg.generic
// CHECK-NOT:     call @sg_
// CHECK:         return
func.func @dyn(%x: tensor<?xf32>, %e: tensor<?xf32>) -> tensor<?xf32> {
  // expected-remark @below {{dynamic shape: not fused (only static shapes are partitioned for now)}}
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// An op the partitioner does not know stays where it is; the groups on
// either side are outlined separately.
// CHECK-LABEL: func.func @unhandled(
// CHECK:         call @sg_
// CHECK-NEXT:    tensor.expand_shape
// CHECK-NEXT:    call @sg_
func.func @unhandled(%x: tensor<64xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<64xf32>
  // expected-remark @below {{outlined elementwise subgraph}}
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  // expected-remark @below {{op not handled by the partitioner: left in place}}
  %r = tensor.expand_shape %y [[0, 1]] output_shape [8, 8] : tensor<64xf32> into tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  // expected-remark @below {{outlined elementwise subgraph}}
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}
