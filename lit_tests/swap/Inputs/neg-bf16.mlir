// A bf16 elementwise subgraph of signature (tensor<256x256xbf16>) ->
// tensor<256x256xbf16>: the host side of a swap with a tensor map is tested
// on it (lit_tests/swap/swap-tensor-map.test).
func.func @neg(%a: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %0 = tensor.empty() : tensor<256x256xbf16>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<256x256xbf16>) outs(%0 : tensor<256x256xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %2 = arith.negf %in : bf16
    linalg.yield %2 : bf16
  } -> tensor<256x256xbf16>
  return %1 : tensor<256x256xbf16>
}
