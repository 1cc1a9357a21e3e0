// TOSA row softmax in f32 (4096 rows of 16384 logits):
//   y = exp(x - reduce_max(x)) * reciprocal(reduce_sum(exp(x - reduce_max(x))))
// x: 4096x16384xf32 -> y: 4096x16384xf32.
func.func @softmax(%x: tensor<4096x16384xf32>) -> tensor<4096x16384xf32> {
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %mx = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4096x16384xf32>) -> tensor<4096x1xf32>
  %d = tosa.sub %x, %mx : (tensor<4096x16384xf32>, tensor<4096x1xf32>) -> tensor<4096x16384xf32>
  %e = tosa.exp %d : (tensor<4096x16384xf32>) -> tensor<4096x16384xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<4096x16384xf32>) -> tensor<4096x1xf32>
  %r = tosa.reciprocal %s : (tensor<4096x1xf32>) -> tensor<4096x1xf32>
  %y = tosa.mul %e, %r, %shift : (tensor<4096x16384xf32>, tensor<4096x1xf32>, tensor<1xi8>) -> tensor<4096x16384xf32>
  return %y : tensor<4096x16384xf32>
}
