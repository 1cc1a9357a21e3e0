// Rule 0 negatives: ops the partitioner does not handle, unregistered ops and
// unsupported element types are left in place with a located remark; the
// rest of the function is still partitioned.
// RUN: %llm_fuse_opt --allow-unregistered-dialect --llm-fuse-outline -verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @conv(
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         call @sg_
func.func @conv(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> {
  %e = tensor.empty() : tensor<1x6x6x4xf32>
  // expected-remark @+1 {{op not handled by the partitioner: left in place}}
  %c = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) outs(%e : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  // expected-remark @+1 {{outlined elementwise subgraph}}
  %r = linalg.exp ins(%c : tensor<1x6x6x4xf32>) outs(%e : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  return %r : tensor<1x6x6x4xf32>
}

// CHECK-LABEL: func.func @unregistered(
// CHECK:         "acme.mystery"
// CHECK-NOT:     call
func.func @unregistered(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-remark @+1 {{unregistered op: left in place}}
  %r = "acme.mystery"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @complex_type(
// CHECK:         linalg.generic
// CHECK-NOT:     call
#v = affine_map<(i) -> (i)>
func.func @complex_type(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  %e = tensor.empty() : tensor<8xcomplex<f32>>
  // expected-remark @+1 {{unsupported element type in tensor<8xcomplex<f32>>}}
  %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%x : tensor<8xcomplex<f32>>) outs(%e : tensor<8xcomplex<f32>>) {
  ^bb0(%a: complex<f32>, %o: complex<f32>):
    %s = complex.add %a, %a : complex<f32>
    linalg.yield %s : complex<f32>
  } -> tensor<8xcomplex<f32>>
  return %r : tensor<8xcomplex<f32>>
}

// CHECK-LABEL: func.func @fp8(
// CHECK-NOT:     call
func.func @fp8(%x: tensor<8xf8E4M3FN>) -> tensor<8xf8E4M3FN> {
  // expected-remark @+1 {{unsupported element type in tensor<8xf8E4M3FN>}}
  %r = arith.addf %x, %x : tensor<8xf8E4M3FN>
  return %r : tensor<8xf8E4M3FN>
}
