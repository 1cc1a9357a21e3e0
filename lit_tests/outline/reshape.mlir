// Unit-dim reshapes are free: they join the group next to them (and do not
// count against the cap). Reshapes that move non-unit dimensions are left
// in place with a remark.
// RUN: %llm_fuse_opt --llm-fuse-outline -verify-diagnostics %s | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#rowb = affine_map<(i, j) -> (i, 0)>

// Row max kept as [8, 1] (TOSA's keepdims), then x - max: one group, whose
// only input is x.
// CHECK-LABEL: func.func @keepdims(
// CHECK-NEXT:    call @[[F:sg_[0-9a-f]+]](%arg0) :
// CHECK-NEXT:    return
func.func @keepdims(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8xf32>
  // expected-remark @+1 {{outlined reduction subgraph}}
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %mx = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %mx2 = tensor.expand_shape %mx [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
  %ee = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #rowb, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mx2 : tensor<8x16xf32>, tensor<8x1xf32>) outs(%ee : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// Splitting 16 into 4x4 moves a non-unit dimension: left alone; the
// elementwise op after it is a group of its own.
// CHECK-LABEL: func.func @split(
// CHECK-NEXT:    %[[R:.*]] = tensor.expand_shape %arg0
// CHECK-NEXT:    call @{{sg_[0-9a-f]+}}(%[[R]])
func.func @split(%x: tensor<8x16xf32>) -> tensor<8x4x4xf32> {
  // expected-remark @+1 {{op not handled by the partitioner: left in place}}
  %r = tensor.expand_shape %x [[0], [1, 2]] output_shape [8, 4, 4] : tensor<8x16xf32> into tensor<8x4x4xf32>
  %e = tensor.empty() : tensor<8x4x4xf32>
  // expected-remark @+1 {{outlined elementwise subgraph}}
  %n = linalg.negf ins(%r : tensor<8x4x4xf32>) outs(%e : tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
  return %n : tensor<8x4x4xf32>
}

// The outlined functions follow the public ones.
// CHECK:       func.func private @[[F]](%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> attributes {llm_fuse.class = "reduction"
// CHECK:         linalg.reduce
// CHECK:         tensor.expand_shape
// CHECK:         linalg.generic
