// torch-mlir's att @ v with the head transposes (as in
// examples/importer/minigpt_torch_mlir.mlir, 12 heads, T = 512, d = 64):
// v [1,512,12,64] transposed to [1,12,512,64], collapsed, batch_matmul with
// att [1,12,512,512], expanded and transposed back to [1,512,12,64].
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_pv(%v: tensor<1x512x12x64xf32>, %att: tensor<1x12x512x512xf32>) -> tensor<1x512x12x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %vt0 = tensor.empty() : tensor<1x12x512x64xf32>
  %vt = linalg.transpose ins(%v : tensor<1x512x12x64xf32>) outs(%vt0 : tensor<1x12x512x64xf32>) permutation = [0, 2, 1, 3]
  %a3 = tensor.collapse_shape %att [[0, 1], [2], [3]] : tensor<1x12x512x512xf32> into tensor<12x512x512xf32>
  %v3 = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x12x512x64xf32> into tensor<12x512x64xf32>
  %e = tensor.empty() : tensor<12x512x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<12x512x64xf32>) -> tensor<12x512x64xf32>
  %r = linalg.batch_matmul ins(%a3, %v3 : tensor<12x512x512xf32>, tensor<12x512x64xf32>) outs(%acc : tensor<12x512x64xf32>) -> tensor<12x512x64xf32>
  %r4 = tensor.expand_shape %r [[0, 1], [2], [3]] output_shape [1, 12, 512, 64] : tensor<12x512x64xf32> into tensor<1x12x512x64xf32>
  %ye = tensor.empty() : tensor<1x512x12x64xf32>
  %y = linalg.transpose ins(%r4 : tensor<1x12x512x64xf32>) outs(%ye : tensor<1x512x12x64xf32>) permutation = [0, 2, 1, 3]
  return %y : tensor<1x512x12x64xf32>
}
