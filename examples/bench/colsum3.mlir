// Sum over the leading (batch) dimension of a rank-3 tensor in f32,
// `x.sum(0)` on [B, T, N] = [64, 256, 768] -> [T, N] (a gradient summed
// over the batch, e.g. of a learned positional embedding) (issue 15,
// leading-dimension reductions):
//   y[t, n] = sum_b x[b, t, n]
// x: 64x256x768xf32 -> y: 256x768xf32.
func.func @colsum3(%x: tensor<64x256x768xf32>) -> tensor<256x768xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x768xf32>) -> tensor<256x768xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d1, d2)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x : tensor<64x256x768xf32>) outs(%acc : tensor<256x768xf32>) {
    ^bb0(%in: f32, %a: f32):
      %r = arith.addf %in, %a : f32
      linalg.yield %r : f32
  } -> tensor<256x768xf32>
  return %s : tensor<256x768xf32>
}
