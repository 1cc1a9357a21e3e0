// Column sum in f32 (8192 rows of 3072): a Linear's bias gradient, the sum
// of the output gradient over the batch rows, as torch-mlir lowers
// `grad.sum(0)` (aten.sum.dim_IntList, dims [0]): one linalg.generic with
// iterator types [reduction, parallel] (issue 15, leading-dimension
// reductions):
//   y[j] = sum_i x[i, j]
// x: 8192x3072xf32 -> y: 3072xf32.
func.func @colsum(%x: tensor<8192x3072xf32>) -> tensor<3072xf32> {
  %zero = arith.constant 0.0 : f32
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
  return %s : tensor<3072xf32>
}
