/* reference.c - the reference lowering: an outlined subgraph through the
 * upstream default GPU path, turned into a plan of kernels, temporaries and
 * launches with the candidates' buffer ABI. See reference.h.
 */
#include "passes/reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Pass.h"
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

static size_t memref_bytes(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || !mlirShapedTypeHasStaticShape(t))
    return 0;
  MlirType e = mlirShapedTypeGetElementType(t);
  size_t bits = mlirTypeIsAInteger(e)  ? mlirIntegerTypeGetWidth(e)
                : mlirTypeIsAF64(e)    ? 64
                : mlirTypeIsAF32(e)    ? 32
                : (mlirTypeIsAF16(e) || mlirTypeIsABF16(e)) ? 16
                                                            : 0;
  size_t n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i)
    n *= (size_t)mlirShapedTypeGetDimSize(t, i);
  return (n * bits + 7) / 8;
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

lf_status_t lf_reference_lower(MlirOperation func, lf_reference_t *out) {
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
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(
          mlirPassManagerGetAsOpPassManager(pm), lf_str(LF_REFERENCE_PIPELINE),
          pipeline_error_cb, &err))) {
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
    if (a->type && strcmp(a->type, "f64") == 0) {
      uint64_t u;
      memcpy(&u, &a->f, sizeof(u));
      snprintf(bits, sizeof(bits), "0x%016llx", (unsigned long long)u);
    } else {
      float f = (float)a->f;
      uint32_t u;
      memcpy(&u, &f, sizeof(u));
      snprintf(bits, sizeof(bits), "0x%08x", u);
    }
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
  cJSON_AddStringToObject(root, "pipeline", LF_REFERENCE_PIPELINE);
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
  memset(r, 0, sizeof(*r));
}
