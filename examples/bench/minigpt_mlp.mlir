// The MiniGPT MLP half at benchmark size (issue 8): the second half of
// examples/minigpt_block.mlir with 65536 tokens instead of 1024, in f32
// (hidden 768, MLP width 3072):
//   hn = LayerNorm(x) * g + b          (two-pass mean / variance, eps 1e-5)
//   y  = x + gelu_tanh(hn Wfc + bfc) Wpr + bpr
// x: 65536x768xf32 -> y: 65536x768xf32; weights as in the signature.
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (i)>
#col2 = affine_map<(i, j) -> (j)>
func.func @minigpt_mlp(%h: tensor<65536x768xf32>,
    %ln2_g: tensor<768xf32>, %ln2_b: tensor<768xf32>,
    %w_fc: tensor<768x3072xf32>, %b_fc: tensor<3072xf32>,
    %w_pr: tensor<3072x768xf32>, %b_pr: tensor<768xf32>)
    -> tensor<65536x768xf32> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<65536xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<65536xf32>)
      -> tensor<65536xf32>
  %ed = tensor.empty() : tensor<65536x768xf32>
  %accd = linalg.fill ins(%zero : f32) outs(%ed : tensor<65536x768xf32>)
      -> tensor<65536x768xf32>

  // ---- LayerNorm (two-pass) ----
  %sum2 = linalg.reduce ins(%h : tensor<65536x768xf32>)
                        outs(%acc : tensor<65536xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  %sq2 = linalg.generic {indexing_maps = [#id2, #row2, #row2],
                         iterator_types = ["parallel", "reduction"]}
      ins(%h, %sum2 : tensor<65536x768xf32>, tensor<65536xf32>)
      outs(%acc : tensor<65536xf32>) {
  ^bb0(%v0: f32, %s0: f32, %a: f32):
    %n = arith.constant 768.0 : f32
    %m = arith.divf %s0, %n : f32
    %d = arith.subf %v0, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %hn = linalg.generic {indexing_maps = [#id2, #row2, #row2, #col2, #col2, #id2],
                        iterator_types = ["parallel", "parallel"]}
      ins(%h, %sum2, %sq2, %ln2_g, %ln2_b
          : tensor<65536x768xf32>, tensor<65536xf32>, tensor<65536xf32>,
            tensor<768xf32>, tensor<768xf32>)
      outs(%ed : tensor<65536x768xf32>) {
  ^bb0(%v0: f32, %s0: f32, %q0: f32, %g: f32, %b: f32, %out: f32):
    %n = arith.constant 768.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %m = arith.divf %s0, %n : f32
    %var = arith.divf %q0, %n : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    %d = arith.subf %v0, %m : f32
    %nr = arith.mulf %d, %rs : f32
    %sc = arith.mulf %nr, %g : f32
    %o0 = arith.addf %sc, %b : f32
    linalg.yield %o0 : f32
  } -> tensor<65536x768xf32>

  // ---- MLP: gelu_tanh(hn Wfc + bfc) Wpr + bpr, plus residual ----
  %ef = tensor.empty() : tensor<65536x3072xf32>
  %accf = linalg.fill ins(%zero : f32) outs(%ef : tensor<65536x3072xf32>)
      -> tensor<65536x3072xf32>
  %mmf = linalg.matmul ins(%hn, %w_fc : tensor<65536x768xf32>, tensor<768x3072xf32>)
                       outs(%accf : tensor<65536x3072xf32>) -> tensor<65536x3072xf32>
  %g = linalg.generic {indexing_maps = [#id2, #col2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mmf, %b_fc : tensor<65536x3072xf32>, tensor<3072xf32>)
      outs(%ef : tensor<65536x3072xf32>) {
  ^bb0(%v0: f32, %b: f32, %out: f32):
    %c0 = arith.constant 0.5 : f32
    %c1 = arith.constant 1.0 : f32
    %c2 = arith.constant 0.7978845608028654 : f32
    %c3 = arith.constant 0.044715 : f32
    %t = arith.addf %v0, %b : f32
    %t2 = arith.mulf %t, %t : f32
    %t3 = arith.mulf %t2, %t : f32
    %a = arith.mulf %t3, %c3 : f32
    %inner = arith.addf %t, %a : f32
    %scaled = arith.mulf %inner, %c2 : f32
    %th = math.tanh %scaled : f32
    %one_plus = arith.addf %th, %c1 : f32
    %half_t = arith.mulf %t, %c0 : f32
    %r = arith.mulf %half_t, %one_plus : f32
    linalg.yield %r : f32
  } -> tensor<65536x3072xf32>
  %mmp = linalg.matmul ins(%g, %w_pr : tensor<65536x3072xf32>, tensor<3072x768xf32>)
                       outs(%accd : tensor<65536x768xf32>) -> tensor<65536x768xf32>
  %y = linalg.generic {indexing_maps = [#id2, #col2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mmp, %b_pr, %h : tensor<65536x768xf32>, tensor<768xf32>, tensor<65536x768xf32>)
      outs(%ed : tensor<65536x768xf32>) {
  ^bb0(%v0: f32, %b: f32, %r: f32, %out: f32):
    %t = arith.addf %v0, %b : f32
    %u = arith.addf %t, %r : f32
    linalg.yield %u : f32
  } -> tensor<65536x768xf32>
  return %y : tensor<65536x768xf32>
}
