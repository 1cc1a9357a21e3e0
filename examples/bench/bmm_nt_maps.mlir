// Batched GEMM with B transposed by the op's indexing_maps (MLIR 22's
// linalg.batch_matmul indexing_maps = [...]; linalg.batch_matmul_transpose_b
// is gone in MLIR 22):
//   S[b] = Q[b] @ K[b]^T, Q, K: 32x512x64 -> 32x512x512, f32.
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_ntm(%a: tensor<32x512x64xf32>, %b: tensor<32x512x64xf32>) -> tensor<32x512x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<32x512x512xf32>) -> tensor<32x512x512xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : tensor<32x512x64xf32>, tensor<32x512x64xf32>) outs(%acc : tensor<32x512x512xf32>) -> tensor<32x512x512xf32>
  return %r : tensor<32x512x512xf32>
}
