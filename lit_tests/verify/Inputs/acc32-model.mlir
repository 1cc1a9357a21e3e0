// Subgraphs for lit_tests/verify/acc32.test: which plans carry "acc32"
// (a contraction that multiplies bf16/f16 operands and sums in f32).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
// bf16 operands, an f32 result: "acc32" {k 384, bf16}
func.func @mm_bf16(%a: tensor<32x384xbf16>, %b: tensor<384x48xbf16>) -> tensor<32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<32x384xbf16>, tensor<384x48xbf16>)
                     outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
// f16 operands summed in f16 (a truth judges it; no "acc32")
func.func @mm_f16acc(%a: tensor<32x320xf16>, %b: tensor<320x48xf16>) -> tensor<32x48xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<32x48xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<32x48xf16>) -> tensor<32x48xf16>
  %r = linalg.matmul ins(%a, %b : tensor<32x320xf16>, tensor<320x48xf16>)
                     outs(%f : tensor<32x48xf16>) -> tensor<32x48xf16>
  return %r : tensor<32x48xf16>
}
// f32 operands: no "acc32" (TF32 mode is the option for those)
func.func @mm_f32(%a: tensor<32x352xf32>, %b: tensor<352x48xf32>) -> tensor<32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<32x352xf32>, tensor<352x48xf32>)
                     outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
// a linalg.generic contraction of f16 operands into f32, rounded to f16
// with a bias: "acc32" {k 448, f16}
func.func @gen_f16(%a: tensor<32x448xf16>, %b: tensor<448x48xf16>, %c: tensor<32x48xf32>) -> tensor<32x48xf16> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x448xf16>, tensor<448x48xf16>) outs(%f : tensor<32x48xf32>) {
  ^bb0(%x: f16, %y: f16, %s: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %t = arith.addf %s, %p : f32
    linalg.yield %t : f32
  } -> tensor<32x48xf32>
  %eh = tensor.empty() : tensor<32x48xf16>
  %h = linalg.generic {indexing_maps = [#id2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%r, %c : tensor<32x48xf32>, tensor<32x48xf32>) outs(%eh : tensor<32x48xf16>) {
  ^bb0(%v: f32, %bias: f32, %o: f16):
    %w = arith.addf %v, %bias : f32
    %t = arith.truncf %w : f32 to f16
    linalg.yield %t : f16
  } -> tensor<32x48xf16>
  return %h : tensor<32x48xf16>
}
