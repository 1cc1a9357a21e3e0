// Rule 3: a linalg.broadcast of a row statistic back to the row domain is an
// epilogue of the reduction, like the elementwise ops after it (LayerNorm
// written with named ops).
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o /dev/null
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s

// CHECK: center: reduction [fill reduce generic broadcast sub] in=1 out=1
// CHECK-NEXT: groups: 1
#v = affine_map<(i) -> (i)>
func.func @center(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%acc : tensor<8xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %mu = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%sum : tensor<8xf32>) outs(%es : tensor<8xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %em = tensor.empty() : tensor<8x16xf32>
  %mub = linalg.broadcast ins(%mu : tensor<8xf32>) outs(%em : tensor<8x16xf32>) dimensions = [1]
  %xc = linalg.sub ins(%x, %mub : tensor<8x16xf32>, tensor<8x16xf32>) outs(%em : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %xc : tensor<8x16xf32>
}
