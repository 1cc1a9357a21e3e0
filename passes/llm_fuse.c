/* llm_fuse.c - the `llm-fuse` driver pass.
 *
 * The whole pipeline on one module, in stages:
 *   1. partition and outline (outline.c): one private @sg_<hash> function
 *      per fusable subgraph;
 *   2. acquire a candidate kernel per subgraph (cache, then the provider)
 *      and build it in a child process (builder/), repairing up to
 *      max-attempts;
 *   3. verify each built candidate on the GPU in the worker process, when
 *      there is a GPU and verify=auto;
 *   4. swap verified candidates that are fast enough into their function.
 * Every subgraph ends with a decision and a reason: a remark on the IR, a
 * record in the JSON report, a progress line while it runs and a row of the
 * summary table at the end. A subgraph that is not swapped keeps its
 * original ops; nothing unverified is ever swapped in.
 */
#include "passes/llm_fuse.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "dialect_bridge/bridge.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/outline.h"
#include "runtime/cuda_driver.h"

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

/* ---- Subgraphs. ---- */

/* What happened to one subgraph. */
typedef struct subgraph_s {
  MlirOperation func;
  MlirLocation loc;
  char *name;        /* sg_<16 hex> */
  char *fingerprint; /* 64 hex */
  char *cls;         /* elementwise | reduction | contraction | ... */
  char *signature;   /* the function type over tensors */
  char *prompt_text; /* what a prompt may show of it */
  /* Acquisition and building. */
  char *provider;    /* where the candidate came from: cache, replay, ... */
  int attempts;
  cJSON *attempt_log; /* array of per-attempt records, or NULL */
  lf_build_result_t *build; /* the last build, or NULL */
  /* The decision. */
  bool swapped;
  char *reason_word; /* short machine word, e.g. "no-gpu" */
  char *reason;      /* one sentence */
  double ms_acquire, ms_build, ms_verify;
  double speedup; /* reference / candidate time; 0 when not measured */
} subgraph_t;

typedef struct fuse_run_s {
  const lf_fuse_options_t *o;
  MlirOperation module;
  subgraph_t *subs;
  size_t num_subs;
  cJSON *groups; /* the outline records */
  char *gpu_status; /* why verification cannot run here; NULL: it can */
  double ms_outline, ms_total;
} fuse_run_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *copy_ref(MlirStringRef ref) {
  return strndup(ref.data ? ref.data : "", ref.length);
}

static void append_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

static char *type_text(MlirType t) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 20);
  mlirTypePrint(t, append_cb, &b);
  return lf_strbuf_take(&b);
}

static char *string_attr(MlirOperation op, const char *name) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
    return NULL;
  return copy_ref(mlirStringAttrGetValue(a));
}

static void subgraph_free(subgraph_t *sg) {
  free(sg->name);
  free(sg->fingerprint);
  free(sg->cls);
  free(sg->signature);
  free(sg->prompt_text);
  free(sg->provider);
  cJSON_Delete(sg->attempt_log);
  lf_build_result_destroy(sg->build);
  free(sg->reason_word);
  free(sg->reason);
}

static void run_free(fuse_run_t *run) {
  for (size_t i = 0; i < run->num_subs; ++i)
    subgraph_free(&run->subs[i]);
  free(run->subs);
  cJSON_Delete(run->groups);
  free(run->gpu_status);
}

/* Sets the decision's reason (the first one set wins: it is the cause). */
static void set_reason(subgraph_t *sg, const char *word, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(subgraph_t *sg, const char *word, const char *fmt, ...) {
  if (sg->reason_word)
    return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  sg->reason_word = strdup(word);
  sg->reason = strdup(buf);
}

/* The outlined functions, in module order. */
static lf_status_t collect_subgraphs(fuse_run_t *run) {
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(run->module, 0));
  size_t cap = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char *fp = string_attr(op, LF_ATTR_FINGERPRINT);
    if (!fp)
      continue;
    if (run->num_subs == cap) {
      cap = cap ? 2 * cap : 16;
      subgraph_t *p = realloc(run->subs, cap * sizeof(*p));
      if (!p) {
        free(fp);
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      }
      run->subs = p;
    }
    subgraph_t *sg = &run->subs[run->num_subs++];
    memset(sg, 0, sizeof(*sg));
    sg->func = op;
    sg->loc = mlirOperationGetLocation(op);
    sg->fingerprint = fp;
    sg->name = string_attr(op, "sym_name");
    sg->cls = string_attr(op, LF_ATTR_CLASS);
    MlirAttribute ft = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("function_type"));
    sg->signature = type_text(mlirTypeAttrGetValue(ft));
    lf_strbuf_t text;
    lf_strbuf_init(&text, 16 << 20);
    lf_status_t st = lf_outline_prompt_text(op, &text);
    sg->prompt_text = lf_strbuf_take(&text);
    if (st)
      return st;
    if (!sg->name || !sg->cls || !sg->signature || !sg->prompt_text)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return LF_OK;
}

/* ---- Stage 2: acquire and build. ---- */

/* Builds `text` for `sg` in a child process. Returns the result (any kind)
 * or NULL with the reason set when the builder itself could not run. */
static lf_build_result_t *build_candidate(fuse_run_t *run, subgraph_t *sg,
                                          const char *text, size_t size,
                                          int line_offset) {
  lf_build_request_t req = {0};
  req.kernel_text = text;
  req.kernel_size = size;
  req.signature = sg->signature;
  req.line_offset = line_offset;
  req.chip = run->o->arch;
  lf_build_result_t *res = NULL;
  double t0 = now_ms();
  lf_status_t st = lf_build_kernel(&req, NULL, &res);
  sg->ms_build += now_ms() - t0;
  if (st) {
    char buf[512];
    set_reason(sg, "builder-unavailable", "the kernel builder could not run: %s",
               lf_status_format(st, buf, sizeof(buf)));
    lf_status_free(st);
    return NULL;
  }
  return res;
}

/* Fills each subgraph's candidate: sg->build (OK or the last failure),
 * sg->provider, sg->attempts, sg->attempt_log, or a reason. */
static lf_status_t acquire_stage(fuse_run_t *run) {
  for (size_t i = 0; i < run->num_subs; ++i) {
    subgraph_t *sg = &run->subs[i];
    if (strcmp(run->o->provider, "none") == 0) {
      set_reason(sg, "no-provider",
                 "provider=none: no candidate kernel was asked for");
      continue;
    }
    set_reason(sg, "acquire-unavailable",
               "kernel acquisition is not part of this build yet");
  }
  (void)build_candidate;
  return LF_OK;
}

/* ---- Stage 3: can verification run here? ---- */

/* Sets run->gpu_status to why verification cannot run, or leaves it NULL
 * when a usable GPU is present. The driver is only probed here; candidates
 * never run in the compiler's process. */
static void probe_gpu(fuse_run_t *run) {
  if (strcmp(run->o->verify, "none") == 0) {
    run->gpu_status = strdup("verify=none: candidates are never swapped in");
    return;
  }
  lf_cuda_driver_t *driver = NULL;
  lf_status_t st = lf_cuda_driver_load(&driver);
  int count = 0;
  if (!st)
    st = lf_cuda_device_count(driver, &count);
  if (!st && count == 0)
    st = LF_STATUS(LF_STATUS_UNAVAILABLE, "the CUDA driver sees no GPU");
  lf_cuda_driver_unload(driver);
  if (st) {
    char buf[512];
    const char *msg = lf_status_message(st);
    snprintf(buf, sizeof(buf), "%s", msg ? msg : "no usable GPU");
    run->gpu_status = strdup(buf);
    lf_status_free(st);
  }
}

/* ---- Reporting. ---- */

static const char *decision_word(const subgraph_t *sg) {
  return sg->swapped ? "swapped" : "kept";
}

static cJSON *subgraph_json(const subgraph_t *sg) {
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "name", sg->name);
  cJSON_AddStringToObject(j, "fingerprint", sg->fingerprint);
  cJSON_AddStringToObject(j, "class", sg->cls);
  cJSON_AddStringToObject(j, "signature", sg->signature);
  cJSON_AddStringToObject(j, "decision", decision_word(sg));
  cJSON_AddStringToObject(j, "reason", sg->reason_word ? sg->reason_word : "");
  cJSON_AddStringToObject(j, "detail", sg->reason ? sg->reason : "");
  if (sg->provider)
    cJSON_AddStringToObject(j, "provider", sg->provider);
  else
    cJSON_AddNullToObject(j, "provider");
  cJSON_AddNumberToObject(j, "attempts", sg->attempts);
  if (sg->attempt_log)
    cJSON_AddItemToObject(j, "attempt_log",
                          cJSON_Duplicate(sg->attempt_log, true));
  const lf_build_result_t *b = sg->build;
  if (b) {
    cJSON *jb = cJSON_AddObjectToObject(j, "build");
    cJSON_AddStringToObject(jb, "kind", lf_build_kind_name(b->kind));
    cJSON_AddStringToObject(jb, "message", b->message ? b->message : "");
    if (b->kernel_name)
      cJSON_AddStringToObject(jb, "kernel", b->kernel_name);
    if (b->chip)
      cJSON_AddStringToObject(jb, "chip", b->chip);
    if (b->kind == LF_BUILD_OK) {
      cJSON *grid = cJSON_AddArrayToObject(jb, "grid");
      cJSON *block = cJSON_AddArrayToObject(jb, "block");
      for (int d = 0; d < 3; ++d) {
        cJSON_AddItemToArray(grid, cJSON_CreateNumber(b->grid[d]));
        cJSON_AddItemToArray(block, cJSON_CreateNumber(b->block[d]));
      }
      cJSON_AddNumberToObject(jb, "dynamic_shared_memory",
                              b->dynamic_shared_bytes);
      cJSON_AddNumberToObject(jb, "ptx_bytes", (double)b->ptx_size);
      cJSON_AddNumberToObject(jb, "cubin_bytes", (double)b->cubin_size);
      if (b->ptxas_info)
        cJSON_AddStringToObject(jb, "ptxas", b->ptxas_info);
    }
  } else {
    cJSON_AddNullToObject(j, "build");
  }
  cJSON_AddNullToObject(j, "verification");
  cJSON *t = cJSON_AddObjectToObject(j, "ms");
  cJSON_AddNumberToObject(t, "acquire", sg->ms_acquire);
  cJSON_AddNumberToObject(t, "build", sg->ms_build);
  cJSON_AddNumberToObject(t, "verify", sg->ms_verify);
  if (sg->speedup > 0)
    cJSON_AddNumberToObject(j, "speedup", sg->speedup);
  else
    cJSON_AddNullToObject(j, "speedup");
  return j;
}

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

static lf_status_t write_report(const fuse_run_t *run) {
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  cJSON_AddStringToObject(root, "schema", "llm-fuse-report/1");
  cJSON_AddItemToObject(root, "options", options_json(run->o));
  if (run->gpu_status)
    cJSON_AddStringToObject(root, "verification_unavailable", run->gpu_status);
  else
    cJSON_AddNullToObject(root, "verification_unavailable");
  cJSON *subs = cJSON_AddArrayToObject(root, "subgraphs");
  size_t swapped = 0;
  for (size_t i = 0; i < run->num_subs; ++i) {
    cJSON_AddItemToArray(subs, subgraph_json(&run->subs[i]));
    swapped += run->subs[i].swapped;
  }
  /* The partition's view: one record per group (call sites included). */
  cJSON_AddItemToObject(root, "groups", cJSON_Duplicate(run->groups, true));
  cJSON *sum = cJSON_AddObjectToObject(root, "summary");
  cJSON_AddNumberToObject(sum, "subgraphs", (double)run->num_subs);
  cJSON_AddNumberToObject(sum, "swapped", (double)swapped);
  cJSON_AddNumberToObject(sum, "kept", (double)(run->num_subs - swapped));
  cJSON_AddNumberToObject(sum, "ms_outline", run->ms_outline);
  cJSON_AddNumberToObject(sum, "ms_total", run->ms_total);
  lf_status_t st = lf_write_json_report(run->o->report, root);
  cJSON_Delete(root);
  return st;
}

static void emit_remarks(const fuse_run_t *run) {
  for (size_t i = 0; i < run->num_subs; ++i) {
    const subgraph_t *sg = &run->subs[i];
    char msg[1400];
    if (sg->swapped)
      snprintf(msg, sizeof(msg),
               "llm-fuse: @%s (%s): swapped in kernel %s from %s, verified, "
               "%.2fx the reference",
               sg->name, sg->cls, sg->build->kernel_name,
               sg->provider ? sg->provider : "?", sg->speedup);
    else
      snprintf(msg, sizeof(msg), "llm-fuse: @%s (%s): kept original ops: %s",
               sg->name, sg->cls, sg->reason ? sg->reason : "no reason");
    lf_emit_diag(sg->loc, LF_DIAG_REMARK, msg);
  }
}

/* The table at the end, through the log (stderr, level info). */
static void print_summary(const fuse_run_t *run) {
  if (!lf_log_enabled(LF_LOG_INFO))
    return;
  size_t swapped = 0;
  LF_LOG_INFO("summary: %-20s %-12s %-8s %8s %8s %8s  %s", "subgraph", "class",
              "decision", "attempts", "build ms", "speedup", "reason");
  for (size_t i = 0; i < run->num_subs; ++i) {
    const subgraph_t *sg = &run->subs[i];
    char speed[32] = "-";
    if (sg->speedup > 0)
      snprintf(speed, sizeof(speed), "%.2fx", sg->speedup);
    LF_LOG_INFO("summary: %-20s %-12s %-8s %8d %8.0f %8s  %s", sg->name,
                sg->cls, decision_word(sg), sg->attempts, sg->ms_build, speed,
                sg->reason_word ? sg->reason_word : "");
    swapped += sg->swapped;
  }
  LF_LOG_INFO("summary: %zu subgraph(s), %zu swapped, %zu kept with their "
              "original ops; %.0f ms in all",
              run->num_subs, swapped, run->num_subs - swapped, run->ms_total);
  if (run->gpu_status && swapped == 0 && run->num_subs)
    LF_LOG_INFO("summary: verification could not run (%s); nothing was "
                "swapped in",
                run->gpu_status);
}

/* ---- The pass. ---- */

static const char *fuse_pre_pipeline(MlirOperation op, const void *options) {
  (void)options;
  return lf_tosa_import_pipeline(op);
}

static lf_status_t run_llm_fuse(MlirOperation module, const void *options) {
  const lf_fuse_options_t *o = options;
  fuse_run_t run = {.o = o, .module = module};
  lf_status_t st = LF_OK;
  double t0 = now_ms();

  /* 1. Partition and outline. */
  run.groups = cJSON_CreateArray();
  if (!run.groups)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_outline_options_t oopts = {.max_group_ops = 32, .remarks = o->remarks};
  size_t outlined = 0;
  if ((st = lf_outline_module(module, &oopts, run.groups, &outlined)))
    goto out;
  if ((st = collect_subgraphs(&run)))
    goto out;
  run.ms_outline = now_ms() - t0;
  LF_LOG_INFO("%zu subgraph(s) outlined (%zu distinct) in %.1f ms", outlined,
              run.num_subs, run.ms_outline);

  /* 2. Acquire and build. */
  if ((st = acquire_stage(&run)))
    goto out;

  /* 3. Verify, 4. swap. */
  probe_gpu(&run);
  for (size_t i = 0; i < run.num_subs; ++i) {
    subgraph_t *sg = &run.subs[i];
    if (!sg->build || sg->build->kind != LF_BUILD_OK)
      continue; /* the reason is set */
    if (run.gpu_status) {
      if (strcmp(o->verify, "none") == 0)
        set_reason(sg, "verify-disabled", "%s", run.gpu_status);
      else
        set_reason(sg, "no-gpu",
                   "verification could not run (%s); verify=auto keeps the "
                   "original ops without a GPU, verify=defer would embed the "
                   "candidate behind a first-call check",
                   run.gpu_status);
      continue;
    }
    set_reason(sg, "verify-unavailable",
               "the verification worker is not part of this build yet");
  }

  run.ms_total = now_ms() - t0;
  if (o->remarks)
    emit_remarks(&run);
  print_summary(&run);
  if (o->report[0]) {
    if ((st = write_report(&run)))
      goto out;
    LF_LOG_INFO("report written to %s", o->report);
  }

out:
  run_free(&run);
  return st;
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
    .pre_pipeline = fuse_pre_pipeline,
    .run = run_llm_fuse,
};
