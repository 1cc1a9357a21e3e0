// 16-bit float constants that reach the reference's kernels as launch
// arguments (lit_tests/reference/scalars-16.test).
//
// TOSA softmax in bf16: tosa.reduce_max starts at the lowest bf16, and
// tosa.reciprocal divides 1.0 by the row sum (tosa-to-linalg sums bf16 in
// f32, so the subgraph has no opmath truth: its upstream plan judges).
func.func @softmax_bf16(%x: tensor<64x100xbf16>) -> tensor<64x100xbf16> {
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %mx = tosa.reduce_max %x {axis = 1 : i32} : (tensor<64x100xbf16>) -> tensor<64x1xbf16>
  %d = tosa.sub %x, %mx : (tensor<64x100xbf16>, tensor<64x1xbf16>) -> tensor<64x100xbf16>
  %e = tosa.exp %d : (tensor<64x100xbf16>) -> tensor<64x100xbf16>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<64x100xbf16>) -> tensor<64x1xbf16>
  %r = tosa.reciprocal %s : (tensor<64x1xbf16>) -> tensor<64x1xbf16>
  %y = tosa.mul %e, %r, %shift : (tensor<64x100xbf16>, tensor<64x1xbf16>, tensor<1xi8>) -> tensor<64x100xbf16>
  return %y : tensor<64x100xbf16>
}
