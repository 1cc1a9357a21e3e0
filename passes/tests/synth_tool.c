/* synth_tool.c - test driver for the elementwise synthesizer (synth_ew.h;
 * lit_tests/synth).
 *
 *   lf_synth_tool MODULE.mlir [--out-dir DIR]
 *
 * For every func.func of MODULE with a body (in order; an outlined module
 * from `llm-fuse-opt --llm-fuse-outline` names each subgraph @sg_<hash>)
 * but the ones that call others, prints
 *   // synth @NAME: vector width V, G generic(s), grid B x 256, E elements
 *   <the kernel>
 * or
 *   // synth @NAME: refused: <why>
 * With --out-dir, also writes DIR/NAME.mlir (the kernel) and DIR/NAME.sig
 * (the function type, for llm-fuse-build-kernel --signature). Exit status 0
 * when every function was synthesized or refused, 1 on an internal error or
 * bad input, 2 on usage.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"
#include "passes/mlir_util.h"
#include "passes/synth_ew.h"

static bool calls_others(MlirOperation func) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(b);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (lf_op_is(op, "func.call"))
      return true;
  return false;
}

static int write_text(const char *dir, const char *name, const char *ext,
                      const char *text) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) {
    fprintf(stderr, "lf_synth_tool: cannot write %s\n", path);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *in = NULL, *out_dir = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--out-dir") && i + 1 < argc)
      out_dir = argv[++i];
    else if (!in && argv[i][0] != '-')
      in = argv[i];
    else
      in = NULL, i = argc;
  }
  if (!in) {
    fprintf(stderr, "usage: lf_synth_tool MODULE.mlir [--out-dir DIR]\n");
    return 2;
  }
  lf_strbuf_t src;
  lf_strbuf_init(&src, 64 << 20);
  lf_status_t st = lf_read_file(in, &src);
  if (st) {
    char buf[512];
    fprintf(stderr, "lf_synth_tool: %s\n", lf_status_format(st, buf, 512));
    lf_status_free(st);
    return 1;
  }
  if (out_dir && (st = lf_make_dirs(out_dir))) {
    lf_status_free(st);
    fprintf(stderr, "lf_synth_tool: cannot create %s\n", out_dir);
    return 1;
  }
  mlirRegisterAllPasses();
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(ctx);
  lf_strbuf_free(&src);
  /* Parsed from the file, so that refusals name its lines. */
  MlirModule module = mlirModuleCreateParseFromFile(ctx, lf_str(in));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "lf_synth_tool: %s does not parse\n", in);
    return 1;
  }
  int rc = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
       !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    if (!lf_op_is(f, "func.func") ||
        mlirBlockIsNull(
            mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))) ||
        calls_others(f))
      continue;
    MlirStringRef n = mlirStringAttrGetValue(
        mlirOperationGetAttributeByName(f, lf_str("sym_name")));
    char name[160];
    snprintf(name, sizeof(name), "%.*s", (int)n.length, n.data);
    lf_synth_ew_t k;
    st = lf_synth_ew(f, NULL, &k);
    if (st && lf_status_code(st) == LF_STATUS_UNIMPLEMENTED) {
      printf("// synth @%s: refused: %s\n", name, lf_status_message(st));
      lf_status_free(st);
      continue;
    }
    if (st) {
      char buf[512];
      fprintf(stderr, "lf_synth_tool: @%s: %s\n", name,
              lf_status_format(st, buf, sizeof(buf)));
      lf_status_free(st);
      rc = 1;
      continue;
    }
    printf("// synth @%s: vector width %d, %zu generic(s), grid %lld x %d, "
           "%lld elements\n%s",
           name, k.vector_width, k.generics, k.grid, LF_SYNTH_EW_BLOCK,
           k.elements, k.text);
    if (out_dir) {
      char *sig = lf_type_dup(mlirTypeAttrGetValue(
          mlirOperationGetAttributeByName(f, lf_str("function_type"))));
      rc |= write_text(out_dir, name, "mlir", k.text);
      rc |= write_text(out_dir, name, "sig", sig ? sig : "");
      free(sig);
    }
    lf_synth_ew_clear(&k);
  }
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return rc;
}
