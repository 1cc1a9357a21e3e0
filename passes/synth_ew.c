/* synth_ew.c - the elementwise kernel synthesizer (synth_ew.h).
 *
 * How a kernel is made, on a copy of the subgraph:
 *  1. generalize: arith/math on tensors become linalg.generic
 *     (convert-elementwise-to-linalg), named ops (linalg.add, map, fill,
 *     broadcast, transpose, ...) too (linalg-generalize-named-ops), and
 *     math.fpowi with a constant exponent becomes multiplications
 *     (math-expand-ops, as the reference lowering does);
 *  2. check every op of the body, and walk the values the results depend
 *     on with symbolic coordinates (each a domain dimension or the constant
 *     0): this refuses what is not elementwise and classifies every read of
 *     an input as contiguous in the innermost dimension, invariant along it
 *     (a broadcast) or strided (a transpose), which sets the vector width;
 *  3. parse a fixed skeleton (a gpu.func with a grid-stride scf.for over
 *     the output's elements, V at a time) and fill the loop body with the
 *     C API: the domain coordinates from the loop index, a load per
 *     (input, coordinates), the body of each linalg.generic cloned with
 *     its block arguments mapped to the values read or computed, once per
 *     lane (once for all lanes when no operand varies along the innermost
 *     dimension), and a store per result;
 *  4. verify and print the gpu.module.
 * Everything computed for one (value, coordinates) pair is computed once
 * (a memo), so a value used by several consumers is not recomputed, and a
 * linalg.generic with two results clones its body once.
 */
#include "passes/synth_ew.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Pass.h"
#include "passes/mlir_util.h"

#define MAX_RANK 6
#define MAX_V 8
#define MAX_MAP_RANK 16   /* loops of one linalg.generic */
#define MAX_CREATED 50000 /* ops in one kernel */

/* The passes that bring a subgraph to generics (step 1). */
#define GENERALIZE_PIPELINE                                                    \
  "builtin.module(func.func(convert-elementwise-to-linalg,"                    \
  "linalg-generalize-named-ops),math-expand-ops{ops=fpowi})"

/* A symbolic coordinate: a domain dimension (>= 0) or the constant 0. */
typedef signed char sc_t;
#define SC_ZERO ((sc_t)-1)

/* One value per lane; every entry is the same value when it does not vary
 * along the innermost dimension. */
typedef struct lanes_s {
  MlirValue v[MAX_V];
} lanes_t;

/* A memo entry: what `key` (a value, or a generic op) gives at `coords`. */
typedef struct memo_s {
  const void *key;
  int n;
  sc_t coords[MAX_MAP_RANK];
  size_t nres;
  lanes_t *res;
} memo_t;

typedef struct syn_s {
  MlirContext ctx;
  MlirLocation loc;
  MlirBlock body; /* the generalized copy's body */
  size_t nin;     /* function inputs */
  int D;          /* domain rank */
  int64_t shape[MAX_RANK];
  int V;
  /* Analysis (step 2). */
  bool strided;        /* some input is read across the innermost dimension */
  int max_bytes;       /* widest element read or written contiguously */
  bool unvectorizable; /* a contiguous element type vectors cannot hold */
  /* The kernel (step 3). */
  MlirBlock kentry;   /* the gpu.func's entry block: hoisted constants */
  MlirOperation kfor; /* ... go before the loop */
  MlirBlock lbody;    /* the loop body */
  MlirOperation lyield;
  MlirValue kargs[64];
  MlirValue dom[MAX_RANK]; /* domain coordinates of lane 0 */
  MlirValue inner[MAX_V];  /* innermost coordinate of each lane (lazy) */
  memo_t *memo;
  size_t nmemo, capmemo;
  struct {
    const void *key;
    int64_t ival;
    MlirValue val;
  } * consts;
  size_t nconsts, capconsts;
  size_t created;
  size_t generics;
  lf_status_t err; /* the first refusal or error */
} syn_t;

/* ---- Small helpers. ---- */

static void loc_text(MlirLocation loc, char *out, size_t size) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 4096);
  mlirLocationPrint(loc, lf_strbuf_print_cb, &b);
  const char *t = lf_strbuf_cstr(&b);
  size_t n = strlen(t);
  if (n > 5 && !strncmp(t, "loc(", 4) && t[n - 1] == ')') {
    t += 4;
    n -= 5;
  }
  snprintf(out, size, "%.*s", (int)n, t);
  lf_strbuf_free(&b);
}

/* Records the first refusal: "<op> at <loc>: <why>". */
static bool refuse(syn_t *s, MlirOperation op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool refuse(syn_t *s, MlirOperation op, const char *fmt, ...) {
  if (s->err)
    return false;
  char why[512], where[300] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  if (mlirOperationIsNull(op)) {
    s->err = LF_STATUS(LF_STATUS_UNIMPLEMENTED, "%s", why);
    return false;
  }
  char *name = lf_op_name_dup(op);
  loc_text(mlirOperationGetLocation(op), where, sizeof(where));
  s->err = LF_STATUS(LF_STATUS_UNIMPLEMENTED, "%s%s%s: %s", name ? name : "?",
                     where[0] ? " at " : "", where, why);
  free(name);
  return false;
}

static bool internal(syn_t *s, const char *what) {
  if (!s->err)
    s->err = LF_STATUS(LF_STATUS_INTERNAL, "synthesizer: %s", what);
  return false;
}

static char *type_text(MlirType t) { return lf_type_dup(t); }

/* Bytes of a memory element type, 0 when vectors cannot hold it (i1, or a
 * width that is not whole bytes), -1 when it is not supported at all. */
static int elem_bytes(MlirType e) {
  if (mlirTypeIsAF16(e) || mlirTypeIsABF16(e))
    return 2;
  if (mlirTypeIsAF32(e))
    return 4;
  if (mlirTypeIsAF64(e))
    return 8;
  if (mlirTypeIsAInteger(e)) {
    unsigned w = mlirIntegerTypeGetWidth(e);
    if (w > 64)
      return -1;
    return w % 8 || w == 0 ? 0 : (int)(w / 8);
  }
  return -1;
}

/* A static ranked tensor of rank <= MAX_RANK with a supported element. */
static bool good_tensor(MlirType t) {
  return mlirTypeIsARankedTensor(t) && mlirShapedTypeHasStaticShape(t) &&
         mlirShapedTypeGetRank(t) <= MAX_RANK &&
         elem_bytes(mlirShapedTypeGetElementType(t)) >= 0;
}

static bool is_scalar_type(MlirType t) {
  return mlirTypeIsAFloat(t) || mlirTypeIsAInteger(t) || mlirTypeIsAIndex(t);
}

static bool has_prefix(MlirOperation op, const char *prefix) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t k = strlen(prefix);
  return n.length >= k && !memcmp(n.data, prefix, k);
}

static bool value_eq(MlirValue a, MlirValue b) { return a.ptr == b.ptr; }

/* The index of `v` among the function body's arguments, or -1. */
static intptr_t func_arg_index(syn_t *s, MlirValue v) {
  if (!mlirValueIsABlockArgument(v))
    return -1;
  if (mlirBlockArgumentGetOwner(v).ptr != s->body.ptr)
    return -1;
  return mlirBlockArgumentGetArgNumber(v);
}

/* An op of the function body (not nested), or null. */
static MlirOperation top_owner(syn_t *s, MlirValue v) {
  if (!mlirValueIsAOpResult(v))
    return (MlirOperation){NULL};
  MlirOperation op = mlirOpResultGetOwner(v);
  return mlirOperationGetBlock(op).ptr == s->body.ptr ? op
                                                      : (MlirOperation){NULL};
}

/* ---- Generics: maps and checks. ---- */

static MlirAttribute attr(MlirOperation op, const char *name) {
  return mlirOperationGetAttributeByName(op, lf_str(name));
}

static intptr_t generic_inputs(MlirOperation g) {
  return mlirOperationGetNumOperands(g) - mlirOperationGetNumResults(g);
}

static MlirAffineMap generic_map(MlirOperation g, intptr_t operand) {
  return mlirAffineMapAttrGetValue(
      mlirArrayAttrGetElement(attr(g, "indexing_maps"), operand));
}

static void contains_cb(MlirStringRef s, void *user) {
  bool *found = user;
  for (size_t i = 0; i + 8 <= s.length; ++i)
    if (!memcmp(s.data + i, "parallel", 8))
      *found = true;
}

static MlirBlock generic_body(MlirOperation g) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(g, 0));
}

/* Applies `map` (results: dims or the constant 0) to loop coordinates
 * `p` into `out`; returns its rank. */
static int apply_map(MlirAffineMap map, const sc_t *p, sc_t *out) {
  intptr_t n = mlirAffineMapGetNumResults(map);
  for (intptr_t r = 0; r < n; ++r) {
    MlirAffineExpr e = mlirAffineMapGetResult(map, r);
    out[r] =
        mlirAffineExprIsADim(e) ? p[mlirAffineDimExprGetPosition(e)] : SC_ZERO;
  }
  return (int)n;
}

/* Where a value used inside a generic's body comes from, when it is
 * defined outside the body: a function argument (a scalar) or a scalar
 * arith.constant of the function body. */
static bool outer_scalar_ok(syn_t *s, MlirOperation g, MlirValue v) {
  if (!is_scalar_type(mlirValueGetType(v)))
    return refuse(s, g, "its body uses a non-scalar value defined outside it");
  if (func_arg_index(s, v) >= 0)
    return true;
  MlirOperation def = top_owner(s, v);
  if (!mlirOperationIsNull(def) && lf_op_is(def, "arith.constant"))
    return true;
  if (!mlirOperationIsNull(def)) {
    char *n = lf_op_name_dup(def);
    refuse(s, g,
           "its body uses a scalar made by %s outside it (only constants "
           "and scalar arguments are taken)",
           n ? n : "?");
    free(n);
    return false;
  }
  return refuse(s, g, "its body uses a value of an enclosing region");
}

/* Checks one linalg.generic of the body (step 2). */
static bool check_generic(syn_t *s, MlirOperation g) {
  MlirAttribute iters = attr(g, "iterator_types");
  MlirAttribute maps = attr(g, "indexing_maps");
  if (!mlirAttributeIsAArray(iters) || !mlirAttributeIsAArray(maps))
    return refuse(s, g, "no iterator types or indexing maps");
  intptr_t loops = mlirArrayAttrGetNumElements(iters);
  if (loops > MAX_MAP_RANK)
    return refuse(s, g, "%ld loops (at most %d)", (long)loops, MAX_MAP_RANK);
  for (intptr_t i = 0; i < loops; ++i) {
    bool par = false;
    mlirAttributePrint(mlirArrayAttrGetElement(iters, i), contains_cb, &par);
    if (!par)
      return refuse(s, g,
                    "loop %ld is not parallel (a reduction): not "
                    "elementwise",
                    (long)i);
  }
  intptr_t nops = mlirOperationGetNumOperands(g);
  if (mlirArrayAttrGetNumElements(maps) != nops)
    return refuse(s, g, "one indexing map per operand expected");
  intptr_t nin = generic_inputs(g);
  for (intptr_t i = 0; i < nops; ++i) {
    MlirAffineMap m = generic_map(g, i);
    MlirType t = mlirValueGetType(mlirOperationGetOperand(g, i));
    if (mlirAffineMapGetNumDims(m) != loops || mlirAffineMapGetNumSymbols(m))
      return refuse(s, g, "indexing map %ld has symbols or another rank",
                    (long)i);
    uint32_t seen = 0;
    for (intptr_t r = 0; r < mlirAffineMapGetNumResults(m); ++r) {
      MlirAffineExpr e = mlirAffineMapGetResult(m, r);
      bool zero = mlirAffineExprIsAConstant(e) &&
                  mlirAffineConstantExprGetValue(e) == 0;
      if (zero && i < nin)
        continue;
      if (!mlirAffineExprIsADim(e))
        return refuse(s, g,
                      "indexing map %ld is not a projected permutation "
                      "(a window, stride or skew)",
                      (long)i);
      intptr_t d = mlirAffineDimExprGetPosition(e);
      if (seen & (1u << d))
        return refuse(s, g, "indexing map %ld repeats loop d%ld", (long)i,
                      (long)d);
      seen |= 1u << d;
    }
    if (i >= nin && (mlirAffineMapGetNumResults(m) != loops))
      return refuse(s, g, "output map %ld is not a permutation", (long)i);
    if (mlirTypeIsATensor(t) && !good_tensor(t))
      return refuse(s, g,
                    "operand %ld is not a static tensor of rank <= %d "
                    "with f16/bf16/f32/f64/integer elements (a dynamic "
                    "shape?)",
                    (long)i, MAX_RANK);
    if (i >= nin && !mlirTypeIsATensor(t))
      return refuse(s, g, "output %ld is not a tensor", (long)(i - nin));
    if (!mlirTypeIsATensor(t) && !is_scalar_type(t))
      return refuse(s, g, "input %ld is neither a tensor nor a scalar",
                    (long)i);
    if (!mlirTypeIsATensor(t) && i < nin &&
        !outer_scalar_ok(s, g, mlirOperationGetOperand(g, i)))
      return false;
  }
  if (mlirOperationGetNumRegions(g) != 1)
    return refuse(s, g, "no body");
  MlirBlock body = generic_body(g);
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationGetNumRegions(op))
      return refuse(s, op,
                    "an op with regions inside a linalg.generic body "
                    "is not cloned");
    if (!lf_op_is(op, "linalg.yield") && !lf_op_is(op, "linalg.index") &&
        !has_prefix(op, "arith.") && !has_prefix(op, "math."))
      return refuse(s, op,
                    "inside a linalg.generic body: only arith, math and "
                    "linalg.index are elementwise (this reads memory or "
                    "has effects)");
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      if (mlirValueIsABlockArgument(v) &&
          mlirBlockArgumentGetOwner(v).ptr == body.ptr)
        continue;
      if (mlirValueIsAOpResult(v) &&
          mlirOperationGetBlock(mlirOpResultGetOwner(v)).ptr == body.ptr)
        continue;
      if (!outer_scalar_ok(s, g, v))
        return false;
    }
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
      if (!is_scalar_type(mlirValueGetType(mlirOperationGetResult(op, i))))
        return refuse(s, op,
                      "a non-scalar result inside a linalg.generic "
                      "body");
  }
  return true;
}

/* A reshape that only adds or drops size-1 dimensions. */
static bool is_unit_reshape(MlirOperation op) {
  MlirType a = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType b = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!good_tensor(a) || !good_tensor(b))
    return false;
  return lf_same_shape_mod_units(a, b);
}

/* Coordinates of a unit reshape's source from its result's. */
static int reshape_coords(MlirOperation op, const sc_t *c, sc_t *out) {
  MlirType a = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType b = mlirValueGetType(mlirOperationGetResult(op, 0));
  intptr_t ra = mlirShapedTypeGetRank(a), rb = mlirShapedTypeGetRank(b);
  intptr_t j = 0;
  for (intptr_t i = 0; i < ra; ++i) {
    if (mlirShapedTypeGetDimSize(a, i) == 1) {
      out[i] = SC_ZERO;
      continue;
    }
    while (j < rb && mlirShapedTypeGetDimSize(b, j) == 1)
      ++j;
    out[i] = j < rb ? c[j++] : SC_ZERO;
  }
  return (int)ra;
}

/* Checks every op of the function body. */
static bool check_body(syn_t *s) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (lf_op_is(op, "func.return") || lf_op_is(op, "tensor.empty"))
      continue;
    if (lf_op_is(op, "arith.constant")) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
      if (is_scalar_type(t))
        continue;
      MlirAttribute v = attr(op, "value");
      if (mlirTypeIsATensor(t) && good_tensor(t) &&
          mlirAttributeIsADenseElements(v) && mlirDenseElementsAttrIsSplat(v))
        continue;
      return refuse(s, op,
                    "only scalar and splat constants are taken (a "
                    "tensor of values would have to be an input)");
    }
    if (lf_op_is(op, "tensor.expand_shape") ||
        lf_op_is(op, "tensor.collapse_shape")) {
      if (is_unit_reshape(op))
        continue;
      return refuse(s, op,
                    "a reshape that regroups dimensions of size > 1 "
                    "(only size-1 dimensions may come and go)");
    }
    if (lf_op_is(op, "linalg.generic")) {
      if (!check_generic(s, op))
        return false;
      continue;
    }
    return refuse(s, op,
                  "not elementwise: the synthesizer takes "
                  "all-parallel linalg ops, arith/math on tensors, "
                  "constants, tensor.empty and unit reshapes");
  }
  return true;
}

/* ---- Memo. ---- */

static memo_t *memo_find(syn_t *s, const void *key, const sc_t *c, int n) {
  for (size_t i = 0; i < s->nmemo; ++i) {
    memo_t *m = &s->memo[i];
    if (m->key == key && m->n == n && !memcmp(m->coords, c, (size_t)n))
      return m;
  }
  return NULL;
}

static memo_t *memo_add(syn_t *s, const void *key, const sc_t *c, int n,
                        size_t nres) {
  if (s->nmemo == s->capmemo) {
    size_t cap = s->capmemo ? 2 * s->capmemo : 64;
    memo_t *m = realloc(s->memo, cap * sizeof(*m));
    if (!m)
      return NULL;
    s->memo = m;
    s->capmemo = cap;
  }
  memo_t *m = &s->memo[s->nmemo];
  memset(m, 0, sizeof(*m));
  m->res = calloc(nres ? nres : 1, sizeof(lanes_t));
  if (!m->res)
    return NULL;
  m->key = key;
  m->n = n;
  memcpy(m->coords, c, (size_t)n);
  m->nres = nres;
  ++s->nmemo;
  return m;
}

/* ---- Step 2: the symbolic walk. ---- */

/* Classifies a read of function argument `k` at `c`. */
static void note_read(syn_t *s, intptr_t k, const sc_t *c, int n) {
  MlirType t = mlirValueGetType(mlirBlockGetArgument(s->body, k));
  if (s->D == 0 || s->shape[s->D - 1] == 1 || n == 0)
    return;
  bool last = c[n - 1] == s->D - 1, any = false;
  for (int j = 0; j < n; ++j)
    any |= c[j] == s->D - 1;
  if (!any)
    return; /* invariant along the innermost dimension */
  if (!last) {
    s->strided = true;
    return;
  }
  int b = elem_bytes(mlirShapedTypeGetElementType(t));
  if (b <= 0)
    s->unvectorizable = true;
  else if (b > s->max_bytes)
    s->max_bytes = b;
}

static bool walk(syn_t *s, MlirValue v, const sc_t *c, int n);

static bool walk_generic(syn_t *s, MlirOperation g, intptr_t r, const sc_t *c,
                         int n) {
  sc_t p[MAX_MAP_RANK], ci[MAX_MAP_RANK];
  intptr_t nin = generic_inputs(g);
  MlirAffineMap om = generic_map(g, nin + r);
  int loops = (int)mlirAffineMapGetNumDims(om);
  if (n != (int)mlirAffineMapGetNumResults(om))
    return internal(s, "rank mismatch at a generic's result");
  for (int j = 0; j < n; ++j)
    p[mlirAffineDimExprGetPosition(mlirAffineMapGetResult(om, j))] = c[j];
  if (memo_find(s, g.ptr, p, loops))
    return true;
  if (!memo_add(s, g.ptr, p, loops, 0))
    return internal(s, "out of memory");
  MlirBlock body = generic_body(g);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(g); ++i) {
    MlirValue operand = mlirOperationGetOperand(g, i);
    if (!mlirTypeIsATensor(mlirValueGetType(operand)))
      continue;
    if (i >= nin && mlirOpOperandIsNull(
                        mlirValueGetFirstUse(mlirBlockGetArgument(body, i))))
      continue; /* an init whose value the body does not read */
    int k = apply_map(generic_map(g, i), p, ci);
    if (!walk(s, operand, ci, k))
      return false;
  }
  return true;
}

static bool walk(syn_t *s, MlirValue v, const sc_t *c, int n) {
  if (s->err)
    return false;
  intptr_t k = func_arg_index(s, v);
  if (k >= 0) {
    if (!mlirTypeIsATensor(mlirValueGetType(v)))
      return true;
    note_read(s, k, c, n);
    return true;
  }
  MlirOperation op = top_owner(s, v);
  if (mlirOperationIsNull(op))
    return internal(s, "a value from outside the function body");
  if (lf_op_is(op, "linalg.generic"))
    return walk_generic(s, op, mlirOpResultGetResultNumber(v), c, n);
  if (lf_op_is(op, "arith.constant"))
    return true;
  if (lf_op_is(op, "tensor.expand_shape") ||
      lf_op_is(op, "tensor.collapse_shape")) {
    sc_t src[MAX_RANK];
    int m = reshape_coords(op, c, src);
    return walk(s, mlirOperationGetOperand(op, 0), src, m);
  }
  if (lf_op_is(op, "tensor.empty"))
    return refuse(s, op,
                  "its contents are read (an uninitialized tensor: the "
                  "result would be undefined)");
  return refuse(s, op, "not elementwise");
}

/* ---- Step 3: emission. ---- */

static MlirOperation put(syn_t *s, MlirOperation op, bool hoist) {
  if (mlirOperationIsNull(op)) {
    internal(s, "an op could not be created");
    return op;
  }
  ++s->created;
  if (hoist)
    mlirBlockInsertOwnedOperationBefore(s->kentry, s->kfor, op);
  else
    mlirBlockInsertOwnedOperationBefore(s->lbody, s->lyield, op);
  return op;
}

static MlirValue mk(syn_t *s, const char *name, const MlirValue *ops,
                    intptr_t nops, MlirType res, MlirNamedAttribute *attrs,
                    intptr_t nattrs, bool hoist) {
  MlirOperationState st = mlirOperationStateGet(lf_str(name), s->loc);
  if (nops)
    mlirOperationStateAddOperands(&st, nops, ops);
  if (!mlirTypeIsNull(res))
    mlirOperationStateAddResults(&st, 1, &res);
  if (nattrs)
    mlirOperationStateAddAttributes(&st, nattrs, attrs);
  MlirOperation op = put(s, mlirOperationCreate(&st), hoist);
  if (mlirOperationIsNull(op) || mlirTypeIsNull(res))
    return (MlirValue){NULL};
  return mlirOperationGetResult(op, 0);
}

static MlirNamedAttribute named(syn_t *s, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(s->ctx, lf_str(name)), a);
}

/* A hoisted constant: an index, or (key non-NULL) a typed attribute. */
static MlirValue constant(syn_t *s, const void *key, int64_t ival,
                          MlirAttribute value, MlirType type) {
  for (size_t i = 0; i < s->nconsts; ++i)
    if (s->consts[i].key == key && (key || s->consts[i].ival == ival))
      return s->consts[i].val;
  if (s->nconsts == s->capconsts) {
    size_t cap = s->capconsts ? 2 * s->capconsts : 32;
    void *m = realloc(s->consts, cap * sizeof(*s->consts));
    if (!m) {
      internal(s, "out of memory");
      return (MlirValue){NULL};
    }
    s->consts = m;
    s->capconsts = cap;
  }
  if (!key) {
    type = mlirIndexTypeGet(s->ctx);
    value = mlirIntegerAttrGet(type, ival);
  }
  MlirNamedAttribute a = named(s, "value", value);
  MlirValue v = mk(s, "arith.constant", NULL, 0, type, &a, 1, true);
  s->consts[s->nconsts].key = key;
  s->consts[s->nconsts].ival = ival;
  s->consts[s->nconsts].val = v;
  ++s->nconsts;
  return v;
}

static MlirValue cindex(syn_t *s, int64_t v) {
  return constant(s, NULL, v, (MlirAttribute){NULL}, (MlirType){NULL});
}

static MlirValue binop(syn_t *s, const char *name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return mk(s, name, ops, 2, mlirIndexTypeGet(s->ctx), NULL, 0, false);
}

/* The index value of symbolic coordinate `c` for `lane`. */
static MlirValue coord(syn_t *s, sc_t c, int lane) {
  if (c == SC_ZERO)
    return cindex(s, 0);
  if (c != s->D - 1 || s->V == 1 || lane == 0)
    return s->dom[(int)c];
  if (mlirValueIsNull(s->inner[lane]))
    s->inner[lane] = binop(s, "arith.addi", s->dom[(int)c], cindex(s, lane));
  return s->inner[lane];
}

static bool varies(syn_t *s, const sc_t *c, int n) {
  if (s->V == 1)
    return false;
  for (int j = 0; j < n; ++j)
    if (c[j] == s->D - 1)
      return true;
  return false;
}

static void all_lanes(syn_t *s, lanes_t *l, MlirValue v) {
  for (int i = 0; i < s->V; ++i)
    l->v[i] = v;
}

/* A scalar defined outside a generic body: a kernel argument or a hoisted
 * clone of its constant. */
static MlirValue outer_scalar(syn_t *s, MlirValue v) {
  intptr_t k = func_arg_index(s, v);
  if (k >= 0)
    return s->kargs[k];
  MlirOperation def = top_owner(s, v);
  for (size_t i = 0; i < s->nconsts; ++i)
    if (s->consts[i].key == def.ptr)
      return s->consts[i].val;
  MlirAttribute value = attr(def, "value");
  return constant(s, def.ptr, 0, value, mlirValueGetType(v));
}

/* Reads function argument `k` at `c` into `out`. */
static bool emit_read(syn_t *s, intptr_t k, const sc_t *c, int n,
                      lanes_t *out) {
  MlirValue mem = s->kargs[k];
  MlirType t = mlirValueGetType(mlirBlockGetArgument(s->body, k));
  MlirType e = mlirShapedTypeGetElementType(t);
  MlirValue ops[1 + MAX_RANK];
  ops[0] = mem;
  for (int j = 0; j < n; ++j)
    ops[1 + j] = coord(s, c[j], 0);
  if (!varies(s, c, n) || c[n - 1] != s->D - 1) {
    if (varies(s, c, n))
      return internal(s, "a strided read in a vector kernel");
    MlirValue v = mk(s, "memref.load", ops, 1 + n, e, NULL, 0, false);
    all_lanes(s, out, v);
    return !s->err;
  }
  int64_t vw = s->V;
  MlirType vt = mlirVectorTypeGet(1, &vw, e);
  MlirNamedAttribute al =
      named(s, "alignment",
            mlirIntegerAttrGet(mlirIntegerTypeGet(s->ctx, 64),
                               (int64_t)s->V * elem_bytes(e)));
  MlirValue vec = mk(s, "vector.load", ops, 1 + n, vt, &al, 1, false);
  for (int l = 0; l < s->V && !s->err; ++l) {
    int64_t pos = l;
    MlirNamedAttribute sp =
        named(s, "static_position", mlirDenseI64ArrayGet(s->ctx, 1, &pos));
    out->v[l] = mk(s, "vector.extract", &vec, 1, e, &sp, 1, false);
  }
  return !s->err;
}

static bool eval(syn_t *s, MlirValue v, const sc_t *c, int n, lanes_t *out);

/* Body values computed so far for one generic at one point. */
typedef struct bmap_s {
  MlirValue key[256];
  lanes_t *val;
  size_t n, cap;
} bmap_t;

static lanes_t *bmap_get(bmap_t *m, MlirValue k) {
  for (size_t i = 0; i < m->n; ++i)
    if (value_eq(m->key[i], k))
      return &m->val[i];
  return NULL;
}

/* The lanes of a body operand. */
static bool body_operand(syn_t *s, MlirBlock body, const lanes_t *args,
                         bmap_t *m, MlirValue v, lanes_t *out) {
  if (mlirValueIsABlockArgument(v) &&
      mlirBlockArgumentGetOwner(v).ptr == body.ptr) {
    *out = args[mlirBlockArgumentGetArgNumber(v)];
    return true;
  }
  lanes_t *l = bmap_get(m, v);
  if (l) {
    *out = *l;
    return true;
  }
  all_lanes(s, out, outer_scalar(s, v));
  return !s->err;
}

static bool lanes_same(syn_t *s, const lanes_t *l) {
  for (int i = 1; i < s->V; ++i)
    if (!value_eq(l->v[i], l->v[0]))
      return false;
  return true;
}

/* Clones generic `g`'s body at loop point `p` (its inputs already read
 * into `args`), results into the memo entry `me`. */
static bool emit_body(syn_t *s, MlirOperation g, const sc_t *p,
                      const lanes_t *args, memo_t *me) {
  MlirBlock body = generic_body(g);
  bmap_t m = {0};
  bool ok = true;
  ++s->generics;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       ok && !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    intptr_t nops = mlirOperationGetNumOperands(op);
    lanes_t ins[16];
    if (nops > 16) {
      ok = refuse(s, op, "more than 16 operands");
      break;
    }
    bool same = true;
    for (intptr_t i = 0; ok && i < nops; ++i) {
      ok = body_operand(s, body, args, &m, mlirOperationGetOperand(op, i),
                        &ins[i]);
      same = same && lanes_same(s, &ins[i]);
    }
    if (!ok)
      break;
    if (lf_op_is(op, "linalg.yield")) {
      if ((size_t)nops != me->nres) {
        ok = internal(s, "yield arity");
        break;
      }
      for (intptr_t i = 0; i < nops; ++i)
        me->res[i] = ins[i];
      break;
    }
    if (m.n == 256 || s->created > MAX_CREATED) {
      ok = refuse(s, g,
                  "the body is too large to clone (more than 256 ops, "
                  "or more than %d ops in the kernel)",
                  MAX_CREATED);
      break;
    }
    if (m.n == m.cap) {
      m.cap = m.cap ? 2 * m.cap : 16;
      lanes_t *nv = realloc(m.val, m.cap * sizeof(*nv));
      if (!nv) {
        ok = internal(s, "out of memory");
        break;
      }
      m.val = nv;
    }
    lanes_t *res = &m.val[m.n];
    m.key[m.n] = mlirOperationGetResult(op, 0);
    if (mlirOperationGetNumResults(op) != 1) {
      ok = refuse(s, op, "an op without exactly one result in the body");
      break;
    }
    if (lf_op_is(op, "linalg.index")) {
      MlirAttribute d = attr(op, "dim");
      int dim = (int)mlirIntegerAttrGetValueInt(d);
      if (dim < 0 || dim >= (int)mlirAffineMapGetNumDims(generic_map(g, 0))) {
        ok = refuse(s, op, "dimension out of range");
        break;
      }
      for (int l = 0; l < s->V; ++l)
        res->v[l] = coord(s, p[dim], l);
      ++m.n;
      continue;
    }
    int copies = same ? 1 : s->V;
    for (int l = 0; l < copies && ok; ++l) {
      MlirOperation c = mlirOperationClone(op);
      for (intptr_t i = 0; i < nops; ++i)
        mlirOperationSetOperand(c, i, ins[i].v[l]);
      put(s, c, false);
      res->v[l] = mlirOperationGetResult(c, 0);
      ok = !s->err;
    }
    if (same)
      all_lanes(s, res, res->v[0]);
    ++m.n;
  }
  free(m.val);
  return ok && !s->err;
}

static bool eval_generic(syn_t *s, MlirOperation g, intptr_t r, const sc_t *c,
                         int n, lanes_t *out) {
  sc_t p[MAX_MAP_RANK], ci[MAX_MAP_RANK];
  intptr_t nin = generic_inputs(g);
  intptr_t nres = mlirOperationGetNumResults(g);
  MlirAffineMap om = generic_map(g, nin + r);
  int loops = (int)mlirAffineMapGetNumDims(om);
  for (int j = 0; j < n; ++j)
    p[mlirAffineDimExprGetPosition(mlirAffineMapGetResult(om, j))] = c[j];
  memo_t *me = memo_find(s, g.ptr, p, loops);
  if (me) {
    *out = me->res[r];
    return true;
  }
  MlirBlock body = generic_body(g);
  intptr_t nargs = mlirBlockGetNumArguments(body);
  lanes_t *args = calloc((size_t)nargs + 1, sizeof(*args));
  if (!args)
    return internal(s, "out of memory");
  bool ok = true;
  for (intptr_t i = 0; ok && i < mlirOperationGetNumOperands(g) && i < nargs;
       ++i) {
    MlirValue operand = mlirOperationGetOperand(g, i);
    if (!mlirTypeIsATensor(mlirValueGetType(operand))) {
      all_lanes(s, &args[i], outer_scalar(s, operand));
      ok = !s->err;
      continue;
    }
    if (i >= nin && mlirOpOperandIsNull(
                        mlirValueGetFirstUse(mlirBlockGetArgument(body, i))))
      continue;
    int k = apply_map(generic_map(g, i), p, ci);
    ok = eval(s, operand, ci, k, &args[i]);
  }
  if (ok) {
    me = memo_add(s, g.ptr, p, loops, (size_t)nres);
    ok = me ? emit_body(s, g, p, args, me) : internal(s, "out of memory");
  }
  free(args);
  if (ok)
    *out = me->res[r];
  return ok;
}

static bool eval(syn_t *s, MlirValue v, const sc_t *c, int n, lanes_t *out) {
  if (s->err)
    return false;
  memo_t *me = memo_find(s, v.ptr, c, n);
  if (me) {
    *out = me->res[0];
    return true;
  }
  bool ok;
  intptr_t k = func_arg_index(s, v);
  MlirOperation op = top_owner(s, v);
  if (k >= 0) {
    ok = emit_read(s, k, c, n, out);
  } else if (lf_op_is(op, "linalg.generic")) {
    return eval_generic(s, op, mlirOpResultGetResultNumber(v), c, n, out);
  } else if (lf_op_is(op, "arith.constant")) {
    MlirAttribute a = attr(op, "value");
    MlirType e = mlirShapedTypeGetElementType(mlirValueGetType(v));
    all_lanes(s, out,
              constant(s, op.ptr, 0, mlirDenseElementsAttrGetSplatValue(a), e));
    ok = !s->err;
  } else if (lf_op_is(op, "tensor.expand_shape") ||
             lf_op_is(op, "tensor.collapse_shape")) {
    sc_t src[MAX_RANK];
    int m = reshape_coords(op, c, src);
    ok = eval(s, mlirOperationGetOperand(op, 0), src, m, out);
  } else {
    return internal(s, "an op the walk did not refuse");
  }
  if (ok) {
    me = memo_add(s, v.ptr, c, n, 1);
    if (!me)
      return internal(s, "out of memory");
    me->res[0] = *out;
  }
  return ok;
}

/* ---- The skeleton. ---- */

static lf_status_t skeleton_text(syn_t *s, MlirType fty, const char *name,
                                 long long grid, long long chunks,
                                 lf_strbuf_t *out) {
  lf_status_t st = lf_strbuf_appendf(out,
                                     "gpu.module @kernels {\n"
                                     "  gpu.func @%s(",
                                     name);
  intptr_t nin = mlirFunctionTypeGetNumInputs(fty);
  intptr_t nres = mlirFunctionTypeGetNumResults(fty);
  for (intptr_t i = 0; !st && i < nin + nres; ++i) {
    MlirType t = i < nin ? mlirFunctionTypeGetInput(fty, i)
                         : mlirFunctionTypeGetResult(fty, i - nin);
    if (mlirTypeIsATensor(t)) {
      intptr_t rank = mlirShapedTypeGetRank(t);
      int64_t shape[MAX_RANK];
      for (intptr_t j = 0; j < rank; ++j)
        shape[j] = mlirShapedTypeGetDimSize(t, j);
      t = mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(t), rank,
                                      shape, mlirAttributeGetNull());
    }
    char *tt = type_text(t);
    st = lf_strbuf_appendf(out, "%s%%arg%ld: %s", i ? ", " : "", (long)i,
                           tt ? tt : "?");
    free(tt);
  }
  if (!st)
    st = lf_strbuf_appendf(
        out,
        ") kernel attributes {known_block_size = array<i32: %d, 1, 1>, "
        "known_grid_size = array<i32: %lld, 1, 1>} {\n"
        "    %%bid = gpu.block_id x\n"
        "    %%tid = gpu.thread_id x\n"
        "    %%bsz = arith.constant %d : index\n"
        "    %%base = arith.muli %%bid, %%bsz : index\n"
        "    %%first = arith.addi %%base, %%tid : index\n"
        "    %%end = arith.constant %lld : index\n"
        "    %%step = arith.constant %lld : index\n"
        "    scf.for %%i = %%first to %%end step %%step {\n"
        "    }\n"
        "    gpu.return\n"
        "  }\n"
        "}\n",
        LF_SYNTH_EW_BLOCK, grid, LF_SYNTH_EW_BLOCK, chunks,
        grid * LF_SYNTH_EW_BLOCK);
  (void)s;
  return st;
}

/* Finds the first op named `name` in `block`. */
static MlirOperation find_op(MlirBlock block, const char *name) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (lf_op_is(op, name))
      return op;
  return (MlirOperation){NULL};
}

static MlirBlock first_block(MlirOperation op) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
}

/* The domain coordinates of chunk %i (V elements along the innermost
 * dimension). */
static void emit_domain(syn_t *s, MlirValue iv) {
  int outer = 0;
  while (outer < s->D &&
         (outer == s->D - 1 ? s->shape[outer] / s->V : s->shape[outer]) == 1)
    ++outer;
  MlirValue rem = iv;
  for (int j = s->D - 1; j >= 0; --j) {
    int64_t ext = j == s->D - 1 ? s->shape[j] / s->V : s->shape[j];
    if (ext == 1) {
      s->dom[j] = cindex(s, 0);
      continue;
    }
    if (j == outer) {
      s->dom[j] = rem;
      continue;
    }
    MlirValue e = cindex(s, ext);
    s->dom[j] = binop(s, "arith.remui", rem, e);
    rem = binop(s, "arith.divui", rem, e);
  }
  if (s->D && s->V > 1 && s->shape[s->D - 1] / s->V > 1)
    s->dom[s->D - 1] =
        binop(s, "arith.muli", s->dom[s->D - 1], cindex(s, s->V));
}

static bool emit_store(syn_t *s, intptr_t r, const lanes_t *val) {
  MlirValue mem = s->kargs[s->nin + r];
  MlirValue ops[2 + MAX_RANK];
  ops[1] = mem;
  for (int j = 0; j < s->D; ++j)
    ops[2 + j] = s->dom[j];
  if (s->V == 1) {
    ops[0] = val->v[0];
    mk(s, "memref.store", ops, 2 + s->D, (MlirType){NULL}, NULL, 0, false);
    return !s->err;
  }
  MlirType e = mlirValueGetType(val->v[0]);
  int64_t vw = s->V;
  MlirType vt = mlirVectorTypeGet(1, &vw, e);
  ops[0] = mk(s, "vector.from_elements", val->v, s->V, vt, NULL, 0, false);
  MlirNamedAttribute al =
      named(s, "alignment",
            mlirIntegerAttrGet(mlirIntegerTypeGet(s->ctx, 64),
                               (int64_t)s->V * elem_bytes(e)));
  mk(s, "vector.store", ops, 2 + s->D, (MlirType){NULL}, &al, 1, false);
  return !s->err;
}

/* ---- The entry point. ---- */

static void diag_cb(MlirStringRef str, void *user) {
  lf_status_free(lf_strbuf_append(user, str.data, str.length));
}

/* Step 1 on a copy of `func` in `module`; returns the copy. */
static lf_status_t generalize(MlirOperation func, MlirModule module,
                              MlirOperation *out_copy) {
  MlirOperation copy = mlirOperationClone(func);
  mlirOperationRemoveAttributeByName(copy, lf_str("sym_visibility"));
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(module), copy);
  *out_copy = copy;
  MlirContext ctx = mlirOperationGetContext(func);
  lf_strbuf_t err;
  lf_strbuf_init(&err, 4096);
  MlirPassManager pm =
      mlirPassManagerCreateOnOperation(ctx, lf_str("builtin.module"));
  lf_status_t st = LF_OK;
  if (mlirLogicalResultIsFailure(
          mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                lf_str(GENERALIZE_PIPELINE), diag_cb, &err)))
    st = LF_STATUS(LF_STATUS_INTERNAL,
                   "synthesizer: the generalization pipeline does not parse "
                   "(are the upstream passes registered?): %s",
                   lf_strbuf_cstr(&err));
  else if (mlirLogicalResultIsFailure(
               mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module))))
    st = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                   "the generalization to linalg.generic failed (see the "
                   "diagnostics above)");
  mlirPassManagerDestroy(pm);
  lf_strbuf_free(&err);
  return st;
}

static void syn_free(syn_t *s) {
  for (size_t i = 0; i < s->nmemo; ++i)
    free(s->memo[i].res);
  free(s->memo);
  free(s->consts);
}

lf_status_t lf_synth_ew(MlirOperation func, const char *kernel_name,
                        lf_synth_ew_t *out) {
  memset(out, 0, sizeof(*out));
  if (mlirOperationIsNull(func) || !lf_op_is(func, "func.func"))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "synthesizer: not a func.func");
  MlirAttribute ftype = attr(func, "function_type");
  MlirAttribute fname = attr(func, "sym_name");
  if (!mlirAttributeIsAType(ftype) || !mlirAttributeIsAString(fname) ||
      mlirOperationGetNumRegions(func) != 1 ||
      mlirRegionIsNull(mlirOperationGetRegion(func, 0)) ||
      mlirBlockIsNull(first_block(func)))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "a function declaration: no body to synthesize from");
  char name[160];
  MlirStringRef fn = mlirStringAttrGetValue(fname);
  snprintf(name, sizeof(name), "%.*s",
           (int)(kernel_name ? strlen(kernel_name) : fn.length),
           kernel_name ? kernel_name : fn.data);
  for (char *p = name; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '_'))
      *p = '_';
  MlirType fty = mlirTypeAttrGetValue(ftype);
  intptr_t nin = mlirFunctionTypeGetNumInputs(fty);
  intptr_t nres = mlirFunctionTypeGetNumResults(fty);
  syn_t s;
  memset(&s, 0, sizeof(s));
  s.ctx = mlirOperationGetContext(func);
  s.loc = mlirLocationUnknownGet(s.ctx);
  s.nin = (size_t)nin;
  if (nres < 1)
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED, "the function has no result");
  if (nin + nres > 64)
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "%ld operands (at most 64 kernel arguments)",
                     (long)(nin + nres));
  for (intptr_t i = 0; i < nin + nres; ++i) {
    MlirType t = i < nin ? mlirFunctionTypeGetInput(fty, i)
                         : mlirFunctionTypeGetResult(fty, i - nin);
    if (mlirTypeIsATensor(t) ? !good_tensor(t)
                             : (i >= nin || !is_scalar_type(t))) {
      char *tt = type_text(t);
      lf_status_t st = LF_STATUS(
          LF_STATUS_UNIMPLEMENTED,
          "%s %ld has type %s: only static tensors of rank <= %d with "
          "f16/bf16/f32/f64/integer elements (and scalar inputs) are taken%s",
          i < nin ? "input" : "result", (long)(i < nin ? i : i - nin),
          tt ? tt : "?", MAX_RANK,
          mlirTypeIsATensor(t) && !mlirShapedTypeHasStaticShape(t)
              ? " (a dynamic shape)"
              : "");
      free(tt);
      return st;
    }
  }
  MlirType r0 = mlirFunctionTypeGetResult(fty, 0);
  s.D = (int)mlirShapedTypeGetRank(r0);
  long long elements = 1;
  for (int j = 0; j < s.D; ++j) {
    s.shape[j] = mlirShapedTypeGetDimSize(r0, j);
    elements *= s.shape[j];
  }
  for (intptr_t r = 1; r < nres; ++r) {
    MlirType t = mlirFunctionTypeGetResult(fty, r);
    bool same = mlirShapedTypeGetRank(t) == s.D;
    for (int j = 0; same && j < s.D; ++j)
      same = mlirShapedTypeGetDimSize(t, j) == s.shape[j];
    if (!same)
      return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                       "result %ld has another shape than result 0 (one "
                       "iteration space for all results)",
                       (long)r);
  }
  if (elements < 1 || elements > ((long long)1 << 40))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED, "%lld output elements", elements);

  /* Step 1. */
  MlirModule work = mlirModuleCreateEmpty(mlirOperationGetLocation(func));
  MlirModule kmod = {NULL};
  MlirOperation copy;
  lf_status_t st = generalize(func, work, &copy);
  if (st)
    goto out;
  s.body = first_block(copy);

  /* Step 2. */
  if (!check_body(&s))
    goto out_err;
  MlirOperation ret = mlirBlockGetTerminator(s.body);
  sc_t ident[MAX_RANK];
  for (int j = 0; j < s.D; ++j)
    ident[j] = (sc_t)j;
  for (intptr_t r = 0; r < nres; ++r) {
    MlirValue v = mlirOperationGetOperand(ret, r);
    if (!walk(&s, v, ident, s.D))
      goto out_err;
    if (s.D && s.shape[s.D - 1] > 1) {
      int b = elem_bytes(mlirShapedTypeGetElementType(mlirValueGetType(v)));
      if (b <= 0)
        s.unvectorizable = true;
      else if (b > s.max_bytes)
        s.max_bytes = b;
    }
  }
  for (size_t i = 0; i < s.nmemo; ++i)
    free(s.memo[i].res);
  s.nmemo = 0;
  s.V = 1;
  if (s.D && !s.strided && !s.unvectorizable && s.max_bytes > 0) {
    for (int v = 16 / s.max_bytes; v > 1 && s.V == 1; v /= 2)
      if (v <= MAX_V && s.shape[s.D - 1] % v == 0)
        s.V = v;
  }

  /* Step 3. */
  long long chunks = elements / s.V;
  long long grid = (chunks + LF_SYNTH_EW_BLOCK - 1) / LF_SYNTH_EW_BLOCK;
  if (grid > LF_SYNTH_EW_MAX_GRID)
    grid = LF_SYNTH_EW_MAX_GRID;
  lf_strbuf_t sk;
  lf_strbuf_init(&sk, (size_t)1 << 20);
  st = skeleton_text(&s, fty, name, grid, chunks, &sk);
  if (!st) {
    kmod = mlirModuleCreateParse(
        s.ctx, mlirStringRefCreate(lf_strbuf_cstr(&sk), lf_strbuf_len(&sk)));
    if (mlirModuleIsNull(kmod))
      st = LF_STATUS(LF_STATUS_INTERNAL,
                     "synthesizer: the kernel skeleton does not parse (are "
                     "the gpu, scf, arith and memref dialects loaded?)");
  }
  lf_strbuf_free(&sk);
  if (st)
    goto out;
  mlirContextGetOrLoadDialect(s.ctx, lf_str("vector"));
  mlirContextGetOrLoadDialect(s.ctx, lf_str("memref"));
  MlirOperation gmod = mlirBlockGetFirstOperation(mlirModuleGetBody(kmod));
  MlirOperation gfunc = find_op(first_block(gmod), "gpu.func");
  s.kentry = first_block(gfunc);
  s.kfor = find_op(s.kentry, "scf.for");
  s.lbody = first_block(s.kfor);
  s.lyield = mlirBlockGetTerminator(s.lbody);
  for (intptr_t i = 0; i < nin + nres; ++i)
    s.kargs[i] = mlirBlockGetArgument(s.kentry, i);
  emit_domain(&s, mlirBlockGetArgument(s.lbody, 0));
  for (intptr_t r = 0; r < nres && !s.err; ++r) {
    lanes_t val;
    if (eval(&s, mlirOperationGetOperand(ret, r), ident, s.D, &val))
      emit_store(&s, r, &val);
  }
  if (s.err)
    goto out_err;

  /* Step 4. */
  if (!mlirOperationVerify(gmod)) {
    st = LF_STATUS(LF_STATUS_INTERNAL,
                   "synthesizer: the kernel for @%s does not verify (see "
                   "the diagnostics above)",
                   name);
    goto out;
  }
  lf_strbuf_t text;
  lf_strbuf_init(&text, (size_t)8 << 20);
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOperationPrintWithFlags(gmod, flags, lf_strbuf_print_cb, &text);
  mlirOpPrintingFlagsDestroy(flags);
  lf_status_free(lf_strbuf_append_str(&text, "\n"));
  out->text = lf_strbuf_take(&text);
  lf_strbuf_free(&text);
  if (!out->text) {
    st = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "synthesizer: kernel text");
    goto out;
  }
  out->vector_width = s.V;
  out->generics = s.generics;
  out->inputs = (size_t)nin;
  out->grid = grid;
  out->elements = elements;
  goto out;

out_err:
  st = s.err ? s.err : LF_STATUS(LF_STATUS_INTERNAL, "synthesizer failed");
  s.err = NULL;
out:
  lf_status_free(s.err);
  syn_free(&s);
  if (!mlirModuleIsNull(kmod))
    mlirModuleDestroy(kmod);
  mlirModuleDestroy(work);
  if (st)
    lf_synth_ew_clear(out);
  return st;
}

void lf_synth_ew_clear(lf_synth_ew_t *s) {
  if (!s)
    return;
  free(s->text);
  memset(s, 0, sizeof(*s));
}
