// Rule 2: a second GEMM with the same output shape feeding the epilogue
// (SwiGLU: silu(x Wg) * (x Wu)) joins the group: one dual-GEMM kernel. If
// the second GEMM's result is used elsewhere too, it stays its own group.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o %t.mlir
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

#id = affine_map<(i, j) -> (i, j)>

// CHECK: swiglu: contraction [fill matmul matmul generic] in=3 out=1
// IR-LABEL: func.func @swiglu(
// IR-NEXT:    call @{{sg_[0-9a-f]+}}(%arg0, %arg1, %arg2)
// IR-NEXT:    return
func.func @swiglu(%x: tensor<8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<8x16xf32>, tensor<16x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<8x16xf32>, tensor<16x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %u : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d = arith.addf %one, %ex : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// CHECK-NEXT: escapes: contraction [fill matmul mul] in=3 out=1
// CHECK-NEXT: escapes: contraction [fill matmul] in=2 out=1
// CHECK-NEXT: groups: 3
func.func @escapes(%x: tensor<8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<8x16xf32>, tensor<16x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<8x16xf32>, tensor<16x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.mul ins(%g, %u : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h, %u : tensor<8x32xf32>, tensor<8x32xf32>
}
