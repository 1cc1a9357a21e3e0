// MiniGPT (GPT-2 small) pre-LN transformer block in f32: batch 1 (folded
// away), sequence 1024, hidden 768, 12 heads of 64, MLP width 3072.
//   a = x  + attn(LN1(x)) Wo + bo       (causal multi-head self-attention)
//   y = a  + gelu_tanh(LN2(a) Wfc + bfc) Wpr + bpr
// x: 1024x768xf32 -> y: 1024x768xf32; weights as in the signature.
// Heads are split with tensor.extract_slice + tensor.expand_shape +
// linalg.transpose; scores are scaled by 0.125 = 1/sqrt(64) and masked with
// linalg.index comparisons; softmax is reduce-max, exp, reduce-sum, divide.
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (i)>
#col2 = affine_map<(i, j) -> (j)>
#id3 = affine_map<(h, i, j) -> (h, i, j)>
#row3 = affine_map<(h, i, j) -> (h, i)>
func.func @minigpt_block(%x: tensor<1024x768xf32>,
    %ln1_g: tensor<768xf32>, %ln1_b: tensor<768xf32>,
    %w_qkv: tensor<768x2304xf32>, %b_qkv: tensor<2304xf32>,
    %w_o: tensor<768x768xf32>, %b_o: tensor<768xf32>,
    %ln2_g: tensor<768xf32>, %ln2_b: tensor<768xf32>,
    %w_fc: tensor<768x3072xf32>, %b_fc: tensor<3072xf32>,
    %w_pr: tensor<3072x768xf32>, %b_pr: tensor<768xf32>)
    -> tensor<1024x768xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<1024xf32>)
      -> tensor<1024xf32>
  %ed = tensor.empty() : tensor<1024x768xf32>
  %accd = linalg.fill ins(%zero : f32) outs(%ed : tensor<1024x768xf32>)
      -> tensor<1024x768xf32>

  // ---- LayerNorm 1 (two-pass) ----
  %sum1 = linalg.reduce ins(%x : tensor<1024x768xf32>)
                        outs(%acc : tensor<1024xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %sq1 = linalg.generic {indexing_maps = [#id2, #row2, #row2],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x, %sum1 : tensor<1024x768xf32>, tensor<1024xf32>)
      outs(%acc : tensor<1024xf32>) {
  ^bb0(%v: f32, %s: f32, %a: f32):
    %n = arith.constant 768.0 : f32
    %m = arith.divf %s, %n : f32
    %d = arith.subf %v, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %a : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %xn = linalg.generic {indexing_maps = [#id2, #row2, #row2, #col2, #col2, #id2],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum1, %sq1, %ln1_g, %ln1_b
          : tensor<1024x768xf32>, tensor<1024xf32>, tensor<1024xf32>,
            tensor<768xf32>, tensor<768xf32>)
      outs(%ed : tensor<1024x768xf32>) {
  ^bb0(%v: f32, %s: f32, %q: f32, %g: f32, %b: f32, %out: f32):
    %n = arith.constant 768.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %m = arith.divf %s, %n : f32
    %var = arith.divf %q, %n : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    %d = arith.subf %v, %m : f32
    %nr = arith.mulf %d, %rs : f32
    %sc = arith.mulf %nr, %g : f32
    %o = arith.addf %sc, %b : f32
    linalg.yield %o : f32
  } -> tensor<1024x768xf32>

  // ---- QKV projection ----
  %eqkv = tensor.empty() : tensor<1024x2304xf32>
  %accqkv = linalg.fill ins(%zero : f32) outs(%eqkv : tensor<1024x2304xf32>)
      -> tensor<1024x2304xf32>
  %mmqkv = linalg.matmul ins(%xn, %w_qkv : tensor<1024x768xf32>, tensor<768x2304xf32>)
                         outs(%accqkv : tensor<1024x2304xf32>) -> tensor<1024x2304xf32>
  %qkv = linalg.generic {indexing_maps = [#id2, #col2, #id2],
                         iterator_types = ["parallel", "parallel"]}
      ins(%mmqkv, %b_qkv : tensor<1024x2304xf32>, tensor<2304xf32>)
      outs(%eqkv : tensor<1024x2304xf32>) {
  ^bb0(%v: f32, %b: f32, %out: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<1024x2304xf32>

  // ---- split into heads: [1024, 768] -> [1024, 12, 64] -> [12, 1024, 64] ----
  %q2 = tensor.extract_slice %qkv[0, 0] [1024, 768] [1, 1]
      : tensor<1024x2304xf32> to tensor<1024x768xf32>
  %k2 = tensor.extract_slice %qkv[0, 768] [1024, 768] [1, 1]
      : tensor<1024x2304xf32> to tensor<1024x768xf32>
  %v2 = tensor.extract_slice %qkv[0, 1536] [1024, 768] [1, 1]
      : tensor<1024x2304xf32> to tensor<1024x768xf32>
  %q3 = tensor.expand_shape %q2 [[0], [1, 2]] output_shape [1024, 12, 64]
      : tensor<1024x768xf32> into tensor<1024x12x64xf32>
  %k3 = tensor.expand_shape %k2 [[0], [1, 2]] output_shape [1024, 12, 64]
      : tensor<1024x768xf32> into tensor<1024x12x64xf32>
  %v3 = tensor.expand_shape %v2 [[0], [1, 2]] output_shape [1024, 12, 64]
      : tensor<1024x768xf32> into tensor<1024x12x64xf32>
  %eh = tensor.empty() : tensor<12x1024x64xf32>
  %q = linalg.transpose ins(%q3 : tensor<1024x12x64xf32>)
                        outs(%eh : tensor<12x1024x64xf32>) permutation = [1, 0, 2]
  %ekt = tensor.empty() : tensor<12x64x1024xf32>
  %kt = linalg.transpose ins(%k3 : tensor<1024x12x64xf32>)
                         outs(%ekt : tensor<12x64x1024xf32>) permutation = [1, 2, 0]
  %v = linalg.transpose ins(%v3 : tensor<1024x12x64xf32>)
                        outs(%eh : tensor<12x1024x64xf32>) permutation = [1, 0, 2]

  // ---- causal attention ----
  %ess = tensor.empty() : tensor<12x1024x1024xf32>
  %accs = linalg.fill ins(%zero : f32) outs(%ess : tensor<12x1024x1024xf32>)
      -> tensor<12x1024x1024xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<12x1024x64xf32>, tensor<12x64x1024xf32>)
                           outs(%accs : tensor<12x1024x1024xf32>) -> tensor<12x1024x1024xf32>
  // scale by 1/sqrt(64) and mask out the future (key j > query i)
  %sm = linalg.generic {indexing_maps = [#id3, #id3],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<12x1024x1024xf32>) outs(%ess : tensor<12x1024x1024xf32>) {
  ^bb0(%v0: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.125 : f32
    %masked = arith.constant 0xFF800000 : f32
    %sc = arith.mulf %v0, %scale : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %masked, %sc : f32
    linalg.yield %r : f32
  } -> tensor<12x1024x1024xf32>
  %ehs = tensor.empty() : tensor<12x1024xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%ehs : tensor<12x1024xf32>)
      -> tensor<12x1024xf32>
  %mx = linalg.reduce ins(%sm : tensor<12x1024x1024xf32>)
                      outs(%minit : tensor<12x1024xf32>) dimensions = [2]
    (%in: f32, %a: f32) {
      %m = arith.maximumf %in, %a : f32
      linalg.yield %m : f32
    }
  %ex = linalg.generic {indexing_maps = [#id3, #row3, #id3],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sm, %mx : tensor<12x1024x1024xf32>, tensor<12x1024xf32>)
      outs(%ess : tensor<12x1024x1024xf32>) {
  ^bb0(%v0: f32, %m: f32, %out: f32):
    %d = arith.subf %v0, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<12x1024x1024xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%ehs : tensor<12x1024xf32>)
      -> tensor<12x1024xf32>
  %den = linalg.reduce ins(%ex : tensor<12x1024x1024xf32>)
                       outs(%sinit : tensor<12x1024xf32>) dimensions = [2]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  %p = linalg.generic {indexing_maps = [#id3, #row3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %den : tensor<12x1024x1024xf32>, tensor<12x1024xf32>)
      outs(%ess : tensor<12x1024x1024xf32>) {
  ^bb0(%e: f32, %dn: f32, %out: f32):
    %r = arith.divf %e, %dn : f32
    linalg.yield %r : f32
  } -> tensor<12x1024x1024xf32>
  %acco = linalg.fill ins(%zero : f32) outs(%eh : tensor<12x1024x64xf32>)
      -> tensor<12x1024x64xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<12x1024x1024xf32>, tensor<12x1024x64xf32>)
                           outs(%acco : tensor<12x1024x64xf32>) -> tensor<12x1024x64xf32>

  // ---- merge heads: [12, 1024, 64] -> [1024, 12, 64] -> [1024, 768] ----
  %em = tensor.empty() : tensor<1024x12x64xf32>
  %om = linalg.transpose ins(%o : tensor<12x1024x64xf32>)
                         outs(%em : tensor<1024x12x64xf32>) permutation = [1, 0, 2]
  %o2 = tensor.collapse_shape %om [[0], [1, 2]]
      : tensor<1024x12x64xf32> into tensor<1024x768xf32>

  // ---- output projection + bias + residual ----
  %mmo = linalg.matmul ins(%o2, %w_o : tensor<1024x768xf32>, tensor<768x768xf32>)
                       outs(%accd : tensor<1024x768xf32>) -> tensor<1024x768xf32>
  %h = linalg.generic {indexing_maps = [#id2, #col2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mmo, %b_o, %x : tensor<1024x768xf32>, tensor<768xf32>, tensor<1024x768xf32>)
      outs(%ed : tensor<1024x768xf32>) {
  ^bb0(%v0: f32, %b: f32, %r: f32, %out: f32):
    %t = arith.addf %v0, %b : f32
    %u = arith.addf %t, %r : f32
    linalg.yield %u : f32
  } -> tensor<1024x768xf32>

  // ---- LayerNorm 2 ----
  %sum2 = linalg.reduce ins(%h : tensor<1024x768xf32>)
                        outs(%acc : tensor<1024xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  %sq2 = linalg.generic {indexing_maps = [#id2, #row2, #row2],
                         iterator_types = ["parallel", "reduction"]}
      ins(%h, %sum2 : tensor<1024x768xf32>, tensor<1024xf32>)
      outs(%acc : tensor<1024xf32>) {
  ^bb0(%v0: f32, %s0: f32, %a: f32):
    %n = arith.constant 768.0 : f32
    %m = arith.divf %s0, %n : f32
    %d = arith.subf %v0, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %r = arith.addf %d2, %a : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %hn = linalg.generic {indexing_maps = [#id2, #row2, #row2, #col2, #col2, #id2],
                        iterator_types = ["parallel", "parallel"]}
      ins(%h, %sum2, %sq2, %ln2_g, %ln2_b
          : tensor<1024x768xf32>, tensor<1024xf32>, tensor<1024xf32>,
            tensor<768xf32>, tensor<768xf32>)
      outs(%ed : tensor<1024x768xf32>) {
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
  } -> tensor<1024x768xf32>

  // ---- MLP: gelu_tanh(hn Wfc + bfc) Wpr + bpr, plus residual ----
  %ef = tensor.empty() : tensor<1024x3072xf32>
  %accf = linalg.fill ins(%zero : f32) outs(%ef : tensor<1024x3072xf32>)
      -> tensor<1024x3072xf32>
  %mmf = linalg.matmul ins(%hn, %w_fc : tensor<1024x768xf32>, tensor<768x3072xf32>)
                       outs(%accf : tensor<1024x3072xf32>) -> tensor<1024x3072xf32>
  %g = linalg.generic {indexing_maps = [#id2, #col2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mmf, %b_fc : tensor<1024x3072xf32>, tensor<3072xf32>)
      outs(%ef : tensor<1024x3072xf32>) {
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
  } -> tensor<1024x3072xf32>
  %mmp = linalg.matmul ins(%g, %w_pr : tensor<1024x3072xf32>, tensor<3072x768xf32>)
                       outs(%accd : tensor<1024x768xf32>) -> tensor<1024x768xf32>
  %y = linalg.generic {indexing_maps = [#id2, #col2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mmp, %b_pr, %h : tensor<1024x768xf32>, tensor<768xf32>, tensor<1024x768xf32>)
      outs(%ed : tensor<1024x768xf32>) {
  ^bb0(%v0: f32, %b: f32, %r: f32, %out: f32):
    %t = arith.addf %v0, %b : f32
    %u = arith.addf %t, %r : f32
    linalg.yield %u : f32
  } -> tensor<1024x768xf32>
  return %y : tensor<1024x768xf32>
}
