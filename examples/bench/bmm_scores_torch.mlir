// torch-mlir's attention scores (as in examples/importer/minigpt_torch_mlir.mlir,
// 12 heads, T = 512, d = 64): q [1,12,512,64] and k^T [1,12,64,512] collapsed
// to [12,..], linalg.batch_matmul, expanded to [1,12,512,512], scaled by 0.125
// and masked_fill(mask, -inf) with a [1,1,512,512] i1 mask; one subgraph.
// Written by kernels/table/bmm_any.py model_text (issue 15: batched GEMMs).
func.func @bmm_scores(%q: tensor<1x12x512x64xf32>, %kt: tensor<1x12x64x512xf32>, %mask: tensor<1x1x512x512xi1>) -> tensor<1x12x512x512xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = arith.constant 1.250000e-01 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x12x512x64xf32> into tensor<12x512x64xf32>
  %k3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x12x64x512xf32> into tensor<12x64x512xf32>
  %e = tensor.empty() : tensor<12x512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<12x512x512xf32>) -> tensor<12x512x512xf32>
  %r = linalg.batch_matmul ins(%q3, %k3 : tensor<12x512x64xf32>, tensor<12x64x512xf32>) outs(%acc : tensor<12x512x512xf32>) -> tensor<12x512x512xf32>
  %r4 = tensor.expand_shape %r [[0, 1], [2], [3]] output_shape [1, 12, 512, 512] : tensor<12x512x512xf32> into tensor<1x12x512x512xf32>
  %e4 = tensor.empty() : tensor<1x12x512x512xf32>
  %sc = linalg.generic {indexing_maps = [affine_map<(a, b, i, j) -> (a, b, i, j)>, affine_map<(a, b, i, j) -> (a, b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r4 : tensor<1x12x512x512xf32>) outs(%e4 : tensor<1x12x512x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<1x12x512x512xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(a, b, i, j) -> (a, b, i, j)>, affine_map<(a, b, i, j) -> (0, 0, i, j)>, affine_map<(a, b, i, j) -> (a, b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %mask : tensor<1x12x512x512xf32>, tensor<1x1x512x512xi1>) outs(%e4 : tensor<1x12x512x512xf32>) {
  ^bb0(%in: f32, %mk: i1, %out: f32):
    %v = arith.select %mk, %ninf, %in : f32
    linalg.yield %v : f32
  } -> tensor<1x12x512x512xf32>
  return %y : tensor<1x12x512x512xf32>
}
