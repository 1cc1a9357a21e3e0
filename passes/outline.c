/* outline.c - outlining of partition groups, fingerprints, the
 * `llm-fuse-outline` pass and its report.
 *
 * Each group becomes a private func.func named sg_<first 16 hex digits of
 * its fingerprint>, with attributes llm_fuse.class and llm_fuse.fingerprint;
 * the group's ops are replaced by a func.call. Identical subgraphs (same
 * fingerprint) share one function.
 *
 * The fingerprint is SHA-256 over a canonical text of the outlined function:
 * generic op form, no locations, discardable attributes (user annotations,
 * memoized data) removed, the function named by a placeholder, SSA values
 * numbered by the printer. Same math, shapes and types give the same
 * fingerprint wherever the subgraph came from.
 */
#include "passes/outline.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "dialect_bridge/bridge.h"
#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/mlir_util.h"
#include "passes/partition.h"
#include "passes/pattern.h"

#define ATTR_CLASS LF_ATTR_CLASS
#define ATTR_FINGERPRINT LF_ATTR_FINGERPRINT

/* ---- Value sets (small, linear). ---- */

typedef struct values_s {
  MlirValue *v;
  size_t n, cap;
} values_t;

static long values_find(const values_t *s, MlirValue v) {
  for (size_t i = 0; i < s->n; ++i)
    if (mlirValueEqual(s->v[i], v))
      return (long)i;
  return -1;
}

static lf_status_t values_add(values_t *s, MlirValue v) {
  if (values_find(s, v) >= 0)
    return LF_OK;
  if (s->n == s->cap) {
    size_t n = s->cap ? 2 * s->cap : 8;
    MlirValue *p = realloc(s->v, n * sizeof(*p));
    if (!p)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    s->v = p;
    s->cap = n;
  }
  s->v[s->n++] = v;
  return LF_OK;
}

/* old value -> new value */
typedef struct value_map_s {
  values_t from, to;
} value_map_t;

static lf_status_t map_put(value_map_t *m, MlirValue from, MlirValue to) {
  LF_RETURN_IF_ERROR(values_add(&m->from, from));
  if (m->to.n < m->from.n) {
    lf_status_t s = values_add(&m->to, to);
    if (s) {
      --m->from.n;
      return s;
    }
  }
  return LF_OK;
}

static void map_free(value_map_t *m) {
  free(m->from.v);
  free(m->to.v);
}

/* ---- Group membership tests. ---- */

static bool in_members(const lf_group_t *grp, MlirOperation op,
                       bool moved_only) {
  if (mlirOperationIsNull(op))
    return false;
  for (size_t i = 0; i < grp->num_members; ++i)
    if (mlirOperationEqual(grp->members[i].op, op))
      return !moved_only || !grp->members[i].recompute;
  return false;
}

/* Is `v` computed inside the group (by any member, or in a member's
 * regions)? */
static bool defined_in_group(const lf_group_t *grp, MlirBlock body,
                             MlirValue v) {
  MlirOperation owner;
  if (mlirValueIsAOpResult(v)) {
    owner = mlirOpResultGetOwner(v);
  } else {
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    if (mlirBlockEqual(b, body))
      return false; /* a function argument */
    owner = mlirBlockGetParentOperation(b);
  }
  return in_members(grp, lf_ancestor_in_block(owner, body), false);
}

typedef struct input_walk_s {
  const lf_group_t *grp;
  MlirBlock body;
  values_t *inputs;
  lf_status_t status;
} input_walk_t;

static MlirWalkResult input_walk_cb(MlirOperation op, void *user_data) {
  input_walk_t *w = user_data;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!defined_in_group(w->grp, w->body, v)) {
      w->status = values_add(w->inputs, v);
      if (w->status)
        return MlirWalkResultInterrupt;
    }
  }
  return MlirWalkResultAdvance;
}

/* Operands of clones (and of their nested ops) that refer to values of the
 * original function are rewritten through the map. */
static MlirWalkResult remap_walk_cb(MlirOperation op, void *user_data) {
  value_map_t *m = user_data;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    long k = values_find(&m->from, mlirOperationGetOperand(op, i));
    if (k >= 0)
      mlirOperationSetOperand(op, i, m->to.v[k]);
  }
  return MlirWalkResultAdvance;
}

static MlirWalkResult strip_walk_cb(MlirOperation op, void *user_data) {
  (void)user_data;
  while (mlirOperationGetNumDiscardableAttributes(op) > 0) {
    MlirNamedAttribute a = mlirOperationGetDiscardableAttribute(op, 0);
    mlirOperationRemoveDiscardableAttributeByName(op,
                                                  mlirIdentifierStr(a.name));
  }
  return MlirWalkResultAdvance;
}

/* SHA-256 of the canonical text of `func` (see the file comment). */
static lf_status_t fingerprint(MlirOperation func, char out[LF_SHA256_HEX_SIZE],
                               lf_strbuf_t *canonical_out) {
  MlirOperation copy = mlirOperationClone(func);
  mlirOperationSetAttributeByName(
      copy, lf_str("sym_name"),
      mlirStringAttrGet(mlirOperationGetContext(copy), lf_str("subgraph")));
  mlirOperationWalk(copy, strip_walk_cb, NULL, MlirWalkPreOrder);
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsPrintGenericOpForm(flags);
  mlirOpPrintingFlagsEnableDebugInfo(flags, false, false);
  lf_strbuf_t text;
  lf_strbuf_init(&text, 64 << 20);
  mlirOperationPrintWithFlags(copy, flags, lf_strbuf_print_cb, &text);
  mlirOpPrintingFlagsDestroy(flags);
  mlirOperationDestroy(copy);
  lf_status_t s =
      lf_sha256_hex(lf_strbuf_cstr(&text), lf_strbuf_len(&text), out);
  if (canonical_out && !s)
    s = lf_strbuf_append(canonical_out, lf_strbuf_cstr(&text),
                         lf_strbuf_len(&text));
  lf_strbuf_free(&text);
  return s;
}

/* Inherent string attributes that carry user text rather than semantics. */
static MlirWalkResult strip_text_walk_cb(MlirOperation op, void *user_data) {
  (void)user_data;
  static const char *const names[] = {"doc", "library_call", NULL};
  for (int i = 0; names[i]; ++i)
    mlirOperationRemoveAttributeByName(op, lf_str(names[i]));
  return strip_walk_cb(op, NULL);
}

lf_status_t lf_outline_prompt_text(MlirOperation func, lf_strbuf_t *out) {
  MlirOperation copy = mlirOperationClone(func);
  mlirOperationSetAttributeByName(
      copy, lf_str("sym_name"),
      mlirStringAttrGet(mlirOperationGetContext(copy), lf_str("subgraph")));
  mlirOperationWalk(copy, strip_text_walk_cb, NULL, MlirWalkPreOrder);
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, false, false);
  lf_strbuf_t text;
  lf_strbuf_init(&text, 16 << 20);
  mlirOperationPrintWithFlags(copy, flags, lf_strbuf_print_cb, &text);
  mlirOpPrintingFlagsDestroy(flags);
  mlirOperationDestroy(copy);
  lf_status_t s =
      text.len >= 16u << 20
          ? LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                      "subgraph text larger than 16 MiB")
          : lf_strbuf_append(out, lf_strbuf_cstr(&text), lf_strbuf_len(&text));
  lf_strbuf_free(&text);
  return s;
}

/* ---- Roofline inputs. ---- */

static double elements(MlirType t) {
  if (!mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t))
    return 0;
  double n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i)
    n *= (double)mlirShapedTypeGetDimSize(t, i);
  return n;
}

static double element_bytes(MlirType t) {
  MlirType e = mlirTypeIsAShaped(t) ? mlirShapedTypeGetElementType(t) : t;
  if (mlirTypeIsAFloat(e))
    return mlirFloatTypeGetWidth(e) / 8.0;
  if (mlirTypeIsAInteger(e))
    return ceil(mlirIntegerTypeGetWidth(e) / 8.0);
  if (mlirTypeIsAIndex(e))
    return 8;
  return 0;
}

static double bytes_of(MlirType t) {
  return mlirTypeIsATensor(t) ? elements(t) * element_bytes(t)
                              : element_bytes(t);
}

/* Iteration domain of a linalg.generic: product of its loop bounds. */
static double generic_domain(MlirOperation op) {
  MlirAttribute maps =
      mlirOperationGetAttributeByName(op, lf_str("indexing_maps"));
  if (mlirAttributeIsNull(maps) || !mlirAttributeIsAArray(maps))
    return 0;
  double bounds[16] = {0};
  intptr_t ndims = 0;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(maps) &&
                       i < mlirOperationGetNumOperands(op);
       ++i) {
    MlirAffineMap m =
        mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, i));
    ndims = mlirAffineMapGetNumDims(m);
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (!mlirTypeIsARankedTensor(t))
      continue;
    for (intptr_t j = 0; j < mlirAffineMapGetNumResults(m); ++j) {
      MlirAffineExpr e = mlirAffineMapGetResult(m, j);
      if (mlirAffineExprIsADim(e)) {
        intptr_t d = mlirAffineDimExprGetPosition(e);
        if (d < 16)
          bounds[d] = (double)mlirShapedTypeGetDimSize(t, j);
      }
    }
  }
  double n = 1;
  for (intptr_t d = 0; d < ndims && d < 16; ++d)
    n *= bounds[d] > 0 ? bounds[d] : 1;
  return n;
}

static double member_flops(const lf_member_t *m) {
  MlirOperation op = m->op;
  intptr_t nres = mlirOperationGetNumResults(op);
  MlirType out =
      nres ? mlirValueGetType(mlirOperationGetResult(op, 0)) : (MlirType){NULL};
  bool generic = mlirStringRefEqual(mlirIdentifierStr(mlirOperationGetName(op)),
                                    lf_str("linalg.generic"));
  switch (m->kind) {
  case LF_OPK_CONTRACTION: {
    if (generic)
      return generic_domain(op) * lf_body_arith_ops(op);
    /* Named contractions: A and B operands, out; K from the sizes. */
    if (mlirOperationGetNumOperands(op) < 3 || mlirTypeIsNull(out))
      return 0;
    double a = elements(mlirValueGetType(mlirOperationGetOperand(op, 0)));
    double b = elements(mlirValueGetType(mlirOperationGetOperand(op, 1)));
    double o = elements(out);
    MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
    double batch = 1;
    if (name.length > 13 && memcmp(name.data, "linalg.batch_", 13) == 0 &&
        mlirShapedTypeGetRank(out) > 0)
      batch = (double)mlirShapedTypeGetDimSize(out, 0);
    if (o <= 0)
      return 0;
    double k = sqrt(a * b / o / batch);
    return 2.0 * o * k;
  }
  case LF_OPK_REDUCTION:
    if (generic)
      return generic_domain(op) * lf_body_arith_ops(op);
    return elements(mlirValueGetType(mlirOperationGetOperand(op, 0))) *
           lf_body_arith_ops(op);
  case LF_OPK_SOFTMAX:
    return 5.0 * elements(out);
  case LF_OPK_ELEMENTWISE: {
    if (generic)
      return generic_domain(op) * lf_body_arith_ops(op);
    int f = lf_body_arith_ops(op);
    return elements(out) * (f ? f : 1);
  }
  default:
    return 0;
  }
}

static cJSON *operand_json(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  cJSON *j = cJSON_CreateObject();
  char *text = lf_type_dup(t);
  cJSON_AddStringToObject(j, "type", text ? text : "");
  free(text);
  if (mlirTypeIsARankedTensor(t)) {
    cJSON *shape = cJSON_AddArrayToObject(j, "shape");
    for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i)
      cJSON_AddItemToArray(
          shape, cJSON_CreateNumber((double)mlirShapedTypeGetDimSize(t, i)));
    char *et = lf_type_dup(mlirShapedTypeGetElementType(t));
    cJSON_AddStringToObject(j, "dtype", et ? et : "");
    free(et);
  } else {
    cJSON_AddItemToObject(j, "shape", cJSON_CreateArray());
    char *et = lf_type_dup(t);
    cJSON_AddStringToObject(j, "dtype", et ? et : "");
    free(et);
  }
  cJSON_AddNumberToObject(j, "bytes", bytes_of(t));
  return j;
}

/* ---- Placing the call. ---- */

typedef struct taint_walk_s {
  const values_t *tainted;
  bool hit;
} taint_walk_t;

static MlirWalkResult taint_walk_cb(MlirOperation op, void *user_data) {
  taint_walk_t *w = user_data;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (values_find(w->tainted, mlirOperationGetOperand(op, i)) >= 0) {
      w->hit = true;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

/* The call stands where the group's last moved member was, so ops between
 * the group's first and last members that use its results (directly or
 * through each other) must follow it. They cannot feed the group (the
 * partitioner rejects cycles), so moving them down, in order, keeps every
 * use dominated. */
static lf_status_t move_users_below(const lf_group_t *grp, MlirOperation call,
                                    const values_t *outputs) {
  /* Earlier groups may have moved members down: find the first by the
   * block's current order. */
  MlirOperation first = {NULL};
  for (size_t i = 0; i < grp->num_members; ++i)
    if (!grp->members[i].recompute &&
        (mlirOperationIsNull(first) ||
         mlirOperationIsBeforeInBlock(grp->members[i].op, first)))
      first = grp->members[i].op;
  if (mlirOperationIsNull(first))
    return LF_OK;
  values_t tainted = {0};
  lf_status_t status = LF_OK;
  for (size_t i = 0; i < outputs->n && !status; ++i)
    status = values_add(&tainted, outputs->v[i]);
  MlirOperation anchor = call;
  for (MlirOperation op = mlirOperationGetNextInBlock(first);
       !status && !mlirOperationIsNull(op) && !mlirOperationEqual(op, call);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (!in_members(grp, op, true)) {
      taint_walk_t w = {&tainted, false};
      mlirOperationWalk(op, taint_walk_cb, &w, MlirWalkPreOrder);
      if (w.hit) {
        for (intptr_t r = 0; r < mlirOperationGetNumResults(op) && !status; ++r)
          status = values_add(&tainted, mlirOperationGetResult(op, r));
        mlirOperationMoveAfter(op, anchor);
        anchor = op;
      }
    }
    op = next;
  }
  free(tainted.v);
  return status;
}

/* ---- Outlining one group. ---- */

static lf_status_t outline_group(MlirOperation module, MlirSymbolTable symbols,
                                 MlirOperation func, MlirBlock body,
                                 const lf_group_t *grp,
                                 const lf_outline_options_t *opts,
                                 cJSON *report_groups, size_t *num_outlined) {
  lf_status_t status = LF_OK;
  MlirContext ctx = mlirOperationGetContext(func);
  /* Located at the first real member (not a hoisted constant). */
  MlirLocation loc = mlirOperationGetLocation(grp->members[0].op);
  for (size_t i = 0; i < grp->num_members; ++i)
    if (!grp->members[i].recompute) {
      loc = mlirOperationGetLocation(grp->members[i].op);
      break;
    }
  values_t inputs = {0}, outputs = {0};
  value_map_t map = {0};
  MlirOperation new_func = {NULL};
  lf_strbuf_t abstract = {0}; /* the pattern's abstracted text (report) */
  MlirType *in_types = NULL, *out_types = NULL;
  MlirLocation *in_locs = NULL;
  char fp[LF_SHA256_HEX_SIZE], name[96];
  (void)module;

  /* Inputs: values used by members (and their regions) from outside. */
  for (size_t i = 0; i < grp->num_members; ++i) {
    input_walk_t w = {grp, body, &inputs, LF_OK};
    mlirOperationWalk(grp->members[i].op, input_walk_cb, &w, MlirWalkPreOrder);
    if ((status = w.status))
      goto out;
  }
  /* Outputs: results of moved members used by anything not moved. */
  MlirOperation last = {NULL};
  for (size_t i = 0; i < grp->num_members; ++i) {
    if (grp->members[i].recompute)
      continue;
    MlirOperation op = grp->members[i].op;
    /* By the block's current order: outlining earlier groups may have
     * moved members down (move_users_below). */
    if (mlirOperationIsNull(last) || mlirOperationIsBeforeInBlock(last, op))
      last = op;
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue v = mlirOperationGetResult(op, r);
      for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
           u = mlirOpOperandGetNextUse(u)) {
        MlirOperation user =
            lf_ancestor_in_block(mlirOpOperandGetOwner(u), body);
        if (!in_members(grp, user, true)) {
          if ((status = values_add(&outputs, v)))
            goto out;
          break;
        }
      }
    }
  }
  if (outputs.n == 0 || mlirOperationIsNull(last))
    goto out; /* dead or free-only group: nothing to outline */

  /* The function: block arguments for the inputs, clones of the members. */
  in_types = calloc(inputs.n + 1, sizeof(*in_types));
  in_locs = calloc(inputs.n + 1, sizeof(*in_locs));
  out_types = calloc(outputs.n + 1, sizeof(*out_types));
  if (!in_types || !in_locs || !out_types) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < inputs.n; ++i) {
    in_types[i] = mlirValueGetType(inputs.v[i]);
    in_locs[i] = loc;
  }
  for (size_t i = 0; i < outputs.n; ++i)
    out_types[i] = mlirValueGetType(outputs.v[i]);
  MlirBlock entry = mlirBlockCreate((intptr_t)inputs.n, in_types, in_locs);
  for (size_t i = 0; i < inputs.n; ++i)
    if ((status = map_put(&map, inputs.v[i],
                          mlirBlockGetArgument(entry, (intptr_t)i))))
      goto out_block;
  for (size_t i = 0; i < grp->num_members; ++i) {
    MlirOperation clone = mlirOperationClone(grp->members[i].op);
    mlirOperationWalk(clone, remap_walk_cb, &map, MlirWalkPreOrder);
    mlirBlockAppendOwnedOperation(entry, clone);
    for (intptr_t r = 0; r < mlirOperationGetNumResults(clone); ++r)
      if ((status = map_put(&map, mlirOperationGetResult(grp->members[i].op, r),
                            mlirOperationGetResult(clone, r))))
        goto out_block;
  }
  MlirValue *returned = calloc(outputs.n + 1, sizeof(*returned));
  if (!returned) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_block;
  }
  for (size_t i = 0; i < outputs.n; ++i)
    returned[i] = map.to.v[values_find(&map.from, outputs.v[i])];
  MlirOperationState ret = mlirOperationStateGet(lf_str("func.return"), loc);
  mlirOperationStateAddOperands(&ret, (intptr_t)outputs.n, returned);
  mlirBlockAppendOwnedOperation(entry, mlirOperationCreate(&ret));
  free(returned);

  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, entry);
  MlirType fn_type = mlirFunctionTypeGet(ctx, (intptr_t)inputs.n, in_types,
                                         (intptr_t)outputs.n, out_types);
  MlirNamedAttribute attrs[] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("sym_name")),
                            mlirStringAttrGet(ctx, lf_str("subgraph"))),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("function_type")),
                            mlirTypeAttrGet(fn_type)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("sym_visibility")),
                            mlirStringAttrGet(ctx, lf_str("private"))),
  };
  MlirOperationState fs = mlirOperationStateGet(lf_str("func.func"), loc);
  mlirOperationStateAddAttributes(&fs, 3, attrs);
  mlirOperationStateAddOwnedRegions(&fs, 1, &region);
  new_func = mlirOperationCreate(&fs);

  /* Name from the fingerprint; identical subgraphs share one function.
   * The pattern key is the same canonical text with sizes abstracted. */
  lf_strbuf_t canon;
  lf_strbuf_init(&canon, 64 << 20);
  lf_strbuf_init(&abstract, 64 << 20);
  lf_pattern_t pat;
  status = fingerprint(new_func, fp, &canon);
  if (!status)
    status = lf_pattern_compute(lf_strbuf_cstr(&canon), lf_strbuf_len(&canon),
                                &pat, report_groups ? &abstract : NULL);
  lf_strbuf_free(&canon);
  if (status)
    goto out;
  snprintf(name, sizeof(name), "sg_%.16s", fp);
  MlirOperation existing = mlirSymbolTableLookup(symbols, lf_str(name));
  if (!mlirOperationIsNull(existing)) {
    MlirAttribute efp =
        mlirOperationGetAttributeByName(existing, lf_str(ATTR_FINGERPRINT));
    bool same = mlirAttributeIsAString(efp) &&
                mlirStringRefEqual(mlirStringAttrGetValue(efp), lf_str(fp));
    if (!same) {
      snprintf(name, sizeof(name), "sg_%s", fp);
      existing = mlirSymbolTableLookup(symbols, lf_str(name));
    }
  }
  const char *cls = lf_group_class_name(grp->group_class);
  bool reused = !mlirOperationIsNull(existing);
  if (reused) {
    mlirOperationDestroy(new_func);
  } else {
    mlirOperationSetAttributeByName(new_func, lf_str("sym_name"),
                                    mlirStringAttrGet(ctx, lf_str(name)));
    mlirOperationSetAttributeByName(new_func, lf_str(ATTR_CLASS),
                                    mlirStringAttrGet(ctx, lf_str(cls)));
    mlirOperationSetAttributeByName(new_func, lf_str(ATTR_FINGERPRINT),
                                    mlirStringAttrGet(ctx, lf_str(fp)));
    mlirOperationSetAttributeByName(new_func, lf_str(LF_ATTR_PATTERN),
                                    mlirStringAttrGet(ctx, lf_str(pat.key)));
    mlirSymbolTableInsert(symbols, new_func);
  }
  new_func = (MlirOperation){NULL};

  /* The call replaces the group where its last moved member was. */
  MlirOperationState cs = mlirOperationStateGet(lf_str("func.call"), loc);
  MlirNamedAttribute callee =
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("callee")),
                            mlirFlatSymbolRefAttrGet(ctx, lf_str(name)));
  mlirOperationStateAddAttributes(&cs, 1, &callee);
  mlirOperationStateAddOperands(&cs, (intptr_t)inputs.n, inputs.v);
  mlirOperationStateAddResults(&cs, (intptr_t)outputs.n, out_types);
  MlirOperation call = mlirOperationCreate(&cs);
  mlirBlockInsertOwnedOperationAfter(body, last, call);
  if ((status = move_users_below(grp, call, &outputs)))
    goto out;
  for (size_t i = 0; i < outputs.n; ++i)
    mlirValueReplaceAllUsesOfWith(outputs.v[i],
                                  mlirOperationGetResult(call, (intptr_t)i));

  /* Report, before the members go away. */
  if (report_groups) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(report_groups, j);
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddStringToObject(j, "fingerprint", fp);
    cJSON_AddStringToObject(j, "pattern", pat.key);
    cJSON *ps = cJSON_AddObjectToObject(j, "pattern_sizes");
    for (size_t k = 0; ps && k < pat.num_sizes; ++k) {
      char sym[24];
      snprintf(sym, sizeof(sym), "S%zu", k);
      cJSON_AddNumberToObject(ps, sym, (double)pat.sizes[k]);
    }
    /* The abstracted text itself (it hashes to the key), so that a
     * subgraph whose sizes coincide can be matched to the key of the same
     * pattern at distinct sizes (llm_client/table.h, lf_table_coincident). */
    if (lf_strbuf_len(&abstract) <= LF_PATTERN_MAX_TEXT)
      cJSON_AddStringToObject(j, "pattern_text", lf_strbuf_cstr(&abstract));
    cJSON_AddStringToObject(j, "class", cls);
    MlirAttribute fname = mlirOperationGetAttributeByName(
        func, mlirSymbolTableGetSymbolAttributeName());
    char *fn = mlirAttributeIsAString(fname)
                   ? strndup(mlirStringAttrGetValue(fname).data,
                             mlirStringAttrGetValue(fname).length)
                   : strdup("");
    cJSON_AddStringToObject(j, "function", fn ? fn : "");
    free(fn);
    cJSON_AddBoolToObject(j, "shared", reused);
    cJSON *ops = cJSON_AddArrayToObject(j, "ops");
    double flops = 0, bytes = 0;
    for (size_t i = 0; i < grp->num_members; ++i) {
      if (grp->members[i].kind == LF_OPK_EMPTY ||
          grp->members[i].kind == LF_OPK_CONSTANT)
        continue;
      char *n = lf_op_name_dup(grp->members[i].op);
      cJSON_AddItemToArray(ops, cJSON_CreateString(n ? n : ""));
      free(n);
      flops += member_flops(&grp->members[i]);
    }
    cJSON *ins = cJSON_AddArrayToObject(j, "inputs");
    for (size_t i = 0; i < inputs.n; ++i) {
      cJSON_AddItemToArray(ins, operand_json(inputs.v[i]));
      bytes += bytes_of(mlirValueGetType(inputs.v[i]));
    }
    cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
    for (size_t i = 0; i < outputs.n; ++i) {
      cJSON_AddItemToArray(
          outs, operand_json(mlirOperationGetResult(call, (intptr_t)i)));
      bytes += bytes_of(out_types[i]);
    }
    cJSON_AddNumberToObject(j, "bytes_moved", bytes);
    cJSON_AddNumberToObject(j, "flops", flops);
  }

  /* Erase moved members, users first. Cloned members may still be needed
   * by later groups: the caller erases the unused ones at the end. */
  for (size_t i = grp->num_members; i-- > 0;)
    if (!grp->members[i].recompute)
      mlirOperationDestroy(grp->members[i].op);

  if (opts->remarks) {
    char msg[512];
    snprintf(msg, sizeof(msg), "llm-fuse: outlined %s subgraph @%s%s", cls,
             name, reused ? " (same fingerprint as an earlier subgraph)" : "");
    lf_emit_diag(mlirOperationGetLocation(call), LF_DIAG_REMARK, msg);
  }
  ++*num_outlined;
  goto out;

out_block:
  mlirBlockDestroy(entry);
out:
  if (!mlirOperationIsNull(new_func))
    mlirOperationDestroy(new_func);
  lf_strbuf_free(&abstract);
  free(in_types);
  free(in_locs);
  free(out_types);
  free(inputs.v);
  free(outputs.v);
  map_free(&map);
  return status;
}

/* ---- The pass. ---- */

static bool is_func(MlirOperation op) {
  return mlirStringRefEqual(mlirIdentifierStr(mlirOperationGetName(op)),
                            lf_str("func.func"));
}

lf_status_t lf_outline_module(MlirOperation module,
                              const lf_outline_options_t *opts,
                              cJSON *report_groups, size_t *out_count) {
  lf_status_t status = LF_OK;
  *out_count = 0;
  MlirBlock mbody = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  /* Collect the functions first: outlining adds new ones. */
  size_t nf = 0, capf = 16;
  MlirOperation *funcs = malloc(capf * sizeof(*funcs));
  if (!funcs)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (MlirOperation op = mlirBlockGetFirstOperation(mbody);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!is_func(op) || mlirRegionIsNull(mlirOperationGetRegion(op, 0)) ||
        mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0))))
      continue; /* declarations */
    if (!mlirAttributeIsNull(
            mlirOperationGetAttributeByName(op, lf_str(ATTR_FINGERPRINT))))
      continue; /* already outlined */
    if (nf == capf) {
      capf *= 2;
      MlirOperation *p = realloc(funcs, capf * sizeof(*p));
      if (!p) {
        free(funcs);
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      }
      funcs = p;
    }
    funcs[nf++] = op;
  }
  MlirSymbolTable symbols = mlirSymbolTableCreate(module);
  for (size_t f = 0; f < nf && !status; ++f) {
    MlirRegion region = mlirOperationGetRegion(funcs[f], 0);
    MlirBlock body = mlirRegionGetFirstBlock(region);
    if (!mlirBlockIsNull(mlirBlockGetNextInRegion(body)))
      continue; /* multi-block bodies (cf): left alone */
    lf_partition_t part;
    lf_partition_options_t popts = {opts->max_group_ops};
    status = lf_partition_block(body, &popts, &part);
    if (status)
      break;
    if (opts->remarks)
      for (size_t i = 0; i < part.num_left_alone; ++i) {
        char msg[512];
        snprintf(msg, sizeof(msg), "llm-fuse: %s", part.left_alone[i].reason);
        lf_emit_diag(mlirOperationGetLocation(part.left_alone[i].op),
                     LF_DIAG_REMARK, msg);
      }
    if (lf_log_enabled(LF_LOG_DEBUG))
      for (size_t i = 0; i < part.num_groups; ++i)
        for (size_t m = 0; m < part.groups[i].num_members; ++m) {
          char *n = lf_op_name_dup(part.groups[i].members[m].op);
          LF_LOG_DEBUG(
              "group %zu (%s) member %zu: %s%s", i,
              lf_group_class_name(part.groups[i].group_class), m, n ? n : "?",
              part.groups[i].members[m].recompute ? " (recomputed)" : "");
          free(n);
        }
    for (size_t i = 0; i < part.num_groups && !status; ++i)
      status = outline_group(module, symbols, funcs[f], body, &part.groups[i],
                             opts, report_groups, out_count);
    /* Ops that were only cloned and lost every user: users first. */
    for (size_t i = part.num_cloned_only; !status && i-- > 0;) {
      MlirOperation op = part.cloned_only[i];
      bool used = false;
      for (intptr_t r = 0; r < mlirOperationGetNumResults(op) && !used; ++r)
        used = !mlirOpOperandIsNull(
            mlirValueGetFirstUse(mlirOperationGetResult(op, r)));
      if (!used)
        mlirOperationDestroy(op);
    }
    lf_partition_free(&part);
  }
  mlirSymbolTableDestroy(symbols);
  free(funcs);
  return status;
}

/* The pass options and run function. */

typedef struct outline_pass_options_s {
  char *report;
  int64_t max_group_ops;
  bool remarks;
} outline_pass_options_t;

#define OPT(field) offsetof(outline_pass_options_t, field)
static const lf_option_def_t outline_options[] = {
    {"report", LF_OPTION_STRING, "",
     "Write one JSON record per outlined subgraph to this file (name, "
     "fingerprint, class, ops, operand shapes and types, bytes moved, FLOPs)",
     NULL, 0, 0, OPT(report)},
    {"max-group-ops", LF_OPTION_INT, "32",
     "Most ops in one subgraph (tensor.empty and constants not counted)", NULL,
     1, 4096, OPT(max_group_ops)},
    {"remarks", LF_OPTION_BOOL, "true",
     "A remark for every outlined subgraph and every op left alone", NULL, 0, 0,
     OPT(remarks)},
};
#undef OPT

static MlirWalkResult find_tosa_cb(MlirOperation op, void *user_data) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  if (s.length > 5 && memcmp(s.data, "tosa.", 5) == 0) {
    *(bool *)user_data = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

const char *lf_tosa_import_pipeline(MlirOperation module) {
  bool found = false;
  mlirOperationWalk(module, find_tosa_cb, &found, MlirWalkPreOrder);
  return found ? LF_TOSA_IMPORT_PIPELINE : NULL;
}

static const char *outline_pre_pipeline(MlirOperation op, const void *options) {
  (void)options;
  return lf_tosa_import_pipeline(op);
}

lf_status_t lf_write_json_report(const char *path, cJSON *root) {
  char *text = cJSON_Print(root);
  if (!text)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  size_t len = strlen(text);
  text[len] = '\n';
  lf_status_t s = lf_write_file_atomic(path, text, len + 1);
  cJSON_free(text);
  if (s)
    s = lf_status_annotate(s, "cannot write report");
  return s;
}

static lf_status_t run_outline(MlirOperation module, const void *options) {
  const outline_pass_options_t *o = options;
  lf_outline_options_t opts = {(size_t)o->max_group_ops, o->remarks};
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  cJSON_AddStringToObject(root, "schema", "llm-fuse-outline/0");
  cJSON *groups = cJSON_AddArrayToObject(root, "subgraphs");
  size_t count = 0;
  lf_status_t s = lf_outline_module(module, &opts, groups, &count);
  if (!s)
    LF_LOG_INFO("outlined %zu subgraph(s)", count);
  if (!s && o->report[0])
    s = lf_write_json_report(o->report, root);
  cJSON_Delete(root);
  return s;
}

const lf_pass_def_t lf_outline_pass = {
    .argument = "llm-fuse-outline",
    .name = "LLMFuseOutlinePass",
    .description = "Partition tensor-level functions into fusable subgraphs "
                   "and outline each into a private function named by its "
                   "fingerprint",
    .op_name = "builtin.module",
    .options = outline_options,
    .num_options = sizeof(outline_options) / sizeof(outline_options[0]),
    .options_size = sizeof(outline_pass_options_t),
    .pre_pipeline = outline_pre_pipeline,
    .run = run_outline,
};
