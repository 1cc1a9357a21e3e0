// The pattern key (llm_fuse.pattern, docs/pattern-key.md): the same math at
// other sizes has the same key, and the report binds the sizes; another
// element type, another op or another indexing map changes it; a mean's
// divisor that is the row length is abstracted with the row length.
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: %python -c "import json,sys; g={r['function']: r['pattern'] for r in json.load(open(sys.argv[1]))['subgraphs']}; same=[('mean_big','mean_small'),('bias_cols','bias_cols_small')]; diff=[('mean_small','mean_f16'),('mean_big','rowmax'),('bias_cols','bias_rows')]; bad=[p for p in same if g[p[0]]!=g[p[1]]]+[p for p in diff if g[p[0]]==g[p[1]]]; print('pattern classes:', 'ok' if not bad else bad); sys.exit(1 if bad else 0)" %t.json | FileCheck %s --check-prefix=CLASSES

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

// Row mean: y[i] = sum_j x[i, j] / N, at two sizes.
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<16384x4096xf32>)
// CHECK-SAME:    llm_fuse.pattern = "[[MEAN:[0-9a-f]+]]"
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<7x1000xf32>)
// CHECK-SAME:    llm_fuse.pattern = "[[MEAN]]"
// Same at f16: another key.
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<7x1000xf16>)
// CHECK-SAME:    llm_fuse.pattern = "{{[0-9a-f]+}}"
// A max instead of a sum: another key.
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<64x512xf32>)
// CHECK-SAME:    llm_fuse.pattern = "{{[0-9a-f]+}}"
// Bias add over the columns at two sizes: one key; over the rows: another.
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<128x256xf32>, %arg1: tensor<256xf32>)
// CHECK-SAME:    llm_fuse.pattern = "[[BIAS:[0-9a-f]+]]"
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<3x50xf32>, %arg1: tensor<50xf32>)
// CHECK-SAME:    llm_fuse.pattern = "[[BIAS]]"
// CHECK-LABEL: func.func private @sg_{{[0-9a-f]+}}(%arg0: tensor<128x256xf32>, %arg1: tensor<128xf32>)
// CHECK-SAME:    llm_fuse.pattern = "{{[0-9a-f]+}}"

// CLASSES: pattern classes: ok

// REPORT: "pattern": "[[P:[0-9a-f]+]]",
// REPORT-NEXT: "pattern_sizes": {
// REPORT-NEXT: "S0": 16384,
// REPORT-NEXT: "S1": 4096
// REPORT: "pattern": "[[P]]",
// REPORT-NEXT: "pattern_sizes": {
// REPORT-NEXT: "S0": 7,
// REPORT-NEXT: "S1": 1000

func.func @mean_big(%x: tensor<16384x4096xf32>) -> tensor<16384xf32> {
  %z = arith.constant 0.0 : f32
  %n = arith.constant 4096.0 : f32
  %e = tensor.empty() : tensor<16384xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<16384xf32>) -> tensor<16384xf32>
  %s = linalg.reduce ins(%x : tensor<16384x4096xf32>) outs(%i : tensor<16384xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%s : tensor<16384xf32>) outs(%e : tensor<16384xf32>) {
  ^bb0(%v: f32, %o: f32):
    %q = arith.divf %v, %n : f32
    linalg.yield %q : f32
  } -> tensor<16384xf32>
  return %y : tensor<16384xf32>
}

func.func @mean_small(%x: tensor<7x1000xf32>) -> tensor<7xf32> {
  %z = arith.constant 0.0 : f32
  %n = arith.constant 1000.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %s = linalg.reduce ins(%x : tensor<7x1000xf32>) outs(%i : tensor<7xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.addf %in, %a : f32
      linalg.yield %t : f32
    }
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%s : tensor<7xf32>) outs(%e : tensor<7xf32>) {
  ^bb0(%v: f32, %o: f32):
    %q = arith.divf %v, %n : f32
    linalg.yield %q : f32
  } -> tensor<7xf32>
  return %y : tensor<7xf32>
}

func.func @mean_f16(%x: tensor<7x1000xf16>) -> tensor<7xf16> {
  %z = arith.constant 0.0 : f16
  %n = arith.constant 1000.0 : f16
  %e = tensor.empty() : tensor<7xf16>
  %i = linalg.fill ins(%z : f16) outs(%e : tensor<7xf16>) -> tensor<7xf16>
  %s = linalg.reduce ins(%x : tensor<7x1000xf16>) outs(%i : tensor<7xf16>) dimensions = [1]
    (%in: f16, %a: f16) {
      %t = arith.addf %in, %a : f16
      linalg.yield %t : f16
    }
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%s : tensor<7xf16>) outs(%e : tensor<7xf16>) {
  ^bb0(%v: f16, %o: f16):
    %q = arith.divf %v, %n : f16
    linalg.yield %q : f16
  } -> tensor<7xf16>
  return %y : tensor<7xf16>
}

func.func @rowmax(%x: tensor<64x512xf32>) -> tensor<64xf32> {
  %z = arith.constant 0.0 : f32
  %n = arith.constant 512.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.reduce ins(%x : tensor<64x512xf32>) outs(%i : tensor<64xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %t = arith.maximumf %in, %a : f32
      linalg.yield %t : f32
    }
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%s : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %q = arith.divf %v, %n : f32
    linalg.yield %q : f32
  } -> tensor<64xf32>
  return %y : tensor<64xf32>
}

func.func @bias_cols(%x: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<128x256xf32> {
  %e = tensor.empty() : tensor<128x256xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<128x256xf32>, tensor<256xf32>) outs(%e : tensor<128x256xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<128x256xf32>
  return %y : tensor<128x256xf32>
}

func.func @bias_cols_small(%x: tensor<3x50xf32>, %b: tensor<50xf32>) -> tensor<3x50xf32> {
  %e = tensor.empty() : tensor<3x50xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<3x50xf32>, tensor<50xf32>) outs(%e : tensor<3x50xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<3x50xf32>
  return %y : tensor<3x50xf32>
}

func.func @bias_rows(%x: tensor<128x256xf32>, %b: tensor<128xf32>) -> tensor<128x256xf32> {
  %e = tensor.empty() : tensor<128x256xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<128x256xf32>, tensor<128xf32>) outs(%e : tensor<128x256xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<128x256xf32>
  return %y : tensor<128x256xf32>
}

