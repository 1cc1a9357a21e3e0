// Elementwise chains as torch-mlir's importer writes them (one
// linalg.generic per aten op, scalars hoisted to the function entry and
// captured by the bodies, broadcasts as indexing maps with constant 0 for
// size-1 dimensions, activations on [B, T, C] tensors). Each function is one
// elementwise-only subgraph that no table template covers; llm-fuse's
// synthesizer (passes/synth_ew.c, docs/pattern-table.md "Synthesized
// elementwise kernels") writes one fused kernel for each:
//   @bias_gelu_tanh  [4, 1024, 3072] f32: x + b, GELU (tanh approximation,
//                    x^3 as math.fpowi as the importer writes it)
//   @bias_gelu_erf   [4, 1024, 3072] f32: x + b, GELU (erf)
//   @silu_gate       [4, 1024, 2816] bf16: silu(g) * u, math in f32
//   @residual_scale  [8, 1024, 1024] f32: h + alpha * r * s, s a per-row
//                    scale [8, 1024, 1] (broadcast along the last dim)
//   @cast_bf16       [8, 1024, 1024] f32 -> bf16
// bench/table/synth-device.sh compiles it offline, verifies every kernel on
// the GPU and times it against the default lowering and torch.
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @bias_gelu_tanh(%x: tensor<4x1024x3072xf32>, %b: tensor<3072xf32>) -> tensor<4x1024x3072xf32> {
    %cst = arith.constant 5.000000e-01 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 0.797884583 : f32
    %cst_2 = arith.constant 4.471500e-02 : f32
    %c3_i64 = arith.constant 3 : i64
    %0 = tensor.empty() : tensor<4x1024x3072xf32>
    %1 = linalg.generic {indexing_maps = [#map, #bias, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %b : tensor<4x1024x3072xf32>, tensor<3072xf32>) outs(%0 : tensor<4x1024x3072xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %a = arith.addf %in, %in_1 : f32
      linalg.yield %a : f32
    } -> tensor<4x1024x3072xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1 : tensor<4x1024x3072xf32>) outs(%0 : tensor<4x1024x3072xf32>) {
    ^bb0(%in: f32, %out: f32):
      %p = math.fpowi %in, %c3_i64 : f32, i64
      %m = arith.mulf %p, %cst_2 : f32
      %a = arith.addf %in, %m : f32
      %m2 = arith.mulf %a, %cst_1 : f32
      %t = math.tanh %m2 : f32
      %a2 = arith.addf %t, %cst_0 : f32
      %m3 = arith.mulf %in, %cst : f32
      %m4 = arith.mulf %m3, %a2 : f32
      linalg.yield %m4 : f32
    } -> tensor<4x1024x3072xf32>
    return %2 : tensor<4x1024x3072xf32>
  }

  func.func @bias_gelu_erf(%x: tensor<4x1024x3072xf32>, %b: tensor<3072xf32>) -> tensor<4x1024x3072xf32> {
    %cst = arith.constant 5.000000e-01 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 0.707106769 : f32
    %0 = tensor.empty() : tensor<4x1024x3072xf32>
    %1 = linalg.generic {indexing_maps = [#map, #bias, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %b : tensor<4x1024x3072xf32>, tensor<3072xf32>) outs(%0 : tensor<4x1024x3072xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %a = arith.addf %in, %in_1 : f32
      linalg.yield %a : f32
    } -> tensor<4x1024x3072xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1 : tensor<4x1024x3072xf32>) outs(%0 : tensor<4x1024x3072xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %cst_1 : f32
      %e = math.erf %m : f32
      %a = arith.addf %e, %cst_0 : f32
      %h = arith.mulf %in, %cst : f32
      %r = arith.mulf %h, %a : f32
      linalg.yield %r : f32
    } -> tensor<4x1024x3072xf32>
    return %2 : tensor<4x1024x3072xf32>
  }

  func.func @silu_gate(%g: tensor<4x1024x2816xbf16>, %u: tensor<4x1024x2816xbf16>) -> tensor<4x1024x2816xbf16> {
    %cst = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<4x1024x2816xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g : tensor<4x1024x2816xbf16>) outs(%0 : tensor<4x1024x2816xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %f = arith.extf %in : bf16 to f32
      %n = arith.negf %f : f32
      %e = math.exp %n : f32
      %d = arith.addf %e, %cst : f32
      %s = arith.divf %f, %d : f32
      linalg.yield %s : f32
    } -> tensor<4x1024x2816xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %u : tensor<4x1024x2816xf32>, tensor<4x1024x2816xbf16>) outs(%0 : tensor<4x1024x2816xf32>) {
    ^bb0(%in: f32, %in_1: bf16, %out: f32):
      %f = arith.extf %in_1 : bf16 to f32
      %m = arith.mulf %in, %f : f32
      linalg.yield %m : f32
    } -> tensor<4x1024x2816xf32>
    %3 = tensor.empty() : tensor<4x1024x2816xbf16>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2 : tensor<4x1024x2816xf32>) outs(%3 : tensor<4x1024x2816xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<4x1024x2816xbf16>
    return %4 : tensor<4x1024x2816xbf16>
  }

  func.func @residual_scale(%h: tensor<8x1024x1024xf32>, %r: tensor<8x1024x1024xf32>, %s: tensor<8x1024x1xf32>) -> tensor<8x1024x1024xf32> {
    %alpha = arith.constant 0.899999976 : f32
    %0 = tensor.empty() : tensor<8x1024x1024xf32>
    %1 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r, %s : tensor<8x1024x1024xf32>, tensor<8x1024x1xf32>) outs(%0 : tensor<8x1024x1024xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %m = arith.mulf %in, %in_1 : f32
      linalg.yield %m : f32
    } -> tensor<8x1024x1024xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%h, %1 : tensor<8x1024x1024xf32>, tensor<8x1024x1024xf32>) outs(%0 : tensor<8x1024x1024xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %m = arith.mulf %in_1, %alpha : f32
      %a = arith.addf %in, %m : f32
      linalg.yield %a : f32
    } -> tensor<8x1024x1024xf32>
    return %2 : tensor<8x1024x1024xf32>
  }

  func.func @cast_bf16(%x: tensor<8x1024x1024xf32>) -> tensor<8x1024x1024xbf16> {
    %0 = tensor.empty() : tensor<8x1024x1024xbf16>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<8x1024x1024xf32>) outs(%0 : tensor<8x1024x1024xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<8x1024x1024xbf16>
    return %1 : tensor<8x1024x1024xbf16>
  }
}
