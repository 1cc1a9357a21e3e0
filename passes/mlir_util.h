/* mlir_util.h - small helpers over the MLIR C API that the passes and
 * llm-fuse-compile share: string refs, op names, and MLIR text into an
 * lf_strbuf_t. Header-only (static inline). */
#ifndef LF_PASSES_MLIR_UTIL_H
#define LF_PASSES_MLIR_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline MlirStringRef lf_str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

/// True when `op` is named `name` ("linalg.generic").
static inline bool lf_op_is(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

/// True when shaped types `a` and `b` have the same dimensions once their
/// size-1 dimensions are dropped ([1, 8, 1, 4] and [8, 4]); neither null.
static inline bool lf_same_shape_mod_units(MlirType a, MlirType b) {
  intptr_t i = 0, j = 0, ra = mlirShapedTypeGetRank(a),
           rb = mlirShapedTypeGetRank(b);
  for (;;) {
    while (i < ra && mlirShapedTypeGetDimSize(a, i) == 1)
      ++i;
    while (j < rb && mlirShapedTypeGetDimSize(b, j) == 1)
      ++j;
    if (i == ra || j == rb)
      return i == ra && j == rb;
    if (mlirShapedTypeGetDimSize(a, i++) != mlirShapedTypeGetDimSize(b, j++))
      return false;
  }
}

/// An MlirStringCallback appending to the lf_strbuf_t in `user_data`. The
/// buffer's cap shows up as a short text, which callers check.
static inline void lf_strbuf_print_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

/// `op`'s name, malloc'ed.
static inline char *lf_op_name_dup(MlirOperation op) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return strndup(s.data, s.length);
}

/// `t` as MLIR text, malloc'ed (NULL when out of memory).
static inline char *lf_type_dup(MlirType t) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 20);
  mlirTypePrint(t, lf_strbuf_print_cb, &b);
  return lf_strbuf_take(&b);
}

/// The module-level memref.global that memref.get_global `get` names, or a
/// null operation.
static inline MlirOperation lf_lookup_global(MlirModule module,
                                             MlirOperation get) {
  MlirAttribute ref = mlirOperationGetAttributeByName(get, lf_str("name"));
  if (!mlirAttributeIsAFlatSymbolRef(ref))
    return (MlirOperation){NULL};
  MlirStringRef want = mlirFlatSymbolRefAttrGetValue(ref);
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute n = mlirOperationGetAttributeByName(
        op, mlirSymbolTableGetSymbolAttributeName());
    if (lf_op_is(op, "memref.global") && mlirAttributeIsAString(n) &&
        mlirStringRefEqual(mlirStringAttrGetValue(n), want))
      return op;
  }
  return (MlirOperation){NULL};
}

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_MLIR_UTIL_H */
