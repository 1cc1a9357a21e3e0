// f16 matrix product with f16 outs (128x256 x 256x96), plus a bias the
// outliner fuses: the accumulator is f16. A hex literal (0x3C00 = 1.0 in
// f16) checks that constants are re-typed by value.
func.func @mm_f16(%a: tensor<128x256xf16>, %b: tensor<256x96xf16>,
                  %bias: tensor<128x96xf16>) -> tensor<128x96xf16> {
  %zero = arith.constant 0.0 : f16
  %one = arith.constant 0x3C00 : f16
  %e = tensor.empty() : tensor<128x96xf16>
  %acc = linalg.fill ins(%zero : f16) outs(%e : tensor<128x96xf16>)
      -> tensor<128x96xf16>
  %m = linalg.matmul ins(%a, %b : tensor<128x256xf16>, tensor<256x96xf16>)
                     outs(%acc : tensor<128x96xf16>) -> tensor<128x96xf16>
  %e2 = tensor.empty() : tensor<128x96xf16>
  %y = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%m, %bias : tensor<128x96xf16>, tensor<128x96xf16>)
      outs(%e2 : tensor<128x96xf16>) {
  ^bb0(%v: f16, %c: f16, %o: f16):
    %s = arith.addf %v, %c : f16
    %t = arith.mulf %s, %one : f16
    linalg.yield %t : f16
  } -> tensor<128x96xf16>
  return %y : tensor<128x96xf16>
}
