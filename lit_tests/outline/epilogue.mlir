// A contraction root takes its fill/empty producers and its elementwise
// epilogue; the call replaces the group; the report has the roofline inputs.
// RUN: %llm_fuse_opt --llm-fuse-outline='report=%t.json' -verify-diagnostics %s | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
// CHECK-LABEL: func.func @gemm_bias_relu(
// CHECK-SAME:      %[[A:.*]]: tensor<64x128xf32>, %[[B:.*]]: tensor<128x32xf32>, %[[BIAS:.*]]: tensor<32xf32>)
// CHECK-NEXT:    %[[R:.*]] = call @[[SG:sg_[0-9a-f]+]](%[[A]], %[[B]], %[[BIAS]])
// CHECK-NEXT:    return %[[R]]
// CHECK:       func.func private @[[SG]](%{{.*}}: tensor<64x128xf32>, %{{.*}}: tensor<128x32xf32>, %{{.*}}: tensor<32xf32>) -> tensor<64x32xf32>
// CHECK-SAME:    llm_fuse.class = "contraction"
// CHECK-SAME:    llm_fuse.fingerprint = "{{([0-9a-f]{64})}}"
// CHECK:         linalg.fill
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK:         arith.maximumf
// CHECK:         return
func.func @gemm_bias_relu(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>,
                          %bias: tensor<32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x32xf32>
  // expected-remark @below {{outlined contraction subgraph}}
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x32xf32>) -> tensor<64x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>)
                      outs(%acc : tensor<64x32xf32>) -> tensor<64x32xf32>
  %out = linalg.generic {indexing_maps = [#id, #row, #id],
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

// REPORT:      "schema": "llm-fuse-outline/0"
// REPORT:        "class": "contraction"
// REPORT:        "function": "gemm_bias_relu"
// REPORT:        "ops": ["linalg.fill", "linalg.matmul", "linalg.generic"]
// REPORT:        "shape": [64, 128]
// REPORT-NEXT:   "dtype": "f32"
// REPORT-NEXT:   "bytes": 32768
// 2*64*32*128 + 2*64*32 (add, max in the epilogue)
// REPORT:        "bytes_moved": 57472
// REPORT-NEXT:   "flops": 528384
