// A small SwiGLU in f16 (the held-out models' form: f16 storage, both
// projections accumulate in f32, the gate math in f32, one rounding to
// f16 at the end): an f16 result, so its reference gets a wide plan
// (docs/verification.md, "The f16 overflow boundary").
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<61x128xf16>, %wg: tensor<128x96xf16>,
                  %wu: tensor<128x96xf16>) -> tensor<61x96xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<61x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<61x96xf32>)
      -> tensor<61x96xf32>
  %gate = linalg.matmul ins(%x, %wg : tensor<61x128xf16>, tensor<128x96xf16>)
                        outs(%acc : tensor<61x96xf32>) -> tensor<61x96xf32>
  %up = linalg.matmul ins(%x, %wu : tensor<61x128xf16>, tensor<128x96xf16>)
                      outs(%acc : tensor<61x96xf32>) -> tensor<61x96xf32>
  %ey = tensor.empty() : tensor<61x96xf16>
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<61x96xf32>, tensor<61x96xf32>)
      outs(%ey : tensor<61x96xf16>) {
  ^bb0(%g: f32, %u: f32, %out: f16):
    %one = arith.constant 1.0 : f32
    %ng = arith.negf %g : f32
    %ex = math.exp %ng : f32
    %den = arith.addf %ex, %one : f32
    %silu = arith.divf %g, %den : f32
    %p = arith.mulf %silu, %u : f32
    %ph = arith.truncf %p : f32 to f16
    linalg.yield %ph : f16
  } -> tensor<61x96xf16>
  return %y : tensor<61x96xf16>
}
