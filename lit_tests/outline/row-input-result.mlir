// An elementwise producer used outside a reduction group as well as by it,
// over the reduction's whole input domain, moves into the group and becomes
// one more result (the residual sum before a norm): not recomputed, not a
// group of its own. A producer over a broadcast domain, or one with a user
// outside the group that comes before the group's root, keeps the older
// rules (read from its own group, or recomputed when cheap).
// RUN: %llm_fuse_opt --llm-fuse-outline='remarks=false report=%t.json' %s -o %t.mlir
// RUN: %python %lf_src/scripts/outline_summary.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// CHECK:      add_rmsnorm: reduction [generic fill reduce generic] in=3 out=2
// CHECK-NEXT: scaled_softmax: softmax [generic softmax] in=1 out=2
// CHECK-NEXT: broadcast_producer: reduction [fill reduce generic] in=2 out=1
// CHECK-NEXT: broadcast_producer: elementwise [generic] in=1 out=1
// CHECK-NEXT: user_before_root: reduction [generic fill reduce] in=2 out=1
// CHECK-NEXT: user_before_root: elementwise [generic generic] in=2 out=1
// CHECK-NEXT: groups: 6

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

// One call, two results: the function returns the sum h next to the norm.
// IR-LABEL: func.func @add_rmsnorm(
// IR-NEXT:    %[[R:.*]]:2 = call @[[SG:sg_[0-9a-f]+]](%arg0, %arg1, %arg2)
// IR-SAME:      -> (tensor<16x32xf32>, tensor<16x32xf32>)
// IR-NEXT:    return %[[R]]#1, %[[R]]#0
func.func @add_rmsnorm(%x: tensor<16x32xf32>, %r: tensor<16x32xf32>,
                       %w: tensor<32xf32>)
    -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %eh = tensor.empty() : tensor<16x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<16x32xf32>, tensor<16x32xf32>)
      outs(%eh : tensor<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  %es = tensor.empty() : tensor<16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16xf32>) -> tensor<16xf32>
  %ss = linalg.reduce ins(%h : tensor<16x32xf32>) outs(%acc : tensor<16xf32>)
      dimensions = [1]
    (%in: f32, %a: f32) {
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %sq, %a : f32
      linalg.yield %s : f32
    }
  %ey = tensor.empty() : tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h, %ss, %w : tensor<16x32xf32>, tensor<16xf32>, tensor<32xf32>)
      outs(%ey : tensor<16x32xf32>) {
  ^bb0(%v: f32, %s: f32, %g: f32, %o: f32):
    %rs = math.rsqrt %s : f32
    %t = arith.mulf %v, %rs : f32
    %u = arith.mulf %t, %g : f32
    linalg.yield %u : f32
  } -> tensor<16x32xf32>
  return %y, %h : tensor<16x32xf32>, tensor<16x32xf32>
}

// The same for softmax: the scaled logits are returned too.
// IR-LABEL: func.func @scaled_softmax(
// IR-NEXT:    %[[S:.*]]:2 = call @{{sg_[0-9a-f]+}}(%arg0)
// IR-NEXT:    return %[[S]]#1, %[[S]]#0
func.func @scaled_softmax(%x: tensor<16x32xf32>)
    -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %e = tensor.empty() : tensor<16x32xf32>
  %l = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  %p = linalg.softmax dimension(1) ins(%l : tensor<16x32xf32>)
      outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %p, %l : tensor<16x32xf32>, tensor<16x32xf32>
}

// Negative: the producer's domain is the broadcast column vector, not the
// rows: it stays a group of its own, and the reduction group reads it.
// IR-LABEL: func.func @broadcast_producer(
// IR-NEXT:    %[[G:.*]] = call @{{sg_[0-9a-f]+}}(%arg1)
// IR-SAME:      -> tensor<32xf32>
// IR-NEXT:    %[[N:.*]] = call @{{sg_[0-9a-f]+}}(%arg0, %[[G]])
// IR-SAME:      -> tensor<16x32xf32>
// IR-NEXT:    return %[[N]], %[[G]]
func.func @broadcast_producer(%x: tensor<16x32xf32>, %w: tensor<32xf32>)
    -> (tensor<16x32xf32>, tensor<32xf32>) {
  %zero = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>,
                                        affine_map<(j) -> (j)>],
                       iterator_types = ["parallel"]}
      ins(%w : tensor<32xf32>) outs(%eg : tensor<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 1.0 : f32
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %es = tensor.empty() : tensor<16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16xf32>) -> tensor<16xf32>
  %ss = linalg.reduce ins(%x : tensor<16x32xf32>) outs(%acc : tensor<16xf32>)
      dimensions = [1]
    (%in: f32, %a: f32) {
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %sq, %a : f32
      linalg.yield %s : f32
    }
  %ey = tensor.empty() : tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %g : tensor<16x32xf32>, tensor<16xf32>, tensor<32xf32>)
      outs(%ey : tensor<16x32xf32>) {
  ^bb0(%v: f32, %s: f32, %k: f32, %o: f32):
    %rs = math.rsqrt %s : f32
    %t = arith.mulf %v, %rs : f32
    %u = arith.mulf %t, %k : f32
    linalg.yield %u : f32
  } -> tensor<16x32xf32>
  return %y, %g : tensor<16x32xf32>, tensor<32xf32>
}

// Negative: the sum has a user outside the group before the reduction
// (%d): the sum is not a result of the reduction group; it is recomputed
// there (cheap) and outlined with %d.
// IR-LABEL: func.func @user_before_root(
// IR-NEXT:    %[[D:.*]] = call @{{sg_[0-9a-f]+}}(%arg0, %arg1)
// IR-SAME:      -> tensor<16x32xf32>
// IR-NEXT:    %[[T:.*]] = call @{{sg_[0-9a-f]+}}(%arg0, %arg1)
// IR-SAME:      -> tensor<16xf32>
// IR-NEXT:    return %[[D]], %[[T]]
func.func @user_before_root(%x: tensor<16x32xf32>, %r: tensor<16x32xf32>)
    -> (tensor<16x32xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %eh = tensor.empty() : tensor<16x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<16x32xf32>, tensor<16x32xf32>)
      outs(%eh : tensor<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  %d = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x32xf32>) outs(%eh : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  %es = tensor.empty() : tensor<16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%es : tensor<16xf32>) -> tensor<16xf32>
  %ss = linalg.reduce ins(%h : tensor<16x32xf32>) outs(%acc : tensor<16xf32>)
      dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return %d, %ss : tensor<16x32xf32>, tensor<16xf32>
}

// The add+RMSNorm function computes the sum once and returns it first.
// IR:       func.func private @[[SG]](
// IR-SAME:    -> (tensor<16x32xf32>, tensor<16x32xf32>)
// IR-SAME:    llm_fuse.class = "reduction"
// IR:         %[[H:.*]] = linalg.generic
// IR:         arith.addf
// IR:         %[[Y:.*]] = linalg.generic
// IR:         return %[[H]], %[[Y]]
