// Row sum in f32 (16384 rows of 8192), the benchmark suite's plain
// reduction (issue 8):
//   y[i] = sum_j x[i, j]
// x: 16384x8192xf32 -> y: 16384xf32.
func.func @rowsum(%x: tensor<16384x8192xf32>) -> tensor<16384xf32> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<16384xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16384xf32>)
      -> tensor<16384xf32>
  %s = linalg.reduce ins(%x : tensor<16384x8192xf32>)
                     outs(%acc : tensor<16384xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %r = arith.addf %in, %a : f32
      linalg.yield %r : f32
    }
  return %s : tensor<16384xf32>
}
