/* swap.c - putting a verified kernel in place of an outlined subgraph (see
 * swap.h for the IR it makes).
 *
 * The new body is written as MLIR text and parsed in a scratch module with
 * an empty object, then moved into place: text is the clearest way to say
 * what the launch looks like, and the parser checks it. The kernel's bytes
 * go in afterwards through the GPU dialect's C API, so they are never
 * escaped into text.
 */
#include "passes/swap.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/GPU.h"
#include "runtime/mgpu/llm_fuse_rt.h"
#include "runtime/tensor_map.h"

/* libllm_fuse_rt's tensor-map encoder (runtime/mgpu/llm_fuse_rt.h), as the
 * host IR declares and calls it. */
#define TMAP_ENCODE "lf_rt_tensor_map_encode"
#define TMAP_ENCODE_TYPE                                                       \
  "(!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i32, i32, i32) "     \
  "-> i32"

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

static void append_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

/* The memref type of static tensor type `t` ("tensor<4x8xf32>" ->
 * "memref<4x8xf32>"), appended to `out`. */
static lf_status_t memref_text(MlirType t, lf_strbuf_t *out) {
  if (!mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t) ||
      !mlirAttributeIsNull(mlirRankedTensorTypeGetEncoding(t)))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a swapped subgraph needs static tensors without "
                     "encoding at its boundary");
  lf_strbuf_t tt;
  lf_strbuf_init(&tt, 4096);
  mlirTypePrint(t, append_cb, &tt);
  const char *s = lf_strbuf_cstr(&tt);
  lf_status_t st =
      strncmp(s, "tensor<", 7) == 0
          ? lf_strbuf_appendf(out, "memref<%s", s + 7)
          : LF_STATUS(LF_STATUS_INTERNAL, "unexpected tensor type text '%s'", s);
  lf_strbuf_free(&tt);
  return st;
}

static lf_status_t type_text(MlirType t, lf_strbuf_t *out) {
  size_t before = lf_strbuf_len(out);
  mlirTypePrint(t, append_cb, out);
  if (lf_strbuf_len(out) == before)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "type text too long");
  return LF_OK;
}

/* A free symbol name "<base>_kernel", "<base>_kernel_1", ... */
static lf_status_t binary_name(MlirOperation module, const char *base,
                               char *out, size_t size) {
  MlirSymbolTable table = mlirSymbolTableCreate(module);
  lf_status_t st = LF_STATUS(LF_STATUS_INTERNAL, "no free symbol name");
  for (int i = 0; i < 1000; ++i) {
    if (i == 0)
      snprintf(out, size, "%s_kernel", base);
    else
      snprintf(out, size, "%s_kernel_%d", base, i);
    if (mlirOperationIsNull(mlirSymbolTableLookup(table, str(out)))) {
      st = LF_OK;
      break;
    }
  }
  mlirSymbolTableDestroy(table);
  return st;
}

/* The host IR that encodes the tensor map of kernel parameter `i` at run
 * time on the viewed buffer's device pointer (%ini<k> or %outi<k>) into a
 * 64-byte aligned !llvm.array<16 x i64>, loaded as %tm<i>: the launch
 * passes that aggregate by value, so the args[i] that gpu.launch_func's
 * lowering builds points at the 128 bytes. An encode failure is kept by
 * libllm_fuse_rt and skips the launch. */
static lf_status_t tmap_text(const lf_kernel_param_t *p, size_t i, long n_in,
                             lf_strbuf_t *t) {
  const lf_tensor_map_spec_t *m = &p->map;
  int code = lf_tensor_map_rt_code(m->dtype, sizeof(m->dtype));
  if (code < 0 || m->rank < 1 || m->rank > 5)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "kernel parameter %zu: a tensor map of element type "
                     "'%.8s' and rank %d cannot be encoded",
                     i, m->dtype, m->rank);
  char dims[160] = "", box[96] = "";
  size_t nd = 0, nb = 0;
  for (int d = 0; d < m->rank; ++d) {
    nd += (size_t)snprintf(dims + nd, sizeof(dims) - nd, "%s%llu",
                           d ? ", " : "", (unsigned long long)m->dims[d]);
    nb += (size_t)snprintf(box + nb, sizeof(box) - nb, "%s%u", d ? ", " : "",
                           (unsigned)m->box[d]);
  }
  const char *base = m->param < n_in ? "ini" : "outi";
  long k = m->param < n_in ? m->param : m->param - n_in;
  return lf_strbuf_appendf(
      t,
      "  %%tmdv%zu = llvm.mlir.constant(dense<[%s]> : tensor<%dxi64>) : "
      "!llvm.array<%d x i64>\n"
      "  %%tmd%zu = llvm.alloca %%tmone x !llvm.array<%d x i64> : (i64) -> "
      "!llvm.ptr\n"
      "  llvm.store %%tmdv%zu, %%tmd%zu : !llvm.array<%d x i64>, !llvm.ptr\n"
      "  %%tmbv%zu = llvm.mlir.constant(dense<[%s]> : tensor<%dxi32>) : "
      "!llvm.array<%d x i32>\n"
      "  %%tmb%zu = llvm.alloca %%tmone x !llvm.array<%d x i32> : (i64) -> "
      "!llvm.ptr\n"
      "  llvm.store %%tmbv%zu, %%tmb%zu : !llvm.array<%d x i32>, !llvm.ptr\n"
      "  %%tmp%zu = llvm.alloca %%tmone x !llvm.array<16 x i64> "
      "{alignment = 64 : i64} : (i64) -> !llvm.ptr\n"
      "  %%tma%zu = llvm.inttoptr %%%s%ld : i64 to !llvm.ptr\n"
      "  %%tmt%zu = arith.constant %d : i32\n"
      "  %%tmr%zu = arith.constant %d : i32\n"
      "  %%tms%zu = arith.constant %d : i32\n"
      "  %%tml%zu = arith.constant %d : i32\n"
      "  %%tmo%zu = arith.constant %d : i32\n"
      "  %%tmst%zu = func.call @" TMAP_ENCODE "(%%tmp%zu, %%tma%zu, %%tmt%zu, "
      "%%tmr%zu, %%tmd%zu, %%tmb%zu, %%tms%zu, %%tml%zu, %%tmo%zu) : "
      TMAP_ENCODE_TYPE "\n"
      "  %%tm%zu = llvm.load %%tmp%zu : !llvm.ptr -> !llvm.array<16 x i64>\n",
      i, dims, m->rank, m->rank, i, m->rank, i, i, m->rank, i, box, m->rank,
      m->rank, i, m->rank, i, i, m->rank, i, i, base, k, i, code, i, m->rank,
      i, m->swizzle_bytes, i, m->l2promo_bytes, i, m->oob_nan ? 1 : 0, i, i,
      i, i, i, i, i, i, i, i, i, i);
}

/* The scratch module: the new function, a gpu.binary with an empty
 * object of the right target and format, and (for a kernel with tensor
 * maps) the encoder's declaration. */
static lf_status_t scratch_text(MlirOperation func, const char *fname,
                                const char *bin_name,
                                const lf_build_result_t *b,
                                const char *format, lf_strbuf_t *t) {
  MlirAttribute fta =
      mlirOperationGetAttributeByName(func, str("function_type"));
  MlirType ft = mlirTypeAttrGetValue(fta);
  intptr_t n_in = mlirFunctionTypeGetNumInputs(ft);
  intptr_t n_out = mlirFunctionTypeGetNumResults(ft);

  size_t num_ordinary = 0, num_maps = 0;
  for (size_t i = 0; i < b->num_params; ++i) {
    const lf_kernel_param_t *p = &b->params[i];
    if (p->is_tensor_map) {
      ++num_maps;
      if (p->map.param < 0 || p->map.param >= n_in + n_out)
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "kernel parameter %zu is a tensor map of operand %d, "
                         "which does not exist",
                         i, p->map.param);
      continue;
    }
    ++num_ordinary;
    if (!p->is_pointer)
      return LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                       "kernel parameter %zu is passed by value; the launch "
                       "passes pointers only",
                       i);
    if (p->operand < 0 || p->operand >= (p->is_output ? n_out : n_in))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "kernel parameter %zu names operand %d, which does "
                       "not exist",
                       i, p->operand);
  }
  if (num_ordinary != (size_t)(n_in + n_out))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the kernel has %zu parameters (besides tensor maps), "
                     "the subgraph %ld operands",
                     num_ordinary, (long)(n_in + n_out));

  LF_RETURN_IF_ERROR(lf_strbuf_appendf(
      t, "module attributes {gpu.container_module} {\n"
         "func.func private @%s(",
      fname));
  for (intptr_t i = 0; i < n_in; ++i) {
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(t, "%s%%a%ld: ", i ? ", " : "", (long)i));
    LF_RETURN_IF_ERROR(type_text(mlirFunctionTypeGetInput(ft, i), t));
  }
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ") -> ("));
  for (intptr_t i = 0; i < n_out; ++i) {
    if (i)
      LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ", "));
    LF_RETURN_IF_ERROR(type_text(mlirFunctionTypeGetResult(ft, i), t));
  }
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ") {\n"));

  /* Inputs: read-only buffers; results: fresh buffers. */
  for (intptr_t i = 0; i < n_in; ++i) {
    MlirType ty = mlirFunctionTypeGetInput(ft, i);
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(t, "  %%in%ld = bufferization.to_buffer %%a%ld "
                             "read_only : ", (long)i, (long)i));
    LF_RETURN_IF_ERROR(type_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " to "));
    LF_RETURN_IF_ERROR(memref_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, "\n  %%inp%ld = memref.extract_aligned_pointer_as_index %%in%ld : ",
        (long)i, (long)i));
    LF_RETURN_IF_ERROR(memref_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, " -> index\n  %%ini%ld = arith.index_cast %%inp%ld : index to i64\n",
        (long)i, (long)i));
  }
  for (intptr_t i = 0; i < n_out; ++i) {
    MlirType ty = mlirFunctionTypeGetResult(ft, i);
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, "  %%out%ld = memref.alloc() {alignment = 256 : i64} : ", (long)i));
    LF_RETURN_IF_ERROR(memref_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, "\n  %%outp%ld = memref.extract_aligned_pointer_as_index %%out%ld : ",
        (long)i, (long)i));
    LF_RETURN_IF_ERROR(memref_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, " -> index\n  %%outi%ld = arith.index_cast %%outp%ld : index to "
           "i64\n",
        (long)i, (long)i));
  }
  for (int d = 0; d < 3; ++d)
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, "  %%g%d = arith.constant %u : index\n  %%b%d = arith.constant %u "
           ": index\n",
        d, b->grid[d], d, b->block[d]));
  if (num_maps)
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(
        t, "  %tmone = llvm.mlir.constant(1 : i64) : i64\n"));
  for (size_t i = 0; i < b->num_params; ++i)
    if (b->params[i].is_tensor_map)
      LF_RETURN_IF_ERROR(tmap_text(&b->params[i], i, (long)n_in, t));
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(
      t, "  %%smem = arith.constant %u : i32\n"
         "  gpu.launch_func @%s::@%s blocks in (%%g0, %%g1, %%g2) threads in "
         "(%%b0, %%b1, %%b2) dynamic_shared_memory_size %%smem args(",
      b->dynamic_shared_bytes, bin_name, b->kernel_name));
  for (size_t i = 0; i < b->num_params; ++i)
    LF_RETURN_IF_ERROR(
        b->params[i].is_tensor_map
            ? lf_strbuf_appendf(t, "%s%%tm%zu : !llvm.array<16 x i64>",
                                i ? ", " : "", i)
            : lf_strbuf_appendf(t, "%s%%%s%d : i64", i ? ", " : "",
                                b->params[i].is_output ? "outi" : "ini",
                                b->params[i].operand));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ")\n"));
  for (intptr_t i = 0; i < n_out; ++i) {
    MlirType ty = mlirFunctionTypeGetResult(ft, i);
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        t, "  %%r%ld = bufferization.to_tensor %%out%ld restrict writable : ",
        (long)i, (long)i));
    LF_RETURN_IF_ERROR(memref_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " to "));
    LF_RETURN_IF_ERROR(type_text(ty, t));
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "\n"));
  }
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "  return"));
  for (intptr_t i = 0; i < n_out; ++i)
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(t, "%s %%r%ld", i ? "," : "", (long)i));
  if (n_out) {
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " :"));
    for (intptr_t i = 0; i < n_out; ++i) {
      LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, i ? ", " : " "));
      LF_RETURN_IF_ERROR(type_text(mlirFunctionTypeGetResult(ft, i), t));
    }
  }
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(
      t, "\n}\ngpu.binary @%s [#gpu.object<#nvvm.target<chip = \"%s\">, %s "
         "= \"\">]\n",
      bin_name, b->chip ? b->chip : "sm_90", format));
  if (num_maps)
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(
        t, "func.func private @" TMAP_ENCODE TMAP_ENCODE_TYPE "\n"));
  return lf_strbuf_append_str(t, "}\n");
}

lf_status_t lf_swap_in(MlirOperation module, MlirOperation func,
                       const lf_build_result_t *b) {
  if (!b || b->kind != LF_BUILD_OK || !b->kernel_name ||
      (!b->cubin && !b->ptx))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "only a successfully built kernel can be swapped in");
  MlirContext ctx = mlirOperationGetContext(func);
  MlirAttribute sym = mlirOperationGetAttributeByName(func, str("sym_name"));
  if (!mlirAttributeIsAString(sym))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "the function has no name");
  MlirStringRef fname_ref = mlirStringAttrGetValue(sym);
  char fname[256], bin[300];
  if (fname_ref.length >= sizeof(fname))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "function name too long");
  memcpy(fname, fname_ref.data, fname_ref.length);
  fname[fname_ref.length] = '\0';
  LF_RETURN_IF_ERROR(binary_name(module, fname, bin, sizeof(bin)));

  /* Cubin and PTX together when fatbinary is there, else what exists. */
  size_t fat_size = 0;
  char *fat = NULL;
  if (b->cubin && b->ptx) {
    lf_status_t fs = lf_build_fatbin(b, &fat, &fat_size);
    if (fs)
      lf_log_status(LF_LOG_DEBUG, "swap: embedding the cubin alone", fs);
  }
  const char *format = fat ? "fatbin" : b->cubin ? "bin" : "assembly";
  lf_strbuf_t text;
  lf_strbuf_init(&text, 1 << 20);
  lf_status_t st = scratch_text(func, fname, bin, b, format, &text);
  if (st) {
    lf_strbuf_free(&text);
    free(fat);
    return st;
  }
  MlirModule scratch = mlirModuleCreateParse(ctx, str(lf_strbuf_cstr(&text)));
  if (mlirModuleIsNull(scratch)) {
    st = LF_STATUS(LF_STATUS_INTERNAL,
                   "the launch of kernel %s did not parse (see the "
                   "diagnostic above)",
                   b->kernel_name);
    lf_strbuf_free(&text);
    free(fat);
    return st;
  }
  lf_strbuf_free(&text);

  MlirBlock sbody = mlirModuleGetBody(scratch);
  MlirOperation new_func = mlirBlockGetFirstOperation(sbody);
  MlirOperation binary = mlirOperationGetNextInBlock(new_func);
  MlirOperation decl = mlirOperationGetNextInBlock(binary); /* or null */

  /* The object: the placeholder's target and format, the real bytes. */
  MlirAttribute objs = mlirOperationGetAttributeByName(binary, str("objects"));
  MlirAttribute placeholder = mlirArrayAttrGetElement(objs, 0);
  MlirAttribute target = mlirGPUObjectAttrGetTarget(placeholder);
  uint32_t object_format = mlirGPUObjectAttrGetFormat(placeholder);
  MlirStringRef bytes =
      fat ? mlirStringRefCreate(fat, fat_size)
      : b->cubin ? mlirStringRefCreate((const char *)b->cubin, b->cubin_size)
                 : mlirStringRefCreate(b->ptx, b->ptx_size);
  MlirAttribute object = mlirGPUObjectAttrGet(ctx, target, object_format,
                                              bytes, mlirAttributeGetNull());
  free(fat);
  mlirOperationSetAttributeByName(binary, str("objects"),
                                  mlirArrayAttrGet(ctx, 1, &object));

  /* Into place: the body, then the binary after the function. */
  mlirRegionTakeBody(mlirOperationGetRegion(func, 0),
                     mlirOperationGetRegion(new_func, 0));
  mlirOperationMoveAfter(binary, func);
  if (!mlirOperationIsNull(decl)) { /* the encoder's declaration, once */
    MlirSymbolTable table = mlirSymbolTableCreate(module);
    bool free_name =
        mlirOperationIsNull(mlirSymbolTableLookup(table, str(TMAP_ENCODE)));
    mlirSymbolTableDestroy(table);
    if (free_name)
      mlirOperationMoveAfter(decl, binary);
  }
  mlirOperationSetAttributeByName(
      func, str(LF_ATTR_KERNEL),
      mlirStringAttrGet(ctx, str(b->kernel_name)));
  mlirOperationSetAttributeByName(module, str("gpu.container_module"),
                                  mlirUnitAttrGet(ctx));
  mlirModuleDestroy(scratch);
  return LF_OK;
}
