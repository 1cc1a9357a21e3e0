// Column max in f32 (8192 rows of 3072), `x.amax(0)` (from -inf; NaN
// propagates, arith.maximumf), one linalg.generic with iterator types
// [reduction, parallel] (issue 15, leading-dimension reductions):
//   y[j] = max_i x[i, j]
// x: 8192x3072xf32 -> y: 3072xf32.
func.func @colmax(%x: tensor<8192x3072xf32>) -> tensor<3072xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<3072xf32>
  %acc = linalg.fill ins(%ninf : f32) outs(%e : tensor<3072xf32>) -> tensor<3072xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8192x3072xf32>) outs(%acc : tensor<3072xf32>) {
    ^bb0(%in: f32, %a: f32):
      %r = arith.maximumf %in, %a : f32
      linalg.yield %r : f32
  } -> tensor<3072xf32>
  return %m : tensor<3072xf32>
}
