// GELU (tanh approximation) with x^3 as math.fpowi with an i64 exponent,
// as torch-mlir writes it (examples/importer/minigpt_torch_mlir.mlir).
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @gelu(%x: tensor<128x1024xf32>) -> tensor<128x1024xf32> {
  %c3 = arith.constant 3 : i64
  %half = arith.constant 5.000000e-01 : f32
  %one = arith.constant 1.000000e+00 : f32
  %k = arith.constant 0.797884583 : f32
  %a = arith.constant 4.471500e-02 : f32
  %e = tensor.empty() : tensor<128x1024xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<128x1024xf32>) outs(%e : tensor<128x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.fpowi %in, %c3 : f32, i64
    %0 = arith.mulf %p, %a : f32
    %1 = arith.addf %in, %0 : f32
    %2 = arith.mulf %1, %k : f32
    %3 = math.tanh %2 : f32
    %4 = arith.addf %3, %one : f32
    %5 = arith.mulf %4, %half : f32
    %6 = arith.mulf %in, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<128x1024xf32>
  return %y : tensor<128x1024xf32>
}
