// The subgraphs of the bad-kernel corpus: small, with odd sizes, one of
// each class the corpus needs (elementwise, row reduction, contraction).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @ew(%a: tensor<1000x257xf32>, %b: tensor<1000x257xf32>) -> tensor<1000x257xf32> {
  %e = tensor.empty() : tensor<1000x257xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<1000x257xf32>, tensor<1000x257xf32>)
      outs(%e : tensor<1000x257xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %x : f32
    linalg.yield %s : f32
  } -> tensor<1000x257xf32>
  return %r : tensor<1000x257xf32>
}
func.func @rowsum(%a: tensor<512x1000xf32>) -> tensor<512xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<512xf32>) -> tensor<512xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<512x1000xf32>) outs(%f : tensor<512xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  return %r : tensor<512xf32>
}
func.func @mm(%a: tensor<128x256xf32>, %b: tensor<256x96xf32>) -> tensor<128x96xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x96xf32>) -> tensor<128x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x256xf32>, tensor<256x96xf32>)
                     outs(%f : tensor<128x96xf32>) -> tensor<128x96xf32>
  return %r : tensor<128x96xf32>
}
