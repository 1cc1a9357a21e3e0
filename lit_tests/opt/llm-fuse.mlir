// The llm-fuse pass as a flag of llm-fuse-opt, with no provider: it
// partitions and outlines, says per subgraph why it kept the original ops
// (a remark and a report record), prints a summary, and the IR computes the
// same as before (the ops sit in the outlined function).
// RUN: %llm_fuse_opt --llm-fuse='provider=none report=%t.json' %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: %llm_fuse_opt --llm-fuse='provider=none remarks=false' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=QUIET

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

// Scalar code has nothing to fuse.
func.func @scalar(%x: f32) -> f32 {
  %0 = arith.mulf %x, %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK:         %[[R:.*]] = call @[[SG:sg_[0-9a-f]+]](%arg0, %arg1, %arg2)
// CHECK:         return %[[R]]
// CHECK-LABEL: func.func @scalar
// CHECK-NEXT:    arith.mulf
// CHECK:       func.func private @[[SG]]({{.*}}) -> tensor<64x32xf32> attributes {llm_fuse.class = "contraction", llm_fuse.fingerprint = "{{[0-9a-f]+}}", llm_fuse.pattern = "{{[0-9a-f]+}}"}
// CHECK:         linalg.fill
// CHECK:         linalg.matmul
// CHECK:         linalg.generic

// DIAG: remark: llm-fuse: outlined contraction subgraph @[[SG:sg_[0-9a-f]+]]
// DIAG: llm-fuse: info: 1 subgraph(s) outlined (1 distinct)
// DIAG: remark: llm-fuse: @[[SG]] (contraction): kept original ops: provider=none: no candidate kernel was asked for
// DIAG: summary: subgraph
// DIAG: summary: [[SG]] contraction kept 0 0 - - - no-provider
// DIAG: summary: 1 subgraph(s), 0 swapped, 1 kept with their original ops

// REPORT:      "schema": "llm-fuse-report/1"
// REPORT:      "options":
// REPORT:        "provider": "none"
// REPORT:        "api_key_env": "OPENAI_API_KEY"
// REPORT:        "arch": "sm_90a"
// REPORT:      "subgraphs": [
// REPORT:        "class": "contraction"
// REPORT-NEXT:   "signature": "(tensor<64x128xf32>, tensor<128x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>"
// REPORT-NEXT:   "decision": "kept"
// REPORT-NEXT:   "reason": "no-provider"
// REPORT:        "build": null
// REPORT:      "groups": [
// REPORT:        "bytes_moved":
// REPORT:      "summary":
// REPORT-NEXT:   "subgraphs": 1
// REPORT-NEXT:   "swapped": 0
// REPORT-NEXT:   "deferred": 0
// REPORT-NEXT:   "kept": 1

// QUIET-NOT: remark:
// QUIET: summary: 1 subgraph(s), 0 swapped, 1 kept
// QUIET-NOT: remark:
