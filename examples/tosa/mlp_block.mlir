// TOSA version of the transformer MLP block in bf16 (GPT-2 small widths,
// 4096 tokens), as a TOSA importer would emit it:
//   h = gelu_tanh(x W1 + b1);  y = x + (h W2 + b2)
// x: 4096x768xbf16, W1: 768x3072xbf16, b1: 3072xbf16, W2: 3072x768xbf16,
// b2: 768xbf16 -> y: 4096x768xbf16.
// tosa.matmul is rank 3 (batch 1) and accumulates bf16 products in f32; the
// elementwise math runs in f32 (tosa.cast) and rounds to bf16 before W2.
func.func @mlp_block(%x: tensor<4096x768xbf16>,
                     %w1: tensor<768x3072xbf16>, %b1: tensor<3072xbf16>,
                     %w2: tensor<3072x768xbf16>, %b2: tensor<768xbf16>)
    -> tensor<4096x768xbf16> {
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xbf16>} : () -> tensor<1xbf16>
  %half = "tosa.const"() {values = dense<0.5> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %one = "tosa.const"() {values = dense<1.0> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %k0 = "tosa.const"() {values = dense<0.7978845608028654> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %k1 = "tosa.const"() {values = dense<0.044715> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %sx = tosa.const_shape {values = dense<[1, 4096, 768]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sw1 = tosa.const_shape {values = dense<[1, 768, 3072]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sb1 = tosa.const_shape {values = dense<[1, 1, 3072]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sw2 = tosa.const_shape {values = dense<[1, 3072, 768]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sb2 = tosa.const_shape {values = dense<[1, 1, 768]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sy = tosa.const_shape {values = dense<[4096, 768]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %x3 = tosa.reshape %x, %sx : (tensor<4096x768xbf16>, !tosa.shape<3>) -> tensor<1x4096x768xbf16>
  %w13 = tosa.reshape %w1, %sw1 : (tensor<768x3072xbf16>, !tosa.shape<3>) -> tensor<1x768x3072xbf16>
  %b13 = tosa.reshape %b1, %sb1 : (tensor<3072xbf16>, !tosa.shape<3>) -> tensor<1x1x3072xbf16>
  %w23 = tosa.reshape %w2, %sw2 : (tensor<3072x768xbf16>, !tosa.shape<3>) -> tensor<1x3072x768xbf16>
  %b23 = tosa.reshape %b2, %sb2 : (tensor<768xbf16>, !tosa.shape<3>) -> tensor<1x1x768xbf16>
  // first projection + bias
  %mm1 = tosa.matmul %x3, %w13, %zp, %zp
      : (tensor<1x4096x768xbf16>, tensor<1x768x3072xbf16>, tensor<1xbf16>, tensor<1xbf16>)
      -> tensor<1x4096x3072xf32>
  %b1f = tosa.cast %b13 : (tensor<1x1x3072xbf16>) -> tensor<1x1x3072xf32>
  %t = tosa.add %mm1, %b1f : (tensor<1x4096x3072xf32>, tensor<1x1x3072xf32>) -> tensor<1x4096x3072xf32>
  // GELU (tanh approximation): 0.5 t (1 + tanh(0.79788456 (t + 0.044715 t^3)))
  %t2 = tosa.mul %t, %t, %shift : (tensor<1x4096x3072xf32>, tensor<1x4096x3072xf32>, tensor<1xi8>) -> tensor<1x4096x3072xf32>
  %t3 = tosa.mul %t2, %t, %shift : (tensor<1x4096x3072xf32>, tensor<1x4096x3072xf32>, tensor<1xi8>) -> tensor<1x4096x3072xf32>
  %a = tosa.mul %t3, %k1, %shift : (tensor<1x4096x3072xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4096x3072xf32>
  %inner = tosa.add %t, %a : (tensor<1x4096x3072xf32>, tensor<1x4096x3072xf32>) -> tensor<1x4096x3072xf32>
  %scaled = tosa.mul %inner, %k0, %shift : (tensor<1x4096x3072xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4096x3072xf32>
  %th = tosa.tanh %scaled : (tensor<1x4096x3072xf32>) -> tensor<1x4096x3072xf32>
  %onep = tosa.add %th, %one : (tensor<1x4096x3072xf32>, tensor<1x1x1xf32>) -> tensor<1x4096x3072xf32>
  %ht = tosa.mul %t, %half, %shift : (tensor<1x4096x3072xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4096x3072xf32>
  %g = tosa.mul %ht, %onep, %shift : (tensor<1x4096x3072xf32>, tensor<1x4096x3072xf32>, tensor<1xi8>) -> tensor<1x4096x3072xf32>
  %gb = tosa.cast %g : (tensor<1x4096x3072xf32>) -> tensor<1x4096x3072xbf16>
  // second projection + bias + residual
  %mm2 = tosa.matmul %gb, %w23, %zp, %zp
      : (tensor<1x4096x3072xbf16>, tensor<1x3072x768xbf16>, tensor<1xbf16>, tensor<1xbf16>)
      -> tensor<1x4096x768xf32>
  %b2f = tosa.cast %b23 : (tensor<1x1x768xbf16>) -> tensor<1x1x768xf32>
  %xf = tosa.cast %x3 : (tensor<1x4096x768xbf16>) -> tensor<1x4096x768xf32>
  %s = tosa.add %mm2, %b2f : (tensor<1x4096x768xf32>, tensor<1x1x768xf32>) -> tensor<1x4096x768xf32>
  %r = tosa.add %s, %xf : (tensor<1x4096x768xf32>, tensor<1x4096x768xf32>) -> tensor<1x4096x768xf32>
  %rb = tosa.cast %r : (tensor<1x4096x768xf32>) -> tensor<1x4096x768xbf16>
  %y = tosa.reshape %rb, %sy : (tensor<1x4096x768xbf16>, !tosa.shape<2>) -> tensor<4096x768xbf16>
  return %y : tensor<4096x768xbf16>
}
