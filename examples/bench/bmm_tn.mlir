// Batched GEMM with A transposed (A^T B): a linalg.transpose [0, 2, 1] of
// A [B,K,M] feeding linalg.batch_matmul:
//   C[b] = A[b]^T @ B[b], A: 8x1024x512, B: 8x1024x256 -> 8x512x256, f32.
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_tn(%a: tensor<8x1024x512xf32>, %b: tensor<8x1024x256xf32>) -> tensor<8x512x256xf32> {
  %zero = arith.constant 0.0 : f32
  %at0 = tensor.empty() : tensor<8x512x1024xf32>
  %at = linalg.transpose ins(%a : tensor<8x1024x512xf32>) outs(%at0 : tensor<8x512x1024xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<8x512x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x512x256xf32>) -> tensor<8x512x256xf32>
  %r = linalg.batch_matmul ins(%at, %b : tensor<8x512x1024xf32>, tensor<8x1024x256xf32>) outs(%acc : tensor<8x512x256xf32>) -> tensor<8x512x256xf32>
  return %r : tensor<8x512x256xf32>
}
