// An unseen model for the closed loop with a real model: a bf16 row
// softmax over 6000 rows of 1000 logits (f32 inside), a row length that is
// no power of two.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @softmax_6000x1000(%x: tensor<6000x1000xbf16>) -> tensor<6000x1000xbf16> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<6000xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%es : tensor<6000xf32>)
      -> tensor<6000xf32>
  %max = linalg.reduce ins(%x : tensor<6000x1000xbf16>)
                       outs(%minit : tensor<6000xf32>) dimensions = [1]
    (%in: bf16, %a: f32) {
      %f = arith.extf %in : bf16 to f32
      %m = arith.maximumf %f, %a : f32
      linalg.yield %m : f32
    }
  %ee = tensor.empty() : tensor<6000x1000xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<6000x1000xbf16>, tensor<6000xf32>)
      outs(%ee : tensor<6000x1000xf32>) {
  ^bb0(%v: bf16, %m: f32, %out: f32):
    %f = arith.extf %v : bf16 to f32
    %d = arith.subf %f, %m : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<6000x1000xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%es : tensor<6000xf32>)
      -> tensor<6000xf32>
  %sum = linalg.reduce ins(%e : tensor<6000x1000xf32>)
                       outs(%sinit : tensor<6000xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %ey = tensor.empty() : tensor<6000x1000xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%e, %sum : tensor<6000x1000xf32>, tensor<6000xf32>)
      outs(%ey : tensor<6000x1000xbf16>) {
  ^bb0(%v: f32, %s: f32, %out: bf16):
    %q = arith.divf %v, %s : f32
    %qb = arith.truncf %q : f32 to bf16
    linalg.yield %qb : bf16
  } -> tensor<6000x1000xbf16>
  return %y : tensor<6000x1000xbf16>
}
