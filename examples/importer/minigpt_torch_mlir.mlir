// MiniGPT (GPT-2) pre-LN transformer block in f32, written the way
// torch-mlir's torch-backend-to-linalg-on-tensors-backend-pipeline emits it
// for nanoGPT's `Block` (the same block as ../minigpt_block.mlir, at small
// sizes): batch 1, sequence 128, n_embd 256 = 4 heads of 64, MLP 1024.
//   h = x + c_proj(attn(ln_1(x)));  y = h + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(h))))
// x: 1x128x256xf32 -> y: 1x128x256xf32.
// What makes it importer-shaped (and unlike the hand-written block):
// - weights are constants, dense_resource as torch-mlir's fx importer names
//   them (torch_tensor_<shape>_torch.float32[_n]), in nn.Linear's [out, in]
//   layout, each transposed by a linalg.transpose in front of its matmul;
//   the blobs are left out to keep the file small (the file parses and
//   partitions without them; lowering the whole model would need them);
// - scalars are hoisted to the top by canonicalize and captured by the
//   generic bodies; one linalg.generic per aten op; broadcasts are indexing
//   maps with constant 0 for size-1 dimensions ((d0, d1, 0), (0, 0, d2, d3));
// - every Linear is view(128, C) -> matmul -> bias add -> view(1, 128, N):
//   tensor.collapse_shape/expand_shape around a rank-2 linalg.matmul;
// - QKV is one matmul split with tensor.extract_slice; heads are
//   tensor.expand_shape to [1, 128, 4, 64] and linalg.transpose to
//   [1, 4, 128, 64]; rank-4 matmuls are collapsed to [4, ...] for
//   linalg.batch_matmul and expanded back;
// - LayerNorm is decomposed (sum, /256, x - mean, square, sum, /256, + eps,
//   rsqrt, *, * weight, + bias), softmax is amax, sub, exp, sum, div, each
//   reduction a linalg.generic with a "reduction" iterator into a
//   linalg.fill-initialized [.., 1] (keepdim) output;
// - the causal mask comes from linalg.index (the triu of the mask buffer);
// - GELU (tanh approximation) is one generic with x^3 as math.fpowi.
// The text is the output of `mlir-opt --canonicalize --cse` (as the pipeline
// ends) on a hand-written lowering, with these comments added.
// How llm-fuse partitions it today: lit_tests/outline/importer-style.test,
// examples/README.md.
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map2 = affine_map<(d0, d1, d2) -> (d2)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d1)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module attributes {torch.debug_module_name = "Block"} {
  func.func @forward(%arg0: tensor<1x128x256xf32>) -> tensor<1x128x256xf32> {
    // Scalars and weights, hoisted to the function entry by canonicalize.
    %cst = arith.constant 5.000000e-01 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 0.797884583 : f32
    %cst_2 = arith.constant 4.471500e-02 : f32
    %c3_i64 = arith.constant 3 : i64
    %cst_3 = arith.constant 0.000000e+00 : f32
    %cst_4 = arith.constant 0xFF800000 : f32
    %cst_5 = arith.constant 2.560000e+02 : f32
    %cst_6 = arith.constant 9.99999974E-6 : f32
    %cst_7 = arith.constant 1.250000e-01 : f32
    %cst_8 = arith.constant dense_resource<torch_tensor_256_torch.float32> : tensor<256xf32>
    %cst_9 = arith.constant dense_resource<torch_tensor_256_torch.float32_1> : tensor<256xf32>
    %cst_10 = arith.constant dense_resource<torch_tensor_768_256_torch.float32> : tensor<768x256xf32>
    %cst_11 = arith.constant dense_resource<torch_tensor_768_torch.float32> : tensor<768xf32>
    %cst_12 = arith.constant dense_resource<torch_tensor_256_256_torch.float32> : tensor<256x256xf32>
    %cst_13 = arith.constant dense_resource<torch_tensor_256_torch.float32_2> : tensor<256xf32>
    %cst_14 = arith.constant dense_resource<torch_tensor_256_torch.float32_3> : tensor<256xf32>
    %cst_15 = arith.constant dense_resource<torch_tensor_256_torch.float32_4> : tensor<256xf32>
    %cst_16 = arith.constant dense_resource<torch_tensor_1024_256_torch.float32> : tensor<1024x256xf32>
    %cst_17 = arith.constant dense_resource<torch_tensor_1024_torch.float32> : tensor<1024xf32>
    %cst_18 = arith.constant dense_resource<torch_tensor_256_1024_torch.float32> : tensor<256x1024xf32>
    %cst_19 = arith.constant dense_resource<torch_tensor_256_torch.float32_5> : tensor<256xf32>
    // ---- ln_1: native_layer_norm decomposed; reductions keepdim: [1, 128, 1] ----
    %0 = tensor.empty() : tensor<1x128x1xf32>
    %1 = linalg.fill ins(%cst_3 : f32) outs(%0 : tensor<1x128x1xf32>) -> tensor<1x128x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<1x128x256xf32>) outs(%1 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %out : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.divf %in, %cst_5 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %4 = tensor.empty() : tensor<1x128x256xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %3 : tensor<1x128x256xf32>, tensor<1x128x1xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.subf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %5 : tensor<1x128x256xf32>, tensor<1x128x256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.mulf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%6 : tensor<1x128x256xf32>) outs(%1 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %out : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.divf %in, %cst_5 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %cst_6 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = math.rsqrt %in : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %10 : tensor<1x128x256xf32>, tensor<1x128x1xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.mulf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %12 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %cst_8 : tensor<1x128x256xf32>, tensor<256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.mulf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%12, %cst_9 : tensor<1x128x256xf32>, tensor<256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    // ---- c_attn: view(128, 256), x @ W^T + b (addmm), view(1, 128, 768) ----
    %14 = tensor.empty() : tensor<256x768xf32>
    %transposed = linalg.transpose ins(%cst_10 : tensor<768x256xf32>) outs(%14 : tensor<256x768xf32>) permutation = [1, 0] 
    %collapsed = tensor.collapse_shape %13 [[0, 1], [2]] : tensor<1x128x256xf32> into tensor<128x256xf32>
    %15 = tensor.empty() : tensor<128x768xf32>
    %16 = linalg.fill ins(%cst_3 : f32) outs(%15 : tensor<128x768xf32>) -> tensor<128x768xf32>
    %17 = linalg.matmul ins(%collapsed, %transposed : tensor<128x256xf32>, tensor<256x768xf32>) outs(%16 : tensor<128x768xf32>) -> tensor<128x768xf32>
    %18 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%17, %cst_11 : tensor<128x768xf32>, tensor<768xf32>) outs(%15 : tensor<128x768xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<128x768xf32>
    %expanded = tensor.expand_shape %18 [[0, 1], [2]] output_shape [1, 128, 768] : tensor<128x768xf32> into tensor<1x128x768xf32>
    // ---- q, k, v = split(256, dim=2); view(1, 128, 4, 64).transpose(1, 2) ----
    // (k's second transpose(-2, -1) is composed into [0, 2, 3, 1] by canonicalize)
    %extracted_slice = tensor.extract_slice %expanded[0, 0, 0] [1, 128, 256] [1, 1, 1] : tensor<1x128x768xf32> to tensor<1x128x256xf32>
    %extracted_slice_20 = tensor.extract_slice %expanded[0, 0, 256] [1, 128, 256] [1, 1, 1] : tensor<1x128x768xf32> to tensor<1x128x256xf32>
    %extracted_slice_21 = tensor.extract_slice %expanded[0, 0, 512] [1, 128, 256] [1, 1, 1] : tensor<1x128x768xf32> to tensor<1x128x256xf32>
    %expanded_22 = tensor.expand_shape %extracted_slice [[0], [1], [2, 3]] output_shape [1, 128, 4, 64] : tensor<1x128x256xf32> into tensor<1x128x4x64xf32>
    %expanded_23 = tensor.expand_shape %extracted_slice_20 [[0], [1], [2, 3]] output_shape [1, 128, 4, 64] : tensor<1x128x256xf32> into tensor<1x128x4x64xf32>
    %expanded_24 = tensor.expand_shape %extracted_slice_21 [[0], [1], [2, 3]] output_shape [1, 128, 4, 64] : tensor<1x128x256xf32> into tensor<1x128x4x64xf32>
    %19 = tensor.empty() : tensor<1x4x128x64xf32>
    %transposed_25 = linalg.transpose ins(%expanded_22 : tensor<1x128x4x64xf32>) outs(%19 : tensor<1x4x128x64xf32>) permutation = [0, 2, 1, 3] 
    %transposed_26 = linalg.transpose ins(%expanded_24 : tensor<1x128x4x64xf32>) outs(%19 : tensor<1x4x128x64xf32>) permutation = [0, 2, 1, 3] 
    %20 = tensor.empty() : tensor<1x4x64x128xf32>
    %transposed_27 = linalg.transpose ins(%expanded_23 : tensor<1x128x4x64xf32>) outs(%20 : tensor<1x4x64x128xf32>) permutation = [0, 2, 3, 1] 
    // ---- att = (q @ k^T) * 0.125: rank-4 matmul as collapse, batch_matmul, expand ----
    %collapsed_28 = tensor.collapse_shape %transposed_25 [[0, 1], [2], [3]] : tensor<1x4x128x64xf32> into tensor<4x128x64xf32>
    %collapsed_29 = tensor.collapse_shape %transposed_27 [[0, 1], [2], [3]] : tensor<1x4x64x128xf32> into tensor<4x64x128xf32>
    %21 = tensor.empty() : tensor<4x128x128xf32>
    %22 = linalg.fill ins(%cst_3 : f32) outs(%21 : tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
    %23 = linalg.batch_matmul ins(%collapsed_28, %collapsed_29 : tensor<4x128x64xf32>, tensor<4x64x128xf32>) outs(%22 : tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
    %expanded_30 = tensor.expand_shape %23 [[0, 1], [2], [3]] output_shape [1, 4, 128, 128] : tensor<4x128x128xf32> into tensor<1x4x128x128xf32>
    %24 = tensor.empty() : tensor<1x4x128x128xf32>
    %25 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_30 : tensor<1x4x128x128xf32>) outs(%24 : tensor<1x4x128x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.mulf %in, %cst_7 : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x128xf32>
    // ---- att.masked_fill(mask, -inf): mask from iota, broadcast over heads ----
    %26 = tensor.empty() : tensor<1x1x128x128xi1>
    %27 = linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%26 : tensor<1x1x128x128xi1>) {
    ^bb0(%out: i1):
      %69 = linalg.index 2 : index
      %70 = linalg.index 3 : index
      %71 = arith.cmpi ugt, %70, %69 : index
      linalg.yield %71 : i1
    } -> tensor<1x1x128x128xi1>
    %28 = linalg.generic {indexing_maps = [#map5, #map6, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%25, %27 : tensor<1x4x128x128xf32>, tensor<1x1x128x128xi1>) outs(%24 : tensor<1x4x128x128xf32>) {
    ^bb0(%in: f32, %in_44: i1, %out: f32):
      %69 = arith.select %in_44, %cst_4, %in : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x128xf32>
    // ---- softmax(att, dim=-1): amax(keepdim), sub, exp, sum(keepdim), div ----
    %29 = tensor.empty() : tensor<1x4x128x1xf32>
    %30 = linalg.fill ins(%cst_4 : f32) outs(%29 : tensor<1x4x128x1xf32>) -> tensor<1x4x128x1xf32>
    %31 = linalg.generic {indexing_maps = [#map5, #map7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%28 : tensor<1x4x128x128xf32>) outs(%30 : tensor<1x4x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.maximumf %in, %out : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x1xf32>
    %32 = linalg.generic {indexing_maps = [#map5, #map7, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%28, %31 : tensor<1x4x128x128xf32>, tensor<1x4x128x1xf32>) outs(%24 : tensor<1x4x128x128xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.subf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x128xf32>
    %33 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%32 : tensor<1x4x128x128xf32>) outs(%24 : tensor<1x4x128x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = math.exp %in : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x128xf32>
    %34 = linalg.fill ins(%cst_3 : f32) outs(%29 : tensor<1x4x128x1xf32>) -> tensor<1x4x128x1xf32>
    %35 = linalg.generic {indexing_maps = [#map5, #map7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%33 : tensor<1x4x128x128xf32>) outs(%34 : tensor<1x4x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %out : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x1xf32>
    %36 = linalg.generic {indexing_maps = [#map5, #map7, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%33, %35 : tensor<1x4x128x128xf32>, tensor<1x4x128x1xf32>) outs(%24 : tensor<1x4x128x128xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.divf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x4x128x128xf32>
    // ---- y = att @ v; y.transpose(1, 2).view(1, 128, 256) ----
    %collapsed_31 = tensor.collapse_shape %36 [[0, 1], [2], [3]] : tensor<1x4x128x128xf32> into tensor<4x128x128xf32>
    %collapsed_32 = tensor.collapse_shape %transposed_26 [[0, 1], [2], [3]] : tensor<1x4x128x64xf32> into tensor<4x128x64xf32>
    %37 = tensor.empty() : tensor<4x128x64xf32>
    %38 = linalg.fill ins(%cst_3 : f32) outs(%37 : tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
    %39 = linalg.batch_matmul ins(%collapsed_31, %collapsed_32 : tensor<4x128x128xf32>, tensor<4x128x64xf32>) outs(%38 : tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
    %expanded_33 = tensor.expand_shape %39 [[0, 1], [2], [3]] output_shape [1, 4, 128, 64] : tensor<4x128x64xf32> into tensor<1x4x128x64xf32>
    %40 = tensor.empty() : tensor<1x128x4x64xf32>
    %transposed_34 = linalg.transpose ins(%expanded_33 : tensor<1x4x128x64xf32>) outs(%40 : tensor<1x128x4x64xf32>) permutation = [0, 2, 1, 3] 
    // ---- c_proj + residual (its view(128, 256) merged into the one above) ----
    %41 = tensor.empty() : tensor<256x256xf32>
    %transposed_35 = linalg.transpose ins(%cst_12 : tensor<256x256xf32>) outs(%41 : tensor<256x256xf32>) permutation = [1, 0] 
    %collapsed_36 = tensor.collapse_shape %transposed_34 [[0, 1], [2, 3]] : tensor<1x128x4x64xf32> into tensor<128x256xf32>
    %42 = tensor.empty() : tensor<128x256xf32>
    %43 = linalg.fill ins(%cst_3 : f32) outs(%42 : tensor<128x256xf32>) -> tensor<128x256xf32>
    %44 = linalg.matmul ins(%collapsed_36, %transposed_35 : tensor<128x256xf32>, tensor<256x256xf32>) outs(%43 : tensor<128x256xf32>) -> tensor<128x256xf32>
    %45 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%44, %cst_13 : tensor<128x256xf32>, tensor<256xf32>) outs(%42 : tensor<128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<128x256xf32>
    %expanded_37 = tensor.expand_shape %45 [[0, 1], [2]] output_shape [1, 128, 256] : tensor<128x256xf32> into tensor<1x128x256xf32>
    %46 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %expanded_37 : tensor<1x128x256xf32>, tensor<1x128x256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    // ---- ln_2 ----
    %47 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%46 : tensor<1x128x256xf32>) outs(%1 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %out : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %48 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%47 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.divf %in, %cst_5 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %49 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%46, %48 : tensor<1x128x256xf32>, tensor<1x128x1xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.subf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %50 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%49, %49 : tensor<1x128x256xf32>, tensor<1x128x256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.mulf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %51 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%50 : tensor<1x128x256xf32>) outs(%1 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %out : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %52 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%51 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.divf %in, %cst_5 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %53 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%52 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = arith.addf %in, %cst_6 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %54 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%53 : tensor<1x128x1xf32>) outs(%0 : tensor<1x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = math.rsqrt %in : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x1xf32>
    %55 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%49, %54 : tensor<1x128x256xf32>, tensor<1x128x1xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.mulf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %56 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%55, %cst_14 : tensor<1x128x256xf32>, tensor<256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.mulf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    %57 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%56, %cst_15 : tensor<1x128x256xf32>, tensor<256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    // ---- mlp.c_fc + gelu(approximate="tanh") ----
    %58 = tensor.empty() : tensor<256x1024xf32>
    %transposed_38 = linalg.transpose ins(%cst_16 : tensor<1024x256xf32>) outs(%58 : tensor<256x1024xf32>) permutation = [1, 0] 
    %collapsed_39 = tensor.collapse_shape %57 [[0, 1], [2]] : tensor<1x128x256xf32> into tensor<128x256xf32>
    %59 = tensor.empty() : tensor<128x1024xf32>
    %60 = linalg.fill ins(%cst_3 : f32) outs(%59 : tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %61 = linalg.matmul ins(%collapsed_39, %transposed_38 : tensor<128x256xf32>, tensor<256x1024xf32>) outs(%60 : tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %62 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%61, %cst_17 : tensor<128x1024xf32>, tensor<1024xf32>) outs(%59 : tensor<128x1024xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<128x1024xf32>
    %expanded_40 = tensor.expand_shape %62 [[0, 1], [2]] output_shape [1, 128, 1024] : tensor<128x1024xf32> into tensor<1x128x1024xf32>
    %63 = tensor.empty() : tensor<1x128x1024xf32>
    %64 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_40 : tensor<1x128x1024xf32>) outs(%63 : tensor<1x128x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %69 = math.fpowi %in, %c3_i64 : f32, i64
      %70 = arith.mulf %69, %cst_2 : f32
      %71 = arith.addf %in, %70 : f32
      %72 = arith.mulf %71, %cst_1 : f32
      %73 = math.tanh %72 : f32
      %74 = arith.addf %73, %cst_0 : f32
      %75 = arith.mulf %74, %cst : f32
      %76 = arith.mulf %in, %75 : f32
      linalg.yield %76 : f32
    } -> tensor<1x128x1024xf32>
    // ---- mlp.c_proj + residual (its zero accumulator CSE'd with c_proj's) ----
    %65 = tensor.empty() : tensor<1024x256xf32>
    %transposed_41 = linalg.transpose ins(%cst_18 : tensor<256x1024xf32>) outs(%65 : tensor<1024x256xf32>) permutation = [1, 0] 
    %collapsed_42 = tensor.collapse_shape %64 [[0, 1], [2]] : tensor<1x128x1024xf32> into tensor<128x1024xf32>
    %66 = linalg.matmul ins(%collapsed_42, %transposed_41 : tensor<128x1024xf32>, tensor<1024x256xf32>) outs(%43 : tensor<128x256xf32>) -> tensor<128x256xf32>
    %67 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%66, %cst_19 : tensor<128x256xf32>, tensor<256xf32>) outs(%42 : tensor<128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<128x256xf32>
    %expanded_43 = tensor.expand_shape %67 [[0, 1], [2]] output_shape [1, 128, 256] : tensor<128x256xf32> into tensor<1x128x256xf32>
    %68 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%46, %expanded_43 : tensor<1x128x256xf32>, tensor<1x128x256xf32>) outs(%4 : tensor<1x128x256xf32>) {
    ^bb0(%in: f32, %in_44: f32, %out: f32):
      %69 = arith.addf %in, %in_44 : f32
      linalg.yield %69 : f32
    } -> tensor<1x128x256xf32>
    return %68 : tensor<1x128x256xf32>
  }
}
