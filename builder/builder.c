/* builder.c - the in-process kernel build: parse, verify, contract, lower to
 * NVVM/LLVM, PTX, cubin.
 *
 * Each stage that fails on the candidate ends the build with a result of
 * its kind; MLIR diagnostics reach the result only through the context's
 * diagnostic handler (lf_diag_sink_handler). The lowering pipeline is in
 * kLowering below and documented in docs/kernel-contract.md.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/internal.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Conversion.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"
#include "mlir-c/Transforms.h"

/* Runs on the gpu.module. Memrefs become bare pointers
 * (use-bare-ptr-memref-call-conv): one .u64 parameter per buffer. */
static const char kLowering[] =
    "builtin.module(gpu.module("
    "lower-affine,"
    "convert-vector-to-scf{full-unroll=true},"
    "convert-scf-to-cf,"
    "convert-nvgpu-to-nvvm,"
    "convert-vector-to-llvm,"
    "convert-gpu-to-nvvm{index-bitwidth=64 use-bare-ptr-memref-call-conv=1},"
    "convert-nvvm-to-llvm))";
static const char kReconcile[] = "builtin.module(reconcile-unrealized-casts)";

static pthread_once_t passes_once = PTHREAD_ONCE_INIT;

static void register_passes(void) {
  mlirRegisterConversionLowerAffinePass();
  mlirRegisterConversionConvertVectorToSCF();
  mlirRegisterConversionSCFToControlFlowPass();
  mlirRegisterConversionConvertNVGPUToNVVMPass();
  mlirRegisterConversionConvertVectorToLLVMPass();
  mlirRegisterConversionConvertGpuOpsToNVVMOps();
  mlirRegisterConversionConvertNVVMToLLVMPass();
  mlirRegisterConversionReconcileUnrealizedCastsPass();
}

/* For trusted text (the reference lowering): what the contract check would
 * have found, without checking anything else. */
static lf_status_t trusted_info(MlirModule module, lf_contract_info_t *info) {
  memset(info, 0, sizeof(*info));
  MlirOperation gmod = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    if (n.length == 10 && memcmp(n.data, "gpu.module", 10) == 0)
      gmod = op;
  }
  if (mlirOperationIsNull(gmod))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "trusted text without gpu.module");
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(gmod, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (mlirAttributeIsNull(mlirOperationGetAttributeByName(
            op, mlirStringRefCreateFromCString("gpu.kernel"))))
      continue;
    MlirAttribute name = mlirOperationGetAttributeByName(
        op, mlirSymbolTableGetSymbolAttributeName());
    MlirAttribute blk = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("known_block_size"));
    MlirAttribute grd = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("known_grid_size"));
    if (!mlirAttributeIsAString(name) || !mlirAttributeIsADenseI32Array(blk) ||
        !mlirAttributeIsADenseI32Array(grd) ||
        mlirDenseArrayGetNumElements(blk) != 3 ||
        mlirDenseArrayGetNumElements(grd) != 3)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "trusted kernel without name or known sizes");
    MlirStringRef n = mlirStringAttrGetValue(name);
    snprintf(info->kernel_name, sizeof(info->kernel_name), "%.*s",
             (int)n.length, n.data);
    for (int i = 0; i < 3; ++i) {
      info->block[i] = (uint32_t)mlirDenseI32ArrayGetElement(blk, i);
      info->grid[i] = (uint32_t)mlirDenseI32ArrayGetElement(grd, i);
    }
    info->gpu_module = gmod;
    info->kernel = op;
    return LF_OK;
  }
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "trusted text without kernel");
}

static bool valid_chip(const char *chip) {
  return strcmp(chip, "sm_80") == 0 || strcmp(chip, "sm_90") == 0 ||
         strcmp(chip, "sm_90a") == 0;
}

static void stage(const lf_build_request_t *req, const char *name) {
  if (req->on_stage)
    req->on_stage(name, req->on_stage_user_data);
}

static void pipeline_error_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

/* Runs `pipeline` on the module. Pass failures are the candidate's (their
 * diagnostics are in the sink); a pipeline that does not parse is ours.
 * The module is verified once, after the whole pipeline, not after each of
 * its passes as the pass manager does by default: those verifications of
 * the growing module were a third of the lowering's instructions on a
 * 3xTF32 GEMM (bench/NOTES.md, session 28, "where the build time of the
 * big GEMMs goes"). The output is the same (verifying changes nothing), and
 * a module that does not verify fails the lowering as before. */
static lf_status_t run_pipeline(MlirContext ctx, MlirModule module,
                                const char *pipeline, bool *ok) {
  MlirPassManager pm = mlirPassManagerCreateOnOperation(
      ctx, mlirStringRefCreateFromCString("builtin.module"));
  mlirPassManagerEnableVerifier(pm, false);
  lf_strbuf_t err;
  lf_strbuf_init(&err, 4096);
  lf_status_t s = LF_OK;
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(
          mlirPassManagerGetAsOpPassManager(pm),
          mlirStringRefCreateFromCString(pipeline), pipeline_error_cb, &err))) {
    s = LF_STATUS(LF_STATUS_INTERNAL, "bad lowering pipeline '%s': %s",
                  pipeline, lf_strbuf_cstr(&err));
    goto out;
  }
  *ok = mlirLogicalResultIsSuccess(
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module)));
  if (*ok)
    *ok = mlirOperationVerify(mlirModuleGetOperation(module));
out:
  lf_strbuf_free(&err);
  mlirPassManagerDestroy(pm);
  return s;
}

typedef struct leftover_s {
  int count;
} leftover_t;

/* After lowering, everything inside the gpu.module must be llvm or nvvm;
 * anything else had no lowering (conversions are partial, so they leave it
 * in place). */
static MlirWalkResult find_leftover(MlirOperation op, void *user_data) {
  leftover_t *l = user_data;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if ((n.length > 5 && strncmp(n.data, "llvm.", 5) == 0) ||
      (n.length > 5 && strncmp(n.data, "nvvm.", 5) == 0) ||
      (n.length == 10 && strncmp(n.data, "gpu.module", 10) == 0) ||
      (n.length == 34 &&
       strncmp(n.data, "builtin.unrealized_conversion_cast", 34) == 0))
    return MlirWalkResultAdvance;
  if (l->count++ < 3) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "'%.*s' has no lowering to NVVM/LLVM in this pipeline",
             (int)n.length, n.data);
    mlirEmitError(mlirOperationGetLocation(op), msg);
  }
  return MlirWalkResultSkip;
}

/* convert-gpu-to-nvvm cannot convert a gpu.func whose arguments are
 * !nvgpu.tensormap.descriptor (its type converter does not know nvgpu
 * types), while convert-nvgpu-to-nvvm lowers the type to !llvm.ptr. So the
 * trailing tensor-map arguments become !llvm.ptr here, with an
 * unrealized_conversion_cast back to the descriptor for their users;
 * reconcile-unrealized-casts folds it away once the TMA ops are lowered.
 * codegen.c then makes each such parameter a byval grid constant. */
static lf_status_t retype_tensor_maps(MlirContext ctx,
                                      const lf_contract_info_t *info) {
  if (info->num_maps == 0)
    return LF_OK;
  MlirOperation kernel = info->kernel;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirAttribute fta = mlirOperationGetAttributeByName(
      kernel, mlirStringRefCreateFromCString("function_type"));
  MlirType ptr =
      mlirTypeParseGet(ctx, mlirStringRefCreateFromCString("!llvm.ptr"));
  if (mlirBlockIsNull(entry) || mlirAttributeIsNull(fta) || mlirTypeIsNull(ptr))
    return LF_STATUS(LF_STATUS_INTERNAL, "cannot retype tensor-map arguments");
  MlirType ft = mlirTypeAttrGetValue(fta);
  intptr_t n = mlirFunctionTypeGetNumInputs(ft);
  if ((size_t)n != info->first_map + info->num_maps ||
      mlirFunctionTypeGetNumResults(ft) != 0)
    return LF_STATUS(LF_STATUS_INTERNAL, "unexpected kernel type");
  MlirType *inputs = calloc((size_t)n, sizeof(*inputs));
  if (!inputs)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (intptr_t i = 0; i < n; ++i)
    inputs[i] =
        (size_t)i < info->first_map ? mlirFunctionTypeGetInput(ft, i) : ptr;
  MlirOperation first = mlirBlockGetFirstOperation(entry);
  for (size_t j = 0; j < info->num_maps; ++j) {
    MlirValue arg =
        mlirBlockGetArgument(entry, (intptr_t)(info->first_map + j));
    MlirType desc = mlirValueGetType(arg);
    mlirValueSetType(arg, ptr);
    MlirOperationState st = mlirOperationStateGet(
        mlirStringRefCreateFromCString("builtin.unrealized_conversion_cast"),
        mlirOperationGetLocation(kernel));
    mlirOperationStateAddOperands(&st, 1, &arg);
    mlirOperationStateAddResults(&st, 1, &desc);
    MlirOperation cast = mlirOperationCreate(&st);
    if (mlirOperationIsNull(cast)) {
      free(inputs);
      return LF_STATUS(LF_STATUS_INTERNAL, "cannot create a cast");
    }
    mlirBlockInsertOwnedOperationBefore(entry, first, cast);
    mlirValueReplaceAllUsesExcept(arg, mlirOperationGetResult(cast, 0), 1,
                                  &cast);
  }
  mlirOperationSetAttributeByName(
      kernel, mlirStringRefCreateFromCString("function_type"),
      mlirTypeAttrGet(mlirFunctionTypeGet(ctx, n, inputs, 0, NULL)));
  free(inputs);
  return LF_OK;
}

/* A parse failure whose first error is an op verifier's ("'x.y' op ...")
 * is a verify failure: the text parsed, the IR is invalid. */
static bool looks_like_verifier(const char *first) {
  if (first[0] != '\'')
    return false;
  const char *close = strchr(first + 1, '\'');
  return close && strncmp(close, "' op ", 5) == 0;
}

static lf_status_t fill_params(const lf_signature_t *sig,
                               const lf_contract_info_t *info,
                               lf_build_result_t *r) {
  size_t n = sig->num_inputs + sig->num_results;
  r->params = calloc(n + info->num_maps, sizeof(*r->params));
  if (!r->params)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  r->num_params = n + info->num_maps;
  /* Tensor maps follow the ordinary parameters. */
  for (size_t j = 0; j < info->num_maps; ++j) {
    lf_kernel_param_t *p = &r->params[n + j];
    p->is_tensor_map = true;
    p->map = info->maps[j];
    p->operand = p->map.param;
    p->type = strdup(info->map_types[j]);
    if (!p->type)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n; ++i) {
    lf_kernel_param_t *p = &r->params[i];
    p->is_output = i >= sig->num_inputs;
    p->operand = (int)(p->is_output ? i - sig->num_inputs : i);
    p->is_pointer = sig->pointer[i];
    p->type = strdup(sig->texts[i]);
    if (!p->type)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return LF_OK;
}

/* Moves the sink's diagnostics into the result. */
static lf_status_t take_diagnostics(lf_diag_sink_t *sink,
                                    lf_build_result_t *r) {
  char *text = lf_diag_sink_take(sink);
  if (!text)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_status_t s =
      lf_set_capped(&r->diagnostics, text, LF_BUILD_DIAGNOSTICS_CAP);
  free(text);
  return s;
}

lf_status_t lf_build_kernel_in_process(const lf_build_request_t *req,
                                       lf_build_result_t **out_result) {
  *out_result = NULL;
  if (!req || (!req->signature && !req->trusted) ||
      (!req->kernel_text && req->kernel_size))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "build request needs a signature and kernel text");
  const char *chip = req->chip ? req->chip : "sm_90";
  if (!valid_chip(chip))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "chip '%s' is not one of sm_80, sm_90, sm_90a", chip);
  double t0 = lf_now_ms();
  lf_build_result_t *r = lf_build_result_new();
  if (!r)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_status_t s = LF_OK;
  const char *text = req->kernel_text ? req->kernel_text : "";

  pthread_once(&passes_once, register_passes);
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterAllLLVMTranslations(ctx);

  char *ptxas = NULL, *libdevice = NULL;
  if (!req->skip_cubin && (s = lf_find_ptxas(req->ptxas_path, &ptxas)))
    goto out_context;
  if ((s = lf_find_libdevice(req->libdevice_path, &libdevice)))
    goto out_context;

  lf_signature_t sig;
  memset(&sig, 0, sizeof(sig));
  if (!req->trusted && (s = lf_signature_parse(ctx, req->signature, &sig)))
    goto out_context;

  lf_diag_sink_t sink;
  lf_diag_sink_init(&sink, text, req->kernel_size, req->line_offset);
  mlirContextAttachDiagnosticHandler(ctx, lf_diag_sink_handler, &sink, NULL);

  /* ---- parse + verify ---- */
  stage(req, "parse");
  if (req->kernel_size > LF_BUILD_MAX_KERNEL_SIZE) {
    s = lf_build_result_fail(r, LF_BUILD_PARSE,
                             "the kernel text is %zu bytes; the limit is %u",
                             req->kernel_size, LF_BUILD_MAX_KERNEL_SIZE);
    goto out_sink;
  }
  double t = lf_now_ms();
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreate(text, req->kernel_size));
  r->ms_parse = lf_now_ms() - t;
  if (mlirModuleIsNull(module)) {
    bool verify = looks_like_verifier(sink.first_raw);
    s = lf_build_result_fail(r, verify ? LF_BUILD_VERIFY : LF_BUILD_PARSE, "%s",
                             sink.errors ? sink.first
                                         : "the text does not parse");
    goto out_sink;
  }

  /* ---- contract ---- */
  stage(req, "contract");
  t = lf_now_ms();
  lf_contract_info_t info;
  s = req->trusted
          ? trusted_info(module, &info)
          : lf_contract_check(module, &sig, chip, req->allow_inline_asm, &info);
  r->ms_contract = lf_now_ms() - t;
  if (s)
    goto out_module;
  if (info.violations) {
    sink.dropped += (size_t)(info.violations - info.reported);
    char *hint = lf_contract_rule_hint(info.first_rule, &sig);
    if (hint) {
      s = lf_set_capped(&r->hint, hint, LF_BUILD_HINT_CAP);
      free(hint);
      if (s)
        goto out_module;
    }
    s = lf_build_result_fail(r, LF_BUILD_CONTRACT,
                             "%d contract violation%s; "
                             "first: %s",
                             info.violations, info.violations == 1 ? "" : "s",
                             sink.first);
    goto out_module;
  }
  if (info.needs_sm90a && strcmp(chip, "sm_90") == 0)
    chip = "sm_90a";
  if (!(r->kernel_name = strdup(info.kernel_name)) ||
      !(r->chip = strdup(chip))) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_module;
  }
  memcpy(r->block, info.block, sizeof(r->block));
  memcpy(r->grid, info.grid, sizeof(r->grid));
  r->dynamic_shared_bytes = info.dynamic_shared_bytes;
  if (!req->trusted && (s = fill_params(&sig, &info, r)))
    goto out_module;

  /* ---- lower to the LLVM dialect ---- */
  stage(req, "lower");
  t = lf_now_ms();
  bool ok = false;
  lf_prune_constant_branches(info.gpu_module);
  if ((s = retype_tensor_maps(ctx, &info)))
    goto out_module;
  s = run_pipeline(ctx, module, kLowering, &ok);
  if (s)
    goto out_module;
  if (ok) {
    leftover_t left = {0};
    mlirOperationWalk(info.gpu_module, find_leftover, &left, MlirWalkPreOrder);
    ok = left.count == 0;
  }
  if (ok)
    s = run_pipeline(ctx, module, kReconcile, &ok);
  r->ms_lower = lf_now_ms() - t;
  if (s)
    goto out_module;
  if (!ok) {
    s = lf_build_result_fail(r, LF_BUILD_LOWERING,
                             "lowering to NVVM failed: %s",
                             sink.errors ? sink.first : "(no diagnostic)");
    goto out_module;
  }
  if (!req->trusted)
    lf_contract_check_lowered(&info);
  if (info.violations) {
    sink.dropped += (size_t)(info.violations - info.reported);
    char *hint = lf_contract_rule_hint(info.first_rule, &sig);
    if (hint) {
      s = lf_set_capped(&r->hint, hint, LF_BUILD_HINT_CAP);
      free(hint);
      if (s)
        goto out_module;
    }
    s = lf_build_result_fail(r, LF_BUILD_CONTRACT,
                             "contract violation after lowering: %s",
                             sink.first);
    goto out_module;
  }

  /* ---- LLVM IR, PTX ---- */
  stage(req, "codegen");
  t = lf_now_ms();
  s = lf_codegen_ptx(info.gpu_module, info.kernel_name, chip, libdevice,
                     info.first_map, info.num_maps, &sink, r);
  r->ms_llvm = lf_now_ms() - t;
  if (s || r->kind != LF_BUILD_OK)
    goto out_module;

  /* ---- cubin ---- */
  if (ptxas) {
    stage(req, "ptxas");
    t = lf_now_ms();
    s = lf_codegen_cubin(ptxas, chip, &sink, r);
    r->ms_ptxas = lf_now_ms() - t;
  }

out_module:
  mlirModuleDestroy(module);
out_sink:
  if (!s)
    s = take_diagnostics(&sink, r);
  lf_diag_sink_free(&sink);
  lf_signature_free(&sig);
out_context:
  free(ptxas);
  free(libdevice);
  mlirContextDestroy(ctx);
  if (s) {
    lf_build_result_destroy(r);
    return s;
  }
  r->ms_total = lf_now_ms() - t0;
  *out_result = r;
  return LF_OK;
}
