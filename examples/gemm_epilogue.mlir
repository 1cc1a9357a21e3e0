// KernelBench-style GEMM with an elementwise epilogue, f32 with exact f32
// semantics: Y = relu((X * W - 0.5) * 2) for X: 1024x8192, W: 8192x8192.
// The partitioner should see one contraction root with a fused epilogue.
#id = affine_map<(i, j) -> (i, j)>
func.func @gemm_sub_mul_relu(%x: tensor<1024x8192xf32>,
                             %w: tensor<8192x8192xf32>) -> tensor<1024x8192xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %two = arith.constant 2.0 : f32
  %empty = tensor.empty() : tensor<1024x8192xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<1024x8192xf32>)
      -> tensor<1024x8192xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1024x8192xf32>, tensor<8192x8192xf32>)
                      outs(%acc : tensor<1024x8192xf32>) -> tensor<1024x8192xf32>
  %y = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<1024x8192xf32>) outs(%empty : tensor<1024x8192xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = arith.subf %v, %half : f32
    %m = arith.mulf %s, %two : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1024x8192xf32>
  return %y : tensor<1024x8192xf32>
}
