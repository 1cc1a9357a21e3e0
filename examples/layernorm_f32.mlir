// LayerNorm in f32 (4096 rows, hidden 16384), written the way a framework
// decomposes it: named reductions, explicit broadcasts (linalg.broadcast)
// and named elementwise ops (linalg.sub/mul/add), in exact f32:
//   mu = mean(x), var = mean((x - mu)^2), y = (x - mu) * rsqrt(var + 1e-5) * gamma + beta
// x: 4096x16384xf32, gamma, beta: 16384xf32 -> y: 4096x16384xf32.
#vec = affine_map<(i) -> (i)>
func.func @layernorm_f32(%x: tensor<4096x16384xf32>, %gamma: tensor<16384xf32>,
                         %beta: tensor<16384xf32>) -> tensor<4096x16384xf32> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<4096xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<4096xf32>)
      -> tensor<4096xf32>
  %em = tensor.empty() : tensor<4096x16384xf32>
  // mu = sum(x) / 16384
  %sum = linalg.reduce ins(%x : tensor<4096x16384xf32>)
                       outs(%acc : tensor<4096xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %mu = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sum : tensor<4096xf32>) outs(%es : tensor<4096xf32>) {
  ^bb0(%s: f32, %out: f32):
    %n = arith.constant 16384.0 : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<4096xf32>
  %mub = linalg.broadcast ins(%mu : tensor<4096xf32>)
                          outs(%em : tensor<4096x16384xf32>) dimensions = [1]
  %xc = linalg.sub ins(%x, %mub : tensor<4096x16384xf32>, tensor<4096x16384xf32>)
                   outs(%em : tensor<4096x16384xf32>) -> tensor<4096x16384xf32>
  // var = sum(xc^2) / 16384
  %xc2 = linalg.mul ins(%xc, %xc : tensor<4096x16384xf32>, tensor<4096x16384xf32>)
                    outs(%em : tensor<4096x16384xf32>) -> tensor<4096x16384xf32>
  %ssq = linalg.reduce ins(%xc2 : tensor<4096x16384xf32>)
                       outs(%acc : tensor<4096xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %rstd = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%ssq : tensor<4096xf32>) outs(%es : tensor<4096xf32>) {
  ^bb0(%s: f32, %out: f32):
    %n = arith.constant 16384.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<4096xf32>
  %rb = linalg.broadcast ins(%rstd : tensor<4096xf32>)
                         outs(%em : tensor<4096x16384xf32>) dimensions = [1]
  %nrm = linalg.mul ins(%xc, %rb : tensor<4096x16384xf32>, tensor<4096x16384xf32>)
                    outs(%em : tensor<4096x16384xf32>) -> tensor<4096x16384xf32>
  // affine: * gamma + beta (broadcast along rows)
  %gb = linalg.broadcast ins(%gamma : tensor<16384xf32>)
                         outs(%em : tensor<4096x16384xf32>) dimensions = [0]
  %bb = linalg.broadcast ins(%beta : tensor<16384xf32>)
                         outs(%em : tensor<4096x16384xf32>) dimensions = [0]
  %sc = linalg.mul ins(%nrm, %gb : tensor<4096x16384xf32>, tensor<4096x16384xf32>)
                   outs(%em : tensor<4096x16384xf32>) -> tensor<4096x16384xf32>
  %y = linalg.add ins(%sc, %bb : tensor<4096x16384xf32>, tensor<4096x16384xf32>)
                  outs(%em : tensor<4096x16384xf32>) -> tensor<4096x16384xf32>
  return %y : tensor<4096x16384xf32>
}
