// The llm-fuse pass as a flag of llm-fuse-opt: it surveys each function,
// attaches a remark per function with tensor-level ops, writes the JSON
// report, and (until partitioning lands) leaves the IR unchanged.
// RUN: %llm_fuse_opt --llm-fuse='report=%t.json' -verify-diagnostics %s | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: %llm_fuse_opt --llm-fuse='remarks=false' %s 2>&1 | FileCheck %s --check-prefix=QUIET

// expected-remark @below {{llm-fuse: @gemm_bias_relu: 4 tensor-level ops (tensor.empty, linalg.fill, linalg.matmul, linalg.generic)}}
func.func @gemm_bias_relu(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>,
                          %bias: tensor<32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x32xf32>) -> tensor<64x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>)
                      outs(%acc : tensor<64x32xf32>) -> tensor<64x32xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<64x32xf32>, tensor<32xf32>)
      outs(%empty : tensor<64x32xf32>) {
  ^bb0(%x: f32, %bv: f32, %o: f32):
    %s = arith.addf %x, %bv : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  return %out : tensor<64x32xf32>
}

// Scalar code has nothing to fuse: no remark.
func.func @scalar(%x: f32) -> f32 {
  %0 = arith.mulf %x, %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK:         linalg.fill
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @scalar
// CHECK-NEXT:    arith.mulf

// REPORT:      "schema": "llm-fuse-report/0"
// REPORT:      "options":
// REPORT:        "provider": "replay"
// REPORT:        "api_key_env": "OPENAI_API_KEY"
// REPORT:        "arch": "sm_90a"
// REPORT:      "functions":
// REPORT:        "name": "gemm_bias_relu"
// REPORT-NEXT:   "tensor_ops": 4
// REPORT:          "linalg.matmul": 1
// REPORT:        "name": "scalar"
// REPORT-NEXT:   "tensor_ops": 0
// REPORT:      "subgraphs": []

// QUIET-NOT: remark: llm-fuse
// QUIET: llm-fuse: info: surveyed 2 function(s), 4 tensor-level op(s)
// QUIET-NOT: remark: llm-fuse
