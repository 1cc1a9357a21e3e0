// Residual add + RMSNorm in bf16 (16384 tokens, hidden 4096), as in a
// pre-norm transformer layer: the sum is the next residual and is returned
// too (issue 8):
//   h = bf16(f32(x) + f32(r)),  y = bf16(f32(h) * rsqrt(mean(f32(h)^2) + 1e-6) * f32(w))
// x, r: 16384x4096xbf16, w: 4096xbf16 -> y, h: 16384x4096xbf16.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @add_rmsnorm(%x: tensor<16384x4096xbf16>, %r: tensor<16384x4096xbf16>,
                       %w: tensor<4096xbf16>)
    -> (tensor<16384x4096xbf16>, tensor<16384x4096xbf16>) {
  %zero = arith.constant 0.0 : f32
  %eh = tensor.empty() : tensor<16384x4096xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<16384x4096xbf16>, tensor<16384x4096xbf16>)
      outs(%eh : tensor<16384x4096xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %out: bf16):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %s = arith.addf %af, %bf : f32
    %sb = arith.truncf %s : f32 to bf16
    linalg.yield %sb : bf16
  } -> tensor<16384x4096xbf16>
  %es = tensor.empty() : tensor<16384xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  %ss = linalg.reduce ins(%h : tensor<16384x4096xbf16>)
                      outs(%acc : tensor<16384xf32>) dimensions = [1]
    (%in: bf16, %a: f32) {
      %f = arith.extf %in : bf16 to f32
      %sq = arith.mulf %f, %f : f32
      %s = arith.addf %sq, %a : f32
      linalg.yield %s : f32
    }
  %ey = tensor.empty() : tensor<16384x4096xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h, %ss, %w : tensor<16384x4096xbf16>, tensor<16384xf32>, tensor<4096xbf16>)
      outs(%ey : tensor<16384x4096xbf16>) {
  ^bb0(%v: bf16, %s: f32, %g: bf16, %out: bf16):
    %n = arith.constant 4096.0 : f32
    %eps = arith.constant 1.0e-06 : f32
    %mean = arith.divf %s, %n : f32
    %me = arith.addf %mean, %eps : f32
    %rs = math.rsqrt %me : f32
    %vf = arith.extf %v : bf16 to f32
    %gf = arith.extf %g : bf16 to f32
    %t = arith.mulf %vf, %rs : f32
    %u = arith.mulf %t, %gf : f32
    %ub = arith.truncf %u : f32 to bf16
    linalg.yield %ub : bf16
  } -> tensor<16384x4096xbf16>
  return %y, %h : tensor<16384x4096xbf16>, tensor<16384x4096xbf16>
}
