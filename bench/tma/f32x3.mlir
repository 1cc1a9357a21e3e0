// Test subgraphs for the exact f32 (3xTF32) wgmma GEMMs (bench/tma/f32x3-device.sh):
// the suite's GEMM+ReLU body (examples/gemm_epilogue.mlir) at odd sizes, W [K, N];
// and nn.Linear's x @ W^T + b (W [N, K], the importer's transpose + matmul +
// bias form, as in examples/kernelbench_l3_p44) at P44's fc size and odd sizes.
// Odd: M = 300 (not a multiple of the 128-row tile), N = 520, K = 264
// (multiples of 8, not of the 128-column tile or the 32-wide k-tile).
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @relu_odd(%x: tensor<300x264xf32>, %w: tensor<264x520xf32>) -> tensor<300x520xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %two = arith.constant 2.0 : f32
  %empty = tensor.empty() : tensor<300x520xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<300x520xf32>) -> tensor<300x520xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<300x264xf32>, tensor<264x520xf32>)
                      outs(%acc : tensor<300x520xf32>) -> tensor<300x520xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<300x520xf32>) outs(%empty : tensor<300x520xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = arith.subf %v, %half : f32
    %m = arith.mulf %s, %two : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  } -> tensor<300x520xf32>
  return %y : tensor<300x520xf32>
}
func.func @linear_odd(%x: tensor<300x264xf32>, %w: tensor<520x264xf32>, %b: tensor<520xf32>) -> tensor<300x520xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<264x520xf32>
  %wt = linalg.transpose ins(%w : tensor<520x264xf32>) outs(%et : tensor<264x520xf32>) permutation = [1, 0]
  %empty = tensor.empty() : tensor<300x520xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<300x520xf32>) -> tensor<300x520xf32>
  %mm = linalg.matmul ins(%x, %wt : tensor<300x264xf32>, tensor<264x520xf32>)
                      outs(%acc : tensor<300x520xf32>) -> tensor<300x520xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<300x520xf32>, tensor<520xf32>) outs(%empty : tensor<300x520xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %t = arith.addf %v, %bb : f32
    linalg.yield %t : f32
  } -> tensor<300x520xf32>
  return %y : tensor<300x520xf32>
}
func.func @linear_fc(%x: tensor<16384x768xf32>, %w: tensor<3072x768xf32>, %b: tensor<3072xf32>) -> tensor<16384x3072xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<768x3072xf32>
  %wt = linalg.transpose ins(%w : tensor<3072x768xf32>) outs(%et : tensor<768x3072xf32>) permutation = [1, 0]
  %empty = tensor.empty() : tensor<16384x3072xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<16384x3072xf32>) -> tensor<16384x3072xf32>
  %mm = linalg.matmul ins(%x, %wt : tensor<16384x768xf32>, tensor<768x3072xf32>)
                      outs(%acc : tensor<16384x3072xf32>) -> tensor<16384x3072xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<16384x3072xf32>, tensor<3072xf32>) outs(%empty : tensor<16384x3072xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %t = arith.addf %v, %bb : f32
    linalg.yield %t : f32
  } -> tensor<16384x3072xf32>
  return %y : tensor<16384x3072xf32>
}
