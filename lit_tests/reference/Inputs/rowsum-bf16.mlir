// Row sum in bf16, accumulated in bf16 (512 rows of 1000): the IR's own
// lowering sums 1000 terms with 8 mantissa bits; the opmath truth sums in
// f32 and rounds once.
func.func @rowsum_bf16(%x: tensor<512x1000xbf16>) -> tensor<512xbf16> {
  %zero = arith.constant 0.0 : bf16
  %es = tensor.empty() : tensor<512xbf16>
  %acc = linalg.fill ins(%zero : bf16) outs(%es : tensor<512xbf16>)
      -> tensor<512xbf16>
  %s = linalg.reduce ins(%x : tensor<512x1000xbf16>)
                     outs(%acc : tensor<512xbf16>) dimensions = [1]
    (%in: bf16, %a: bf16) {
      %r = arith.addf %in, %a : bf16
      linalg.yield %r : bf16
    }
  return %s : tensor<512xbf16>
}
