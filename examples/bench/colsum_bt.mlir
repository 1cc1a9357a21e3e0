// Sum over the two leading dimensions of a rank-3 tensor in f32,
// `grad.sum((0, 1))` on [B, T, N] = [64, 256, 768] -> [N]: the bias
// gradient of a Linear applied to [B, T, N] activations (issue 15,
// leading-dimension reductions):
//   y[n] = sum_{b, t} x[b, t, n]
// x: 64x256x768xf32 -> y: 768xf32.
func.func @colsum_bt(%x: tensor<64x256x768xf32>) -> tensor<768xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d2)>],
                       iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<64x256x768xf32>) outs(%acc : tensor<768xf32>) {
    ^bb0(%in: f32, %a: f32):
      %r = arith.addf %in, %a : f32
      linalg.yield %r : f32
  } -> tensor<768xf32>
  return %s : tensor<768xf32>
}
