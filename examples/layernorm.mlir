// LayerNorm in bf16 (16384 tokens, hidden 4096), two-pass mean/variance:
//   mu = mean(x), var = mean((x - mu)^2), y = (x - mu) * rsqrt(var + 1e-5) * gamma + beta
// x: 16384x4096xbf16, gamma, beta: 4096xbf16 -> y: 16384x4096xbf16.
// Reductions accumulate in f32; the normalisation runs in f32 and rounds to bf16.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @layernorm(%x: tensor<16384x4096xbf16>, %gamma: tensor<4096xbf16>,
                     %beta: tensor<4096xbf16>) -> tensor<16384x4096xbf16> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<16384xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  // row sums
  %sum = linalg.reduce ins(%x : tensor<16384x4096xbf16>)
                       outs(%acc : tensor<16384xf32>) dimensions = [1]
    (%in: bf16, %a: f32) {
      %f = arith.extf %in : bf16 to f32
      %s = arith.addf %f, %a : f32
      linalg.yield %s : f32
    }
  // mean
  %mu = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sum : tensor<16384xf32>) outs(%es : tensor<16384xf32>) {
  ^bb0(%s: f32, %out: f32):
    %n = arith.constant 4096.0 : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<16384xf32>
  // sum of squared deviations
  %sq = linalg.generic {indexing_maps = [#id, #row, #row],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x, %mu : tensor<16384x4096xbf16>, tensor<16384xf32>)
      outs(%acc : tensor<16384xf32>) {
  ^bb0(%v: bf16, %m: f32, %a: f32):
    %f = arith.extf %v : bf16 to f32
    %d = arith.subf %f, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %d2, %a : f32
    linalg.yield %s : f32
  } -> tensor<16384xf32>
  %ey = tensor.empty() : tensor<16384x4096xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %mu, %sq, %gamma, %beta
          : tensor<16384x4096xbf16>, tensor<16384xf32>, tensor<16384xf32>,
            tensor<4096xbf16>, tensor<4096xbf16>)
      outs(%ey : tensor<16384x4096xbf16>) {
  ^bb0(%v: bf16, %m: f32, %s: f32, %g: bf16, %b: bf16, %out: bf16):
    %n = arith.constant 4096.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %f = arith.extf %v : bf16 to f32
    %d = arith.subf %f, %m : f32
    %nrm = arith.mulf %d, %r : f32
    %gf = arith.extf %g : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %sc = arith.mulf %nrm, %gf : f32
    %o = arith.addf %sc, %bf : f32
    %ob = arith.truncf %o : f32 to bf16
    linalg.yield %ob : bf16
  } -> tensor<16384x4096xbf16>
  return %y : tensor<16384x4096xbf16>
}
