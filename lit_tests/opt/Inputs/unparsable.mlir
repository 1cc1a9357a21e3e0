func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>,
              %c: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // A misspelt op: the parser must report it, located, and exit non-zero.
  %0 = linalg.matmull ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>)
                      outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
