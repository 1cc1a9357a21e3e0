// The suite's GEMM+ReLU body (examples/gemm_epilogue.mlir) at M = 300,
// N = K = 520 (N = K: the family's pattern): no dimension a multiple of the
// 3xTF32 kernel's 128 x 128 x 32 tiles.
#id = affine_map<(i, j) -> (i, j)>
func.func @relu_odd(%x: tensor<300x520xf32>, %w: tensor<520x520xf32>) -> tensor<300x520xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %two = arith.constant 2.0 : f32
  %empty = tensor.empty() : tensor<300x520xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<300x520xf32>) -> tensor<300x520xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<300x520xf32>, tensor<520x520xf32>)
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
