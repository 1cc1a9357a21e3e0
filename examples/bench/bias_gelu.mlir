// Bias + GELU (tanh approximation) in bf16 (16384 tokens, width 8192),
// the epilogue of an MLP up-projection on its own (issue 8):
//   v = f32(x) + f32(b),  y = bf16(0.5 v (1 + tanh(0.7978845608 (v + 0.044715 v^3))))
// x: 16384x8192xbf16, b: 8192xbf16 -> y: 16384x8192xbf16.
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @bias_gelu(%x: tensor<16384x8192xbf16>, %b: tensor<8192xbf16>)
    -> tensor<16384x8192xbf16> {
  %ey = tensor.empty() : tensor<16384x8192xbf16>
  %y = linalg.generic {indexing_maps = [#id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<16384x8192xbf16>, tensor<8192xbf16>)
      outs(%ey : tensor<16384x8192xbf16>) {
  ^bb0(%a: bf16, %c: bf16, %out: bf16):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k0 = arith.constant 0.797884583 : f32
    %k1 = arith.constant 4.471500e-02 : f32
    %af = arith.extf %a : bf16 to f32
    %cf = arith.extf %c : bf16 to f32
    %v = arith.addf %af, %cf : f32
    %v2 = arith.mulf %v, %v : f32
    %v3 = arith.mulf %v2, %v : f32
    %t0 = arith.mulf %v3, %k1 : f32
    %t1 = arith.addf %v, %t0 : f32
    %t2 = arith.mulf %t1, %k0 : f32
    %th = math.tanh %t2 : f32
    %t3 = arith.addf %th, %one : f32
    %t4 = arith.mulf %v, %half : f32
    %g = arith.mulf %t4, %t3 : f32
    %gb = arith.truncf %g : f32 to bf16
    linalg.yield %gb : bf16
  } -> tensor<16384x8192xbf16>
  return %y : tensor<16384x8192xbf16>
}
