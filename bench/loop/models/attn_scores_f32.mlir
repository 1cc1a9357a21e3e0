// An unseen model for the closed loop with a real model: attention scores
// S = (Q * K^T) * 0.125 for 16 heads, 512 tokens, head size 64, f32, with K
// given untransposed (linalg.transpose, as importers emit it).
#id3 = affine_map<(b, i, j) -> (b, i, j)>
func.func @attn_scores(%q: tensor<16x512x64xf32>, %k: tensor<16x512x64xf32>)
    -> tensor<16x512x512xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  %et = tensor.empty() : tensor<16x64x512xf32>
  %kt = linalg.transpose ins(%k : tensor<16x512x64xf32>)
                         outs(%et : tensor<16x64x512xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<16x512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x512x512xf32>)
      -> tensor<16x512x512xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<16x512x64xf32>, tensor<16x64x512xf32>)
                           outs(%acc : tensor<16x512x512xf32>) -> tensor<16x512x512xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<16x512x512xf32>) outs(%e : tensor<16x512x512xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %scale : f32
    linalg.yield %m : f32
  } -> tensor<16x512x512xf32>
  return %y : tensor<16x512x512xf32>
}
