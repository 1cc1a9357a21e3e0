// Q K^T in bf16 (the f32 model's types rewritten, as bench/table/heldout.py
// does): the batch_matmul accumulates in bf16 in the IR; the verifier
// judges it against the opmath reference (docs/verification.md).
//   S[b] = Q[b] @ K[b]^T, Q, K: 32x512x64 -> 32x512x512, bf16.
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_nt(%a: tensor<32x512x64xbf16>, %b: tensor<32x512x64xbf16>) -> tensor<32x512x512xbf16> {
  %zero = arith.constant 0.0 : bf16
  %bt0 = tensor.empty() : tensor<32x64x512xbf16>
  %bt = linalg.transpose ins(%b : tensor<32x512x64xbf16>) outs(%bt0 : tensor<32x64x512xbf16>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<32x512x512xbf16>
  %acc = linalg.fill ins(%zero : bf16) outs(%e : tensor<32x512x512xbf16>) -> tensor<32x512x512xbf16>
  %r = linalg.batch_matmul ins(%a, %bt : tensor<32x512x64xbf16>, tensor<32x64x512xbf16>) outs(%acc : tensor<32x512x512xbf16>) -> tensor<32x512x512xbf16>
  return %r : tensor<32x512x512xbf16>
}
