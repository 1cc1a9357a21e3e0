/* prune.c - drops the branches of scf.if ops whose condition is a constant,
 * before the lowering.
 *
 * The table's multi-tiling templates (kernels/table/gemm_any.py and
 * friends) select a tiling at instantiation by a constant: `%lf_tile =
 * arith.constant K` and a chain of `scf.if (arith.cmpi eq, %lf_tile, J)`,
 * one branch per tiling. LLVM folds the chain, but only after every
 * branch has been lowered, translated and optimized: three to four times
 * the work on the kernel that is kept. Folding it here (what the
 * canonicalizer's scf.if folding would do, and nothing else) leaves the
 * same kernel for LLVM; the contract is checked before, on the whole
 * text.
 */
#include <string.h>

#include "builder/internal.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

static bool op_is(MlirOperation op, const char *name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(name) && memcmp(n.data, name, n.length) == 0;
}

/* The value of `v` if an arith.constant of integer or index type defines
 * it. */
static bool const_int(MlirValue v, int64_t *out) {
  if (!mlirValueIsAOpResult(v))
    return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!op_is(def, "arith.constant"))
    return false;
  MlirAttribute a = mlirOperationGetAttributeByName(
      def, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a))
    return false;
  MlirType t = mlirAttributeGetType(a);
  if (!mlirTypeIsAIndex(t) &&
      !(mlirTypeIsAInteger(t) && mlirIntegerTypeIsSignless(t) &&
        mlirIntegerTypeGetWidth(t) <= 64))
    return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

/* Whether the condition of an scf.if is known: a constant i1, or
 * arith.cmpi eq / ne of two constants. */
static bool const_condition(MlirValue cond, bool *out) {
  int64_t c;
  if (const_int(cond, &c)) {
    *out = c != 0;
    return true;
  }
  if (!mlirValueIsAOpResult(cond))
    return false;
  MlirOperation cmp = mlirOpResultGetOwner(cond);
  if (!op_is(cmp, "arith.cmpi") || mlirOperationGetNumOperands(cmp) != 2)
    return false;
  MlirAttribute p = mlirOperationGetAttributeByName(
      cmp, mlirStringRefCreateFromCString("predicate"));
  int64_t a, b;
  if (mlirAttributeIsNull(p) || !mlirAttributeIsAInteger(p) ||
      !const_int(mlirOperationGetOperand(cmp, 0), &a) ||
      !const_int(mlirOperationGetOperand(cmp, 1), &b))
    return false;
  /* arith::CmpIPredicate: eq = 0, ne = 1; the others are left to LLVM. */
  int64_t pred = mlirIntegerAttrGetValueInt(p);
  if (pred != 0 && pred != 1)
    return false;
  *out = (a == b) == (pred == 0);
  return true;
}

typedef struct find_s {
  MlirOperation op;
  bool taken;
} find_t;

static MlirWalkResult find_constant_if(MlirOperation op, void *user_data) {
  find_t *f = user_data;
  if (!op_is(op, "scf.if") || mlirOperationGetNumOperands(op) != 1 ||
      mlirOperationGetNumRegions(op) != 2)
    return MlirWalkResultAdvance;
  if (!const_condition(mlirOperationGetOperand(op, 0), &f->taken))
    return MlirWalkResultAdvance;
  f->op = op;
  return MlirWalkResultInterrupt;
}

/* Replaces the scf.if by the body of its taken branch. */
static bool fold_if(MlirOperation ifop, bool taken) {
  MlirRegion region = mlirOperationGetRegion(ifop, taken ? 0 : 1);
  MlirBlock block = mlirRegionGetFirstBlock(region);
  intptr_t nres = mlirOperationGetNumResults(ifop);
  if (mlirBlockIsNull(block)) {
    if (nres != 0) /* not valid IR: leave it to the lowering's verifier */
      return false;
    mlirOperationDestroy(ifop);
    return true;
  }
  MlirOperation yield = mlirBlockGetTerminator(block);
  if (mlirOperationIsNull(yield) || !op_is(yield, "scf.yield") ||
      mlirOperationGetNumOperands(yield) != nres ||
      !mlirBlockIsNull(mlirBlockGetNextInRegion(block)))
    return false;
  for (intptr_t i = 0; i < nres; ++i)
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(ifop, i),
                                  mlirOperationGetOperand(yield, i));
  for (MlirOperation op = mlirBlockGetFirstOperation(block);
       !mlirOperationEqual(op, yield);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    mlirOperationMoveBefore(op, ifop);
    op = next;
  }
  mlirOperationDestroy(ifop);
  return true;
}

int lf_prune_constant_branches(MlirOperation root) {
  int folded = 0;
  for (;;) {
    find_t f = {{NULL}, false};
    mlirOperationWalk(root, find_constant_if, &f, MlirWalkPreOrder);
    if (mlirOperationIsNull(f.op) || !fold_if(f.op, f.taken))
      return folded;
    ++folded;
  }
}
