// A transformer MLP block in bf16 (GPT-2 small widths, 4096 tokens):
//   h = gelu_tanh(x W1 + b1);  y = x + (h W2 + b2)
// Matmuls accumulate in f32; elementwise math runs in f32 and rounds to bf16.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @mlp_block(%x: tensor<4096x768xbf16>,
                     %w1: tensor<768x3072xbf16>, %b1: tensor<3072xbf16>,
                     %w2: tensor<3072x768xbf16>, %b2: tensor<768xbf16>)
    -> tensor<4096x768xbf16> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4096x3072xf32>
  %acc1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4096x3072xf32>)
      -> tensor<4096x3072xf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<4096x768xbf16>, tensor<768x3072xbf16>)
                       outs(%acc1 : tensor<4096x3072xf32>) -> tensor<4096x3072xf32>
  %eh = tensor.empty() : tensor<4096x3072xbf16>
  // bias + GELU (tanh approximation)
  %h = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm1, %b1 : tensor<4096x3072xf32>, tensor<3072xbf16>)
      outs(%eh : tensor<4096x3072xbf16>) {
  ^bb0(%v: f32, %b: bf16, %out: bf16):
    %bf = arith.extf %b : bf16 to f32
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
  } -> tensor<4096x3072xbf16>
  %e2 = tensor.empty() : tensor<4096x768xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4096x768xf32>)
      -> tensor<4096x768xf32>
  %mm2 = linalg.matmul ins(%h, %w2 : tensor<4096x3072xbf16>, tensor<3072x768xbf16>)
                       outs(%acc2 : tensor<4096x768xf32>) -> tensor<4096x768xf32>
  %ey = tensor.empty() : tensor<4096x768xbf16>
  // bias + residual
  %y = linalg.generic {indexing_maps = [#id, #row, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %b2, %x : tensor<4096x768xf32>, tensor<768xbf16>, tensor<4096x768xbf16>)
      outs(%ey : tensor<4096x768xbf16>) {
  ^bb0(%v: f32, %b: bf16, %r: bf16, %out: bf16):
    %bf = arith.extf %b : bf16 to f32
    %rf = arith.extf %r : bf16 to f32
    %s = arith.addf %v, %bf : f32
    %t = arith.addf %s, %rf : f32
    %tb = arith.truncf %t : f32 to bf16
    linalg.yield %tb : bf16
  } -> tensor<4096x768xbf16>
  return %y : tensor<4096x768xbf16>
}
