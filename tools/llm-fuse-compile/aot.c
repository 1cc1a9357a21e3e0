/* aot.c - ahead-of-time compilation of a model to a host object file and
 * its C header. See aot.h for the pipeline.
 */
#include "tools/llm-fuse-compile/aot.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "dialect_bridge/bridge.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"
#include "mlir-c/Target/LLVMIR.h"
#include "passes/reference.h"
#include "passes/mlir_util.h"
#include "llvm-c/Core.h"
#include "llvm-c/Error.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"

/* TOSA to linalg on tensors, as the examples are imported. */
#define TOSA_PIPELINE                                                          \
  "builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,"              \
  "tosa-to-arith,tosa-to-tensor),canonicalize)"

/* The host target of the object file. */
#define HOST_TRIPLE "x86_64-unknown-linux-gnu"

/* Emits a located error through the context's diagnostics. */
static void error_at(MlirLocation loc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void error_at(MlirLocation loc, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  mlirEmitError(loc, msg);
}

/* Runs `pipeline` on the module; a parse failure is INTERNAL (our text),
 * a run failure names `step` (the diagnostics say where). */
static lf_status_t run_pipeline(MlirModule module, const char *pipeline,
                                const char *step) {
  MlirContext ctx = mlirModuleGetContext(module);
  lf_strbuf_t err;
  lf_strbuf_init(&err, 4096);
  lf_status_t s = LF_OK;
  MlirPassManager pm =
      mlirPassManagerCreateOnOperation(ctx, lf_str("builtin.module"));
  if (mlirLogicalResultIsFailure(
          mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                lf_str(pipeline), lf_strbuf_print_cb, &err))) {
    s = LF_STATUS(LF_STATUS_INTERNAL, "%s: the pipeline does not parse: %s",
                  step, lf_strbuf_cstr(&err));
    goto out;
  }
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module))))
    s = LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                  "%s failed (see the diagnostics above)", step);
out:
  mlirPassManagerDestroy(pm);
  lf_strbuf_free(&err);
  return s;
}

/* ---- Step 1: the llm-fuse pass, if registered. ---- */

static lf_status_t run_llm_fuse(MlirModule module, const char *options) {
  lf_register_passes();
  lf_strbuf_t p;
  lf_strbuf_init(&p, 1 << 16);
  lf_status_t s = lf_strbuf_appendf(&p, "builtin.module(llm-fuse{%s})",
                                    options ? options : "");
  if (s)
    goto out;
  /* Parse separately: a pass that is not registered is skipped, bad
   * options are the user's error. */
  MlirContext ctx = mlirModuleGetContext(module);
  lf_strbuf_t err;
  lf_strbuf_init(&err, 4096);
  MlirPassManager pm =
      mlirPassManagerCreateOnOperation(ctx, lf_str("builtin.module"));
  bool parsed = mlirLogicalResultIsSuccess(
      mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                            lf_str(lf_strbuf_cstr(&p)), lf_strbuf_print_cb, &err));
  mlirPassManagerDestroy(pm);
  if (!parsed) {
    if (strstr(lf_strbuf_cstr(&err), "does not refer to a registered"))
      fprintf(stderr, "llm-fuse-compile: warning: the llm-fuse pass is not "
                      "registered; skipping it\n");
    else
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "bad --llm-fuse-options '%s': %s", options ? options : "",
                    lf_strbuf_cstr(&err));
    lf_strbuf_free(&err);
    goto out;
  }
  lf_strbuf_free(&err);
  s = run_pipeline(module, lf_strbuf_cstr(&p), "the llm-fuse pass");
out:
  lf_strbuf_free(&p);
  return s;
}

/* ---- Step 2: TOSA import. ---- */

static MlirWalkResult find_tosa_cb(MlirOperation op, void *user_data) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && memcmp(n.data, "tosa.", 5) == 0) {
    *(bool *)user_data = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* ---- Entry points. ---- */

/* Element type -> C type and size; NULL when not supported. */
static const char *elem_ctype(MlirType e, size_t *bytes) {
  if (mlirTypeIsAF32(e))
    return *bytes = 4, "float";
  if (mlirTypeIsAF64(e))
    return *bytes = 8, "double";
  if (mlirTypeIsAF16(e))
    return *bytes = 2, "uint16_t"; /* the bits */
  if (mlirTypeIsABF16(e))
    return *bytes = 2, "uint16_t"; /* the bits */
  if (mlirTypeIsAInteger(e)) {
    switch (mlirIntegerTypeGetWidth(e)) {
    case 8:
      return *bytes = 1, "int8_t";
    case 16:
      return *bytes = 2, "int16_t";
    case 32:
      return *bytes = 4, "int32_t";
    case 64:
      return *bytes = 8, "int64_t";
    }
  }
  return NULL;
}

static bool is_c_identifier(MlirStringRef s) {
  if (!s.length || !(isalpha((unsigned char)s.data[0]) || s.data[0] == '_'))
    return false;
  for (size_t i = 0; i < s.length; ++i)
    if (!isalnum((unsigned char)s.data[i]) && s.data[i] != '_')
      return false;
  return true;
}

/* Fills `t` from a boundary type; false (with a located error) when the
 * type is not a statically shaped tensor of a supported element type. */
static bool boundary_tensor(MlirOperation func, const char *fname,
                            const char *what, intptr_t index, MlirType type,
                            lf_aot_tensor_t *t) {
  memset(t, 0, sizeof(*t));
  if (mlirTypeIsARankedTensor(type) && mlirShapedTypeHasStaticShape(type) &&
      mlirShapedTypeGetRank(type) <= 16) {
    MlirType e = mlirShapedTypeGetElementType(type);
    t->ctype = elem_ctype(e, &t->elem_bytes);
    if (t->ctype) {
      t->elem = lf_type_dup(e);
      t->rank = mlirShapedTypeGetRank(type);
      t->shape = calloc((size_t)t->rank + 1, sizeof(*t->shape));
      for (intptr_t i = 0; t->shape && i < t->rank; ++i)
        t->shape[i] = mlirShapedTypeGetDimSize(type, i);
      return t->elem && t->shape;
    }
  }
  char *ty = lf_type_dup(type);
  error_at(mlirOperationGetLocation(func),
           "entry point @%s: %s %zd has type '%s'; llm-fuse-compile takes "
           "statically shaped tensors (rank 16 at most) of f16, bf16, f32, "
           "f64, i8, i16, i32 or i64 at the boundary",
           fname, what, (ssize_t)index, ty ? ty : "?");
  free(ty);
  return false;
}

static void entry_free(lf_aot_entry_t *e) {
  for (size_t i = 0; i < e->num_inputs + e->num_outputs; ++i) {
    lf_aot_tensor_t *t =
        i < e->num_inputs ? &e->inputs[i] : &e->outputs[i - e->num_inputs];
    free(t->elem);
    free(t->shape);
  }
  free(e->inputs);
  free(e->outputs);
  free(e->name);
}

/* Collects the public functions as entry points and asks for their C
 * interface (_mlir_ciface_<name>). */
static lf_status_t collect_entries(MlirModule module, lf_aot_result_t *out) {
  MlirContext ctx = mlirModuleGetContext(module);
  size_t bad = 0, cap = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!lf_op_is(op, "func.func"))
      continue;
    MlirAttribute vis =
        mlirOperationGetAttributeByName(op, lf_str("sym_visibility"));
    MlirRegion body = mlirOperationGetRegion(op, 0);
    if (!mlirAttributeIsNull(vis) ||
        mlirBlockIsNull(mlirRegionGetFirstBlock(body)))
      continue; /* private or a declaration */
    MlirStringRef name = mlirStringAttrGetValue(mlirOperationGetAttributeByName(
        op, mlirSymbolTableGetSymbolAttributeName()));
    char *fname = strndup(name.data, name.length);
    if (!fname)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    if (!is_c_identifier(name)) {
      error_at(mlirOperationGetLocation(op),
               "entry point @%s: the name is not a C identifier", fname);
      free(fname);
      ++bad;
      continue;
    }
    if (out->num_entries == cap) {
      cap = cap ? 2 * cap : 4;
      void *p = realloc(out->entries, cap * sizeof(*out->entries));
      if (!p) {
        free(fname);
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      }
      out->entries = p;
    }
    lf_aot_entry_t *e = &out->entries[out->num_entries++];
    memset(e, 0, sizeof(*e));
    e->name = fname;
    MlirType fty = mlirTypeAttrGetValue(
        mlirOperationGetAttributeByName(op, lf_str("function_type")));
    intptr_t ni = mlirFunctionTypeGetNumInputs(fty);
    intptr_t no = mlirFunctionTypeGetNumResults(fty);
    e->inputs = calloc((size_t)ni + 1, sizeof(*e->inputs));
    e->outputs = calloc((size_t)no + 1, sizeof(*e->outputs));
    if (!e->inputs || !e->outputs)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    bool ok = true;
    for (intptr_t i = 0; ok && i < ni; ++i, ++e->num_inputs)
      ok = boundary_tensor(op, fname, "argument", i,
                           mlirFunctionTypeGetInput(fty, i), &e->inputs[i]);
    for (intptr_t i = 0; ok && i < no; ++i, ++e->num_outputs)
      ok = boundary_tensor(op, fname, "result", i,
                           mlirFunctionTypeGetResult(fty, i), &e->outputs[i]);
    if (ok && no == 0) {
      error_at(mlirOperationGetLocation(op),
               "entry point @%s returns nothing; its results are what the "
               "compiled model computes",
               fname);
      ok = false;
    }
    if (!ok)
      ++bad;
    mlirOperationSetAttributeByName(op, lf_str("llvm.emit_c_interface"),
                                    mlirUnitAttrGet(ctx));
  }
  if (bad)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "%zu entry point(s) cannot be compiled (see the "
                     "diagnostics above)",
                     bad);
  if (!out->num_entries) {
    error_at(mlirOperationGetLocation(mlirModuleGetOperation(module)),
             "no public function with a body: nothing to compile");
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no entry point");
  }
  return LF_OK;
}

/* ---- Step 3b: copies between strided views become kernels. ---- */

static MlirWalkResult collect_copies_cb(MlirOperation op, void *user_data);

typedef struct ops_s {
  MlirOperation *op;
  size_t n, cap;
} ops_t;

static MlirWalkResult collect_copies_cb(MlirOperation op, void *user_data) {
  ops_t *ops = user_data;
  if (!lf_op_is(op, "memref.copy"))
    return MlirWalkResultAdvance;
  if (ops->n == ops->cap) {
    size_t c = ops->cap ? 2 * ops->cap : 16;
    void *p = realloc(ops->op, c * sizeof(*ops->op));
    if (!p)
      return MlirWalkResultInterrupt;
    ops->op = p;
    ops->cap = c;
  }
  ops->op[ops->n++] = op;
  return MlirWalkResultAdvance;
}

static bool contiguous(MlirType t);

/* The type `t` (rank `rank`, `strides`/`offset` from its layout) takes
 * after collapsing the dimension groups `first[g]` .. `first[g + 1] - 1`:
 * sizes multiplied, the stride of a group's last dimension; an identity
 * layout stays identity. */
static MlirType collapsed_type(MlirType t, intptr_t rank, const int64_t *strides,
                               int64_t offset, const intptr_t *first,
                               intptr_t groups) {
  MlirContext ctx = mlirTypeGetContext(t);
  int64_t shape[16], st[16];
  for (intptr_t g = 0; g < groups; ++g) {
    intptr_t end = g + 1 < groups ? first[g + 1] : rank;
    shape[g] = 1;
    for (intptr_t d = first[g]; d < end; ++d)
      shape[g] *= mlirShapedTypeGetDimSize(t, d);
    st[g] = strides[end - 1];
  }
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  bool identity = mlirAttributeIsAAffineMap(layout) &&
                  mlirAffineMapIsIdentity(mlirAffineMapAttrGetValue(layout));
  MlirAttribute new_layout =
      identity ? mlirAttributeGetNull()
               : mlirStridedLayoutAttrGet(ctx, offset, groups, st);
  return mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), groups, shape,
                           new_layout, mlirMemRefTypeGetMemorySpace(t));
}

/* A copy between strided views walks its innermost dimension only, which
 * the GPU mapping (tiles of 1 x 256 over the two outer dimensions) would
 * give to one thread as a loop: the MiniGPT block's head split, a
 * 1024x12x64 view of 1024x768 columns of the QKV result, ran as 12 threads
 * per block looping over 64 elements, 45 us per copy on an H200.
 * Dimensions that are contiguous with the next one in both views are
 * collapsed first (1024x768 with row stride 2304: 256 threads along a
 * row). Returns false, changing nothing, when nothing collapses or the
 * collapsed views do not verify. */
static bool collapse_copy_operands(MlirOperation copy, MlirValue *src,
                                   MlirValue *dst) {
  MlirType ts = mlirValueGetType(*src), td = mlirValueGetType(*dst);
  intptr_t rank = mlirShapedTypeGetRank(ts);
  int64_t ss[16], sd[16], os = 0, od = 0;
  if (rank < 2 || rank > 16 || !mlirShapedTypeHasStaticShape(ts) ||
      !mlirShapedTypeHasStaticShape(td) ||
      mlirLogicalResultIsFailure(
          mlirMemRefTypeGetStridesAndOffset(ts, ss, &os)) ||
      mlirLogicalResultIsFailure(
          mlirMemRefTypeGetStridesAndOffset(td, sd, &od)))
    return false;
  intptr_t first[16], groups = 0;
  first[groups++] = 0;
  for (intptr_t d = 1; d < rank; ++d) {
    int64_t n = mlirShapedTypeGetDimSize(ts, d);
    bool merge = !mlirShapedTypeIsDynamicStrideOrOffset(ss[d - 1]) &&
                 !mlirShapedTypeIsDynamicStrideOrOffset(ss[d]) &&
                 !mlirShapedTypeIsDynamicStrideOrOffset(sd[d - 1]) &&
                 !mlirShapedTypeIsDynamicStrideOrOffset(sd[d]) &&
                 ss[d - 1] == ss[d] * n && sd[d - 1] == sd[d] * n;
    if (!merge)
      first[groups++] = d;
  }
  if (groups == rank)
    return false;
  lf_strbuf_t re;
  lf_strbuf_init(&re, 256);
  lf_status_free(lf_strbuf_append_str(&re, "["));
  for (intptr_t g = 0; g < groups; ++g) {
    intptr_t end = g + 1 < groups ? first[g + 1] : rank;
    lf_status_free(lf_strbuf_append_str(&re, g ? ", [" : "["));
    for (intptr_t d = first[g]; d < end; ++d)
      lf_status_free(
          lf_strbuf_appendf(&re, "%s%zd", d > first[g] ? ", " : "", (ssize_t)d));
    lf_status_free(lf_strbuf_append_str(&re, "]"));
  }
  lf_status_free(lf_strbuf_append_str(&re, "]"));
  MlirContext ctx = mlirOperationGetContext(copy);
  MlirAttribute reassoc = mlirAttributeParseGet(ctx, lf_str(lf_strbuf_cstr(&re)));
  lf_strbuf_free(&re);
  if (mlirAttributeIsNull(reassoc))
    return false;
  MlirLocation loc = mlirOperationGetLocation(copy);
  MlirValue in[2] = {*src, *dst};
  MlirType out_t[2] = {collapsed_type(ts, rank, ss, os, first, groups),
                       collapsed_type(td, rank, sd, od, first, groups)};
  MlirOperation made[2];
  for (int k = 0; k < 2; ++k) {
    MlirOperationState st =
        mlirOperationStateGet(lf_str("memref.collapse_shape"), loc);
    mlirOperationStateAddOperands(&st, 1, &in[k]);
    mlirOperationStateAddResults(&st, 1, &out_t[k]);
    MlirNamedAttribute a = mlirNamedAttributeGet(
        mlirIdentifierGet(ctx, lf_str("reassociation")), reassoc);
    mlirOperationStateAddAttributes(&st, 1, &a);
    made[k] = mlirOperationCreate(&st);
    if (mlirOperationIsNull(made[k]) || !mlirOperationVerify(made[k])) {
      if (!mlirOperationIsNull(made[k]))
        mlirOperationDestroy(made[k]);
      if (k == 1)
        mlirOperationDestroy(made[0]);
      return false;
    }
  }
  for (int k = 0; k < 2; ++k)
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(copy), copy,
                                        made[k]);
  *src = mlirOperationGetResult(made[0], 0);
  *dst = mlirOperationGetResult(made[1], 0);
  return true;
}

/* Replaces `copy` by the linalg.generic that copies element by element, so
 * that the GPU mapping turns it into a kernel like any other. */
static lf_status_t copy_to_generic(MlirOperation copy) {
  MlirContext ctx = mlirOperationGetContext(copy);
  MlirLocation loc = mlirOperationGetLocation(copy);
  MlirValue src = mlirOperationGetOperand(copy, 0);
  MlirValue dst = mlirOperationGetOperand(copy, 1);
  collapse_copy_operands(copy, &src, &dst);
  MlirType t = mlirValueGetType(src);
  if (!mlirTypeIsAMemRef(t))
    return LF_STATUS(LF_STATUS_INTERNAL, "memref.copy of a non-memref");
  intptr_t rank = mlirShapedTypeGetRank(t);
  MlirType elem = mlirShapedTypeGetElementType(t);
  lf_strbuf_t dims, maps, iters;
  lf_strbuf_init(&dims, 4096);
  lf_strbuf_init(&maps, 8192);
  lf_strbuf_init(&iters, 4096);
  for (intptr_t i = 0; i < rank; ++i)
    lf_status_free(
        lf_strbuf_appendf(&dims, "%sd%zd", i ? ", " : "", (ssize_t)i));
  lf_status_free(lf_strbuf_appendf(&maps,
                                   "[affine_map<(%s) -> (%s)>, "
                                   "affine_map<(%s) -> (%s)>]",
                                   lf_strbuf_cstr(&dims), lf_strbuf_cstr(&dims),
                                   lf_strbuf_cstr(&dims),
                                   lf_strbuf_cstr(&dims)));
  lf_status_free(lf_strbuf_append_str(&iters, "["));
  for (intptr_t i = 0; i < rank; ++i)
    lf_status_free(lf_strbuf_appendf(
        &iters, "%s#linalg.iterator_type<parallel>", i ? ", " : ""));
  lf_status_free(lf_strbuf_append_str(&iters, "]"));
  mlirContextGetOrLoadDialect(ctx, lf_str("linalg"));
  MlirAttribute map_attr =
      mlirAttributeParseGet(ctx, lf_str(lf_strbuf_cstr(&maps)));
  MlirAttribute iter_attr =
      mlirAttributeParseGet(ctx, lf_str(lf_strbuf_cstr(&iters)));
  lf_strbuf_free(&dims);
  lf_strbuf_free(&maps);
  lf_strbuf_free(&iters);
  if (mlirAttributeIsNull(map_attr) || mlirAttributeIsNull(iter_attr))
    return LF_STATUS(LF_STATUS_INTERNAL, "cannot build the copy's attributes");
  int32_t seg[2] = {1, 1};
  MlirNamedAttribute attrs[3] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("indexing_maps")),
                            map_attr),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("iterator_types")),
                            iter_attr),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("operandSegmentSizes")),
                            mlirDenseI32ArrayGet(ctx, 2, seg))};
  MlirType args[2] = {elem, elem};
  MlirLocation locs[2] = {loc, loc};
  MlirBlock block = mlirBlockCreate(2, args, locs);
  MlirValue in = mlirBlockGetArgument(block, 0);
  MlirOperationState ys = mlirOperationStateGet(lf_str("linalg.yield"), loc);
  mlirOperationStateAddOperands(&ys, 1, &in);
  mlirBlockAppendOwnedOperation(block, mlirOperationCreate(&ys));
  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, block);
  MlirOperationState st = mlirOperationStateGet(lf_str("linalg.generic"), loc);
  MlirValue operands[2] = {src, dst};
  mlirOperationStateAddOperands(&st, 2, operands);
  mlirOperationStateAddAttributes(&st, 3, attrs);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  MlirOperation generic = mlirOperationCreate(&st);
  if (mlirOperationIsNull(generic))
    return LF_STATUS(LF_STATUS_INTERNAL, "cannot build the copy kernel");
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(copy), copy,
                                      generic);
  mlirOperationDestroy(copy);
  return LF_OK;
}

static lf_status_t strided_copies_to_kernels(MlirModule module) {
  ops_t copies = {0};
  mlirOperationWalk(mlirModuleGetOperation(module), collect_copies_cb, &copies,
                    MlirWalkPostOrder);
  lf_status_t s = LF_OK;
  for (size_t i = 0; !s && i < copies.n; ++i)
    if (!contiguous(
            mlirValueGetType(mlirOperationGetOperand(copies.op[i], 0))) ||
        !contiguous(mlirValueGetType(mlirOperationGetOperand(copies.op[i], 1))))
      s = copy_to_generic(copies.op[i]);
  free(copies.op);
  return s;
}

/* ---- Step 4: the host rewrite, buffers into device memory. ---- */

static MlirOperation create_op(const char *name, MlirLocation loc,
                               intptr_t num_results, const MlirType *results,
                               intptr_t num_operands, const MlirValue *operands,
                               intptr_t num_attrs,
                               const MlirNamedAttribute *attrs) {
  MlirOperationState st = mlirOperationStateGet(lf_str(name), loc);
  mlirOperationStateAddResults(&st, num_results, results);
  mlirOperationStateAddOperands(&st, num_operands, operands);
  mlirOperationStateAddAttributes(&st, num_attrs, attrs);
  return mlirOperationCreate(&st);
}

/* A gpu.alloc of `type` with `dyn` dynamic sizes, inserted before `before`
 * (or at the end of `block` when null). */
static MlirOperation gpu_alloc(MlirBlock block, MlirOperation before,
                               MlirLocation loc, MlirType type,
                               intptr_t num_dyn, const MlirValue *dyn) {
  MlirContext ctx = mlirLocationGetContext(loc);
  int32_t seg[3] = {0, (int32_t)num_dyn, 0};
  MlirNamedAttribute a =
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, lf_str("operandSegmentSizes")),
                            mlirDenseI32ArrayGet(ctx, 3, seg));
  MlirOperation op = create_op("gpu.alloc", loc, 1, &type, num_dyn, dyn, 1, &a);
  mlirBlockInsertOwnedOperationBefore(block, before, op);
  return op;
}

/* True when `t` is a memref whose elements are contiguous in row-major
 * order (identity layout, or a strided layout with dense strides). */
static bool contiguous(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || !mlirShapedTypeHasStaticShape(t))
    return false;
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t strides[16], offset;
  if (rank > 16 || mlirLogicalResultIsFailure(
                       mlirMemRefTypeGetStridesAndOffset(t, strides, &offset)))
    return false;
  int64_t expect = 1;
  for (intptr_t i = rank - 1; i >= 0; --i) {
    if (mlirShapedTypeGetDimSize(t, i) != 1 && strides[i] != expect)
      return false;
    expect *= mlirShapedTypeGetDimSize(t, i);
  }
  return true;
}

static bool has_gpu_dealloc_user(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (lf_op_is(mlirOpOperandGetOwner(u), "gpu.dealloc"))
      return true;
  return false;
}

/* Ops the host may keep: they only compute sizes, make descriptors of
 * existing buffers, launch or call. */
static bool host_op_allowed(MlirOperation op) {
  static const char *const ok[] = {"arith.constant",
                                   "memref.subview",
                                   "memref.expand_shape",
                                   "memref.collapse_shape",
                                   "memref.cast",
                                   "memref.reinterpret_cast",
                                   "memref.extract_strided_metadata",
                                   /* A swapped-in kernel's launch passes
                                    * raw device pointers (passes/swap.h). */
                                   "memref.extract_aligned_pointer_as_index",
                                   "arith.index_cast",
                                   "gpu.launch_func",
                                   "func.call",
                                   "func.return",
                                   "gpu.dealloc",
                                   "gpu.alloc",
                                   "gpu.memcpy",
                                   "gpu.memset",
                                   "gpu.wait",
                                   /* The guard of deferred verification
                                    * (passes/defer.h): its blob's address,
                                    * a compare of the decision, and a
                                    * branch that only calls (checked by
                                    * guard_branches_ok). */
                                   "llvm.mlir.addressof",
                                   "arith.cmpi",
                                   "scf.if",
                                   /* A swapped-in kernel's tensor maps,
                                    * encoded on the host before the
                                    * launch (passes/swap.c): host-stack
                                    * spec arrays and the 128-byte map. */
                                   "llvm.mlir.constant",
                                   "llvm.alloca",
                                   "llvm.store",
                                   "llvm.load",
                                   "llvm.inttoptr"};
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); ++i)
    if (lf_op_is(op, ok[i]))
      return true;
  return false;
}

/* The scf.if of a deferred-verification guard (passes/defer.h), after
 * bufferization: each branch allocates the result buffers, calls the
 * candidate or the fallback into them and yields them; the if's results
 * are then copied into the function's out-params. Rewritten so that the
 * branches call straight into the out-params: no buffer, no copy. Left as
 * it is when it does not have that shape (guard_branches_ok then says
 * why). */
static bool forward_guard_results(MlirOperation ifop) {
  intptr_t n = mlirOperationGetNumResults(ifop);
  MlirBlock block = mlirOperationGetBlock(ifop);
  MlirValue dest[16];
  MlirOperation copies[16];
  if (n == 0 || n > 16 || mlirOperationGetNumRegions(ifop) != 2)
    return false;
  for (intptr_t i = 0; i < n; ++i) {
    MlirValue r = mlirOperationGetResult(ifop, i);
    MlirOpOperand u = mlirValueGetFirstUse(r);
    if (mlirOpOperandIsNull(u) ||
        !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)))
      return false;
    MlirOperation copy = mlirOpOperandGetOwner(u);
    if (!lf_op_is(copy, "memref.copy") ||
        mlirOpOperandGetOperandNumber(u) != 0 ||
        !mlirBlockEqual(mlirOperationGetBlock(copy), block))
      return false;
    MlirValue d = mlirOperationGetOperand(copy, 1);
    /* The destination must exist before the if: an argument of this
     * block, or a result of an op before the if in it. */
    if (mlirValueIsABlockArgument(d)) {
      if (!mlirBlockEqual(mlirBlockArgumentGetOwner(d), block))
        return false;
    } else {
      MlirOperation def = mlirOpResultGetOwner(d);
      if (!mlirBlockEqual(mlirOperationGetBlock(def), block) ||
          !mlirOperationIsBeforeInBlock(def, ifop))
        return false;
    }
    if (!mlirTypeEqual(mlirValueGetType(d), mlirValueGetType(r)))
      return false;
    dest[i] = d;
    copies[i] = copy;
  }
  MlirOperation allocs[2][16];
  for (intptr_t k = 0; k < 2; ++k) {
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(ifop, k));
    if (mlirBlockIsNull(b))
      return false;
    MlirOperation yield = mlirBlockGetTerminator(b);
    if (mlirOperationGetNumOperands(yield) != n)
      return false;
    for (intptr_t i = 0; i < n; ++i) {
      MlirValue y = mlirOperationGetOperand(yield, i);
      if (mlirValueIsABlockArgument(y))
        return false;
      MlirOperation a = mlirOpResultGetOwner(y);
      if (!lf_op_is(a, "memref.alloc") || mlirOperationGetNumOperands(a) ||
          !mlirBlockEqual(mlirOperationGetBlock(a), b))
        return false;
      allocs[k][i] = a;
    }
  }
  /* The shape holds: into the destinations, then an if without results. */
  for (intptr_t k = 0; k < 2; ++k)
    for (intptr_t i = 0; i < n; ++i) {
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(allocs[k][i], 0),
                                    dest[i]);
      mlirOperationDestroy(allocs[k][i]);
    }
  for (intptr_t i = 0; i < n; ++i)
    mlirOperationDestroy(copies[i]);
  MlirLocation loc = mlirOperationGetLocation(ifop);
  MlirOperationState st = mlirOperationStateGet(lf_str("scf.if"), loc);
  MlirValue cond = mlirOperationGetOperand(ifop, 0);
  mlirOperationStateAddOperands(&st, 1, &cond);
  MlirRegion regions[2] = {mlirRegionCreate(), mlirRegionCreate()};
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  MlirOperation nif = mlirOperationCreate(&st);
  for (intptr_t k = 0; k < 2; ++k) {
    MlirRegion r = mlirOperationGetRegion(nif, k);
    mlirRegionTakeBody(r, mlirOperationGetRegion(ifop, k));
    MlirBlock b = mlirRegionGetFirstBlock(r);
    MlirOperation yield = mlirBlockGetTerminator(b);
    mlirBlockInsertOwnedOperationBefore(
        b, yield, create_op("scf.yield", loc, 0, NULL, 0, NULL, 0, NULL));
    mlirOperationDestroy(yield);
  }
  mlirBlockInsertOwnedOperationBefore(block, ifop, nif);
  mlirOperationDestroy(ifop);
  return true;
}

/* Host branches may only call and yield: what they call is host code of
 * its own, rewritten like any other function. */
static bool guard_branches_ok(MlirOperation ifop) {
  if (mlirOperationGetNumResults(ifop))
    return false;
  for (intptr_t k = 0; k < mlirOperationGetNumRegions(ifop); ++k)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(ifop, k));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (MlirOperation op = mlirBlockGetFirstOperation(b);
           !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
        if (!lf_op_is(op, "func.call") && !lf_op_is(op, "scf.yield") &&
            !lf_op_is(op, "arith.constant"))
          return false;
  return true;
}

typedef struct values_s {
  MlirValue *v;
  size_t n, cap;
} values_t;

static lf_status_t values_push(values_t *vs, MlirValue v) {
  if (vs->n == vs->cap) {
    size_t c = vs->cap ? 2 * vs->cap : 16;
    void *p = realloc(vs->v, c * sizeof(*vs->v));
    if (!p)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    vs->v = p;
    vs->cap = c;
  }
  vs->v[vs->n++] = v;
  return LF_OK;
}

/* Rewrites one host function; counts ops that cannot stay in `*errors`. */
static lf_status_t rewrite_host_func(MlirModule module, MlirOperation func,
                                     size_t *errors) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return LF_OK;
  if (!mlirBlockIsNull(mlirBlockGetNextInRegion(body))) {
    error_at(mlirOperationGetLocation(func),
             "host code with control flow after the default GPU mapping: "
             "only straight-line host code can drive device memory");
    ++*errors;
    return LF_OK;
  }
  values_t allocs = {0};
  lf_status_t s = LF_OK;
  MlirOperation next;
  /* (Each forwarding removes ops after the if: start again.) */
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op);)
    op = lf_op_is(op, "scf.if") && forward_guard_results(op)
             ? mlirBlockGetFirstOperation(body)
             : mlirOperationGetNextInBlock(op);
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = next) {
    next = mlirOperationGetNextInBlock(op);
    MlirLocation loc = mlirOperationGetLocation(op);
    if (lf_op_is(op, "memref.alloc")) {
      MlirValue r = mlirOperationGetResult(op, 0);
      intptr_t n = mlirOperationGetNumOperands(op);
      MlirValue dyn[16];
      if (n > 16) {
        error_at(loc, "an allocation with more than 16 dynamic sizes");
        ++*errors;
        continue;
      }
      for (intptr_t i = 0; i < n; ++i)
        dyn[i] = mlirOperationGetOperand(op, i);
      MlirOperation g = gpu_alloc(body, op, loc, mlirValueGetType(r), n, dyn);
      mlirValueReplaceAllUsesOfWith(r, mlirOperationGetResult(g, 0));
      mlirOperationDestroy(op);
      if ((s = values_push(&allocs, mlirOperationGetResult(g, 0))))
        goto out;
    } else if (lf_op_is(op, "memref.dealloc")) {
      MlirValue m = mlirOperationGetOperand(op, 0);
      mlirBlockInsertOwnedOperationBefore(
          body, op, create_op("gpu.dealloc", loc, 0, NULL, 1, &m, 0, NULL));
      mlirOperationDestroy(op);
    } else if (lf_op_is(op, "memref.copy")) {
      MlirValue src = mlirOperationGetOperand(op, 0);
      MlirValue dst = mlirOperationGetOperand(op, 1);
      if (!contiguous(mlirValueGetType(src)) ||
          !contiguous(mlirValueGetType(dst))) {
        error_at(loc, "a copy between non-contiguous views stays on the host "
                      "after the default GPU mapping; llm-fuse-compile "
                      "copies whole contiguous buffers only");
        ++*errors;
        continue;
      }
      MlirValue ops[2] = {dst, src};
      mlirBlockInsertOwnedOperationBefore(
          body, op, create_op("gpu.memcpy", loc, 0, NULL, 2, ops, 0, NULL));
      mlirOperationDestroy(op);
    } else if (lf_op_is(op, "memref.get_global")) {
      MlirOperation global = lf_lookup_global(module, op);
      if (mlirOperationIsNull(global) ||
          mlirAttributeIsNull(
              mlirOperationGetAttributeByName(global, lf_str("constant")))) {
        error_at(loc, "the host reads a global that is not a constant; only "
                      "constants can be copied to the device");
        ++*errors;
        continue;
      }
      /* The kernels read a device copy made at each call. */
      MlirValue r = mlirOperationGetResult(op, 0);
      MlirOperation g =
          gpu_alloc(body, next, loc, mlirValueGetType(r), 0, NULL);
      MlirValue dev = mlirOperationGetResult(g, 0);
      mlirValueReplaceAllUsesOfWith(r, dev);
      MlirValue ops[2] = {dev, r};
      mlirBlockInsertOwnedOperationBefore(
          body, next, create_op("gpu.memcpy", loc, 0, NULL, 2, ops, 0, NULL));
      if ((s = values_push(&allocs, dev)))
        goto out;
    } else if (lf_op_is(op, "scf.if") && !guard_branches_ok(op)) {
      error_at(loc, "host control flow after the default GPU mapping that "
                    "does more than call (only the guard of verify=defer "
                    "may branch on the host)");
      ++*errors;
    } else if (!host_op_allowed(op)) {
      char *n = lf_op_name_dup(op);
      error_at(loc,
               "'%s' stays on the host after the default GPU mapping; the "
               "host part of a compiled model may only allocate, copy and "
               "launch, since all its tensors live in device memory",
               n ? n : "?");
      free(n);
      ++*errors;
    }
  }
  /* Free what this call allocated before it returns. */
  MlirOperation term = mlirBlockGetTerminator(body);
  for (size_t i = 0; i < allocs.n; ++i) {
    if (has_gpu_dealloc_user(allocs.v[i]))
      continue;
    mlirBlockInsertOwnedOperationBefore(
        body, term,
        create_op("gpu.dealloc", mlirOperationGetLocation(term), 0, NULL, 1,
                  &allocs.v[i], 0, NULL));
  }
out:
  free(allocs.v);
  return s;
}

static lf_status_t rewrite_host(MlirModule module) {
  size_t errors = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (lf_op_is(op, "func.func"))
      LF_RETURN_IF_ERROR(rewrite_host_func(module, op, &errors));
  if (errors)
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "%zu host op(s) cannot run with device-resident tensors "
                     "(see the diagnostics above)",
                     errors);
  if (!mlirOperationVerify(mlirModuleGetOperation(module)))
    return LF_STATUS(LF_STATUS_INTERNAL,
                     "the module does not verify after the host rewrite");
  return LF_OK;
}

/* ---- Step 4b: which calls are inlined. ----
 *
 * gpu-async-region gives each function one stream, synchronized and
 * destroyed when it returns, so a model calling its swapped subgraphs as
 * functions waited for the GPU after every subgraph (7 round trips per
 * MiniGPT block call). Calls to functions that only launch kernels are
 * inlined, so a model's kernels queue back to back on one stream. A call
 * stays a call (`no_inline`) when its callee calls anything itself (the
 * verify=defer guard wrapper: a host decision, then one of two calls) or
 * when the caller calls a declaration (host code inside a guard); both
 * keep the per-function stream their rewrite (step 4) assumed. */

/* One top-level function and what its body calls (scanned once). */
typedef struct func_calls_s {
  MlirOperation func;
  bool any_call;       /* func.call or llvm.call anywhere in the body */
  bool calls_external; /* ... of a function declared without a body */
} func_calls_t;

typedef struct inline_ctx_s {
  MlirSymbolTable symbols;
  func_calls_t *funcs;
  size_t n;
  func_calls_t *cur; /* the function being scanned or marked */
} inline_ctx_t;

static MlirOperation callee_of(const inline_ctx_t *c, MlirOperation call) {
  MlirAttribute a = mlirOperationGetAttributeByName(call, lf_str("callee"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAFlatSymbolRef(a))
    return (MlirOperation){NULL};
  return mlirSymbolTableLookup(c->symbols, mlirFlatSymbolRefAttrGetValue(a));
}

static bool is_declaration(MlirOperation f) {
  if (mlirOperationIsNull(f) || mlirOperationGetNumRegions(f) == 0)
    return true;
  return mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)));
}

static const func_calls_t *calls_of(const inline_ctx_t *c, MlirOperation f) {
  for (size_t i = 0; i < c->n; ++i)
    if (mlirOperationEqual(c->funcs[i].func, f))
      return &c->funcs[i];
  return NULL;
}

static MlirWalkResult scan_calls_cb(MlirOperation op, void *user_data) {
  inline_ctx_t *c = user_data;
  if (lf_op_is(op, "func.call") || lf_op_is(op, "llvm.call")) {
    c->cur->any_call = true;
    if (is_declaration(callee_of(c, op)))
      c->cur->calls_external = true;
  }
  return MlirWalkResultAdvance;
}

static MlirWalkResult mark_calls_cb(MlirOperation op, void *user_data) {
  inline_ctx_t *c = user_data;
  if (!lf_op_is(op, "func.call"))
    return MlirWalkResultAdvance;
  const func_calls_t *callee = calls_of(c, callee_of(c, op));
  if (c->cur->calls_external || !callee || callee->any_call)
    mlirOperationSetAttributeByName(
        op, lf_str("no_inline"),
        mlirUnitAttrGet(mlirOperationGetContext(op)));
  return MlirWalkResultAdvance;
}

static lf_status_t mark_no_inline(MlirModule module) {
  inline_ctx_t c = {mlirSymbolTableCreate(mlirModuleGetOperation(module)),
                    NULL, 0, NULL};
  size_t cap = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    if (!lf_op_is(f, "func.func") || is_declaration(f))
      continue;
    if (c.n == cap) {
      cap = cap ? 2 * cap : 16;
      func_calls_t *p = realloc(c.funcs, cap * sizeof(*p));
      if (!p) {
        free(c.funcs);
        mlirSymbolTableDestroy(c.symbols);
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      }
      c.funcs = p;
    }
    c.funcs[c.n] = (func_calls_t){f, false, false};
    c.cur = &c.funcs[c.n++];
    mlirOperationWalk(f, scan_calls_cb, &c, MlirWalkPreOrder);
  }
  for (size_t i = 0; i < c.n; ++i) {
    c.cur = &c.funcs[i];
    mlirOperationWalk(c.funcs[i].func, mark_calls_cb, &c, MlirWalkPreOrder);
  }
  free(c.funcs);
  mlirSymbolTableDestroy(c.symbols);
  return LF_OK;
}

/* ---- Step 5: kernels to NVVM and binaries, host to LLVM. ---- */

/* The CUDA toolkit's root (holding bin/ptxas), or NULL. Where it was found
 * through a default path, CUDA_HOME is set so that MLIR's NVVM target
 * finds the same one. */
static const char *cuda_toolkit(void) {
  static char found[4096];
  const char *envs[] = {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"};
  for (size_t i = 0; i < 3; ++i) {
    const char *d = getenv(envs[i]);
    if (!d || !*d)
      continue;
    snprintf(found, sizeof(found), "%s/bin/ptxas", d);
    if (access(found, X_OK) == 0) {
      snprintf(found, sizeof(found), "%s", d);
      return found;
    }
  }
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) {
    setenv("CUDA_HOME", "/usr/local/cuda", 0);
    return "/usr/local/cuda";
  }
  return NULL;
}

static lf_status_t lower_gpu(MlirModule module, const lf_aot_options_t *o,
                             lf_aot_result_t *out) {
  const char *fmt; /* gpu-module-to-binary's name */
  switch (o->format) {
  case LF_AOT_FORMAT_PTX:
    out->format = "ptx", fmt = "isa";
    break;
  case LF_AOT_FORMAT_CUBIN:
    out->format = "cubin", fmt = "bin";
    break;
  case LF_AOT_FORMAT_FATBIN:
    out->format = "fatbin", fmt = "fatbin";
    break;
  default:
    if (cuda_toolkit())
      out->format = "fatbin", fmt = "fatbin";
    else
      out->format = "ptx", fmt = "isa";
  }
  if (strcmp(out->format, "ptx") && !cuda_toolkit())
    return LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                     "--format=%s needs the CUDA toolkit's ptxas (set "
                     "CUDA_HOME); --format=ptx needs none",
                     out->format);
  LF_RETURN_IF_ERROR(mark_no_inline(module));
  char pipeline[1024];
  snprintf(pipeline, sizeof(pipeline),
           "builtin.module(inline,func.func(gpu-async-region),"
           "gpu-lower-to-nvvm-pipeline{cubin-chip=%s cubin-features=+ptx80 "
           "cubin-format=%s opt-level=3})",
           o->chip, fmt);
  return run_pipeline(module, pipeline, "the NVVM and host lowering");
}

/* ---- Step 6: LLVM IR and the object file. ---- */

static lf_status_t llvm_error(LLVMErrorRef e, const char *what) {
  char *msg = LLVMGetErrorMessage(e);
  lf_status_t s = LF_STATUS(LF_STATUS_INTERNAL, "%s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return s;
}

/* Only the entry points (and their C interfaces) stay visible: outlined
 * subgraphs, kernel binaries and helpers of two models must not clash when
 * both are linked into one program. */
static bool is_entry_symbol(const lf_aot_result_t *r, const char *name) {
  const char *ciface = "_mlir_ciface_";
  if (!strncmp(name, ciface, strlen(ciface)))
    name += strlen(ciface);
  for (size_t i = 0; i < r->num_entries; ++i)
    if (!strcmp(r->entries[i].name, name))
      return true;
  return false;
}

static void internalize(LLVMModuleRef m, const lf_aot_result_t *r) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage &&
        !is_entry_symbol(r, LLVMGetValueName2(f, &(size_t){0})))
      LLVMSetLinkage(f, LLVMInternalLinkage);
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage)
      LLVMSetLinkage(g, LLVMInternalLinkage);
}

static lf_status_t emit_object(MlirModule module, const lf_aot_options_t *o,
                               lf_aot_result_t *out) {
  if (o->emit == LF_AOT_EMIT_MLIR) {
    lf_strbuf_t b;
    lf_strbuf_init(&b, (size_t)1 << 31);
    mlirOperationPrint(mlirModuleGetOperation(module), lf_strbuf_print_cb, &b);
    out->output_size = lf_strbuf_len(&b);
    out->output = lf_strbuf_take(&b);
    return out->output
               ? LF_OK
               : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  LLVMContextRef lctx = LLVMContextCreate();
  LLVMTargetMachineRef tm = NULL;
  LLVMMemoryBufferRef buf = NULL;
  char *err = NULL;
  lf_status_t s = LF_OK;
  LLVMModuleRef m =
      mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(module), lctx);
  if (!m) {
    s = LF_STATUS(LF_STATUS_INTERNAL,
                  "translation to LLVM IR failed (see the diagnostics above)");
    goto out_context;
  }
  internalize(m, out);
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(HOST_TRIPLE, &target, &err)) {
    s = LF_STATUS(LF_STATUS_INTERNAL, "no x86-64 target in LLVM: %s", err);
    goto out_module;
  }
  tm = LLVMCreateTargetMachine(target, HOST_TRIPLE, "x86-64", "",
                               LLVMCodeGenLevelDefault, LLVMRelocPIC,
                               LLVMCodeModelDefault);
  LLVMSetTarget(m, HOST_TRIPLE);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, dl);
  LLVMDisposeTargetData(dl);
  if (o->emit == LF_AOT_EMIT_LLVM) {
    char *text = LLVMPrintModuleToString(m);
    out->output = strdup(text);
    out->output_size = strlen(text);
    LLVMDisposeMessage(text);
    if (!out->output)
      s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_tm;
  }
  LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m, "default<O2>", tm, pbo);
  LLVMDisposePassBuilderOptions(pbo);
  if (e) {
    s = llvm_error(e, "LLVM -O2");
    goto out_tm;
  }
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &err, &buf)) {
    s = LF_STATUS(LF_STATUS_INTERNAL, "x86-64 code generation failed: %s", err);
    goto out_tm;
  }
  out->output_size = LLVMGetBufferSize(buf);
  out->output = malloc(out->output_size ? out->output_size : 1);
  if (!out->output)
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  else
    memcpy(out->output, LLVMGetBufferStart(buf), out->output_size);
  LLVMDisposeMemoryBuffer(buf);
out_tm:
  LLVMDisposeTargetMachine(tm);
out_module:
  if (err)
    LLVMDisposeMessage(err);
  LLVMDisposeModule(m);
out_context:
  LLVMContextDispose(lctx);
  return s;
}

/* ---- The whole pipeline. ---- */

lf_status_t lf_aot_compile(MlirModule module, const lf_aot_options_t *o,
                           lf_aot_result_t *out) {
  memset(out, 0, sizeof(*out));
  out->chip = o->chip;
  /* gpu-module-to-binary translates kernels to LLVM IR too. */
  mlirRegisterAllLLVMTranslations(mlirModuleGetContext(module));
  lf_status_t s = LF_OK;
  if (o->run_llm_fuse && (s = run_llm_fuse(module, o->llm_fuse_options)))
    goto fail;
  bool tosa = false;
  mlirOperationWalk(mlirModuleGetOperation(module), find_tosa_cb, &tosa,
                    MlirWalkPreOrder);
  if (tosa && (s = run_pipeline(module, TOSA_PIPELINE, "the TOSA import")))
    goto fail;
  if ((s = collect_entries(module, out)))
    goto fail;
  if ((s = run_pipeline(module, "builtin.module(" LF_REFERENCE_BUFFERIZE ")",
                        "bufferization")))
    goto fail;
  if ((s = strided_copies_to_kernels(module)))
    goto fail;
  if ((s = run_pipeline(module, "builtin.module(" LF_REFERENCE_GPU_MAPPING ")",
                        "the default GPU mapping")))
    goto fail;
  if ((s = rewrite_host(module)))
    goto fail;
  if ((s = lower_gpu(module, o, out)))
    goto fail;
  if ((s = emit_object(module, o, out)))
    goto fail;
  return LF_OK;
fail:
  lf_aot_result_free(out);
  return s;
}

void lf_aot_result_free(lf_aot_result_t *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->num_entries; ++i)
    entry_free(&r->entries[i]);
  free(r->entries);
  free(r->output);
  memset(r, 0, sizeof(*r));
}

/* ---- The header. ---- */

static void shape_text(lf_strbuf_t *b, const lf_aot_tensor_t *t) {
  for (intptr_t d = 0; d < t->rank; ++d)
    lf_status_free(lf_strbuf_appendf(b, "%" PRId64 "x", t->shape[d]));
  lf_status_free(lf_strbuf_append_str(b, t->elem));
}

static size_t tensor_bytes(const lf_aot_tensor_t *t) {
  size_t n = t->elem_bytes;
  for (intptr_t d = 0; d < t->rank; ++d)
    n *= (size_t)t->shape[d];
  return n;
}

char *lf_aot_header(const lf_aot_result_t *r, const char *source,
                    const char *guard) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 24);
#define P(...) lf_status_free(lf_strbuf_appendf(&b, __VA_ARGS__))
  P("/* Generated by llm-fuse-compile from %s: do not edit.\n"
    " *\n"
    " * Entry points of the compiled model (kernels for %s, embedded as %s).\n"
    " * Link the object with libllm_fuse_rt (and libdl, libpthread).\n"
    " *\n"
    " * Argument convention: every tensor lives in DEVICE memory (cuMemAlloc,\n"
    " * cudaMalloc or lf_rt_malloc), dense and row-major. Inputs come first,\n"
    " * then one output buffer per result, allocated by the caller; the model\n"
    " * never frees them. <name>_run takes the device pointers, builds the\n"
    " * memref descriptors and returns 0 on success, else lf_rt_status() with\n"
    " * the message in lf_rt_last_error(). _mlir_ciface_<name> takes the\n"
    " * descriptors themselves (MLIR's C interface). A call returns when its\n"
    " * results are written (it synchronizes its stream). Calls may run from\n"
    " * one thread at a time.\n"
    " */\n",
    source, r->chip, r->format);
  P("#ifndef %s\n#define %s\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
    "#include <llm_fuse_rt.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
    guard, guard);
  /* Descriptor types, one per rank used. */
  bool rank_used[17] = {false};
  for (size_t i = 0; i < r->num_entries; ++i)
    for (size_t a = 0; a < r->entries[i].num_inputs + r->entries[i].num_outputs;
         ++a) {
      const lf_aot_entry_t *e = &r->entries[i];
      const lf_aot_tensor_t *t =
          a < e->num_inputs ? &e->inputs[a] : &e->outputs[a - e->num_inputs];
      if (t->rank <= 16)
        rank_used[t->rank] = true;
    }
  for (int k = 0; k <= 16; ++k) {
    if (!rank_used[k])
      continue;
    P("\n#ifndef LF_MEMREF_%dD_DEFINED\n#define LF_MEMREF_%dD_DEFINED\n"
      "/** A rank-%d memref descriptor (MLIR's StridedMemRefType). */\n"
      "typedef struct lf_memref_%dd {\n"
      "  void *allocated; /**< device pointer (the base of the buffer) */\n"
      "  void *aligned;   /**< device pointer the data starts at */\n"
      "  int64_t offset;  /**< in elements, from aligned */\n",
      k, k, k, k);
    if (k)
      P("  int64_t sizes[%d];\n  int64_t strides[%d]; /**< in elements */\n", k,
        k);
    P("} lf_memref_%dd_t;\n#endif\n", k);
  }
  for (size_t i = 0; i < r->num_entries; ++i) {
    const lf_aot_entry_t *e = &r->entries[i];
    size_t n = e->num_inputs + e->num_outputs;
    char upper[512];
    size_t u = 0;
    for (; e->name[u] && u + 1 < sizeof(upper); ++u)
      upper[u] = (char)toupper((unsigned char)e->name[u]);
    upper[u] = 0;
    P("\n/* ---- @%s: ", e->name);
    for (size_t a = 0; a < n; ++a) {
      const lf_aot_tensor_t *t =
          a < e->num_inputs ? &e->inputs[a] : &e->outputs[a - e->num_inputs];
      P("%s", a == 0 ? "(" : a == e->num_inputs ? ") -> (" : ", ");
      shape_text(&b, t);
    }
    P(") ---- */\n\n#define %s_NUM_INPUTS %zu\n#define %s_NUM_OUTPUTS %zu\n"
      "enum { %s_num_inputs = %zu, %s_num_outputs = %zu };\n\n"
      "/** Bytes of buffer `i`, inputs then outputs; 0 past the last. */\n"
      "static inline size_t %s_arg_bytes(size_t i) {\n"
      "  static const size_t bytes[%zu] = {",
      upper, e->num_inputs, upper, e->num_outputs, e->name, e->num_inputs,
      e->name, e->num_outputs, e->name, n);
    for (size_t a = 0; a < n; ++a)
      P("%s%zu", a ? ", " : "",
        tensor_bytes(a < e->num_inputs ? &e->inputs[a]
                                       : &e->outputs[a - e->num_inputs]));
    P("};\n  return i < %zu ? bytes[i] : 0;\n}\n\n"
      "/** MLIR's C interface: descriptors of device memory. */\n"
      "void _mlir_ciface_%s(",
      n, e->name);
    for (size_t a = 0; a < n; ++a) {
      const lf_aot_tensor_t *t =
          a < e->num_inputs ? &e->inputs[a] : &e->outputs[a - e->num_inputs];
      P("%slf_memref_%zdd_t *%s%zu", a ? ", " : "", (ssize_t)t->rank,
        a < e->num_inputs ? "in" : "out",
        a < e->num_inputs ? a : a - e->num_inputs);
    }
    P(");\n\n/** Runs @%s on device buffers; 0 on success. */\n"
      "static inline int %s_run(",
      e->name, e->name);
    for (size_t a = 0; a < n; ++a) {
      const lf_aot_tensor_t *t =
          a < e->num_inputs ? &e->inputs[a] : &e->outputs[a - e->num_inputs];
      bool in = a < e->num_inputs;
      P("%s\n    %svoid *%s%zu /* %s, ", a ? "," : "", in ? "const " : "",
        in ? "in" : "out", in ? a : a - e->num_inputs, t->ctype);
      shape_text(&b, t);
      P(" */");
    }
    P(") {\n");
    for (size_t a = 0; a < n; ++a) {
      const lf_aot_tensor_t *t =
          a < e->num_inputs ? &e->inputs[a] : &e->outputs[a - e->num_inputs];
      bool in = a < e->num_inputs;
      size_t idx = in ? a : a - e->num_inputs;
      P("  lf_memref_%zdd_t d%zu = {(void *)%s%zu, (void *)%s%zu, 0",
        (ssize_t)t->rank, a, in ? "in" : "out", idx, in ? "in" : "out", idx);
      if (t->rank) {
        P(", {");
        for (intptr_t d = 0; d < t->rank; ++d)
          P("%s%" PRId64, d ? ", " : "", t->shape[d]);
        P("}, {");
        int64_t stride = 1;
        int64_t strides[16];
        for (intptr_t d = t->rank - 1; d >= 0; --d) {
          strides[d] = stride;
          stride *= t->shape[d];
        }
        for (intptr_t d = 0; d < t->rank; ++d)
          P("%s%" PRId64, d ? ", " : "", strides[d]);
        P("}");
      }
      P("};\n");
    }
    P("  _mlir_ciface_%s(", e->name);
    for (size_t a = 0; a < n; ++a)
      P("%s&d%zu", a ? ", " : "", a);
    P(");\n  return lf_rt_status();\n}\n\n"
      "/** %s_run with the buffers in an array, inputs then outputs. */\n"
      "static inline int %s_run_packed(void *const *args) {\n"
      "  return %s_run(",
      e->name, e->name, e->name);
    for (size_t a = 0; a < n; ++a)
      P("%sargs[%zu]", a ? ", " : "", a);
    P(");\n}\n");
  }
  P("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s */\n", guard);
#undef P
  return lf_strbuf_take(&b);
}
