/* codegen.c - lowered gpu.module to PTX with LLVM's NVPTX back end (through
 * the LLVM C API), and PTX to a cubin with ptxas.
 *
 * LLVM reports problems through its context's diagnostic handler and
 * LLVMErrorRefs; both become entries of the build's diagnostic sink here,
 * and nowhere else.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "builder/internal.h"
#include "mlir-c/Target/LLVMIR.h"
#include "llvm-c/Analysis.h"
#include "llvm-c/BitReader.h"
#include "llvm-c/Core.h"
#include "llvm-c/Error.h"
#include "llvm-c/Linker.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"
/* Every buffer a launcher passes is at least this aligned (the contract
 * says so; cuMemAlloc gives 256). */
#define PARAM_ALIGN 16
#define PTXAS_TIMEOUT_MS 120000
#define MAX_PTX_SIZE (64u << 20)
#define MAX_CUBIN_SIZE (64u << 20)
#define PTXAS_INFO_CAP 512

/* ---- Finding the CUDA toolkit -------------------------------------------- */

static bool is_executable(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
         access(path, X_OK) == 0;
}

static bool is_file(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* First candidate accepted by `ok`, malloc'ed; `suffix` goes after each
 * root. */
static char *first_of(const char *const *roots, size_t n, const char *suffix,
                      bool (*ok)(const char *)) {
  char path[4096];
  for (size_t i = 0; i < n; ++i) {
    if (!roots[i] || !roots[i][0])
      continue;
    snprintf(path, sizeof(path), "%s%s", roots[i], suffix);
    if (ok(path))
      return strdup(path);
  }
  return NULL;
}

/* An explicitly named file (request or environment) must exist; a search
 * may come up empty. */
static lf_status_t explicit_path(const char *what, const char *path,
                                 bool (*ok)(const char *), char **out) {
  if (!ok(path))
    return LF_STATUS(LF_STATUS_NOT_FOUND, "%s '%s' not found or not usable",
                     what, path);
  *out = strdup(path);
  return *out ? LF_OK
              : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

lf_status_t lf_find_ptxas(const char *requested, char **out_path) {
  *out_path = NULL;
  if (requested)
    return explicit_path("ptxas", requested, is_executable, out_path);
  const char *env = getenv("LLM_FUSE_PTXAS");
  if (env && env[0])
    return explicit_path("LLM_FUSE_PTXAS", env, is_executable, out_path);
  const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                         "/usr/local/cuda"};
  char *found = first_of(roots, 3, "/bin/ptxas", is_executable);
  const char *path = getenv("PATH");
  char *copy = !found && path ? strdup(path) : NULL;
  char *save = NULL;
  for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
       dir = strtok_r(NULL, ":", &save)) {
    const char *one[] = {dir};
    found = first_of(one, 1, "/ptxas", is_executable);
  }
  free(copy);
  *out_path = found;
  return LF_OK;
}

lf_status_t lf_find_libdevice(const char *requested, char **out_path) {
  *out_path = NULL;
  if (requested)
    return explicit_path("libdevice", requested, is_file, out_path);
  const char *env = getenv("LLM_FUSE_LIBDEVICE");
  if (env && env[0])
    return explicit_path("LLM_FUSE_LIBDEVICE", env, is_file, out_path);
  const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                         "/usr/local/cuda", "/usr/lib/cuda"};
  *out_path = first_of(roots, 4, "/nvvm/libdevice/libdevice.10.bc", is_file);
  return LF_OK;
}

/* ---- LLVM errors --------------------------------------------------------- */

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

static void init_nvptx(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

typedef struct llvm_diags_s {
  lf_diag_sink_t *sink;
  int errors;
} llvm_diags_t;

/* LLVM's diagnostics (NVPTX "unsupported" errors, warnings) go to the sink;
 * with a handler installed LLVM does not exit on errors. */
static void llvm_diag_handler(LLVMDiagnosticInfoRef info, void *user_data) {
  llvm_diags_t *d = user_data;
  LLVMDiagnosticSeverity severity = LLVMGetDiagInfoSeverity(info);
  if (severity != LLVMDSError && severity != LLVMDSWarning)
    return;
  char *text = LLVMGetDiagInfoDescription(info);
  lf_diag_sink_add(d->sink, severity == LLVMDSError ? "error" : "warning", 0, 0,
                   text, strlen(text));
  LLVMDisposeMessage(text);
  if (severity == LLVMDSError)
    ++d->errors;
}

/* Records an LLVMErrorRef (consumed) or a message (disposed) as an error. */
static void add_llvm_error(lf_diag_sink_t *sink, LLVMErrorRef err,
                           char *message) {
  char *text = err ? LLVMGetErrorMessage(err) : message;
  if (text)
    lf_diag_sink_add(sink, "error", 0, 0, text, strlen(text));
  if (err)
    LLVMDisposeErrorMessage(text);
  else if (message)
    LLVMDisposeMessage(message);
}

/* ---- Module preparation -------------------------------------------------- */

static bool needs_libdevice(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    size_t len = 0;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && len > 5 && strncmp(name, "__nv_", 5) == 0)
      return true;
  }
  return false;
}

/* In link_needed.cpp: LLVMLinkModules2 with Linker::Flags::LinkOnlyNeeded
 * (consumes src; true on failure). */
bool lf_link_only_needed(LLVMModuleRef dst, LLVMModuleRef src);

/* In streaming_loads.cpp: the kernel's nontemporal loads of its buffers
 * become evict-first streaming loads; returns how many (in *skipped, how
 * many nontemporal loads stayed plain). */
unsigned lf_streaming_loads(LLVMModuleRef m, LLVMValueRef kernel,
                            unsigned *skipped);

/* Links the libdevice functions `m` calls into `m`. The library is read
 * lazily and linked "only needed", as clang links it: only the functions
 * the kernel reaches are read from the bitcode (reading and linking all
 * ~350 took ~55 ms of every build that calls a math function; the PTX is
 * the same). Everything but the kernel is then made internal. */
static lf_status_t link_libdevice(LLVMContextRef ctx, LLVMModuleRef m,
                                  LLVMTargetDataRef layout, const char *path,
                                  lf_diag_sink_t *sink, bool *ok) {
  *ok = false;
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
    add_llvm_error(sink, NULL, msg);
    return LF_OK;
  }
  LLVMModuleRef lib = NULL;
  /* On success the lazy module owns the buffer. */
  if (LLVMGetBitcodeModuleInContext2(ctx, buf, &lib)) {
    LLVMDisposeMemoryBuffer(buf);
    lf_diag_sink_add(sink, "error", 0, 0, "cannot read libdevice bitcode",
                     strlen("cannot read libdevice bitcode"));
    return LF_OK;
  }
  LLVMSetTarget(lib, NVPTX_TRIPLE);
  LLVMSetModuleDataLayout(lib, layout);
  if (lf_link_only_needed(m, lib)) { /* consumes lib */
    lf_diag_sink_add(sink, "error", 0, 0, "linking libdevice failed",
                     strlen("linking libdevice failed"));
    return LF_OK;
  }
  *ok = true;
  return LF_OK;
}

static void internalize_helpers(LLVMModuleRef m, LLVMValueRef kernel) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (f != kernel && !LLVMIsDeclaration(f))
      LLVMSetLinkage(f, LLVMInternalLinkage);
}

/* Pointer parameters of the kernel: distinct, 16-byte aligned buffers;
 * tensor maps (from first_map on): a CUtensorMap passed by value, which
 * NVPTX emits as `.param .align 64 .b8 NAME[128]`. Marked grid constant,
 * the kernel uses the parameter's own (generic) address, as TMA
 * instructions need, instead of a local copy. */
static void annotate_params(LLVMContextRef ctx, LLVMValueRef kernel,
                            size_t first_map, size_t num_maps) {
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
  unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
  unsigned n = LLVMCountParams(kernel);
  for (unsigned i = 0; i < n; ++i) {
    LLVMValueRef p = LLVMGetParam(kernel, i);
    if (LLVMGetTypeKind(LLVMTypeOf(p)) != LLVMPointerTypeKind)
      continue;
    if (i >= first_map && i < first_map + num_maps) {
      LLVMTypeRef map = LLVMArrayType2(LLVMInt8TypeInContext(ctx), 128);
      LLVMAddAttributeAtIndex(kernel, i + 1,
                              LLVMCreateTypeAttribute(ctx, byval, map));
      LLVMAddAttributeAtIndex(kernel, i + 1,
                              LLVMCreateEnumAttribute(ctx, align, 64));
      LLVMAddAttributeAtIndex(
          kernel, i + 1,
          LLVMCreateStringAttribute(ctx, "nvvm.grid_constant", 18, "", 0));
      continue;
    }
    LLVMAddAttributeAtIndex(kernel, i + 1,
                            LLVMCreateEnumAttribute(ctx, noalias, 0));
    LLVMAddAttributeAtIndex(kernel, i + 1,
                            LLVMCreateEnumAttribute(ctx, align, PARAM_ALIGN));
  }
}

/* MLIR lowers gpu.dynamic_shared_memory to an internal, zero-sized shared
 * global, which NVPTX emits as a 1-byte *static* shared variable: the
 * kernel's "dynamic" memory would then alias whatever ptxas lays out after
 * it. Declared extern it becomes `.extern .shared .b8 name[]`, the start of
 * the dynamic shared memory, as CUDA's `extern __shared__` does. */
static void externalize_dynamic_shared(LLVMModuleRef m) {
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g)) {
    LLVMTypeRef t = LLVMGlobalGetValueType(g);
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3 ||
        LLVMGetTypeKind(t) != LLVMArrayTypeKind || LLVMGetArrayLength2(t) != 0)
      continue;
    LLVMSetInitializer(g, NULL);
    LLVMSetLinkage(g, LLVMExternalLinkage);
  }
}

/* An undefined function left after linking cannot be resolved on the
 * device. Returns the number found (each reported). */
static int undefined_functions(LLVMModuleRef m, lf_diag_sink_t *sink) {
  int found = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    if (!LLVMIsDeclaration(f) || LLVMGetIntrinsicID(f) != 0)
      continue;
    size_t len = 0;
    const char *name = LLVMGetValueName2(f, &len);
    char msg[320];
    snprintf(msg, sizeof(msg),
             "the kernel needs '%.*s', which neither the kernel nor "
             "libdevice defines",
             (int)(len > 200 ? 200 : len), name);
    lf_diag_sink_add(sink, "error", 0, 0, msg, strlen(msg));
    ++found;
  }
  return found;
}

/* ---- PTX ----------------------------------------------------------------- */

lf_status_t lf_codegen_ptx(MlirOperation gpu_module, const char *kernel_name,
                           const char *chip, const char *libdevice,
                           size_t first_map, size_t num_maps,
                           lf_diag_sink_t *sink, lf_build_result_t *result) {
  lf_status_t status = LF_OK;
  pthread_once(&nvptx_once, init_nvptx);

  LLVMContextRef ctx = LLVMContextCreate();
  llvm_diags_t diags = {.sink = sink};
  LLVMContextSetDiagnosticHandler(ctx, llvm_diag_handler, &diags);

  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &target, &msg)) {
    status = LF_STATUS(LF_STATUS_INTERNAL, "NVPTX target unavailable: %s",
                       msg ? msg : "?");
    LLVMDisposeMessage(msg);
    goto out_context;
  }
  /* Empty features: LLVM picks the lowest PTX ISA version the chip needs
   * (7.0 for sm_80, 7.8 for sm_90, 8.0 for sm_90a), so the PTX loads on the
   * oldest driver that knows the chip. TMA (cp.async.bulk.tensor,
   * prefetch.tensormap) needs PTX 8.0: NVPTX cannot select it below. */
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
      target, NVPTX_TRIPLE, chip, num_maps > 0 ? "+ptx80" : "",
      LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) {
    status = LF_STATUS(LF_STATUS_INTERNAL,
                       "cannot create an NVPTX target "
                       "machine for %s",
                       chip);
    goto out_context;
  }
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);

  LLVMModuleRef m = mlirTranslateModuleToLLVMIR(gpu_module, ctx);
  if (!m) {
    if (sink->errors == 0)
      lf_diag_sink_add(sink, "error", 0, 0, "translation to LLVM IR failed",
                       strlen("translation to LLVM IR failed"));
    status = lf_build_result_fail(result, LF_BUILD_LOWERING,
                                  "translation to LLVM IR failed: %s",
                                  sink->first_raw);
    goto out_layout;
  }
  LLVMSetTarget(m, NVPTX_TRIPLE);
  LLVMSetModuleDataLayout(m, layout);

  LLVMValueRef kernel = LLVMGetNamedFunction(m, kernel_name);
  if (!kernel) {
    status = LF_STATUS(LF_STATUS_INTERNAL,
                       "kernel '%s' missing from the LLVM module", kernel_name);
    goto out_module;
  }
  annotate_params(ctx, kernel, first_map, num_maps);
  externalize_dynamic_shared(m);

  if (needs_libdevice(m)) {
    bool linked = false;
    if (!libdevice) {
      const char *text = "math functions need CUDA's libdevice "
                         "(nvvm/libdevice/libdevice.10.bc), which was not "
                         "found; set CUDA_HOME or LLM_FUSE_LIBDEVICE";
      lf_diag_sink_add(sink, "error", 0, 0, text, strlen(text));
    } else {
      status = link_libdevice(ctx, m, layout, libdevice, sink, &linked);
      if (status)
        goto out_module;
    }
    if (!linked) {
      status =
          lf_build_result_fail(result, LF_BUILD_LOWERING,
                               "linking libdevice failed: %s", sink->first_raw);
      goto out_module;
    }
  }
  internalize_helpers(m, kernel);

  char *verify_msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &verify_msg)) {
    add_llvm_error(sink, NULL, verify_msg);
    status = lf_build_result_fail(result, LF_BUILD_LOWERING,
                                  "the generated LLVM IR is invalid: %s",
                                  sink->first_raw);
    goto out_module;
  }
  LLVMDisposeMessage(verify_msg);

  LLVMPassBuilderOptionsRef options = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(m, "globaldce,default<O3>", tm, options);
  LLVMDisposePassBuilderOptions(options);
  if (err) {
    add_llvm_error(sink, err, NULL);
    status =
        lf_build_result_fail(result, LF_BUILD_LOWERING,
                             "LLVM optimization failed: %s", sink->first_raw);
    goto out_module;
  }

  /* After O3: NVVMReflect has resolved __nvvm_reflect and dead library
   * declarations are gone. */
  if (undefined_functions(m, sink) > 0) {
    status = lf_build_result_fail(result, LF_BUILD_LOWERING,
                                  "unresolved function: %s", sink->first_raw);
    goto out_module;
  }

  /* Streaming loads need createpolicy (PTX 7.4); the sm_80 PTX is 7.0, so
   * there a nontemporal load stays a plain load. */
  if (strncmp(chip, "sm_", 3) == 0 && atoi(chip + 3) >= 90) {
    unsigned plain = 0;
    lf_streaming_loads(m, kernel, &plain);
    if (plain > 0) {
      char text[200];
      int n = snprintf(text, sizeof(text),
                       "%u nontemporal load(s) stay plain loads: not a "
                       "2/4/8/16-byte load aligned to its size from a "
                       "buffer parameter",
                       plain);
      lf_diag_sink_add(sink, "note", 0, 0, text, (size_t)n);
    }
  }

  LLVMMemoryBufferRef ptx = NULL;
  char *emit_msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &emit_msg,
                                          &ptx) ||
      diags.errors > 0) {
    if (emit_msg)
      add_llvm_error(sink, NULL, emit_msg);
    if (ptx)
      LLVMDisposeMemoryBuffer(ptx);
    status = lf_build_result_fail(result, LF_BUILD_LOWERING,
                                  "NVPTX code generation failed: %s",
                                  sink->first_raw);
    goto out_module;
  }
  LLVMDisposeMessage(emit_msg);
  size_t size = LLVMGetBufferSize(ptx);
  if (size > MAX_PTX_SIZE) {
    LLVMDisposeMemoryBuffer(ptx);
    status = lf_build_result_fail(result, LF_BUILD_LOWERING,
                                  "the PTX is %zu bytes; the limit is %u", size,
                                  MAX_PTX_SIZE);
    goto out_module;
  }
  result->ptx = malloc(size + 1);
  if (!result->ptx) {
    LLVMDisposeMemoryBuffer(ptx);
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_module;
  }
  memcpy(result->ptx, LLVMGetBufferStart(ptx), size);
  /* The buffer may or may not end in a NUL; the text must not. */
  while (size > 0 && result->ptx[size - 1] == '\0')
    --size;
  result->ptx[size] = '\0';
  result->ptx_size = size;
  LLVMDisposeMemoryBuffer(ptx);

out_module:
  LLVMDisposeModule(m);
out_layout:
  LLVMDisposeTargetData(layout);
  LLVMDisposeTargetMachine(tm);
out_context:
  LLVMContextDispose(ctx);
  return status;
}

/* ---- cubin --------------------------------------------------------------- */

/* "Used N registers, ..." and the stack/spill line of ptxas -v. */
static void ptxas_summary(const char *log, size_t size, char **out) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, PTXAS_INFO_CAP);
  const char *p = log, *end = log + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    const char *from = memmem(p, len, "Used ", 5);
    if (!from && memmem(p, len, "bytes stack frame", 17))
      for (from = p; from < p + len && (*from == ' ' || *from == '\t');)
        ++from;
    if (from)
      lf_status_free(lf_strbuf_appendf(&b, "%s%.*s",
                                       lf_strbuf_len(&b) ? "; " : "",
                                       (int)(p + len - from), from));
    p = nl ? nl + 1 : end;
  }
  *out = lf_strbuf_len(&b) ? lf_strbuf_take(&b) : NULL;
  lf_strbuf_free(&b);
}

static void remove_dir(const char *dir) {
  const char *names[] = {"kernel.ptx", "kernel.cubin", "ptxas.log"};
  char path[4200];
  for (size_t i = 0; i < 3; ++i) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

lf_status_t lf_codegen_cubin(const char *ptxas_path, const char *chip,
                             lf_diag_sink_t *sink, lf_build_result_t *result) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s/llm-fuse-ptxas.XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s", dir,
                     strerror(errno));
  char ptx[4200], cubin[4200], log[4200], arch[32];
  snprintf(ptx, sizeof(ptx), "%s/kernel.ptx", dir);
  snprintf(cubin, sizeof(cubin), "%s/kernel.cubin", dir);
  snprintf(log, sizeof(log), "%s/ptxas.log", dir);
  snprintf(arch, sizeof(arch), "-arch=%s", chip);

  lf_strbuf_t out;
  lf_strbuf_init(&out, 1u << 20);
  lf_status_t status = lf_write_file_plain(ptx, result->ptx, result->ptx_size);
  if (status)
    goto out_remove;
  const char *argv[] = {ptxas_path, arch, "-O3", "-v", ptx, "-o", cubin, NULL};
  lf_subprocess_t spec = {.argv = argv,
                          .output_path = log,
                          .timeout_ms = PTXAS_TIMEOUT_MS,
                          .same_group = true};
  lf_subprocess_outcome_t outcome;
  status = lf_subprocess_run(&spec, &outcome);
  if (status)
    goto out_remove;
  lf_status_free(lf_read_file(log, &out)); /* a missing log reads as "" */
  if (outcome.timed_out || outcome.signaled || outcome.exit_code != 0) {
    /* ptxas's own complaints only, not its -v statistics. */
    lf_strbuf_t complaints;
    lf_strbuf_init(&complaints, 64 * 1024);
    for (const char *p = lf_strbuf_cstr(&out); *p;) {
      size_t n = strcspn(p, "\n");
      if (memmem(p, n, "error", 5) || memmem(p, n, "warning", 7) ||
          memmem(p, n, "fatal", 5))
        lf_status_free(lf_strbuf_appendf(&complaints, "%.*s\n", (int)n, p));
      p += n + (p[n] == '\n');
    }
    lf_diag_sink_add_output(sink, lf_strbuf_cstr(&complaints),
                            lf_strbuf_len(&complaints), 6, true);
    lf_strbuf_free(&complaints);
    if (outcome.timed_out)
      status =
          lf_build_result_fail(result, LF_BUILD_PTXAS, "ptxas ran past %d s",
                               PTXAS_TIMEOUT_MS / 1000);
    else if (outcome.signaled)
      status = lf_build_result_fail(
          result, LF_BUILD_PTXAS, "ptxas died with signal %d", outcome.signal);
    else
      status = lf_build_result_fail(result, LF_BUILD_PTXAS,
                                    "ptxas failed (exit %d): %s",
                                    outcome.exit_code, sink->first_raw);
    goto out_remove;
  }
  ptxas_summary(lf_strbuf_cstr(&out), lf_strbuf_len(&out), &result->ptxas_info);
  lf_strbuf_t bin;
  lf_strbuf_init(&bin, MAX_CUBIN_SIZE);
  status = lf_read_file(cubin, &bin);
  if (status) {
    lf_strbuf_free(&bin);
    goto out_remove;
  }
  result->cubin_size = lf_strbuf_len(&bin);
  result->cubin = (uint8_t *)lf_strbuf_take(&bin);
  if (!result->cubin)
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");

out_remove:
  lf_strbuf_free(&out);
  remove_dir(dir);
  return status;
}
