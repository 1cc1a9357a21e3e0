// An f16 row reduction whose constants are -inf, the lowest f16, a normal
// value and two subnormals (lit_tests/reference/scalars-16.test).
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @rowmax_f16(%x: tensor<64x100xf16>) -> tensor<64xf16> {
  %ninf = arith.constant 0xFC00 : f16
  %big = arith.constant -6.550400e+04 : f16
  %tiny = arith.constant 5.960464477539063e-08 : f16
  %eps = arith.constant 1.001358e-05 : f16
  %half = arith.constant 5.000000e-01 : f16
  %0 = tensor.empty() : tensor<64xf16>
  %1 = linalg.fill ins(%ninf : f16) outs(%0 : tensor<64xf16>) -> tensor<64xf16>
  %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x100xf16>) outs(%1 : tensor<64xf16>) {
  ^bb0(%in: f16, %out: f16):
    %a = arith.mulf %in, %half : f16
    %b = arith.addf %a, %tiny : f16
    %c = arith.addf %b, %eps : f16
    %d = arith.maximumf %c, %big : f16
    %m = arith.maximumf %d, %out : f16
    linalg.yield %m : f16
  } -> tensor<64xf16>
  return %2 : tensor<64xf16>
}
