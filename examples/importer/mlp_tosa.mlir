// MLP block of a GPT-2-style transformer in f32, written the way TOSA
// legalizations of a fully connected layer look (TFLite's FULLY_CONNECTED
// with keep_num_dims=false, or torch-mlir's TorchToTosa on aten.mm): the
// activations are rank 2 [tokens, features] between the layers, and every
// tosa.matmul (rank 3, batch 1) has a tosa.reshape to rank 3 on each operand
// and one back to rank 2 on its result; weights are tosa.const [in, out];
// biases are rank-2 [1, N] constants added with a broadcasting tosa.add; GELU
// (tanh approximation) is tosa.pow/mul/add/tanh, every tosa.mul with its
// shift operand (0 for floats).
//   y = x + (gelu_tanh(x W1 + b1) W2 + b2)
// x: 1x128x256xf32 (batch 1, sequence 128, hidden 256), W1: 256x1024,
// W2: 1024x256 -> y: 1x128x256xf32. The weights and biases are
// dense_resource constants as an exporter writes them, their blobs left out
// to keep the file small; the scalars are splats.
// llm-fuse-outline converts TOSA to linalg itself (tosa-to-linalg-named,
// tosa-to-linalg, tosa-to-arith, tosa-to-tensor) before partitioning; the
// weights' reshapes to rank 3 become unit-dim tensor.expand_shape ops.
module {
func.func @main(%x: tensor<1x128x256xf32>) -> tensor<1x128x256xf32> {
  %w1 = "tosa.const"() {values = dense_resource<fc_weight> : tensor<256x1024xf32>} : () -> tensor<256x1024xf32>
  %b1 = "tosa.const"() {values = dense_resource<fc_bias> : tensor<1x1024xf32>} : () -> tensor<1x1024xf32>
  %w2 = "tosa.const"() {values = dense_resource<proj_weight> : tensor<1024x256xf32>} : () -> tensor<1024x256xf32>
  %b2 = "tosa.const"() {values = dense_resource<proj_bias> : tensor<1x256xf32>} : () -> tensor<1x256xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %three = "tosa.const"() {values = dense<3.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %alpha = "tosa.const"() {values = dense<0.044715> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %beta = "tosa.const"() {values = dense<0.7978845608028654> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %one = "tosa.const"() {values = dense<1.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %half = "tosa.const"() {values = dense<0.5> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %s_x2 = tosa.const_shape {values = dense<[128, 256]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %s_x3 = tosa.const_shape {values = dense<[1, 128, 256]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_w1 = tosa.const_shape {values = dense<[1, 256, 1024]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_h2 = tosa.const_shape {values = dense<[128, 1024]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %s_h3 = tosa.const_shape {values = dense<[1, 128, 1024]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s_w2 = tosa.const_shape {values = dense<[1, 1024, 256]> : tensor<3xindex>} : () -> !tosa.shape<3>

  // fc: x W1 + b1, on rank 2 [128, 256]
  %x2 = tosa.reshape %x, %s_x2 : (tensor<1x128x256xf32>, !tosa.shape<2>) -> tensor<128x256xf32>
  %x3 = tosa.reshape %x2, %s_x3 : (tensor<128x256xf32>, !tosa.shape<3>) -> tensor<1x128x256xf32>
  %w13 = tosa.reshape %w1, %s_w1 : (tensor<256x1024xf32>, !tosa.shape<3>) -> tensor<1x256x1024xf32>
  %mm1 = tosa.matmul %x3, %w13, %zp, %zp
      : (tensor<1x128x256xf32>, tensor<1x256x1024xf32>, tensor<1xf32>, tensor<1xf32>)
      -> tensor<1x128x1024xf32>
  %mm12 = tosa.reshape %mm1, %s_h2 : (tensor<1x128x1024xf32>, !tosa.shape<2>) -> tensor<128x1024xf32>
  %h = tosa.add %mm12, %b1 : (tensor<128x1024xf32>, tensor<1x1024xf32>) -> tensor<128x1024xf32>

  // gelu(h, approximate="tanh") = 0.5 h (1 + tanh(0.79788456 (h + 0.044715 h^3)))
  %h3 = tosa.pow %h, %three : (tensor<128x1024xf32>, tensor<1x1xf32>) -> tensor<128x1024xf32>
  %a = tosa.mul %h3, %alpha, %shift : (tensor<128x1024xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<128x1024xf32>
  %inner = tosa.add %h, %a : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
  %scaled = tosa.mul %inner, %beta, %shift : (tensor<128x1024xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<128x1024xf32>
  %th = tosa.tanh %scaled : (tensor<128x1024xf32>) -> tensor<128x1024xf32>
  %onep = tosa.add %th, %one : (tensor<128x1024xf32>, tensor<1x1xf32>) -> tensor<128x1024xf32>
  %hh = tosa.mul %h, %half, %shift : (tensor<128x1024xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<128x1024xf32>
  %g = tosa.mul %hh, %onep, %shift : (tensor<128x1024xf32>, tensor<128x1024xf32>, tensor<1xi8>) -> tensor<128x1024xf32>

  // proj: g W2 + b2, then the residual in the input's shape
  %g3 = tosa.reshape %g, %s_h3 : (tensor<128x1024xf32>, !tosa.shape<3>) -> tensor<1x128x1024xf32>
  %w23 = tosa.reshape %w2, %s_w2 : (tensor<1024x256xf32>, !tosa.shape<3>) -> tensor<1x1024x256xf32>
  %mm2 = tosa.matmul %g3, %w23, %zp, %zp
      : (tensor<1x128x1024xf32>, tensor<1x1024x256xf32>, tensor<1xf32>, tensor<1xf32>)
      -> tensor<1x128x256xf32>
  %mm22 = tosa.reshape %mm2, %s_x2 : (tensor<1x128x256xf32>, !tosa.shape<2>) -> tensor<128x256xf32>
  %p = tosa.add %mm22, %b2 : (tensor<128x256xf32>, tensor<1x256xf32>) -> tensor<128x256xf32>
  %p3 = tosa.reshape %p, %s_x3 : (tensor<128x256xf32>, !tosa.shape<3>) -> tensor<1x128x256xf32>
  %y = tosa.add %x, %p3 : (tensor<1x128x256xf32>, tensor<1x128x256xf32>) -> tensor<1x128x256xf32>
  return %y : tensor<1x128x256xf32>
}
}
