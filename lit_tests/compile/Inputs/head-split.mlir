func.func @heads(%x: tensor<64x1536xf32>) -> tensor<64x8x64xf32> {
  %s = tensor.extract_slice %x[0, 512] [64, 512] [1, 1] : tensor<64x1536xf32> to tensor<64x512xf32>
  %e = tensor.expand_shape %s [[0], [1, 2]] output_shape [64, 8, 64] : tensor<64x512xf32> into tensor<64x8x64xf32>
  return %e : tensor<64x8x64xf32>
}
