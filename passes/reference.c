/* reference.c - the reference lowering: an outlined subgraph through the
 * upstream default GPU path, turned into a plan of kernels, temporaries and
 * launches with the candidates' buffer ABI. See reference.h.
 */
#include "passes/reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"
#include "passes/contraction.h"
#include "passes/mlir_util.h"

/* Grows `*arr` (of `*cap` elements of `size` bytes) to hold one more. */
static lf_status_t grow(void **arr, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return LF_OK;
  size_t c = *cap ? 2 * *cap : 4;
  void *p = realloc(*arr, c * size);
  if (!p)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  *arr = p;
  *cap = c;
  return LF_OK;
}

/* ---- Host values: which buffer or constant each one is. ---- */

typedef struct host_s {
  MlirBlock body;       /* the lowered host function's body */
  size_t num_inputs;    /* its first arguments; the rest are outputs */
  MlirOperation *temps; /* memref.alloc ops, by temporary index */
  size_t num_temps, cap_temps;
} host_t;

static lf_status_t classify_value(const host_t *h, MlirValue v,
                                  lf_ref_arg_t *out) {
  memset(out, 0, sizeof(*out));
  out->type = lf_type_dup(mlirValueGetType(v));
  if (!out->type)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (mlirValueIsABlockArgument(v) &&
      mlirBlockEqual(mlirBlockArgumentGetOwner(v), h->body)) {
    size_t n = (size_t)mlirBlockArgumentGetArgNumber(v);
    out->kind = n < h->num_inputs ? LF_REF_ARG_INPUT : LF_REF_ARG_OUTPUT;
    out->index = n < h->num_inputs ? n : n - h->num_inputs;
    return LF_OK;
  }
  if (!mlirValueIsAOpResult(v))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "reference: a launch argument is a nested block argument");
  MlirOperation def = mlirOpResultGetOwner(v);
  /* Reshapes of contiguous buffers are the same buffer. */
  if (lf_op_is(def, "memref.expand_shape") ||
      lf_op_is(def, "memref.collapse_shape")) {
    char *type = out->type;
    lf_status_t s = classify_value(h, mlirOperationGetOperand(def, 0), out);
    free(out->type);
    out->type = type;
    return s;
  }
  for (size_t t = 0; t < h->num_temps; ++t)
    if (mlirOperationEqual(h->temps[t], def)) {
      out->kind = LF_REF_ARG_TEMP;
      out->index = t;
      return LF_OK;
    }
  if (lf_op_is(def, "arith.constant")) {
    MlirAttribute a = mlirOperationGetAttributeByName(def, lf_str("value"));
    if (mlirAttributeIsAInteger(a)) {
      out->kind = LF_REF_ARG_INT;
      out->i = mlirIntegerAttrGetValueInt(a);
      return LF_OK;
    }
    if (mlirAttributeIsAFloat(a)) {
      /* The plan carries the scalar's bits in its own width
       * (scalar_bits); other float types have no form there. */
      MlirType ft = mlirAttributeGetType(a);
      if (!mlirTypeIsAF64(ft) && !mlirTypeIsAF32(ft) && !mlirTypeIsAF16(ft) &&
          !mlirTypeIsABF16(ft))
        return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                         "reference: a launch argument is a %s constant; the "
                         "plan passes only f64, f32, f16 and bf16 scalars",
                         out->type);
      out->kind = LF_REF_ARG_FLOAT;
      out->f = mlirFloatAttrGetValueDouble(a);
      return LF_OK;
    }
  }
  char *n = lf_op_name_dup(def);
  lf_status_t s = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                            "reference: a launch argument comes from '%s', "
                            "which the plan cannot express",
                            n ? n : "?");
  free(n);
  return s;
}

static lf_status_t const_u32(const host_t *h, MlirValue v, uint32_t *out) {
  lf_ref_arg_t a;
  lf_status_t s = classify_value(h, v, &a);
  free(a.type);
  if (s)
    return s;
  if (a.kind != LF_REF_ARG_INT || a.i < 1 || a.i > 0x7fffffff)
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "reference: a launch size is not a positive constant");
  *out = (uint32_t)a.i;
  return LF_OK;
}

/* Bytes one element of a buffer takes in the kernels: LLVM's allocation
 * size of the element type. An integer narrower than a byte is not packed:
 * memref<...xi1> is a byte per element (st.global.b8), and an iN is
 * stored in the next power-of-two number of bytes. A temporary sized at
 * one bit per element (as it once was) is overrun by the kernel that
 * fills it: the P44 attention's causal mask (512x512xi1) wrote 256 KiB
 * into 32 KiB, over whatever the driver had put next (the verifier's
 * statistics, at batch 128). 0: not a type the plan handles. */
static size_t element_bytes(MlirType e) {
  if (mlirTypeIsAF64(e))
    return 8;
  if (mlirTypeIsAF32(e))
    return 4;
  if (mlirTypeIsAF16(e) || mlirTypeIsABF16(e))
    return 2;
  if (!mlirTypeIsAInteger(e) || mlirIntegerTypeGetWidth(e) > 128)
    return 0;
  size_t bytes = 1;
  while (8 * bytes < mlirIntegerTypeGetWidth(e))
    bytes *= 2;
  return bytes;
}

static size_t memref_bytes(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || !mlirShapedTypeHasStaticShape(t))
    return 0;
  size_t n = element_bytes(mlirShapedTypeGetElementType(t));
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i)
    n *= (size_t)mlirShapedTypeGetDimSize(t, i);
  return n;
}

/* ---- The plan. ---- */

typedef struct plan_s {
  lf_reference_t *ref;
  size_t cap_temps, cap_kernels, cap_steps;
} plan_t;

/* The gpu.module named `name` in `module`, or null. */
static MlirOperation find_gpu_module(MlirModule module, MlirStringRef name) {
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!lf_op_is(op, "gpu.module"))
      continue;
    MlirAttribute n = mlirOperationGetAttributeByName(
        op, mlirSymbolTableGetSymbolAttributeName());
    if (mlirAttributeIsAString(n) &&
        mlirStringRefEqual(mlirStringAttrGetValue(n), name))
      return op;
  }
  return (MlirOperation){NULL};
}

/* Renames the launched gpu.module and its kernel to k<index>, records the
 * launch sizes on the kernel, and keeps the module's text. */
static lf_status_t add_kernel(plan_t *p, MlirContext ctx, MlirOperation gmod,
                              const uint32_t grid[3], const uint32_t block[3],
                              size_t *out_index) {
  lf_reference_t *r = p->ref;
  LF_RETURN_IF_ERROR(grow((void **)&r->kernels, &p->cap_kernels,
                          r->num_kernels, sizeof(*r->kernels)));
  char name[32];
  snprintf(name, sizeof(name), "k%zu", r->num_kernels);
  MlirOperation kernel = {NULL};
  for (MlirOperation op =
           mlirBlockGetFirstOperation(mlirRegionGetFirstBlock(
               mlirOperationGetRegion(gmod, 0)));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (lf_op_is(op, "gpu.func"))
      kernel = op;
  if (mlirOperationIsNull(kernel))
    return LF_STATUS(LF_STATUS_INTERNAL, "reference: gpu.module without kernel");
  MlirAttribute sym = mlirStringAttrGet(ctx, lf_str(name));
  mlirOperationSetAttributeByName(gmod, mlirSymbolTableGetSymbolAttributeName(),
                                  sym);
  mlirOperationSetAttributeByName(kernel,
                                  mlirSymbolTableGetSymbolAttributeName(), sym);
  int32_t g[3] = {(int32_t)grid[0], (int32_t)grid[1], (int32_t)grid[2]};
  int32_t b[3] = {(int32_t)block[0], (int32_t)block[1], (int32_t)block[2]};
  mlirOperationSetAttributeByName(kernel, lf_str("known_grid_size"),
                                  mlirDenseI32ArrayGet(ctx, 3, g));
  mlirOperationSetAttributeByName(kernel, lf_str("known_block_size"),
                                  mlirDenseI32ArrayGet(ctx, 3, b));
  lf_strbuf_t text;
  lf_strbuf_init(&text, 1 << 24);
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, false, false);
  mlirOperationPrintWithFlags(gmod, flags, lf_strbuf_print_cb, &text);
  mlirOpPrintingFlagsDestroy(flags);
  lf_ref_kernel_t *k = &r->kernels[r->num_kernels];
  k->name = strdup(name);
  k->module = lf_strbuf_take(&text);
  if (!k->name || !k->module) {
    free(k->name);
    free(k->module);
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  *out_index = r->num_kernels++;
  return LF_OK;
}

static lf_status_t add_launch(plan_t *p, host_t *h, MlirModule module,
                              MlirOperation launch) {
  MlirContext ctx = mlirOperationGetContext(launch);
  MlirAttribute seg =
      mlirOperationGetAttributeByName(launch, lf_str("operandSegmentSizes"));
  if (mlirAttributeIsNull(seg) || !mlirAttributeIsADenseI32Array(seg) ||
      mlirDenseArrayGetNumElements(seg) < 10)
    return LF_STATUS(LF_STATUS_INTERNAL,
                     "reference: gpu.launch_func without operand segments");
  /* async deps, grid x/y/z, block x/y/z, cluster x/y/z, dynamic smem,
   * kernel operands, async object */
  int32_t n_async = mlirDenseI32ArrayGetElement(seg, 0);
  int32_t n_cluster = mlirDenseI32ArrayGetElement(seg, 7) +
                      mlirDenseI32ArrayGetElement(seg, 8) +
                      mlirDenseI32ArrayGetElement(seg, 9);
  int32_t n_smem = mlirDenseI32ArrayGetElement(seg, 10);
  int32_t n_args = mlirDenseI32ArrayGetElement(seg, 11);
  if (n_async || n_cluster || n_smem)
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "reference: async, cluster or dynamic-shared launches "
                     "are not in the plan format");
  uint32_t grid[3], block[3];
  for (int i = 0; i < 3; ++i) {
    LF_RETURN_IF_ERROR(
        const_u32(h, mlirOperationGetOperand(launch, i), &grid[i]));
    LF_RETURN_IF_ERROR(
        const_u32(h, mlirOperationGetOperand(launch, 3 + i), &block[i]));
  }
  MlirAttribute kref = mlirOperationGetAttributeByName(launch, lf_str("kernel"));
  if (!mlirAttributeIsASymbolRef(kref))
    return LF_STATUS(LF_STATUS_INTERNAL, "reference: launch without kernel");
  MlirOperation gmod =
      find_gpu_module(module, mlirSymbolRefAttrGetRootReference(kref));
  if (mlirOperationIsNull(gmod))
    return LF_STATUS(LF_STATUS_INTERNAL, "reference: launched module missing");

  lf_reference_t *r = p->ref;
  LF_RETURN_IF_ERROR(grow((void **)&r->steps, &p->cap_steps, r->num_steps,
                          sizeof(*r->steps)));
  lf_ref_step_t *st = &r->steps[r->num_steps];
  memset(st, 0, sizeof(*st));
  memcpy(st->grid, grid, sizeof(grid));
  memcpy(st->block, block, sizeof(block));
  st->args = calloc((size_t)n_args + 1, sizeof(*st->args));
  if (!st->args)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  ++r->num_steps; /* owned from here on, freed with the plan */
  for (int32_t i = 0; i < n_args; ++i) {
    LF_RETURN_IF_ERROR(classify_value(
        h, mlirOperationGetOperand(launch, 6 + i), &st->args[i]));
    ++st->num_args;
  }
  return add_kernel(p, ctx, gmod, grid, block, &st->kernel);
}

static lf_status_t add_copy(plan_t *p, host_t *h, MlirOperation copy) {
  lf_reference_t *r = p->ref;
  LF_RETURN_IF_ERROR(grow((void **)&r->steps, &p->cap_steps, r->num_steps,
                          sizeof(*r->steps)));
  lf_ref_step_t *st = &r->steps[r->num_steps];
  memset(st, 0, sizeof(*st));
  st->is_copy = true;
  st->args = calloc(2, sizeof(*st->args));
  if (!st->args)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  ++r->num_steps;
  for (int i = 0; i < 2; ++i) {
    LF_RETURN_IF_ERROR(
        classify_value(h, mlirOperationGetOperand(copy, i), &st->args[i]));
    ++st->num_args;
    if (st->args[i].kind > LF_REF_ARG_TEMP)
      return LF_STATUS(LF_STATUS_UNIMPLEMENTED, "reference: copy of a scalar");
  }
  return LF_OK;
}

static lf_status_t add_temp(plan_t *p, host_t *h, MlirOperation alloc);

/* A constant global becomes a temporary the launcher fills before the
 * first step. */
static lf_status_t add_constant(plan_t *p, host_t *h, MlirModule module,
                                MlirOperation get_global) {
  MlirOperation global = lf_lookup_global(module, get_global);
  MlirAttribute init =
      mlirOperationIsNull(global)
          ? (MlirAttribute){NULL}
          : mlirOperationGetAttributeByName(global, lf_str("initial_value"));
  if (mlirAttributeIsNull(init) || !mlirAttributeIsADenseElements(init) ||
      mlirAttributeIsNull(
          mlirOperationGetAttributeByName(global, lf_str("constant"))))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "reference: a global that is not a dense constant");
  LF_RETURN_IF_ERROR(add_temp(p, h, get_global));
  lf_ref_temp_t *t = &p->ref->temps[p->ref->num_temps - 1];
  MlirType et = mlirShapedTypeGetElementType(mlirAttributeGetType(init));
  size_t elem = mlirTypeIsAF64(et) ? 8
                : mlirTypeIsAF32(et) ? 4
                : (mlirTypeIsAF16(et) || mlirTypeIsABF16(et)) ? 2
                : mlirTypeIsAInteger(et) ? (mlirIntegerTypeGetWidth(et) + 7) / 8
                                         : 0;
  size_t n = mlirDenseElementsAttrIsSplat(init) ? elem : t->bytes;
  if (!elem || (elem == 1 && mlirTypeIsAInteger(et) &&
                mlirIntegerTypeGetWidth(et) == 1))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "reference: a constant of an unsupported element type");
  t->init = malloc(n);
  if (!t->init)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(t->init, mlirDenseElementsAttrGetRawData(init), n);
  t->init_size = n;
  return LF_OK;
}

static lf_status_t add_temp(plan_t *p, host_t *h, MlirOperation alloc) {
  lf_reference_t *r = p->ref;
  MlirType t = mlirValueGetType(mlirOperationGetResult(alloc, 0));
  size_t bytes = memref_bytes(t);
  if (!bytes || mlirOperationGetNumOperands(alloc) != 0)
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "reference: a temporary without a static size");
  LF_RETURN_IF_ERROR(grow((void **)&r->temps, &p->cap_temps, r->num_temps,
                          sizeof(*r->temps)));
  LF_RETURN_IF_ERROR(grow((void **)&h->temps, &h->cap_temps, h->num_temps,
                          sizeof(*h->temps)));
  char *ty = lf_type_dup(t);
  if (!ty)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  r->temps[r->num_temps++] = (lf_ref_temp_t){ty, bytes, NULL, 0};
  h->temps[h->num_temps++] = alloc;
  return LF_OK;
}

/* Walks the lowered host function into the plan. */
static lf_status_t extract_plan(plan_t *p, MlirModule module,
                                MlirOperation host_func, size_t num_inputs) {
  host_t h = {mlirRegionGetFirstBlock(mlirOperationGetRegion(host_func, 0)),
              num_inputs, NULL, 0, 0};
  lf_status_t s = LF_OK;
  for (MlirOperation op = mlirBlockGetFirstOperation(h.body);
       !s && !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (lf_op_is(op, "arith.constant") || lf_op_is(op, "memref.dealloc") ||
        lf_op_is(op, "func.return") || lf_op_is(op, "memref.expand_shape") ||
        lf_op_is(op, "memref.collapse_shape"))
      continue; /* constants and reshapes are resolved where used */
    if (lf_op_is(op, "memref.get_global"))
      s = add_constant(p, &h, module, op);
    else if (lf_op_is(op, "memref.alloc"))
      s = add_temp(p, &h, op);
    else if (lf_op_is(op, "gpu.launch_func"))
      s = add_launch(p, &h, module, op);
    else if (lf_op_is(op, "memref.copy"))
      s = add_copy(p, &h, op);
    else {
      char *n = lf_op_name_dup(op);
      s = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                    "reference: the upstream GPU path left '%s' on the host",
                    n ? n : "?");
      free(n);
    }
  }
  free(h.temps);
  return s;
}

static void pipeline_error_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

/* Lowers a public copy of `func`, in a module of its own, by `pipeline`
 * into `*out`. */
static lf_status_t lower_with(MlirOperation func, const char *pipeline,
                              lf_reference_t *out) {
  memset(out, 0, sizeof(*out));
  MlirContext ctx = mlirOperationGetContext(func);
  MlirAttribute fname = mlirOperationGetAttributeByName(
      func, mlirSymbolTableGetSymbolAttributeName());
  MlirAttribute ftype =
      mlirOperationGetAttributeByName(func, lf_str("function_type"));
  if (!mlirAttributeIsAString(fname) || !mlirAttributeIsAType(ftype))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "reference: not a func.func with a name and a type");
  MlirType fty = mlirTypeAttrGetValue(ftype);
  size_t num_inputs = (size_t)mlirFunctionTypeGetNumInputs(fty);
  out->subgraph = strndup(mlirStringAttrGetValue(fname).data,
                          mlirStringAttrGetValue(fname).length);
  out->signature = lf_type_dup(fty);
  if (!out->subgraph || !out->signature) {
    lf_reference_free(out);
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }

  /* A module of its own holding a public copy of the function. */
  MlirModule module = mlirModuleCreateEmpty(mlirOperationGetLocation(func));
  MlirOperation copy = mlirOperationClone(func);
  mlirOperationRemoveAttributeByName(copy, lf_str("sym_visibility"));
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(module), copy);

  lf_status_t s = LF_OK;
  lf_strbuf_t err;
  lf_strbuf_init(&err, 4096);
  MlirPassManager pm =
      mlirPassManagerCreateOnOperation(ctx, lf_str("builtin.module"));
  if (mlirLogicalResultIsFailure(
          mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                lf_str(pipeline), pipeline_error_cb, &err))) {
    s = LF_STATUS(LF_STATUS_INTERNAL, "reference pipeline does not parse: %s",
                  lf_strbuf_cstr(&err));
    goto out;
  }
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module)))) {
    s = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                  "reference: the upstream GPU path failed on %s (see the "
                  "diagnostics above)",
                  out->subgraph);
    goto out;
  }
  plan_t p = {out, 0, 0, 0};
  s = extract_plan(&p, module, copy, num_inputs);

out:
  mlirPassManagerDestroy(pm);
  lf_strbuf_free(&err);
  mlirModuleDestroy(module);
  if (s)
    lf_reference_free(out);
  return s;
}

/* ---- Reductions over a leading dimension. ---- */

/* Whether iterator type attribute `a` prints as a reduction. */
static bool iter_is_reduction(MlirAttribute a) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 256);
  mlirAttributePrint(a, lf_strbuf_print_cb, &b);
  bool r = strstr(lf_strbuf_cstr(&b), "reduction") != NULL;
  lf_strbuf_free(&b);
  return r;
}

static MlirWalkResult no_index_cb(MlirOperation op, void *user_data) {
  if (lf_op_is(op, "linalg.index")) {
    *(bool *)user_data = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* A linalg.generic whose iteration space has a reduction loop outside a
 * parallel one (a sum over the leading dimension: iterator types
 * [reduction, parallel]) lowers to an scf.for on the host around the
 * mapped loops, which a plan cannot hold. Its iteration space is permuted
 * in place, the parallel loops first and the reductions last, each in
 * their order: the indexing maps are composed with the permutation and
 * the body is kept (it names operands, not loops; a body with linalg.index
 * is left alone). The math is the same, the reduction now runs inside
 * each thread. Counts the generics permuted in *(size_t *)user_data. */
static MlirWalkResult reductions_innermost_cb(MlirOperation op,
                                              void *user_data) {
  if (!lf_op_is(op, "linalg.generic"))
    return MlirWalkResultAdvance;
  MlirAttribute its =
      mlirOperationGetAttributeByName(op, lf_str("iterator_types"));
  MlirAttribute maps =
      mlirOperationGetAttributeByName(op, lf_str("indexing_maps"));
  if (!mlirAttributeIsAArray(its) || !mlirAttributeIsAArray(maps))
    return MlirWalkResultAdvance;
  intptr_t n = mlirArrayAttrGetNumElements(its);
  if (n < 2 || n > 16)
    return MlirWalkResultAdvance;
  intptr_t order[16], k = 0;
  bool red[16], seen_red = false, needed = false;
  for (intptr_t i = 0; i < n; ++i) {
    red[i] = iter_is_reduction(mlirArrayAttrGetElement(its, i));
    seen_red |= red[i];
    needed |= seen_red && !red[i];
  }
  bool has_index = false;
  mlirOperationWalk(op, no_index_cb, &has_index, MlirWalkPreOrder);
  if (!needed || has_index)
    return MlirWalkResultAdvance;
  for (intptr_t i = 0; i < n; ++i)
    if (!red[i])
      order[k++] = i;
  for (intptr_t i = 0; i < n; ++i)
    if (red[i])
      order[k++] = i;
  MlirContext ctx = mlirOperationGetContext(op);
  MlirAffineExpr to_new[16]; /* old loop i -> its new position's dim */
  MlirAttribute new_its[16];
  for (intptr_t j = 0; j < n; ++j) {
    to_new[order[j]] = mlirAffineDimExprGet(ctx, j);
    new_its[j] = mlirArrayAttrGetElement(its, order[j]);
  }
  MlirAffineMap perm = mlirAffineMapGet(ctx, n, 0, n, to_new);
  intptr_t nm = mlirArrayAttrGetNumElements(maps);
  MlirAttribute *new_maps = calloc((size_t)nm, sizeof(*new_maps));
  if (!new_maps)
    return MlirWalkResultInterrupt;
  for (intptr_t m = 0; m < nm; ++m) {
    MlirAffineMap a =
        mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, m));
    intptr_t nr = mlirAffineMapGetNumResults(a);
    MlirAffineExpr res[16];
    if (nr > 16 || mlirAffineMapGetNumDims(a) != n ||
        mlirAffineMapGetNumSymbols(a) != 0) {
      free(new_maps);
      return MlirWalkResultAdvance;
    }
    for (intptr_t r = 0; r < nr; ++r)
      res[r] = mlirAffineExprCompose(mlirAffineMapGetResult(a, r), perm);
    new_maps[m] = mlirAffineMapAttrGet(mlirAffineMapGet(ctx, n, 0, nr, res));
  }
  mlirOperationSetAttributeByName(op, lf_str("indexing_maps"),
                                  mlirArrayAttrGet(ctx, nm, new_maps));
  mlirOperationSetAttributeByName(op, lf_str("iterator_types"),
                                  mlirArrayAttrGet(ctx, n, new_its));
  free(new_maps);
  ++*(size_t *)user_data;
  return MlirWalkResultAdvance;
}

/* Lowers by `pipeline`; when that leaves a memref.subview on the host,
 * once more by `views` (the same with fold-memref-alias-ops), so that only
 * the subgraphs that need it get the other plan. */
static lf_status_t lower_or_fold_views(MlirOperation func,
                                       const char *pipeline,
                                       const char *views,
                                       lf_reference_t *out) {
  lf_status_t s = lower_with(func, pipeline, out);
  if (s && lf_status_code(s) == LF_STATUS_UNIMPLEMENTED &&
      strstr(lf_status_message(s), "'scf.for' on the host")) {
    /* A reduction over a leading dimension: once more with the reduction
     * loops innermost (reductions_innermost_cb). */
    MlirOperation copy = mlirOperationClone(func);
    size_t permuted = 0;
    mlirOperationWalk(copy, reductions_innermost_cb, &permuted,
                      MlirWalkPreOrder);
    if (permuted) {
      lf_status_free(s);
      s = lower_or_fold_views(copy, pipeline, views, out);
      if (!s)
        out->reductions_innermost = true;
    }
    mlirOperationDestroy(copy);
    return s;
  }
  if (!s || lf_status_code(s) != LF_STATUS_UNIMPLEMENTED ||
      !strstr(lf_status_message(s), "'memref.subview' on the host"))
    return s;
  lf_status_free(s);
  s = lower_with(func, views, out);
  if (!s)
    out->folded_views = true;
  return s;
}

/* ---- 16-bit accumulation: detection and the opmath promotion. ---- */

static bool is_half(MlirType t) {
  return mlirTypeIsABF16(t) || mlirTypeIsAF16(t);
}

static MlirType element_of(MlirType t) {
  return mlirTypeIsAShaped(t) ? mlirShapedTypeGetElementType(t) : t;
}

/* Whether the printed form of a type or attribute names bf16 or f16. */
static bool text_mentions_half(char *text) {
  bool found = text && strstr(text, "f16") != NULL;
  free(text);
  return found;
}

static bool type_mentions_half(MlirType t) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 20);
  mlirTypePrint(t, lf_strbuf_print_cb, &b);
  return text_mentions_half(lf_strbuf_take(&b));
}

static bool attr_mentions_half(MlirAttribute a) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 24);
  mlirAttributePrint(a, lf_strbuf_print_cb, &b);
  return text_mentions_half(lf_strbuf_take(&b));
}

/* The ops nested in `root` (itself excluded), in pre-order. */
typedef struct op_list_s {
  MlirOperation root;
  MlirOperation *ops;
  size_t n, cap;
  bool oom;
} op_list_t;

static MlirWalkResult collect_cb(MlirOperation op, void *user_data) {
  op_list_t *l = user_data;
  if (mlirOperationEqual(op, l->root))
    return MlirWalkResultAdvance;
  lf_status_t s = grow((void **)&l->ops, &l->cap, l->n, sizeof(*l->ops));
  if (s) {
    lf_status_free(s);
    l->oom = true;
    return MlirWalkResultInterrupt;
  }
  l->ops[l->n++] = op;
  return MlirWalkResultAdvance;
}

static lf_status_t collect_ops(MlirOperation root, op_list_t *out) {
  *out = (op_list_t){root, NULL, 0, 0, false};
  mlirOperationWalk(root, collect_cb, out, MlirWalkPreOrder);
  if (out->oom) {
    free(out->ops);
    out->ops = NULL;
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return LF_OK;
}

static bool name_starts(MlirOperation op, const char *prefix) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t k = strlen(prefix);
  return n.length >= k && memcmp(n.data, prefix, k) == 0;
}

static bool name_contains(MlirOperation op, const char *part) {
  char *n = lf_op_name_dup(op);
  bool found = n && strstr(n, part);
  free(n);
  return found;
}

/* Named ops whose every result element is a sum of products (or a sum):
 * their result type is the accumulator's. */
static bool is_named_contraction(MlirOperation op) {
  static const char *const prefixes[] = {"linalg.matmul",
                                         "linalg.batch_matmul",
                                         "linalg.batch_reduce_matmul",
                                         "linalg.matvec",
                                         "linalg.vecmat",
                                         "linalg.batch_matvec",
                                         "linalg.batch_vecmat",
                                         "linalg.dot",
                                         "linalg.contract",
                                         "linalg.mmt4d",
                                         "linalg.batch_mmt4d",
                                         "linalg.conv_",
                                         "linalg.depthwise_conv_",
                                         "tosa.matmul",
                                         "tosa.conv2d",
                                         "tosa.conv3d",
                                         "tosa.depthwise_conv2d",
                                         "tosa.transpose_conv2d",
                                         "tosa.fully_connected",
                                         "tosa.reduce_sum",
                                         "tosa.reduce_product",
                                         "tosa.avg_pool2d"};
  for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); ++i)
    if (name_starts(op, prefixes[i]))
      return true;
  return name_starts(op, "linalg.pooling_") && name_contains(op, "_sum");
}

/* The first 16-bit float result element type of `op`, or a null type. */
static MlirType half_result(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirType e = element_of(mlirValueGetType(mlirOperationGetResult(op, i)));
    if (is_half(e))
      return e;
  }
  return (MlirType){NULL};
}

/* Whether a region of `op` adds, subtracts or multiplies in 16 bits (a
 * max or min reduction is exact in any type and needs no truth). */
static bool body_accumulates_half(MlirOperation op) {
  op_list_t l;
  lf_status_t s = collect_ops(op, &l);
  if (s) {
    lf_status_free(s);
    return true; /* out of memory: the promotion will say so */
  }
  bool found = false;
  for (size_t i = 0; i < l.n && !found; ++i) {
    MlirOperation o = l.ops[i];
    if ((lf_op_is(o, "arith.addf") || lf_op_is(o, "arith.subf") ||
         lf_op_is(o, "arith.mulf") || lf_op_is(o, "math.fma")) &&
        mlirOperationGetNumResults(o) == 1)
      found =
          is_half(element_of(mlirValueGetType(mlirOperationGetResult(o, 0))));
  }
  free(l.ops);
  return found;
}

bool lf_reference_accum16(MlirOperation func, char *why, size_t why_size) {
  if (why_size)
    why[0] = '\0';
  op_list_t l;
  lf_status_t s = collect_ops(func, &l);
  if (s) {
    lf_status_free(s);
    return false;
  }
  bool found = false;
  for (size_t i = 0; i < l.n && !found; ++i) {
    MlirOperation op = l.ops[i];
    MlirType acc = half_result(op);
    if (mlirTypeIsNull(acc))
      continue;
    if (lf_op_is(op, "linalg.generic")) {
      MlirAttribute it =
          mlirOperationGetAttributeByName(op, lf_str("iterator_types"));
      lf_strbuf_t b;
      lf_strbuf_init(&b, 1 << 20);
      if (!mlirAttributeIsNull(it))
        mlirAttributePrint(it, lf_strbuf_print_cb, &b);
      char *text = lf_strbuf_take(&b);
      bool reduction = text && strstr(text, "reduction");
      free(text);
      found = reduction && body_accumulates_half(op);
    } else if (lf_op_is(op, "linalg.reduce")) {
      found = body_accumulates_half(op);
    } else if (is_named_contraction(op)) {
      /* TOSA says where it accumulates when it is not the result type. */
      MlirAttribute at =
          mlirOperationGetAttributeByName(op, lf_str("acc_type"));
      if (!mlirAttributeIsNull(at) && mlirAttributeIsAType(at)) {
        MlirType t = mlirTypeAttrGetValue(at);
        found = is_half(t);
        acc = t;
      } else {
        found = true;
      }
    }
    if (found && why_size) {
      char *n = lf_op_name_dup(op);
      snprintf(why, why_size, "accumulates in %s (%s)",
               mlirTypeIsABF16(acc) ? "bf16" : "f16", n ? n : "?");
      free(n);
    }
  }
  free(l.ops);
  return found;
}

/* The f32 version of `t` when it holds a bf16/f16 element, else `t`.
 * Sets *bad for a type that holds one in a form not handled here. */
static MlirType widen_type(MlirContext ctx, MlirType t, bool *bad) {
  MlirType f32 = mlirF32TypeGet(ctx);
  if (is_half(t))
    return f32;
  if (mlirTypeIsAShaped(t) && is_half(mlirShapedTypeGetElementType(t))) {
    if (mlirTypeIsAUnrankedTensor(t))
      return mlirUnrankedTensorTypeGet(f32);
    intptr_t rank = mlirShapedTypeGetRank(t);
    int64_t dims[64];
    if (rank > 64) {
      *bad = true;
      return t;
    }
    for (intptr_t i = 0; i < rank; ++i)
      dims[i] = mlirShapedTypeGetDimSize(t, i);
    if (mlirTypeIsARankedTensor(t))
      return mlirRankedTensorTypeGet(rank, dims, f32,
                                     mlirRankedTensorTypeGetEncoding(t));
    if (mlirTypeIsAMemRef(t))
      return mlirMemRefTypeGet(f32, rank, dims, mlirMemRefTypeGetLayout(t),
                               mlirMemRefTypeGetMemorySpace(t));
    if (mlirTypeIsAVector(t) && !mlirVectorTypeIsScalable(t))
      return mlirVectorTypeGet(rank, dims, f32);
    *bad = true;
    return t;
  }
  if (type_mentions_half(t))
    *bad = true;
  return t;
}

static float half_bits_to_float(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  unsigned e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m + 1024), (int)e - 25);
  return h & 0x8000 ? -v : v;
}

/* The f32 version of an attribute that holds a bf16/f16 value or type,
 * else `a`. Sets *bad for one that mentions them in a form not handled. */
static MlirAttribute widen_attr(MlirContext ctx, MlirAttribute a, bool *bad) {
  if (mlirAttributeIsAFloat(a)) {
    if (!is_half(mlirAttributeGetType(a)))
      return a;
    return mlirFloatAttrDoubleGet(ctx, mlirF32TypeGet(ctx),
                                  mlirFloatAttrGetValueDouble(a));
  }
  if (mlirAttributeIsAType(a)) {
    MlirType t = mlirTypeAttrGetValue(a), w = widen_type(ctx, t, bad);
    return mlirTypeEqual(t, w) ? a : mlirTypeAttrGet(w);
  }
  if (mlirAttributeIsADenseFPElements(a)) {
    MlirType t = mlirAttributeGetType(a);
    MlirType e = element_of(t);
    if (!is_half(e))
      return a;
    MlirType w = widen_type(ctx, t, bad);
    if (*bad)
      return a;
    if (mlirDenseElementsAttrIsSplat(a))
      return mlirDenseElementsAttrFloatSplatGet(
          w, (float)mlirFloatAttrGetValueDouble(
                 mlirDenseElementsAttrGetSplatValue(a)));
    int64_t n = mlirElementsAttrGetNumElements(a);
    const uint16_t *raw = mlirDenseElementsAttrGetRawData(a);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!v || !raw) {
      free(v);
      *bad = true;
      return a;
    }
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      memcpy(&h, raw + i, 2);
      v[i] = half_bits_to_float(h, mlirTypeIsABF16(e));
    }
    MlirAttribute r = mlirDenseElementsAttrFloatGet(w, (intptr_t)n, v);
    free(v);
    return r;
  }
  if (attr_mentions_half(a))
    *bad = true;
  return a;
}

/* Retypes `op`'s results, its regions' block arguments and attributes. */
static void widen_op(MlirContext ctx, MlirOperation op, bool *bad) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirValue v = mlirOperationGetResult(op, i);
    MlirType t = mlirValueGetType(v), w = widen_type(ctx, t, bad);
    if (!mlirTypeEqual(t, w))
      mlirValueSetType(v, w);
  }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); ++i) {
        MlirValue v = mlirBlockGetArgument(b, i);
        MlirType t = mlirValueGetType(v), w = widen_type(ctx, t, bad);
        if (!mlirTypeEqual(t, w))
          mlirValueSetType(v, w);
      }
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(op); ++i) {
    MlirNamedAttribute na = mlirOperationGetAttribute(op, i);
    MlirAttribute w = widen_attr(ctx, na.attribute, bad);
    if (!mlirAttributeEqual(w, na.attribute)) {
      MlirStringRef n = mlirIdentifierStr(na.name);
      char name[256];
      snprintf(name, sizeof(name), "%.*s", (int)n.length, n.data);
      mlirOperationSetAttributeByName(op, lf_str(name), w);
    }
  }
}

/* A one-operand, one-result op `name` (arith.extf or arith.truncf). */
static MlirOperation make_cast(const char *name, MlirValue v, MlirType to,
                               MlirLocation loc) {
  MlirOperationState st = mlirOperationStateGet(lf_str(name), loc);
  mlirOperationStateAddOperands(&st, 1, &v);
  mlirOperationStateAddResults(&st, 1, &to);
  return mlirOperationCreate(&st);
}

lf_status_t lf_reference_promote(MlirOperation func, MlirOperation *out) {
  return lf_reference_promote_ex(func, true, out);
}

bool lf_reference_wants_wide(MlirOperation func) {
  MlirAttribute ftype =
      mlirOperationGetAttributeByName(func, lf_str("function_type"));
  if (mlirAttributeIsNull(ftype) || !mlirAttributeIsAType(ftype))
    return false;
  MlirType fty = mlirTypeAttrGetValue(ftype);
  if (!mlirTypeIsAFunction(fty))
    return false;
  for (intptr_t k = 0; k < mlirFunctionTypeGetNumResults(fty); ++k)
    if (mlirTypeIsAF16(element_of(mlirFunctionTypeGetResult(fty, k))))
      return true;
  return false;
}

lf_status_t lf_reference_promote_ex(MlirOperation func, bool round_results,
                                    MlirOperation *out) {
  *out = (MlirOperation){NULL};
  MlirContext ctx = mlirOperationGetContext(func);
  MlirAttribute ftype =
      mlirOperationGetAttributeByName(func, lf_str("function_type"));
  if (!lf_op_is(func, "func.func") || mlirAttributeIsNull(ftype) ||
      !mlirAttributeIsAType(ftype) || mlirOperationGetNumRegions(func) != 1)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "opmath: not a func.func with a type and a body");
  MlirType fty = mlirTypeAttrGetValue(ftype);
  MlirRegion region = mlirOperationGetRegion(func, 0);
  MlirBlock entry = mlirRegionGetFirstBlock(region);
  if (mlirBlockIsNull(entry) ||
      !mlirBlockIsNull(mlirBlockGetNextInRegion(entry)))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "opmath: the function has several blocks (or none)");
  MlirOperation ret = mlirBlockGetTerminator(entry);
  if (mlirOperationIsNull(ret) || !lf_op_is(ret, "func.return") ||
      mlirOperationGetNumOperands(ret) != mlirFunctionTypeGetNumResults(fty))
    return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                     "opmath: the function does not end in func.return");

  MlirOperation copy = mlirOperationClone(func);
  region = mlirOperationGetRegion(copy, 0);
  entry = mlirRegionGetFirstBlock(region);
  ret = mlirBlockGetTerminator(entry);
  MlirLocation loc = mlirOperationGetLocation(copy);
  lf_status_t s = LF_OK;
  op_list_t l;
  if ((s = collect_ops(copy, &l)))
    goto fail;

  /* The body: every 16-bit float type, constant and attribute to f32. */
  bool bad = false;
  for (size_t i = 0; i < l.n && !bad; ++i)
    widen_op(ctx, l.ops[i], &bad);
  if (bad) {
    free(l.ops);
    s = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                  "opmath: a type or attribute of the body holds bf16/f16 "
                  "in a form the promotion does not handle");
    goto fail;
  }
  /* Conversions that became f32 to f32 are identities. */
  for (size_t i = 0; i < l.n; ++i) {
    MlirOperation op = l.ops[i];
    if (!(lf_op_is(op, "arith.extf") || lf_op_is(op, "arith.truncf") ||
          lf_op_is(op, "tosa.cast")) ||
        mlirOperationGetNumOperands(op) != 1 ||
        mlirOperationGetNumResults(op) != 1)
      continue;
    MlirValue from = mlirOperationGetOperand(op, 0);
    MlirValue to = mlirOperationGetResult(op, 0);
    if (!mlirTypeEqual(mlirValueGetType(from), mlirValueGetType(to)))
      continue;
    mlirValueReplaceAllUsesOfWith(to, from);
    mlirOperationDestroy(op);
  }
  free(l.ops);

  /* Entry: each 16-bit argument widened by an arith.extf before the first
   * op; the new argument takes the old one's place. */
  MlirOperation first = mlirBlockGetFirstOperation(entry);
  for (intptr_t i = 0; i < mlirBlockGetNumArguments(entry); ++i) {
    MlirValue old = mlirBlockGetArgument(entry, i);
    MlirType t = mlirValueGetType(old), w = widen_type(ctx, t, &bad);
    if (bad) {
      s = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                    "opmath: argument %zu's type holds bf16/f16 in a form the "
                    "promotion does not handle",
                    (size_t)i);
      goto fail;
    }
    if (mlirTypeEqual(t, w))
      continue;
    MlirValue arg = mlirBlockInsertArgument(entry, (unsigned)i, t, loc);
    MlirOperation ext = make_cast("arith.extf", arg, w, loc);
    mlirBlockInsertOwnedOperationBefore(entry, first, ext);
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(entry, i + 1),
                                  mlirOperationGetResult(ext, 0));
    mlirBlockEraseArgument(entry, (unsigned)(i + 1));
  }
  /* Exit: each result rounded back to its declared type; in the wide
   * form returned as it is (f32), and the function's type says so. */
  intptr_t nres = mlirOperationGetNumOperands(ret);
  MlirType res_types[64];
  if (!round_results && nres > 64) {
    s = LF_STATUS(LF_STATUS_UNIMPLEMENTED, "opmath: more than 64 results");
    goto fail;
  }
  for (intptr_t k = 0; k < nres; ++k) {
    MlirValue v = mlirOperationGetOperand(ret, k);
    MlirType want = mlirFunctionTypeGetResult(fty, k);
    if (!round_results) {
      res_types[k] = mlirValueGetType(v);
      continue;
    }
    if (mlirTypeEqual(mlirValueGetType(v), want))
      continue;
    MlirOperation tr = make_cast("arith.truncf", v, want, loc);
    mlirBlockInsertOwnedOperationBefore(entry, ret, tr);
    mlirOperationSetOperand(ret, k, mlirOperationGetResult(tr, 0));
  }
  if (!round_results) {
    intptr_t nin = mlirFunctionTypeGetNumInputs(fty);
    MlirType in_types[64];
    if (nin > 64) {
      s = LF_STATUS(LF_STATUS_UNIMPLEMENTED, "opmath: more than 64 inputs");
      goto fail;
    }
    for (intptr_t i = 0; i < nin; ++i)
      in_types[i] = mlirFunctionTypeGetInput(fty, i);
    mlirOperationSetAttributeByName(copy, lf_str("function_type"),
                                    mlirTypeAttrGet(mlirFunctionTypeGet(
                                        ctx, nin, in_types, nres, res_types)));
  }

  /* Verified inside a module, as the pipeline will see it. */
  MlirModule m = mlirModuleCreateEmpty(loc);
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(m), copy);
  bool ok = mlirOperationVerify(mlirModuleGetOperation(m));
  mlirOperationRemoveFromParent(copy);
  mlirModuleDestroy(m);
  if (!ok) {
    s = LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                  "opmath: the promoted function does not verify");
    goto fail;
  }
  *out = copy;
  return LF_OK;

fail:
  mlirOperationDestroy(copy);
  return s;
}

/* Diagnostics of the truth's promotion and lowering: kept for its note,
 * never shown (a failed truth is not the user's problem). */
static MlirLogicalResult capture_diag(MlirDiagnostic d, void *user_data) {
  lf_strbuf_t *b = user_data;
  if (lf_strbuf_len(b) < 600) {
    if (lf_strbuf_len(b))
      lf_status_free(lf_strbuf_append(b, "; ", 2));
    mlirDiagnosticPrint(d, lf_strbuf_print_cb, b);
  }
  return mlirLogicalResultSuccess();
}

/* Turns the failure `s` (consumed) of an extra plan into the note
 * "<what>: <message>: <diagnostics>" in *out. Only out of memory is an
 * error. */
static lf_status_t keep_note(lf_status_t s, const char *what,
                             lf_strbuf_t *diags, char **out) {
  char note[1024];
  snprintf(note, sizeof(note), "%s: %s%s%s", what, lf_status_message(s),
           lf_strbuf_len(diags) ? ": " : "", lf_strbuf_cstr(diags));
  lf_status_free(s);
  *out = strdup(note);
  return *out ? LF_OK
              : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

/* Lowers the opmath promotion of `func` (its 16-bit float results rounded
 * once, or with `round_results` false left in f32) into *plan, with the
 * results whose type the promotion changed in *widened. A failure of the
 * promotion or its lowering becomes *note ("<what>: ..." with the
 * diagnostics) and *plan stays NULL; only out of memory is an error. */
static lf_status_t lower_promoted(MlirOperation func, bool round_results,
                                  const char *what, lf_reference_t **plan,
                                  uint64_t *widened, char **note) {
  *plan = NULL;
  *widened = 0;
  MlirContext ctx = mlirOperationGetContext(func);
  lf_strbuf_t diags;
  lf_strbuf_init(&diags, 4096);
  MlirDiagnosticHandlerID id =
      mlirContextAttachDiagnosticHandler(ctx, capture_diag, &diags, NULL);
  MlirOperation promoted;
  lf_status_t s = lf_reference_promote_ex(func, round_results, &promoted);
  lf_reference_t *p = NULL;
  if (!s) {
    MlirType a = mlirTypeAttrGetValue(
        mlirOperationGetAttributeByName(func, lf_str("function_type")));
    MlirType b = mlirTypeAttrGetValue(
        mlirOperationGetAttributeByName(promoted, lf_str("function_type")));
    for (intptr_t k = 0; k < mlirFunctionTypeGetNumResults(a) && k < 64; ++k)
      if (!mlirTypeEqual(mlirFunctionTypeGetResult(a, k),
                         mlirFunctionTypeGetResult(b, k)))
        *widened |= (uint64_t)1 << k;
    p = calloc(1, sizeof(*p));
    s = p ? lower_or_fold_views(promoted, LF_REFERENCE_OPMATH_PIPELINE,
                                LF_REFERENCE_OPMATH_PIPELINE_VIEWS, p)
          : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    mlirOperationDestroy(promoted);
  }
  mlirContextDetachDiagnosticHandler(ctx, id);
  if (!s) {
    *plan = p;
  } else {
    free(p);
    if (lf_status_code(s) != LF_STATUS_RESOURCE_EXHAUSTED)
      s = keep_note(s, what, &diags, note);
  }
  lf_strbuf_free(&diags);
  return s;
}

/* Makes ref->truth for a subgraph that accumulates in 16 bits; a failure
 * becomes ref->truth_note. Only out of memory is an error. */
static lf_status_t lower_truth(MlirOperation func, lf_reference_t *ref) {
  char why[256];
  if (!lf_reference_accum16(func, why, sizeof(why)))
    return LF_OK;
  ref->truth_reason = strdup(why);
  if (!ref->truth_reason)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  uint64_t widened;
  LF_RETURN_IF_ERROR(lower_promoted(func, true, "no opmath reference",
                                    &ref->truth, &widened, &ref->truth_note));
  if (ref->truth) {
    ref->truth->is_truth = true;
    ref->truth->truth_reason = strdup(why);
    if (!ref->truth->truth_reason)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return LF_OK;
}

/* Makes ref->wide for a subgraph with an f16 result: the promotion with
 * its 16-bit float results left in f32. A failure becomes ref->wide_note.
 * Only out of memory is an error. */
static lf_status_t lower_wide(MlirOperation func, lf_reference_t *ref) {
  if (!lf_reference_wants_wide(func))
    return LF_OK;
  uint64_t widened;
  LF_RETURN_IF_ERROR(lower_promoted(func, false, "no wide reference",
                                    &ref->wide, &widened, &ref->wide_note));
  if (ref->wide) {
    ref->wide->is_wide = true;
    ref->wide->wide_outputs = widened;
  }
  return LF_OK;
}

/* ---- 16-bit contractions summed in f32: the verifier's error scale. ---- */

static bool is_half_tensor(MlirType t) {
  return mlirTypeIsAShaped(t) && is_half(mlirShapedTypeGetElementType(t));
}

static bool is_f32_shaped(MlirType t) {
  return mlirTypeIsAShaped(t) &&
         mlirTypeIsAF32(mlirShapedTypeGetElementType(t));
}

/* Notes the operand type of a 16-bit contraction in *kinds (bit 0 f16,
 * bit 1 bf16). */
static void note_half(MlirType t, void *kinds) {
  *(unsigned *)kinds |=
      mlirTypeIsABF16(mlirShapedTypeGetElementType(t)) ? 2u : 1u;
}

int64_t lf_reference_acc32_k(MlirOperation func, const char **out_operands) {
  if (out_operands)
    *out_operands = NULL;
  MlirAttribute cls =
      mlirOperationGetAttributeByName(func, lf_str("llm_fuse.class"));
  if (mlirAttributeIsNull(cls) || !mlirAttributeIsAString(cls))
    return 0;
  MlirStringRef c = mlirStringAttrGetValue(cls);
  if (c.length != 11 || memcmp(c.data, "contraction", 11) != 0)
    return 0;
  op_list_t l;
  lf_status_t s = collect_ops(func, &l);
  if (s) {
    lf_status_free(s);
    return 0;
  }
  int64_t best = 0;
  unsigned kinds = 0;
  const lf_contraction_filter_t half = {.input = is_half_tensor,
                                        .result = is_f32_shaped,
                                        .seen = note_half,
                                        .user = &kinds};
  for (size_t i = 0; i < l.n; ++i) {
    int64_t k = lf_contraction_k(l.ops[i], &half);
    best = k > best ? k : best;
  }
  free(l.ops);
  if (best > 0 && out_operands)
    *out_operands = kinds == 1 ? "f16" : kinds == 2 ? "bf16" : "mixed";
  return best;
}

lf_status_t lf_reference_lower(MlirOperation func, lf_reference_t *out) {
  LF_RETURN_IF_ERROR(lower_or_fold_views(func, LF_REFERENCE_PIPELINE,
                                         LF_REFERENCE_PIPELINE_VIEWS, out));
  out->acc32_k = lf_reference_acc32_k(func, &out->acc32_operands);
  lf_status_t s = lower_truth(func, out);
  if (!s)
    s = lower_wide(func, out);
  if (s)
    lf_reference_free(out);
  return s;
}

/* IEEE binary16 of `f`, rounded to nearest even (overflow to inf). */
static uint16_t f16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t exp = (u >> 23) & 0xff, man = u & 0x7fffff;
  if (exp == 0xff) /* inf, or a quiet NaN */
    return sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0);
  int e = (int)exp - 127 + 15;
  if (e >= 31)
    return sign | 0x7c00;
  uint32_t h, rem, mid;
  if (e <= 0) { /* a subnormal half, or zero */
    if (e < -10)
      return sign;
    uint32_t m = man | 0x800000;
    int shift = 14 - e;
    h = m >> shift;
    rem = m & ((1u << shift) - 1);
    mid = 1u << (shift - 1);
  } else {
    h = ((uint32_t)e << 10) | (man >> 13);
    rem = man & 0x1fff;
    mid = 0x1000;
  }
  if (rem > mid || (rem == mid && (h & 1)))
    ++h; /* a carry out of the mantissa steps the exponent, to inf at most */
  return sign | (uint16_t)h;
}

/* bfloat16 of `f`: its upper half, rounded to nearest even. */
static uint16_t bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffff) > 0x7f800000) /* NaN: keep it a quiet NaN */
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* The bits of a scalar argument of MLIR type `type` as the kernel takes
 * it, in hex of its own width: a kernel parameter of 2 bytes reads the
 * low 2 bytes of what it is given, so an f16 or bf16 constant must not be
 * passed as f32 bits (1.0 became 0x0000, a zero: the TOSA softmax in bf16
 * divided by it and its reference was all inf). */
static void scalar_bits(double v, const char *type, char *out, size_t size) {
  if (type && strcmp(type, "f64") == 0) {
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    snprintf(out, size, "0x%016llx", (unsigned long long)u);
  } else if (type && strcmp(type, "f16") == 0) {
    snprintf(out, size, "0x%04x", f16_bits((float)v));
  } else if (type && strcmp(type, "bf16") == 0) {
    snprintf(out, size, "0x%04x", bf16_bits((float)v));
  } else {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    snprintf(out, size, "0x%08x", u);
  }
}

static cJSON *arg_json(const lf_ref_arg_t *a) {
  static const char *const kinds[] = {"input", "output", "temp", "int",
                                      "float"};
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "kind", kinds[a->kind]);
  if (a->kind <= LF_REF_ARG_TEMP)
    cJSON_AddNumberToObject(j, "index", (double)a->index);
  else if (a->kind == LF_REF_ARG_INT)
    cJSON_AddNumberToObject(j, "value", (double)a->i);
  else {
    /* JSON has no inf or NaN (a max-reduction starts at -inf): the exact
     * bits carry the value; "value" is for people. */
    char bits[24];
    scalar_bits(a->f, a->type, bits, sizeof(bits));
    cJSON_AddStringToObject(j, "bits", bits);
    cJSON_AddNumberToObject(j, "value", a->f);
  }
  cJSON_AddStringToObject(j, "type", a->type ? a->type : "");
  return j;
}

char *lf_reference_plan_json(const lf_reference_t *r) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "llm-fuse-reference/0");
  cJSON_AddStringToObject(root, "subgraph", r->subgraph);
  cJSON_AddStringToObject(root, "signature", r->signature);
  cJSON_AddStringToObject(root, "pipeline",
                          r->is_truth || r->is_wide
                              ? (r->folded_views
                                     ? LF_REFERENCE_OPMATH_PIPELINE_VIEWS
                                     : LF_REFERENCE_OPMATH_PIPELINE)
                              : (r->folded_views ? LF_REFERENCE_PIPELINE_VIEWS
                                                 : LF_REFERENCE_PIPELINE));
  if (r->reductions_innermost)
    cJSON_AddTrueToObject(root, "reductions_innermost");
  cJSON *temps = cJSON_AddArrayToObject(root, "temps");
  for (size_t i = 0; i < r->num_temps; ++i) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", r->temps[i].type);
    cJSON_AddNumberToObject(t, "bytes", (double)r->temps[i].bytes);
    if (r->temps[i].init) {
      char *hex = malloc(2 * r->temps[i].init_size + 1);
      for (size_t b = 0; hex && b < r->temps[i].init_size; ++b)
        snprintf(hex + 2 * b, 3, "%02x", r->temps[i].init[b]);
      cJSON_AddStringToObject(t, "init_hex", hex ? hex : "");
      free(hex);
    }
    cJSON_AddItemToArray(temps, t);
  }
  cJSON *kernels = cJSON_AddArrayToObject(root, "kernels");
  for (size_t i = 0; i < r->num_kernels; ++i)
    cJSON_AddItemToArray(kernels, cJSON_CreateString(r->kernels[i].name));
  cJSON *steps = cJSON_AddArrayToObject(root, "steps");
  for (size_t i = 0; i < r->num_steps; ++i) {
    const lf_ref_step_t *st = &r->steps[i];
    cJSON *j = cJSON_CreateObject();
    if (st->is_copy) {
      cJSON_AddStringToObject(j, "op", "copy");
    } else {
      cJSON_AddStringToObject(j, "op", "launch");
      cJSON_AddStringToObject(j, "kernel", r->kernels[st->kernel].name);
      double g[3] = {st->grid[0], st->grid[1], st->grid[2]};
      double b[3] = {st->block[0], st->block[1], st->block[2]};
      cJSON_AddItemToObject(j, "grid", cJSON_CreateDoubleArray(g, 3));
      cJSON_AddItemToObject(j, "block", cJSON_CreateDoubleArray(b, 3));
    }
    cJSON *args = cJSON_AddArrayToObject(j, "args");
    for (size_t a = 0; a < st->num_args; ++a)
      cJSON_AddItemToArray(args, arg_json(&st->args[a]));
    cJSON_AddItemToArray(steps, j);
  }
  /* Only subgraphs that accumulate in 16 bits get these keys: every other
   * plan stays as it was. */
  if (r->is_truth) {
    cJSON *o = cJSON_AddObjectToObject(root, "opmath");
    cJSON_AddStringToObject(o, "kind", LF_REFERENCE_OPMATH_KIND);
    cJSON_AddStringToObject(o, "reason",
                            r->truth_reason ? r->truth_reason : "");
  } else if (r->truth) {
    cJSON *o = cJSON_AddObjectToObject(root, "truth");
    cJSON_AddStringToObject(o, "plan", LF_REFERENCE_TRUTH_DIR "/plan.json");
    cJSON_AddStringToObject(o, "kind", LF_REFERENCE_OPMATH_KIND);
    cJSON_AddStringToObject(o, "reason",
                            r->truth_reason ? r->truth_reason : "");
  } else if (r->truth_note) {
    cJSON_AddStringToObject(root, "truth_note", r->truth_note);
  }
  /* Only 16-bit contractions summed in f32 get this key. */
  if (r->acc32_k > 0) {
    cJSON *o = cJSON_AddObjectToObject(root, "acc32");
    cJSON_AddNumberToObject(o, "k", (double)r->acc32_k);
    cJSON_AddStringToObject(o, "operands",
                            r->acc32_operands ? r->acc32_operands : "mixed");
  }
  /* Only subgraphs with an f16 result get these keys. */
  if (r->is_wide) {
    cJSON *o = cJSON_AddObjectToObject(root, "wide_results");
    cJSON_AddStringToObject(o, "kind", LF_REFERENCE_WIDE_KIND);
    cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
    for (int k = 0; k < 64; ++k)
      if (r->wide_outputs >> k & 1)
        cJSON_AddItemToArray(outs, cJSON_CreateNumber(k));
  } else if (r->wide) {
    cJSON *o = cJSON_AddObjectToObject(root, "wide");
    cJSON_AddStringToObject(o, "plan", LF_REFERENCE_WIDE_DIR "/plan.json");
    cJSON_AddStringToObject(o, "kind", LF_REFERENCE_WIDE_KIND);
  } else if (r->wide_note) {
    cJSON_AddStringToObject(root, "wide_note", r->wide_note);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

void lf_reference_free(lf_reference_t *r) {
  if (!r)
    return;
  free(r->subgraph);
  free(r->signature);
  for (size_t i = 0; i < r->num_temps; ++i) {
    free(r->temps[i].type);
    free(r->temps[i].init);
  }
  free(r->temps);
  for (size_t i = 0; i < r->num_kernels; ++i) {
    free(r->kernels[i].name);
    free(r->kernels[i].module);
  }
  free(r->kernels);
  for (size_t i = 0; i < r->num_steps; ++i) {
    for (size_t a = 0; a < r->steps[i].num_args; ++a)
      free(r->steps[i].args[a].type);
    free(r->steps[i].args);
  }
  free(r->steps);
  if (r->truth) {
    lf_reference_free(r->truth);
    free(r->truth);
  }
  free(r->truth_reason);
  free(r->truth_note);
  if (r->wide) {
    lf_reference_free(r->wide);
    free(r->wide);
  }
  free(r->wide_note);
  memset(r, 0, sizeof(*r));
}
