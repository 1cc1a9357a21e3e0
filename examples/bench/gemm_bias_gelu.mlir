// GEMM + bias + GELU (tanh approximation) in bf16, the up-projection of a
// large MLP (16384 tokens, hidden 4096, width 16384) for the benchmark
// suite (issue 8):
//   y = bf16(gelu_tanh(x W + b)),  x W accumulated in f32
// x: 16384x4096xbf16, W: 4096x16384xbf16, b: 16384xbf16 -> y: 16384x16384xbf16.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @gemm_bias_gelu(%x: tensor<16384x4096xbf16>, %w: tensor<4096x16384xbf16>,
                          %b: tensor<16384xbf16>) -> tensor<16384x16384xbf16> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16384x16384xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16384x16384xf32>)
      -> tensor<16384x16384xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<16384x4096xbf16>, tensor<4096x16384xbf16>)
                      outs(%acc : tensor<16384x16384xf32>) -> tensor<16384x16384xf32>
  %eh = tensor.empty() : tensor<16384x16384xbf16>
  %h = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<16384x16384xf32>, tensor<16384xbf16>)
      outs(%eh : tensor<16384x16384xbf16>) {
  ^bb0(%v: f32, %bb: bf16, %out: bf16):
    %bf = arith.extf %bb : bf16 to f32
    %t = arith.addf %v, %bf : f32
    %c0 = arith.constant 0.5 : f32
    %c1 = arith.constant 1.0 : f32
    %c2 = arith.constant 0.7978845608028654 : f32
    %c3 = arith.constant 0.044715 : f32
    %t2 = arith.mulf %t, %t : f32
    %t3 = arith.mulf %t2, %t : f32
    %a = arith.mulf %t3, %c3 : f32
    %inner = arith.addf %t, %a : f32
    %scaled = arith.mulf %inner, %c2 : f32
    %th = math.tanh %scaled : f32
    %one_plus = arith.addf %th, %c1 : f32
    %half_t = arith.mulf %t, %c0 : f32
    %g = arith.mulf %half_t, %one_plus : f32
    %gb = arith.truncf %g : f32 to bf16
    linalg.yield %gb : bf16
  } -> tensor<16384x16384xbf16>
  return %h : tensor<16384x16384xbf16>
}
