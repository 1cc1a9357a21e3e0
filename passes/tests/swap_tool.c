/* swap_tool.c - test driver for lf_swap_in (passes/swap.h).
 *
 *   lf_swap_tool [--defer] MODULE.mlir FUNCTION KERNEL.mlir [CHIP]
 *
 * Builds KERNEL.mlir against FUNCTION's signature in the builder's child
 * process, swaps it into FUNCTION, verifies the module and prints it. With
 * --defer, puts it behind the runtime guard of deferred verification
 * instead (passes/defer.h: the reference is lowered and staged, ptxas
 * permitting; $LF_DEFER_RECORD is the compile-time record path).
 * $LF_SWAP_TOOL_ADD_TMAP="P:DTYPE:D0xD1..:B0xB1..:SWIZZLE" appends a tensor
 * map of operand P to the built kernel's parameters, as the builder
 * describes one (the launch's host IR can be tested on any kernel). The
 * compiler swaps only verified kernels; this tool exists so that the IR of
 * a swap can be tested (and lowered by llm-fuse-compile) without a GPU.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "llm_client/tune.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"
#include "passes/defer.h"
#include "passes/swap.h"

static void append_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

static int fail(lf_status_t st, const char *what) {
  char buf[1024];
  fprintf(stderr, "lf_swap_tool: %s: %s\n", what,
          lf_status_format(st, buf, sizeof(buf)));
  lf_status_free(st);
  return 1;
}

/* Prints `text` with the bytes of the gpu.binary's object elided to
 * "...", so that the output stays readable (and still parses). */
static void print_elided(const char *text) {
  const char *p = strstr(text, "gpu.binary @");
  p = p ? strstr(p, "#nvvm.target<") : NULL;
  p = p ? strstr(p, ">, ") : NULL;
  if (p) {
    p += 3;
    if (!strncmp(p, "bin = ", 6))
      p += 6;
    else if (!strncmp(p, "assembly = ", 11))
      p += 11;
  }
  const char *end = p && *p == '"' ? strstr(p + 1, "\">]") : NULL;
  if (!end) {
    fputs(text, stdout);
    return;
  }
  fwrite(text, 1, (size_t)(p - text) + 1, stdout);
  fputs("...", stdout);
  fputs(end, stdout);
}

int main(int argc, char **argv) {
  bool defer = argc > 1 && !strcmp(argv[1], "--defer");
  if (defer) {
    --argc;
    ++argv;
  }
  if (argc < 4 || argc > 5) {
    fprintf(stderr,
            "usage: lf_swap_tool [--defer] MODULE.mlir FUNCTION KERNEL.mlir "
            "[CHIP]\n");
    return 2;
  }
  if (defer)
    mlirRegisterAllPasses();
  lf_strbuf_t src, kernel, sig;
  lf_strbuf_init(&src, 64 << 20);
  lf_strbuf_init(&kernel, LF_BUILD_MAX_KERNEL_SIZE);
  lf_strbuf_init(&sig, 1 << 20);
  lf_status_t st = lf_read_file(argv[1], &src);
  if (st)
    return fail(st, argv[1]);
  if ((st = lf_read_file(argv[3], &kernel)))
    return fail(st, argv[3]);

  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(ctx);
  MlirModule module = mlirModuleCreateParse(
      ctx, mlirStringRefCreate(lf_strbuf_cstr(&src), lf_strbuf_len(&src)));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "lf_swap_tool: %s does not parse\n", argv[1]);
    return 1;
  }
  MlirOperation mop = mlirModuleGetOperation(module);
  MlirSymbolTable table = mlirSymbolTableCreate(mop);
  MlirOperation func =
      mlirSymbolTableLookup(table, mlirStringRefCreateFromCString(argv[2]));
  mlirSymbolTableDestroy(table);
  if (mlirOperationIsNull(func)) {
    fprintf(stderr, "lf_swap_tool: no function @%s\n", argv[2]);
    return 1;
  }
  mlirTypePrint(mlirTypeAttrGetValue(mlirOperationGetAttributeByName(
                    func, mlirStringRefCreateFromCString("function_type"))),
                append_cb, &sig);

  /* A kernel that declares tune variants: the first, as a build without a
   * GPU takes it. */
  lf_tune_set_t *tune = NULL;
  if ((st = lf_tune_expand(lf_strbuf_cstr(&kernel), lf_strbuf_len(&kernel),
                           &tune)))
    return fail(st, "tune");
  lf_build_request_t req = {0};
  req.kernel_text = tune->variants[0].text;
  req.kernel_size = strlen(req.kernel_text);
  req.signature = lf_strbuf_cstr(&sig);
  req.chip = argc == 5 ? argv[4] : "sm_90";
  lf_build_result_t *res = NULL;
  if ((st = lf_build_kernel(&req, NULL, &res)))
    return fail(st, "build");
  if (res->kind != LF_BUILD_OK) {
    fprintf(stderr, "lf_swap_tool: the kernel does not build: %s: %s\n",
            lf_build_kind_name(res->kind), res->message);
    return 1;
  }
  const char *add_tmap = getenv("LF_SWAP_TOOL_ADD_TMAP");
  if (add_tmap && *add_tmap) {
    lf_kernel_param_t *np =
        realloc(res->params, (res->num_params + 1) * sizeof(*np));
    if (!np)
      return 1;
    res->params = np;
    lf_kernel_param_t *p = &np[res->num_params++];
    memset(p, 0, sizeof(*p));
    p->is_tensor_map = true;
    p->type = strdup("!nvgpu.tensormap.descriptor<...>");
    char dt[8] = "", dims[64] = "", box[64] = "";
    int sw = 0;
    if (sscanf(add_tmap, "%d:%7[^:]:%63[^:]:%63[^:]:%d", &p->map.param, dt,
               dims, box, &sw) < 4) {
      fprintf(stderr, "lf_swap_tool: bad LF_SWAP_TOOL_ADD_TMAP\n");
      return 2;
    }
    p->operand = p->map.param;
    snprintf(p->map.dtype, sizeof(p->map.dtype), "%s", dt);
    p->map.swizzle_bytes = sw;
    char *d = dims, *b = box;
    for (; p->map.rank < 5 && *d && *b; ++p->map.rank) {
      p->map.dims[p->map.rank] = strtoull(d, &d, 10);
      p->map.box[p->map.rank] = (uint32_t)strtoul(b, &b, 10);
      d += *d == 'x';
      b += *b == 'x';
    }
  }
  if (defer) {
    lf_defer_options_t o = {0};
    o.chip = req.chip;
    o.record_path = getenv("LF_DEFER_RECORD");
    o.min_speedup = 1.0;
    if ((st = lf_defer_stage_and_guard(mop, func, res, &o)))
      return fail(st, "defer");
  } else if ((st = lf_swap_in(mop, func, res))) {
    return fail(st, "swap");
  }
  if (!mlirOperationVerify(mop)) {
    fprintf(stderr, "lf_swap_tool: the swapped module does not verify\n");
    return 1;
  }
  /* The binary's bytes are elided (to "...") unless LF_SWAP_TOOL_FULL is
   * set: the output stays readable and still parses. */
  lf_strbuf_t out;
  lf_strbuf_init(&out, 256 << 20);
  mlirOperationPrint(mop, append_cb, &out);
  const char *text = lf_strbuf_cstr(&out);
  if (getenv("LF_SWAP_TOOL_FULL")) {
    fputs(text, stdout);
  } else if (defer) {
    /* Two literals: the guard's blob, then the kernel's bytes. */
    lf_strbuf_t once;
    lf_strbuf_init(&once, 256 << 20);
    const char *m = strstr(text, "_guard_blob(\"");
    const char *end = m ? strstr(m + 13, "\"") : NULL;
    if (m && end) {
      lf_status_free(lf_strbuf_append(&once, text, (size_t)(m - text) + 13));
      lf_status_free(lf_strbuf_append_str(&once, "..."));
      lf_status_free(lf_strbuf_append_str(&once, end));
      text = lf_strbuf_cstr(&once);
    }
    print_elided(text);
    lf_strbuf_free(&once);
  } else {
    print_elided(text);
  }
  lf_strbuf_free(&out);
  fprintf(stdout, "\n// kernel %s, %s, %zu cubin bytes, %zu PTX bytes\n",
          res->kernel_name, res->chip, res->cubin_size, res->ptx_size);
  lf_build_result_destroy(res);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  lf_strbuf_free(&src);
  lf_strbuf_free(&kernel);
  lf_strbuf_free(&sig);
  return 0;
}
