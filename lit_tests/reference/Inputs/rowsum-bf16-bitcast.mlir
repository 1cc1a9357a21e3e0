// A bf16 row sum over raw bits (i16 bitcast to bf16): it accumulates in
// bf16, but its promotion cannot hold (a bitcast from i16 to f32 does not
// verify), so it keeps the upstream reference, with a note.
func.func @rowsum_bits(%x: tensor<512x1000xi16>) -> tensor<512xbf16> {
  %zero = arith.constant 0.0 : bf16
  %es = tensor.empty() : tensor<512xbf16>
  %acc = linalg.fill ins(%zero : bf16) outs(%es : tensor<512xbf16>)
      -> tensor<512xbf16>
  %s = linalg.reduce ins(%x : tensor<512x1000xi16>)
                     outs(%acc : tensor<512xbf16>) dimensions = [1]
    (%in: i16, %a: bf16) {
      %b = arith.bitcast %in : i16 to bf16
      %r = arith.addf %b, %a : bf16
      linalg.yield %r : bf16
    }
  return %s : tensor<512xbf16>
}
