// No cycle may form. %e uses %m and %m2, and %m2 = %m x %b. Fusing %e into
// the first matmul's group would make that group both feed and consume the
// second matmul, so %e goes with the second matmul instead.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false' %s | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @no_cycle(
// CHECK-NEXT:    %[[M:.*]] = call @[[G0:sg_[0-9a-f]+]](%arg0, %arg1)
// CHECK-NEXT:    %[[E:.*]] = call @[[G1:sg_[0-9a-f]+]](%[[M]], %arg1)
// CHECK-NEXT:    return %[[E]]
// CHECK:       func.func private @[[G0]]
// CHECK-NOT:     linalg.generic
// CHECK:         linalg.matmul
// CHECK-NEXT:    return
// CHECK:       func.func private @[[G1]]
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
func.func @no_cycle(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>)
                     outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m2 = linalg.matmul ins(%m, %b : tensor<8x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %m2 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%empty : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %e : tensor<8x8xf32>
}
