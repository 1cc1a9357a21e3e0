// RMSNorm in bf16 (Llama-style; 16384 tokens, hidden 4096):
//   y = x * rsqrt(mean(x^2 over the hidden dim) + 1e-6) * w
// x: 16384x4096xbf16, w: 4096xbf16 -> y: 16384x4096xbf16.
// The sum of squares accumulates in f32; the normalisation runs in f32 and
// rounds to bf16.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @rmsnorm(%x: tensor<16384x4096xbf16>, %w: tensor<4096xbf16>)
    -> tensor<16384x4096xbf16> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<16384xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  // sum of squares per row
  %ss = linalg.reduce ins(%x : tensor<16384x4096xbf16>)
                      outs(%acc : tensor<16384xf32>) dimensions = [1]
    (%in: bf16, %a: f32) {
      %f = arith.extf %in : bf16 to f32
      %sq = arith.mulf %f, %f : f32
      %s = arith.addf %sq, %a : f32
      linalg.yield %s : f32
    }
  %ey = tensor.empty() : tensor<16384x4096xbf16>
  // y = x * rsqrt(ss / 4096 + eps) * w
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %w : tensor<16384x4096xbf16>, tensor<16384xf32>, tensor<4096xbf16>)
      outs(%ey : tensor<16384x4096xbf16>) {
  ^bb0(%v: bf16, %s: f32, %g: bf16, %out: bf16):
    %n = arith.constant 4096.0 : f32
    %eps = arith.constant 1.0e-06 : f32
    %mean = arith.divf %s, %n : f32
    %me = arith.addf %mean, %eps : f32
    %r = math.rsqrt %me : f32
    %vf = arith.extf %v : bf16 to f32
    %gf = arith.extf %g : bf16 to f32
    %t = arith.mulf %vf, %r : f32
    %u = arith.mulf %t, %gf : f32
    %ub = arith.truncf %u : f32 to bf16
    linalg.yield %ub : bf16
  } -> tensor<16384x4096xbf16>
  return %y : tensor<16384x4096xbf16>
}
