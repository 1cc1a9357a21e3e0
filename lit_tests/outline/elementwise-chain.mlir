// Rule 4: elementwise ops outside any root's group form chains of their own,
// connected through same-shape producers and consumers; a change of
// iteration space (a broadcast to a bigger shape consumed by a non-cheap op
// here, a different shape) starts a new chain. Arith/math ops on whole
// tensors count as elementwise.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o %t.mlir
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// CHECK: gelu_like: elementwise [arith.mulf math.tanh arith.addf arith.mulf] in=1 out=1
// IR-LABEL: func.func @gelu_like(
// IR-NEXT:    call @{{sg_[0-9a-f]+}}(%arg0)
// IR-NEXT:    return
func.func @gelu_like(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c = arith.constant dense<0.5> : tensor<8x16xf32>
  %a = arith.mulf %x, %c : tensor<8x16xf32>
  %t = math.tanh %a : tensor<8x16xf32>
  %s = arith.addf %t, %c : tensor<8x16xf32>
  %r = arith.mulf %s, %x : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// Two shapes: two chains.
// CHECK-NEXT: two_shapes: elementwise [math.exp] in=1 out=1
// CHECK-NEXT: two_shapes: elementwise [math.exp] in=1 out=1
// CHECK-NEXT: groups: 3
func.func @two_shapes(%x: tensor<8x16xf32>, %y: tensor<4xf32>) -> (tensor<8x16xf32>, tensor<4xf32>) {
  %a = math.exp %x : tensor<8x16xf32>
  %b = math.exp %y : tensor<4xf32>
  return %a, %b : tensor<8x16xf32>, tensor<4xf32>
}
