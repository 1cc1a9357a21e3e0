func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = "acme.mystery"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
