// The same subgraph in two functions (different SSA names, locations and a
// user annotation) gets the same fingerprint and shares one function; a
// change of shape, of type or of the math changes the fingerprint.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false' %s | FileCheck %s

#id = affine_map<(i) -> (i)>
// CHECK-LABEL: func.func @first
// CHECK:         call @[[SAME:sg_[0-9a-f]+]](
func.func @first(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}
// CHECK-LABEL: func.func @second
// CHECK:         call @[[SAME]](
func.func @second(%input: tensor<1024xf32>) -> tensor<1024xf32> {
  %init = tensor.empty() : tensor<1024xf32> loc("somewhere.py":3:4)
  %result = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], user.note = "mine"}
      ins(%input : tensor<1024xf32>) outs(%init : tensor<1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %th = math.tanh %in : f32
    linalg.yield %th : f32
  } -> tensor<1024xf32>
  return %result : tensor<1024xf32>
}
// CHECK-LABEL: func.func @other_shape
// CHECK-NOT:     call @[[SAME]](
// CHECK:         call @sg_
func.func @other_shape(%x: tensor<2048xf32>) -> tensor<2048xf32> {
  %e = tensor.empty() : tensor<2048xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<2048xf32>) outs(%e : tensor<2048xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2048xf32>
  return %y : tensor<2048xf32>
}
// CHECK-LABEL: func.func @other_type
// CHECK-NOT:     call @[[SAME]](
// CHECK:         call @sg_
func.func @other_type(%x: tensor<1024xf16>) -> tensor<1024xf16> {
  %e = tensor.empty() : tensor<1024xf16>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1024xf16>) outs(%e : tensor<1024xf16>) {
  ^bb0(%a: f16, %o: f16):
    %t = math.tanh %a : f16
    linalg.yield %t : f16
  } -> tensor<1024xf16>
  return %y : tensor<1024xf16>
}
// CHECK-LABEL: func.func @other_math
// CHECK-NOT:     call @[[SAME]](
// CHECK:         call @sg_
func.func @other_math(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}
// One shared function for @first and @second, plus three others.
// CHECK-COUNT-4: func.func private @sg_
// CHECK-NOT:     func.func private @sg_
