/* contraction.c - the reduction length K of linalg contractions
 * (contraction.h). */
#include "passes/contraction.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/mlir_util.h"

/* Elements of a statically shaped tensor (rank 0: 1); -1 unknown. */
static double static_elements(MlirType t) {
  if (!mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t))
    return -1;
  double n = 1;
  for (intptr_t d = 0; d < mlirShapedTypeGetRank(t); ++d)
    n *= (double)mlirShapedTypeGetDimSize(t, d);
  return n;
}

/* Whether iterator type attribute `a` prints as a reduction. */
static bool iter_is_reduction(MlirAttribute a) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 256);
  mlirAttributePrint(a, lf_strbuf_print_cb, &b);
  bool r = strstr(lf_strbuf_cstr(&b), "reduction") != NULL;
  lf_strbuf_free(&b);
  return r;
}

static bool result_ok(MlirOperation op, const lf_contraction_filter_t *f) {
  return !f->result || (mlirOperationGetNumResults(op) >= 1 &&
                        f->result(mlirValueGetType(
                            mlirOperationGetResult(op, 0))));
}

static int64_t generic_k(MlirOperation op, const lf_contraction_filter_t *f) {
  MlirAttribute iters =
      mlirOperationGetAttributeByName(op, lf_str("iterator_types"));
  MlirAttribute maps =
      mlirOperationGetAttributeByName(op, lf_str("indexing_maps"));
  if (mlirAttributeIsNull(iters) || !mlirAttributeIsAArray(iters) ||
      mlirAttributeIsNull(maps) || !mlirAttributeIsAArray(maps) ||
      !result_ok(op, f))
    return 0;
  intptr_t nloops = mlirArrayAttrGetNumElements(iters);
  if (nloops > 64)
    return 0;
  bool red[64] = {false};
  double bound[64] = {0};
  for (intptr_t i = 0; i < nloops; ++i)
    red[i] = iter_is_reduction(mlirArrayAttrGetElement(iters, i));
  intptr_t inputs =
      mlirOperationGetNumOperands(op) - mlirOperationGetNumResults(op);
  int contracted = 0;
  MlirType multiplied[64];
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op) &&
                       i < mlirArrayAttrGetNumElements(maps);
       ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    MlirAffineMap m =
        mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, i));
    bool varies = false;
    for (intptr_t r = 0; r < mlirAffineMapGetNumResults(m); ++r) {
      MlirAffineExpr e = mlirAffineMapGetResult(m, r);
      if (!mlirAffineExprIsADim(e))
        continue;
      intptr_t d = mlirAffineDimExprGetPosition(e);
      if (d >= nloops)
        continue;
      if (mlirTypeIsARankedTensor(t) && !mlirShapedTypeIsDynamicDim(t, r))
        bound[d] = (double)mlirShapedTypeGetDimSize(t, r);
      varies = varies || red[d];
    }
    if (i < inputs && varies && f->input(t) && contracted < 64)
      multiplied[contracted++] = t;
  }
  if (contracted < 2)
    return 0;
  double k = 1;
  for (intptr_t d = 0; d < nloops; ++d)
    if (red[d]) {
      if (bound[d] <= 0)
        return 0;
      k *= bound[d];
    }
  if (!(k >= 1 && k < 9e15))
    return 0;
  for (int i = 0; f->seen && i < contracted; ++i)
    f->seen(multiplied[i], f->user);
  return (int64_t)k;
}

static int64_t named_k(MlirOperation op, const char *name,
                       const lf_contraction_filter_t *f) {
  if (!(strstr(name, "matmul") || strstr(name, "matvec") ||
        strstr(name, "vecmat") || strcmp(name, "linalg.dot") == 0) ||
      mlirOperationGetNumOperands(op) < 3 || mlirOperationGetNumResults(op) < 1)
    return 0;
  MlirType ta = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType tb = mlirValueGetType(mlirOperationGetOperand(op, 1));
  MlirType to = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!f->input(ta) || !f->input(tb) || !result_ok(op, f))
    return 0;
  double a = static_elements(ta), b = static_elements(tb),
         o = static_elements(to), batch = 1;
  if (a <= 0 || b <= 0 || o <= 0)
    return 0;
  bool reduce = strncmp(name, "linalg.batch_reduce", 19) == 0;
  if (strncmp(name, "linalg.batch_", 13) == 0 && !reduce &&
      mlirShapedTypeGetRank(to) > 0)
    batch = (double)mlirShapedTypeGetDimSize(to, 0);
  if (reduce && mlirShapedTypeGetRank(ta) > 0)
    batch = (double)mlirShapedTypeGetDimSize(ta, 0);
  double k = sqrt(a * b / o / batch);
  if (reduce)
    k *= batch; /* the batch is reduced too */
  if (!(k >= 1 && k < 9e15))
    return 0;
  if (f->seen) {
    f->seen(ta, f->user);
    f->seen(tb, f->user);
  }
  return (int64_t)llround(k);
}

int64_t lf_contraction_k(MlirOperation op, const lf_contraction_filter_t *f) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  char name[96];
  snprintf(name, sizeof(name), "%.*s", (int)n.length, n.data);
  if (strncmp(name, "linalg.", 7) != 0)
    return 0;
  return strcmp(name, "linalg.generic") == 0 ? generic_k(op, f)
                                             : named_k(op, name, f);
}
