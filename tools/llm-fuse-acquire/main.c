/* llm-fuse-acquire - runs the acquire loop (llm_client/acquire.h) on a set
 * of subgraphs outside the pass: for testing providers and prompts, for
 * recording exchanges, and for the benchmark.
 *
 *   llm-fuse-acquire [options] TASKS.json
 *   llm-fuse-acquire [options] --outlined OUTLINED.mlir --subgraphs SG.json
 *
 * TASKS.json is {"tasks": [{"name", "fingerprint", "class", "ir",
 * "signature", "arch"?}, ...]}. The second form takes the output of
 * `llm-fuse-opt --llm-fuse-outline='report=SG.json'`: each subgraph's IR is
 * its outlined function's text, its signature comes from the report.
 *
 * Prints one line per subgraph (outcome, attempts, provider/model, time,
 * message) and exits 0 when every subgraph got a kernel (new or cached), 1
 * when some did not, 2 on a usage or internal error.
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "llm_client/acquire.h"
#include "llm_client/cache.h"
#include "llm_client/prompt.h"

#define FILE_CAP ((size_t)256 << 20)

static const char usage_text[] =
    "usage: llm-fuse-acquire [options] TASKS.json\n"
    "       llm-fuse-acquire [options] --outlined OUTLINED.mlir --subgraphs "
    "SG.json\n"
    "\n"
    "provider:\n"
    "  --provider openai|replay|none  (default replay)\n"
    "  --endpoint URL                 (default https://api.openai.com/v1)\n"
    "  --model NAME                   (default gpt-4o)\n"
    "  --api-key-env VAR              (default OPENAI_API_KEY)\n"
    "  --temperature X  --max-tokens N  --http-timeout-ms N\n"
    "  --http-attempts N  --backoff-base-ms N\n"
    "  --replay-dir DIR  --replay-strict  --record DIR\n"
    "  --prompts-dir DIR  --gpu TEXT\n"
    "cache:\n"
    "  --cache-dir DIR | --cache (the default folder)   (default: none)\n"
    "  --toolchain TEXT (cache key; default: the builder's LLVM and ptxas)  --offline\n"
    "loop:\n"
    "  --arch CHIP (for tasks without one; default sm_90a)\n"
    "  --max-attempts N (4)  --max-concurrency N (8)  --build-concurrency N "
    "(1)\n"
    "  --max-requests N  --max-total-tokens N  --max-wall-ms N  (0: none)\n"
    "  --build real|none   real: llm-fuse-build-kernel (default); none: "
    "accept\n"
    "                      any reply holding one gpu.module\n"
    "output:\n"
    "  --report FILE  --with-kernels  --kernels-dir DIR\n"
    "  --print-prompt NAME   print the first request for NAME and exit\n";

typedef struct task_store_s {
  lf_acquire_task_t *tasks;
  size_t count;
  char **strings; /* everything the tasks point at */
  size_t nstrings, cap;
} task_store_t;

static const char *keep(task_store_t *st, char *s) {
  if (!s)
    return NULL;
  if (st->nstrings == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 64;
    char **n = realloc(st->strings, cap * sizeof(*n));
    if (!n) {
      free(s);
      return NULL;
    }
    st->strings = n, st->cap = cap;
  }
  st->strings[st->nstrings++] = s;
  return s;
}

static const char *keep_json(task_store_t *st, const cJSON *obj,
                             const char *name) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsString(it) && it->valuestring
             ? keep(st, strdup(it->valuestring))
             : NULL;
}

static lf_status_t read_json(const char *path, cJSON **out) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, FILE_CAP);
  lf_status_t s = lf_read_file(path, &b);
  if (!s) {
    *out = cJSON_ParseWithLength(b.data ? b.data : "", lf_strbuf_len(&b));
    if (!*out)
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "%s is not JSON", path);
  }
  lf_strbuf_free(&b);
  return s;
}

static lf_status_t load_tasks(const char *path, const char *arch,
                              task_store_t *st) {
  cJSON *root = NULL;
  LF_RETURN_IF_ERROR(read_json(path, &root));
  const cJSON *list = cJSON_IsArray(root)
                          ? root
                          : cJSON_GetObjectItemCaseSensitive(root, "tasks");
  lf_status_t s = LF_OK;
  if (!cJSON_IsArray(list)) {
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "%s: expected {\"tasks\": [...]} or an array", path);
    goto out;
  }
  st->count = (size_t)cJSON_GetArraySize(list);
  st->tasks = calloc(st->count ? st->count : 1, sizeof(*st->tasks));
  size_t i = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, list) {
    lf_acquire_task_t *k = &st->tasks[i++];
    k->name = keep_json(st, t, "name");
    k->fingerprint = keep_json(st, t, "fingerprint");
    k->klass = keep_json(st, t, "class");
    k->ir = keep_json(st, t, "ir");
    k->signature = keep_json(st, t, "signature");
    k->arch = keep_json(st, t, "arch");
    if (!k->arch)
      k->arch = arch;
  }
out:
  cJSON_Delete(root);
  return s;
}

/* The text of `func.func ... @name(` through its closing brace. */
static char *function_text(const char *mlir, const char *name) {
  char needle[256];
  snprintf(needle, sizeof(needle), "func.func private @%s(", name);
  const char *at = strstr(mlir, needle);
  if (!at) {
    snprintf(needle, sizeof(needle), "func.func @%s(", name);
    at = strstr(mlir, needle);
  }
  if (!at)
    return NULL;
  const char *start = at;
  while (start > mlir && start[-1] != '\n')
    --start;
  int depth = 0;
  bool seen = false;
  const char *p = at;
  for (; *p; ++p) {
    if (*p == '"') {
      for (++p; *p && *p != '"'; ++p)
        if (*p == '\\' && p[1])
          ++p;
      if (!*p)
        break;
    } else if (*p == '{') {
      ++depth, seen = true;
    } else if (*p == '}' && --depth == 0 && seen) {
      /* The attribute dictionary closes at depth 0 too: a body follows. */
      const char *q = p + 1;
      while (*q == ' ')
        ++q;
      if (*q == '{')
        continue;
      ++p;
      break;
    }
  }
  /* The module's attribute aliases (#map = ...) the function may use. */
  lf_strbuf_t out;
  lf_strbuf_init(&out, FILE_CAP);
  lf_status_t s = LF_OK;
  for (const char *l = mlir; *l && !s;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l + 1) : strlen(l);
    if (l[0] == '#' && strncmp(l, "#loc", 4) != 0)
      s = lf_strbuf_append(&out, l, n);
    l += n;
  }
  if (!s)
    s = lf_strbuf_append(&out, start, (size_t)(p - start));
  char *text = s ? NULL : lf_strbuf_take(&out);
  lf_status_free(s);
  lf_strbuf_free(&out);
  return text;
}

static lf_status_t append_types(lf_strbuf_t *b, const cJSON *list) {
  const cJSON *o;
  bool first = true;
  cJSON_ArrayForEach(o, list) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(b, "%s%s", first ? "" : ", ",
                          cJSON_IsString(type) ? type->valuestring : "?"));
    first = false;
  }
  return LF_OK;
}

static lf_status_t load_outlined(const char *mlir_path, const char *sg_path,
                                 const char *arch, task_store_t *st) {
  cJSON *root = NULL;
  LF_RETURN_IF_ERROR(read_json(sg_path, &root));
  lf_strbuf_t mlir;
  lf_strbuf_init(&mlir, FILE_CAP);
  lf_status_t s = lf_read_file(mlir_path, &mlir);
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "subgraphs");
  if (!s && !cJSON_IsArray(list))
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "%s: not an outline report (no \"subgraphs\")", sg_path);
  if (s)
    goto out;
  st->tasks = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*st->tasks));
  const cJSON *g;
  cJSON_ArrayForEach(g, list) {
    const char *name = keep_json(st, g, "name");
    const char *fp = keep_json(st, g, "fingerprint");
    bool dup = false;
    for (size_t i = 0; i < st->count; ++i)
      if (fp && strcmp(st->tasks[i].fingerprint, fp) == 0)
        dup = true; /* a shared function appears once per use */
    if (dup || !name || !fp)
      continue;
    lf_acquire_task_t *k = &st->tasks[st->count++];
    k->name = name;
    k->fingerprint = fp;
    k->klass = keep_json(st, g, "class");
    k->ir = keep(st, function_text(lf_strbuf_cstr(&mlir), name));
    k->arch = arch;
    lf_strbuf_t sig;
    lf_strbuf_init(&sig, 65536);
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(g, "outputs");
    bool many = cJSON_GetArraySize(outs) != 1;
    s = lf_strbuf_append_str(&sig, "(");
    if (!s)
      s = append_types(&sig, cJSON_GetObjectItemCaseSensitive(g, "inputs"));
    if (!s)
      s = lf_strbuf_append_str(&sig, many ? ") -> (" : ") -> ");
    if (!s)
      s = append_types(&sig, outs);
    if (!s && many)
      s = lf_strbuf_append_str(&sig, ")");
    k->signature = keep(st, lf_strbuf_take(&sig));
    lf_strbuf_free(&sig);
    if (s)
      break;
    if (!k->ir) {
      s = LF_STATUS(LF_STATUS_NOT_FOUND, "%s: no function @%s", mlir_path,
                    name);
      break;
    }
  }
out:
  lf_strbuf_free(&mlir);
  cJSON_Delete(root);
  return s;
}

/* ---- Build callbacks ------------------------------------------------------*/

static lf_status_t build_real(const lf_acquire_task_t *task, const char *kernel,
                              size_t line_offset, void *user,
                              lf_acquire_build_t *out) {
  (void)user;
  lf_build_request_t req = {0};
  req.kernel_text = kernel;
  req.kernel_size = strlen(kernel);
  req.signature = task->signature;
  req.line_offset = (int)line_offset;
  req.chip = task->arch;
  lf_build_result_t *r = NULL;
  LF_RETURN_IF_ERROR(lf_build_kernel(&req, NULL, &r));
  out->ok = r->kind == LF_BUILD_OK;
  if (out->ok) {
    out->ptx = r->ptx ? strdup(r->ptx) : NULL;
    if (r->cubin && r->cubin_size) {
      out->cubin = malloc(r->cubin_size);
      if (out->cubin) {
        memcpy(out->cubin, r->cubin, r->cubin_size);
        out->cubin_len = r->cubin_size;
      }
    }
  } else {
    lf_strbuf_t b;
    lf_strbuf_init(&b, LF_BUILD_REPAIR_CAP + 16);
    lf_status_free(lf_build_result_repair_text(r, &b));
    out->repair_text = lf_strbuf_take(&b);
    lf_strbuf_free(&b);
  }
  lf_build_result_destroy(r);
  return LF_OK;
}

static lf_status_t build_none(const lf_acquire_task_t *task, const char *kernel,
                              size_t line_offset, void *user,
                              lf_acquire_build_t *out) {
  (void)task, (void)kernel, (void)line_offset, (void)user;
  out->ok = true;
  return LF_OK;
}

/* ---- Main -----------------------------------------------------------------*/

static bool parse_long(const char *text, long min, long *out) {
  char *end;
  long v = strtol(text, &end, 10);
  if (!*text || *end || v < min)
    return false;
  *out = v;
  return true;
}

int main(int argc, char **argv) {
  lf_log_init_from_env();
  lf_acquire_options_t o;
  lf_acquire_options_init(&o);
  o.client.base_url = "https://api.openai.com/v1";
  const char *tasks_path = NULL, *outlined = NULL, *subgraphs = NULL;
  const char *arch = "sm_90a", *cache_dir = NULL, *report_path = NULL;
  const char *kernels_dir = NULL, *print_prompt = NULL, *build = "real";
  bool use_cache = false, with_kernels = false;
  o.toolchain = lf_build_toolchain(); /* the pass's cache keys too */
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n = 0;
#define VALUE() (++i, v ? v : "")
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    } else if (!strcmp(a, "--offline")) {
      o.offline = true;
    } else if (!strcmp(a, "--replay-strict")) {
      o.replay_strict = true;
    } else if (!strcmp(a, "--cache")) {
      use_cache = true;
    } else if (!strcmp(a, "--with-kernels")) {
      with_kernels = true;
    } else if (a[0] == '-' && a[1] == '-' && !v) {
      fprintf(stderr, "llm-fuse-acquire: %s needs a value\n", a);
      return 2;
    } else if (!strcmp(a, "--provider")) {
      lf_status_t s = lf_acquire_provider_parse(VALUE(), &o.provider);
      if (s) {
        fprintf(stderr, "llm-fuse-acquire: %s\n", lf_status_message(s));
        lf_status_free(s);
        return 2;
      }
    } else if (!strcmp(a, "--endpoint")) {
      o.client.base_url = VALUE();
    } else if (!strcmp(a, "--model")) {
      o.model = VALUE();
    } else if (!strcmp(a, "--api-key-env")) {
      o.client.api_key_env = VALUE();
    } else if (!strcmp(a, "--temperature")) {
      o.client.temperature = atof(VALUE());
    } else if (!strcmp(a, "--max-tokens") && parse_long(VALUE(), 0, &n)) {
      o.client.max_tokens = (int)n;
    } else if (!strcmp(a, "--http-timeout-ms") && parse_long(VALUE(), 1, &n)) {
      o.client.total_timeout_ms = n;
    } else if (!strcmp(a, "--http-attempts") && parse_long(VALUE(), 1, &n)) {
      o.client.max_attempts = (int)n;
    } else if (!strcmp(a, "--backoff-base-ms") && parse_long(VALUE(), 0, &n)) {
      o.client.backoff_base_ms = n;
    } else if (!strcmp(a, "--replay-dir")) {
      o.replay_dir = VALUE();
    } else if (!strcmp(a, "--record")) {
      o.record_dir = VALUE();
    } else if (!strcmp(a, "--prompts-dir")) {
      o.prompts_dir = VALUE();
    } else if (!strcmp(a, "--gpu")) {
      o.gpu = VALUE();
    } else if (!strcmp(a, "--cache-dir")) {
      cache_dir = VALUE();
      use_cache = true;
    } else if (!strcmp(a, "--toolchain")) {
      o.toolchain = VALUE();
    } else if (!strcmp(a, "--arch")) {
      arch = VALUE();
    } else if (!strcmp(a, "--max-attempts") && parse_long(VALUE(), 1, &n)) {
      o.max_attempts = (int)n;
    } else if (!strcmp(a, "--max-concurrency") && parse_long(VALUE(), 1, &n)) {
      o.max_concurrency = (int)n;
    } else if (!strcmp(a, "--build-concurrency") &&
               parse_long(VALUE(), 1, &n)) {
      o.build_concurrency = (int)n;
    } else if (!strcmp(a, "--max-requests") && parse_long(VALUE(), 0, &n)) {
      o.max_requests = n;
    } else if (!strcmp(a, "--max-total-tokens") && parse_long(VALUE(), 0, &n)) {
      o.max_tokens = n;
    } else if (!strcmp(a, "--max-wall-ms") && parse_long(VALUE(), 0, &n)) {
      o.max_wall_ms = n;
    } else if (!strcmp(a, "--build")) {
      build = VALUE();
    } else if (!strcmp(a, "--report")) {
      report_path = VALUE();
    } else if (!strcmp(a, "--kernels-dir")) {
      kernels_dir = VALUE();
    } else if (!strcmp(a, "--print-prompt")) {
      print_prompt = VALUE();
    } else if (!strcmp(a, "--outlined")) {
      outlined = VALUE();
    } else if (!strcmp(a, "--subgraphs")) {
      subgraphs = VALUE();
    } else if (a[0] != '-' && !tasks_path) {
      tasks_path = a;
    } else {
      fprintf(stderr, "llm-fuse-acquire: bad argument '%s'\n%s", a, usage_text);
      return 2;
    }
#undef VALUE
  }
  if (!tasks_path == !(outlined && subgraphs) ||
      (strcmp(build, "real") && strcmp(build, "none"))) {
    fputs(usage_text, stderr);
    return 2;
  }
  o.build = strcmp(build, "real") == 0 ? build_real : build_none;

  int rc = 2;
  task_store_t st = {0};
  lf_cache_t *cache = NULL;
  lf_acquire_report_t *report = NULL;
  lf_prompt_set_t *prompts = NULL;
  char *json = NULL;
  lf_strbuf_t buf;
  lf_strbuf_init(&buf, (size_t)8 << 20);
  lf_status_t s = tasks_path ? load_tasks(tasks_path, arch, &st)
                             : load_outlined(outlined, subgraphs, arch, &st);
  if (s)
    goto out;

  if (print_prompt) {
    s = lf_prompt_set_load(o.prompts_dir, &prompts);
    for (size_t i = 0; !s && i < st.count; ++i) {
      const lf_acquire_task_t *t = &st.tasks[i];
      if (strcmp(t->name ? t->name : "", print_prompt) != 0)
        continue;
      lf_prompt_subject_t subj = {.name = t->name,
                                  .fingerprint = t->fingerprint,
                                  .klass = t->klass,
                                  .ir = t->ir,
                                  .signature = t->signature,
                                  .arch = t->arch,
                                  .gpu = o.gpu,
                                  .pattern = t->pattern,
                                  .pattern_sizes = t->pattern_sizes,
                                  .num_pattern_sizes = t->num_pattern_sizes};
      s = lf_prompt_system(prompts, &buf);
      if (!s)
        s = lf_strbuf_appendf(&buf, "\n===== (prompt version %s) =====\n",
                              lf_prompt_set_version(prompts));
      if (!s)
        s = lf_prompt_first(prompts, NULL, &subj, &buf);
      if (!s) {
        fputs(lf_strbuf_cstr(&buf), stdout);
        rc = 0;
      }
      goto out;
    }
    if (!s)
      s = LF_STATUS(LF_STATUS_NOT_FOUND, "no task named %s", print_prompt);
    goto out;
  }

  if (use_cache) {
    if (!cache_dir) {
      s = lf_cache_default_dir(&buf);
      cache_dir = lf_strbuf_cstr(&buf);
    }
    lf_cache_options_t co;
    lf_cache_options_init(&co);
    co.api_key_env =
        o.client.api_key_env ? o.client.api_key_env : "OPENAI_API_KEY";
    if (!s)
      s = lf_cache_open(cache_dir, &co, &cache);
    if (s)
      goto out;
    o.cache = cache;
  }
  s = lf_acquire_run(st.tasks, st.count, &o, &report);
  if (s)
    goto out;

  bool all = true;
  printf("%-22s %-17s %-8s %-24s %8s  %s\n", "subgraph", "outcome", "attempts",
         "provider/model", "ms", "message");
  for (size_t i = 0; i < report->count; ++i) {
    const lf_acquire_result_t *r = &report->results[i];
    char pm[64];
    snprintf(pm, sizeof(pm), "%s/%s", r->provider[0] ? r->provider : "-",
             r->model[0] ? r->model : "-");
    printf("%-22s %-17s %-8zu %-24s %8ld  %s%s%s\n", st.tasks[i].name,
           lf_acquire_outcome_name(r->outcome), r->attempt_count, pm,
           r->elapsed_ms, r->budget ? "[" : "",
           r->budget ? lf_acquire_budget_name(r->budget) : "",
           r->budget ? "] " : "");
    if (r->message && r->message[0])
      printf("    %s\n", r->message);
    if (r->outcome != LF_ACQUIRE_OK && r->outcome != LF_ACQUIRE_CACHED)
      all = false;
    if (kernels_dir && r->kernel) {
      char path[4096];
      mkdir(kernels_dir, 0777);
      snprintf(path, sizeof(path), "%s/%s.mlir", kernels_dir, st.tasks[i].name);
      lf_status_t w = lf_write_file_atomic(path, r->kernel, strlen(r->kernel));
      if (w)
        lf_log_status(LF_LOG_WARN, "llm-fuse-acquire", w);
    }
  }
  printf("total: %zu subgraph(s), %ld request(s), %d round(s), %ld+%ld "
         "tokens, %ld ms%s%s\n",
         report->count, report->requests, report->rounds, report->prompt_tokens,
         report->completion_tokens, report->wall_ms,
         report->exhausted ? ", budget exhausted: " : "",
         lf_acquire_budget_name(report->exhausted));
  if (report_path) {
    s = lf_acquire_report_to_json(report, st.tasks, with_kernels, &json);
    if (!s)
      s = lf_write_file_atomic(report_path, json, strlen(json));
    if (s)
      goto out;
  }
  rc = all ? 0 : 1;
out:
  if (s) {
    fprintf(stderr, "llm-fuse-acquire: %s\n", lf_status_message(s));
    lf_status_free(s);
  }
  free(json);
  lf_acquire_report_destroy(report);
  lf_prompt_set_destroy(prompts);
  lf_cache_close(cache);
  lf_strbuf_free(&buf);
  for (size_t i = 0; i < st.nstrings; ++i)
    free(st.strings[i]);
  free(st.strings);
  free(st.tasks);
  return rc;
}
