// Column sum of squares in f32 (8192 rows of 3072), `(x * x).sum(0)` (a
// per-feature second moment, as a batch statistic or a gradient-norm
// accumulator takes it): the square is the reduction's elementwise
// prologue, inside its body (issue 15, leading-dimension reductions):
//   y[j] = sum_i x[i, j]^2
// x: 8192x3072xf32 -> y: 3072xf32.
func.func @colsumsq(%x: tensor<8192x3072xf32>) -> tensor<3072xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3072xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3072xf32>) -> tensor<3072xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8192x3072xf32>) outs(%acc : tensor<3072xf32>) {
    ^bb0(%in: f32, %a: f32):
      %sq = arith.mulf %in, %in : f32
      %r = arith.addf %sq, %a : f32
      linalg.yield %r : f32
  } -> tensor<3072xf32>
  return %s : tensor<3072xf32>
}
