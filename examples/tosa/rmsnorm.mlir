// TOSA RMSNorm in bf16 (Llama-style; 16384 tokens, hidden 4096):
//   y = x * rsqrt(reduce_sum(x^2) / 4096 + 1e-6) * w
// x: 16384x4096xbf16, w: 4096xbf16 -> y: 16384x4096xbf16.
// Computes in f32 (tosa.cast) and rounds the result to bf16.
func.func @rmsnorm(%x: tensor<16384x4096xbf16>, %w: tensor<4096xbf16>)
    -> tensor<16384x4096xbf16> {
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %n = "tosa.const"() {values = dense<4096.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %eps = "tosa.const"() {values = dense<1.0e-06> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %sw = tosa.const_shape {values = dense<[1, 4096]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %xf = tosa.cast %x : (tensor<16384x4096xbf16>) -> tensor<16384x4096xf32>
  %sq = tosa.mul %xf, %xf, %shift : (tensor<16384x4096xf32>, tensor<16384x4096xf32>, tensor<1xi8>) -> tensor<16384x4096xf32>
  %ss = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<16384x4096xf32>) -> tensor<16384x1xf32>
  %inv_n = tosa.reciprocal %n : (tensor<1x1xf32>) -> tensor<1x1xf32>
  %mean = tosa.mul %ss, %inv_n, %shift : (tensor<16384x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<16384x1xf32>
  %me = tosa.add %mean, %eps : (tensor<16384x1xf32>, tensor<1x1xf32>) -> tensor<16384x1xf32>
  %r = tosa.rsqrt %me : (tensor<16384x1xf32>) -> tensor<16384x1xf32>
  %nrm = tosa.mul %xf, %r, %shift : (tensor<16384x4096xf32>, tensor<16384x1xf32>, tensor<1xi8>) -> tensor<16384x4096xf32>
  %w2 = tosa.reshape %w, %sw : (tensor<4096xbf16>, !tosa.shape<2>) -> tensor<1x4096xbf16>
  %wf = tosa.cast %w2 : (tensor<1x4096xbf16>) -> tensor<1x4096xf32>
  %yf = tosa.mul %nrm, %wf, %shift : (tensor<16384x4096xf32>, tensor<1x4096xf32>, tensor<1xi8>) -> tensor<16384x4096xf32>
  %y = tosa.cast %yf : (tensor<16384x4096xf32>) -> tensor<16384x4096xbf16>
  return %y : tensor<16384x4096xbf16>
}
