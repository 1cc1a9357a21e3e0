// Row softmax in bf16 (16384 rows of 8192 logits), decomposed into
// reduce-max, exp(x - max), reduce-sum and divide:
//   y[i, j] = exp(x[i, j] - max_j x[i, :]) / sum_j exp(x[i, j] - max_j x[i, :])
// x: 16384x8192xbf16 -> y: 16384x8192xbf16.
// Max, exp and sum run in f32 (the exponentials stay f32); the quotient
// rounds to bf16.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @softmax(%x: tensor<16384x8192xbf16>) -> tensor<16384x8192xbf16> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<16384xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  %max = linalg.reduce ins(%x : tensor<16384x8192xbf16>)
                       outs(%minit : tensor<16384xf32>) dimensions = [1]
    (%in: bf16, %a: f32) {
      %f = arith.extf %in : bf16 to f32
      %m = arith.maximumf %f, %a : f32
      linalg.yield %m : f32
    }
  %ee = tensor.empty() : tensor<16384x8192xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<16384x8192xbf16>, tensor<16384xf32>)
      outs(%ee : tensor<16384x8192xf32>) {
  ^bb0(%v: bf16, %m: f32, %out: f32):
    %f = arith.extf %v : bf16 to f32
    %d = arith.subf %f, %m : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<16384x8192xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  %sum = linalg.reduce ins(%e : tensor<16384x8192xf32>)
                       outs(%sinit : tensor<16384xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %ey = tensor.empty() : tensor<16384x8192xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%e, %sum : tensor<16384x8192xf32>, tensor<16384xf32>)
      outs(%ey : tensor<16384x8192xbf16>) {
  ^bb0(%v: f32, %s: f32, %out: bf16):
    %q = arith.divf %v, %s : f32
    %qb = arith.truncf %q : f32 to bf16
    linalg.yield %qb : bf16
  } -> tensor<16384x8192xbf16>
  return %y : tensor<16384x8192xbf16>
}
