/* llm-fuse-compile - compiles a tensor-level model (linalg on tensors or
 * TOSA) ahead of time into an x86-64 object file that runs it on an NVIDIA
 * GPU through libllm_fuse_rt, plus a C header declaring its entry points.
 * The pipeline is in aot.h.
 *
 *   llm-fuse-compile model.mlir -o model.o [--header model.h] [--chip sm_90]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"
#include "tools/llm-fuse-compile/aot.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: llm-fuse-compile MODEL.mlir -o OUT.o [options]\n"
      "Compiles the public functions of MODEL (linalg on tensors, or TOSA)\n"
      "into an x86-64 object that runs them on an NVIDIA GPU through\n"
      "libllm_fuse_rt, and writes a C header declaring them.\n"
      "\n"
      "  -o FILE                 the object file (required)\n"
      "  --header FILE           the header (default: FILE with .h for .o)\n"
      "  --chip sm_80|sm_90|sm_90a  the GPU the kernels are for (sm_90)\n"
      "  --format auto|ptx|cubin|fatbin  how kernels are embedded (auto:\n"
      "                          fatbin when the CUDA toolkit's ptxas is\n"
      "                          found, else ptx, JIT-compiled at load)\n"
      "  --no-llm-fuse           skip the llm-fuse pass (run by default)\n"
      "  --llm-fuse-options STR  options of the llm-fuse pass, e.g.\n"
      "                          'provider=none report=r.json'\n"
      "  --emit obj|llvm|mlir    write the object (default), the LLVM IR, or\n"
      "                          the LLVM-dialect module instead\n"
      "  --verbose               also print remarks\n"
      "\n"
      "Entry points take device memory: see the generated header.\n"
      "Exit status: 0 compiled, 1 the model could not be compiled, 2 usage.\n");
}

static void print_to_stderr(MlirStringRef s, void *user_data) {
  (void)user_data;
  fwrite(s.data, 1, s.length, stderr);
}

/* "file:line:col: " for a file location (the first of a fused one). */
static void print_location(MlirLocation loc) {
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirStringRef f =
        mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
    fprintf(stderr, "%.*s:%d:%d: ", (int)f.length, f.data,
            mlirLocationFileLineColRangeGetStartLine(loc),
            mlirLocationFileLineColRangeGetStartColumn(loc));
    return;
  }
  if (mlirLocationIsAFused(loc) && mlirLocationFusedGetNumLocations(loc) > 0) {
    MlirLocation first[1];
    unsigned n = mlirLocationFusedGetNumLocations(loc);
    MlirLocation *all = calloc(n, sizeof(*all));
    if (all) {
      mlirLocationFusedGetLocations(loc, all);
      first[0] = all[0];
      free(all);
      print_location(first[0]);
      return;
    }
  }
  if (mlirLocationIsACallSite(loc)) {
    print_location(mlirLocationCallSiteGetCallee(loc));
    return;
  }
  if (mlirLocationIsAName(loc)) {
    print_location(mlirLocationNameGetChildLoc(loc));
    return;
  }
  mlirLocationPrint(loc, print_to_stderr, NULL);
  fputs(": ", stderr);
}

static void note_prefix_cb(MlirStringRef s, void *user_data) {
  char *prefix = user_data;
  size_t have = strlen(prefix), room = 31 - have;
  size_t n = s.length < room ? s.length : room;
  memcpy(prefix + have, s.data, n);
  prefix[have + n] = 0;
}

static void print_diagnostic(MlirDiagnostic d, bool verbose) {
  static const char *const sev[] = {"error", "warning", "note", "remark"};
  MlirDiagnosticSeverity s = mlirDiagnosticGetSeverity(d);
  /* MLIR attaches the failing op, whole, as a note: for --verbose only. */
  char prefix[32] = "";
  mlirDiagnosticPrint(d, note_prefix_cb, prefix);
  if (!verbose && s == MlirDiagnosticNote &&
      !strncmp(prefix, "see current operation", 21))
    return;
  print_location(mlirDiagnosticGetLocation(d));
  fprintf(stderr, "%s: ", s <= MlirDiagnosticRemark ? sev[s] : "?");
  mlirDiagnosticPrint(d, print_to_stderr, NULL);
  fputc('\n', stderr);
  for (intptr_t i = 0; i < mlirDiagnosticGetNumNotes(d); ++i)
    print_diagnostic(mlirDiagnosticGetNote(d, i), verbose);
}

static MlirLogicalResult diag_handler(MlirDiagnostic d, void *user_data) {
  bool verbose = *(bool *)user_data;
  if (verbose || mlirDiagnosticGetSeverity(d) != MlirDiagnosticRemark)
    print_diagnostic(d, verbose);
  return mlirLogicalResultSuccess();
}

/* "model.o" -> "model.h"; anything else gets ".h" appended. */
static char *default_header(const char *out) {
  size_t n = strlen(out);
  char *h = malloc(n + 3);
  if (!h)
    return NULL;
  memcpy(h, out, n + 1);
  if (n > 2 && strcmp(out + n - 2, ".o") == 0)
    h[n - 1] = 'h';
  else
    strcat(h, ".h");
  return h;
}

/* LLM_FUSE_<BASENAME>_H from the header's file name. */
static void guard_name(const char *header, char *out, size_t size) {
  const char *base = strrchr(header, '/');
  base = base ? base + 1 : header;
  size_t j = (size_t)snprintf(out, size, "LLM_FUSE_");
  for (size_t i = 0; base[i] && j + 1 < size; ++i, ++j) {
    char c = base[i];
    out[j] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A')
             : (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c
                                                                : '_';
  }
  out[j < size ? j : size - 1] = 0;
}

static int write_out(const char *path, const void *data, size_t size) {
  lf_status_t s = lf_write_file_atomic(path, data, size);
  if (s) {
    fprintf(stderr, "llm-fuse-compile: %s\n", lf_status_message(s));
    lf_status_free(s);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *input = NULL, *output = NULL, *header = NULL;
  bool verbose = false;
  lf_aot_options_t opt = {.chip = "sm_90",
                          .format = LF_AOT_FORMAT_AUTO,
                          .emit = LF_AOT_EMIT_OBJECT,
                          .run_llm_fuse = true};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (!strcmp(a, "-o") && has_value)
      output = argv[++i];
    else if (!strcmp(a, "--header") && has_value)
      header = argv[++i];
    else if ((!strcmp(a, "--chip") || !strcmp(a, "--arch")) && has_value) {
      opt.chip = argv[++i];
      if (strcmp(opt.chip, "sm_80") && strcmp(opt.chip, "sm_90") &&
          strcmp(opt.chip, "sm_90a")) {
        fprintf(stderr,
                "llm-fuse-compile: --chip must be sm_80, sm_90 or "
                "sm_90a, not '%s'\n",
                opt.chip);
        return 2;
      }
    } else if (!strcmp(a, "--format") && has_value) {
      const char *f = argv[++i];
      if (!strcmp(f, "auto"))
        opt.format = LF_AOT_FORMAT_AUTO;
      else if (!strcmp(f, "ptx"))
        opt.format = LF_AOT_FORMAT_PTX;
      else if (!strcmp(f, "cubin"))
        opt.format = LF_AOT_FORMAT_CUBIN;
      else if (!strcmp(f, "fatbin"))
        opt.format = LF_AOT_FORMAT_FATBIN;
      else {
        fprintf(stderr,
                "llm-fuse-compile: --format must be auto, ptx, cubin "
                "or fatbin, not '%s'\n",
                f);
        return 2;
      }
    } else if (!strcmp(a, "--emit") && has_value) {
      const char *e = argv[++i];
      if (!strcmp(e, "obj"))
        opt.emit = LF_AOT_EMIT_OBJECT;
      else if (!strcmp(e, "llvm"))
        opt.emit = LF_AOT_EMIT_LLVM;
      else if (!strcmp(e, "mlir"))
        opt.emit = LF_AOT_EMIT_MLIR;
      else {
        fprintf(stderr,
                "llm-fuse-compile: --emit must be obj, llvm or mlir, "
                "not '%s'\n",
                e);
        return 2;
      }
    } else if (!strcmp(a, "--no-llm-fuse"))
      opt.run_llm_fuse = false;
    else if (!strcmp(a, "--llm-fuse-options") && has_value)
      opt.llm_fuse_options = argv[++i];
    else if (!strcmp(a, "--verbose"))
      verbose = true;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr,
              "llm-fuse-compile: unknown option or missing value: "
              "%s\n",
              a);
      usage(stderr);
      return 2;
    } else if (input) {
      fprintf(stderr, "llm-fuse-compile: one model at a time (%s, %s)\n", input,
              a);
      return 2;
    } else
      input = a;
  }
  if (!input || !output) {
    usage(stderr);
    return 2;
  }
  char *default_h = header ? NULL : default_header(output);
  if (!header)
    header = default_h;

  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterAllPasses();
  mlirContextAttachDiagnosticHandler(ctx, diag_handler, &verbose, NULL);

  int rc = 1;
  MlirModule module =
      mlirModuleCreateParseFromFile(ctx, mlirStringRefCreateFromCString(input));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "llm-fuse-compile: %s could not be read or parsed\n",
            input);
    goto out_context;
  }
  if (!mlirOperationVerify(mlirModuleGetOperation(module))) {
    fprintf(stderr, "llm-fuse-compile: %s does not verify\n", input);
    goto out_module;
  }
  lf_aot_result_t res;
  lf_status_t s = lf_aot_compile(module, &opt, &res);
  if (s) {
    fprintf(stderr, "llm-fuse-compile: %s: %s\n", input, lf_status_message(s));
    lf_status_free(s);
    goto out_module;
  }
  char guard[512];
  guard_name(header, guard, sizeof(guard));
  char *h = lf_aot_header(&res, input, guard);
  if (h && !write_out(output, res.output, res.output_size) &&
      !write_out(header, h, strlen(h))) {
    rc = 0;
    for (size_t i = 0; i < res.num_entries; ++i)
      fprintf(stderr,
              "llm-fuse-compile: @%s: %zu input(s), %zu output(s), kernels "
              "for %s as %s\n",
              res.entries[i].name, res.entries[i].num_inputs,
              res.entries[i].num_outputs, res.chip, res.format);
  } else if (!h)
    fprintf(stderr, "llm-fuse-compile: out of memory\n");
  free(h);
  lf_aot_result_free(&res);
out_module:
  mlirModuleDestroy(module);
out_context:
  mlirContextDestroy(ctx);
  free(default_h);
  return rc;
}
