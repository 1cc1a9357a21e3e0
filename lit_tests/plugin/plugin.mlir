// libLLMFusePlugin.so inside Debian's stock mlir-opt-22. Plugin passes are
// reachable only through --pass-pipeline there (mlir-opt parses its flags
// before it loads plugins).
// RUN: %mlir_opt --load-pass-plugin=%plugin \
// RUN:   --pass-pipeline='builtin.module(llm-fuse{provider=none report=%t.json})' \
// RUN:   %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

// The pass options are parsed and validated by the plugin in mlir-opt too.
// RUN: not %mlir_opt --load-pass-plugin=%plugin \
// RUN:   --pass-pipeline='builtin.module(llm-fuse{verify=maybe})' %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: llm-fuse: bad value 'maybe' for option 'verify': expected one of auto|defer|none

// Without the plugin, the stock mlir-opt does not know the pass.
// RUN: not %mlir_opt --pass-pipeline='builtin.module(llm-fuse)' %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: 'llm-fuse' does not refer to a registered pass or pass pipeline

func.func @softmax_like(%x: tensor<8x16xf32>, %init: tensor<8xf32>) -> tensor<8x16xf32> {
  %max = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %empty = tensor.empty() : tensor<8x16xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<8x16xf32>, tensor<8xf32>) outs(%empty : tensor<8x16xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<8x16xf32>
  return %out : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @softmax_like
// CHECK:         call @[[SG:sg_[0-9a-f]+]]
// CHECK:       func.func private @[[SG]]
// CHECK:         linalg.reduce
// CHECK:         math.exp

// DIAG: remark: llm-fuse: @[[SG:sg_[0-9a-f]+]] (reduction): kept original ops: provider=none
// DIAG: summary: 1 subgraph(s), 0 swapped, 1 kept

// REPORT: "provider": "none"
// REPORT: "subgraphs": [
// REPORT:   "class": "reduction"
// REPORT:   "decision": "kept"
// REPORT:   "reason": "no-provider"
