// A producer with users outside the group is recomputed inside it only when
// cheap; an expensive one is left out (it becomes its own group). Here the
// other user (%n) comes before the reduction; when all other users come
// after it, the producer is one more result of the reduction group instead
// (row-input-result.mlir).
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false' %s | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
// Cheap (one multiply): recomputed in the reduction group, and kept for the
// other user, so it is outlined on its own too (with %n).
// CHECK-LABEL: func.func @cheap(
// CHECK-NEXT:    %[[SQ:.*]] = call @[[EW0:sg_[0-9a-f]+]](%arg0)
// CHECK-NEXT:    %[[SUM:.*]] = call @[[RED:sg_[0-9a-f]+]](%arg0)
// CHECK-NEXT:    return %[[SQ]], %[[SUM]]
func.func @cheap(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  %e1 = tensor.empty() : tensor<16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.reduce ins(%sq : tensor<16x32xf32>) outs(%init : tensor<16xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %n, %sum : tensor<16x32xf32>, tensor<16xf32>
}

// Expensive (tanh, exp, several ops): not recomputed; it is a group of its
// own (with %n) and the reduction reads its result.
// CHECK-LABEL: func.func @expensive(
// CHECK-NEXT:    %[[P:.*]]:2 = call @[[EW:sg_[0-9a-f]+]](%arg0)
// CHECK-NEXT:    %[[R:.*]] = call @[[RED2:sg_[0-9a-f]+]](%[[P]]#0)
// CHECK-NEXT:    return %[[P]]#1, %[[R]]
// CHECK:       func.func private @[[RED]]
// CHECK-SAME:    llm_fuse.class = "reduction"
// CHECK:         arith.mulf
// CHECK:         linalg.reduce
// CHECK:       func.func private @[[EW0]]
// CHECK-SAME:    llm_fuse.class = "elementwise"
// CHECK:       func.func private @[[RED2]]
// CHECK-SAME:    llm_fuse.class = "reduction"
// CHECK-NOT:     math.tanh
// CHECK:         return
// CHECK:       func.func private @[[EW]]
// CHECK-SAME:    llm_fuse.class = "elementwise"
// CHECK:         math.tanh
func.func @expensive(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    %u = math.exp %t : f32
    %v = arith.mulf %u, %a : f32
    %w = arith.addf %v, %t : f32
    linalg.yield %w : f32
  } -> tensor<16x32xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  %e1 = tensor.empty() : tensor<16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.reduce ins(%p : tensor<16x32xf32>) outs(%init : tensor<16xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %n, %sum : tensor<16x32xf32>, tensor<16xf32>
}
