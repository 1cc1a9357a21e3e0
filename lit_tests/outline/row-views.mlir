// Rule 3 through row views: a matrix product's epilogue continues across a
// reshape that regroups leading dimensions only (torch-mlir's Linear at
// batch B > 1: [B*T, N] -> [B, T, N]), so the bias, the expand back, a GELU
// or a residual add on the [B, T, N] view, and a collapse of that result to
// [B*T, N] are one group with the GEMM. Views anywhere else stay where they
// are: before the GEMM (its A operand), after a batched product, and views
// that split the innermost dimension.
// RUN: %llm_fuse_opt --llm-fuse-outline -verify-diagnostics %s | FileCheck %s

#id2 = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
#id3 = affine_map<(b, t, n) -> (b, t, n)>

// Linear + bias, expand, GELU-like tail, collapse: one group. Its input is
// the collapse of x (left in place: a view into the GEMM's operand), its
// result the collapsed [B*T, N].
// CHECK-LABEL: func.func @linear_gelu(
// CHECK:         %[[A:.*]] = tensor.collapse_shape %arg0
// CHECK-NEXT:    %[[Y:.*]] = call @[[F:sg_[0-9a-f]+]](%arg1, %[[A]], %arg2) : (tensor<64x32xf32>, tensor<24x32xf32>, tensor<64xf32>) -> tensor<24x64xf32>
// CHECK-NEXT:    return %[[Y]]
// (its body: see the end of the file)
func.func @linear_gelu(%x: tensor<4x6x32xf32>, %w: tensor<64x32xf32>, %bias: tensor<64xf32>) -> tensor<24x64xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<32x64xf32>
  // expected-remark @+1 {{outlined contraction subgraph}}
  %wt = linalg.transpose ins(%w : tensor<64x32xf32>) outs(%et : tensor<32x64xf32>) permutation = [1, 0]
  // expected-remark @+1 {{left in place}}
  %a = tensor.collapse_shape %x [[0, 1], [2]] : tensor<4x6x32xf32> into tensor<24x32xf32>
  %e = tensor.empty() : tensor<24x64xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<24x64xf32>) -> tensor<24x64xf32>
  %mm = linalg.matmul ins(%a, %wt : tensor<24x32xf32>, tensor<32x64xf32>) outs(%f : tensor<24x64xf32>) -> tensor<24x64xf32>
  %b = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<24x64xf32>, tensor<64xf32>) outs(%e : tensor<24x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<24x64xf32>
  %v = tensor.expand_shape %b [[0, 1], [2]] output_shape [4, 6, 64] : tensor<24x64xf32> into tensor<4x6x64xf32>
  %e3 = tensor.empty() : tensor<4x6x64xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x6x64xf32>) outs(%e3 : tensor<4x6x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    %m = arith.mulf %p, %t : f32
    linalg.yield %m : f32
  } -> tensor<4x6x64xf32>
  %y = tensor.collapse_shape %g [[0, 1], [2]] : tensor<4x6x64xf32> into tensor<24x64xf32>
  return %y : tensor<24x64xf32>
}

// Linear + bias, expand, + residual: one group writing [B, T, N], the
// residual one more input.
// CHECK-LABEL: func.func @linear_residual(
// CHECK-NEXT:    %[[Y:.*]] = call @{{sg_[0-9a-f]+}}(%arg1, %arg0, %arg2, %arg3) : (tensor<32x32xf32>, tensor<24x32xf32>, tensor<32xf32>, tensor<4x6x32xf32>) -> tensor<4x6x32xf32>
// CHECK-NEXT:    return %[[Y]]
func.func @linear_residual(%a: tensor<24x32xf32>, %w: tensor<32x32xf32>, %bias: tensor<32xf32>, %h: tensor<4x6x32xf32>) -> tensor<4x6x32xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<32x32xf32>
  // expected-remark @+1 {{outlined contraction subgraph}}
  %wt = linalg.transpose ins(%w : tensor<32x32xf32>) outs(%et : tensor<32x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<24x32xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<24x32xf32>) -> tensor<24x32xf32>
  %mm = linalg.matmul ins(%a, %wt : tensor<24x32xf32>, tensor<32x32xf32>) outs(%f : tensor<24x32xf32>) -> tensor<24x32xf32>
  %b = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<24x32xf32>, tensor<32xf32>) outs(%e : tensor<24x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<24x32xf32>
  %v = tensor.expand_shape %b [[0, 1], [2]] output_shape [4, 6, 32] : tensor<24x32xf32> into tensor<4x6x32xf32>
  %e3 = tensor.empty() : tensor<4x6x32xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h, %v : tensor<4x6x32xf32>, tensor<4x6x32xf32>) outs(%e3 : tensor<4x6x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x6x32xf32>
  return %r : tensor<4x6x32xf32>
}

// A view that splits the innermost dimension ([24, 64] -> [24, 4, 16]) is
// no row view: left in place, the op after it a group of its own.
// CHECK-LABEL: func.func @split_columns(
// CHECK-NEXT:    %[[M:.*]] = call @{{sg_[0-9a-f]+}}(%arg0, %arg1) : (tensor<24x32xf32>, tensor<32x64xf32>) -> tensor<24x64xf32>
// CHECK-NEXT:    %[[V:.*]] = tensor.expand_shape %[[M]]
// CHECK-NEXT:    %[[R:.*]] = call @{{sg_[0-9a-f]+}}(%[[V]])
// CHECK-NEXT:    return %[[R]]
func.func @split_columns(%a: tensor<24x32xf32>, %b: tensor<32x64xf32>) -> tensor<24x4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x64xf32>
  // expected-remark @+1 {{outlined contraction subgraph}}
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<24x64xf32>) -> tensor<24x64xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<24x32xf32>, tensor<32x64xf32>) outs(%f : tensor<24x64xf32>) -> tensor<24x64xf32>
  // expected-remark @+1 {{left in place}}
  %v = tensor.expand_shape %mm [[0], [1, 2]] output_shape [24, 4, 16] : tensor<24x64xf32> into tensor<24x4x16xf32>
  %e3 = tensor.empty() : tensor<24x4x16xf32>
  // expected-remark @+1 {{outlined elementwise subgraph}}
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<24x4x16xf32>) outs(%e3 : tensor<24x4x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<24x4x16xf32>
  return %r : tensor<24x4x16xf32>
}

// A batched product ([6, 4, 8] @ [6, 8, 16]) is not a matrix: its expand
// to [2, 3, 4, 16] is left in place (rule 5 alone takes such views in,
// around an attention).
// CHECK-LABEL: func.func @batched(
// CHECK-NEXT:    %[[M:.*]] = call @{{sg_[0-9a-f]+}}(%arg0, %arg1)
// CHECK-NEXT:    %[[V:.*]] = tensor.expand_shape %[[M]]
// CHECK-NEXT:    %[[R:.*]] = call @{{sg_[0-9a-f]+}}(%[[V]])
// CHECK-NEXT:    return %[[R]]
func.func @batched(%a: tensor<6x4x8xf32>, %b: tensor<6x8x16xf32>) -> tensor<2x3x4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x4x16xf32>
  // expected-remark @+1 {{outlined contraction subgraph}}
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x4x16xf32>) -> tensor<6x4x16xf32>
  %mm = linalg.batch_matmul ins(%a, %b : tensor<6x4x8xf32>, tensor<6x8x16xf32>) outs(%f : tensor<6x4x16xf32>) -> tensor<6x4x16xf32>
  // expected-remark @+1 {{left in place}}
  %v = tensor.expand_shape %mm [[0, 1], [2], [3]] output_shape [2, 3, 4, 16] : tensor<6x4x16xf32> into tensor<2x3x4x16xf32>
  %e4 = tensor.empty() : tensor<2x3x4x16xf32>
  // expected-remark @+1 {{outlined elementwise subgraph}}
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x3x4x16xf32>) outs(%e4 : tensor<2x3x4x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<2x3x4x16xf32>
  return %r : tensor<2x3x4x16xf32>
}

// The GEMM + GELU group's body: the product, the bias, the expand to
// [B, T, N], the GELU on it and the collapse back.
// CHECK:       func.func private @[[F]](
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK:         tensor.expand_shape
// CHECK:         math.tanh
// CHECK:         tensor.collapse_shape
// CHECK-NEXT:    return
