// SwiGLU gate of a Llama-style FFN in bf16 (8192 tokens, hidden 4096,
// intermediate 14336):
//   y = silu(x Wg) * (x Wu),  silu(g) = g / (1 + exp(-g))
// x: 8192x4096xbf16, Wg, Wu: 4096x14336xbf16 -> y: 8192x14336xbf16.
// Both projections accumulate in f32; the gate math runs in f32 and rounds
// to bf16.
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<8192x4096xbf16>, %wg: tensor<4096x14336xbf16>,
                  %wu: tensor<4096x14336xbf16>) -> tensor<8192x14336xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8192x14336xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8192x14336xf32>)
      -> tensor<8192x14336xf32>
  %gate = linalg.matmul ins(%x, %wg : tensor<8192x4096xbf16>, tensor<4096x14336xbf16>)
                        outs(%acc : tensor<8192x14336xf32>) -> tensor<8192x14336xf32>
  %up = linalg.matmul ins(%x, %wu : tensor<8192x4096xbf16>, tensor<4096x14336xbf16>)
                      outs(%acc : tensor<8192x14336xf32>) -> tensor<8192x14336xf32>
  %ey = tensor.empty() : tensor<8192x14336xbf16>
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<8192x14336xf32>, tensor<8192x14336xf32>)
      outs(%ey : tensor<8192x14336xbf16>) {
  ^bb0(%g: f32, %u: f32, %out: bf16):
    %one = arith.constant 1.0 : f32
    %ng = arith.negf %g : f32
    %ex = math.exp %ng : f32
    %den = arith.addf %ex, %one : f32
    %silu = arith.divf %g, %den : f32
    %p = arith.mulf %silu, %u : f32
    %pb = arith.truncf %p : f32 to bf16
    linalg.yield %pb : bf16
  } -> tensor<8192x14336xbf16>
  return %y : tensor<8192x14336xbf16>
}
