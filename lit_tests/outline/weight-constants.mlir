// Weights are inputs, math stays inside (docs/pattern-key.md, "Constants"):
// a float tensor constant given as dense_resource or as non-splat dense
// elements stays in the caller and reaches the subgraph as an argument;
// scalars, splats and integer tensors are cloned into it, as before.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o %t.mlir
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// CHECK: linear: contraction [transpose fill matmul generic] in=3 out=1
// CHECK: table: elementwise [arith.mulf] in=2 out=1
// CHECK: splat: elementwise [arith.mulf] in=1 out=1
// CHECK: ints: elementwise [arith.addi] in=1 out=1

// The nn.Linear weight [out, in] and its bias: both inputs, the weight
// transposed inside as the GEMM's B layout.
// IR-LABEL: func.func @linear(
// IR-DAG:     %[[W:.*]] = arith.constant dense_resource<linear_weight> : tensor<16x8xf32>
// IR-DAG:     %[[B:.*]] = arith.constant dense_resource<linear_bias> : tensor<16xf32>
// IR:         call @{{sg_[0-9a-f]+}}(%[[W]], %arg0, %[[B]])
func.func @linear(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = arith.constant dense_resource<linear_weight> : tensor<16x8xf32>
  %b = arith.constant dense_resource<linear_bias> : tensor<16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%x, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<4x16xf32>, tensor<16xf32>) outs(%o : tensor<4x16xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// Non-splat dense floats are data too.
// IR-LABEL: func.func @table(
// IR:         %[[T:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// IR:         call @{{sg_[0-9a-f]+}}(%arg0, %[[T]])
func.func @table(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r = arith.mulf %x, %c : tensor<4xf32>
  return %r : tensor<4xf32>
}

// A splat is a broadcast scalar: cloned, in the key.
// IR-LABEL: func.func @splat(
// IR-NEXT:    call @{{sg_[0-9a-f]+}}(%arg0)
// IR-NEXT:    return
func.func @splat(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<0.5> : tensor<4xf32>
  %r = arith.mulf %x, %c : tensor<4xf32>
  return %r : tensor<4xf32>
}

// Integer tensors (shapes, shifts, indices) stay inside even when not splat.
// IR-LABEL: func.func @ints(
// IR-NEXT:    call @{{sg_[0-9a-f]+}}(%arg0)
// IR-NEXT:    return
func.func @ints(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %r = arith.addi %x, %c : tensor<4xi32>
  return %r : tensor<4xi32>
}
