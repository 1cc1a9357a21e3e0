// Batched GEMM with B transposed (Q K^T): a linalg.transpose [0, 2, 1] of
// K [B,T,d] feeding linalg.batch_matmul, as importers write k.transpose(-2, -1):
//   S[b] = Q[b] @ K[b]^T, Q, K: 32x512x64 -> 32x512x512, f32.
// One contraction subgraph (M = N = T: the scores' size pattern).
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_nt(%a: tensor<32x512x64xf32>, %b: tensor<32x512x64xf32>) -> tensor<32x512x512xf32> {
  %zero = arith.constant 0.0 : f32
  %bt0 = tensor.empty() : tensor<32x64x512xf32>
  %bt = linalg.transpose ins(%b : tensor<32x512x64xf32>) outs(%bt0 : tensor<32x64x512xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<32x512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<32x512x512xf32>) -> tensor<32x512x512xf32>
  %r = linalg.batch_matmul ins(%a, %bt : tensor<32x512x64xf32>, tensor<32x64x512xf32>) outs(%acc : tensor<32x512x512xf32>) -> tensor<32x512x512xf32>
  return %r : tensor<32x512x512xf32>
}
