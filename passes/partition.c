/* partition.c - the partition rules of llm-fuse, in the order they apply.
 *
 * Input: the ops of one block (a function body) in linalg on tensors with
 * tensor, arith and math ops. Output: disjoint groups of ops, each to become
 * one outlined function and, later, one GPU kernel. Anchors: IREE's
 * dispatch-region formation (roots plus fused producers and consumers),
 * TorchInductor's fusion (pointwise producers recomputed when cheap,
 * persistent-row reductions), XLA's producer/consumer fusion legality.
 *
 * Rule 0  Classify every op (lf_classify_op). Ops with a dynamic shape are
 *         left alone with a remark: only static shapes are fused for now
 *         (the kernel contract and verification need concrete sizes). Ops
 *         the partitioner does not understand (windowed/strided indexing,
 *         reshapes that move non-unit dimensions, slices, anything outside
 *         linalg/tensor/arith/math) are left alone with a remark.
 *         A linalg.generic with reduction loops is a contraction only when
 *         it multiplies two different inputs that both vary along a
 *         reduction loop (A[i,k] B[k,j]); sum(x*x) or sum((x-mu)^2) is a
 *         reduction.
 * Rule 1  Roots, in block order: contractions, then softmax, then
 *         reductions each start a group.
 * Rule 2  Producers fuse into a group when they feed a member:
 *         - tensor.empty and constants always (they are free; cloned),
 *           except weights: float tensor constants that are dense_resource
 *           or non-splat dense stay in the caller and become inputs;
 *         - linalg.fill, linalg.broadcast and unit-dim reshapes always
 *           (cheap; recomputed if they have users outside the group);
 *         - elementwise producers whose iteration space is the group's
 *           (its output shape, or a reduction's input shape; size-1
 *           dimensions ignored), or a smaller space that broadcasts into
 *           it when they are cheap; never into the operands of a
 *           contraction itself (that would turn the GEMM's operand loads
 *           into recomputation); a producer with users outside the group
 *           is recomputed only when cheap (few body ops, few inputs),
 *           otherwise left out;
 *         - except: an elementwise producer with users outside a
 *           reduction/softmax group, over the reduction's whole input
 *           domain (not a broadcast or row-statistic shape), moves in and
 *           becomes one more result of the group (neither recomputed nor
 *           split off: the residual sum before a norm is written once by
 *           the norm's kernel), provided every user outside the group
 *           comes after the group's root in the block;
 *         - a transpose feeding a contraction operand when the group is
 *           its only user (a layout: the kernel reads the operand
 *           strided), or an elementwise member like any elementwise op;
 *         - a second contraction with the same output shape feeding the
 *           epilogue (SwiGLU: silu(x Wg) * (x Wu)): a dual-GEMM group.
 * Rule 3  Consumers fuse as epilogues: elementwise and broadcast users
 *         whose iteration space equals the group's output, or for
 *         reduction/softmax groups also the reduction's input
 *         (normalize-by-row patterns); transposes of such a value; unit-dim
 *         reshapes; reductions over the same input domain with the same
 *         result shape join reduction groups (softmax as max/exp/sum/div,
 *         LayerNorm's mean and variance: one kernel over the row).
 *         A recomputed producer whose users all ended up in the group
 *         moves in.
 *         Row views: a matrix product's group ([M, N], unit dimensions
 *         aside) also takes a static collapse/expand_shape of its value
 *         that regroups leading dimensions only (innermost kept: [B*T, N]
 *         <-> [B, T, N], an importer's Linear at batch B > 1) as a free
 *         reshape, and its domain then includes every shape with the same
 *         rows (innermost dimension and element count), so the GELU or
 *         residual add on the [B, T, N] view and a collapse back are
 *         epilogues too. Views feeding the product's operands stay out;
 *         batched products do not take views (rule 5 does, for attention).
 * Rule 5  Attention (applied after rules 1-3, before rule 4): a contraction
 *         group whose output is the row domain of a reduction/softmax
 *         group that feeds the root contraction of a third group (QK^T,
 *         softmax, PV) merges into one attention-like group, if the scores
 *         and probabilities have no other users (they never leave the
 *         kernel) and no cycle forms. The three may be linked through
 *         chains of views (an importer's expand of the scores to
 *         [B, H, T, T], its collapse of the probabilities to [B*H, T, T]);
 *         the merged group then also takes in the views, slices and
 *         transposes that lead its operands out of one buffer (q, k, v
 *         sliced from a fused QKV) and its output to its consumer (the
 *         head merge).
 * Rule 4  Elementwise ops and transposes not in any group form chains of
 *         their own (connected through same-shape producers and
 *         consumers).
 * Legality, checked for every addition:
 *         - no cycle may form: no op outside the group (or another group,
 *           seen as the single call it will become) may both depend on
 *           the group and feed it;
 *         - a group holds at most max-group-ops ops (free ops and unit
 *           reshapes not counted); an op that would exceed it stays out.
 */
#include "passes/partition.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "base/strbuf.h"
#include "passes/mlir_util.h"

/* ---- Op classification. ---- */

static bool name_is(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

static bool name_has_prefix(MlirOperation op, const char *prefix) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  size_t n = strlen(prefix);
  return s.length >= n && memcmp(s.data, prefix, n) == 0;
}

static bool name_in(MlirOperation op, const char *const *names) {
  for (; *names; ++names)
    if (name_is(op, *names))
      return true;
  return false;
}

static const char *const contraction_ops[] = {
    "linalg.matmul", "linalg.batch_matmul", "linalg.batch_reduce_matmul",
    "linalg.matmul_transpose_a", "linalg.matmul_transpose_b",
    "linalg.batch_matmul_transpose_a", "linalg.batch_matmul_transpose_b",
    "linalg.contract", "linalg.matvec", "linalg.vecmat", "linalg.dot",
    "linalg.batch_matvec", "linalg.batch_vecmat", NULL};

static const char *const named_elementwise_ops[] = {
    "linalg.map", "linalg.elementwise", "linalg.add", "linalg.sub",
    "linalg.mul", "linalg.div", "linalg.div_unsigned", "linalg.max",
    "linalg.min", "linalg.exp", "linalg.log", "linalg.abs", "linalg.ceil",
    "linalg.floor", "linalg.negf", "linalg.reciprocal", "linalg.round",
    "linalg.sqrt", "linalg.rsqrt", "linalg.square", "linalg.tanh",
    "linalg.erf", "linalg.powf", "linalg.select", "linalg.copy", NULL};

static bool type_is_tensor(MlirType t) { return mlirTypeIsATensor(t); }

static bool type_is_dynamic_tensor(MlirType t) {
  return mlirTypeIsATensor(t) &&
         (!mlirShapedTypeHasRank(t) || !mlirShapedTypeHasStaticShape(t));
}

static bool has_tensor_result(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (type_is_tensor(mlirValueGetType(mlirOperationGetResult(op, i))))
      return true;
  return false;
}

static bool has_dynamic_shape(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (type_is_dynamic_tensor(mlirValueGetType(mlirOperationGetResult(op, i))))
      return true;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (type_is_dynamic_tensor(mlirValueGetType(mlirOperationGetOperand(op, i))))
      return true;
  return false;
}

/* Element types the kernel path handles: f16, bf16, f32, f64 and integers
 * up to 64 bits. */
static bool element_type_supported(MlirType t) {
  if (!mlirTypeIsATensor(t))
    return true;
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF16(e) || mlirTypeIsABF16(e) || mlirTypeIsAF32(e) ||
         mlirTypeIsAF64(e) ||
         (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) <= 64);
}

static void print_cb(MlirStringRef s, void *user_data) {
  lf_strbuf_t *buf = user_data;
  lf_status_free(lf_strbuf_append(buf, s.data, s.length));
}

/* The first tensor operand/result type with an unsupported element type,
 * printed into `out` (empty if none). */
static void unsupported_type(MlirOperation op, lf_strbuf_t *out) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
    if (!element_type_supported(t)) {
      mlirTypePrint(t, print_cb, out);
      return;
    }
  }
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (!element_type_supported(t)) {
      mlirTypePrint(t, print_cb, out);
      return;
    }
  }
}

typedef struct iter_count_s {
  int parallel, reduction;
} iter_count_t;

static void count_iter_cb(MlirStringRef s, void *user_data) {
  iter_count_t *c = user_data;
  for (size_t i = 0; i + 9 <= s.length; ++i) {
    if (memcmp(s.data + i, "reduction", 9) == 0)
      ++c->reduction;
    if (i + 8 <= s.length && memcmp(s.data + i, "parallel", 8) == 0)
      ++c->parallel;
  }
}

static iter_count_t generic_iterators(MlirOperation op) {
  iter_count_t c = {0, 0};
  MlirAttribute iters = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("iterator_types"));
  if (!mlirAttributeIsNull(iters))
    mlirAttributePrint(iters, count_iter_cb, &c);
  return c;
}

/* Every indexing map selects distinct loop dimensions, or the constant 0 (a
 * size-1 dimension that broadcasts, as tosa-to-linalg emits): the op reads
 * and writes whole elements, with no windows, strides or skews. */
static bool generic_maps_are_projections(MlirOperation op) {
  MlirAttribute maps = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("indexing_maps"));
  if (mlirAttributeIsNull(maps) || !mlirAttributeIsAArray(maps))
    return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(maps); ++i) {
    MlirAttribute m = mlirArrayAttrGetElement(maps, i);
    if (!mlirAttributeIsAAffineMap(m))
      return false;
    MlirAffineMap map = mlirAffineMapAttrGetValue(m);
    uint64_t dims_seen = 0;
    if (mlirAffineMapGetNumDims(map) > 64)
      return false;
    for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r) {
      MlirAffineExpr e = mlirAffineMapGetResult(map, r);
      if (mlirAffineExprIsAConstant(e) &&
          mlirAffineConstantExprGetValue(e) == 0)
        continue;
      if (!mlirAffineExprIsADim(e))
        return false;
      intptr_t d = mlirAffineDimExprGetPosition(e);
      if (dims_seen & ((uint64_t)1 << d))
        return false;
      dims_seen |= (uint64_t)1 << d;
    }
  }
  return true;
}

static void has_reduction_cb(MlirStringRef s, void *user_data) {
  bool *found = user_data;
  for (size_t i = 0; i + 9 <= s.length; ++i)
    if (memcmp(s.data + i, "reduction", 9) == 0)
      *found = true;
}

/* Do at least two inputs of generic `op` vary along a reduction loop? Then
 * the loop contracts them (A[i,k] B[k,j]); otherwise a sum over k of one
 * input, however scaled, is a reduction. */
static bool has_contracted_operands(MlirOperation op) {
  MlirAttribute iters = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("iterator_types"));
  MlirAttribute maps = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("indexing_maps"));
  if (mlirAttributeIsNull(iters) || !mlirAttributeIsAArray(iters) ||
      mlirAttributeIsNull(maps) || !mlirAttributeIsAArray(maps))
    return false;
  uint64_t reduction_dims = 0;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(iters) && i < 64; ++i) {
    bool found = false;
    mlirAttributePrint(mlirArrayAttrGetElement(iters, i), has_reduction_cb,
                       &found);
    if (found)
      reduction_dims |= (uint64_t)1 << i;
  }
  intptr_t inputs = mlirOperationGetNumOperands(op) -
                    mlirOperationGetNumResults(op);
  int contracted = 0;
  for (intptr_t i = 0; i < inputs && i < mlirArrayAttrGetNumElements(maps);
       ++i) {
    MlirAffineMap map =
        mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, i));
    for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r) {
      MlirAffineExpr e = mlirAffineMapGetResult(map, r);
      if (mlirAffineExprIsADim(e) &&
          (reduction_dims >> mlirAffineDimExprGetPosition(e)) & 1) {
        ++contracted;
        break;
      }
    }
  }
  return contracted >= 2;
}

typedef struct body_scan_s {
  MlirBlock body;     /* the op's first block */
  intptr_t inputs;    /* block arguments below this index are inputs */
  bool product_of_inputs; /* a mul of two different inputs */
  int arith_ops; /* arithmetic/math ops, casts and constants excluded */
} body_scan_t;

/* The input block argument `v` is, looking through casts; -1 otherwise. */
static intptr_t input_arg_of(const body_scan_t *b, MlirValue v) {
  static const char *const casts[] = {"arith.extf", "arith.truncf",
                                      "arith.extsi", "arith.extui",
                                      "arith.sitofp", "arith.uitofp", NULL};
  for (int depth = 0; depth < 4; ++depth) {
    if (mlirValueIsABlockArgument(v)) {
      if (!mlirBlockEqual(mlirBlockArgumentGetOwner(v), b->body))
        return -1;
      intptr_t n = mlirBlockArgumentGetArgNumber(v);
      return n < b->inputs ? n : -1;
    }
    MlirOperation def = mlirOpResultGetOwner(v);
    if (!name_in(def, casts))
      return -1;
    v = mlirOperationGetOperand(def, 0);
  }
  return -1;
}

static MlirWalkResult scan_body_cb(MlirOperation op, void *user_data) {
  body_scan_t *b = user_data;
  if ((name_is(op, "arith.mulf") || name_is(op, "arith.muli")) &&
      !mlirBlockIsNull(b->body)) {
    intptr_t l = input_arg_of(b, mlirOperationGetOperand(op, 0));
    intptr_t r = input_arg_of(b, mlirOperationGetOperand(op, 1));
    if (l >= 0 && r >= 0 && l != r)
      b->product_of_inputs = true;
  }
  static const char *const not_counted[] = {
      "arith.constant", "arith.extf", "arith.truncf", "arith.index_cast",
      "arith.bitcast", "arith.sitofp", "arith.uitofp", "arith.fptosi",
      "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci", NULL};
  if ((name_has_prefix(op, "arith.") || name_has_prefix(op, "math.")) &&
      !name_in(op, not_counted))
    ++b->arith_ops;
  return MlirWalkResultAdvance;
}

static body_scan_t scan_body(MlirOperation op) {
  body_scan_t b = {{NULL}, 0, false, 0};
  b.inputs = mlirOperationGetNumOperands(op) - mlirOperationGetNumResults(op);
  if (mlirOperationGetNumRegions(op) > 0)
    b.body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r) {
    MlirBlock blk = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
    for (; !mlirBlockIsNull(blk); blk = mlirBlockGetNextInRegion(blk))
      for (MlirOperation o = mlirBlockGetFirstOperation(blk);
           !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
        mlirOperationWalk(o, scan_body_cb, &b, MlirWalkPreOrder);
  }
  return b;
}

int lf_body_arith_ops(MlirOperation op) { return scan_body(op).arith_ops; }

/* Ops whose kind follows from their name alone. */
static const struct {
  const char *name;
  lf_op_kind_t kind;
} kind_by_name[] = {
    {"tensor.empty", LF_OPK_EMPTY},         {"arith.constant", LF_OPK_CONSTANT},
    {"linalg.reduce", LF_OPK_REDUCTION},    {"linalg.softmax", LF_OPK_SOFTMAX},
    {"linalg.fill", LF_OPK_FILL},           {"linalg.broadcast", LF_OPK_BROADCAST},
    {"linalg.transpose", LF_OPK_TRANSPOSE},
};

/* Equal once size-1 dimensions are dropped: [4096] and [4096, 1], or
 * [1, 4096, 768] and [4096, 768], index the same elements in the same
 * order. */
static bool same_shape_mod_units(MlirType a, MlirType b) {
  return !mlirTypeIsNull(a) && !mlirTypeIsNull(b) &&
         lf_same_shape_mod_units(a, b);
}

/* A reshape that only adds or drops size-1 dimensions: free, the elements
 * keep their order. Other reshapes are left in place. */
static bool is_unit_reshape(MlirOperation op) {
  if (mlirOperationGetNumOperands(op) < 1 ||
      mlirOperationGetNumResults(op) != 1)
    return false;
  MlirType a = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType b = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!mlirTypeIsARankedTensor(a) || !mlirTypeIsARankedTensor(b) ||
      !mlirShapedTypeHasStaticShape(a) || !mlirShapedTypeHasStaticShape(b))
    return false;
  return same_shape_mod_units(a, b);
}

lf_op_kind_t lf_classify_op(MlirOperation op) {
  if (name_is(op, "tensor.expand_shape") || name_is(op, "tensor.collapse_shape"))
    return is_unit_reshape(op) ? LF_OPK_RESHAPE : LF_OPK_OTHER;
  for (size_t i = 0; i < sizeof(kind_by_name) / sizeof(kind_by_name[0]); ++i)
    if (name_is(op, kind_by_name[i].name))
      return kind_by_name[i].kind;
  if (name_in(op, contraction_ops))
    return LF_OPK_CONTRACTION;
  if (name_in(op, named_elementwise_ops))
    return LF_OPK_ELEMENTWISE;
  if (name_is(op, "linalg.generic")) {
    if (!generic_maps_are_projections(op))
      return LF_OPK_OTHER;
    iter_count_t it = generic_iterators(op);
    if (it.reduction == 0)
      return LF_OPK_ELEMENTWISE;
    /* A contraction multiplies two different inputs and sums the
     * products (matmul written as a generic); a reduction of one input's
     * square, or of an input scaled by another row value, is a
     * reduction. */
    return scan_body(op).product_of_inputs && has_contracted_operands(op)
               ? LF_OPK_CONTRACTION
               : LF_OPK_REDUCTION;
  }
  if ((name_has_prefix(op, "arith.") || name_has_prefix(op, "math.")) &&
      has_tensor_result(op))
    return LF_OPK_ELEMENTWISE;
  return LF_OPK_OTHER;
}

const char *lf_group_class_name(lf_group_class_t c) {
  switch (c) {
  case LF_CLASS_ELEMENTWISE:
    return "elementwise";
  case LF_CLASS_REDUCTION:
    return "reduction";
  case LF_CLASS_CONTRACTION:
    return "contraction";
  case LF_CLASS_SOFTMAX:
    return "softmax";
  case LF_CLASS_ATTENTION:
    return "attention-like";
  }
  return "unknown";
}

/* ---- The dependence graph of one block. ---- */

typedef struct node_s {
  MlirOperation op;
  lf_op_kind_t kind;
  int group;      /* owning group (moved member), -1 if none */
  size_t *deps;   /* producers in this block */
  size_t num_deps;
  size_t *users;  /* consumers in this block */
  size_t num_users, cap_users;
  MlirType shape; /* type of result 0 if a ranked tensor, else null */
  MlirType input_shape; /* reductions/softmax/transposes: type of input 0 */
} node_t;

typedef struct graph_s {
  MlirBlock block;
  node_t *nodes;
  size_t num_nodes;
  /* op pointer -> node index, open addressing */
  const void **keys;
  size_t *vals;
  size_t cap;
  /* DFS scratch */
  unsigned *seen;
  size_t *stack;
  unsigned stamp;
} graph_t;

static size_t hash_ptr(const void *p, size_t cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0xed5ad4bbU;
  x ^= x >> 11;
  return (size_t)x & (cap - 1);
}

static long node_of(const graph_t *g, MlirOperation op) {
  if (mlirOperationIsNull(op))
    return -1;
  for (size_t h = hash_ptr(op.ptr, g->cap);; h = (h + 1) & (g->cap - 1)) {
    if (!g->keys[h])
      return -1;
    if (g->keys[h] == op.ptr)
      return (long)g->vals[h];
  }
}

MlirOperation lf_ancestor_in_block(MlirOperation op, MlirBlock block) {
  while (!mlirOperationIsNull(op)) {
    MlirBlock b = mlirOperationGetBlock(op);
    if (mlirBlockIsNull(b))
      break;
    if (mlirBlockEqual(b, block))
      return op;
    op = mlirOperationGetParentOperation(op);
  }
  return (MlirOperation){NULL};
}

/* The in-block op that defines `v`, or -1 (function argument). */
static long producer_of(const graph_t *g, MlirValue v) {
  if (!mlirValueIsAOpResult(v))
    return -1;
  return node_of(g, lf_ancestor_in_block(mlirOpResultGetOwner(v), g->block));
}

typedef struct dep_walk_s {
  graph_t *g;
  size_t self;
  size_t *deps;
  size_t num, cap;
  bool oom;
} dep_walk_t;

static void add_unique(size_t **arr, size_t *num, size_t *cap, size_t x,
                       bool *oom) {
  for (size_t i = 0; i < *num; ++i)
    if ((*arr)[i] == x)
      return;
  if (*num == *cap) {
    size_t n = *cap ? 2 * *cap : 4;
    size_t *p = realloc(*arr, n * sizeof(*p));
    if (!p) {
      *oom = true;
      return;
    }
    *arr = p;
    *cap = n;
  }
  (*arr)[(*num)++] = x;
}

static MlirWalkResult dep_walk_cb(MlirOperation op, void *user_data) {
  dep_walk_t *w = user_data;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    long p = producer_of(w->g, mlirOperationGetOperand(op, i));
    if (p >= 0 && (size_t)p != w->self)
      add_unique(&w->deps, &w->num, &w->cap, (size_t)p, &w->oom);
  }
  return w->oom ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

static MlirType ranked_tensor_or_null(MlirType t) {
  return mlirTypeIsARankedTensor(t) ? t : (MlirType){NULL};
}

static lf_status_t graph_build(graph_t *g, MlirBlock block) {
  memset(g, 0, sizeof(*g));
  g->block = block;
  size_t n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(block);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    ++n;
  g->cap = 16;
  while (g->cap < 2 * n + 2)
    g->cap *= 2;
  g->nodes = calloc(n ? n : 1, sizeof(*g->nodes));
  g->keys = calloc(g->cap, sizeof(*g->keys));
  g->vals = calloc(g->cap, sizeof(*g->vals));
  g->seen = calloc(n ? n : 1, sizeof(*g->seen));
  g->stack = calloc(n + 1, sizeof(*g->stack));
  if (!g->nodes || !g->keys || !g->vals || !g->seen || !g->stack)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (MlirOperation o = mlirBlockGetFirstOperation(block);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    node_t *nd = &g->nodes[g->num_nodes];
    nd->op = o;
    nd->group = -1;
    nd->kind = lf_classify_op(o);
    if (mlirOperationGetNumResults(o) > 0)
      nd->shape = ranked_tensor_or_null(
          mlirValueGetType(mlirOperationGetResult(o, 0)));
    if ((nd->kind == LF_OPK_REDUCTION || nd->kind == LF_OPK_SOFTMAX ||
         nd->kind == LF_OPK_TRANSPOSE) &&
        mlirOperationGetNumOperands(o) > 0)
      nd->input_shape = ranked_tensor_or_null(
          mlirValueGetType(mlirOperationGetOperand(o, 0)));
    size_t h = hash_ptr(o.ptr, g->cap);
    while (g->keys[h])
      h = (h + 1) & (g->cap - 1);
    g->keys[h] = o.ptr;
    g->vals[h] = g->num_nodes++;
  }
  for (size_t i = 0; i < g->num_nodes; ++i) {
    dep_walk_t w = {g, i, NULL, 0, 0, false};
    mlirOperationWalk(g->nodes[i].op, dep_walk_cb, &w, MlirWalkPreOrder);
    if (w.oom) {
      free(w.deps);
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    }
    g->nodes[i].deps = w.deps;
    g->nodes[i].num_deps = w.num;
    for (size_t d = 0; d < w.num; ++d) {
      node_t *p = &g->nodes[w.deps[d]];
      bool oom = false;
      add_unique(&p->users, &p->num_users, &p->cap_users, i, &oom);
      if (oom)
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  return LF_OK;
}

static void graph_free(graph_t *g) {
  for (size_t i = 0; i < g->num_nodes; ++i) {
    free(g->nodes[i].deps);
    free(g->nodes[i].users);
  }
  free(g->nodes);
  free(g->keys);
  free(g->vals);
  free(g->seen);
  free(g->stack);
}

/* ---- Groups under construction. ---- */

typedef struct building_s {
  lf_group_t *groups;
  size_t *roots; /* per group: the node it grew from */
  /* per group: first and last node (block position) it moved; an empty
   * group has lo > hi */
  size_t *lo, *hi;
  unsigned *seen; /* per group, against graph_t.stamp */
  size_t num_groups, cap_groups;
  size_t cap_members; /* of the group being built */
} building_t;

static bool is_free_kind(lf_op_kind_t k) {
  return k == LF_OPK_EMPTY || k == LF_OPK_CONSTANT;
}

/* A constant that holds model data (a weight) rather than math: a float
 * tensor given as a dense_resource blob (torch-mlir's parameters) or as
 * dense elements that are not one splat value. Such a constant is never
 * cloned into a group: it stays in the caller and reaches the subgraph as
 * an input, read from memory by the kernel like any input, so its values
 * are in neither the fingerprint nor the pattern key. Scalars, splats
 * (a broadcast scalar: 0.5, 1/N, a zero accumulator) and integer or index
 * tensors (shapes, shifts) stay inside (docs/pattern-key.md, "Constants"). */
static bool is_weight_constant(MlirOperation op) {
  MlirAttribute v =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(v))
    return false;
  MlirType t = mlirAttributeGetType(v);
  if (!mlirTypeIsARankedTensor(t) ||
      !mlirTypeIsAFloat(mlirShapedTypeGetElementType(t)))
    return false;
  if (mlirAttributeIsADenseResourceElements(v))
    return true;
  return mlirAttributeIsADenseElements(v) && !mlirDenseElementsAttrIsSplat(v);
}

/* Ops that cost nothing at run time and do not count against the cap. */
static bool is_uncounted_kind(lf_op_kind_t k) {
  return is_free_kind(k) || k == LF_OPK_RESHAPE;
}

static bool member_has(const lf_group_t *grp, size_t node, const graph_t *g) {
  for (size_t i = 0; i < grp->num_members; ++i)
    if (mlirOperationEqual(grp->members[i].op, g->nodes[node].op))
      return true;
  return false;
}

static size_t counted_members(const lf_group_t *grp) {
  size_t n = 0;
  for (size_t i = 0; i < grp->num_members; ++i)
    n += !is_uncounted_kind(grp->members[i].kind);
  return n;
}

/* Recomputes the block span of group `gid`'s moved members. Node indices
 * are block positions. */
static void refresh_span(const graph_t *g, building_t *b, int gid) {
  const lf_group_t *grp = &b->groups[gid];
  b->lo[gid] = SIZE_MAX;
  b->hi[gid] = 0;
  for (size_t m = 0; m < grp->num_members; ++m) {
    long mi = node_of(g, grp->members[m].op);
    if (mi < 0 || g->nodes[mi].group != gid)
      continue;
    if ((size_t)mi < b->lo[gid])
      b->lo[gid] = (size_t)mi;
    if ((size_t)mi > b->hi[gid])
      b->hi[gid] = (size_t)mi;
  }
}

/* The position below which nothing can depend on group `gid`. Plain
 * dependences point backwards, so below the group's first member only a
 * jump through another group (seen as the one call it becomes, depending
 * on all its members' inputs) could climb back up; so the floor drops to
 * the start of every group that spans it, until none does. */
static size_t search_floor(const building_t *b, int gid) {
  size_t floor = b->lo[gid];
  bool lowered = true;
  while (lowered) {
    lowered = false;
    for (size_t y = 0; y < b->num_groups; ++y)
      if ((int)y != gid && b->lo[y] <= b->hi[y] && b->lo[y] < floor &&
          b->hi[y] > floor) {
        floor = b->lo[y];
        lowered = true;
      }
  }
  return floor;
}

/* Would group `gid` be part of a cycle? True when some op that feeds a
 * member from outside depends on the group itself. One backward search
 * from all those ops together, never below the search floor; other groups
 * count as the single call op they will become: depending on any of their
 * members means depending on all their inputs. */
static bool group_has_cycle(graph_t *g, int gid, building_t *b) {
  const lf_group_t *grp = &b->groups[gid];
  if (b->lo[gid] > b->hi[gid])
    return false; /* nothing moved: nothing can depend on it */
  size_t floor = search_floor(b, gid);
  size_t top = 0;
  ++g->stamp;
  for (size_t m = 0; m < grp->num_members; ++m) {
    long mi = node_of(g, grp->members[m].op);
    if (mi < 0)
      continue;
    node_t *nm = &g->nodes[mi];
    for (size_t d = 0; d < nm->num_deps; ++d) {
      size_t dep = nm->deps[d];
      if (g->nodes[dep].group == gid || dep < floor ||
          g->seen[dep] == g->stamp)
        continue;
      g->seen[dep] = g->stamp;
      g->stack[top++] = dep;
    }
  }
  while (top) {
    size_t x = g->stack[--top];
    node_t *nx = &g->nodes[x];
    if (nx->group == gid)
      return true;
    if (nx->group >= 0) {
      /* Expand every member of that group, once per search. */
      if (b->seen[nx->group] == g->stamp)
        continue;
      b->seen[nx->group] = g->stamp;
      const lf_group_t *other = &b->groups[nx->group];
      for (size_t m = 0; m < other->num_members; ++m) {
        long mi = node_of(g, other->members[m].op);
        if (mi < 0 || other->members[m].recompute)
          continue;
        node_t *nm = &g->nodes[mi];
        for (size_t d = 0; d < nm->num_deps; ++d)
          if (nm->deps[d] >= floor && g->seen[nm->deps[d]] != g->stamp) {
            g->seen[nm->deps[d]] = g->stamp;
            g->stack[top++] = nm->deps[d];
          }
      }
      continue;
    }
    for (size_t d = 0; d < nx->num_deps; ++d)
      if (nx->deps[d] >= floor && g->seen[nx->deps[d]] != g->stamp) {
        g->seen[nx->deps[d]] = g->stamp;
        g->stack[top++] = nx->deps[d];
      }
  }
  return false;
}

static lf_status_t push_member(lf_group_t *grp, size_t *cap, node_t *nd,
                               bool recompute) {
  if (grp->num_members == *cap) {
    size_t n = *cap ? 2 * *cap : 8;
    lf_member_t *p = realloc(grp->members, n * sizeof(*p));
    if (!p)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    grp->members = p;
    *cap = n;
  }
  grp->members[grp->num_members++] =
      (lf_member_t){nd->op, nd->kind, recompute};
  return LF_OK;
}

/* Tries to add node `x` to group `gid`; keeps it only if legal. */
static lf_status_t try_add(graph_t *g, building_t *b, int gid, size_t x,
                           bool recompute, size_t max_ops, bool *added) {
  *added = false;
  lf_group_t *grp = &b->groups[gid];
  node_t *nd = &g->nodes[x];
  if (member_has(grp, x, g))
    return LF_OK;
  if (!is_uncounted_kind(nd->kind) && counted_members(grp) >= max_ops)
    return LF_OK;
  LF_RETURN_IF_ERROR(push_member(grp, &b->cap_members, nd, recompute));
  size_t lo = b->lo[gid], hi = b->hi[gid];
  if (!recompute) {
    nd->group = gid;
    if (x < b->lo[gid])
      b->lo[gid] = x;
    if (x > b->hi[gid])
      b->hi[gid] = x;
  }
  if (group_has_cycle(g, gid, b)) {
    --grp->num_members;
    if (!recompute)
      nd->group = -1;
    b->lo[gid] = lo;
    b->hi[gid] = hi;
    return LF_OK;
  }
  *added = true;
  return LF_OK;
}

/* Same iteration space as the group: its output shape, or the reduction
 * input shape for reduction-like groups. Element types may differ (bf16
 * results of f32 math): compare shapes only. */
static bool same_shape(MlirType a, MlirType b) {
  if (mlirTypeIsNull(a) || mlirTypeIsNull(b))
    return false;
  intptr_t r = mlirShapedTypeGetRank(a);
  if (r != mlirShapedTypeGetRank(b))
    return false;
  for (intptr_t i = 0; i < r; ++i)
    if (mlirShapedTypeGetDimSize(a, i) != mlirShapedTypeGetDimSize(b, i))
      return false;
  return true;
}

/* `small` broadcasts to `big`: same rank, each dimension equal or 1. */
static bool broadcasts_to(MlirType small, MlirType big) {
  if (mlirTypeIsNull(small) || mlirTypeIsNull(big))
    return false;
  intptr_t r = mlirShapedTypeGetRank(small);
  if (r != mlirShapedTypeGetRank(big))
    return false;
  for (intptr_t i = 0; i < r; ++i) {
    int64_t d = mlirShapedTypeGetDimSize(small, i);
    if (d != 1 && d != mlirShapedTypeGetDimSize(big, i))
      return false;
  }
  return true;
}

typedef struct domain_s {
  MlirType out;   /* group output shape */
  MlirType input; /* reduction input shape (reduction-like groups) */
  bool reduction_like;
  /* A matrix product's group ([M, N], unit dimensions aside): its epilogue
   * may continue through row views (rule 3). */
  bool row_views;
} domain_t;

/* The number of elements of a static shape, or -1. */
static int64_t num_elements(MlirType t) {
  if (mlirTypeIsNull(t) || !mlirTypeIsARankedTensor(t) ||
      !mlirShapedTypeHasStaticShape(t))
    return -1;
  int64_t n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i)
    n *= mlirShapedTypeGetDimSize(t, i);
  return n;
}

/* The same rows: static shapes with the same innermost dimension (not 1)
 * and the same number of elements. [16384, 768] and [32, 512, 768] are
 * the same 16384 rows of 768 in row-major order: only the leading
 * dimensions are grouped differently. */
static bool same_rows(MlirType a, MlirType b) {
  int64_t na = num_elements(a), nb = num_elements(b);
  if (na < 0 || na != nb || !mlirShapedTypeGetRank(a) ||
      !mlirShapedTypeGetRank(b))
    return false;
  int64_t la = mlirShapedTypeGetDimSize(a, mlirShapedTypeGetRank(a) - 1);
  int64_t lb = mlirShapedTypeGetDimSize(b, mlirShapedTypeGetRank(b) - 1);
  return la == lb && la != 1;
}

/* A matrix: at most two dimensions that are not 1. */
static bool is_matrix(MlirType t) {
  if (mlirTypeIsNull(t) || !mlirTypeIsARankedTensor(t))
    return false;
  int non_unit = 0;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i)
    non_unit += mlirShapedTypeGetDimSize(t, i) != 1;
  return non_unit <= 2;
}

/* A row view: a static tensor.collapse_shape or expand_shape that regroups
 * leading dimensions only (the innermost one kept, not 1), as an importer
 * wraps a Linear: [B, T, K] -> [B*T, K] before the matmul, [B*T, N] ->
 * [B, T, N] after it. Left in place by rule 0 (it moves non-unit
 * dimensions); only a matrix product's epilogue takes it in (rule 3). */
static bool is_row_view(const node_t *nd) {
  if (nd->kind != LF_OPK_OTHER || nd->group >= 0 ||
      mlirOperationGetNumOperands(nd->op) != 1 ||
      mlirOperationGetNumResults(nd->op) != 1 ||
      !(name_is(nd->op, "tensor.expand_shape") ||
        name_is(nd->op, "tensor.collapse_shape")) ||
      !element_type_supported(nd->shape))
    return false;
  return same_rows(mlirValueGetType(mlirOperationGetOperand(nd->op, 0)),
                   nd->shape);
}

static bool in_domain(const domain_t *dom, MlirType t) {
  return same_shape_mod_units(dom->out, t) ||
         (dom->reduction_like && same_shape_mod_units(dom->input, t)) ||
         (dom->row_views && same_rows(dom->out, t));
}

/* A smaller operand that broadcasts into the domain (a bias, a row
 * statistic): recomputed per element, so only fused when cheap. */
static bool broadcasts_into_domain(const domain_t *dom, MlirType t) {
  return broadcasts_to(t, dom->out) ||
         (dom->reduction_like && broadcasts_to(t, dom->input));
}

static int count_kind(const lf_group_t *grp, lf_op_kind_t kind) {
  int n = 0;
  for (size_t i = 0; i < grp->num_members; ++i)
    n += grp->members[i].kind == kind;
  return n;
}

/* Few body ops and inputs: recomputing it costs little. */
static bool is_cheap(const node_t *nd) {
  if (nd->kind == LF_OPK_FILL || nd->kind == LF_OPK_BROADCAST ||
      is_free_kind(nd->kind))
    return true;
  if (nd->kind != LF_OPK_ELEMENTWISE)
    return false;
  body_scan_t body = scan_body(nd->op);
  intptr_t inputs = mlirOperationGetNumOperands(nd->op) -
                    mlirOperationGetNumResults(nd->op);
  return body.arith_ops <= 2 && inputs <= 2;
}

/* Are all users of `nd` moved into group `gid`? A user merely cloned into
 * the group does not count: its original stays and still reads `nd`. */
static bool all_users_in(const graph_t *g, const node_t *nd, int gid) {
  for (size_t u = 0; u < nd->num_users; ++u)
    if (g->nodes[nd->users[u]].group != gid)
      return false;
  return true;
}

/* A member recomputed because it had users outside the group keeps its
 * place only while it still has them: once the group holds every user, it
 * moves in. */
static void settle_recomputed(graph_t *g, building_t *b, int gid) {
  lf_group_t *grp = &b->groups[gid];
  for (size_t m = 0; m < grp->num_members; ++m) {
    lf_member_t *mem = &grp->members[m];
    long mi = node_of(g, mem->op);
    if (!mem->recompute || is_free_kind(mem->kind) || mi < 0 ||
        g->nodes[mi].group >= 0 || !g->nodes[mi].num_users)
      continue;
    if (all_users_in(g, &g->nodes[mi], gid)) {
      mem->recompute = false;
      g->nodes[mi].group = gid;
    }
  }
  refresh_span(g, b, gid);
}

/* Rule 2's extra-result case: may elementwise producer `x`, used outside
 * group `gid` too, move into the reduction-like group and become one more
 * of its results? Only over the reduction's whole input domain (a
 * broadcast or row-statistic producer is not a row-wise input), and only
 * when every user outside the group comes after the group's root, so that
 * no earlier op has to wait for the group's call. */
static bool row_input_result(const graph_t *g, const building_t *b, int gid,
                             const domain_t *dom, size_t x) {
  const node_t *nx = &g->nodes[x];
  if (!dom->reduction_like || !same_shape_mod_units(dom->input, nx->shape) ||
      mlirOperationGetNumResults(nx->op) != 1)
    return false;
  for (size_t u = 0; u < nx->num_users; ++u)
    if (g->nodes[nx->users[u]].group != gid && nx->users[u] < b->roots[gid])
      return false;
  return true;
}

/* Grows group `gid` to a fixed point by rules 2 and 3. */
static lf_status_t grow(graph_t *g, building_t *b, int gid, domain_t *dom,
                        size_t max_ops, bool chain_only) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t m = 0; m < b->groups[gid].num_members; ++m) {
      lf_member_t mem = b->groups[gid].members[m];
      long mi = node_of(g, mem.op);
      if (mi < 0)
        continue;
      node_t *nm = &g->nodes[mi];
      /* Rule 2: producers. */
      for (size_t d = 0; d < nm->num_deps; ++d) {
        size_t x = nm->deps[d];
        node_t *nx = &g->nodes[x];
        if (nx->group >= 0 || member_has(&b->groups[gid], x, g))
          continue;
        bool ok = false, recompute = false;
        bool sole = all_users_in(g, nx, gid);
        switch (nx->kind) {
        case LF_OPK_EMPTY:
          ok = true;
          recompute = true;
          break;
        case LF_OPK_CONSTANT:
          ok = !is_weight_constant(nx->op); /* a weight is an input */
          recompute = true;
          break;
        case LF_OPK_FILL:
        case LF_OPK_BROADCAST:
        case LF_OPK_RESHAPE:
          ok = true;
          recompute = !sole;
          break;
        case LF_OPK_ELEMENTWISE:
          /* A row-wise input of a reduction group that is used elsewhere
           * too (the residual sum before a norm): one more result. */
          if (!sole && !mem.recompute && row_input_result(g, b, gid, dom, x)) {
            bool added;
            LF_RETURN_IF_ERROR(try_add(g, b, gid, x, false, max_ops, &added));
            if (added) {
              changed = true;
              continue;
            }
          }
          ok = mem.kind != LF_OPK_CONTRACTION &&
               ((in_domain(dom, nx->shape) && (sole || is_cheap(nx))) ||
                (broadcasts_into_domain(dom, nx->shape) && is_cheap(nx)));
          recompute = !sole;
          break;
        case LF_OPK_TRANSPOSE:
          /* Into a contraction's operand a transpose is only a layout:
           * the kernel reads the operand strided. */
          ok = mem.kind == LF_OPK_CONTRACTION
                   ? sole
                   : in_domain(dom, nx->shape) && (sole || is_cheap(nx));
          recompute = !sole;
          break;
        case LF_OPK_CONTRACTION:
          /* A second GEMM of the same output shape feeding the epilogue
           * (SwiGLU's silu(x Wg) * (x Wu)): one dual-GEMM group. */
          ok = !chain_only && mem.kind == LF_OPK_ELEMENTWISE &&
               !dom->reduction_like && sole &&
               same_shape(nx->shape, dom->out) &&
               count_kind(&b->groups[gid], LF_OPK_CONTRACTION) == 1;
          break;
        default:
          break;
        }
        if (!ok)
          continue;
        bool added;
        LF_RETURN_IF_ERROR(try_add(g, b, gid, x, recompute, max_ops, &added));
        changed |= added;
      }
      if (mem.recompute)
        continue; /* a recomputed op's users are not the group's business */
      /* Rule 3: consumers. */
      for (size_t u = 0; u < nm->num_users; ++u) {
        size_t x = nm->users[u];
        node_t *nx = &g->nodes[x];
        if (nx->group >= 0 || member_has(&b->groups[gid], x, g))
          continue;
        bool ok = false;
        if (nx->kind == LF_OPK_ELEMENTWISE || nx->kind == LF_OPK_BROADCAST)
          ok = in_domain(dom, nx->shape);
        else if (nx->kind == LF_OPK_TRANSPOSE)
          ok = in_domain(dom, nx->input_shape);
        else if (nx->kind == LF_OPK_RESHAPE)
          ok = true;
        else if (dom->row_views && is_row_view(nx))
          ok = same_rows(dom->out, nx->shape);
        else if (!chain_only && dom->reduction_like &&
                 nx->kind == LF_OPK_REDUCTION)
          ok = same_shape(dom->input, nx->input_shape) &&
               same_shape(dom->out, nx->shape);
        if (!ok)
          continue;
        /* A row view joins as what it is to the kernel: a free reshape
         * (uncounted; never a producer another group could take). */
        lf_op_kind_t kind = nx->kind;
        if (kind == LF_OPK_OTHER)
          nx->kind = LF_OPK_RESHAPE;
        bool added;
        LF_RETURN_IF_ERROR(try_add(g, b, gid, x, false, max_ops, &added));
        if (!added)
          nx->kind = kind;
        changed |= added;
      }
    }
  }
  settle_recomputed(g, b, gid);
  return LF_OK;
}

/* Resizes `*arr` to `n` elements of `size` bytes. */
static lf_status_t resize(void **arr, size_t n, size_t size) {
  void *p = realloc(*arr, n * size);
  if (!p)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  *arr = p;
  return LF_OK;
}

static lf_status_t new_group(building_t *b, size_t root, int *out_gid) {
  if (b->num_groups == b->cap_groups) {
    size_t n = b->cap_groups ? 2 * b->cap_groups : 4;
    LF_RETURN_IF_ERROR(resize((void **)&b->groups, n, sizeof(*b->groups)));
    LF_RETURN_IF_ERROR(resize((void **)&b->roots, n, sizeof(*b->roots)));
    LF_RETURN_IF_ERROR(resize((void **)&b->lo, n, sizeof(*b->lo)));
    LF_RETURN_IF_ERROR(resize((void **)&b->hi, n, sizeof(*b->hi)));
    LF_RETURN_IF_ERROR(resize((void **)&b->seen, n, sizeof(*b->seen)));
    b->cap_groups = n;
  }
  memset(&b->groups[b->num_groups], 0, sizeof(lf_group_t));
  b->roots[b->num_groups] = root;
  b->cap_members = 0;
  b->lo[b->num_groups] = SIZE_MAX;
  b->hi[b->num_groups] = 0;
  b->seen[b->num_groups] = 0;
  *out_gid = (int)b->num_groups++;
  return LF_OK;
}

/* ---- Rule 5: attention. ---- */

/* Appends the members of group `src` to `dst` and points moved nodes at
 * `dst`. Ops already in `dst` are not duplicated; an op moved by either
 * group stays moved. `src` is left as it was (the caller empties it). */
static lf_status_t merge_groups(graph_t *g, building_t *b, int dst, int src) {
  lf_group_t *from = &b->groups[src];
  size_t cap = b->groups[dst].num_members; /* realloc on every push: rare */
  for (size_t m = 0; m < from->num_members; ++m) {
    lf_member_t mem = from->members[m];
    long mi = node_of(g, mem.op);
    lf_group_t *to = &b->groups[dst];
    bool dup = false;
    for (size_t k = 0; k < to->num_members; ++k)
      if (mlirOperationEqual(to->members[k].op, mem.op)) {
        to->members[k].recompute &= mem.recompute;
        dup = true;
      }
    if (!dup) {
      if (to->num_members == cap) {
        size_t n = cap ? 2 * cap : 8;
        lf_member_t *p = realloc(to->members, n * sizeof(*p));
        if (!p)
          return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        to->members = p;
        cap = n;
      }
      to->members[to->num_members++] = mem;
    }
    if (mi >= 0 && !mem.recompute)
      g->nodes[mi].group = dst;
  }
  return LF_OK;
}

/* A view the kernel can read or write through: a static reshape that moves
 * non-unit dimensions (collapse [B, H, T, D] -> [B*H, T, D], as importers
 * wrap a rank-4 matmul around linalg.batch_matmul), or a static slice with
 * unit strides (q, k, v out of a fused QKV). Left in place by rule 0; only
 * rule 5 takes them in, around an attention (see merge_attention). */
static bool is_view(const node_t *nd) {
  if (nd->kind != LF_OPK_OTHER || nd->group >= 0 ||
      mlirTypeIsNull(nd->shape) || !mlirShapedTypeHasStaticShape(nd->shape) ||
      has_dynamic_shape(nd->op) || !element_type_supported(nd->shape))
    return false;
  if (name_is(nd->op, "tensor.expand_shape") ||
      name_is(nd->op, "tensor.collapse_shape"))
    return mlirOperationGetNumOperands(nd->op) == 1;
  if (!name_is(nd->op, "tensor.extract_slice") ||
      mlirOperationGetNumOperands(nd->op) != 1)
    return false;
  MlirAttribute strides = mlirOperationGetAttributeByName(
      nd->op, mlirStringRefCreateFromCString("static_strides"));
  if (mlirAttributeIsNull(strides) || !mlirAttributeIsADenseI64Array(strides))
    return false;
  for (intptr_t i = 0; i < mlirDenseArrayGetNumElements(strides); ++i)
    if (mlirDenseI64ArrayGetElement(strides, i) != 1)
      return false;
  return true;
}

enum { MAX_VIEW_PATH = 8 };

/* A chain of views between two groups: node indices, in walk order. */
typedef struct view_path_s {
  size_t nodes[MAX_VIEW_PATH];
  size_t num;
} view_path_t;

/* Follows node `x` through a chain of views, each with one user (the next
 * op of the chain), towards producers or consumers; records the views in
 * `path` and returns the first node that is not one. Producers: a view's
 * source; consumers: its only user. -1 if the chain ends in a function
 * argument, has a view with other users, or is too long. */
static long through_views(const graph_t *g, size_t x, bool producers,
                          view_path_t *path) {
  path->num = 0;
  while (is_view(&g->nodes[x])) {
    const node_t *nx = &g->nodes[x];
    if (path->num == MAX_VIEW_PATH || nx->num_users != 1)
      return -1;
    path->nodes[path->num++] = x;
    if (producers) {
      long p = producer_of(g, mlirOperationGetOperand(nx->op, 0));
      if (p < 0)
        return -1;
      x = (size_t)p;
    } else {
      x = nx->users[0];
    }
  }
  return (long)x;
}

/* With `producers`: the group of a contraction feeding a member of `self`
 * whose output has `shape`, if that group grew from a contraction.
 * Otherwise: the group whose root contraction reads a member of `self`.
 * Either may be reached through a chain of views (an importer's expand of
 * the batch_matmul result to [B, H, T, T], its collapse of the
 * probabilities to [B*H, T, T]); the views are recorded in `path`, and the
 * shape checked on the producer side is the last view's. -1 if none. */
static int neighbour_group(graph_t *g, building_t *b, int self,
                           bool producers, MlirType shape,
                           view_path_t *path) {
  const lf_group_t *grp = &b->groups[self];
  for (size_t m = 0; m < grp->num_members; ++m) {
    long mi = node_of(g, grp->members[m].op);
    if (mi < 0 || grp->members[m].recompute)
      continue;
    node_t *nm = &g->nodes[mi];
    size_t n = producers ? nm->num_deps : nm->num_users;
    for (size_t k = 0; k < n; ++k) {
      size_t first = producers ? nm->deps[k] : nm->users[k];
      long xi = through_views(g, first, producers, path);
      if (xi < 0)
        continue;
      node_t *nx = &g->nodes[xi];
      if (nx->group < 0 || nx->group == self ||
          g->nodes[b->roots[nx->group]].kind != LF_OPK_CONTRACTION)
        continue;
      /* Producer side: the scores GEMM, its output the row domain.
       * Consumer side: the value GEMM, reading the probabilities. */
      if (producers ? same_shape(g->nodes[first].shape, shape)
                    : (size_t)xi == b->roots[nx->group])
        return nx->group;
    }
  }
  path->num = 0;
  return -1;
}

/* After an attention merge (rule 5) through views: takes into group `gid`
 * the views and transposes that lead its operands out of one buffer
 * (the head-split transposes and expands of q, k and v, and their slices
 * of a fused QKV: the group then reads [B, T, 3C] with the head stride)
 * and those that lead its one output to its consumer (the head merge:
 * transpose to [B, T, H, D] and collapse to [B*T, C]). A producer joins
 * when the group holds all its users; a consumer when it is the only user
 * of a member. Nothing is taken in past a slice's source. */
static lf_status_t absorb_views(graph_t *g, building_t *b, int gid,
                                size_t max_ops) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t m = 0; m < b->groups[gid].num_members; ++m) {
      lf_member_t mem = b->groups[gid].members[m];
      long mi = node_of(g, mem.op);
      if (mi < 0 || mem.recompute)
        continue;
      node_t *nm = &g->nodes[mi];
      for (int dir = 0; dir < 2; ++dir) {
        if (dir == 0 && name_is(nm->op, "tensor.extract_slice"))
          continue;
        size_t n = dir == 0 ? nm->num_deps : nm->num_users;
        for (size_t k = 0; k < n; ++k) {
          size_t x = dir == 0 ? nm->deps[k] : nm->users[k];
          node_t *nx = &g->nodes[x];
          bool view = is_view(nx);
          if (dir == 0 && nx->kind == LF_OPK_EMPTY) {
            /* a transpose's destination: cloned, as in rule 2 */
            bool added;
            b->cap_members = b->groups[gid].num_members;
            LF_RETURN_IF_ERROR(try_add(g, b, gid, x, true, max_ops, &added));
            changed |= added;
            continue;
          }
          if (nx->group >= 0 || (!view && nx->kind != LF_OPK_TRANSPOSE))
            continue;
          if (dir == 0 ? !all_users_in(g, nx, gid) : nm->num_users != 1)
            continue;
          lf_op_kind_t kind = nx->kind;
          if (view)
            nx->kind = LF_OPK_RESHAPE; /* free, uncounted, like one */
          b->cap_members = b->groups[gid].num_members;
          bool added;
          LF_RETURN_IF_ERROR(try_add(g, b, gid, x, false, max_ops, &added));
          if (!added)
            nx->kind = kind;
          changed |= added;
        }
      }
    }
  }
  refresh_span(g, b, gid);
  return LF_OK;
}

/* Are the results of these members used only by group `gid`? */
static bool used_only_by(const graph_t *g, const lf_member_t *members,
                         size_t n, int gid) {
  for (size_t m = 0; m < n; ++m) {
    long mi = node_of(g, members[m].op);
    if (mi < 0 || members[m].recompute)
      continue;
    const node_t *nd = &g->nodes[mi];
    for (size_t u = 0; u < nd->num_users; ++u)
      if (g->nodes[nd->users[u]].group != gid)
        return false;
  }
  return true;
}

/* Rule 5: a contraction group whose output is the row domain of a
 * reduction or softmax group, which in turn feeds the root contraction of
 * a third group (QK^T, softmax, PV), becomes one attention-like group,
 * provided the scores and probabilities are used by nothing else: they
 * then never leave the kernel (flash attention). A GEMM, a LayerNorm and
 * the next GEMM have the same shape of graph, but the first GEMM's output
 * is also the residual: they stay three groups. */
static lf_status_t merge_attention(graph_t *g, building_t *b, size_t max_ops) {
  for (size_t r = 0; r < b->num_groups; ++r) {
    node_t *root = &g->nodes[b->roots[r]];
    if ((root->kind != LF_OPK_REDUCTION && root->kind != LF_OPK_SOFTMAX) ||
        !b->groups[r].num_members)
      continue;
    view_path_t pa, pc;
    int a = neighbour_group(g, b, (int)r, true, root->input_shape, &pa);
    int c = neighbour_group(g, b, (int)r, false, (MlirType){NULL}, &pc);
    if (a < 0 || c < 0 || a == c)
      continue;
    if (counted_members(&b->groups[a]) + counted_members(&b->groups[r]) +
            counted_members(&b->groups[c]) > max_ops)
      continue;
    size_t old_len = b->groups[a].num_members;
    lf_member_t *saved = malloc(old_len * sizeof(*saved));
    if (!saved)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    memcpy(saved, b->groups[a].members, old_len * sizeof(*saved));
    lf_status_t status = merge_groups(g, b, a, (int)r);
    if (!status)
      status = merge_groups(g, b, a, c);
    /* The importer form: the views between the three join as free
     * reshapes (the kernel reads and writes through them). */
    for (size_t i = 0; !status && i < pa.num + pc.num; ++i) {
      node_t *nv = &g->nodes[i < pa.num ? pa.nodes[i] : pc.nodes[i - pa.num]];
      size_t cap = b->groups[a].num_members;
      nv->kind = LF_OPK_RESHAPE;
      status = push_member(&b->groups[a], &cap, nv, false);
      if (!status)
        nv->group = a;
    }
    /* While merged, r and c own nothing. */
    refresh_span(g, b, a);
    refresh_span(g, b, (int)r);
    refresh_span(g, b, c);
    bool legal = !status && used_only_by(g, saved, old_len, a) &&
                 used_only_by(g, b->groups[r].members,
                              b->groups[r].num_members, a) &&
                 !group_has_cycle(g, a, b);
    if (!legal) {
      for (size_t i = 0; i < pa.num + pc.num; ++i) {
        node_t *nv = &g->nodes[i < pa.num ? pa.nodes[i] : pc.nodes[i - pa.num]];
        nv->kind = LF_OPK_OTHER;
        nv->group = -1;
      }
      b->groups[a].num_members = old_len;
      memcpy(b->groups[a].members, saved, old_len * sizeof(*saved));
      free(saved);
      for (int src = 0; src < 2; ++src) {
        int gid = src ? c : (int)r;
        const lf_group_t *grp = &b->groups[gid];
        for (size_t m = 0; m < grp->num_members; ++m) {
          long mi = node_of(g, grp->members[m].op);
          if (mi >= 0 && !grp->members[m].recompute)
            g->nodes[mi].group = gid;
        }
        refresh_span(g, b, gid);
      }
      refresh_span(g, b, a);
      LF_RETURN_IF_ERROR(status);
      continue;
    }
    free(saved);
    b->groups[r].num_members = 0;
    b->groups[c].num_members = 0;
    /* The importer form: then the views and transposes around the
     * operands and the output. */
    if (pa.num || pc.num)
      LF_RETURN_IF_ERROR(absorb_views(g, b, a, max_ops));
  }
  return LF_OK;
}

static lf_status_t left_alone(lf_partition_t *p, size_t *cap, MlirOperation op,
                              const char *reason) {
  if (p->num_left_alone == *cap) {
    size_t n = *cap ? 2 * *cap : 4;
    lf_left_alone_t *q = realloc(p->left_alone, n * sizeof(*q));
    if (!q)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    p->left_alone = q;
    *cap = n;
  }
  char *copy = strdup(reason);
  if (!copy)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  p->left_alone[p->num_left_alone++] = (lf_left_alone_t){op, copy};
  return LF_OK;
}

/* Sorts members into block order, which outlining relies on. */
static void sort_members(lf_group_t *grp) {
  for (size_t i = 1; i < grp->num_members; ++i) {
    lf_member_t key = grp->members[i];
    size_t j = i;
    while (j > 0 && mlirOperationIsBeforeInBlock(key.op, grp->members[j - 1].op)) {
      grp->members[j] = grp->members[j - 1];
      --j;
    }
    grp->members[j] = key;
  }
}

static lf_group_class_t classify_group(const lf_group_t *grp) {
  int contractions = 0, reductions = 0, softmax = 0;
  for (size_t i = 0; i < grp->num_members; ++i) {
    contractions += grp->members[i].kind == LF_OPK_CONTRACTION;
    reductions += grp->members[i].kind == LF_OPK_REDUCTION;
    softmax += grp->members[i].kind == LF_OPK_SOFTMAX;
  }
  if (contractions >= 2 && (reductions || softmax))
    return LF_CLASS_ATTENTION;
  if (contractions)
    return LF_CLASS_CONTRACTION;
  if (softmax)
    return LF_CLASS_SOFTMAX;
  if (reductions)
    return LF_CLASS_REDUCTION;
  return LF_CLASS_ELEMENTWISE;
}

lf_status_t lf_partition_block(MlirBlock block,
                               const lf_partition_options_t *options,
                               lf_partition_t *out) {
  memset(out, 0, sizeof(*out));
  size_t max_ops = options->max_group_ops ? options->max_group_ops : 32;
  graph_t g;
  building_t b = {0};
  size_t cap_left = 0;
  lf_status_t status = graph_build(&g, block);
  if (status)
    goto out;

  /* Rule 0: shapes and unhandled ops. */
  for (size_t i = 0; i < g.num_nodes; ++i) {
    node_t *nd = &g.nodes[i];
    if (nd->kind != LF_OPK_OTHER && has_dynamic_shape(nd->op)) {
      nd->kind = LF_OPK_OTHER;
      status = left_alone(out, &cap_left, nd->op,
                          "dynamic shape: not fused (only static shapes are "
                          "partitioned for now)");
      if (status)
        goto out;
      continue;
    }
    lf_strbuf_t type = {0};
    lf_strbuf_init(&type, 256);
    if (nd->kind != LF_OPK_OTHER && !is_free_kind(nd->kind))
      unsupported_type(nd->op, &type);
    if (lf_strbuf_len(&type)) {
      nd->kind = LF_OPK_OTHER;
      char msg[400];
      snprintf(msg, sizeof(msg),
               "unsupported element type in %s (kernels handle f16, bf16, "
               "f32, f64 and integers up to 64 bits): left in place",
               lf_strbuf_cstr(&type));
      status = left_alone(out, &cap_left, nd->op, msg);
    } else if (nd->kind == LF_OPK_OTHER && has_tensor_result(nd->op)) {
      MlirIdentifier name = mlirOperationGetName(nd->op);
      status = left_alone(
          out, &cap_left, nd->op,
          mlirContextIsRegisteredOperation(mlirOperationGetContext(nd->op),
                                           mlirIdentifierStr(name))
              ? "op not handled by the partitioner: left in place"
              : "unregistered op: left in place");
    }
    lf_strbuf_free(&type);
    if (status)
      goto out;
  }

  /* Rule 1 with rules 2 and 3: roots in priority order, then block order. */
  static const lf_op_kind_t root_kinds[] = {LF_OPK_CONTRACTION, LF_OPK_SOFTMAX,
                                            LF_OPK_REDUCTION};
  for (size_t k = 0; k < 3; ++k) {
    for (size_t i = 0; i < g.num_nodes; ++i) {
      node_t *nd = &g.nodes[i];
      if (nd->kind != root_kinds[k] || nd->group >= 0)
        continue;
      int gid;
      bool added;
      if ((status = new_group(&b, i, &gid)) ||
          (status = try_add(&g, &b, gid, i, false, max_ops, &added)))
        goto out;
      domain_t dom = {nd->shape, nd->input_shape,
                      nd->kind != LF_OPK_CONTRACTION,
                      nd->kind == LF_OPK_CONTRACTION && is_matrix(nd->shape)};
      if ((status = grow(&g, &b, gid, &dom, max_ops, false)))
        goto out;
    }
  }

  /* Rule 5: attention. */
  if ((status = merge_attention(&g, &b, max_ops)))
    goto out;
  /* Views rule 5 took in are no longer left alone. */
  {
    size_t kept_left = 0;
    for (size_t i = 0; i < out->num_left_alone; ++i) {
      long ni = node_of(&g, out->left_alone[i].op);
      if (ni >= 0 && g.nodes[ni].group >= 0) {
        free(out->left_alone[i].reason);
        continue;
      }
      out->left_alone[kept_left++] = out->left_alone[i];
    }
    out->num_left_alone = kept_left;
  }

  /* Rule 4: the remaining elementwise (and transpose) chains. */
  for (size_t i = 0; i < g.num_nodes; ++i) {
    node_t *nd = &g.nodes[i];
    if ((nd->kind != LF_OPK_ELEMENTWISE && nd->kind != LF_OPK_TRANSPOSE) ||
        nd->group >= 0)
      continue;
    int gid;
    bool added;
    if ((status = new_group(&b, i, &gid)) ||
        (status = try_add(&g, &b, gid, i, false, max_ops, &added)))
      goto out;
    domain_t dom = {nd->shape, {NULL}, false, false};
    if ((status = grow(&g, &b, gid, &dom, max_ops, true)))
      goto out;
  }

  /* Drop the groups rule 5 emptied; order and classify the rest. */
  size_t kept = 0;
  for (size_t i = 0; i < b.num_groups; ++i) {
    if (!b.groups[i].num_members) {
      free(b.groups[i].members);
      continue;
    }
    b.groups[kept] = b.groups[i];
    sort_members(&b.groups[kept]);
    b.groups[kept].group_class = classify_group(&b.groups[kept]);
    ++kept;
  }
  b.num_groups = kept;

  /* Ops only ever cloned: the outliner may erase them afterwards. */
  ++g.stamp;
  for (size_t i = 0; i < b.num_groups; ++i)
    for (size_t m = 0; m < b.groups[i].num_members; ++m) {
      long mi = node_of(&g, b.groups[i].members[m].op);
      if (mi < 0 || g.nodes[mi].group >= 0 || g.seen[mi] == g.stamp)
        continue;
      g.seen[mi] = g.stamp;
      ++out->num_cloned_only;
    }
  out->cloned_only = calloc(out->num_cloned_only + 1, sizeof(MlirOperation));
  if (!out->cloned_only) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  out->num_cloned_only = 0;
  for (size_t i = 0; i < g.num_nodes; ++i)
    if (g.seen[i] == g.stamp)
      out->cloned_only[out->num_cloned_only++] = g.nodes[i].op;

  out->groups = b.groups;
  out->num_groups = b.num_groups;
  b.groups = NULL;

out:
  if (b.groups) {
    for (size_t i = 0; i < b.num_groups; ++i)
      free(b.groups[i].members);
    free(b.groups);
  }
  free(b.roots);
  free(b.lo);
  free(b.hi);
  free(b.seen);
  graph_free(&g);
  if (status)
    lf_partition_free(out);
  return status;
}

void lf_partition_free(lf_partition_t *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->num_groups; ++i)
    free(p->groups[i].members);
  free(p->groups);
  for (size_t i = 0; i < p->num_left_alone; ++i)
    free(p->left_alone[i].reason);
  free(p->left_alone);
  free(p->cloned_only);
  memset(p, 0, sizeof(*p));
}
