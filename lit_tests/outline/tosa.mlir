// TOSA input is imported with the upstream tosa-to-linalg passes inside the
// pass, then partitioned like linalg.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false' %s | FileCheck %s
// RUN: %mlir_opt --load-pass-plugin=%plugin --pass-pipeline='builtin.module(llm-fuse-outline{remarks=false})' %s | FileCheck %s

// CHECK-LABEL: func.func @tosa_gelu_like(
// CHECK-NOT:     tosa.
// CHECK:         call @[[SG:sg_[0-9a-f]+]](
// CHECK:       func.func private @[[SG]]
// CHECK-SAME:    llm_fuse.class = "elementwise"
// CHECK:         math.tanh
func.func @tosa_gelu_like(%x: tensor<16x64xf32>, %y: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %a = tosa.add %x, %y : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %t = tosa.tanh %a : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %s = tosa.add %t, %x : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  return %s : tensor<16x64xf32>
}
