// Attention scores with the scale epilogue: Q K^T (transpose + batch_matmul)
// times 1/sqrt(64) = 0.125 in a linalg.generic:
//   S[b] = (Q[b] @ K[b]^T) * 0.125, Q, K: 32x512x64 -> 32x512x512, f32.
// The scale's value is in the pattern key: d = 64, 96, 128 have templates.
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_nt(%a: tensor<32x512x64xf32>, %b: tensor<32x512x64xf32>) -> tensor<32x512x512xf32> {
  %zero = arith.constant 0.0 : f32
  %bt0 = tensor.empty() : tensor<32x64x512xf32>
  %bt = linalg.transpose ins(%b : tensor<32x512x64xf32>) outs(%bt0 : tensor<32x64x512xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<32x512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<32x512x512xf32>) -> tensor<32x512x512xf32>
  %r = linalg.batch_matmul ins(%a, %bt : tensor<32x512x64xf32>, tensor<32x64x512xf32>) outs(%acc : tensor<32x512x512xf32>) -> tensor<32x512x512xf32>
  %s = arith.constant 1.250000e-01 : f32
  %y = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<32x512x512xf32>) outs(%e : tensor<32x512x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<32x512x512xf32>
  return %y : tensor<32x512x512xf32>
}
