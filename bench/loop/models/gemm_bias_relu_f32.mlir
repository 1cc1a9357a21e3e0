// An unseen model for the closed loop with a real model (bench/loop/NOTES):
// Y = relu(X * W + b), f32, X 2000x1500, W 1500x1500, b 1500: sizes that are
// multiples of no usual tile.
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @gemm_bias_relu(%x: tensor<2000x1500xf32>, %w: tensor<1500x1500xf32>,
                          %b: tensor<1500xf32>) -> tensor<2000x1500xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2000x1500xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2000x1500xf32>)
      -> tensor<2000x1500xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2000x1500xf32>, tensor<1500x1500xf32>)
                      outs(%acc : tensor<2000x1500xf32>) -> tensor<2000x1500xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<2000x1500xf32>, tensor<1500xf32>)
      outs(%e : tensor<2000x1500xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2000x1500xf32>
  return %y : tensor<2000x1500xf32>
}
