// Rule 5: QK^T, a row softmax and PV become one attention-like group when the
// scores and probabilities are used by nothing else. With the scores also
// returned (or a GEMM, a norm and a GEMM whose first output is a residual)
// the three groups stay apart.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o %t.mlir
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// CHECK: named_softmax: attention-like [fill batch_matmul softmax fill batch_matmul] in=3 out=1
// IR-LABEL: func.func @named_softmax(
// IR-NEXT:    call @{{sg_[0-9a-f]+}}(%arg0, %arg1, %arg2)
// IR-NEXT:    return
func.func @named_softmax(%q: tensor<2x8x4xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<2x8x8xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%is : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %eo = tensor.empty() : tensor<2x8x4xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%io : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// The scores leave the function: no attention group.
// CHECK-NEXT: scores_escape: contraction [fill batch_matmul] in=2 out=1
// CHECK-NEXT: scores_escape: contraction [fill batch_matmul] in=2 out=1
// CHECK-NEXT: scores_escape: softmax [softmax] in=1 out=1
// CHECK-NEXT: groups: 4
func.func @scores_escape(%q: tensor<2x8x4xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<2x8x8xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%is : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %eo = tensor.empty() : tensor<2x8x4xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%io : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o, %s : tensor<2x8x4xf32>, tensor<2x8x8xf32>
}
