// The subgraph the tiny TMA kernel (lit_tests/builder/Inputs/ok-tma-copy.mlir)
// computes: a 256x256 bf16 identity (max(x, x) = x, NaN included), so that
// the verification worker has a reference to judge the TMA copy by.
// bench/tma/tma-device.sh verifies the kernel against it; bench/tma/prepare.sh
// swaps the kernel into it and compiles it ahead of time.
func.func @copy(%a: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %0 = tensor.empty() : tensor<256x256xbf16>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<256x256xbf16>) outs(%0 : tensor<256x256xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %2 = arith.maximumf %in, %in : bf16
    linalg.yield %2 : bf16
  } -> tensor<256x256xbf16>
  return %1 : tensor<256x256xbf16>
}
