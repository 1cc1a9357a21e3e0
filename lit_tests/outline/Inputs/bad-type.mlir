func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = math.exp %x : tensor<8xf33>
  return %r : tensor<8xf32>
}
