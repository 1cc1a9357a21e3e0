// The suite's GEMM + bias + GELU and SwiGLU subgraphs at M = 1000, N = 1032,
// K = 776 (lit_tests/table/gemm-tma.test): no size a multiple of the TMA
// kernels' tiles (BM 128, BN 64/256, BK 64), so the pattern table's TMA
// templates (kernels/table/gemm_any.py, *_0tma) instantiate with every size
// masked. Same bodies as examples/bench/gemm_bias_gelu.mlir and
// examples/swiglu.mlir (bench/tma/gemm-odd.mlir at another K: there M = K,
// another pattern key).
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @gemm_bias_gelu_k776(%x: tensor<1000x776xbf16>, %w: tensor<776x1032xbf16>,
                          %b: tensor<1032xbf16>) -> tensor<1000x1032xbf16> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1000x1032xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1000x1032xf32>)
      -> tensor<1000x1032xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1000x776xbf16>, tensor<776x1032xbf16>)
                      outs(%acc : tensor<1000x1032xf32>) -> tensor<1000x1032xf32>
  %eh = tensor.empty() : tensor<1000x1032xbf16>
  %h = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<1000x1032xf32>, tensor<1032xbf16>)
      outs(%eh : tensor<1000x1032xbf16>) {
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
  } -> tensor<1000x1032xbf16>
  return %h : tensor<1000x1032xbf16>
}

func.func @swiglu_k776(%x: tensor<1000x776xbf16>, %wg: tensor<776x1032xbf16>,
                  %wu: tensor<776x1032xbf16>) -> tensor<1000x1032xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1000x1032xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1000x1032xf32>)
      -> tensor<1000x1032xf32>
  %gate = linalg.matmul ins(%x, %wg : tensor<1000x776xbf16>, tensor<776x1032xbf16>)
                        outs(%acc : tensor<1000x1032xf32>) -> tensor<1000x1032xf32>
  %up = linalg.matmul ins(%x, %wu : tensor<1000x776xbf16>, tensor<776x1032xbf16>)
                      outs(%acc : tensor<1000x1032xf32>) -> tensor<1000x1032xf32>
  %ey = tensor.empty() : tensor<1000x1032xbf16>
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<1000x1032xf32>, tensor<1000x1032xf32>)
      outs(%ey : tensor<1000x1032xbf16>) {
  ^bb0(%g: f32, %u: f32, %out: bf16):
    %one = arith.constant 1.0 : f32
    %ng = arith.negf %g : f32
    %ex = math.exp %ng : f32
    %den = arith.addf %ex, %one : f32
    %silu = arith.divf %g, %den : f32
    %p = arith.mulf %silu, %u : f32
    %pb = arith.truncf %p : f32 to bf16
    linalg.yield %pb : bf16
  } -> tensor<1000x1032xbf16>
  return %y : tensor<1000x1032xbf16>
}
