// The MLP down-projection of examples/mlp_block.mlir at 256 rows:
// y = x + (h W + b), f32 accumulation, bf16 in and out
// (lit_tests/table/gemm-splitk.test; bench/tma/splitk_bench.py times it).
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @down(%h: tensor<256x3072xbf16>, %w2: tensor<3072x768xbf16>, %b2: tensor<768xbf16>,
                %x: tensor<256x768xbf16>) -> tensor<256x768xbf16> {
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<256x768xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<256x768xf32>) -> tensor<256x768xf32>
  %mm2 = linalg.matmul ins(%h, %w2 : tensor<256x3072xbf16>, tensor<3072x768xbf16>)
                       outs(%acc2 : tensor<256x768xf32>) -> tensor<256x768xf32>
  %ey = tensor.empty() : tensor<256x768xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %b2, %x : tensor<256x768xf32>, tensor<768xbf16>, tensor<256x768xbf16>)
      outs(%ey : tensor<256x768xbf16>) {
  ^bb0(%v: f32, %b: bf16, %r: bf16, %out: bf16):
    %bf = arith.extf %b : bf16 to f32
    %rf = arith.extf %r : bf16 to f32
    %s = arith.addf %v, %bf : f32
    %t = arith.addf %s, %rf : f32
    %tb = arith.truncf %t : f32 to bf16
    linalg.yield %tb : bf16
  } -> tensor<256x768xbf16>
  return %y : tensor<256x768xbf16>
}
