/* external_pass_test.c - llm-fuse run from a pure C program through the MLIR
 * C API's external-pass host: no C++ pass manager set-up, no textual
 * pipeline. Checks the result, the report, remarks and located errors. */
#include <stdlib.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "base/testing.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"
#include "passes/llm_fuse.h"

static const char *const module_text =
    "func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>,\n"
    "              %c: tensor<4x2xf32>) -> tensor<4x2xf32> {\n"
    "  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>)\n"
    "                     outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>\n"
    "  %1 = arith.addf %0, %0 : tensor<4x2xf32>\n"
    "  %2 = arith.addf %1, %1 : tensor<4x2xf32>\n"
    "  return %2 : tensor<4x2xf32>\n"
    "}\n"
    "func.func @scalar(%x: f32) -> f32 {\n"
    "  %0 = arith.addf %x, %x : f32\n"
    "  return %0 : f32\n"
    "}\n";

static void append_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

static MlirLogicalResult capture_diag(MlirDiagnostic d, void *user_data) {
  lf_strbuf_t *out = user_data;
  static const char *const sev[] = {"error", "warning", "note", "remark"};
  lf_status_free(lf_strbuf_appendf(out, "%s: ", sev[mlirDiagnosticGetSeverity(d)]));
  mlirLocationPrint(mlirDiagnosticGetLocation(d), append_cb, out);
  lf_status_free(lf_strbuf_append_str(out, ": "));
  mlirDiagnosticPrint(d, append_cb, out);
  lf_status_free(lf_strbuf_append_str(out, "\n"));
  return mlirLogicalResultSuccess();
}

typedef struct fixture_s {
  MlirContext ctx;
  MlirModule module;
  lf_strbuf_t diags;
} fixture_t;

static int setup(fixture_t *f) {
  f->ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(f->ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(f->ctx);
  lf_strbuf_init(&f->diags, 1 << 16);
  mlirContextAttachDiagnosticHandler(f->ctx, capture_diag, &f->diags, NULL);
  f->module = mlirModuleCreateParse(
      f->ctx, mlirStringRefCreateFromCString(module_text));
  return !mlirModuleIsNull(f->module);
}

static void teardown(fixture_t *f) {
  mlirModuleDestroy(f->module);
  mlirContextDestroy(f->ctx);
  lf_strbuf_free(&f->diags);
}

static int run_with(fixture_t *f, const char *options) {
  MlirPass pass;
  lf_status_t s = lf_pass_create_external(&lf_llm_fuse_pass, options, &pass);
  if (s) {
    fprintf(stderr, "create: %s\n", lf_status_message(s));
    lf_status_free(s);
    return -1;
  }
  MlirPassManager pm = mlirPassManagerCreate(f->ctx);
  mlirPassManagerAddOwnedPass(pm, pass);
  MlirLogicalResult r =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(f->module));
  mlirPassManagerDestroy(pm);
  return mlirLogicalResultIsSuccess(r) ? 0 : 1;
}

LF_TEST(runs_and_reports) {
  fixture_t f;
  LF_EXPECT(setup(&f));
  char dir[] = "/tmp/lf_ext_test.XXXXXX", path[128], opts[256];
  LF_EXPECT(mkdtemp(dir) != NULL);
  snprintf(path, sizeof(path), "%s/report.json", dir);
  snprintf(opts, sizeof(opts), "provider=none report=%s", path);
  LF_EXPECT(run_with(&f, opts) == 0);

  /* @mm's three tensor ops become one subgraph, kept (no provider);
   * @scalar has nothing to fuse. */
  const char *d = lf_strbuf_cstr(&f.diags);
  if (getenv("LF_TEST_VERBOSE"))
    fprintf(stderr, "%s", d);
  LF_EXPECT(strstr(d, "llm-fuse: outlined contraction subgraph @sg_") != NULL);
  LF_EXPECT(strstr(d, "(contraction): kept original ops: provider=none") !=
            NULL);
  LF_EXPECT(strstr(d, "@scalar") == NULL);

  lf_strbuf_t report;
  lf_strbuf_init(&report, 1 << 20);
  LF_EXPECT(lf_read_file(path, &report) == LF_OK);
  const char *r = lf_strbuf_cstr(&report);
  LF_EXPECT(strstr(r, "\"schema\":\t\"llm-fuse-report/1\"") != NULL);
  LF_EXPECT(strstr(r, "\"provider\":\t\"none\"") != NULL);
  LF_EXPECT(strstr(r, "\"decision\":\t\"kept\"") != NULL);
  LF_EXPECT(strstr(r, "\"reason\":\t\"no-provider\"") != NULL);
  LF_EXPECT(strstr(r, "\"linalg.matmul\"") != NULL);
  lf_strbuf_free(&report);
  unlink(path);
  rmdir(dir);
  teardown(&f);
}

LF_TEST(bad_options_fail_before_running) {
  MlirPass pass;
  lf_status_t s =
      lf_pass_create_external(&lf_llm_fuse_pass, "verify=sometimes", &pass);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(strstr(lf_status_message(s), "expected one of auto|defer|none"));
  lf_status_free(s);
}

LF_TEST(unwritable_report_is_a_located_error) {
  fixture_t f;
  LF_EXPECT(setup(&f));
  LF_EXPECT(run_with(&f, "remarks=false report=/nonexistent-dir/r.json") == 1);
  const char *d = lf_strbuf_cstr(&f.diags);
  if (getenv("LF_TEST_VERBOSE"))
    fprintf(stderr, "%s", d);
  LF_EXPECT(strstr(d, "error: loc(\"-\":0:0): cannot write report: cannot "
                      "create '/nonexistent-dir/r.json.tmp.") != NULL);
  teardown(&f);
}

int main(void) {
  LF_RUN(runs_and_reports);
  LF_RUN(bad_options_fail_before_running);
  LF_RUN(unwritable_report_is_a_located_error);
  return lf_test_finish();
}
