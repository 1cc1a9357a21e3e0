// Batched GEMM, plain (linalg.batch_matmul [B,M,K] x [B,K,N]): attention's
// P V at B = 32 (batch 4 x 8 heads), T = 512, head size 64:
//   C[b] = P[b] @ V[b], P: 32x512x512, V: 32x512x64 -> 32x512x64, f32.
// One contraction subgraph (M = K = T: the P V size pattern).
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_nn(%a: tensor<32x512x512xf32>, %b: tensor<32x512x64xf32>) -> tensor<32x512x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x512x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<32x512x64xf32>) -> tensor<32x512x64xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<32x512x512xf32>, tensor<32x512x64xf32>) outs(%acc : tensor<32x512x64xf32>) -> tensor<32x512x64xf32>
  return %r : tensor<32x512x64xf32>
}
