// Column mean in f32 (8192 rows of 3072), as torch-mlir lowers
// `x.mean(0)`: the sum over the rows (aten.sum.dim_IntList) followed by an
// elementwise division by the row count (aten.div.Scalar); the two
// generics are one subgraph (issue 15, leading-dimension reductions):
//   y[j] = (sum_i x[i, j]) / 8192
// x: 8192x3072xf32 -> y: 3072xf32.
func.func @colmean(%x: tensor<8192x3072xf32>) -> tensor<3072xf32> {
  %zero = arith.constant 0.0 : f32
  %rows = arith.constant 8192.0 : f32
  %e = tensor.empty() : tensor<3072xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3072xf32>) -> tensor<3072xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8192x3072xf32>) outs(%acc : tensor<3072xf32>) {
    ^bb0(%in: f32, %a: f32):
      %r = arith.addf %in, %a : f32
      linalg.yield %r : f32
  } -> tensor<3072xf32>
  %e2 = tensor.empty() : tensor<3072xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%s : tensor<3072xf32>) outs(%e2 : tensor<3072xf32>) {
    ^bb0(%in: f32, %o: f32):
      %d = arith.divf %in, %rows : f32
      linalg.yield %d : f32
  } -> tensor<3072xf32>
  return %m : tensor<3072xf32>
}
