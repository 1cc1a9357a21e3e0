/* synth_test.c - unit test of the elementwise synthesizer's refusals
 * (synth_ew.h): each subgraph it must not take is refused with
 * UNIMPLEMENTED and a message naming the op and the reason; the ones it
 * takes give a kernel with the expected vector width; a refusal leaves the
 * function unchanged. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"
#include "passes/mlir_util.h"
#include "passes/synth_ew.h"

static int failures;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

typedef struct case_s {
  const char *name;
  const char *ir;   /* one func.func @f */
  const char *want; /* refusal substrings, "|"-separated; NULL: accepted */
  int vector_width; /* when accepted */
} case_t;

static const case_t cases[] = {
    {"reduction",
     "func.func @f(%x: tensor<8x16xf32>) -> tensor<8xf32> {\n"
     "  %e = tensor.empty() : tensor<8xf32>\n"
     "  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, "
     "d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = [\"parallel\", "
     "\"reduction\"]} ins(%x : tensor<8x16xf32>) outs(%e : tensor<8xf32>) {\n"
     "  ^bb0(%a: f32, %b: f32):\n"
     "    %s = arith.addf %a, %b : f32\n"
     "    linalg.yield %s : f32\n"
     "  } -> tensor<8xf32>\n"
     "  return %r : tensor<8xf32>\n"
     "}\n",
     "linalg.generic at |loop 1 is not parallel (a reduction)", 0},
    {"dynamic shape",
     "func.func @f(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {\n"
     "  return %x : tensor<?x16xf32>\n"
     "}\n",
     "input 0 has type tensor<?x16xf32>|(a dynamic shape)", 0},
    {"matmul",
     "func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> "
     "tensor<8x4xf32> {\n"
     "  %z = arith.constant 0.0 : f32\n"
     "  %e = tensor.empty() : tensor<8x4xf32>\n"
     "  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> "
     "tensor<8x4xf32>\n"
     "  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) "
     "outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>\n"
     "  return %m : tensor<8x4xf32>\n"
     "}\n",
     "linalg.generic|is not parallel (a reduction)", 0},
    {"gather in a body",
     "func.func @f(%x: tensor<8xf32>, %t: tensor<4xf32>) -> tensor<8xf32> {\n"
     "  %e = tensor.empty() : tensor<8xf32>\n"
     "  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, "
     "affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]} ins(%x : "
     "tensor<8xf32>) outs(%e : tensor<8xf32>) {\n"
     "  ^bb0(%a: f32, %b: f32):\n"
     "    %c = arith.constant 1 : index\n"
     "    %v = tensor.extract %t[%c] : tensor<4xf32>\n"
     "    %s = arith.addf %a, %v : f32\n"
     "    linalg.yield %s : f32\n"
     "  } -> tensor<8xf32>\n"
     "  return %r : tensor<8xf32>\n"
     "}\n",
     "tensor.extract at |inside a linalg.generic body: only arith, math", 0},
    {"uninitialized read",
     "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
     "  %e = tensor.empty() : tensor<8xf32>\n"
     "  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, "
     "affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]} ins(%x : "
     "tensor<8xf32>) outs(%e : tensor<8xf32>) {\n"
     "  ^bb0(%a: f32, %b: f32):\n"
     "    %s = arith.addf %a, %b : f32\n"
     "    linalg.yield %s : f32\n"
     "  } -> tensor<8xf32>\n"
     "  return %r : tensor<8xf32>\n"
     "}\n",
     "tensor.empty at |its contents are read (an uninitialized tensor", 0},
    {"results of two shapes",
     "func.func @f(%x: tensor<8xf32>, %y: tensor<4xf32>) -> (tensor<8xf32>, "
     "tensor<4xf32>) {\n"
     "  return %x, %y : tensor<8xf32>, tensor<4xf32>\n"
     "}\n",
     "result 1 has another shape than result 0", 0},
    {"regrouping reshape",
     "func.func @f(%x: tensor<8x4xf32>) -> tensor<32xf32> {\n"
     "  %c = tensor.collapse_shape %x [[0, 1]] : tensor<8x4xf32> into "
     "tensor<32xf32>\n"
     "  return %c : tensor<32xf32>\n"
     "}\n",
     "tensor.collapse_shape at |regroups dimensions of size > 1", 0},
    {"strided window",
     "func.func @f(%x: tensor<16xf32>) -> tensor<8xf32> {\n"
     "  %e = tensor.empty() : tensor<8xf32>\n"
     "  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0 * 2)>, "
     "affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]} ins(%x : "
     "tensor<16xf32>) outs(%e : tensor<8xf32>) {\n"
     "  ^bb0(%a: f32, %b: f32):\n"
     "    linalg.yield %a : f32\n"
     "  } -> tensor<8xf32>\n"
     "  return %r : tensor<8xf32>\n"
     "}\n",
     "indexing map 0 is not a projected permutation", 0},
    {"rank 7",
     "func.func @f(%x: tensor<2x2x2x2x2x2x2xf32>) -> "
     "tensor<2x2x2x2x2x2x2xf32> {\n"
     "  return %x : tensor<2x2x2x2x2x2x2xf32>\n"
     "}\n",
     "input 0 has type tensor<2x2x2x2x2x2x2xf32>", 0},
    /* Taken: f32 add over rows of 16 (4 wide), bf16 (8 wide), a transpose
     * (scalar), an innermost size of 7 (scalar). */
    {"f32 add",
     "func.func @f(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> "
     "tensor<8x16xf32> {\n"
     "  %r = arith.addf %x, %y : tensor<8x16xf32>\n"
     "  return %r : tensor<8x16xf32>\n"
     "}\n",
     NULL, 4},
    {"bf16 negation",
     "func.func @f(%x: tensor<8x16xbf16>) -> tensor<8x16xbf16> {\n"
     "  %r = arith.negf %x : tensor<8x16xbf16>\n"
     "  return %r : tensor<8x16xbf16>\n"
     "}\n",
     NULL, 8},
    {"transpose",
     "func.func @f(%x: tensor<16x8xf32>) -> tensor<8x16xf32> {\n"
     "  %e = tensor.empty() : tensor<8x16xf32>\n"
     "  %t = linalg.transpose ins(%x : tensor<16x8xf32>) outs(%e : "
     "tensor<8x16xf32>) permutation = [1, 0]\n"
     "  return %t : tensor<8x16xf32>\n"
     "}\n",
     NULL, 1},
    {"odd rows",
     "func.func @f(%x: tensor<8x7xf32>) -> tensor<8x7xf32> {\n"
     "  %r = math.exp %x : tensor<8x7xf32>\n"
     "  return %r : tensor<8x7xf32>\n"
     "}\n",
     NULL, 1},
};

static void print_cb(MlirStringRef s, void *user) {
  lf_status_free(lf_strbuf_append(user, s.data, s.length));
}

static char *op_text(MlirOperation op) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 20);
  mlirOperationPrint(op, print_cb, &b);
  return lf_strbuf_take(&b);
}

int main(void) {
  mlirRegisterAllPasses();
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(ctx);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const case_t *c = &cases[i];
    MlirModule m = mlirModuleCreateParse(ctx, lf_str(c->ir));
    EXPECT(!mlirModuleIsNull(m), "%s: the test IR does not parse", c->name);
    if (mlirModuleIsNull(m))
      continue;
    MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
    char *before = op_text(f);
    lf_synth_ew_t k;
    lf_status_t st = lf_synth_ew(f, "k", &k);
    char *after = op_text(f);
    EXPECT(before && after && !strcmp(before, after),
           "%s: the function changed", c->name);
    if (!c->want) {
      EXPECT(!st, "%s: refused: %s", c->name, st ? lf_status_message(st) : "");
      if (!st) {
        EXPECT(k.vector_width == c->vector_width,
               "%s: vector width %d, expected %d", c->name, k.vector_width,
               c->vector_width);
        EXPECT(k.text && strstr(k.text, "gpu.func @k("),
               "%s: no kernel @k in the text", c->name);
        /* Deterministic: the same function, the same text. */
        lf_synth_ew_t k2;
        lf_status_t st2 = lf_synth_ew(f, "k", &k2);
        EXPECT(!st2 && k2.text && !strcmp(k.text, k2.text),
               "%s: a second synthesis differs", c->name);
        lf_status_free(st2);
        lf_synth_ew_clear(&k2);
      }
    } else {
      EXPECT(st && lf_status_code(st) == LF_STATUS_UNIMPLEMENTED,
             "%s: expected a refusal (UNIMPLEMENTED), got %s", c->name,
             st ? lf_status_code_name(lf_status_code(st)) : "a kernel");
      EXPECT(!k.text, "%s: a refusal with a kernel", c->name);
      char want[512];
      snprintf(want, sizeof(want), "%s", c->want);
      for (char *tok = strtok(want, "|"); st && tok; tok = strtok(NULL, "|"))
        EXPECT(strstr(lf_status_message(st), tok),
               "%s: the reason '%s' lacks '%s'", c->name, lf_status_message(st),
               tok);
    }
    lf_status_free(st);
    lf_synth_ew_clear(&k);
    free(before);
    free(after);
    mlirModuleDestroy(m);
  }
  /* Not a function. */
  lf_synth_ew_t k;
  MlirModule m = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
  lf_status_t st = lf_synth_ew(mlirModuleGetOperation(m), NULL, &k);
  EXPECT(st && lf_status_code(st) == LF_STATUS_INVALID_ARGUMENT,
         "a module was taken for a function");
  lf_status_free(st);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
  if (failures) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("synth_test: %zu cases passed\n", sizeof(cases) / sizeof(cases[0]));
  return 0;
}
