/* llm-fuse-reference - lowers every outlined subgraph of a module by the
 * upstream default GPU path (passes/reference.h) and writes, per subgraph,
 * the plan (plan.json: temporaries, launches, arguments) and one gpu.module
 * per kernel (k<N>.mlir). With --build, also PTX and, when ptxas is found,
 * cubins for --chip, through the kernel builder's code generation. A
 * subgraph that accumulates in bf16/f16 also gets its opmath truth (the
 * body computed in f32) in <subgraph>/truth/; --print-opmath prints the
 * promoted function that truth is lowered from. A subgraph with an f16
 * result also gets its wide plan (the promotion with f32 results, not
 * rounded) in <subgraph>/wide/ (docs/verification.md, "The f16 overflow
 * boundary").
 *
 *   llm-fuse-reference [--out-dir DIR] [--build] [--chip sm_90]
 *                      [--print-opmath] OUTLINED.mlir
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"
#include "passes/reference.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: llm-fuse-reference [--out-dir DIR] [--build] [--chip CHIP] "
      "[--print-opmath] OUTLINED.mlir\n"
      "Lowers each outlined subgraph (func.func with llm_fuse.fingerprint)\n"
      "by the upstream default GPU path and writes DIR/<subgraph>/plan.json\n"
      "and k<N>.mlir; --build also writes k<N>.ptx (and k<N>.cubin with\n"
      "ptxas) for CHIP (sm_90 default, sm_90a, sm_80). A subgraph that\n"
      "accumulates in bf16/f16 also gets its opmath truth reference (the\n"
      "same in f32) in DIR/<subgraph>/truth/; --print-opmath prints the\n"
      "promoted function on stdout. A subgraph with an f16 result also\n"
      "gets its wide plan (f32 results, not rounded) in\n"
      "DIR/<subgraph>/wide/.\n"
      "Exit status: 0 all lowered (and built), 1 some failed, 2 usage.\n");
}

static void print_to_stderr(MlirStringRef s, void *user_data) {
  (void)user_data;
  fwrite(s.data, 1, s.length, stderr);
}

static void print_to_stdout(MlirStringRef s, void *user_data) {
  (void)user_data;
  fwrite(s.data, 1, s.length, stdout);
}

static MlirLogicalResult diag_handler(MlirDiagnostic d, void *user_data) {
  (void)user_data;
  mlirDiagnosticPrint(d, print_to_stderr, NULL);
  fputc('\n', stderr);
  return mlirLogicalResultSuccess();
}

int main(int argc, char **argv) {
  const char *out_dir = "reference", *chip = "sm_90", *input = NULL;
  bool build = false, print_opmath = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--out-dir") && i + 1 < argc)
      out_dir = argv[++i];
    else if (!strcmp(argv[i], "--chip") && i + 1 < argc)
      chip = argv[++i];
    else if (!strcmp(argv[i], "--build"))
      build = true;
    else if (!strcmp(argv[i], "--print-opmath"))
      print_opmath = true;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (argv[i][0] == '-' || input) {
      usage(stderr);
      return 2;
    } else
      input = argv[i];
  }
  if (!input) {
    usage(stderr);
    return 2;
  }
  lf_strbuf_t text;
  lf_strbuf_init(&text, (size_t)1 << 30);
  lf_status_t s = lf_read_file(input, &text);
  if (s) {
    fprintf(stderr, "llm-fuse-reference: %s\n", lf_status_message(s));
    lf_status_free(s);
    lf_strbuf_free(&text);
    return 2;
  }
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterAllPasses();
  mlirContextAttachDiagnosticHandler(ctx, diag_handler, NULL, NULL);
  MlirModule module = mlirModuleCreateParse(
      ctx, mlirStringRefCreate(lf_strbuf_cstr(&text), lf_strbuf_len(&text)));
  lf_strbuf_free(&text);
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "llm-fuse-reference: %s does not parse\n", input);
    mlirContextDestroy(ctx);
    return 1;
  }
  int failures = 0, count = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (mlirAttributeIsNull(mlirOperationGetAttributeByName(
            op, mlirStringRefCreateFromCString("llm_fuse.fingerprint"))))
      continue;
    ++count;
    lf_reference_t ref;
    s = lf_reference_lower(op, &ref);
    if (s) {
      fprintf(stderr, "llm-fuse-reference: %s\n", lf_status_message(s));
      lf_status_free(s);
      ++failures;
      continue;
    }
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s", out_dir, ref.subgraph);
    printf("%s: %zu kernel(s), %zu temporar%s, %zu step(s)\n", ref.subgraph,
           ref.num_kernels, ref.num_temps, ref.num_temps == 1 ? "y" : "ies",
           ref.num_steps);
    if (ref.truth)
      printf("  truth: %s, %s: %zu kernel(s), %zu temporar%s, %zu step(s)\n",
             LF_REFERENCE_OPMATH_KIND, ref.truth_reason, ref.truth->num_kernels,
             ref.truth->num_temps, ref.truth->num_temps == 1 ? "y" : "ies",
             ref.truth->num_steps);
    else if (ref.truth_note)
      printf("  truth: none, %s: %s\n", ref.truth_reason, ref.truth_note);
    if (print_opmath && ref.truth_reason) {
      MlirOperation promoted;
      s = lf_reference_promote(op, &promoted);
      if (!s) {
        mlirOperationPrint(promoted, print_to_stdout, NULL);
        fputc('\n', stdout);
        mlirOperationDestroy(promoted);
      }
      lf_status_free(s);
    }
    if (ref.wide)
      printf("  wide: %s: %zu kernel(s), %zu temporar%s, %zu step(s)\n",
             LF_REFERENCE_WIDE_KIND, ref.wide->num_kernels, ref.wide->num_temps,
             ref.wide->num_temps == 1 ? "y" : "ies", ref.wide->num_steps);
    else if (ref.wide_note)
      printf("  wide: none: %s\n", ref.wide_note);
    double ms = 0;
    s = lf_make_dirs(dir);
    if (!s)
      s = lf_reference_stage(&ref, chip, dir, build, &ms);
    if (s) {
      fprintf(stderr, "llm-fuse-reference: %s: %s\n", dir, lf_status_message(s));
      lf_status_free(s);
      ++failures;
    } else if (build) {
      printf("  built %zu kernel(s) for %s in %.0f ms\n", ref.num_kernels, chip,
             ms);
    }
    lf_reference_free(&ref);
  }
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  printf("%d subgraph(s), %d failure(s)\n", count, failures);
  return failures ? 1 : 0;
}
