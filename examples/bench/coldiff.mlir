// Column sum of a difference in f32 (8192 rows of 3072), `(x - y).sum(0)`
// (e.g. an error summed over the batch): an elementwise generic feeding
// the reduction over the rows, one subgraph (issue 15, leading-dimension
// reductions):
//   s[j] = sum_i (x[i, j] - y[i, j])
// x, y: 8192x3072xf32 -> s: 3072xf32.
func.func @coldiff(%x: tensor<8192x3072xf32>, %y: tensor<8192x3072xf32>) -> tensor<3072xf32> {
  %zero = arith.constant 0.0 : f32
  %ed = tensor.empty() : tensor<8192x3072xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<8192x3072xf32>, tensor<8192x3072xf32>)
      outs(%ed : tensor<8192x3072xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %t = arith.subf %a, %b : f32
      linalg.yield %t : f32
  } -> tensor<8192x3072xf32>
  %e = tensor.empty() : tensor<3072xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3072xf32>) -> tensor<3072xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%d : tensor<8192x3072xf32>) outs(%acc : tensor<3072xf32>) {
    ^bb0(%in: f32, %a: f32):
      %r = arith.addf %in, %a : f32
      linalg.yield %r : f32
  } -> tensor<3072xf32>
  return %s : tensor<3072xf32>
}
