// Rule 0: a linalg.generic with reduction loops is a contraction only when
// it multiplies two different inputs that both vary along a reduction loop;
// a sum of squares or a row-scaled sum is a reduction.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false' %s | FileCheck %s

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, k) -> (i, k)>
#row = affine_map<(i, k) -> (i)>
#col = affine_map<(i, k) -> (k)>

// CHECK-LABEL: func.func private @sg_{{.*}}(%arg0: tensor<8x16xf32>, %arg1: tensor<16x4xf32>) -> tensor<8x4xf32> attributes {llm_fuse.class = "contraction"
func.func @matmul_generic(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// A matrix-vector product (bf16 inputs widened to f32) is a contraction too.
// CHECK-LABEL: func.func private @sg_{{.*}}(%arg0: tensor<8x16xbf16>, %arg1: tensor<16xbf16>) -> tensor<8xf32> attributes {llm_fuse.class = "contraction"
func.func @matvec_generic(%a: tensor<8x16xbf16>, %w: tensor<16xbf16>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a, %w : tensor<8x16xbf16>, tensor<16xbf16>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// Sum of squares: one input multiplied by itself.
// CHECK-LABEL: func.func private @sg_{{.*}}(%arg0: tensor<8x16xf32>) -> tensor<8xf32> attributes {llm_fuse.class = "reduction"
func.func @sum_of_squares(%a: tensor<8x16xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x16xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %p = arith.mulf %x, %x : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// A row value times the row: the second input does not vary along k.
// CHECK-LABEL: func.func private @sg_{{.*}}(%arg0: tensor<8x16xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> attributes {llm_fuse.class = "reduction"
func.func @row_scaled_sum(%a: tensor<8x16xf32>, %s: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a, %s : tensor<8x16xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %t = arith.addf %p, %acc : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
