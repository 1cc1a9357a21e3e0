// Row max in f32 (16384 rows of 8192), the benchmark suite's max
// reduction (issue 8); NaN propagates (arith.maximumf):
//   y[i] = max_j x[i, j]   (from -inf)
// x: 16384x8192xf32 -> y: 16384xf32.
func.func @rowmax(%x: tensor<16384x8192xf32>) -> tensor<16384xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<16384xf32>
  %acc = linalg.fill ins(%ninf : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  %m = linalg.reduce ins(%x : tensor<16384x8192xf32>)
                     outs(%acc : tensor<16384xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %r = arith.maximumf %in, %a : f32
      linalg.yield %r : f32
    }
  return %m : tensor<16384xf32>
}
