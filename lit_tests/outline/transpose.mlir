// Transposes: into a contraction operand a transpose is a layout and fuses
// when the group is its only user; a transpose of the group's output is an
// epilogue; a transpose with another user stays out of the GEMM; a lone
// transpose is a group of its own (rule 4).
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o /dev/null
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s

// CHECK: operand: contraction [transpose fill matmul transpose] in=2 out=1
func.func @operand(%a: tensor<16x8xf32>, %b: tensor<16x4xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x16xf32>
  %at = linalg.transpose ins(%a : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%at, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  %eo = tensor.empty() : tensor<4x8xf32>
  %r = linalg.transpose ins(%mm : tensor<8x4xf32>) outs(%eo : tensor<4x8xf32>) permutation = [1, 0]
  return %r : tensor<4x8xf32>
}

// The transposed operand is also returned: it is not pulled into the GEMM
// and becomes its own group.
// CHECK-NEXT: shared: contraction [fill matmul] in=2 out=1
// CHECK-NEXT: shared: elementwise [transpose] in=1 out=1
// CHECK-NEXT: groups: 3
func.func @shared(%a: tensor<16x8xf32>, %b: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x16xf32>
  %at = linalg.transpose ins(%a : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%at, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %mm, %at : tensor<8x4xf32>, tensor<8x16xf32>
}
