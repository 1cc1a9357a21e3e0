/* contract.c - the kernel contract checker (docs/kernel-contract.md).
 *
 * Walks a parsed and verified reply with the MLIR C API and reports every
 * broken rule as an error "[rule] message" at the offending op, so the
 * repair prompt points at a line of the reply. The rule names here are the
 * section names of the contract document; keep the two in step.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/internal.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"
#include "mlir-c/Dialect/NVGPU.h"

/* Emitted violations stop here; later ones are still counted. */
#define MAX_REPORTED 40

/* Shared-memory limits per block (bytes), opt-in maximum. */
#define SMEM_LIMIT_SM80 (163u * 1024u)
#define SMEM_LIMIT_SM90 (227u * 1024u)

#define ATTR_DYNAMIC_SMEM "llm_fuse.dynamic_shared_memory"
#define ATTR_TENSOR_MAPS "llm_fuse.tensor_maps"
#define ATTR_TENSOR_MAPS_TF32 "llm_fuse.tensor_maps_tf32"
/* A compile-time cluster shape (docs/kernel-contract.md section 3): the GPU
 * dialect's own attribute or the NVVM one it lowers to. */
#define ATTR_CLUSTER "known_cluster_size"
#define ATTR_NVVM_CLUSTER "nvvm.cluster_dim"
/* The portable cluster size (CUDA: larger needs a launch attribute). */
#define MAX_CLUSTER_CTAS 8
/* LLVM NVPTX address spaces a kernel may make pointers into (section 4,
 * no-pointer-cast): shared (the CTA's) and shared::cluster (its cluster's). */
#define AS_SHARED 3
#define AS_SHARED_CLUSTER 7
#define MAX_KERNEL_NAME 128

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

static void append_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

/* Prints a type into `out` (cut to fit). */
static void type_text(MlirType t, char *out, size_t size) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 4096);
  mlirTypePrint(t, append_cb, &b);
  snprintf(out, size, "%s", lf_strbuf_cstr(&b));
  lf_strbuf_free(&b);
}

static void attr_text(MlirAttribute a, char *out, size_t size) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 4096);
  mlirAttributePrint(a, append_cb, &b);
  snprintf(out, size, "%s", lf_strbuf_cstr(&b));
  lf_strbuf_free(&b);
}

static void op_name(MlirOperation op, char *out, size_t size) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  snprintf(out, size, "%.*s", (int)s.length, s.data);
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- Expected signature -------------------------------------------------- */

void lf_signature_free(lf_signature_t *sig) {
  if (!sig)
    return;
  size_t n = sig->num_inputs + sig->num_results;
  for (size_t i = 0; sig->texts && i < n; ++i)
    free(sig->texts[i]);
  free(sig->texts);
  free(sig->types);
  free(sig->pointer);
  memset(sig, 0, sizeof(*sig));
}

static bool is_scalar(MlirType t) {
  return mlirTypeIsAInteger(t) || mlirTypeIsAIndex(t) ||
         (mlirTypeIsAFloat(t) && mlirFloatTypeGetWidth(t) <= 64);
}

/* The kernel argument for one subgraph operand: a static ranked tensor
 * becomes an identity-layout memref of the same shape in the default
 * (global) memory space; a scalar stays a scalar. */
static lf_status_t kernel_arg_type(MlirType t, MlirType *out, bool *pointer) {
  if (is_scalar(t)) {
    *out = t;
    *pointer = false;
    return LF_OK;
  }
  if (!mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t) ||
      !is_scalar(mlirShapedTypeGetElementType(t)))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "only static ranked tensors of int/float/index and such "
                     "scalars are supported");
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t shape[64];
  if (rank > 64)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "rank %ld is too high",
                     (long)rank);
  for (intptr_t i = 0; i < rank; ++i)
    shape[i] = mlirShapedTypeGetDimSize(t, i);
  *out = mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(t), rank,
                                     shape, mlirAttributeGetNull());
  *pointer = true;
  return LF_OK;
}

static MlirLogicalResult swallow_diag(MlirDiagnostic d, void *user_data) {
  (void)d;
  (void)user_data;
  return mlirLogicalResultSuccess();
}

lf_status_t lf_signature_parse(MlirContext ctx, const char *text,
                               lf_signature_t *out) {
  memset(out, 0, sizeof(*out));
  if (!text || !*text)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no signature given");
  /* Parse errors of the caller's signature are not the reply's: keep them
   * out of the reply's diagnostics. */
  MlirDiagnosticHandlerID id =
      mlirContextAttachDiagnosticHandler(ctx, swallow_diag, NULL, NULL);
  MlirType ft = mlirTypeParseGet(ctx, str(text));
  mlirContextDetachDiagnosticHandler(ctx, id);
  if (mlirTypeIsNull(ft) || !mlirTypeIsAFunction(ft))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "signature '%.200s' is not a function type such as "
                     "'(tensor<4xf32>) -> tensor<4xf32>'",
                     text);
  size_t ni = (size_t)mlirFunctionTypeGetNumInputs(ft);
  size_t nr = (size_t)mlirFunctionTypeGetNumResults(ft);
  if (nr == 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "signature '%.200s' has no results", text);
  size_t n = ni + nr;
  out->num_inputs = ni;
  out->num_results = nr;
  out->types = calloc(n, sizeof(*out->types));
  out->texts = calloc(n, sizeof(*out->texts));
  out->pointer = calloc(n, sizeof(*out->pointer));
  if (!out->types || !out->texts || !out->pointer) {
    lf_signature_free(out);
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n; ++i) {
    MlirType t = i < ni ? mlirFunctionTypeGetInput(ft, (intptr_t)i)
                        : mlirFunctionTypeGetResult(ft, (intptr_t)(i - ni));
    lf_status_t s = kernel_arg_type(t, &out->types[i], &out->pointer[i]);
    char buf[1024];
    if (!s && !out->pointer[i] && i >= ni)
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "scalar results are not supported");
    if (s) {
      type_text(t, buf, sizeof(buf));
      lf_signature_free(out);
      return lf_status_annotate(s, "signature %s #%zu (%s)",
                                i < ni ? "input" : "result",
                                i < ni ? i : i - ni, buf);
    }
    type_text(out->types[i], buf, sizeof(buf));
    out->texts[i] = strdup(buf);
    if (!out->texts[i]) {
      lf_signature_free(out);
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  return LF_OK;
}

/* ---- Violations ---------------------------------------------------------- */

typedef struct checker_s {
  lf_contract_info_t *info;
  const lf_signature_t *sig;
  const char *chip;
  bool allow_inline_asm;
  bool uses_dynamic_smem;
  MlirOperation first_dynamic_smem;
  MlirOperation first_cluster_op; /* an op that needs a cluster (sm_90+) */
} checker_t;

static void violation(lf_contract_info_t *info, MlirLocation loc,
                      const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void violation(lf_contract_info_t *info, MlirLocation loc,
                      const char *rule, const char *fmt, ...) {
  if (info->violations == 0)
    snprintf(info->first_rule, sizeof(info->first_rule), "%s", rule);
  if (info->violations++ >= MAX_REPORTED)
    return;
  ++info->reported;
  char msg[768];
  int n = snprintf(msg, sizeof(msg), "[%s] ", rule);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  mlirEmitError(loc, msg);
}

/* ---- Memory spaces and types --------------------------------------------- */

static bool is_workgroup_space(MlirAttribute space) {
  if (mlirAttributeIsNull(space))
    return false;
  if (mlirAttributeIsAInteger(space))
    return mlirIntegerAttrGetValueInt(space) == 3;
  char text[128];
  attr_text(space, text, sizeof(text));
  return strcmp(text, "#gpu.address_space<workgroup>") == 0 ||
         strcmp(text, "#gpu<address_space workgroup>") == 0;
}

static bool is_workgroup_memref(MlirType t) {
  return mlirTypeIsAMemRef(t) &&
         is_workgroup_space(mlirMemRefTypeGetMemorySpace(t));
}

/* Checks one type: no tensors, no floats wider than 64 bits. */
static void check_type(checker_t *c, MlirOperation op, MlirType t) {
  char name[96], text[256];
  if (mlirTypeIsATensor(t)) {
    op_name(op, name, sizeof(name));
    type_text(t, text, sizeof(text));
    violation(c->info, mlirOperationGetLocation(op), "buffers-only",
              "'%s' uses the tensor type %s; a kernel works on its memref "
              "arguments, registers and shared memory only",
              name, text);
    return;
  }
  MlirType e = mlirTypeIsAShaped(t) ? mlirShapedTypeGetElementType(t) : t;
  if (mlirTypeIsAFloat(e) && mlirFloatTypeGetWidth(e) > 64) {
    op_name(op, name, sizeof(name));
    type_text(t, text, sizeof(text));
    violation(c->info, mlirOperationGetLocation(op), "types",
              "'%s' uses %s: floats wider than 64 bits (f80, f128) have no "
              "NVPTX support",
              name, text);
  }
}

/* ---- Rules per op -------------------------------------------------------- */

static const char *const allowed_dialects[] = {
    "gpu",   "scf",    "cf",    "arith", "math", "memref", "vector", "nvvm",
    "nvgpu", "affine", "index", "ub",    "func", "llvm",   NULL};

/* The llvm dialect is allowed only for the values nvvm ops produce and
 * consume (structs of wgmma/mma results). */
static const char *const llvm_allowed[] = {
    "llvm.mlir.constant",  "llvm.mlir.undef",
    "llvm.mlir.poison",    "llvm.mlir.zero",
    "llvm.extractvalue",   "llvm.insertvalue",
    "llvm.extractelement", "llvm.insertelement",
    "llvm.bitcast",        NULL};

static const char *const host_ops[] = {"gpu.launch",
                                       "gpu.launch_func",
                                       "gpu.alloc",
                                       "gpu.dealloc",
                                       "gpu.memcpy",
                                       "gpu.memset",
                                       "gpu.wait",
                                       "gpu.host_register",
                                       "gpu.host_unregister",
                                       "gpu.binary",
                                       "gpu.set_default_device",
                                       "gpu.set_csr_pointers",
                                       "gpu.module",
                                       "nvgpu.tma.create.descriptor",
                                       NULL};

static const char *const host_prefixes[] = {
    "gpu.create_", "gpu.destroy_", "gpu.spmv", "gpu.spmm",
    "gpu.sddmm",   "gpu.spgemm",   NULL};

static bool in_list(const char *name, const char *const *list) {
  for (; *list; ++list)
    if (strcmp(name, *list) == 0)
      return true;
  return false;
}

static bool has_prefix_in(const char *name, const char *const *list) {
  for (; *list; ++list)
    if (starts_with(name, *list))
      return true;
  return false;
}

/* Ops that need sm_90a (architecture-specific Hopper features). */
static bool needs_sm90a(const char *name) {
  return starts_with(name, "nvvm.wgmma") ||
         starts_with(name, "nvgpu.warpgroup") ||
         starts_with(name, "nvvm.setmaxregister");
}

/* Ops that need thread-block clusters (sm_90 and newer): distributed shared
 * memory (mapa), cluster barriers, cluster special registers. */
static bool needs_cluster_hw(const char *name) {
  return starts_with(name, "nvvm.mapa") || starts_with(name, "nvvm.cluster.") ||
         starts_with(name, "nvvm.read.ptx.sreg.cluster") ||
         starts_with(name, "nvvm.read.ptx.sreg.nclusterid") ||
         starts_with(name, "gpu.cluster_");
}

/* The address space of an !llvm.ptr type, -1 for other types. */
static int llvm_ptr_space(MlirType t) {
  if (!mlirTypeIsALLVMPointerType(t))
    return -1;
  return (int)mlirLLVMPointerTypeGetAddressSpace(t);
}

static bool is_shared_window(int space) {
  return space == AS_SHARED || space == AS_SHARED_CLUSTER;
}

static void check_global(checker_t *c, MlirOperation op) {
  MlirAttribute type_attr = mlirOperationGetAttributeByName(op, str("type"));
  MlirAttribute constant = mlirOperationGetAttributeByName(op, str("constant"));
  MlirAttribute sym = mlirOperationGetAttributeByName(op, str("sym_name"));
  MlirStringRef name =
      mlirAttributeIsNull(sym) ? str("?") : mlirStringAttrGetValue(sym);
  bool shared = !mlirAttributeIsNull(type_attr) &&
                is_workgroup_memref(mlirTypeAttrGetValue(type_attr));
  if (mlirAttributeIsNull(constant) && !shared)
    violation(c->info, mlirOperationGetLocation(op), "global-state",
              "memref.global @%.*s is mutable and lives in global memory: it "
              "would keep state across launches (and races between blocks); "
              "use the output buffers, registers or shared memory, or mark "
              "read-only tables 'constant'",
              (int)name.length, name.data);
}

static MlirWalkResult check_op(MlirOperation op, void *user_data) {
  checker_t *c = user_data;
  char name[128];
  op_name(op, name, sizeof(name));
  MlirLocation loc = mlirOperationGetLocation(op);

  /* Types of results and of block arguments in the op's regions. */
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    check_type(c, op, mlirValueGetType(mlirOperationGetResult(op, i)));
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (intptr_t a = 0; a < mlirBlockGetNumArguments(b); ++a)
        check_type(c, op, mlirValueGetType(mlirBlockGetArgument(b, a)));

  if (needs_sm90a(name))
    c->info->needs_sm90a = true;
  if (needs_cluster_hw(name) && mlirOperationIsNull(c->first_cluster_op))
    c->first_cluster_op = op;

  char dialect[32];
  const char *dot = strchr(name, '.');
  snprintf(dialect, sizeof(dialect), "%.*s",
           dot ? (int)(dot - name) : (int)strlen(name), name);

  if (strcmp(name, "gpu.module") == 0 &&
      mlirOperationEqual(op, c->info->gpu_module))
    return MlirWalkResultAdvance;
  if (strcmp(name, "gpu.printf") == 0 || strcmp(name, "vector.print") == 0) {
    violation(c->info, loc, "no-printf",
              "'%s' is not allowed: device printf goes through an external "
              "vprintf call and floods the output; a kernel communicates only "
              "through its output buffers",
              name);
  } else if (strcmp(name, "cf.assert") == 0) {
    violation(c->info, loc, "no-trap",
              "'cf.assert' is not allowed: a failed device assert traps and "
              "leaves the CUDA context unusable; handle the case in code");
  } else if (strcmp(name, "math.fpowi") == 0 &&
             mlirOperationGetNumOperands(op) == 2 &&
             mlirTypeIsAInteger(
                 mlirValueGetType(mlirOperationGetOperand(op, 1))) &&
             mlirIntegerTypeGetWidth(
                 mlirValueGetType(mlirOperationGetOperand(op, 1))) != 32) {
    /* Upstream lowers it to libdevice's __nv_powif(float, int) with the
     * exponent passed at its own width: on an H100 an i64 exponent gave
     * x^3 = 1 (bench/NOTES.md). */
    violation(c->info, loc, "fpowi-exponent",
              "'math.fpowi' with a %u-bit exponent is miscompiled (libdevice's "
              "powi takes a 32-bit int): use an i32 exponent, or multiply "
              "(x * x * x)",
              mlirIntegerTypeGetWidth(
                  mlirValueGetType(mlirOperationGetOperand(op, 1))));
  } else if (in_list(name, host_ops) || has_prefix_in(name, host_prefixes)) {
    violation(c->info, loc, "host-op",
              "'%s' is a host-side op; the reply holds device code only (one "
              "gpu.module), and llm-fuse launches the kernel itself",
              name);
  } else if (strcmp(name, "memref.alloc") == 0 ||
             strcmp(name, "memref.realloc") == 0 ||
             strcmp(name, "memref.dealloc") == 0) {
    violation(c->info, loc, "no-heap",
              "'%s' is not allowed: it becomes device malloc/free, which is "
              "slow, can fail and can leak; use memref.alloca (registers), "
              "workgroup attributions or dynamic shared memory",
              name);
  } else if (strcmp(name, "llvm.inline_asm") == 0 ||
             strcmp(name, "nvvm.inline_ptx") == 0) {
    if (!c->allow_inline_asm)
      violation(c->info, loc, "no-inline-asm",
                "'%s' is not allowed: inline assembly cannot be checked; use "
                "the nvvm and nvgpu ops for special instructions",
                name);
  } else if (strcmp(name, "llvm.inttoptr") == 0 &&
             is_shared_window(llvm_ptr_space(
                 mlirValueGetType(mlirOperationGetResult(op, 0))))) {
    /* A shared or shared::cluster address (e.g. from
     * memref.extract_aligned_pointer_as_index of a workgroup memref, then
     * nvvm.mapa): it can reach only the cluster's shared memory. */
  } else if ((strcmp(name, "llvm.load") == 0 ||
              strcmp(name, "llvm.store") == 0) &&
             mlirOperationGetNumOperands(op) >= 1) {
    MlirValue addr =
        mlirOperationGetOperand(op, strcmp(name, "llvm.store") == 0 ? 1 : 0);
    if (!is_shared_window(llvm_ptr_space(mlirValueGetType(addr))))
      violation(c->info, loc, "dialects",
                "'%s' is not allowed but through a shared (!llvm.ptr<3>) or "
                "shared::cluster (!llvm.ptr<7>) pointer; access buffers and "
                "local arrays with memref/vector/nvgpu ops",
                name);
  } else if (strcmp(name, "llvm.inttoptr") == 0 ||
             strcmp(name, "llvm.ptrtoint") == 0 ||
             strcmp(name, "llvm.addrspacecast") == 0 ||
             strcmp(name, "builtin.unrealized_conversion_cast") == 0) {
    violation(c->info, loc, "no-pointer-cast",
              "'%s' is not allowed: casts between pointers, integers and "
              "memrefs can forge addresses outside the kernel's buffers; "
              "index memrefs with memref/vector/nvgpu ops (only "
              "llvm.inttoptr to a shared !llvm.ptr<3> or shared::cluster "
              "!llvm.ptr<7> pointer is allowed)",
              name);
  } else if (strcmp(name, "memref.extract_aligned_pointer_as_index") == 0) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    if (!is_workgroup_memref(t))
      violation(c->info, loc, "no-pointer-cast",
                "'%s' is allowed on shared (workgroup) memrefs only, e.g. to "
                "build wgmma descriptors; global addresses must not become "
                "integers",
                name);
  } else if (strcmp(name, "memref.global") == 0) {
    check_global(c, op);
  } else if (strcmp(name, "llvm.mlir.global") == 0) {
    violation(c->info, loc, "global-state",
              "'llvm.mlir.global' is not allowed; declare shared memory with "
              "workgroup attributions, a workgroup memref.global or "
              "gpu.dynamic_shared_memory, and read-only tables with a "
              "'constant' memref.global");
  } else if (strcmp(name, "llvm.call") == 0 ||
             strcmp(name, "llvm.call_intrinsic") == 0 ||
             strcmp(name, "llvm.invoke") == 0) {
    violation(c->info, loc, "no-external-call",
              "'%s' is not allowed: call only func.func helpers defined in "
              "the same gpu.module",
              name);
  } else if (strcmp(name, "func.call_indirect") == 0 ||
             strcmp(name, "func.constant") == 0) {
    violation(c->info, loc, "no-external-call",
              "'%s' is not allowed: indirect calls cannot be checked; call "
              "helpers by name with func.call",
              name);
  } else if (strcmp(name, "func.func") == 0) {
    MlirRegion body = mlirOperationGetRegion(op, 0);
    if (mlirBlockIsNull(mlirRegionGetFirstBlock(body))) {
      MlirAttribute sym = mlirOperationGetAttributeByName(op, str("sym_name"));
      MlirStringRef s =
          mlirAttributeIsNull(sym) ? str("?") : mlirStringAttrGetValue(sym);
      violation(c->info, loc, "no-external-call",
                "func.func @%.*s is a declaration without a body: a kernel "
                "may call only helpers defined in the same gpu.module",
                (int)s.length, s.data);
    }
  } else if (strcmp(dialect, "llvm") == 0) {
    if (!in_list(name, llvm_allowed))
      violation(c->info, loc, "dialects",
                "'%s' is not allowed: from the llvm dialect only constants, "
                "undef/poison/zero, insert/extractvalue, insert/extractelement "
                "and bitcast may be used (for nvvm ops' struct results); "
                "write the rest with arith, memref and vector ops",
                name);
  } else if (strcmp(dialect, "builtin") == 0) {
    violation(c->info, loc, "single-module",
              "'%s' is not allowed inside the gpu.module", name);
  } else if (!in_list(dialect, allowed_dialects)) {
    violation(c->info, loc, "dialects",
              "'%s' is from the '%s' dialect, which a kernel may not use; "
              "allowed: gpu, scf, cf, arith, math, memref, vector, nvvm, "
              "nvgpu, affine, index, ub, func (helpers), a few llvm value ops",
              name, dialect);
  } else if (strcmp(name, "gpu.dynamic_shared_memory") == 0) {
    if (!c->uses_dynamic_smem)
      c->first_dynamic_smem = op;
    c->uses_dynamic_smem = true;
  }
  return MlirWalkResultAdvance;
}

/* ---- Kernel-level rules -------------------------------------------------- */

static bool dense_i32x3(MlirAttribute a, int64_t out[3]) {
  if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI32Array(a) ||
      mlirDenseArrayGetNumElements(a) != 3)
    return false;
  for (int i = 0; i < 3; ++i)
    out[i] = mlirDenseI32ArrayGetElement(a, i);
  return true;
}

/* A compile-time cluster shape (section 3, "Thread-block clusters"):
 * known_cluster_size or nvvm.cluster_dim (equal where both are given), each
 * dimension >= 1, at most 8 CTAs, dividing the grid, sm_90/sm_90a only. */
static void check_cluster(checker_t *c, MlirOperation kernel,
                          const int64_t *grid) {
  lf_contract_info_t *info = c->info;
  MlirLocation loc = mlirOperationGetLocation(kernel);
  static const char *const unsupported[] = {"nvvm.cluster_max_blocks",
                                            "nvvm.blocksareclusters", NULL};
  for (const char *const *a = unsupported; *a; ++a)
    if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(kernel, str(*a))))
      violation(info, loc, "cluster",
                "'%s' is not supported: declare a compile-time cluster shape "
                "with " ATTR_CLUSTER " = array<i32: X, Y, Z>",
                *a);
  MlirAttribute known =
      mlirOperationGetAttributeByName(kernel, str(ATTR_CLUSTER));
  MlirAttribute nvvm =
      mlirOperationGetAttributeByName(kernel, str(ATTR_NVVM_CLUSTER));
  if (mlirAttributeIsNull(known) && mlirAttributeIsNull(nvvm)) {
    if (!mlirOperationIsNull(c->first_cluster_op) &&
        strcmp(c->chip, "sm_80") == 0) {
      char op[96];
      op_name(c->first_cluster_op, op, sizeof(op));
      violation(info, mlirOperationGetLocation(c->first_cluster_op), "target",
                "'%s' needs thread-block clusters (sm_90 and newer) but the "
                "kernel is built for sm_80",
                op);
    }
    return;
  }
  int64_t k[3], n[3];
  bool have_k = dense_i32x3(known, k), have_n = dense_i32x3(nvvm, n);
  if ((!mlirAttributeIsNull(known) && !have_k) ||
      (!mlirAttributeIsNull(nvvm) && !have_n)) {
    violation(info, loc, "cluster",
              "the cluster shape must be written %s = array<i32: X, Y, Z>",
              !mlirAttributeIsNull(known) && !have_k ? ATTR_CLUSTER
                                                     : ATTR_NVVM_CLUSTER);
    return;
  }
  if (have_k && have_n && (k[0] != n[0] || k[1] != n[1] || k[2] != n[2])) {
    violation(info, loc, "cluster",
              ATTR_CLUSTER " = [%lld, %lld, %lld] and " ATTR_NVVM_CLUSTER
                           " = [%lld, %lld, %lld] disagree; declare the "
                           "cluster shape once",
              (long long)k[0], (long long)k[1], (long long)k[2],
              (long long)n[0], (long long)n[1], (long long)n[2]);
    return;
  }
  const int64_t *cl = have_k ? k : n;
  const char *attr = have_k ? ATTR_CLUSTER : ATTR_NVVM_CLUSTER;
  if (strcmp(c->chip, "sm_80") == 0) {
    violation(info, loc, "cluster",
              "%s: thread-block clusters need sm_90 or sm_90a, but the kernel "
              "is built for sm_80",
              attr);
    return;
  }
  if (cl[0] < 1 || cl[1] < 1 || cl[2] < 1 ||
      cl[0] * cl[1] * cl[2] > MAX_CLUSTER_CTAS) {
    violation(info, loc, "cluster",
              "%s = [%lld, %lld, %lld] is not a valid cluster: each "
              "dimension >= 1, at most %d CTAs in all (the portable size)",
              attr, (long long)cl[0], (long long)cl[1], (long long)cl[2],
              MAX_CLUSTER_CTAS);
    return;
  }
  if (grid && (grid[0] % cl[0] || grid[1] % cl[1] || grid[2] % cl[2])) {
    violation(info, loc, "cluster",
              "known_grid_size = [%lld, %lld, %lld] is not a multiple of the "
              "cluster shape %s = [%lld, %lld, %lld] in every dimension; the "
              "launch would fail",
              (long long)grid[0], (long long)grid[1], (long long)grid[2], attr,
              (long long)cl[0], (long long)cl[1], (long long)cl[2]);
    return;
  }
  if (cl[0] * cl[1] * cl[2] == 1) {
    /* A cluster of one CTA is no cluster: dropped, so that a template
     * whose variants choose the shape ({{...}}) builds its unclustered
     * variants exactly as without the attribute (no .explicitcluster). */
    mlirOperationRemoveAttributeByName(kernel, str(ATTR_CLUSTER));
    mlirOperationRemoveAttributeByName(kernel, str(ATTR_NVVM_CLUSTER));
    return;
  }
  for (int i = 0; i < 3; ++i)
    info->cluster[i] = (uint32_t)cl[i];
}

static void check_launch_config(checker_t *c, MlirOperation kernel) {
  lf_contract_info_t *info = c->info;
  MlirLocation loc = mlirOperationGetLocation(kernel);
  int64_t b[3], g[3];
  bool have_b = dense_i32x3(
      mlirOperationGetAttributeByName(kernel, str("known_block_size")), b);
  bool have_g = dense_i32x3(
      mlirOperationGetAttributeByName(kernel, str("known_grid_size")), g);
  if (!have_b)
    violation(info, loc, "launch-config",
              "the kernel has no known_block_size = array<i32: X, Y, Z> "
              "attribute; the launch configuration must be given on the "
              "gpu.func");
  if (!have_g)
    violation(info, loc, "launch-config",
              "the kernel has no known_grid_size = array<i32: X, Y, Z> "
              "attribute; the launch configuration must be given on the "
              "gpu.func");
  if (have_b) {
    int64_t threads = b[0] * b[1] * b[2];
    if (b[0] < 1 || b[1] < 1 || b[2] < 1 || b[0] > 1024 || b[1] > 1024 ||
        b[2] > 64 || threads > 1024)
      violation(info, loc, "launch-config",
                "known_block_size = [%lld, %lld, %lld] is not a valid CUDA "
                "block: each dimension >= 1, x and y <= 1024, z <= 64, at "
                "most 1024 threads in all",
                (long long)b[0], (long long)b[1], (long long)b[2]);
    for (int i = 0; i < 3; ++i)
      info->block[i] = b[i] > 0 ? (uint32_t)b[i] : 0;
  }
  if (have_g) {
    if (g[0] < 1 || g[1] < 1 || g[2] < 1 || g[1] > 65535 || g[2] > 65535)
      violation(info, loc, "launch-config",
                "known_grid_size = [%lld, %lld, %lld] is not a valid CUDA "
                "grid: each dimension >= 1, y and z <= 65535",
                (long long)g[0], (long long)g[1], (long long)g[2]);
    for (int i = 0; i < 3; ++i)
      info->grid[i] = g[i] > 0 ? (uint32_t)g[i] : 0;
  }

  check_cluster(c, kernel, have_g ? g : NULL);

  MlirAttribute dyn =
      mlirOperationGetAttributeByName(kernel, str(ATTR_DYNAMIC_SMEM));
  uint32_t limit =
      strcmp(c->chip, "sm_80") == 0 ? SMEM_LIMIT_SM80 : SMEM_LIMIT_SM90;
  if (!mlirAttributeIsNull(dyn)) {
    int64_t v =
        mlirAttributeIsAInteger(dyn) ? mlirIntegerAttrGetValueInt(dyn) : -1;
    if (v < 0 || v > (int64_t)limit)
      violation(info, loc, "dynamic-shared-memory",
                ATTR_DYNAMIC_SMEM " must be an integer number of bytes "
                                  "between 0 and %u (the %s limit per block)",
                limit, c->chip);
    else
      info->dynamic_shared_bytes = (uint32_t)v;
  }
  if (c->uses_dynamic_smem && info->dynamic_shared_bytes == 0)
    violation(info, mlirOperationGetLocation(c->first_dynamic_smem),
              "dynamic-shared-memory",
              "gpu.dynamic_shared_memory is used but the kernel does not say "
              "how much: add " ATTR_DYNAMIC_SMEM " = <bytes> : i32 to the "
              "gpu.func's attributes");
}

/* ---- Tensor maps --------------------------------------------------------- */

/* Largest box dimension, and limits on the global tensor (the CUDA driver's
 * cuTensorMapEncodeTiled). */
#define TMA_MAX_BOX 256
#define TMA_MAX_RANK 5
#define TMA_MAX_DIM (1ull << 32)
#define TMA_MAX_STRIDE (1ull << 40)

/* Finds "key = value" in a printed !nvgpu.tensormap.descriptor<...> and
 * copies the value (up to ',' or '>') into `out`. */
static bool descriptor_field(const char *text, const char *key, char *out,
                             size_t size) {
  char pattern[32];
  snprintf(pattern, sizeof(pattern), "%s = ", key);
  const char *p = strstr(text, pattern);
  if (!p)
    return false;
  p += strlen(pattern);
  size_t n = strcspn(p, ",>");
  snprintf(out, size, "%.*s", (int)n, p);
  return true;
}

/* The memref<...> after "tensor = ", bracket-matched, parsed. */
static MlirType descriptor_box(MlirContext ctx, const char *text) {
  const char *p = strstr(text, "tensor = ");
  if (!p)
    return (MlirType){NULL};
  p += strlen("tensor = ");
  int depth = 0;
  size_t n = 0;
  for (; p[n]; ++n) {
    if (p[n] == '<')
      ++depth;
    else if (p[n] == '>' && --depth == 0) {
      ++n;
      break;
    }
  }
  if (depth != 0)
    return (MlirType){NULL};
  return mlirTypeParseGet(ctx, mlirStringRefCreate(p, n));
}

/* Short element type names the launcher understands, and their sizes. */
static const char *map_dtype(MlirType e, int *bytes) {
  if (mlirTypeIsABF16(e))
    return *bytes = 2, "bf16";
  if (mlirTypeIsAF16(e))
    return *bytes = 2, "f16";
  if (mlirTypeIsAF32(e))
    return *bytes = 4, "f32";
  if (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 8)
    return *bytes = 1, "i8";
  if (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 32)
    return *bytes = 4, "i32";
  return NULL;
}

static bool enum_bytes(const char *value, const char *prefix,
                       const int *allowed, int *out) {
  if (strcmp(value, "none") == 0)
    return *out = 0, true;
  if (!starts_with(value, prefix))
    return false;
  int v = atoi(value + strlen(prefix));
  for (; *allowed; ++allowed)
    if (v == *allowed)
      return *out = v, true;
  return false;
}

/* Checks tensor map #j (kernel argument #arg, of type `desc`) that views
 * parameter `param` and fills info->maps[j]. */
static void check_map(checker_t *c, MlirLocation loc, size_t j, size_t arg,
                      int param, MlirType desc) {
  lf_contract_info_t *info = c->info;
  const lf_signature_t *sig = c->sig;
  size_t n = sig->num_inputs + sig->num_results;
  lf_tensor_map_spec_t *m = &info->maps[j];
  memset(m, 0, sizeof(*m));
  m->param = -1;
  char *text = info->map_types[j];
  type_text(desc, text, LF_TENSOR_MAP_TYPE_CAP);
  char what[64];
  snprintf(what, sizeof(what), "tensor map #%zu (kernel argument #%zu)", j,
           arg);

  if (param < 0 || (size_t)param >= n) {
    violation(info, loc, "tensor-map",
              "%s: " ATTR_TENSOR_MAPS " entry %zu is %d, out of range: the "
              "subgraph has %zu parameter(s), %zu input(s) then %zu "
              "output(s), numbered from 0",
              what, j, param, n, sig->num_inputs, sig->num_results);
    return;
  }
  if (!sig->pointer[param]) {
    violation(info, loc, "tensor-map",
              "%s views parameter #%d, a scalar; a tensor map views a buffer "
              "(memref) parameter",
              what, param);
    return;
  }
  m->param = param;

  char swizzle[32] = "", l2promo[32] = "", oob[32] = "", interleave[32] = "";
  MlirType box = descriptor_box(mlirTypeGetContext(desc), text);
  if (mlirTypeIsNull(box) || !mlirTypeIsAMemRef(box) ||
      !descriptor_field(text, "swizzle", swizzle, sizeof(swizzle)) ||
      !descriptor_field(text, "l2promo", l2promo, sizeof(l2promo)) ||
      !descriptor_field(text, "oob", oob, sizeof(oob)) ||
      !descriptor_field(text, "interleave", interleave, sizeof(interleave))) {
    violation(info, loc, "tensor-map", "%s: cannot read its type %s", what,
              text);
    return;
  }
  MlirType buf = sig->types[param];
  MlirType be = mlirShapedTypeGetElementType(buf);
  MlirType xe = mlirShapedTypeGetElementType(box);
  char bt[128], xt[128];
  type_text(be, bt, sizeof(bt));
  type_text(xe, xt, sizeof(xt));
  if (!mlirTypeEqual(be, xe)) {
    violation(info, loc, "tensor-map",
              "%s: the box's element type %s differs from that of the "
              "viewed buffer #%d (%s)",
              what, xt, param, sig->texts[param]);
    return;
  }
  int ebytes = 0;
  const char *dtype = map_dtype(be, &ebytes);
  if (!dtype) {
    violation(info, loc, "tensor-map",
              "%s: element type %s is not supported; tensor maps take bf16, "
              "f16, f32, i8 or i32",
              what, bt);
    return;
  }
  intptr_t rank = mlirShapedTypeGetRank(buf);
  intptr_t box_rank = mlirShapedTypeGetRank(box);
  if (box_rank != rank) {
    violation(info, loc, "tensor-map",
              "%s: the box has rank %ld but the viewed buffer #%d (%s) has "
              "rank %ld; the box has one dimension per buffer dimension, "
              "row-major",
              what, (long)box_rank, param, sig->texts[param], (long)rank);
    return;
  }
  if (rank < 1 || rank > TMA_MAX_RANK) {
    violation(info, loc, "tensor-map",
              "%s: the viewed buffer has rank %ld; tensor maps have rank 1 "
              "to %d",
              what, (long)rank, TMA_MAX_RANK);
    return;
  }
  if (!mlirShapedTypeHasStaticShape(box)) {
    violation(info, loc, "tensor-map",
              "%s: the box %s must have a static shape", what, text);
    return;
  }
  m->rank = (int)rank;
  snprintf(m->dtype, sizeof(m->dtype), "%s", dtype);
  for (intptr_t d = 0; d < rank; ++d) {
    int64_t dim = mlirShapedTypeGetDimSize(buf, d);
    int64_t b = mlirShapedTypeGetDimSize(box, d);
    m->dims[d] = (uint64_t)dim;
    m->box[d] = b > 0 && b <= TMA_MAX_BOX ? (uint32_t)b : 0;
    if ((uint64_t)dim >= TMA_MAX_DIM)
      violation(info, loc, "tensor-map",
                "%s: buffer dimension %ld is %lld; TMA needs dimensions "
                "below 2^32",
                what, (long)d, (long long)dim);
    if (b < 1 || b > TMA_MAX_BOX)
      violation(info, loc, "tensor-map",
                "%s: box dimension %ld is %lld; each box dimension must be 1 "
                "to %d",
                what, (long)d, (long long)b, TMA_MAX_BOX);
    else if (b > dim)
      violation(info, loc, "tensor-map",
                "%s: box dimension %ld is %lld, larger than the buffer's "
                "(%lld); the box must fit in the tensor (partial tiles at "
                "the edges are fine: they are filled)",
                what, (long)d, (long long)b, (long long)dim);
  }
  int64_t inner = mlirShapedTypeGetDimSize(box, rank - 1) * ebytes;
  if (inner % 16 != 0)
    violation(info, loc, "tensor-map",
              "%s: the box's inner extent is %lld bytes (%lld x %s); TMA "
              "needs a multiple of 16 bytes",
              what, (long long)inner,
              (long long)mlirShapedTypeGetDimSize(box, rank - 1), bt);
  static const int swizzles[] = {32, 64, 128, 0};
  static const int promos[] = {64, 128, 256, 0};
  if (!enum_bytes(swizzle, "swizzle_", swizzles, &m->swizzle_bytes))
    violation(info, loc, "tensor-map", "%s: unknown swizzle '%s'", what,
              swizzle);
  else if (m->swizzle_bytes && inner > m->swizzle_bytes)
    violation(info, loc, "tensor-map",
              "%s: with swizzle = %s the box's inner extent may be at most "
              "%d bytes; it is %lld (make the box's last dimension at most "
              "%lld elements)",
              what, swizzle, m->swizzle_bytes, (long long)inner,
              (long long)(m->swizzle_bytes / ebytes));
  if (!enum_bytes(l2promo, "l2promo_", promos, &m->l2promo_bytes))
    violation(info, loc, "tensor-map", "%s: unknown l2promo '%s'", what,
              l2promo);
  if (strcmp(oob, "nan") == 0)
    m->oob_nan = true;
  else if (strcmp(oob, "zero") != 0)
    violation(info, loc, "tensor-map", "%s: unknown oob fill '%s'", what, oob);
  if (strcmp(interleave, "none") != 0)
    violation(info, loc, "tensor-map",
              "%s: interleave = %s is not supported; use interleave = none",
              what, interleave);
  /* Row-major strides in bytes of every dimension but the innermost. */
  uint64_t stride = (uint64_t)ebytes;
  for (intptr_t d = rank - 1; d > 0; --d) {
    uint64_t dim = m->dims[d];
    stride = dim && stride > (TMA_MAX_STRIDE << 4) / dim ? TMA_MAX_STRIDE << 4
                                                         : stride * dim;
    if (stride % 16 != 0 || stride >= TMA_MAX_STRIDE) {
      violation(info, loc, "tensor-map",
                "%s: the buffer's stride of dimension %ld is %llu bytes; TMA "
                "needs every stride but the innermost to be a multiple of 16 "
                "bytes and below 2^40: load this buffer without a tensor map",
                what, (long)(d - 1), (unsigned long long)stride);
      break;
    }
  }
}

/* llm_fuse.tensor_maps_tf32: the maps (indices among the `count` tensor
 * maps) over f32 buffers whose elements the TMA unit rounds to TF32 as
 * they land in shared memory (round to nearest, ties to even;
 * CU_TENSOR_MAP_DATA_TYPE_TFLOAT32): their dtype becomes "tf32". */
static void check_tf32_maps(checker_t *c, MlirOperation kernel, size_t count) {
  lf_contract_info_t *info = c->info;
  MlirLocation loc = mlirOperationGetLocation(kernel);
  MlirAttribute attr =
      mlirOperationGetAttributeByName(kernel, str(ATTR_TENSOR_MAPS_TF32));
  if (mlirAttributeIsNull(attr))
    return;
  if (!mlirAttributeIsADenseI32Array(attr)) {
    violation(info, loc, "tensor-map",
              ATTR_TENSOR_MAPS_TF32 " must be array<i32: ...>: the indices "
                                    "(among the tensor maps, from 0) of the "
                                    "maps TMA rounds to TF32");
    return;
  }
  size_t n = (size_t)mlirDenseArrayGetNumElements(attr);
  bool seen[LF_MAX_TENSOR_MAPS] = {false};
  for (size_t i = 0; i < n; ++i) {
    int32_t j = mlirDenseI32ArrayGetElement(attr, (intptr_t)i);
    if (j < 0 || (size_t)j >= count || (size_t)j >= LF_MAX_TENSOR_MAPS) {
      violation(info, loc, "tensor-map",
                ATTR_TENSOR_MAPS_TF32 " entry %zu is %d, out of range: the "
                                      "kernel takes %zu tensor map(s), "
                                      "numbered from 0",
                i, (int)j, count);
      continue;
    }
    if (seen[j]) {
      violation(info, loc, "tensor-map",
                ATTR_TENSOR_MAPS_TF32 " lists tensor map #%d twice", (int)j);
      continue;
    }
    seen[j] = true;
    lf_tensor_map_spec_t *m = &info->maps[j];
    if (m->param < 0)
      continue; /* already reported */
    if (strcmp(m->dtype, "f32") != 0) {
      violation(info, loc, "tensor-map",
                "tensor map #%d is listed in " ATTR_TENSOR_MAPS_TF32
                " but views a buffer of element type %s; TMA rounds f32 "
                "buffers to TF32 only",
                (int)j, m->dtype);
      continue;
    }
    snprintf(m->dtype, sizeof(m->dtype), "tf32");
  }
}

/* The trailing !nvgpu.tensormap.descriptor arguments from `first` on
 * (`count` of them) against the llm_fuse.tensor_maps attribute. */
static void check_tensor_maps(checker_t *c, MlirOperation kernel, MlirType ft,
                              size_t first, size_t count) {
  lf_contract_info_t *info = c->info;
  MlirLocation loc = mlirOperationGetLocation(kernel);
  MlirAttribute attr =
      mlirOperationGetAttributeByName(kernel, str(ATTR_TENSOR_MAPS));
  info->first_map = first;
  if (mlirAttributeIsNull(attr) && count == 0)
    return;
  if (!mlirAttributeIsNull(attr) && !mlirAttributeIsADenseI32Array(attr)) {
    violation(info, loc, "tensor-map",
              ATTR_TENSOR_MAPS
              " must be array<i32: ...>: one entry per "
              "trailing !nvgpu.tensormap.descriptor argument, the index of "
              "the parameter whose buffer it views");
    return;
  }
  size_t listed = mlirAttributeIsNull(attr)
                      ? 0
                      : (size_t)mlirDenseArrayGetNumElements(attr);
  if (listed != count) {
    violation(info, loc, "tensor-map",
              ATTR_TENSOR_MAPS
              " lists %zu tensor map(s) but the kernel takes "
              "%zu trailing !nvgpu.tensormap.descriptor argument(s); one "
              "entry per map: the index of the parameter it views",
              listed, count);
    return;
  }
  if (count > LF_MAX_TENSOR_MAPS) {
    violation(info, loc, "tensor-map",
              "the kernel takes %zu tensor maps; at most %d are allowed", count,
              LF_MAX_TENSOR_MAPS);
    return;
  }
  if (strcmp(c->chip, "sm_80") == 0)
    violation(info, loc, "target",
              "the kernel takes tensor maps (TMA), which need sm_90 or newer, "
              "but is built for sm_80; load tiles with "
              "nvgpu.device_async_copy (cp.async) there");
  for (size_t j = 0; j < count; ++j)
    check_map(c, loc, j, first + j, mlirDenseI32ArrayGetElement(attr, j),
              mlirFunctionTypeGetInput(ft, (intptr_t)(first + j)));
  info->num_maps = count;
  check_tf32_maps(c, kernel, count);
}

static void check_signature(checker_t *c, MlirOperation kernel) {
  const lf_signature_t *sig = c->sig;
  lf_contract_info_t *info = c->info;
  MlirLocation loc = mlirOperationGetLocation(kernel);
  MlirAttribute fta =
      mlirOperationGetAttributeByName(kernel, str("function_type"));
  if (mlirAttributeIsNull(fta))
    return; /* the verifier makes sure it exists */
  MlirType ft = mlirTypeAttrGetValue(fta);
  size_t want = sig->num_inputs + sig->num_results;
  size_t have = (size_t)mlirFunctionTypeGetNumInputs(ft);
  /* Tensor maps come last. */
  size_t maps = 0;
  while (maps < have &&
         mlirTypeIsANVGPUTensorMapDescriptorType(
             mlirFunctionTypeGetInput(ft, (intptr_t)(have - maps - 1))))
    ++maps;
  if (have - maps != want) {
    if (maps == 0)
      violation(info, loc, "signature",
                "the kernel takes %zu argument(s); the subgraph needs %zu: "
                "one per input (%zu) then one per output (%zu)",
                have, want, sig->num_inputs, sig->num_results);
    else
      violation(info, loc, "signature",
                "the kernel takes %zu argument(s) before its %zu tensor "
                "map(s); the subgraph needs %zu: one per input (%zu) then "
                "one per output (%zu), then the tensor maps",
                have - maps, maps, want, sig->num_inputs, sig->num_results);
    return;
  }
  for (size_t i = 0; i < want; ++i) {
    MlirType t = mlirFunctionTypeGetInput(ft, (intptr_t)i);
    if (mlirTypeEqual(t, sig->types[i]))
      continue;
    char got[256];
    type_text(t, got, sizeof(got));
    bool out = i >= sig->num_inputs;
    violation(info, loc, "signature",
              "kernel argument #%zu has type %s; expected %s (%s %zu of the "
              "subgraph; identity layout, default memory space)",
              i, got, sig->texts[i], out ? "output" : "input",
              out ? i - sig->num_inputs : i);
  }
  check_tensor_maps(c, kernel, ft, want, maps);
}

/* (op name, operand index) pairs of ops that write their memref operand. */
typedef struct write_s {
  const char *op;
  int operand;
} write_t;

static const write_t writes[] = {{"memref.store", 1},
                                 {"memref.atomic_rmw", 1},
                                 {"memref.generic_atomic_rmw", 0},
                                 {"memref.copy", 1},
                                 {"vector.store", 1},
                                 {"vector.transfer_write", 1},
                                 {"vector.maskedstore", 0},
                                 {"vector.scatter", 0},
                                 {"vector.compressstore", 0},
                                 {"affine.store", 1},
                                 {"affine.vector_store", 1},
                                 {"nvgpu.device_async_copy", 0},
                                 {"gpu.subgroup_mma_store_matrix", 1},
                                 {NULL, 0}};

/* View-like ops whose result aliases operand 0. */
static const char *const views[] = {
    "memref.subview",          "memref.cast",
    "memref.reinterpret_cast", "memref.collapse_shape",
    "memref.expand_shape",     "memref.view",
    "memref.transpose",        "memref.memory_space_cast",
    "memref.assume_alignment", NULL};

static void check_read_only(checker_t *c, MlirValue v, size_t input,
                            int depth) {
  if (depth > 16)
    return;
  for (MlirOpOperand use = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(use);
       use = mlirOpOperandGetNextUse(use)) {
    MlirOperation owner = mlirOpOperandGetOwner(use);
    int index = (int)mlirOpOperandGetOperandNumber(use);
    char name[128];
    op_name(owner, name, sizeof(name));
    for (const write_t *w = writes; w->op; ++w)
      if (w->operand == index && strcmp(w->op, name) == 0)
        violation(c->info, mlirOperationGetLocation(owner), "read-only-inputs",
                  "'%s' writes input #%zu; inputs are read-only (they may be "
                  "shared with other kernels); write only the output "
                  "arguments",
                  name, input);
    if (index == 0 && in_list(name, views))
      for (intptr_t r = 0; r < mlirOperationGetNumResults(owner); ++r)
        check_read_only(c, mlirOperationGetResult(owner, r), input, depth + 1);
  }
}

/* Whether a tensor map of the kernel that views parameter `param` is used
 * (by a TMA op); with `store`, only TMA stores count. */
static bool map_used(checker_t *c, MlirBlock entry, size_t param, bool store,
                     MlirOperation *out_store) {
  lf_contract_info_t *info = c->info;
  size_t nargs = (size_t)mlirBlockGetNumArguments(entry);
  for (size_t j = 0; j < info->num_maps; ++j) {
    if (info->maps[j].param != (int)param || info->first_map + j >= nargs)
      continue;
    MlirValue map =
        mlirBlockGetArgument(entry, (intptr_t)(info->first_map + j));
    for (MlirOpOperand use = mlirValueGetFirstUse(map);
         !mlirOpOperandIsNull(use); use = mlirOpOperandGetNextUse(use)) {
      MlirOperation owner = mlirOpOperandGetOwner(use);
      char name[128];
      op_name(owner, name, sizeof(name));
      if (!store || strcmp(name, "nvgpu.tma.async.store") == 0) {
        if (out_store)
          *out_store = owner;
        return true;
      }
    }
  }
  return false;
}

static void check_arguments(checker_t *c, MlirOperation kernel) {
  const lf_signature_t *sig = c->sig;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  size_t n = sig->num_inputs + sig->num_results;
  if (mlirBlockIsNull(entry) || (size_t)mlirBlockGetNumArguments(entry) < n)
    return;
  for (size_t i = 0; i < n; ++i) {
    MlirValue arg = mlirBlockGetArgument(entry, (intptr_t)i);
    MlirOperation store = {NULL};
    if (i < sig->num_inputs) {
      check_read_only(c, arg, i, 0);
      if (map_used(c, entry, i, true, &store))
        violation(c->info, mlirOperationGetLocation(store), "read-only-inputs",
                  "'nvgpu.tma.async.store' writes input #%zu through a tensor "
                  "map; inputs are read-only (they may be shared with other "
                  "kernels); write only the output arguments",
                  i);
    } else if (mlirOpOperandIsNull(mlirValueGetFirstUse(arg)) &&
               !map_used(c, entry, i, false, NULL)) {
      violation(c->info, mlirOperationGetLocation(kernel), "outputs-written",
                "output %zu (kernel argument #%zu) is never used, so it is "
                "never written; the kernel must write every element of every "
                "output",
                i - sig->num_inputs, i);
    }
  }
}

/* ---- Entry points -------------------------------------------------------- */

/* NVPTX rewrites characters PTX does not allow in names, so the launcher
 * could not find the entry by its MLIR name. */
static bool valid_kernel_name(MlirStringRef s) {
  if (s.length == 0 || s.length > MAX_KERNEL_NAME ||
      (s.data[0] >= '0' && s.data[0] <= '9'))
    return false;
  for (size_t i = 0; i < s.length; ++i) {
    char ch = s.data[i];
    if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9')))
      return false;
  }
  return true;
}

lf_status_t lf_contract_check(MlirModule module, const lf_signature_t *sig,
                              const char *chip, bool allow_inline_asm,
                              lf_contract_info_t *out) {
  memset(out, 0, sizeof(*out));
  checker_t c = {.info = out,
                 .sig = sig,
                 .chip = chip,
                 .allow_inline_asm = allow_inline_asm};
  MlirOperation top = mlirModuleGetOperation(module);
  MlirBlock body = mlirModuleGetBody(module);

  /* One gpu.module, nothing else at the top level. */
  int modules = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char name[128];
    op_name(op, name, sizeof(name));
    if (strcmp(name, "gpu.module") == 0 && modules++ == 0) {
      out->gpu_module = op;
      continue;
    }
    violation(out, mlirOperationGetLocation(op), "single-module",
              "'%s' at the top level: the reply must hold exactly one "
              "gpu.module and nothing beside it (no host code)",
              name);
  }
  if (modules == 0) {
    violation(out, mlirOperationGetLocation(top), "single-module",
              "the reply holds no gpu.module");
    return LF_OK;
  }

  /* Exactly one kernel. */
  MlirBlock mbody =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(out->gpu_module, 0));
  int kernels = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mbody);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char name[128];
    op_name(op, name, sizeof(name));
    if (strcmp(name, "gpu.func") != 0 ||
        mlirAttributeIsNull(
            mlirOperationGetAttributeByName(op, str("gpu.kernel"))))
      continue;
    if (kernels++ == 0) {
      out->kernel = op;
      MlirStringRef s = mlirStringAttrGetValue(
          mlirOperationGetAttributeByName(op, str("sym_name")));
      snprintf(out->kernel_name, sizeof(out->kernel_name), "%.*s",
               (int)s.length, s.data);
      if (!valid_kernel_name(s))
        violation(out, mlirOperationGetLocation(op), "kernel-name",
                  "the kernel name '%s' is not a plain identifier "
                  "([A-Za-z_][A-Za-z0-9_]*, at most %d characters); the PTX "
                  "entry must carry the same name",
                  out->kernel_name, MAX_KERNEL_NAME);
    } else {
      violation(out, mlirOperationGetLocation(op), "single-kernel",
                "a second kernel; the gpu.module must hold exactly one "
                "gpu.func with the 'kernel' attribute (helpers are func.func "
                "with a body, called with func.call)");
    }
  }
  if (kernels == 0)
    violation(out, mlirOperationGetLocation(out->gpu_module), "single-kernel",
              "the gpu.module holds no gpu.func with the 'kernel' attribute");

  mlirOperationWalk(out->gpu_module, check_op, &c, MlirWalkPreOrder);
  if (kernels > 0) {
    check_signature(&c, out->kernel);
    check_arguments(&c, out->kernel);
    check_launch_config(&c, out->kernel);
  }
  if (out->needs_sm90a && strcmp(chip, "sm_80") == 0)
    violation(out, mlirOperationGetLocation(out->gpu_module), "target",
              "the kernel uses wgmma/setmaxnreg (sm_90a only) but is built "
              "for sm_80; use mma.sync (nvgpu.mma.sync) there");
  return LF_OK;
}

static MlirWalkResult check_lowered_op(MlirOperation op, void *user_data) {
  lf_contract_info_t *info = user_data;
  char name[128];
  op_name(op, name, sizeof(name));
  if (strcmp(name, "llvm.func") == 0) {
    MlirRegion body = mlirOperationGetRegion(op, 0);
    MlirAttribute sym = mlirOperationGetAttributeByName(op, str("sym_name"));
    MlirStringRef s =
        mlirAttributeIsNull(sym) ? str("?") : mlirStringAttrGetValue(sym);
    if (mlirBlockIsNull(mlirRegionGetFirstBlock(body)) &&
        !(s.length > 5 && strncmp(s.data, "__nv_", 5) == 0))
      violation(info, mlirOperationGetLocation(op), "no-external-call",
                "the lowered kernel calls the external function '%.*s', "
                "which does not exist on the device (printf, malloc, a libm "
                "function or a runtime call such as memrefCopy)",
                (int)s.length, s.data);
  } else if (strcmp(name, "llvm.mlir.global") == 0) {
    MlirAttribute constant =
        mlirOperationGetAttributeByName(op, str("constant"));
    MlirAttribute space =
        mlirOperationGetAttributeByName(op, str("addr_space"));
    int64_t as =
        mlirAttributeIsNull(space) ? 0 : mlirIntegerAttrGetValueInt(space);
    if (mlirAttributeIsNull(constant) && as != 3)
      violation(info, mlirOperationGetLocation(op), "global-state",
                "the lowered kernel has a mutable global outside shared "
                "memory; it would keep state across launches");
  }
  return MlirWalkResultAdvance;
}

void lf_contract_check_lowered(lf_contract_info_t *info) {
  mlirOperationWalk(info->gpu_module, check_lowered_op, info, MlirWalkPreOrder);
}

/* ---- Hints --------------------------------------------------------------- */

typedef struct rule_hint_s {
  const char *rule;
  const char *hint;
} rule_hint_t;

static const rule_hint_t rule_hints[] = {
    {"single-module",
     "Reply with exactly one gpu.module (optionally inside "
     "'module attributes {gpu.container_module} { ... }') and nothing else: "
     "no host functions, no second module."},
    {"single-kernel",
     "Put exactly one 'gpu.func @name(...) kernel attributes {...}' in the "
     "gpu.module; helpers are func.func with a body and are called with "
     "func.call."},
    {"kernel-name",
     "Name the kernel with a plain identifier such as @fused_rmsnorm "
     "(letters, digits, underscores; not starting with a digit)."},
    {"launch-config",
     "Give the launch configuration on the kernel: "
     "attributes {known_block_size = array<i32: X, Y, Z>, known_grid_size = "
     "array<i32: X, Y, Z>}; at most 1024 threads per block; the grid must "
     "cover every output element."},
    {"cluster",
     "Declare a compile-time cluster shape on the kernel: "
     "known_cluster_size = array<i32: X, Y, Z> (or nvvm.cluster_dim), each "
     "dimension >= 1, at most 8 CTAs, dividing known_grid_size in every "
     "dimension; sm_90/sm_90a only. The ordinary launch honours it."},
    {"dynamic-shared-memory",
     "When using gpu.dynamic_shared_memory, declare its size in bytes on the "
     "kernel: llm_fuse.dynamic_shared_memory = N : i32 (at most 227 KiB on "
     "sm_90, 163 KiB on sm_80)."},
    {"dialects",
     "Write the kernel with gpu, scf, cf, arith, math, memref, vector, "
     "nvgpu, nvvm, affine and index ops only; func.func/func.call for "
     "helpers."},
    {"buffers-only",
     "Do not use tensors or linalg/tensor ops in the kernel: load from the "
     "memref arguments, compute on scalars or vectors, store to the output "
     "memrefs."},
    {"types",
     "Use i1-i64, index, f16, bf16, f32, f64 (and their vectors); f80/f128 "
     "do not exist on the GPU."},
    {"no-printf", "Remove gpu.printf/vector.print."},
    {"no-trap", "Remove cf.assert; guard the case with scf.if instead."},
    {"fpowi-exponent",
     "Give math.fpowi an i32 exponent (arith.trunci), or write the power as "
     "multiplications."},
    {"host-op",
     "Remove host-side ops (gpu.launch, gpu.launch_func, gpu.alloc, "
     "gpu.memcpy, gpu.wait, TMA descriptor creation): llm-fuse allocates the "
     "buffers and launches the kernel."},
    {"no-heap",
     "Replace memref.alloc with memref.alloca for small per-thread arrays, "
     "or with a workgroup attribution "
     "(gpu.func @k(...) workgroup(%buf : memref<N x f32, "
     "#gpu.address_space<workgroup>>) kernel) for shared memory."},
    {"no-inline-asm",
     "Replace inline assembly with nvvm/nvgpu ops (nvvm.shfl.sync, "
     "nvgpu.mma.sync, nvgpu.ldmatrix, nvgpu.device_async_copy, ...)."},
    {"no-pointer-cast",
     "Access buffers only through memref ops (memref.load/store, "
     "vector.load/store, nvgpu ops); never cast pointers to integers or "
     "back."},
    {"global-state",
     "Remove mutable globals: keep per-launch state in registers or shared "
     "memory; read-only tables may be 'memref.global \"private\" constant'."},
    {"no-external-call",
     "Call only func.func helpers defined in the same gpu.module; math "
     "functions come from the math dialect (math.exp, math.tanh, ...)."},
    {"read-only-inputs",
     "Never store to an input argument; write results only to the output "
     "arguments (the last ones)."},
    {"outputs-written",
     "Every output argument must be written completely: each element by "
     "some thread of the grid."},
    {"target", "Build wgmma/setmaxnreg kernels for sm_90a only; for sm_80 use "
               "nvgpu.mma.sync. Tensor maps (TMA) and clusters (nvvm.mapa, "
               "cluster barriers) need sm_90 or sm_90a; on sm_80 load tiles "
               "with nvgpu.device_async_copy."},
    {"tensor-map",
     "Declare tensor maps as trailing kernel arguments of type "
     "!nvgpu.tensormap.descriptor<tensor = memref<BOX x T, 3>, swizzle = ..., "
     "l2promo = ..., oob = zero, interleave = none>, after the inputs and "
     "outputs, and list on the kernel llm_fuse.tensor_maps = array<i32: P, "
     "...>: per map, the index of the buffer parameter it views. The box has "
     "the buffer's rank and element type (bf16, f16, f32, i8, i32); each box "
     "dimension is 1..256 and fits the buffer; the box's last dimension is a "
     "multiple of 16 bytes and, with a swizzle, at most the swizzle span; "
     "every buffer row stride is a multiple of 16 bytes."},
    {NULL, NULL}};

char *lf_contract_rule_hint(const char *rule, const lf_signature_t *sig) {
  if (rule && strcmp(rule, "signature") == 0 && sig) {
    lf_strbuf_t b;
    lf_strbuf_init(&b, LF_BUILD_HINT_CAP - 8);
    lf_status_free(lf_strbuf_append_str(
        &b, "Declare the kernel with exactly these arguments (inputs, then "
            "outputs): gpu.func @kernel("));
    size_t n = sig->num_inputs + sig->num_results;
    for (size_t i = 0; i < n; ++i)
      lf_status_free(lf_strbuf_appendf(&b, "%s%%arg%zu: %s", i ? ", " : "", i,
                                       sig->texts[i]));
    lf_status_free(lf_strbuf_append_str(&b, ") kernel"));
    return lf_strbuf_take(&b);
  }
  for (const rule_hint_t *h = rule_hints; rule && h->rule; ++h)
    if (strcmp(h->rule, rule) == 0)
      return strdup(h->hint);
  return NULL;
}
