// The elementwise synthesizer (passes/synth_ew.c) on chains of rank 1 to 4:
// one gpu.func per subgraph, the cloned math in order, vector loads and
// stores where every operand is contiguous in the innermost dimension, a
// scalar load for an input broadcast along it, scalar code where the
// innermost size or a transpose forbids vectors; and refusals. Then the
// builder builds every kernel for sm_90 (PTX and cubin).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: %lf_obj/passes/lf_synth_tool %s --out-dir %t/k | FileCheck %s
// RUN: %lf_obj/passes/lf_synth_tool %s | FileCheck %s --check-prefix=REFUSED
// RUN: not ls %t/k/row_sum.mlir %t/k/dynamic.mlir
// RUN: %python %S/Inputs/build_all.py %t/k | FileCheck %s --check-prefix=BUILT

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col2 = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias3 = affine_map<(d0, d1, d2) -> (d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#lead4 = affine_map<(d0, d1, d2, d3) -> (d0)>

// Rank 1, f32, named ops (generalized first): 4 wide.
// CHECK-LABEL: // synth @rank1_f32: vector width 4, 2 generic(s), grid 4 x 256, 4096 elements
// CHECK: gpu.func @rank1_f32(%arg0: memref<4096xf32>, %arg1: memref<4096xf32>, %arg2: memref<4096xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>}
// CHECK: scf.for
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<4096xf32>, vector<4xf32>
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<4096xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.addf
// CHECK-COUNT-4: math.exp
// CHECK: vector.from_elements {{.*}} : vector<4xf32>
// CHECK: vector.store {{.*}}, %arg2[{{.*}}] {alignment = 16 : i64} : memref<4096xf32>, vector<4xf32>
// CHECK-NOT: gpu.func
func.func @rank1_f32(%x: tensor<4096xf32>, %y: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = tensor.empty() : tensor<4096xf32>
  %a = linalg.add ins(%x, %y : tensor<4096xf32>, tensor<4096xf32>) outs(%e : tensor<4096xf32>) -> tensor<4096xf32>
  %r = linalg.exp ins(%a : tensor<4096xf32>) outs(%e : tensor<4096xf32>) -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// Rank 2, bf16, a bias along the last dimension: 8 wide, the bias read as
// a vector too (contiguous in the innermost dimension).
// CHECK-LABEL: // synth @rank2_bf16_bias: vector width 8, 1 generic(s), grid 2 x 256, 4096 elements
// CHECK: vector.load %arg0[{{.*}}, {{.*}}] {alignment = 16 : i64} : memref<64x64xbf16>, vector<8xbf16>
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<64xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.addf {{.*}} : bf16
// CHECK: vector.store {{.*}} : memref<64x64xbf16>, vector<8xbf16>
func.func @rank2_bf16_bias(%x: tensor<64x64xbf16>, %b: tensor<64xbf16>) -> tensor<64x64xbf16> {
  %e = tensor.empty() : tensor<64x64xbf16>
  %r = linalg.generic {indexing_maps = [#id2, #col2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<64x64xbf16>, tensor<64xbf16>) outs(%e : tensor<64x64xbf16>) {
  ^bb0(%in: bf16, %bi: bf16, %out: bf16):
    %s = arith.addf %in, %bi : bf16
    linalg.yield %s : bf16
  } -> tensor<64x64xbf16>
  return %r : tensor<64x64xbf16>
}

// Rank 3 [B, T, C] as importers emit it: bias + GELU (erf) on a captured
// constant, times a per-row scale [B, T, 1] (broadcast along the last dim:
// one scalar load for the four lanes), then a cast to bf16 (stores of
// vector<4xbf16>).
// CHECK-LABEL: // synth @rank3_bias_gelu_scale: vector width 4, 4 generic(s), grid 32 x 256, 32768 elements
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: scf.for
// CHECK: vector.load %arg0{{.*}} : memref<2x64x256xf32>, vector<4xf32>
// CHECK: vector.load %arg1{{.*}} : memref<256xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.addf
// CHECK-COUNT-4: math.erf
// CHECK: arith.mulf {{.*}}, %[[HALF]] : f32
// CHECK: %[[S:.*]] = memref.load %arg2[{{.*}}, {{.*}}, %c0] : memref<2x64x1xf32>
// CHECK-COUNT-4: arith.mulf {{.*}}, %[[S]] : f32
// CHECK-COUNT-4: arith.truncf {{.*}} : f32 to bf16
// CHECK: vector.store {{.*}}, %arg3{{.*}} {alignment = 8 : i64} : memref<2x64x256xbf16>, vector<4xbf16>
func.func @rank3_bias_gelu_scale(%x: tensor<2x64x256xf32>, %b: tensor<256xf32>, %s: tensor<2x64x1xf32>) -> tensor<2x64x256xbf16> {
  %half = arith.constant 5.000000e-01 : f32
  %one = arith.constant 1.000000e+00 : f32
  %rs2 = arith.constant 0.707106769 : f32
  %e = tensor.empty() : tensor<2x64x256xf32>
  %0 = linalg.generic {indexing_maps = [#id3, #bias3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %b : tensor<2x64x256xf32>, tensor<256xf32>) outs(%e : tensor<2x64x256xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %a = arith.addf %in, %bi : f32
    linalg.yield %a : f32
  } -> tensor<2x64x256xf32>
  %1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<2x64x256xf32>) outs(%e : tensor<2x64x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %rs2 : f32
    %f = math.erf %m : f32
    %a = arith.addf %f, %one : f32
    %h = arith.mulf %in, %half : f32
    %g = arith.mulf %h, %a : f32
    linalg.yield %g : f32
  } -> tensor<2x64x256xf32>
  %2 = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %s : tensor<2x64x256xf32>, tensor<2x64x1xf32>) outs(%e : tensor<2x64x256xf32>) {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<2x64x256xf32>
  %eb = tensor.empty() : tensor<2x64x256xbf16>
  %3 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2 : tensor<2x64x256xf32>) outs(%eb : tensor<2x64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x64x256xbf16>
  return %3 : tensor<2x64x256xbf16>
}

// Rank 4, a chain of three generics with a per-batch scale along the
// leading dimension and two results (the chain's middle and its end): each
// generic's body is cloned once per lane, in order, and both results are
// stored.
// CHECK-LABEL: // synth @rank4_chain_two_results: vector width 4, 3 generic(s), grid 8 x 256, 8192 elements
// CHECK: %[[SC:.*]] = memref.load %arg1[{{.*}}] : memref<2xf32>
// CHECK-COUNT-4: arith.mulf {{.*}}, %[[SC]] : f32
// CHECK-COUNT-4: math.tanh
// CHECK: vector.store {{.*}}, %arg2{{.*}} : memref<2x4x32x32xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.subf
// CHECK: vector.store {{.*}}, %arg3{{.*}} : memref<2x4x32x32xf32>, vector<4xf32>
func.func @rank4_chain_two_results(%x: tensor<2x4x32x32xf32>, %s: tensor<2xf32>) -> (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  %e = tensor.empty() : tensor<2x4x32x32xf32>
  %0 = linalg.generic {indexing_maps = [#id4, #lead4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<2x4x32x32xf32>, tensor<2xf32>) outs(%e : tensor<2x4x32x32xf32>) {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<2x4x32x32xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<2x4x32x32xf32>) outs(%e : tensor<2x4x32x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<2x4x32x32xf32>
  %2 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<2x4x32x32xf32>) outs(%e : tensor<2x4x32x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.subf %one, %in : f32
    linalg.yield %d : f32
  } -> tensor<2x4x32x32xf32>
  return %1, %2 : tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>
}

// An innermost size of 7: no vector divides it, scalar loads and stores.
// CHECK-LABEL: // synth @odd_rows_scalar: vector width 1, 1 generic(s), grid 1 x 256, 56 elements
// CHECK-NOT: vector.
// CHECK: memref.load %arg0
// CHECK: math.exp
// CHECK: memref.store
// CHECK-NOT: vector.
// CHECK: gpu.return
func.func @odd_rows_scalar(%x: tensor<8x7xf32>) -> tensor<8x7xf32> {
  %r = math.exp %x : tensor<8x7xf32>
  return %r : tensor<8x7xf32>
}

// A transposed input is read across the innermost dimension: scalar.
// CHECK-LABEL: // synth @transpose_add_scalar: vector width 1, 2 generic(s)
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}] : memref<32x16xf32>
// CHECK: memref.load %arg1
// CHECK: arith.addf
// CHECK: memref.store
func.func @transpose_add_scalar(%x: tensor<32x16xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%x : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %r = arith.addf %t, %y : tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// Every kernel builds for sm_90, to PTX and a cubin; the vector kernels load
// 16 bytes at a time (ld.global.nc.v4.b32), the scalar ones do not.
// BUILT: odd_rows_scalar ok cubin v4-loads=0
// BUILT: rank1_f32 ok cubin v4-loads=2
// BUILT: rank2_bf16_bias ok cubin v4-loads=2
// BUILT: rank3_bias_gelu_scale ok cubin v4-loads=2
// BUILT: rank4_chain_two_results ok cubin v4-loads=1
// BUILT: transpose_add_scalar ok cubin v4-loads=0

// Refused, with the op and the reason; nothing is written for them.
// REFUSED: // synth @row_sum: refused: linalg.generic at "{{.*}}kernels.mlir":{{[0-9]+}}:{{[0-9]+}}: loop 1 is not parallel (a reduction): not elementwise
func.func @row_sum(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %z = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x16xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// REFUSED: // synth @dynamic: refused: input 0 has type tensor<?x16xf32>: {{.*}} (a dynamic shape)
func.func @dynamic(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %r = math.exp %x : tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
