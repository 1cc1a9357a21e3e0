/* llm_fuse.c - the `llm-fuse` driver pass.
 *
 * What runs today: the option interface, and a survey of the module that
 * finds, per function, the tensor-level ops the partitioner will consider
 * (linalg and tosa ops, and arith/math/tensor ops on tensors). It reports
 * them as remarks, a progress line and a JSON report, and leaves the IR
 * unchanged. Partitioning, kernel acquisition, building, verification and
 * swapping plug in here as they land (see README, "What works").
 */
#include "passes/llm_fuse.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "dialect_bridge/bridge.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

/* ---- Options. ---- */

static const char *const provider_choices[] = {"openai", "replay", "none",
                                               NULL};
static const char *const arch_choices[] = {"sm_80", "sm_90", "sm_90a", NULL};
static const char *const verify_choices[] = {"auto", "defer", "none", NULL};

#define OPT(field) offsetof(lf_fuse_options_t, field)
static const lf_option_def_t fuse_options[] = {
    {"provider", LF_OPTION_STRING, "replay",
     "Where candidate kernels come from: openai (an OpenAI-compatible "
     "endpoint), replay (recorded replies; the offline default) or none",
     provider_choices, 0, 0, OPT(provider)},
    {"endpoint", LF_OPTION_STRING, "https://api.openai.com/v1",
     "Base URL of the OpenAI-compatible chat API (https, or http to a "
     "loopback address)",
     NULL, 0, 0, OPT(endpoint)},
    {"model", LF_OPTION_STRING, "gpt-4o", "Model name sent to the endpoint",
     NULL, 0, 0, OPT(model)},
    {"api-key-env", LF_OPTION_STRING, "OPENAI_API_KEY",
     "Name of the environment variable that holds the API key (the key "
     "itself is never an option)",
     NULL, 0, 0, OPT(api_key_env)},
    {"replay-dir", LF_OPTION_STRING, "",
     "Directory of recorded exchanges for provider=replay (empty: the "
     "shipped kernels)",
     NULL, 0, 0, OPT(replay_dir)},
    {"cache-dir", LF_OPTION_STRING, "",
     "Kernel cache directory (empty: $XDG_CACHE_HOME/llm-fuse)", NULL, 0, 0,
     OPT(cache_dir)},
    {"offline", LF_OPTION_BOOL, "false",
     "Never touch the network: cache and replay only", NULL, 0, 0,
     OPT(offline)},
    {"arch", LF_OPTION_STRING, "sm_90a", "Target GPU architecture",
     arch_choices, 0, 0, OPT(arch)},
    {"verify", LF_OPTION_STRING, "auto",
     "auto: verify on the GPU at compile time when there is one, else keep "
     "the original ops; defer: embed candidate and fallback behind a "
     "first-call runtime check; none: never swap",
     verify_choices, 0, 0, OPT(verify)},
    {"min-speedup", LF_OPTION_DOUBLE, "1.0",
     "Swap a verified kernel only if reference_time / kernel_time reaches "
     "this",
     NULL, 0.0, 1000.0, OPT(min_speedup)},
    {"max-attempts", LF_OPTION_INT, "4",
     "Attempts per subgraph (first request plus repairs)", NULL, 1, 32,
     OPT(max_attempts)},
    {"max-concurrency", LF_OPTION_INT, "8",
     "Requests in flight at once, across subgraphs", NULL, 1, 256,
     OPT(max_concurrency)},
    {"report", LF_OPTION_STRING, "",
     "Write a JSON report of every function and subgraph to this file", NULL,
     0, 0, OPT(report)},
    {"remarks", LF_OPTION_BOOL, "true",
     "Attach a remark to the IR for every function and subgraph", NULL, 0, 0,
     OPT(remarks)},
};
#undef OPT

/* ---- The survey. ---- */

typedef struct op_count_s {
  char *name;
  int count;
} op_count_t;

typedef struct func_survey_s {
  char *name;
  MlirLocation loc;
  op_count_t *ops;
  size_t num_ops, cap_ops;
  int total;
} func_survey_t;

typedef struct survey_s {
  func_survey_t *funcs;
  size_t num_funcs, cap_funcs;
  lf_status_t status; /* first failure inside a walk callback */
} survey_t;

static char *copy_ref(MlirStringRef ref) {
  char *s = malloc(ref.length + 1);
  if (s) {
    memcpy(s, ref.data, ref.length);
    s[ref.length] = '\0';
  }
  return s;
}

static bool has_tensor_result(MlirOperation op) {
  intptr_t n = mlirOperationGetNumResults(op);
  for (intptr_t i = 0; i < n; ++i)
    if (mlirTypeIsATensor(mlirValueGetType(mlirOperationGetResult(op, i))))
      return true;
  return false;
}

/* The ops the partitioner considers: anything in linalg or tosa, and
 * arith/math/tensor ops that compute on tensors. */
static bool is_tensor_level(const char *name, MlirOperation op) {
  if (strncmp(name, "linalg.", 7) == 0 || strncmp(name, "tosa.", 5) == 0)
    return strcmp(name, "linalg.yield") != 0 && strcmp(name, "linalg.index") != 0;
  if (strncmp(name, "arith.", 6) == 0 || strncmp(name, "math.", 5) == 0 ||
      strncmp(name, "tensor.", 7) == 0)
    return has_tensor_result(op);
  return false;
}

static lf_status_t count_op(func_survey_t *f, const char *name) {
  for (size_t i = 0; i < f->num_ops; ++i) {
    if (strcmp(f->ops[i].name, name) == 0) {
      ++f->ops[i].count;
      ++f->total;
      return LF_OK;
    }
  }
  if (f->num_ops == f->cap_ops) {
    size_t cap = f->cap_ops ? 2 * f->cap_ops : 8;
    op_count_t *ops = realloc(f->ops, cap * sizeof(*ops));
    if (!ops)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    f->ops = ops;
    f->cap_ops = cap;
  }
  char *copy = strdup(name);
  if (!copy)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  f->ops[f->num_ops++] = (op_count_t){copy, 1};
  ++f->total;
  return LF_OK;
}

typedef struct func_walk_s {
  func_survey_t *func;
  lf_status_t status;
} func_walk_t;

static MlirWalkResult survey_func_op(MlirOperation op, void *user_data) {
  func_walk_t *walk = user_data;
  char *name = copy_ref(mlirIdentifierStr(mlirOperationGetName(op)));
  if (!name) {
    walk->status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return MlirWalkResultInterrupt;
  }
  if (is_tensor_level(name, op))
    walk->status = count_op(walk->func, name);
  free(name);
  return walk->status ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

static MlirWalkResult survey_module_op(MlirOperation op, void *user_data) {
  survey_t *survey = user_data;
  MlirStringRef op_name = mlirIdentifierStr(mlirOperationGetName(op));
  if (op_name.length != 9 || memcmp(op_name.data, "func.func", 9) != 0)
    return MlirWalkResultAdvance;
  if (survey->num_funcs == survey->cap_funcs) {
    size_t cap = survey->cap_funcs ? 2 * survey->cap_funcs : 8;
    func_survey_t *funcs = realloc(survey->funcs, cap * sizeof(*funcs));
    if (!funcs)
      goto out_oom;
    survey->funcs = funcs;
    survey->cap_funcs = cap;
  }
  func_survey_t *f = &survey->funcs[survey->num_funcs];
  memset(f, 0, sizeof(*f));
  MlirAttribute sym = mlirOperationGetAttributeByName(
      op, mlirSymbolTableGetSymbolAttributeName());
  f->name = copy_ref(mlirAttributeIsAString(sym) ? mlirStringAttrGetValue(sym)
                                                 : mlirStringRefCreate("", 0));
  if (!f->name)
    goto out_oom;
  f->loc = mlirOperationGetLocation(op);
  ++survey->num_funcs;
  func_walk_t walk = {f, LF_OK};
  mlirOperationWalk(op, survey_func_op, &walk, MlirWalkPreOrder);
  if (walk.status) {
    survey->status = walk.status;
    return MlirWalkResultInterrupt;
  }
  /* Functions are not nested in functions: skip the body. */
  return MlirWalkResultSkip;

out_oom:
  survey->status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  return MlirWalkResultInterrupt;
}

static void survey_free(survey_t *survey) {
  for (size_t i = 0; i < survey->num_funcs; ++i) {
    func_survey_t *f = &survey->funcs[i];
    for (size_t j = 0; j < f->num_ops; ++j)
      free(f->ops[j].name);
    free(f->ops);
    free(f->name);
  }
  free(survey->funcs);
  lf_status_free(survey->status);
}

/* "linalg.matmul, linalg.generic x3" */
static lf_status_t describe_ops(const func_survey_t *f, lf_strbuf_t *out) {
  for (size_t i = 0; i < f->num_ops; ++i) {
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(out, "%s%s", i ? ", " : "", f->ops[i].name));
    if (f->ops[i].count > 1)
      LF_RETURN_IF_ERROR(lf_strbuf_appendf(out, " x%d", f->ops[i].count));
  }
  return LF_OK;
}

/* ---- The report. ---- */

static cJSON *options_json(const lf_fuse_options_t *o) {
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  /* The API key is never an option; only the variable's name is recorded. */
  cJSON_AddStringToObject(j, "provider", o->provider);
  cJSON_AddStringToObject(j, "endpoint", o->endpoint);
  cJSON_AddStringToObject(j, "model", o->model);
  cJSON_AddStringToObject(j, "api_key_env", o->api_key_env);
  cJSON_AddStringToObject(j, "replay_dir", o->replay_dir);
  cJSON_AddStringToObject(j, "cache_dir", o->cache_dir);
  cJSON_AddBoolToObject(j, "offline", o->offline);
  cJSON_AddStringToObject(j, "arch", o->arch);
  cJSON_AddStringToObject(j, "verify", o->verify);
  cJSON_AddNumberToObject(j, "min_speedup", o->min_speedup);
  cJSON_AddNumberToObject(j, "max_attempts", (double)o->max_attempts);
  cJSON_AddNumberToObject(j, "max_concurrency", (double)o->max_concurrency);
  return j;
}

static lf_status_t write_report(const lf_fuse_options_t *o,
                                const survey_t *survey) {
  lf_status_t status = LF_OK;
  char *text = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root)
    goto out_oom;
  cJSON_AddStringToObject(root, "schema", "llm-fuse-report/0");
  cJSON_AddStringToObject(root, "stage", "survey");
  cJSON *opts = options_json(o);
  if (!opts)
    goto out_oom;
  cJSON_AddItemToObject(root, "options", opts);
  cJSON *funcs = cJSON_AddArrayToObject(root, "functions");
  if (!funcs)
    goto out_oom;
  for (size_t i = 0; i < survey->num_funcs; ++i) {
    const func_survey_t *f = &survey->funcs[i];
    cJSON *jf = cJSON_CreateObject();
    if (!jf)
      goto out_oom;
    cJSON_AddItemToArray(funcs, jf);
    cJSON_AddStringToObject(jf, "name", f->name);
    cJSON_AddNumberToObject(jf, "tensor_ops", f->total);
    cJSON *ops = cJSON_AddObjectToObject(jf, "ops");
    if (!ops)
      goto out_oom;
    for (size_t j = 0; j < f->num_ops; ++j)
      cJSON_AddNumberToObject(ops, f->ops[j].name, f->ops[j].count);
  }
  if (!cJSON_AddArrayToObject(root, "subgraphs"))
    goto out_oom;
  text = cJSON_Print(root);
  if (!text)
    goto out_oom;
  size_t len = strlen(text);
  text[len] = '\n'; /* replace the NUL: the file ends with a newline */
  status = lf_write_file_atomic(o->report, text, len + 1);
  if (status)
    status = lf_status_annotate(status, "cannot write report");
  goto out;

out_oom:
  status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
out:
  cJSON_free(text);
  cJSON_Delete(root);
  return status;
}

/* ---- The pass. ---- */

static lf_status_t run_llm_fuse(MlirOperation module, const void *options) {
  const lf_fuse_options_t *o = options;
  lf_status_t status = LF_OK;
  lf_strbuf_t line;
  lf_strbuf_init(&line, 64 * 1024);
  survey_t survey = {0};

  mlirOperationWalk(module, survey_module_op, &survey, MlirWalkPreOrder);
  if (survey.status) {
    status = survey.status;
    survey.status = LF_OK;
    goto out;
  }

  int total = 0;
  for (size_t i = 0; i < survey.num_funcs; ++i) {
    const func_survey_t *f = &survey.funcs[i];
    total += f->total;
    if (!o->remarks || f->total == 0)
      continue;
    lf_strbuf_reset(&line);
    status = lf_strbuf_appendf(&line, "llm-fuse: @%s: %d tensor-level ops (",
                               f->name, f->total);
    if (!status)
      status = describe_ops(f, &line);
    if (!status)
      status = lf_strbuf_append_str(
          &line, "); not partitioned: partitioning is not implemented yet");
    if (status)
      goto out;
    lf_emit_diag(f->loc, LF_DIAG_REMARK, lf_strbuf_cstr(&line));
  }

  LF_LOG_INFO("surveyed %zu function(s), %d tensor-level op(s); no subgraphs "
              "outlined yet, IR unchanged (provider=%s, arch=%s, verify=%s)",
              survey.num_funcs, total, o->provider, o->arch, o->verify);

  if (o->report[0]) {
    status = write_report(o, &survey);
    if (status)
      goto out;
    LF_LOG_INFO("report written to %s", o->report);
  }

out:
  survey_free(&survey);
  lf_strbuf_free(&line);
  return status;
}

const lf_pass_def_t lf_llm_fuse_pass = {
    .argument = "llm-fuse",
    .name = "LLMFusePass",
    .description = "Fuse tensor subgraphs into LLM-written GPU kernels, "
                   "verified on the GPU before they are swapped in",
    .op_name = "builtin.module",
    .options = fuse_options,
    .num_options = sizeof(fuse_options) / sizeof(fuse_options[0]),
    .options_size = sizeof(lf_fuse_options_t),
    .run = run_llm_fuse,
};
