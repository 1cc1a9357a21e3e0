// Softmax written as reduce-max, exp(x - max), reduce-sum, divide: one
// reduction group (persistent-row fusion: both reductions read the same
// rows, the elementwise ops share the row domain).
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false' %s | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %[[R:.*]] = call @[[SG:sg_[0-9a-f]+]](%arg0)
// CHECK-NEXT:    return %[[R]]
// CHECK:       func.func private @[[SG]]
// CHECK-SAME:    llm_fuse.class = "reduction"
// CHECK-COUNT-2: linalg.reduce
// CHECK-NOT:   func.func private
func.func @softmax(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %max = linalg.reduce ins(%x : tensor<64x128xf32>) outs(%minit : tensor<64xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %e2 = tensor.empty() : tensor<64x128xf32>
  %ex = linalg.generic {indexing_maps = [#id, #r, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<64x128xf32>, tensor<64xf32>) outs(%e2 : tensor<64x128xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<64x128xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.reduce ins(%ex : tensor<64x128xf32>) outs(%sinit : tensor<64xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %y = linalg.generic {indexing_maps = [#id, #r, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<64x128xf32>, tensor<64xf32>) outs(%e2 : tensor<64x128xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = arith.divf %a, %s : f32
    linalg.yield %q : f32
  } -> tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}
